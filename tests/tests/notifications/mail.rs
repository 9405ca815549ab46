//! Mail: the real `aws-sdk-sesv2` client (rustls on ring) sending to moto's
//! SES, read back from moto's recorded state; and the local outbox of
//! `tally dev` written and read back.

#![allow(clippy::unwrap_used)]

use tally_mail::{MailError, Message, Outbox, Ses, SesOptions};
use tally_tests::moto::Moto;

const FROM: &str = "tally@example.com";

async fn ses(moto: &Moto, from: &str) -> Ses {
    Ses::connect(&SesOptions::local(&moto.endpoint, from))
        .await
        .unwrap()
}

/// Verifies `identity` in moto's SES, as an operator verifies a domain or
/// an address before SES sends from it.
async fn verify(ses: &Ses, identity: &str) {
    ses.client()
        .create_email_identity()
        .email_identity(identity)
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn ses_sends_a_plain_text_mail_from_the_configured_address() {
    let moto = Moto::start();
    let ses = ses(&moto, &format!("Tally <{FROM}>")).await;
    verify(&ses, FROM).await;
    let text = "You were invited to the site demo.\n\n\
                Accept: http://localhost:8787/#invite=ti_0123.demo\n\n\
                Grüße – Tally";
    let message = Message::new("ada@example.org", "Your invitation to demo – Tally", text);
    let id = ses.send(&message).await.unwrap();
    assert!(!id.is_empty());

    let sent = moto.sent_emails();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let mail = &sent[0];
    assert_eq!(mail.id, id);
    assert_eq!(mail.source, format!("Tally <{FROM}>"));
    assert_eq!(mail.destinations.to, vec!["ada@example.org".to_owned()]);
    assert_eq!(mail.subject, message.subject);
    assert_eq!(mail.body, text);

    // A second mail is a second message, to its own recipient.
    let id2 = ses
        .send(&Message::new("bob@example.org", "Reset", "Reset link"))
        .await
        .unwrap();
    let sent = moto.sent_emails();
    assert_eq!(sent.len(), 2);
    assert_ne!(id, id2);
    assert!(
        sent.iter()
            .any(|m| m.id == id2 && m.destinations.to == ["bob@example.org"])
    );
}

#[tokio::test]
async fn ses_refuses_an_unverified_from_address_without_naming_it() {
    let moto = Moto::start();
    let ses = ses(&moto, "nobody@unverified.example").await;
    let err = ses
        .send(&Message::new("ada@example.org", "Hi", "secret link ts_abc"))
        .await
        .unwrap_err();
    match &err {
        MailError::Rejected { code, .. } => assert_eq!(code, "MessageRejected"),
        other => panic!("{other:?}"),
    }
    assert!(!err.is_transient());
    // What gets logged names no address and no body; the detail (for debug
    // logs) keeps SES's message.
    let shown = err.to_string();
    assert!(!shown.contains('@'), "{shown}");
    assert!(!shown.contains("ts_abc"), "{shown}");
    assert!(
        err.detail().contains("nobody@unverified.example"),
        "{}",
        err.detail()
    );
    assert!(moto.sent_emails().is_empty());
}

#[tokio::test]
async fn ses_unreachable_is_transient() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ses = Ses::connect(&SesOptions::local(
        &format!("http://127.0.0.1:{port}"),
        FROM,
    ))
    .await
    .unwrap();
    let err = ses
        .send(&Message::new("ada@example.org", "Hi", "text"))
        .await
        .unwrap_err();
    assert!(matches!(err, MailError::Unavailable { .. }), "{err:?}");
    assert!(err.is_transient());
}

#[tokio::test]
async fn ses_needs_a_from_address_and_a_recipient() {
    let err = Ses::connect(&SesOptions::local("http://127.0.0.1:9", "  "))
        .await
        .unwrap_err();
    assert!(matches!(err, MailError::Config(_)), "{err:?}");
    let ses = Ses::connect(&SesOptions::local("http://127.0.0.1:9", FROM))
        .await
        .unwrap();
    assert_eq!(ses.from_address(), FROM);
    let err = ses
        .send(&Message::new(" ", "Hi", "text"))
        .await
        .unwrap_err();
    assert!(matches!(err, MailError::Config(_)), "{err:?}");
}

#[test]
fn outbox_round_trip() {
    let data_dir = std::env::temp_dir().join(format!("tally-mail-outbox-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data_dir);
    let outbox = Outbox::in_data_dir(&data_dir);
    assert_eq!(outbox.dir(), data_dir.join("outbox"));
    assert!(outbox.list().unwrap().is_empty());

    let first = Message::new("ada@example.org", "First", "line one\nline two");
    let second = Message::new("bob@example.org", "Second <b>", "http://localhost/#t=1");
    let a = outbox.write(&first, 1_767_616_200_000).unwrap();
    let b = outbox.write(&second, 1_767_616_260_000).unwrap();
    let c = outbox.send(&first).unwrap();

    // One JSON file per message in {data_dir}/outbox/, named by its time.
    let mut files: Vec<String> = std::fs::read_dir(data_dir.join("outbox"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(
        files,
        vec![
            "20260105T123000.000Z-0.json".to_owned(),
            "20260105T123100.000Z-0.json".to_owned(),
            format!("{}.json", c.id),
        ]
    );
    let on_disk: serde_json::Value = serde_json::from_slice(
        &std::fs::read(data_dir.join("outbox/20260105T123100.000Z-0.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(on_disk["to"], "bob@example.org");
    assert_eq!(on_disk["subject"], "Second <b>");
    assert_eq!(on_disk["text"], "http://localhost/#t=1");
    assert_eq!(on_disk["sent_at"], 1_767_616_260_000_i64);

    // Listed newest first, each read back whole; another Outbox on the
    // same directory (as `tally dev` opens it) sees the same.
    let listed = Outbox::new(data_dir.join("outbox")).list().unwrap();
    assert_eq!(listed, vec![c.clone(), b.clone(), a.clone()]);
    assert_eq!(listed[2].message, first);
    assert_eq!(listed[1].message, second);
    assert_eq!(outbox.read(&b.id).unwrap(), Some(b));
    assert_eq!(outbox.read("20990101T000000.000Z-0").unwrap(), None);
    let _ = std::fs::remove_dir_all(&data_dir);
}

/// A stand-in for CloudFormation's presigned response URL: answers every
/// request 200 and keeps each one's method and body.
async fn response_url() -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/cloudformation-custom-resource-response?X-Amz-Signature=abc",
        listener.local_addr().unwrap()
    );
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let (head_end, length) = loop {
                let n = socket.read(&mut chunk).await.unwrap_or(0);
                if n == 0 {
                    break (buf.len(), 0);
                }
                buf.extend_from_slice(&chunk[..n]);
                if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..at]).to_lowercase();
                    let length = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    break (at + 4, length);
                }
            };
            while buf.len() < head_end + length {
                let n = socket.read(&mut chunk).await.unwrap_or(0);
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
            let method = head.split(' ').next().unwrap_or_default().to_owned();
            let body = String::from_utf8_lossy(&buf[head_end..]).to_string();
            keep.lock().unwrap().push((method, body));
            let _ = socket
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .await;
        }
    });
    (url, seen)
}

/// A `FirstOwner` custom resource request of `kind` as CloudFormation
/// sends it (its `n`th), answering to `url`.
fn first_owner_request(
    url: &str,
    properties: &serde_json::Value,
    kind: &str,
    n: u32,
) -> tally_rollup::first_owner::Request {
    let mut event = serde_json::json!({
        "RequestType": kind,
        "ServiceToken": "arn:aws:lambda:eu-central-1:123456789012:function:tally-rollup",
        "ResponseURL": url,
        "StackId": "arn:aws:cloudformation:eu-central-1:123456789012:stack/tally/5b3a0f60-d3a4-11f0-9c7e-0a1b2c3d4e5f",
        "RequestId": format!("0f5a3c2e-1b2d-4e6f-8a9b-00000000000{n}"),
        "LogicalResourceId": "FirstOwner",
        "ResourceType": "Custom::TallyFirstOwner",
        "ResourceProperties": properties
    });
    if kind != "Create" {
        event["PhysicalResourceId"] = serde_json::json!(tally_rollup::first_owner::PHYSICAL_ID);
    }
    if kind == "Update" {
        event["OldResourceProperties"] = properties.clone();
    }
    serde_json::from_value(event).unwrap()
}

/// The first owner by email (issue 30, item 3): the stack's `FirstOwner`
/// custom resource, given CloudFormation's request shape, mails exactly
/// one setup link to `AdminEmail` through SES (moto), answers
/// CloudFormation with a PUT to the response URL, and sends nothing on a
/// later deploy or on a new stack over the same table; the link's token
/// signs the owner in once.
#[tokio::test]
async fn the_stack_mails_the_first_owner_one_setup_link_that_signs_in_once() {
    use serde_json::json;
    use tally_tests::console::{Browser, Console, PASSWORD};
    let moto = Moto::start();
    let ses = moto.ses_from(FROM).await;
    let console = Console::start().await;
    let (url, answers) = response_url().await;
    let responder = tally_rollup::webhook::Webhooks::new(true).unwrap();
    let properties = json!({
        "ServiceToken": "arn:aws:lambda:eu-central-1:123456789012:function:tally-rollup",
        "AdminEmail": "admin@example.com",
        "ConsoleUrl": "https://a1b2c3d4e5.execute-api.eu-central-1.amazonaws.com/console"
    });
    let request = |kind: &str, n: u32| first_owner_request(&url, &properties, kind, n);
    let now = tally_store::clock::Clock::now(&tally_store::clock::SystemClock);
    let run = |kind: &'static str, n: u32| {
        let (store, ses, responder) = (&console.store, &ses, &responder);
        let request = request(kind, n);
        async move {
            tally_rollup::first_owner::handle(store, Some(ses), None, responder, request, now).await
        }
    };
    let first = run("Create", 1).await;
    assert!(first.succeeded && first.mailed, "{first:?}");
    // A second deploy, and a new stack over the same table: nothing.
    for (kind, n) in [("Update", 2), ("Create", 3)] {
        let again = run(kind, n).await;
        assert!(again.succeeded && !again.mailed, "{kind}: {again:?}");
    }
    let sent = moto.sent_emails();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].destinations.to, ["admin@example.com"]);
    let link_at = sent[0].body.find("/console#/setup/").unwrap();
    let token = &sent[0].body[link_at + "/console#/setup/".len()..][..44];
    assert!(tally_core::account::token::is_setup_token(token), "{token}");
    // CloudFormation got a SUCCESS for each, with its own request id.
    let answers = answers.lock().unwrap().clone();
    assert_eq!(answers.len(), 3);
    for (n, (method, body)) in answers.iter().enumerate() {
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(method, "PUT");
        assert_eq!(body["Status"], "SUCCESS");
        assert_eq!(
            body["PhysicalResourceId"],
            tally_rollup::first_owner::PHYSICAL_ID
        );
        assert_eq!(body["LogicalResourceId"], "FirstOwner");
        assert!(
            body["RequestId"]
                .as_str()
                .unwrap()
                .ends_with(&(n + 1).to_string())
        );
        assert_eq!(
            body["Data"]["Mailed"],
            if n == 0 { "true" } else { "false" }
        );
        assert_eq!(body["Data"]["Stored"], "false");
    }
    // The link signs the owner in, once.
    console.clock.set(now);
    let form = json!({"token": token, "email": "admin@example.com", "password": PASSWORD});
    let mut b = Browser::new("198.51.100.1");
    let (status, body) = b.call(&console, "POST", "setup", Some(form.clone())).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = Browser::new("198.51.100.2")
        .call(&console, "POST", "setup", Some(form))
        .await;
    assert_ne!(status, 200);
    // Deleting the stack deletes nothing and mails nothing.
    let gone = run("Delete", 4).await;
    assert!(gone.succeeded && !gone.mailed);
    assert_eq!(moto.sent_emails().len(), 1);
}

/// The first owner without mail (issue 30, item 3): a stack with no
/// `EmailFrom` writes the setup link into its `SetupLinkSecret` (moto's
/// Secrets Manager through the real client) instead, a fresh one on each
/// deploy while there is no owner and none after; the stored link signs
/// the owner in once.
#[tokio::test]
async fn without_mail_the_setup_link_goes_to_the_stacks_secret() {
    use serde_json::json;
    use tally_tests::console::{Browser, Console, PASSWORD};
    let moto = Moto::start();
    let vault = tally_lambda::secrets::Secrets::connect(Some(moto.endpoint.as_str())).await;
    let arn = vault
        .client()
        .create_secret()
        .name("tally-setup-link")
        .secret_string("none yet")
        .send()
        .await
        .unwrap()
        .arn
        .unwrap();
    let console = Console::start().await;
    let (url, answers) = response_url().await;
    let responder = tally_rollup::webhook::Webhooks::new(true).unwrap();
    let properties = json!({
        "ServiceToken": "arn:aws:lambda:eu-central-1:123456789012:function:tally-rollup",
        "AdminEmail": "",
        "ConsoleUrl": "https://a1b2c3d4e5.execute-api.eu-central-1.amazonaws.com/console",
        "SetupLinkSecret": arn
    });
    let request = |kind: &str, n: u32| first_owner_request(&url, &properties, kind, n);
    let now = tally_store::clock::Clock::now(&tally_store::clock::SystemClock);
    let run = |kind: &'static str, n: u32| {
        let (store, vault, responder) = (&console.store, &vault, &responder);
        let request = request(kind, n);
        async move {
            tally_rollup::first_owner::handle(store, None, Some(vault), responder, request, now)
                .await
        }
    };
    let stored = || {
        let vault = &vault;
        let arn = arn.clone();
        async move {
            vault
                .version(&arn, "AWSCURRENT")
                .await
                .unwrap()
                .unwrap()
                .value
        }
    };
    let token_of = |link: &str| {
        let at = link.find("/console#/setup/").expect(link);
        link[at + "/console#/setup/".len()..].to_owned()
    };
    let first = run("Create", 1).await;
    assert!(
        first.succeeded && first.stored && !first.mailed,
        "{first:?}"
    );
    let first_token = token_of(&stored().await);
    assert!(tally_core::account::token::is_setup_token(&first_token));
    // A later deploy while there is still no owner: a fresh link.
    let second = run("Update", 2).await;
    assert!(second.succeeded && second.stored, "{second:?}");
    let token = token_of(&stored().await);
    assert_ne!(token, first_token);
    assert!(moto.sent_emails().is_empty());
    // The stored link signs the owner in, once.
    console.clock.set(now);
    let form = json!({"token": token, "email": "admin@example.com", "password": PASSWORD});
    let (status, body) = Browser::new("198.51.100.1")
        .call(&console, "POST", "setup", Some(form.clone()))
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = Browser::new("198.51.100.2")
        .call(&console, "POST", "setup", Some(form))
        .await;
    assert_ne!(status, 200);
    // With an owner, a deploy writes nothing more.
    let third = run("Update", 3).await;
    assert!(third.succeeded && !third.stored, "{third:?}");
    assert_eq!(token_of(&stored().await), token);
    let answers = answers.lock().unwrap().clone();
    let stored_flags: Vec<String> = answers
        .iter()
        .map(|(_, body)| {
            let body: serde_json::Value = serde_json::from_str(body).unwrap();
            assert_eq!(body["Status"], "SUCCESS");
            body["Data"]["Stored"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(stored_flags, ["true", "true", "false"]);
}

/// Every message goes out with the deployment's configuration set (issue
/// 30, item 8), whose bounces and complaints SES suppresses and reports:
/// the SES request the real client makes, read by a stand-in endpoint,
/// names it; without one configured it names none.
#[tokio::test]
async fn mail_is_sent_with_the_configured_configuration_set() {
    let (url, seen) = response_url().await;
    let endpoint = url.split("/cloudformation").next().unwrap().to_owned();
    for set in [Some("tally-prod-tally"), None] {
        let ses = Ses::connect(&SesOptions {
            configuration_set: set.map(str::to_owned),
            ..SesOptions::local(&endpoint, FROM)
        })
        .await
        .unwrap();
        ses.send(&Message::new("ada@example.org", "Hello", "Text"))
            .await
            .unwrap();
        let (method, body) = seen.lock().unwrap().pop().unwrap();
        assert_eq!(method, "POST");
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["FromEmailAddress"], FROM);
        assert_eq!(body["ConfigurationSetName"].as_str(), set, "{body}");
    }
}
