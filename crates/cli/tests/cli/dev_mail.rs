//! `tally dev`'s first start on a fresh data directory logs nothing
//! alarming, and its outbox (`{data_dir}/outbox/`) is listed at
//! `/dev/outbox` and `/dev/outbox.json`, newest first.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tally_mail::{Message, Outbox};

struct Dev {
    child: Child,
    http: String,
}

impl Drop for Dev {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `tally dev` on a fresh data directory (a file store, as a user
/// runs it), its log going to `log`.
fn start(data_dir: &std::path::Path, log: &std::path::Path) -> Dev {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tally"))
        .args(["dev", "--port", "0", "--dynamodb-port", "0", "--data-dir"])
        .arg(data_dir)
        .env_remove("DYNAMODB_ENDPOINT")
        .env_remove("RUST_LOG")
        .env_remove("TALLY_LOG_LEVEL")
        .env("TALLY_SALT_SECRET", "dev-test-secret-0123456789abcdef0123")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut http = None;
    let mut outbox_line = false;
    while http.is_none() || !outbox_line {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("tally dev printed no ready line");
        if let Some(rest) = line.strip_prefix("ready: ") {
            http = rest
                .split(' ')
                .find_map(|kv| kv.strip_prefix("http="))
                .map(str::to_owned);
        }
        outbox_line |= line.contains("/dev/outbox");
    }
    Dev {
        child,
        http: http.unwrap(),
    }
}

fn get(url: &str) -> (u16, String, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut response = agent.get(url).call().unwrap();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (
        response.status().as_u16(),
        content_type,
        response.body_mut().read_to_string().unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fresh_start_logs_no_warning_and_the_outbox_is_listed_newest_first() {
    let dir = std::env::temp_dir().join(format!("tally-dev-mail-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let data_dir = dir.join("data");
    let log = dir.join("stderr.log");
    let dev = start(&data_dir, &log);

    let (status, content_type, body) = get(&format!("{}/dev/outbox.json", dev.http));
    assert_eq!(status, 200, "{body}");
    assert_eq!(content_type, "application/json");
    assert_eq!(body, r#"{"messages":[]}"#);
    let (status, _, body) = get(&format!("{}/dev/outbox", dev.http));
    assert_eq!(status, 200);
    assert!(body.contains("No mail yet."), "{body}");

    // Mail as the console writes it in `tally dev`.
    let outbox = Outbox::in_data_dir(&data_dir);
    outbox
        .write(
            &Message::new("ada@example.org", "First", "Welcome"),
            1_767_616_200_000,
        )
        .unwrap();
    outbox
        .write(
            &Message::new(
                "bob@example.org",
                "Join <demo> on Tally",
                "Accept: http://127.0.0.1:8787/#invite=ti_0a.demo",
            ),
            1_767_616_260_000,
        )
        .unwrap();

    let (status, _, body) = get(&format!("{}/dev/outbox.json", dev.http));
    assert_eq!(status, 200);
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let messages = json["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["to"], "bob@example.org");
    assert_eq!(messages[0]["subject"], "Join <demo> on Tally");
    assert_eq!(
        messages[0]["text"],
        "Accept: http://127.0.0.1:8787/#invite=ti_0a.demo"
    );
    assert_eq!(messages[0]["sent_at"], 1_767_616_260_000_i64);
    assert_eq!(messages[0]["id"], "20260105T123100.000Z-0");
    assert_eq!(messages[1]["to"], "ada@example.org");

    let (status, content_type, html) = get(&format!("{}/dev/outbox", dev.http));
    assert_eq!(status, 200);
    assert_eq!(content_type, "text/html; charset=utf-8");
    let bob = html.find("bob@example.org").unwrap();
    let ada = html.find("ada@example.org").unwrap();
    assert!(bob < ada, "newest first");
    assert!(html.contains("Join &lt;demo&gt; on Tally"));
    assert!(html.contains("<a href=\"http://127.0.0.1:8787/#invite=ti_0a.demo\">"));

    // The first start made the table (the embedded server answered its
    // DescribeTable with a 400) and nothing was logged above INFO.
    drop(dev);
    let log = std::fs::read_to_string(&log).unwrap();
    for line in log.lines() {
        assert!(
            !line.contains(r#""level":"WARN""#) && !line.contains(r#""level":"ERROR""#),
            "{line}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
