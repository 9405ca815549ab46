//! The IAM actions `template.yaml` grants each function are exactly the
//! DynamoDB operations its code sends: each handler is run through its
//! scenarios with a request counter and the observed operations are compared
//! with the policy. No wildcard action anywhere. Each function's
//! `dynamodb:LeadingKeys` condition allows exactly the partitions it named
//! (issue 30, item 7): the internet-facing ingest function cannot touch a
//! user, a session, an email or the instance.

#![allow(clippy::unwrap_used)]

use lambda_http::Body;
use serde_norway::Value;
use std::collections::BTreeSet;
use tally_core::ingest::site::Site;
use tally_core::time::zone::utc_midnight;
use tally_core::{DAY_MS, HOUR_MS};
use tally_ingest::store::DynamoIngest;
use tally_query::store::DynamoQuery;
use tally_store::clock::ManualClock;
use tally_store::salt::SharedSalt;
use tally_store::{ClientOptions, Store};
use tally_tests::faults::{Fault, FaultProxy};
use tally_tests::seed::{store_events, traffic};
use tally_tests::{Harness, collect_request};
use time::macros::date;

/// Every statement of a function's inline policies (a policy given under
/// `!If [condition, policy, AWS::NoValue]`: the policy when it holds).
fn statements(function: &str) -> Vec<Value> {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml")).unwrap();
    let template: Value = serde_norway::from_str(&text).unwrap();
    let mut out = Vec::new();
    for policy in template["Resources"][function]["Properties"]["Policies"]
        .as_sequence()
        .unwrap()
    {
        let policy = match policy {
            Value::Tagged(tagged) if tagged.tag == "If" => &tagged.value[1],
            policy => policy,
        };
        out.extend(policy["Statement"].as_sequence().unwrap().iter().cloned());
    }
    out
}

fn granted(function: &str) -> BTreeSet<String> {
    let mut actions = BTreeSet::new();
    for statement in statements(function) {
        assert_eq!(statement["Effect"], "Allow");
        let list: Vec<String> = match &statement["Action"] {
            Value::String(a) => vec![a.clone()],
            Value::Sequence(seq) => seq.iter().map(|a| a.as_str().unwrap().to_owned()).collect(),
            other => panic!("unexpected Action {other:?}"),
        };
        for action in list {
            assert!(
                !action.contains('*'),
                "{function}: wildcard action {action}"
            );
            actions.insert(action);
        }
    }
    actions
}

/// A mailer that SES-refuses `refused@…` and takes the rest, keeping
/// whom it was asked to mail.
#[derive(Debug, Default)]
struct RefusingMailer(std::sync::Mutex<Vec<String>>);

impl tally_mail::Mailer for RefusingMailer {
    fn send<'a>(&'a self, message: &'a tally_mail::Message) -> tally_mail::MailFuture<'a> {
        self.0.lock().unwrap().push(message.to.clone());
        let refused = message.to.starts_with("refused@");
        Box::pin(async move {
            if refused {
                Err(tally_mail::MailError::Rejected {
                    code: "MessageRejected".into(),
                    detail: String::new(),
                })
            } else {
                Ok(())
            }
        })
    }
}

fn observed(ops: std::collections::BTreeMap<String, u64>) -> BTreeSet<String> {
    ops.keys().map(|op| format!("dynamodb:{op}")).collect()
}

/// The DynamoDB actions of a function's policy.
fn granted_table(function: &str) -> BTreeSet<String> {
    granted(function)
        .into_iter()
        .filter(|a| a.starts_with("dynamodb:"))
        .collect()
}

/// The partition-key patterns of a function's DynamoDB statement (its
/// `dynamodb:LeadingKeys` condition).
fn leading_keys(function: &str) -> Vec<String> {
    let mut patterns = Vec::new();
    for statement in statements(function) {
        let dynamodb = statement["Action"].as_sequence().is_some_and(|a| {
            a.iter()
                .any(|a| a.as_str().unwrap().starts_with("dynamodb:"))
        });
        if dynamodb {
            patterns.extend(
                statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
                    .as_sequence()
                    .unwrap_or_else(|| panic!("{function}: no LeadingKeys condition"))
                    .iter()
                    .map(|p| p.as_str().unwrap().to_owned()),
            );
        }
    }
    patterns
}

/// IAM's `StringLike` for the patterns used here: exact, or a prefix
/// before a final `*`.
fn like(pattern: &str, key: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => key.starts_with(prefix),
        None => key == pattern,
    }
}

/// Every partition key the function's requests named is one its
/// `LeadingKeys` allow, and every pattern allowed was needed.
fn only_its_partitions(function: &str, keys: &BTreeSet<String>) {
    let patterns = leading_keys(function);
    assert!(!keys.is_empty(), "{function}: no request observed");
    for key in keys {
        assert!(
            patterns.iter().any(|p| like(p, key)),
            "{function} named {key:?}, which {patterns:?} refuse"
        );
    }
    for pattern in &patterns {
        assert!(
            keys.iter().any(|k| like(pattern, k)),
            "{function} is allowed {pattern:?} but never used it"
        );
    }
}

#[test]
fn no_function_is_granted_a_wildcard() {
    for f in [
        "IngestFunction",
        "QueryFunction",
        "ConsoleFunction",
        "RollupFunction",
    ] {
        assert!(!granted(f).is_empty(), "{f} has a DynamoDB policy");
    }
}

#[tokio::test]
async fn each_function_is_granted_exactly_what_its_code_calls() {
    let h = Harness::start().await;
    let mut site = Site::new("iam", &["example.com".into()], "UTC", 0).unwrap();
    site.retention_days = 60;
    h.store.create_site(&site).await.unwrap();
    let key = tally_tests::new_key(&h.store, "iam", 4).await;
    let goal = tally_core::engine::goal::Goal::new(
        "g",
        "G",
        tally_core::engine::goal::GoalRule::Event {
            name: "Signup".into(),
        },
        0,
    )
    .unwrap();
    h.store.put_goal("iam", &goal).await.unwrap();
    let now = utc_midnight(date!(2026 - 11 - 30)) + 12 * HOUR_MS;
    store_events(
        &h.store,
        &site,
        &traffic(&site, now - 10 * DAY_MS, 10, 5, 1),
    )
    .await;

    // Ingest: a cold instance (site and salt reads, the salt write) and a
    // warm one, accepted and duplicate events.
    let (store, counter) = h.second_store().await;
    let ingest = DynamoIngest::new(store, SharedSalt::new());
    let config = tally_ingest::Config::default();
    let clock = ManualClock::at(now);
    let ua = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
    let body =
        format!(r#"{{"s":"iam","u":"https://example.com/","eid":"iamevent0001","ts":{now}}}"#);
    for _ in 0..2 {
        tally_ingest::handle(
            &ingest,
            &clock,
            &config,
            collect_request(&body, "203.0.113.5", ua),
        )
        .await;
    }
    // Plausible's Events API naming the site by a domain that is not its id:
    // the site list is read once to find it.
    let event = r#"{"n":"pageview","u":"https://example.com/p","d":"example.com"}"#;
    tally_ingest::handle(
        &ingest,
        &clock,
        &config,
        tally_tests::post_request("/api/event", event, "203.0.113.5", ua),
    )
    .await;
    // A write DynamoDB still throttles after the SDK's retries: the
    // instance raises the site's shard count (one UpdateItem).
    let proxy = FaultProxy::start(&h.endpoint).await;
    proxy.set(Fault::ThrottleMatching("iamthrottled".into()));
    let throttled = DynamoIngest::new(
        Store::connect(
            &ClientOptions {
                counter: Some(counter.clone()),
                ..ClientOptions::local(&proxy.endpoint)
            },
            "tally",
        )
        .await,
        SharedSalt::new(),
    );
    let body =
        format!(r#"{{"s":"iam","u":"https://example.com/","eid":"iamthrottled","ts":{now}}}"#);
    let r = tally_ingest::handle(
        &throttled,
        &clock,
        &config,
        collect_request(&body, "203.0.113.5", ua),
    )
    .await;
    assert_eq!(r.status(), 503);
    assert_eq!(
        h.store
            .site("iam")
            .await
            .unwrap()
            .unwrap()
            .shards_at(now + tally_core::MINUTE_MS),
        2,
        "the throttled write doubled the shard count"
    );
    for fixture in [
        "ingest-script.json",
        "ingest-preflight.json",
        "ingest-health.json",
    ] {
        let text = std::fs::read_to_string(format!(
            "{}/../infra/events/{fixture}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        tally_ingest::handle(
            &ingest,
            &clock,
            &config,
            lambda_http::request::from_str(&text).unwrap(),
        )
        .await;
    }
    assert_eq!(
        observed(counter.by_operation()),
        granted_table("IngestFunction")
    );
    only_its_partitions("IngestFunction", &counter.partitions());

    // Rollup: the scheduled job over every site; with partitions taking 10
    // writes a second, the busiest hour asks for more shards.
    let (store, counter) = h.second_store().await;
    let job = tally_rollup::JobConfig {
        partition_writes: 10,
        ..tally_rollup::JobConfig::default()
    };
    let report = tally_rollup::run(&store, now, &job, &|_| {}).await.unwrap();
    assert!(report.days_written > 0);
    assert_eq!(report.resharded, vec![("iam".to_owned(), 4)]);
    // Its email reports step (2026-11-30 is a Monday, 12:00 in the site's
    // zone: the weekly report is due): one mail sent and marked, one SES
    // refuses (its claim given back), then a rerun sends nothing.
    for (email, monthly) in [("ok@example.com", false), ("refused@example.com", true)] {
        let sub = tally_core::product::report_mail::SubscriptionSpec {
            email: email.into(),
            weekly: true,
            monthly,
        }
        .build(&[], 0)
        .unwrap();
        h.store.put_report_subscription("iam", &sub).await.unwrap();
    }
    let mailer = RefusingMailer::default();
    let reports = tally_rollup::reports::ReportJob {
        mailer: &mailer,
        public_url: "https://tally.example".into(),
        site: None,
    };
    let sent = tally_rollup::reports::send_due(&store, now, &reports)
        .await
        .unwrap();
    assert_eq!((sent.sent, sent.failed.len()), (1, 1), "{sent:?}");
    assert_eq!(
        mailer.0.lock().unwrap().as_slice(),
        ["ok@example.com", "refused@example.com"]
    );
    assert_eq!(
        observed(counter.by_operation()),
        granted_table("RollupFunction")
    );
    only_its_partitions("RollupFunction", &counter.partitions());
    assert!(granted("RollupFunction").contains("ses:SendEmail"));

    // Query: every endpoint, from rollups and from raw events, goals included.
    let (store, counter) = h.second_store().await;
    let query = DynamoQuery::new(store);
    for path in [
        "stats?period=30d&compare=previous",
        "timeseries?period=7d",
        "timeseries?period=today",
        "breakdown/goals?period=30d",
        "breakdown/pages?period=7d&filters=country==DE",
        "realtime",
    ] {
        let request = http::Request::builder()
            .uri(format!("/api/sites/iam/{path}"))
            .header("authorization", format!("Bearer {key}"))
            .body(Body::Empty)
            .unwrap();
        let response = tally_query::handle(&query, &clock, request).await;
        assert_eq!(response.status(), 200, "{path}");
    }
    // A signed-in member (the console's session cookie) reads a report
    // and the all-sites view; an instance owner's overview lists every
    // site. Nothing is written: not even the session's `last_seen`.
    {
        use tally_core::account::{ConsoleSession, Membership, Role, User, token};
        let now = tally_store::clock::Clock::now(&clock);
        for (seed, owner) in [(1u8, false), (2, true)] {
            let uid = token::user_id_from_bytes(&[seed; 8]);
            let user = User {
                id: uid.clone(),
                email: format!("u{seed}@example.com"),
                password: String::new(),
                totp_secret: None,
                totp_enabled: false,
                totp_last_step: None,
                instance_owner: owner,
                created: now,
                known_devices: Vec::new(),
            };
            assert!(h.store.create_user(&user).await.unwrap());
            if !owner {
                let m = Membership {
                    site: "iam".into(),
                    uid: uid.clone(),
                    role: Role::Viewer,
                    email: user.email.clone(),
                };
                h.store.put_membership(&m).await.unwrap();
            }
            let session_token = token::session_token(&uid, &[seed; 20]);
            let session = ConsoleSession::new(
                token::hash_token(&session_token),
                &uid,
                "test".into(),
                "c".repeat(32),
                now - tally_core::DAY_MS,
            );
            h.store.put_session(&session).await.unwrap();
            for path in [
                "/api/sites/iam/stats?period=30d",
                "/api/sites/iam/access",
                "/api/overview",
            ] {
                let request = http::Request::builder()
                    .uri(path)
                    .header("cookie", format!("tally_session={session_token}"))
                    .body(Body::Empty)
                    .unwrap();
                let response = tally_query::handle(&query, &clock, request).await;
                assert_eq!(response.status(), 200, "{path}");
            }
        }
    }
    // A password-protected shared link unlocked: the minute's attempt is
    // counted in the table (one conditional UpdateItem).
    let token = tally_core::account::share::token_from_bytes("iam", &[7; 20]);
    let link = tally_core::account::share::Share {
        hash: tally_core::account::share::hash_token(&token),
        prefix: tally_core::account::share::shown_prefix(&token),
        label: "iam".into(),
        filter: String::new(),
        created_at: 0,
        expires_at: None,
        password: Some(
            tally_core::account::share::PasswordHash::new("open sesame", &[7; 16], 1_000).unwrap(),
        ),
        revoked_at: None,
        segment: None,
    };
    h.store.put_share("iam", &link).await.unwrap();
    let request = http::Request::builder()
        .method("POST")
        .uri("/api/sites/iam/unlock")
        .header("authorization", format!("Bearer {token}"))
        .body(Body::Text(r#"{"password":"open sesame"}"#.into()))
        .unwrap();
    let response = tally_query::handle(&query, &clock, request).await;
    assert_eq!(response.status(), 200, "unlock");
    // A trusted conversion from a write key: one conditional PutItem, and
    // its reports (Query).
    let writer = tally_tests::write_key(&h.store, "iam", 11).await;
    let request = http::Request::builder()
        .method("POST")
        .uri("/api/sites/iam/conversions")
        .header("authorization", format!("Bearer {writer}"))
        .body(Body::Text(
            r#"{"order_id":"o-1","amount":"9.99","currency":"EUR"}"#.into(),
        ))
        .unwrap();
    let response = tally_query::handle(&query, &clock, request).await;
    assert_eq!(response.status(), 201, "conversion");
    let request = http::Request::builder()
        .uri("/api/sites/iam/conversions/summary?period=30d")
        .header("authorization", format!("Bearer {key}"))
        .body(Body::Empty)
        .unwrap();
    let response = tally_query::handle(&query, &clock, request).await;
    assert_eq!(response.status(), 200, "conversions summary");
    assert_eq!(
        observed(counter.by_operation()),
        granted_table("QueryFunction")
    );
    only_its_partitions("QueryFunction", &counter.partitions());
}

#[test]
fn the_console_and_the_job_may_send_mail_only_from_its_identity() {
    for f in ["IngestFunction", "QueryFunction"] {
        assert!(granted(f).iter().all(|a| !a.starts_with("ses:")), "{f}");
    }
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml")).unwrap();
    let template: Value = serde_norway::from_str(&text).unwrap();
    for f in ["ConsoleFunction", "RollupFunction"] {
        let mails: Vec<Value> = template["Resources"][f]["Properties"]["Policies"]
            .as_sequence()
            .unwrap()
            .iter()
            .filter_map(|p| match p {
                Value::Tagged(t) if t.tag == "If" => Some(t.value.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(mails.len(), 1, "{f}: one conditional policy");
        let mail = &mails[0];
        assert_eq!(mail[0], "HasEmailFrom", "{f}: only when EmailFrom is set");
        let statements = mail[1]["Statement"].as_sequence().unwrap();
        assert_eq!(statements.len(), 1, "{f}");
        let statement = &statements[0];
        assert_eq!(
            statement["Action"],
            Value::from(vec!["ses:SendEmail"]),
            "{f}"
        );
        let condition = &statement["Condition"]["StringEquals"]["ses:FromAddress"];
        assert!(
            matches!(condition, Value::Tagged(t) if t.tag == "Ref" && t.value == "EmailFrom"),
            "{f}: SendEmail only from EmailFrom: {condition:?}"
        );
        let env = &template["Resources"][f]["Properties"]["Environment"]["Variables"];
        assert!(
            matches!(&env["EMAIL_FROM"], Value::Tagged(t) if t.tag == "Ref" && t.value == "EmailFrom"),
            "{f}: sends from EMAIL_FROM = EmailFrom"
        );
    }
}

#[tokio::test]
async fn the_console_is_granted_exactly_what_its_code_calls() {
    use tally_tests::console::{Browser, Console, PASSWORD, owner, rfc6238};
    let mut console = Console::start().await;
    let (store, counter) = console.second_store().await;
    console.store = store;
    // First run, a login with 2FA, sessions listed and revoked, the
    // instance's settings, a wrong password counted, logout.
    let mut b = owner(&console).await;
    let (status, body) = b.call(&console, "POST", "totp/setup", None).await;
    assert_eq!(status, 200, "{body}");
    let secret = body["secret"].as_str().unwrap().to_owned();
    let code = rfc6238(&secret, tally_store::clock::Clock::now(&console.clock));
    let (status, body) = b
        .call(
            &console,
            "POST",
            "totp/enable",
            Some(serde_json::json!({"code": code})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let mut other = Browser::new("203.0.113.9");
    let (status, _) = other
        .login(&console, "owner@example.com", "not the password")
        .await;
    assert_eq!(status, 401);
    let (status, body) = other.login(&console, "owner@example.com", PASSWORD).await;
    assert_eq!(
        (status, body["totp_required"].as_bool()),
        (200, Some(true)),
        "{body}"
    );
    console.clock.advance(30_000);
    let code = rfc6238(&secret, tally_store::clock::Clock::now(&console.clock));
    let challenge = body["challenge"].as_str().unwrap().to_owned();
    let (status, body) = other
        .call(
            &console,
            "POST",
            "login/totp",
            Some(serde_json::json!({"challenge": challenge, "code": code})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, list) = other.call(&console, "GET", "sessions", None).await;
    let first = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["current"] != true)
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _) = other
        .call(&console, "DELETE", &format!("sessions/{first}"), None)
        .await;
    assert_eq!(status, 200);
    let (status, body) = other
        .call(
            &console,
            "PUT",
            "settings",
            Some(serde_json::json!({"require_2fa": true})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // The site routes: a site made, changed, configured, shared, keyed,
    // an invite made and accepted by a new user, members, the audit log,
    // the first page view, and the site deleted; then passwords.
    use serde_json::json;
    let site_calls = [
        (
            "POST",
            "sites",
            Some(json!({"domains": ["iam.example"]})),
            201,
        ),
        ("GET", "sites", None, 200),
        (
            "PATCH",
            "sites/iam.example",
            Some(json!({"timezone": "Europe/Berlin"})),
            200,
        ),
        (
            "POST",
            "sites/iam.example/goals",
            Some(json!({"event": "Signup"})),
            201,
        ),
        ("DELETE", "sites/iam.example/goals/signup", None, 200),
        (
            "POST",
            "sites/iam.example/funnels",
            Some(json!({"name": "F", "steps": ["/", "/a"]})),
            201,
        ),
        ("GET", "sites/iam.example/first-pageview", None, 200),
        ("GET", "sites/iam.example/snippet", None, 200),
    ];
    for (method, path, body, expected) in site_calls {
        let (status, answer) = other.call(&console, method, path, body).await;
        assert_eq!(status, expected, "{method} {path}: {answer}");
    }
    let (status, made) = other
        .call(
            &console,
            "POST",
            "sites/iam.example/shares",
            Some(json!({"label": "x"})),
        )
        .await;
    assert_eq!(status, 201);
    let id = made["share"]["id"].as_str().unwrap().to_owned();
    let path = format!("sites/iam.example/shares/{id}");
    assert_eq!(other.call(&console, "DELETE", &path, None).await.0, 200);
    let (status, made) = other
        .call(
            &console,
            "POST",
            "sites/iam.example/keys",
            Some(json!({"scope": "configure"})),
        )
        .await;
    assert_eq!(status, 201);
    let id = made["item"]["id"].as_str().unwrap().to_owned();
    let path = format!("sites/iam.example/keys/{id}");
    assert_eq!(other.call(&console, "DELETE", &path, None).await.0, 200);
    let (status, made) = other
        .call(
            &console,
            "POST",
            "sites/iam.example/invites",
            Some(json!({"role": "admin"})),
        )
        .await;
    assert_eq!(status, 201);
    let mut invited = Browser::new("198.51.100.9");
    let accept = json!({"token": made["token"], "email": "new@example.com", "password": PASSWORD});
    let (status, me) = invited
        .call(&console, "POST", "invites/accept", Some(accept))
        .await;
    assert_eq!(status, 200, "{me}");
    let uid = me["user"]["id"].as_str().unwrap().to_owned();
    let path = format!("sites/iam.example/members/{uid}");
    let (status, _) = other
        .call(&console, "PATCH", &path, Some(json!({"role": "viewer"})))
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        other
            .call(&console, "GET", "sites/iam.example/audit", None)
            .await
            .0,
        200
    );
    assert_eq!(
        other
            .call(&console, "DELETE", "sites/iam.example", None)
            .await
            .0,
        202
    );
    // Passwords: a reset link made by the owner and used, one asked for
    // by email, a change.
    let (status, made) = other
        .call(&console, "POST", &format!("users/{uid}/reset"), None)
        .await;
    assert_eq!(status, 201, "{made}");
    let new_password = "a brand new passphrase";
    let reset = json!({"token": made["token"], "password": new_password});
    let mut anyone = Browser::new("198.51.100.10");
    let (status, body) = anyone
        .call(&console, "POST", "password/reset", Some(reset))
        .await;
    assert_eq!(status, 200, "{body}");
    let forgot = json!({"email": "new@example.com"});
    let (status, _) = anyone
        .call(&console, "POST", "password/forgot", Some(forgot))
        .await;
    assert_eq!(status, 202);
    // The owner's own (the new user may not: the instance requires 2FA).
    let change = json!({"current": PASSWORD, "new": new_password});
    let (status, body) = other
        .call(&console, "POST", "password/change", Some(change))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(other.call(&console, "POST", "logout", None).await.0, 200);
    assert_eq!(
        observed(counter.by_operation()),
        granted_table("ConsoleFunction")
    );
    only_its_partitions("ConsoleFunction", &counter.partitions());
}

/// No secret in any environment (issue 30, item 6): each function may
/// touch exactly the one secret it reads or writes, by its ARN, with the
/// one action its code calls (`tally_lambda::secrets`): query and console
/// read the deployment secret, ingest the origin secret (behind
/// CloudFront), the job writes the first owner's setup link; and each
/// function's environment names that secret's ARN, never a value.
#[test]
fn each_function_may_touch_only_its_own_secret() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml")).unwrap();
    let template: Value = serde_norway::from_str(&text).unwrap();
    for (function, action, secret, env) in [
        (
            "IngestFunction",
            "secretsmanager:GetSecretValue",
            "OriginSecret",
            Some("TALLY_ORIGIN_SECRET_ARN"),
        ),
        (
            "QueryFunction",
            "secretsmanager:GetSecretValue",
            "DeploymentSecret",
            Some("TALLY_SECRET_ARN"),
        ),
        (
            "ConsoleFunction",
            "secretsmanager:GetSecretValue",
            "DeploymentSecret",
            Some("TALLY_SECRET_ARN"),
        ),
        (
            "RollupFunction",
            "secretsmanager:PutSecretValue",
            "SetupLinkSecret",
            None,
        ),
    ] {
        let grants: Vec<(Vec<String>, Value)> = statements(function)
            .into_iter()
            .filter(|s| format!("{:?}", s["Action"]).contains("secretsmanager:"))
            .map(|s| {
                let actions = s["Action"]
                    .as_sequence()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap().to_owned())
                    .collect();
                (actions, s["Resource"].clone())
            })
            .collect();
        assert_eq!(grants.len(), 1, "{function}: {grants:?}");
        assert_eq!(grants[0].0, [action], "{function}");
        assert!(
            matches!(&grants[0].1, Value::Tagged(r) if r.tag == "Ref" && r.value == secret),
            "{function}: {:?}",
            grants[0].1
        );
        let vars = &template["Resources"][function]["Properties"]["Environment"]["Variables"];
        let named = format!("{vars:?}");
        assert!(
            !named.contains("SaltSecret") && !named.contains("OriginVerifySecret"),
            "{function}: {named}"
        );
        if let Some(env) = env {
            assert!(
                format!("{:?}", vars[env]).contains(secret),
                "{function}: {env} = {:?}",
                vars[env]
            );
        }
    }
}
