//! The console's passwords end to end, through the real handler and the
//! embedded DynamoDB: a reset link made by the instance owner (good once,
//! the old password and every session of the user ended), a link mailed on
//! request (the same answer for every email, a mail only for a user; the
//! outbox of `tally dev`, and the real SES client sending to moto), expired
//! links, changing one's password, and logs that hold no secret.

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use tally_console::mail::Outbox;
use tally_core::HOUR_MS;
use tally_core::account::token;
use tally_store::accounts::AuditLog;
use tally_tests::console::{Browser, Captured, Console, Now, PASSWORD, error_code, member, owner};
use tally_tests::moto::Moto;

/// The new password of every test.
const NEW: &str = "a brand new passphrase";
/// The id `member` gives its user.
fn ann_uid() -> String {
    token::user_id_from_bytes(&[9; 8])
}

/// A fresh outbox directory of this test.
fn outbox(name: &str) -> Outbox {
    let dir = std::env::temp_dir().join(format!(
        "tally-console-password-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    Outbox::new(dir)
}

/// The reset token in a mail's text.
fn token_in(text: &str) -> String {
    let start = text.find("#reset=").unwrap() + "#reset=".len();
    text[start..]
        .split_whitespace()
        .next()
        .unwrap()
        .trim()
        .to_owned()
}

async fn reset(console: &Console, t: &str, password: &str) -> (u16, Value) {
    Browser::new("192.0.2.50")
        .call(
            console,
            "POST",
            "password/reset",
            Some(json!({"token": t, "password": password})),
        )
        .await
}

/// `POST password/forgot {email}` from a browser.
async fn forgot(b: &mut Browser, console: &Console, email: &str) -> (u16, Value) {
    b.call(
        console,
        "POST",
        "password/forgot",
        Some(json!({"email": email})),
    )
    .await
}

async fn signed_in_as_ann(console: &Console, ip: &str) -> Browser {
    signed_in_as_ann_with(console, ip, PASSWORD).await
}

async fn signed_in_as_ann_with(console: &Console, ip: &str, password: &str) -> Browser {
    let mut b = Browser::new(ip);
    let (status, body) = b.login(console, "ann@example.com", password).await;
    assert_eq!(status, 200, "{body}");
    b
}

#[tokio::test]
async fn an_owner_reset_link_works_once_and_ends_the_old_password_and_sessions() {
    let console = Console::start().await;
    let mut boss = owner(&console).await;
    member(&console, "ann@example.com").await;
    let uid = ann_uid();
    let mut laptop = signed_in_as_ann(&console, "203.0.113.1").await;
    let mut phone = signed_in_as_ann(&console, "203.0.113.2").await;

    // Only the instance owner makes links; unknown users are 404.
    let (status, body) = laptop
        .call(&console, "POST", "users/0123456789abcdef/reset", None)
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (403, Some("forbidden")),
        "{body}"
    );
    for unknown in ["0123456789abcdef", "nope"] {
        let (status, body) = boss
            .call(&console, "POST", &format!("users/{unknown}/reset"), None)
            .await;
        assert_eq!((status, error_code(&body)), (404, Some("user_not_found")));
    }
    let (status, made) = boss
        .call(&console, "POST", &format!("users/{uid}/reset"), None)
        .await;
    assert_eq!(status, 201, "{made}");
    let t = made["token"].as_str().unwrap().to_owned();
    assert!(
        t.starts_with("tr_") && t.ends_with(&format!(".{uid}")),
        "{t}"
    );
    assert_eq!(
        made["link"],
        format!("https://tally.example.com/console#reset={t}")
    );
    assert_eq!(made["mailed"], false);
    assert_eq!(
        made["expires"].as_i64(),
        Some(console.clock.now_ms() + 24 * HOUR_MS)
    );
    // A weak password or a forged token changes nothing.
    let (status, body) = reset(&console, &t, "short").await;
    assert_eq!((status, error_code(&body)), (400, Some("weak_password")));
    let forged = token::reset_token(&uid, &[7; 20]);
    let (status, body) = reset(&console, &forged, NEW).await;
    assert_eq!((status, error_code(&body)), (410, Some("reset_invalid")));
    assert_eq!(laptop.call(&console, "GET", "me", None).await.0, 200);

    let (status, body) = reset(&console, &t, NEW).await;
    assert_eq!((status, body), (200, json!({"ok": true})));
    // Once only.
    let (status, body) = reset(&console, &t, "yet another passphrase").await;
    assert_eq!((status, error_code(&body)), (410, Some("reset_invalid")));
    // Every session of Ann ended; the owner's did not.
    assert_eq!(laptop.call(&console, "GET", "me", None).await.0, 401);
    assert_eq!(phone.call(&console, "GET", "me", None).await.0, 401);
    assert_eq!(boss.call(&console, "GET", "me", None).await.0, 200);
    // The old password is refused, the new one signs in.
    let mut b = Browser::new("203.0.113.3");
    let (status, body) = b.login(&console, "ann@example.com", PASSWORD).await;
    assert_eq!(
        (status, error_code(&body)),
        (401, Some("invalid_credentials"))
    );
    assert_eq!(b.login(&console, "ann@example.com", NEW).await.0, 200);

    // Both audited in the instance log, with no token.
    let (entries, _) = console
        .store
        .audit(&AuditLog::Instance, 10, None)
        .await
        .unwrap();
    let actions: Vec<String> = entries
        .iter()
        .map(|e| format!("{:?} {} {}", e.action, e.actor, e.target))
        .collect();
    let (_, me) = boss.call(&console, "GET", "me", None).await;
    let owner_uid = me["user"]["id"].as_str().unwrap();
    assert!(
        actions.contains(&format!("PasswordReset {owner_uid} user:{uid}")),
        "{actions:?}"
    );
    assert!(
        actions.contains(&format!("PasswordChanged {uid} user:{uid}")),
        "{actions:?}"
    );
    assert!(!format!("{entries:?}").contains(&t));
}

#[tokio::test]
async fn forgot_answers_alike_for_every_email_and_mails_only_a_user() {
    let mut console = Console::start().await;
    let outbox = outbox("forgot");
    console.config = console.config.clone().with_mailer(outbox.clone());
    owner(&console).await;
    member(&console, "ann@example.com").await;
    let mut old = signed_in_as_ann(&console, "203.0.113.1").await;

    let mut stranger = Browser::new("198.51.100.20");
    let known = forgot(&mut stranger, &console, " Ann@Example.com ").await;
    let unknown = forgot(&mut stranger, &console, "nobody@example.com").await;
    assert_eq!(known, (202, json!({"ok": true, "mail": true})));
    assert_eq!(unknown, known);
    // Only Ann got a mail, with a link to the console's reset view.
    let sent = outbox.list().unwrap();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let mail = &sent[0].message;
    assert_eq!(mail.to, "ann@example.com");
    assert!(
        mail.text
            .contains("https://tally.example.com/console#reset=tr_"),
        "{}",
        mail.text
    );
    assert!(mail.text.contains("1 hour"), "{}", mail.text);
    let t = token_in(&mail.text);
    assert_eq!(token::reset_user(&t), Some(ann_uid().as_str()));

    // The link sets the password once and ends Ann's sessions.
    assert_eq!(reset(&console, &t, NEW).await.0, 200);
    assert_eq!(reset(&console, &t, NEW).await.0, 410);
    assert_eq!(old.call(&console, "GET", "me", None).await.0, 401);
    let mut b = Browser::new("203.0.113.3");
    assert_eq!(b.login(&console, "ann@example.com", PASSWORD).await.0, 401);
    assert_eq!(b.login(&console, "ann@example.com", NEW).await.0, 200);

    // Asking is guess-limited per network, alike for every email, and
    // never locks a login out.
    let mut flood = Browser::new("198.51.100.30");
    for email in ["ann@example.com", "nobody@example.com"] {
        let mut answers = Vec::new();
        for _ in 0..11 {
            answers.push(forgot(&mut flood, &console, email).await.0);
        }
        assert_eq!(answers[..10], [202; 10], "{email}");
        assert_eq!(answers[10], 429, "{email}");
    }
    assert_eq!(flood.login(&console, "ann@example.com", NEW).await.0, 200);
    // Malformed: a 400 that says nothing about accounts.
    let (status, body) = forgot(&mut flood, &console, "not an email").await;
    assert_eq!((status, error_code(&body)), (400, Some("invalid_email")));
    let _ = std::fs::remove_dir_all(outbox.dir());
}

#[tokio::test]
async fn without_a_mailer_forgot_says_so_for_every_email() {
    let console = Console::start().await;
    owner(&console).await;
    member(&console, "ann@example.com").await;
    let mut b = Browser::new("198.51.100.20");
    for email in ["ann@example.com", "nobody@example.com"] {
        let answer = forgot(&mut b, &console, email).await;
        assert_eq!(answer, (202, json!({"ok": true, "mail": false})));
    }
}

#[tokio::test]
async fn expired_links_are_refused() {
    let mut console = Console::start().await;
    let outbox = outbox("expired");
    console.config = console.config.clone().with_mailer(outbox.clone());
    let mut boss = owner(&console).await;
    member(&console, "ann@example.com").await;
    let uid = ann_uid();
    // A mailed link lives an hour.
    let (status, _) = forgot(
        &mut Browser::new("198.51.100.20"),
        &console,
        "ann@example.com",
    )
    .await;
    assert_eq!(status, 202);
    let mailed = token_in(&outbox.list().unwrap()[0].message.text);
    // The owner's lives a day (and was mailed too, naming the owner).
    let (_, made) = boss
        .call(&console, "POST", &format!("users/{uid}/reset"), None)
        .await;
    assert_eq!(made["mailed"], true);
    let sent = outbox.list().unwrap();
    assert_eq!(sent.len(), 2);
    assert!(sent.iter().any(|m| {
        m.message.text.contains("owner@example.com") && m.message.text.contains("24 hours")
    }));
    let by_owner = made["token"].as_str().unwrap().to_owned();
    console.clock.advance(HOUR_MS);
    let (status, body) = reset(&console, &mailed, NEW).await;
    assert_eq!((status, error_code(&body)), (410, Some("reset_invalid")));
    console.clock.advance(23 * HOUR_MS);
    let (status, body) = reset(&console, &by_owner, NEW).await;
    assert_eq!((status, error_code(&body)), (410, Some("reset_invalid")));
    let mut b = Browser::new("203.0.113.3");
    assert_eq!(b.login(&console, "ann@example.com", PASSWORD).await.0, 200);
    let _ = std::fs::remove_dir_all(outbox.dir());
}

#[tokio::test]
async fn changing_ones_password_ends_the_other_sessions_and_open_links() {
    let console = Console::start().await;
    let mut boss = owner(&console).await;
    member(&console, "ann@example.com").await;
    let mut laptop = signed_in_as_ann(&console, "203.0.113.1").await;
    let mut phone = signed_in_as_ann(&console, "203.0.113.2").await;
    let (_, made) = boss
        .call(
            &console,
            "POST",
            &format!("users/{}/reset", ann_uid()),
            None,
        )
        .await;
    let open_link = made["token"].as_str().unwrap().to_owned();

    let change = |current: &str, new: &str| Some(json!({"current": current, "new": new}));
    // Signed out: 401; without the CSRF token: 403.
    let (status, _) = Browser::new("203.0.113.9")
        .call(&console, "POST", "password/change", change(PASSWORD, NEW))
        .await;
    assert_eq!(status, 401);
    let mut no_csrf = Browser::new("203.0.113.1");
    no_csrf.cookies = laptop.cookies.clone();
    assert_eq!(
        no_csrf
            .call(&console, "POST", "password/change", change(PASSWORD, NEW))
            .await
            .0,
        403
    );
    let (status, body) = laptop
        .call(
            &console,
            "POST",
            "password/change",
            change("not the password", NEW),
        )
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (401, Some("invalid_credentials"))
    );
    let (status, body) = laptop
        .call(
            &console,
            "POST",
            "password/change",
            change(PASSWORD, "short"),
        )
        .await;
    assert_eq!((status, error_code(&body)), (400, Some("weak_password")));
    let (status, body) = laptop
        .call(&console, "POST", "password/change", change(PASSWORD, NEW))
        .await;
    assert_eq!(
        (status, body),
        (200, json!({"ok": true, "sessions_ended": 1}))
    );
    assert_eq!(laptop.call(&console, "GET", "me", None).await.0, 200);
    assert_eq!(phone.call(&console, "GET", "me", None).await.0, 401);
    // The link made before the change is dead.
    let (status, _) = reset(&console, &open_link, "yet another passphrase").await;
    assert_eq!(status, 410);
    let mut b = Browser::new("203.0.113.3");
    assert_eq!(b.login(&console, "ann@example.com", PASSWORD).await.0, 401);
    assert_eq!(b.login(&console, "ann@example.com", NEW).await.0, 200);
    // The old password no longer changes anything.
    let (status, _) = laptop
        .call(&console, "POST", "password/change", change(PASSWORD, NEW))
        .await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn the_reset_mail_goes_through_ses() {
    let moto = Moto::start();
    let from = "tally@example.com";
    let ses = moto.ses_from(from).await;
    let mut console = Console::start().await;
    console.config = console.config.clone().with_mailer(ses);
    owner(&console).await;
    member(&console, "ann@example.com").await;
    let mut b = Browser::new("198.51.100.20");
    for email in ["ann@example.com", "nobody@example.com"] {
        let answer = forgot(&mut b, &console, email).await;
        assert_eq!(answer, (202, json!({"ok": true, "mail": true})));
    }
    let sent = moto.sent_emails();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].destinations.to, ["ann@example.com"]);
    assert_eq!(sent[0].source, from);
    assert_eq!(sent[0].subject, "Reset your Tally password");
    assert!(
        sent[0]
            .body
            .contains("https://tally.example.com/console#reset=tr_"),
        "{}",
        sent[0].body
    );
    let t = token_in(&sent[0].body);
    assert_eq!(reset(&console, &t, NEW).await.0, 200);
    assert_eq!(b.login(&console, "ann@example.com", NEW).await.0, 200);
}

#[tokio::test]
async fn logs_hold_no_reset_token_password_or_email() {
    let captured = Captured::install();

    let mut console = Console::start().await;
    let outbox = outbox("logs");
    console.config = console.config.clone().with_mailer(outbox.clone());
    let mut boss = owner(&console).await;
    member(&console, "ann@example.com").await;
    let mut b = Browser::new("198.51.100.77");
    forgot(&mut b, &console, "ann@example.com").await;
    forgot(&mut b, &console, "nobody@example.com").await;
    let mailed = token_in(&outbox.list().unwrap()[0].message.text);
    assert_eq!(reset(&console, &mailed, NEW).await.0, 200);
    let (_, made) = boss
        .call(
            &console,
            "POST",
            &format!("users/{}/reset", ann_uid()),
            None,
        )
        .await;
    let by_owner = made["token"].as_str().unwrap().to_owned();
    let mut ann = signed_in_as_ann_with(&console, "203.0.113.5", NEW).await;
    ann.call(
        &console,
        "POST",
        "password/change",
        Some(json!({"current": NEW, "new": PASSWORD})),
    )
    .await;
    let logs = captured.text();
    assert!(logs.contains("password_reset"), "{logs}");
    captured.assert_none_of(&[
        mailed.as_str(),
        by_owner.as_str(),
        NEW,
        PASSWORD,
        "ann@example.com",
        "nobody@example.com",
        "owner@example.com",
        "198.51.100.77",
        "Chrome/131",
    ]);
    let _ = std::fs::remove_dir_all(outbox.dir());
}
