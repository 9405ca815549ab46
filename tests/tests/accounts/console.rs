//! The console's accounts end to end, through the real handler and the
//! embedded DynamoDB: first-run setup, logins with and without 2FA,
//! sessions (expiry, revocation, logout), CSRF and origin checks, guess
//! limits, `require_2fa`, and logs that hold no secret.
//!
//! TOTP codes are computed here by an implementation of RFC 6238 of the
//! test's own (over ring's HMAC-SHA-1), not by the code under test.

#![allow(clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // reads the environment: configuration

use serde_json::json;
use tally_core::account::token;
use tally_core::{DAY_MS, MINUTE_MS};
use tally_tests::console::{
    Browser, Captured, Console, Now, PASSWORD, START, error_code, member, owner, rfc6238,
};

#[test]
fn the_tests_totp_matches_rfc_6238() {
    // RFC 6238 appendix B, SHA-1 at 59 s: 94287082 (last six digits).
    let seed = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"; // "12345678901234567890"
    assert_eq!(rfc6238(seed, 59_000), "287082");
    assert_eq!(rfc6238(seed, 1_111_111_109_000), "081804");
}

#[tokio::test]
async fn setup_happens_once_with_a_valid_token() {
    let console = Console::start().await;
    let mut b = Browser::new("198.51.100.1");
    assert_eq!(
        b.call(&console, "GET", "setup", None).await,
        (200, json!({"needed": true}))
    );
    let good = console.setup_token(1).await;
    let form =
        |t: &str| Some(json!({"token": t, "email": "owner@example.com", "password": PASSWORD}));
    // A wrong token, a malformed one.
    let wrong = token::setup_token(&[2; 20]);
    for t in [wrong.as_str(), "tsu_nope"] {
        let (status, body) = b.call(&console, "POST", "setup", form(t)).await;
        assert_eq!(
            (status, error_code(&body)),
            (403, Some("invalid_setup_token"))
        );
    }
    // A short password.
    let (status, body) = b
        .call(
            &console,
            "POST",
            "setup",
            Some(json!({"token": good, "email": "o@example.com", "password": "short"})),
        )
        .await;
    assert_eq!((status, error_code(&body)), (400, Some("weak_password")));
    let (status, me) = b.call(&console, "POST", "setup", form(&good)).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["user"]["email"], "owner@example.com");
    assert_eq!(me["user"]["instance_owner"], true);
    assert!(b.cookie("tally_session").is_some() && b.cookie("tally_device").is_some());
    // The same token again, or another one: the instance has its owner.
    let (status, _) = b.call(&console, "POST", "setup", form(&good)).await;
    assert_eq!(status, 409);
    let other = console.setup_token(3).await;
    let (status, _) = Browser::new("198.51.100.2")
        .call(&console, "POST", "setup", form(&other))
        .await;
    assert_eq!(status, 409);
    assert_eq!(
        b.call(&console, "GET", "setup", None).await,
        (200, json!({"needed": false}))
    );
    assert_eq!(b.call(&console, "GET", "me", None).await.0, 200);
}

#[tokio::test]
async fn login_sessions_expiry_revocation_and_logout() {
    let console = Console::start().await;
    owner(&console).await;
    let mut laptop = Browser::new("203.0.113.7");
    let (status, body) = laptop
        .login(&console, "owner@example.com", "wrong password!")
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (401, Some("invalid_credentials"))
    );
    let (status, body) = laptop.login(&console, "nobody@example.com", PASSWORD).await;
    assert_eq!(
        (status, error_code(&body)),
        (401, Some("invalid_credentials"))
    );
    let (status, me) = laptop.login(&console, "OWNER@example.com", PASSWORD).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(laptop.call(&console, "GET", "me", None).await.0, 200);

    let mut phone = Browser::new("203.0.113.8");
    assert_eq!(
        phone.login(&console, "owner@example.com", PASSWORD).await.0,
        200
    );
    let (status, list) = laptop.call(&console, "GET", "sessions", None).await;
    assert_eq!(status, 200);
    let sessions = list["sessions"].as_array().unwrap();
    // The setup's session, the laptop's and the phone's.
    assert_eq!(sessions.len(), 3, "{list}");
    assert_eq!(sessions.iter().filter(|s| s["current"] == true).count(), 1);
    assert_eq!(sessions[0]["label"], "Chrome on macOS");
    // The laptop ends the phone's session.
    let phone_id = {
        let (_, list) = phone.call(&console, "GET", "sessions", None).await;
        list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["current"] == true)
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (status, _) = laptop
        .call(&console, "DELETE", &format!("sessions/{phone_id}"), None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(phone.call(&console, "GET", "me", None).await.0, 401);
    assert_eq!(
        laptop
            .call(&console, "DELETE", "sessions/000000000000", None)
            .await
            .0,
        404
    );

    // Idle for three days: over.
    console.clock.advance(3 * DAY_MS);
    assert_eq!(laptop.call(&console, "GET", "me", None).await.0, 401);
    // Used every two days: over at fourteen days all the same.
    console.clock.set(START);
    let mut desk = Browser::new("203.0.113.9");
    assert_eq!(
        desk.login(&console, "owner@example.com", PASSWORD).await.0,
        200
    );
    for _ in 0..6 {
        console.clock.advance(2 * DAY_MS);
        assert_eq!(desk.call(&console, "GET", "me", None).await.0, 200);
    }
    console.clock.advance(2 * DAY_MS);
    assert_eq!(desk.call(&console, "GET", "me", None).await.0, 401);

    // Logout ends the session and clears the cookie.
    let mut b = Browser::new("203.0.113.10");
    assert_eq!(
        b.login(&console, "owner@example.com", PASSWORD).await.0,
        200
    );
    let token = b.cookie("tally_session").unwrap().to_owned();
    assert_eq!(b.call(&console, "POST", "logout", None).await.0, 200);
    assert_eq!(b.cookie("tally_session"), None);
    b.cookies.push(("tally_session".into(), token));
    assert_eq!(b.call(&console, "GET", "me", None).await.0, 401);
}

#[tokio::test]
async fn two_factor_logins() {
    let console = Console::start().await;
    let mut b = owner(&console).await;
    let (status, setup) = b.call(&console, "POST", "totp/setup", None).await;
    assert_eq!(status, 200, "{setup}");
    let secret = setup["secret"].as_str().unwrap().to_owned();
    assert!(
        setup["otpauth_url"]
            .as_str()
            .unwrap()
            .starts_with("otpauth://totp/Tally:owner%40example.com?secret=")
    );
    let now = console.clock.now_ms();
    let (status, _) = b
        .call(
            &console,
            "POST",
            "totp/enable",
            Some(json!({"code": "000000"})),
        )
        .await;
    assert_eq!(status, 401);
    let code = rfc6238(&secret, now);
    let (status, body) = b
        .call(&console, "POST", "totp/enable", Some(json!({"code": code})))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        b.call(&console, "GET", "me", None).await.1["user"]["totp_enabled"],
        true
    );

    // A login now asks for a code.
    console.clock.advance(MINUTE_MS);
    let mut other = Browser::new("203.0.113.20");
    let (status, body) = other.login(&console, "owner@example.com", PASSWORD).await;
    assert_eq!(status, 200);
    assert_eq!(body["totp_required"], true);
    assert!(other.cookie("tally_session").is_none());
    let challenge = body["challenge"].as_str().unwrap().to_owned();
    let send = |code: String| Some(json!({"challenge": challenge, "code": code}));
    let (status, _) = other
        .call(&console, "POST", "login/totp", send("123456".into()))
        .await;
    assert_eq!(status, 401);
    let code = rfc6238(&secret, console.clock.now_ms());
    let (status, me) = other
        .call(&console, "POST", "login/totp", send(code.clone()))
        .await;
    assert_eq!(status, 200, "{me}");
    assert!(other.cookie("tally_session").is_some());
    // The challenge is spent, and the code is not good twice.
    let (status, _) = other
        .call(&console, "POST", "login/totp", send(code.clone()))
        .await;
    assert_eq!(status, 401);
    let mut third = Browser::new("203.0.113.21");
    let (_, body) = third.login(&console, "owner@example.com", PASSWORD).await;
    let again = json!({"challenge": body["challenge"], "code": code});
    assert_eq!(
        third
            .call(&console, "POST", "login/totp", Some(again))
            .await
            .0,
        401
    );
    // The next step's code is.
    console.clock.advance(30_000);
    let next =
        json!({"challenge": body["challenge"], "code": rfc6238(&secret, console.clock.now_ms())});
    assert_eq!(
        third
            .call(&console, "POST", "login/totp", Some(next))
            .await
            .0,
        200
    );
    // A challenge lives five minutes.
    let (_, body) = third.login(&console, "owner@example.com", PASSWORD).await;
    console.clock.advance(5 * MINUTE_MS + 30_000);
    let late =
        json!({"challenge": body["challenge"], "code": rfc6238(&secret, console.clock.now_ms())});
    assert_eq!(
        third
            .call(&console, "POST", "login/totp", Some(late))
            .await
            .0,
        401
    );

    // Turning it off takes the password and a code.
    console.clock.advance(30_000);
    let off = json!({"password": PASSWORD, "code": rfc6238(&secret, console.clock.now_ms())});
    let (status, body) = third
        .call(&console, "POST", "totp/disable", Some(off))
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, body) = Browser::new("203.0.113.22")
        .login(&console, "owner@example.com", PASSWORD)
        .await;
    assert_eq!(body["user"]["totp_enabled"], false);
}

#[tokio::test]
async fn state_changes_need_the_csrf_token_and_the_same_origin() {
    let console = Console::start().await;
    let mut b = owner(&console).await;
    // A cross-site form post: the cookie, no token.
    let request = b.request("POST", "totp/setup", None);
    let (status, body) = b.raw(&console, request, None).await;
    assert_eq!((status, error_code(&body)), (403, Some("csrf")));
    // The token, but another origin.
    let request = b
        .request("POST", "totp/setup", None)
        .header("x-csrf-token", b.csrf.clone().unwrap())
        .header("origin", "https://evil.example");
    let (status, body) = b.raw(&console, request, None).await;
    assert_eq!((status, error_code(&body)), (403, Some("csrf")));
    // A wrong token.
    let request = b
        .request("PUT", "settings", None)
        .header("x-csrf-token", "0".repeat(32));
    let (status, _) = b
        .raw(&console, request, Some(json!({"require_2fa": true})))
        .await;
    assert_eq!(status, 403);
    // Login from another origin.
    let request = b
        .request("POST", "login", None)
        .header("origin", "https://evil.example");
    let login = json!({"email": "owner@example.com", "password": PASSWORD});
    assert_eq!(b.raw(&console, request, Some(login)).await.0, 403);
    // Reads need no token; the right token and origin pass.
    let request = b.request("GET", "me", None);
    assert_eq!(b.raw(&console, request, None).await.0, 200);
    assert_eq!(b.call(&console, "POST", "totp/setup", None).await.0, 200);
}

#[tokio::test]
async fn guesses_are_limited_but_known_browsers_still_sign_in() {
    let console = Console::start().await;
    let mut known = owner(&console).await;
    // The owner's browser signs out; its device cookie stays.
    assert_eq!(known.call(&console, "POST", "logout", None).await.0, 200);
    known.csrf = None;
    assert!(known.cookie("tally_device").is_some());
    known.ip = "192.0.2.50".into();

    let mut guesser = Browser::new("192.0.2.50");
    for i in 0..10 {
        let (status, _) = guesser
            .login(&console, "owner@example.com", &format!("guess number {i}"))
            .await;
        assert_eq!(status, 401, "guess {i}");
    }
    let request = guesser
        .request("POST", "login", None)
        .header("origin", "https://tally.example.com");
    let (status, json, headers) = console
        .send(guesser.build(
            request,
            Some(json!({"email": "owner@example.com", "password": PASSWORD})),
        ))
        .await;
    assert_eq!(
        (status, error_code(&json)),
        (429, Some("too_many_attempts"))
    );
    let wait: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(wait > 0 && wait <= 15 * 60);
    // Even the right password from the guesser's network waits.
    assert_eq!(
        guesser
            .login(&console, "owner@example.com", PASSWORD)
            .await
            .0,
        429
    );
    // The browser that signed in before, on the same network, still signs in.
    let (status, body) = known.login(&console, "owner@example.com", PASSWORD).await;
    assert_eq!(status, 200, "{body}");
    // Another network is not held back.
    assert_eq!(
        Browser::new("192.0.2.99")
            .login(&console, "owner@example.com", PASSWORD)
            .await
            .0,
        200
    );
    // A quarter of an hour later the guesser's network may try again.
    console.clock.advance(15 * MINUTE_MS);
    assert_eq!(
        guesser
            .login(&console, "owner@example.com", PASSWORD)
            .await
            .0,
        200
    );

    // 2FA codes are limited the same way.
    let mut b = Browser::new("192.0.2.60");
    assert_eq!(
        b.login(&console, "owner@example.com", PASSWORD).await.0,
        200
    );
    let (_, setup) = b.call(&console, "POST", "totp/setup", None).await;
    let secret = setup["secret"].as_str().unwrap().to_owned();
    for _ in 0..10 {
        let (status, _) = b
            .call(
                &console,
                "POST",
                "totp/enable",
                Some(json!({"code": "000000"})),
            )
            .await;
        assert!(status == 401 || status == 200);
    }
    let code = rfc6238(&secret, console.clock.now_ms());
    let (status, _) = b
        .call(&console, "POST", "totp/enable", Some(json!({"code": code})))
        .await;
    assert_eq!(status, 429);
}

#[tokio::test]
async fn require_2fa_holds_users_without_it_to_setting_it_up() {
    let console = Console::start().await;
    let mut o = owner(&console).await;
    member(&console, "viewer@example.com").await;
    let mut v = Browser::new("198.51.100.30");
    assert_eq!(
        v.login(&console, "viewer@example.com", PASSWORD).await.0,
        200
    );
    // Only the instance owner changes settings.
    let (status, body) = v
        .call(
            &console,
            "PUT",
            "settings",
            Some(json!({"require_2fa": true})),
        )
        .await;
    assert_eq!((status, error_code(&body)), (403, Some("forbidden")));
    let (status, body) = o
        .call(
            &console,
            "PUT",
            "settings",
            Some(json!({"require_2fa": true})),
        )
        .await;
    assert_eq!((status, body), (200, json!({"require_2fa": true})));

    let (status, me) = v.call(&console, "GET", "me", None).await;
    assert_eq!((status, me["require_2fa"].clone()), (200, json!(true)));
    let (status, body) = v.call(&console, "GET", "sessions", None).await;
    assert_eq!((status, error_code(&body)), (403, Some("totp_required")));
    let (status, setup) = v.call(&console, "POST", "totp/setup", None).await;
    assert_eq!(status, 200);
    let code = rfc6238(setup["secret"].as_str().unwrap(), console.clock.now_ms());
    assert_eq!(
        v.call(&console, "POST", "totp/enable", Some(json!({"code": code})))
            .await
            .0,
        200
    );
    assert_eq!(
        v.call(&console, "GET", "me", None).await.1["require_2fa"],
        false
    );
    assert_eq!(v.call(&console, "GET", "sessions", None).await.0, 200);
    // Turning it off is refused while the instance requires it.
    console.clock.advance(30_000);
    let code = rfc6238(setup["secret"].as_str().unwrap(), console.clock.now_ms());
    let off = json!({"password": PASSWORD, "code": code});
    assert_eq!(
        v.call(&console, "POST", "totp/disable", Some(off)).await.0,
        409
    );
}

#[tokio::test]
async fn malformed_bodies_are_clear_4xx_that_echo_nothing() {
    let console = Console::start().await;
    let mut b = Browser::new("198.51.100.40");
    for (body, status) in [
        (Some(json!({"email": "a@b.c"})), 400),
        (
            Some(json!({"email": "a@b.c", "password": 12345678901_i64})),
            400,
        ),
        (
            Some(json!({"email": "a@b.c", "password": "p", "extra": "hunter2hunter2"})),
            400,
        ),
        (None, 400),
    ] {
        let (got, json) = b.call(&console, "POST", "login", body.clone()).await;
        assert_eq!(got, status, "{body:?}");
        assert_eq!(json["error"]["code"], "invalid_body");
        assert!(!json.to_string().contains("hunter2"), "{json}");
    }
    let big = json!({"email": "a@b.c", "password": "x".repeat(20_000)});
    assert_eq!(b.call(&console, "POST", "login", Some(big)).await.0, 413);
    assert_eq!(b.call(&console, "GET", "nope", None).await.0, 404);
    assert_eq!(b.call(&console, "GET", "login", None).await.0, 405);
    assert_eq!(b.call(&console, "GET", "me", None).await.0, 401);
}

#[tokio::test]
async fn logs_hold_no_secret() {
    // The functions' default level (`TALLY_LOG_LEVEL`, info).
    let captured = Captured::install();

    let console = Console::start().await;
    let t = console.setup_token(1).await;
    let mut b = Browser::new("198.51.100.77");
    let form = json!({"token": t, "email": "owner@example.com", "password": PASSWORD});
    assert_eq!(b.call(&console, "POST", "setup", Some(form)).await.0, 200);
    let (_, setup) = b.call(&console, "POST", "totp/setup", None).await;
    let secret = setup["secret"].as_str().unwrap().to_owned();
    let code = rfc6238(&secret, console.clock.now_ms());
    assert_eq!(
        b.call(&console, "POST", "totp/enable", Some(json!({"code": code})))
            .await
            .0,
        200
    );
    for _ in 0..12 {
        b.login(&console, "owner@example.com", "not the password")
            .await;
    }
    let session = b.cookie("tally_session").unwrap().to_owned();
    let logs = captured.text();
    assert!(
        logs.contains("too many failed attempts"),
        "the guard logged: {logs}"
    );
    captured.assert_none_of(&[
        PASSWORD,
        "not the password",
        t.as_str(),
        session.as_str(),
        secret.as_str(),
        code.as_str(),
        "198.51.100.77",
        "owner@example.com",
        "Chrome/131",
        b.csrf.as_deref().unwrap(),
    ]);
}

/// A user holds at most `caps::MAX_SESSIONS` sessions (issue 29, item 4):
/// signing in once more ends the least recently used, so logins in a loop
/// cannot grow a user's partition without bound.
#[tokio::test]
async fn the_twenty_first_sign_in_ends_the_least_recently_used_session() {
    use tally_core::account::caps::MAX_SESSIONS;
    let console = Console::start().await;
    let mut first = owner(&console).await;
    let mut browsers = Vec::new();
    for n in 1..MAX_SESSIONS {
        console.clock.advance(1_000);
        let mut b = Browser::new("198.51.100.1");
        let (status, body) = b.login(&console, "owner@example.com", PASSWORD).await;
        assert_eq!(status, 200, "{n}: {body}");
        browsers.push(b);
    }
    // `first` is used after a while (its `last_seen` written every ten
    // minutes): the first login after it is now the least recently used.
    console.clock.advance(11 * MINUTE_MS);
    assert_eq!(first.call(&console, "GET", "me", None).await.0, 200);
    let (_, list) = first.call(&console, "GET", "sessions", None).await;
    assert_eq!(list["sessions"].as_array().unwrap().len(), MAX_SESSIONS);
    let mut one_more = Browser::new("198.51.100.1");
    let (status, _) = one_more
        .login(&console, "owner@example.com", PASSWORD)
        .await;
    assert_eq!(status, 200);
    let (_, list) = one_more.call(&console, "GET", "sessions", None).await;
    assert_eq!(list["sessions"].as_array().unwrap().len(), MAX_SESSIONS);
    assert_eq!(browsers[0].call(&console, "GET", "me", None).await.0, 401);
    assert_eq!(first.call(&console, "GET", "me", None).await.0, 200);
    assert_eq!(browsers[1].call(&console, "GET", "me", None).await.0, 200);
}

/// The first owner without a Rust toolchain (issue 30): the token
/// `infra/scripts/setup-token.sh` writes with the AWS CLI is the item
/// `tally setup-token` stores. The script is run with an `aws` stand-in on
/// `PATH` that records its arguments; the recorded item is written as the
/// CLI would write it, and the console's setup takes the printed token,
/// once.
#[tokio::test]
async fn the_shell_setup_token_signs_the_first_owner_in_once() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let console = Console::start().await;
    let dir = std::env::temp_dir().join(format!("tally-aws-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let recorded = dir.join("args");
    let aws = dir.join("aws");
    std::fs::write(
        &aws,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\n",
            recorded.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&aws, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../infra/scripts/setup-token.sh"
    );
    let out = std::process::Command::new(script)
        .args(["tally", "eu-central-1"])
        .env(
            "PATH",
            format!("{}:{}", dir.display(), std::env::var("PATH").unwrap()),
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(token::is_setup_token(&token), "{token}");
    let args: Vec<String> = std::fs::read_to_string(&recorded)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let arg = |name: &str| {
        let at = args.iter().position(|a| a == name).unwrap();
        args[at + 1].clone()
    };
    assert_eq!(args[..2], ["dynamodb", "put-item"]);
    assert_eq!(
        (arg("--table-name"), arg("--region")),
        ("tally".into(), "eu-central-1".into())
    );
    let item: serde_json::Value = serde_json::from_str(&arg("--item")).unwrap();
    let item: std::collections::HashMap<String, AttributeValue> = item
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            let value = match (v.get("S"), v.get("N")) {
                (Some(s), _) => AttributeValue::S(s.as_str().unwrap().to_owned()),
                (_, Some(n)) => AttributeValue::N(n.as_str().unwrap().to_owned()),
                _ => panic!("{k}: {v}"),
            };
            (k.clone(), value)
        })
        .collect();
    console
        .store
        .client()
        .put_item()
        .table_name("tally")
        .set_item(Some(item))
        .send()
        .await
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    // The script's clock is the real one: the console checks it there.
    console.clock.set(tally_store::clock::Clock::now(
        &tally_store::clock::SystemClock,
    ));
    let form = json!({"token": token, "email": "owner@example.com", "password": PASSWORD});
    let mut b = Browser::new("198.51.100.1");
    let (status, body) = b.call(&console, "POST", "setup", Some(form.clone())).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(b.call(&console, "GET", "me", None).await.0, 200);
    let (status, _) = Browser::new("198.51.100.2")
        .call(&console, "POST", "setup", Some(form))
        .await;
    assert_ne!(status, 200, "the token works once");
}

/// Behind the stack's CloudFront (issue 30, item 4) the API sees its own
/// `Host`; the distribution copies the viewer's into `X-Forwarded-Host`,
/// and the origin check of a state-changing request compares with that:
/// the owner signs in from the site's domain, while a page of another
/// origin is still refused.
#[tokio::test]
async fn behind_cloudfront_the_origin_is_checked_against_the_forwarded_host() {
    let console = Console::start().await;
    let _ = owner(&console).await;
    let login = |origin: &str, forwarded: Option<&str>| {
        let b = Browser::new("198.51.100.1");
        let mut builder = http::Request::builder()
            .method("POST")
            .uri("/api/console/login")
            .header("host", "a1b2c3d4e5.execute-api.eu-central-1.amazonaws.com")
            .header("origin", origin)
            .header("content-type", "application/json");
        if let Some(host) = forwarded {
            builder = builder.header("x-forwarded-host", host);
        }
        b.build(
            builder,
            Some(json!({"email": "owner@example.com", "password": PASSWORD})),
        )
    };
    for (origin, forwarded, expected) in [
        ("https://stats.example.com", Some("stats.example.com"), 200),
        ("https://stats.example.com", None, 403),
        ("https://evil.example", Some("stats.example.com"), 403),
    ] {
        let (status, body, _) = console.send(login(origin, forwarded)).await;
        assert_eq!(status, expected, "{origin} {forwarded:?}: {body}");
    }
}
