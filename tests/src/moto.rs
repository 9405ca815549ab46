//! A `moto_server` (moto's stand-alone AWS emulator) per test, for driving
//! the real `aws-sdk-sesv2` client, and what it recorded.
//!
//! moto is not optional: CI installs it (`.ci/run`), and a missing
//! `moto_server` fails the test with how to install it.

#![allow(clippy::disallowed_methods)] // reads the environment: configuration

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How to install moto, for the failure message.
pub const INSTALL_HINT: &str = "moto_server was not found: install it with \
`python3 -m pip install 'moto[server]'` (or `python3 -m venv .cache/moto && \
.cache/moto/bin/pip install 'moto[server]'` and put .cache/moto/bin on PATH, as \
.ci/run does), or set MOTO_SERVER to its path";

/// A running `moto_server` on a free loopback port, stopped on drop.
pub struct Moto {
    child: Child,
    /// Its endpoint URL, `http://127.0.0.1:{port}`.
    pub endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One message moto's SES accepted.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct SentEmail {
    /// The message id SES answered.
    pub id: String,
    /// The From address as sent.
    pub source: String,
    /// The subject.
    #[serde(default)]
    pub subject: String,
    /// The text body.
    #[serde(default)]
    pub body: String,
    /// The recipients.
    pub destinations: Destinations,
}

/// A sent message's recipients.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Destinations {
    /// The To addresses.
    #[serde(rename = "ToAddresses", default)]
    pub to: Vec<String>,
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(5)))
        .build()
        .into()
}

impl Moto {
    /// Starts `moto_server` (or `$MOTO_SERVER`) and waits until it answers;
    /// panics with [`INSTALL_HINT`] if it is not installed.
    pub fn start() -> Self {
        let program = std::env::var("MOTO_SERVER").unwrap_or_else(|_| "moto_server".to_owned());
        let mut last = String::new();
        // A free port may be taken between finding it and moto binding it:
        // try a few.
        for _ in 0..3 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .expect("a free loopback port");
            let child = Command::new(&program)
                .args(["-H", "127.0.0.1", "-p", &port.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn();
            let child = match child {
                Ok(child) => child,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    panic!("{INSTALL_HINT} (looked for `{program}`)")
                }
                Err(e) => panic!("starting `{program}`: {e}"),
            };
            let mut moto = Self {
                child,
                endpoint: format!("http://127.0.0.1:{port}"),
            };
            match moto.wait_ready(Duration::from_secs(60)) {
                Ok(()) => return moto,
                Err(e) => last = e,
            }
        }
        panic!("moto_server did not start: {last}");
    }

    fn wait_ready(&mut self, limit: Duration) -> Result<(), String> {
        let started = Instant::now();
        let agent = agent();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("moto_server exited with {status}"));
            }
            if let Ok(response) = agent
                .get(&format!("{}/moto-api/data.json", self.endpoint))
                .call()
                && response.status().is_success()
            {
                return Ok(());
            }
            if started.elapsed() > limit {
                return Err(format!("no answer within {limit:?}"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The real SES client pointed at this server, sending from `from`,
    /// an identity verified first (as an operator verifies an address
    /// before SES sends from it).
    pub async fn ses_from(&self, from: &str) -> tally_mail::Ses {
        let ses = tally_mail::Ses::connect(&tally_mail::SesOptions::local(&self.endpoint, from))
            .await
            .expect("an SES client for moto");
        ses.client()
            .create_email_identity()
            .email_identity(from)
            .send()
            .await
            .expect("moto verifies the sender");
        ses
    }

    /// Every message moto's SES accepted, from `GET /moto-api/data.json`
    /// (`ses.Message`: simple messages of SES v1 and v2).
    pub fn sent_emails(&self) -> Vec<SentEmail> {
        let mut response = agent()
            .get(&format!("{}/moto-api/data.json", self.endpoint))
            .call()
            .expect("moto's data.json");
        assert!(response.status().is_success(), "{}", response.status());
        let text = response
            .body_mut()
            .with_config()
            .limit(64 * 1024 * 1024)
            .read_to_string()
            .expect("moto's data.json");
        let data: serde_json::Value = serde_json::from_str(&text).expect("JSON from moto");
        serde_json::from_value(data["ses"]["Message"].clone()).unwrap_or_default()
    }
}
