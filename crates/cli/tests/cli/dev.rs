//! `tally dev` as a user runs it: the real binary, a fresh data directory,
//! the printed `ready:` line, and a page view read back through a plain
//! DynamoDB client at the printed endpoint.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Dev {
    child: Child,
    ready: std::collections::HashMap<String, String>,
}

impl Drop for Dev {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(data_dir: &std::path::Path) -> Dev {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tally"))
        .args(["dev", "--port", "0", "--dynamodb-port", "0", "--data-dir"])
        .arg(data_dir)
        .env_remove("DYNAMODB_ENDPOINT")
        .env("TALLY_SALT_SECRET", "dev-test-secret-0123456789abcdef0123")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with("ready: ") {
                let _ = tx.send(line);
            }
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("tally dev printed no ready line");
    let ready = line
        .trim_start_matches("ready: ")
        .split(' ')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    Dev { child, ready }
}

fn get(url: &str) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut response = agent.get(url).call().unwrap();
    (
        response.status().as_u16(),
        response.body_mut().read_to_string().unwrap(),
    )
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test(flavor = "multi_thread")]
async fn dev_serves_the_stack_and_keeps_data_across_restarts() {
    let dir = std::env::temp_dir().join(format!("tally-dev-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let dev = start(&dir);
    let http = dev.ready["http"].clone();
    for key in ["http", "dynamodb", "table", "site", "key"] {
        assert!(
            dev.ready.get(key).is_some_and(|v| !v.is_empty()),
            "ready line lacks {key}"
        );
    }
    assert_eq!(dev.ready["site"], "demo");
    assert!(dev.ready["key"].starts_with("tk_"));

    let (status, body) = get(&format!("{http}/health"));
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap()["status"],
        "ok"
    );
    let (status, script) = get(&format!("{http}/script.js"));
    assert_eq!(status, 200);
    assert!(script.contains("sendBeacon"));
    let (status, demo) = get(&format!("{http}/demo"));
    assert_eq!(status, 200);
    assert!(demo.contains(r#"data-site="demo""#) && demo.contains("/script.js"));

    let ts = now_ms();
    let body = serde_json::json!({"s":"demo","sid":"devtest","e":"pageview","u":"http://localhost/demo/about","r":"","eid":"devtestevent","ts":ts,"tz":"Europe/Paris"});
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let response = agent
        .post(&format!("{http}/collect"))
        .header("user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36")
        .header("content-type", "text/plain")
        // As a browser sends it: `tally dev` runs every bot signal, and a
        // request without Accept-Language is dropped as `headers`.
        .header("accept-language", "fr-FR,fr;q=0.9")
        .send(body.to_string())
        .unwrap();
    assert_eq!(response.status().as_u16(), 202);

    // Any DynamoDB client at the printed endpoint sees the page view.
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
        .http_client(tally_store::client::http_client())
        .endpoint_url(&dev.ready["dynamodb"])
        .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "any", "any", None, None, "test",
        ))
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    let find =
        |items: Vec<std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>>| {
            items.into_iter().find(|i| {
                i.get("p")
                    .and_then(|p| p.as_s().ok())
                    .is_some_and(|p| p == "/demo/about")
            })
        };
    let scan = client
        .scan()
        .table_name(&dev.ready["table"])
        .send()
        .await
        .unwrap();
    let item = find(scan.items.unwrap_or_default()).expect("the page view is in the table");
    assert_eq!(item["co"].as_s().unwrap(), "FR");
    let key = dev.ready["key"].clone();
    drop(dev);

    // Same data dir: the event and the demo key survive the restart.
    let started = Instant::now();
    let dev = start(&dir);
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(dev.ready["key"], key);
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
        .http_client(tally_store::client::http_client())
        .endpoint_url(&dev.ready["dynamodb"])
        .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "any", "any", None, None, "test",
        ))
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    let scan = client
        .scan()
        .table_name(&dev.ready["table"])
        .send()
        .await
        .unwrap();
    assert!(
        find(scan.items.unwrap_or_default()).is_some(),
        "data survives a restart"
    );
    drop(dev);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `tally dev` on a fresh data directory named for the test: the stack
/// and its DynamoDB endpoint.
fn fresh(name: &str) -> (Dev, String, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("tally-dev-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let dev = start(&dir);
    let endpoint = dev.ready["dynamodb"].clone();
    (dev, endpoint, dir)
}

/// A command line's words (none of these tests' arguments has a space).
fn words(command: &str) -> Vec<&str> {
    command.split_whitespace().collect()
}

fn tally(endpoint: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tally"))
        .args(args)
        .args(["--dynamodb-endpoint", endpoint])
        .env("AWS_REGION", "us-east-1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[tokio::test(flavor = "multi_thread")]
async fn site_commands_set_both_retentions_and_the_job_runs_by_hand() {
    let (dev, endpoint, dir) = fresh("admin");
    let (ok, out) = tally(
        &endpoint,
        &[
            "site",
            "create",
            "--domain",
            "shop.example",
            "--id",
            "shop",
            "--history-days",
            "0",
        ],
    );
    assert!(ok, "{out}");
    assert!(
        out.contains("raw events kept: 7 days; segments kept: forever"),
        "{out}"
    );
    let (ok, out) = tally(
        &endpoint,
        &[
            "site",
            "update",
            "--site",
            "shop",
            "--retention-days",
            "3",
            "--history-days",
            "30",
        ],
    );
    assert!(ok, "{out}");
    let (ok, out) = tally(&endpoint, &["site", "list"]);
    assert!(ok, "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("shop\t") && l.ends_with("retention=3d\thistory=30d")),
        "{out}"
    );
    // Out-of-range settings are refused and change nothing.
    let (ok, out) = tally(
        &endpoint,
        &[
            "site",
            "update",
            "--site",
            "shop",
            "--history-days",
            "99999",
        ],
    );
    assert!(!ok);
    assert!(out.contains("history must be 0"), "{out}");
    let (ok, out) = tally(
        &endpoint,
        &["site", "update", "--site", "nope", "--history-days", "1"],
    );
    assert!(!ok);
    assert!(out.contains("no site"), "{out}");
    let (_, out) = tally(&endpoint, &["site", "list"]);
    assert!(out.contains("retention=3d\thistory=30d"), "{out}");
    // The scheduled job by hand: compaction, then rollups, for every site.
    let (ok, out) = tally(&endpoint, &["rollup"]);
    assert!(ok, "{out}");
    assert!(
        out.contains("compaction:") && out.contains("finished=true"),
        "{out}"
    );
    drop(dev);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn site_exclusions_refuse_bad_networks_and_paths_and_change_nothing() {
    let (dev, endpoint, dir) = fresh("exclude");
    let run = |command: &str| tally(&endpoint, &words(command));
    // A bad network at creation: no site.
    let (ok, out) = run("site create --domain x.example --id x --exclude-network 10.0.0.0/33");
    assert!(
        !ok && out.contains("invalid network \"10.0.0.0/33\""),
        "{out}"
    );
    let (_, out) = run("site list");
    assert!(!out.contains("x.example"), "{out}");

    let (ok, out) = run(
        "site create --domain x.example --id x --exclude-network 203.0.113.7/24 --exclude-path /admin/*",
    );
    assert!(ok, "{out}");
    // Stored in canonical form.
    let settled = "excluded: networks [203.0.113.0/24], paths [/admin/*]";
    assert!(out.contains(settled), "{out}");
    let long = format!("/{}", "a".repeat(300));
    let many: String = (0..101)
        .map(|i| format!(" --exclude-network 10.0.{i}.0/24"))
        .collect();
    for (command, error) in [
        (
            "--exclude-network office".to_owned(),
            "invalid network \"office\"",
        ),
        (
            "--exclude-path admin".to_owned(),
            "invalid path pattern \"admin\"",
        ),
        (format!("--exclude-path {long}"), "at most 300 bytes"),
        (many, "at most 100 excluded networks"),
    ] {
        let (ok, out) = run(&format!("site update --site x {command}"));
        assert!(!ok, "{command}: {out}");
        assert!(out.contains(error), "{error}: {out}");
    }
    // Nothing changed: an update that sets the same zone shows them.
    let (ok, out) = run("site update --site x --timezone UTC");
    assert!(ok, "{out}");
    assert!(out.contains(settled), "{out}");
    let (ok, out) = run("site update --site x --clear-exclusions");
    assert!(ok && !out.contains("excluded:"), "{out}");
    drop(dev);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn share_commands_print_a_working_link_once_and_revoke_it() {
    let (dev, endpoint, dir) = fresh("share");
    let run = |command: &str| tally(&endpoint, &words(command));
    let (ok, out) = run("site create --domain s.example --id s");
    assert!(ok, "{out}");
    for (options, error) in [
        ("--filter country", "--filter"),
        ("--expires 0d", "expiry must be"),
        ("--expires 2001-01-01", "expiry must be"),
        ("--password short", "a password must be"),
    ] {
        let (ok, out) = run(&format!("share create --site s {options}"));
        assert!(!ok && out.contains(error), "{options}: {out}");
    }
    let (ok, out) = run("share create --site nosuch");
    assert!(!ok && out.contains("no site"), "{out}");
    let (_, out) = run("share list --site s");
    assert_eq!(out.trim(), "", "nothing was stored");

    let base = dev.ready["http"].clone();
    let (ok, out) = run(&format!(
        "share create --site s --label board --filter page==/pricing --expires 30d --query-url {base}"
    ));
    assert!(ok, "{out}");
    let url = out
        .split_whitespace()
        .find(|w| w.contains("#share="))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        url.starts_with(&format!("{base}/dashboard#share=ts_")),
        "{url}"
    );
    let token = url.split("#share=").nth(1).unwrap();
    // The link reads its site through the running stack.
    let access = ureq::get(&format!("{base}/api/sites/s/access"))
        .header("authorization", &format!("Bearer {token}"))
        .call()
        .unwrap()
        .into_body()
        .read_to_string()
        .unwrap();
    assert!(access.contains(r#""filter":"page==/pricing""#), "{access}");
    let (_, listed) = run("share list --site s");
    assert!(
        listed.contains("active") && listed.contains("board"),
        "{listed}"
    );
    assert!(!listed.contains(token), "the token is shown once: {listed}");
    let prefix = listed.split('…').next().unwrap();
    let (ok, out) = run(&format!("share revoke --site s {prefix}"));
    assert!(ok, "{out}");
    let (_, listed) = run("share list --site s");
    assert!(listed.contains("revoked"), "{listed}");
    let refused = ureq::get(&format!("{base}/api/sites/s/access"))
        .header("authorization", &format!("Bearer {token}"))
        .call();
    assert!(
        matches!(refused, Err(ureq::Error::StatusCode(401))),
        "{refused:?}"
    );
    drop(dev);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn funnel_commands_refuse_bad_definitions_and_change_nothing() {
    let (dev, endpoint, dir) = fresh("funnel");
    let (ok, out) = tally(
        &endpoint,
        &["site", "create", "--domain", "f.example", "--id", "f"],
    );
    assert!(ok, "{out}");
    let add = |steps: &[String]| {
        let mut args = vec!["funnel", "add", "--site", "f", "--name", "Signup flow"];
        for s in steps {
            args.push("--step");
            args.push(s);
        }
        tally(&endpoint, &args)
    };
    let pages = |n: usize| (1..=n).map(|i| format!("/p{i}")).collect::<Vec<_>>();
    let long = format!("/{}", "a".repeat(300));
    for (steps, error) in [
        (pages(1), "2 to 8 steps, not 1"),
        (pages(9), "2 to 8 steps, not 9"),
        (vec!["/".into(), long], "longer than 200"),
        (vec!["/".into(), "pricing".into()], "must start with '/'"),
        (
            vec!["/".into(), "event:Signup plan".into()],
            "not key=value",
        ),
    ] {
        let (ok, out) = add(&steps);
        assert!(!ok, "{steps:?}: {out}");
        assert!(out.contains(error), "{steps:?}: {out}");
    }
    let (ok, out) = tally(&endpoint, &["funnel", "list", "--site", "f"]);
    assert!(ok, "{out}");
    assert_eq!(out.trim(), "", "nothing was stored");

    let (ok, out) = add(&[
        "/".into(),
        "/pricing".into(),
        "event:Signup plan=pro".into(),
    ]);
    assert!(ok, "{out}");
    assert!(out.contains("funnel added: signup-flow"), "{out}");
    let (ok, out) = tally(&endpoint, &["funnel", "list", "--site", "f"]);
    assert!(ok, "{out}");
    assert_eq!(
        out.trim(),
        "signup-flow\tSignup flow\tordered\tVisit / -> Visit /pricing -> Signup (plan=pro)"
    );
    let (ok, out) = add(&["/".into(), "/a".into()]);
    assert!(!ok && out.contains("already exists"), "{out}");
    let (ok, out) = tally(
        &endpoint,
        &["funnel", "remove", "--site", "f", "signup-flow"],
    );
    assert!(ok, "{out}");
    let (_, out) = tally(&endpoint, &["funnel", "list", "--site", "f"]);
    assert_eq!(out.trim(), "");
    drop(dev);
    let _ = std::fs::remove_dir_all(&dir);
}
