//! Keys that never lock out their owners (issue 24): a network refused for
//! failed guesses still reads with a credential this deployment issued (an
//! API key, a shared link, a console session), because its tag
//! (`tally_core::account::tag`) is verified offline before any limit applies, and a
//! guess with a forged tag costs no read.

#![allow(clippy::unwrap_used)]

use lambda_http::{Body, RequestExt};
use serde_json::{Value, json};
use std::sync::Arc;
use tally_core::account::tag::{TagKey, TagKeys, tagged_credential};
use tally_core::ingest::salt::Secret;
use tally_query::store::DynamoQuery;
use tally_store::RequestCounter;
use tally_store::clock::ManualClock;
use tally_tests::console::{Browser, Console, START, owner};

/// The guessing network, and the colleagues behind the same address.
const OFFICE: &str = "203.0.113.50";
const SITE: &str = "office.example";
const SECRET: &[u8] = b"lockout tests deployment secret 0123456789";

/// The console and the query function of one deployment (one secret), the
/// query function on a client of its own so its requests are counted.
struct Deployment {
    console: Console,
    owner: Browser,
    query: DynamoQuery,
    counter: Arc<RequestCounter>,
    config: tally_query::Config,
}

impl Deployment {
    async fn start() -> Self {
        let mut console = Console::start().await;
        console.config = tally_console::Config::new(&Secret::new(SECRET.to_vec()));
        let mut owner = owner(&console).await;
        let (status, body) = owner
            .call(
                &console,
                "POST",
                "sites",
                Some(json!({"id": SITE, "domains": [SITE], "timezone": "UTC"})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        let (store, counter) = console.second_store().await;
        let config = tally_query::Config {
            auth_failures_per_minute: 20,
            tag_keys: Some(TagKeys::new(TagKey::derive(&Secret::new(SECRET.to_vec())))),
            ..tally_query::Config::default()
        };
        Self {
            console,
            owner,
            query: DynamoQuery::new(store),
            counter,
            config,
        }
    }

    /// `GET /api/sites/{SITE}/stats` from `ip` with a header: the status
    /// and the error code, if any.
    async fn stats(&self, ip: &str, header: (&str, &str)) -> (u16, Option<String>) {
        self.stats_at(ip, header, START).await
    }

    /// [`Deployment::stats`] at `at`.
    async fn stats_at(&self, ip: &str, header: (&str, &str), at: i64) -> (u16, Option<String>) {
        let mut context =
            lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext::default();
        context.http.source_ip = Some(ip.to_owned());
        let request = http::Request::builder()
            .uri(format!("/api/sites/{SITE}/stats?period=7d"))
            .header(header.0, header.1)
            .body(Body::Empty)
            .unwrap()
            .with_request_context(lambda_http::request::RequestContext::ApiGatewayV2(context));
        let clock = ManualClock::at(at);
        let response = tally_query::handle_with(&self.query, &clock, &self.config, request).await;
        let body: &[u8] = response.body();
        let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let code = json["error"]["code"].as_str().map(str::to_owned);
        (response.status().as_u16(), code)
    }

    async fn with_key(&self, ip: &str, key: &str) -> (u16, Option<String>) {
        self.stats(ip, ("authorization", &format!("Bearer {key}")))
            .await
    }

    /// A new credential from the console: `keys` answers `key`, `shares`
    /// answers `token`.
    async fn issue(&mut self, what: &str, field: &str) -> String {
        let (status, body) = self
            .owner
            .call(
                &self.console,
                "POST",
                &format!("sites/{SITE}/{what}"),
                Some(json!({})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        body[field].as_str().unwrap().to_owned()
    }
}

/// A key of the site's shape with a tag made under another secret: what a
/// guesser can send.
fn forged_key(n: u8) -> String {
    let other = TagKey::derive(&Secret::new(b"not the deployment's".to_vec()));
    tagged_credential(&other, "tk_", SITE, &[n; 20])
}

#[tokio::test]
async fn after_25_failed_guesses_a_new_key_a_shared_link_and_a_session_from_that_network_still_read()
 {
    let mut d = Deployment::start().await;
    // 25 guesses from the office's address: the first 20 are refused as
    // wrong keys, the rest because the network is refused; none is read.
    d.counter.reset();
    let mut answers = Vec::new();
    for n in 0..25u8 {
        answers.push(d.with_key(OFFICE, &forged_key(n)).await);
    }
    let invalid = (401, Some("invalid_api_key".to_owned()));
    let refused = (429, Some("too_many_attempts".to_owned()));
    assert_eq!(answers[..20], vec![invalid.clone(); 20][..]);
    assert_eq!(answers[20..], vec![refused.clone(); 5][..]);
    assert_eq!(d.counter.total(), 0, "{:?}", d.counter.by_operation());

    // Issued after the guesses, never seen by this instance.
    let key = d.issue("keys", "key").await;
    assert_eq!(d.with_key(OFFICE, &key).await, (200, None));
    let link = d.issue("shares", "token").await;
    assert_eq!(d.with_key(OFFICE, &link).await, (200, None));
    // The owner's console session, from the office: the dashboard's reads
    // through the query function, and a console call.
    let session = d.owner.cookie("tally_session").unwrap().to_owned();
    let cookie = format!("tally_session={session}");
    assert_eq!(d.stats(OFFICE, ("cookie", &cookie)).await, (200, None));
    d.owner.ip = OFFICE.to_owned();
    let (status, me) = d.owner.call(&d.console, "GET", "me", None).await;
    assert_eq!(
        (status, me["user"]["email"].as_str()),
        (200, Some("owner@example.com"))
    );

    // The limiter still holds guesses: the 26th is refused unread.
    d.counter.reset();
    assert_eq!(d.with_key(OFFICE, &forged_key(26)).await, refused);
    assert_eq!(d.counter.total(), 0);
    // Another network was never refused.
    assert_eq!(d.with_key("198.51.100.9", &forged_key(27)).await, invalid);
}

#[tokio::test]
async fn a_revoked_tagged_key_counts_as_a_failure_and_then_waits_like_a_guess() {
    let mut d = Deployment::start().await;
    let key = d.issue("keys", "key").await;
    assert_eq!(d.with_key(OFFICE, &key).await, (200, None));
    let (_, list) = d
        .owner
        .call(&d.console, "GET", &format!("sites/{SITE}/keys"), None)
        .await;
    let id = list["keys"][0]["id"].as_str().unwrap().to_owned();
    let (status, _) = d
        .owner
        .call(
            &d.console,
            "DELETE",
            &format!("sites/{SITE}/keys/{id}"),
            None,
        )
        .await;
    assert_eq!(status, 200);
    // The store decides: revoked is 401 at once, and the failure counts.
    assert_eq!(
        d.with_key(OFFICE, &key).await,
        (401, Some("invalid_api_key".to_owned()))
    );
    // 19 guesses more fill the office's 20 failures.
    for n in 0..19u8 {
        assert_eq!(d.with_key(OFFICE, &forged_key(n)).await.0, 401, "{n}");
    }
    // The revoked key no longer skips the guard: refused, unread.
    d.counter.reset();
    assert_eq!(
        d.with_key(OFFICE, &key).await,
        (429, Some("too_many_attempts".to_owned()))
    );
    assert_eq!(d.counter.total(), 0);
    // A live key made since still reads.
    let live = d.issue("keys", "key").await;
    assert_eq!(d.with_key(OFFICE, &live).await, (200, None));
}

#[tokio::test]
async fn untagged_keys_made_before_tags_still_read_through_the_limiter() {
    let d = Deployment::start().await;
    let legacy = tally_tests::new_key(&d.console.store, SITE, 3).await;
    assert_eq!(
        d.config.tag_keys.as_ref().unwrap().verify(&legacy, 0),
        tally_core::account::tag::TagVerdict::Untagged
    );
    assert_eq!(d.with_key(OFFICE, &legacy).await, (200, None));
    // Untagged guesses each cost a read until the network is refused.
    d.counter.reset();
    for n in 0..20u8 {
        let guess = tally_core::account::auth::key_from_bytes(SITE, &[n + 100; 20]);
        assert_eq!(d.with_key("198.51.100.30", &guess).await.0, 401);
    }
    let reads = d.counter.total();
    assert_eq!(reads, 20, "{:?}", d.counter.by_operation());
    let guess = tally_core::account::auth::key_from_bytes(SITE, &[250; 20]);
    assert_eq!(d.with_key("198.51.100.30", &guess).await.0, 429);
    assert_eq!(d.counter.total(), reads, "refused unread");
    // An untagged key this instance has not seen waits out the minute
    // there: re-issuing it (tagged) is what makes it immune.
    let unseen = tally_tests::new_key(&d.console.store, SITE, 4).await;
    assert_eq!(d.with_key("198.51.100.30", &unseen).await.0, 429);
}

impl Deployment {
    /// A console call with an API key from `ip`: the status and error code.
    async fn console_with_key(
        &self,
        ip: &str,
        key: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Option<String>) {
        let b = Browser::new(ip);
        let builder = b
            .request(method, path, body.clone())
            .header("authorization", format!("Bearer {key}"))
            .header("content-type", "application/json");
        let (status, json, _) = self.console.send(b.build(builder, body)).await;
        (status, json["error"]["code"].as_str().map(str::to_owned))
    }
}

/// Issue 29, item 3: the console takes keys through the query function's
/// guard: forged tags are refused unread and counted, the 21st failure
/// from a network a minute is 429, and a key this deployment issued still
/// works from that network.
#[tokio::test]
async fn the_console_answers_the_21st_wrong_key_from_a_network_with_429() {
    let mut d = Deployment::start().await;
    let goals = format!("sites/{SITE}/goals");
    let mut answers = Vec::new();
    for n in 0..21u8 {
        answers.push(
            d.console_with_key(OFFICE, &forged_key(n), "GET", &goals, None)
                .await,
        );
    }
    let invalid = (401, Some("invalid_api_key".to_owned()));
    assert_eq!(answers[..20], vec![invalid.clone(); 20][..]);
    assert_eq!(answers[20], (429, Some("too_many_attempts".to_owned())));
    // Untagged guesses from the same network wait too; another network's
    // do not.
    let untagged = tally_core::account::auth::key_from_bytes(SITE, &[77; 20]);
    assert_eq!(
        d.console_with_key(OFFICE, &untagged, "GET", &goals, None)
            .await
            .0,
        429
    );
    assert_eq!(
        d.console_with_key("198.51.100.9", &untagged, "GET", &goals, None)
            .await,
        invalid
    );
    // A key issued by this deployment is no guess.
    let key = d.issue("keys", "key").await;
    assert_eq!(
        d.console_with_key(OFFICE, &key, "GET", &goals, None).await,
        (200, None)
    );
}

/// Issue 29, item 3: a key does no more than its maker may today. An
/// admin's `configure` key adds goals and mints shared links; once the
/// admin is a viewer it only reads (403 at the console, 200 reading
/// stats); once the admin is removed it is refused everywhere (401).
#[tokio::test]
async fn a_keys_power_follows_its_makers_role_on_every_use() {
    use tally_core::account::{Membership, Role};
    let mut d = Deployment::start().await;
    tally_tests::console::member(&d.console, "admin@example.com").await;
    let admin_uid = tally_core::account::token::user_id_from_bytes(&[9; 8]);
    d.console
        .store
        .put_membership(&Membership {
            site: SITE.into(),
            uid: admin_uid.clone(),
            role: Role::Admin,
            email: "admin@example.com".into(),
        })
        .await
        .unwrap();
    let mut admin = Browser::new("198.51.100.20");
    let (status, body) = admin
        .login(
            &d.console,
            "admin@example.com",
            tally_tests::console::PASSWORD,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = admin
        .call(
            &d.console,
            "POST",
            &format!("sites/{SITE}/keys"),
            Some(json!({"label": "ci", "scope": "configure"})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let key = body["key"].as_str().unwrap().to_owned();
    let ip = "198.51.100.21";
    let goal = |n: u8| Some(json!({"name": format!("Visit /g{n}"), "page": format!("/g{n}")}));
    let shares = format!("sites/{SITE}/shares");
    let goals = format!("sites/{SITE}/goals");
    assert_eq!(
        d.console_with_key(ip, &key, "POST", &goals, goal(1))
            .await
            .0,
        201
    );
    assert_eq!(
        d.console_with_key(ip, &key, "POST", &shares, Some(json!({})))
            .await
            .0,
        201
    );
    assert_eq!(d.with_key(ip, &key).await, (200, None));
    // Demoted to viewer: reads, configures nothing.
    let member = format!("sites/{SITE}/members/{admin_uid}");
    let (status, body) = d
        .owner
        .call(
            &d.console,
            "PATCH",
            &member,
            Some(json!({"role": "viewer"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        d.console_with_key(ip, &key, "POST", &goals, goal(2))
            .await
            .0,
        403
    );
    assert_eq!(
        d.console_with_key(ip, &key, "POST", &shares, Some(json!({})))
            .await
            .0,
        403
    );
    assert_eq!(
        d.console_with_key(ip, &key, "GET", &goals, None).await.0,
        200
    );
    assert_eq!(d.with_key(ip, &key).await, (200, None));
    // Removed: nothing.
    let (status, body) = d.owner.call(&d.console, "DELETE", &member, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        d.console_with_key(ip, &key, "GET", &goals, None).await,
        (401, Some("invalid_api_key".to_owned()))
    );
    assert_eq!(
        d.with_key(ip, &key).await,
        (401, Some("invalid_api_key".to_owned()))
    );
}

/// A rotation of the deployment secret (issue 30, item 6): a key, a shared
/// link and a console session made before it keep reading while the
/// previous secret is accepted (`TALLY_PREVIOUS_SECRET` until
/// `TALLY_PREVIOUS_SECRET_UNTIL`), and are refused from that date on, as
/// a wrong tag is (no read); credentials made under the new secret read
/// throughout.
#[tokio::test]
async fn credentials_made_before_a_rotation_read_until_the_previous_secret_ends() {
    use tally_core::time::zone::{utc_date, utc_midnight};
    const NEW: &[u8] = b"lockout tests rotated deployment secret 01";
    let mut d = Deployment::start().await;
    let key = d.issue("keys", "key").await;
    let link = d.issue("shares", "token").await;
    let session = format!("tally_session={}", d.owner.cookie("tally_session").unwrap());
    let until = utc_date(START).next_day().unwrap();
    d.config.tag_keys = Some(
        tally_lambda::secrets::deployment_of(
            std::str::from_utf8(NEW).unwrap(),
            Some((std::str::from_utf8(SECRET).unwrap(), utc_midnight(until))),
        )
        .tag_keys,
    );
    d.console.config = tally_console::Config::new(&Secret::new(NEW.to_vec()));
    let made_after = d.issue("keys", "key").await;
    let bearer = |k: &str| format!("Bearer {k}");
    let before = [
        ("authorization", bearer(&key)),
        ("authorization", bearer(&link)),
        ("cookie", session.clone()),
    ];
    for (name, value) in &before {
        assert_eq!(
            d.stats_at(OFFICE, (name, value), START).await,
            (200, None),
            "{value}"
        );
    }
    let ended = utc_midnight(until);
    d.counter.reset();
    let refused: Vec<(u16, Option<String>)> = {
        let mut out = Vec::new();
        for (name, value) in &before {
            out.push(d.stats_at("198.51.100.20", (name, value), ended).await);
        }
        out
    };
    assert_eq!(refused[0], (401, Some("invalid_api_key".to_owned())));
    assert_eq!(refused[1].0, 401, "{refused:?}");
    assert_eq!(refused[2], (401, Some("not_signed_in".to_owned())));
    assert_eq!(d.counter.total(), 0, "refused unread");
    let new = bearer(&made_after);
    for at in [START, ended] {
        assert_eq!(
            d.stats_at(OFFICE, ("authorization", &new), at).await,
            (200, None)
        );
    }
}

/// The deployment secret as AWS holds it (issue 30, item 6): a Secrets
/// Manager secret (moto's, through the real `aws-sdk-secretsmanager`
/// client) read at cold start. After `put-secret-value` rotates it, a
/// function starting then tags with the new value and accepts a credential
/// tagged under the old one (now `AWSPREVIOUS`) until the grace after the
/// new value was made, and not after; one that reads before the rotation
/// knows only the old value.
#[tokio::test]
async fn a_rotated_secret_in_secrets_manager_is_accepted_for_its_grace() {
    use tally_core::account::tag::TagVerdict;
    use tally_lambda::secrets::{SecretError, Secrets};
    const OLD: &str = "the deployment secret before rotation 0123456789";
    const NEW: &str = "the deployment secret after the rotation 9876543210";
    let moto = tally_tests::moto::Moto::start();
    let secrets = Secrets::connect(Some(moto.endpoint.as_str())).await;
    let arn = secrets
        .client()
        .create_secret()
        .name("tally-deployment")
        .secret_string(OLD)
        .send()
        .await
        .unwrap()
        .arn
        .unwrap();
    let before = secrets.deployment(&arn, 7).await.unwrap();
    let old_key = TagKey::derive(&Secret::new(OLD.as_bytes().to_vec()));
    let new_key = TagKey::derive(&Secret::new(NEW.as_bytes().to_vec()));
    let made_before = tagged_credential(&old_key, "tk_", SITE, &[7; 20]);
    let made_after = tagged_credential(&new_key, "tk_", SITE, &[9; 20]);
    let now = START;
    assert_eq!(
        before.tag_keys.verify(&made_before, now),
        TagVerdict::Tagged(true)
    );
    assert_eq!(
        before.tag_keys.verify(&made_after, now),
        TagVerdict::Tagged(false)
    );

    secrets
        .client()
        .put_secret_value()
        .secret_id(&arn)
        .secret_string(NEW)
        .send()
        .await
        .unwrap();
    let rotated = secrets.version(&arn, "AWSCURRENT").await.unwrap().unwrap();
    assert_eq!(rotated.value, NEW);
    let after = secrets.deployment(&arn, 7).await.unwrap();
    let grace_ends = rotated.created + 7 * 86_400_000;
    for at in [rotated.created, grace_ends - 1] {
        assert_eq!(
            after.tag_keys.verify(&made_before, at),
            TagVerdict::Tagged(true),
            "{at}"
        );
        assert_eq!(
            after.tag_keys.verify(&made_after, at),
            TagVerdict::Tagged(true)
        );
    }
    assert_eq!(
        after.tag_keys.verify(&made_before, grace_ends),
        TagVerdict::Tagged(false)
    );
    assert_eq!(
        after.tag_keys.verify(&made_after, grace_ends),
        TagVerdict::Tagged(true)
    );

    // A secret too short for production, and one that does not exist,
    // stop the function rather than start it keyless.
    let short = secrets
        .client()
        .create_secret()
        .name("tally-short")
        .secret_string("short")
        .send()
        .await
        .unwrap()
        .arn
        .unwrap();
    assert!(matches!(
        secrets.deployment(&short, 7).await,
        Err(SecretError::Short(_))
    ));
    assert!(matches!(
        secrets
            .deployment(
                "arn:aws:secretsmanager:us-east-1:123456789012:secret:nothing-AbCdEf",
                7
            )
            .await,
        Err(SecretError::Short(_))
    ));
}
