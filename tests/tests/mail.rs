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
