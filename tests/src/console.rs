//! The console through its real handler, as a browser uses it: cookies,
//! the CSRF token, a client address; an RFC 6238 implementation of the
//! tests' own (over ring's HMAC-SHA-1, not the code under test); the
//! first-run owner; and the log lines the handler writes ([`Captured`]).

#![allow(clippy::unwrap_used, clippy::missing_panics_doc)]

use crate::Harness;
use lambda_http::{Body, Request, RequestExt};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tally_console::{Config, handle};
use tally_core::account::{SetupToken, User, token};
use tally_store::Store;
use tally_store::clock::ManualClock;
/// The tests' start time.
pub const START: i64 = 1_800_000_000_000;
/// Every test user's password.
pub const PASSWORD: &str = "correct horse battery";
/// The browser's user agent.
pub const UA: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

/// RFC 6238 with SHA-1, 6 digits, 30 s: the test's own.
pub fn rfc6238(secret_base32: &str, now_ms: i64) -> String {
    let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut bits = String::new();
    for c in secret_base32.chars() {
        let v = alphabet.find(c).unwrap();
        bits.push_str(&format!("{v:05b}"));
    }
    let secret: Vec<u8> = bits
        .as_bytes()
        .chunks_exact(8)
        .map(|b| u8::from_str_radix(std::str::from_utf8(b).unwrap(), 2).unwrap())
        .collect();
    let counter = (now_ms / 1000 / 30) as u64;
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, &secret);
    let mac = ring::hmac::sign(&key, &counter.to_be_bytes());
    let mac = mac.as_ref();
    let o = (mac[19] & 0xf) as usize;
    let n = (u32::from(mac[o]) & 0x7f) << 24
        | u32::from(mac[o + 1]) << 16
        | u32::from(mac[o + 2]) << 8
        | u32::from(mac[o + 3]);
    format!("{:06}", n % 1_000_000)
}

/// The `code` of an error body (`{"error": {"code", "message"}}`).
pub fn error_code(body: &Value) -> Option<&str> {
    body["error"]["code"].as_str()
}

/// A browser: its cookies, its address, the console's answers.
pub struct Browser {
    /// Cookies the console set, by name.
    pub cookies: Vec<(String, String)>,
    /// The client address.
    pub ip: String,
    /// The CSRF value of the last answer that carried one.
    pub csrf: Option<String>,
}

/// The console over an embedded store, with a clock the test moves.
pub struct Console {
    /// The store the handler uses.
    pub store: Store,
    /// The handler's clock.
    pub clock: ManualClock,
    /// The handler's configuration.
    pub config: Config,
    harness: Harness,
}

impl Console {
    /// A console over a fresh store.
    pub async fn start() -> Self {
        let h = Harness::start().await;
        Self {
            store: h.store.clone(),
            clock: ManualClock::at(START),
            config: Config::new(&tally_core::ingest::salt::Secret::new(
                b"console tests".to_vec(),
            )),
            harness: h,
        }
    }

    /// A second client of the same store, with its own request counter.
    pub async fn second_store(&self) -> (Store, std::sync::Arc<tally_store::RequestCounter>) {
        self.harness.second_store().await
    }

    /// Every item in the table (a full scan).
    pub async fn scan(&self) -> Vec<tally_store::item::Item> {
        self.harness.scan().await
    }

    /// Answers one request: status, JSON body, headers.
    pub async fn send(&self, request: Request) -> (u16, Value, lambda_http::http::HeaderMap) {
        let response = handle(&self.store, &self.clock, &self.config, request).await;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body: &[u8] = response.body();
        let json = serde_json::from_slice(body).unwrap_or(Value::Null);
        (status, json, headers)
    }

    /// A setup token stored as `tally setup-token` stores it.
    pub async fn setup_token(&self, seed: u8) -> String {
        let t = token::setup_token(&[seed; 20]);
        let record = SetupToken::new(token::hash_token(&t), self.clock.now_ms());
        self.store.put_setup_token(&record).await.unwrap();
        t
    }
}

/// A clock's time in milliseconds.
pub trait Now {
    /// Now.
    fn now_ms(&self) -> i64;
}
impl Now for ManualClock {
    fn now_ms(&self) -> i64 {
        tally_store::clock::Clock::now(self)
    }
}

impl Browser {
    /// A browser with no cookie at `ip`.
    pub fn new(ip: &str) -> Self {
        Self {
            cookies: Vec::new(),
            ip: ip.to_owned(),
            csrf: None,
        }
    }

    /// A request with this browser's cookies.
    pub fn request(&self, method: &str, path: &str, body: Option<Value>) -> http::request::Builder {
        let _ = body;
        let mut b = http::Request::builder()
            .method(method)
            .uri(format!("/api/console/{path}"))
            .header("host", "tally.example.com")
            .header("user-agent", UA);
        if !self.cookies.is_empty() {
            let cookie = self
                .cookies
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("; ");
            b = b.header("cookie", cookie);
        }
        b
    }

    /// The request as API Gateway passes it (with the client address).
    pub fn build(&self, builder: http::request::Builder, body: Option<Value>) -> Request {
        let mut context =
            lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext::default();
        context.http.source_ip = Some(self.ip.clone());
        let body = body.map_or(Body::Empty, |b| Body::Text(b.to_string()));
        builder
            .body(body)
            .unwrap()
            .with_request_context(lambda_http::request::RequestContext::ApiGatewayV2(context))
    }

    /// Sends with the CSRF token and a same-origin `Origin`.
    pub async fn call(
        &mut self,
        console: &Console,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut b = self.request(method, path, body.clone());
        if let Some(csrf) = &self.csrf {
            b = b.header("x-csrf-token", csrf);
        }
        b = b.header("origin", "https://tally.example.com");
        self.raw(console, b, body).await
    }

    /// Sends as built, keeping the cookies and CSRF value answered.
    pub async fn raw(
        &mut self,
        console: &Console,
        builder: http::request::Builder,
        body: Option<Value>,
    ) -> (u16, Value) {
        let (status, json, headers) = console.send(self.build(builder, body)).await;
        for value in headers.get_all("set-cookie") {
            let text = value.to_str().unwrap();
            let (pair, _) = text.split_once(';').unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            self.cookies.retain(|(k, _)| k != name);
            if !value.is_empty() {
                self.cookies.push((name.to_owned(), value.to_owned()));
            }
        }
        if let Some(csrf) = json.get("csrf").and_then(Value::as_str) {
            self.csrf = Some(csrf.to_owned());
        }
        (status, json)
    }

    /// A cookie's value.
    pub fn cookie(&self, name: &str) -> Option<&str> {
        self.cookies
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// `POST login`.
    pub async fn login(&mut self, console: &Console, email: &str, password: &str) -> (u16, Value) {
        self.call(
            console,
            "POST",
            "login",
            Some(json!({"email": email, "password": password})),
        )
        .await
    }
}

/// Sets up the instance owner and returns their browser.
pub async fn owner(console: &Console) -> Browser {
    let t = console.setup_token(1).await;
    let mut b = Browser::new("198.51.100.1");
    let (status, body) = b
        .call(
            console,
            "POST",
            "setup",
            Some(json!({"token": t, "email": "Owner@Example.com", "password": PASSWORD})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    b
}

/// A second user, created as `tally user create` creates one.
pub async fn member(console: &Console, email: &str) {
    let user = User {
        id: token::user_id_from_bytes(&[9; 8]),
        email: email.to_owned(),
        password: tally_core::account::password::hash(PASSWORD, &[9; 16]).unwrap(),
        totp_secret: None,
        totp_enabled: false,
        totp_last_step: None,
        instance_owner: false,
        created: START,
        known_devices: Vec::new(),
    };
    assert!(console.store.create_user(&user).await.unwrap());
}

/// The log lines written once [`Captured::install`] ran, as the functions
/// write them (JSON, at their default level, info: at trace the AWS SDK
/// itself logs request bodies).
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// The subscriber that captures, installed on the first call: global
    /// (a thread's own default misses callsites other tests of the binary
    /// registered first), so every test of the binary that asks shares
    /// it and other tests' lines land here too.
    pub fn install() -> Self {
        static CAPTURED: std::sync::OnceLock<Captured> = std::sync::OnceLock::new();
        CAPTURED
            .get_or_init(|| {
                let captured = Self::default();
                let writer = captured.clone();
                let subscriber = tracing_subscriber::fmt()
                    .json()
                    .with_max_level(tracing::Level::INFO)
                    .with_writer(move || writer.clone())
                    .finish();
                tracing::subscriber::set_global_default(subscriber).unwrap();
                captured
            })
            .clone()
    }

    /// The lines so far.
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }

    /// Asserts that no line holds any of `secrets`.
    pub fn assert_none_of(&self, secrets: &[&str]) {
        let logs = self.text();
        for secret in secrets {
            assert!(!logs.contains(secret), "logs hold {secret:?}: {logs}");
        }
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
