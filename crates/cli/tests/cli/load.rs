//! Load: 64 concurrent clients x 500 requests against a real `tally dev`,
//! mixed valid, duplicate, bot and malformed. Every accepted event is stored
//! exactly once, nothing else is stored, and the query API counts what was
//! sent. Prints the throughput (see BENCHMARKS.md).

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CLIENTS: usize = 64;
const PER_CLIENT: usize = 500;

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_clients_get_every_event_stored_exactly_once() {
    let dir = std::env::temp_dir().join(format!("tally-load-{}", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_tally"))
        .args([
            "dev",
            "--memory",
            "--port",
            "0",
            "--dynamodb-port",
            "0",
            "--data-dir",
        ])
        .arg(&dir)
        .env("TALLY_CLIENT_BUDGET", "off")
        // 64 load generators each sending 350 page views in seconds from
        // one address are, to the rate signal, bots: it is measured apart
        // (tests/tests/tracking/bots.rs); here the stack's throughput is.
        .env("TALLY_BOT_RATE", "off")
        .env("RUST_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let line = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .find(|l| l.starts_with("ready: "))
        .unwrap();
    let ready: HashMap<String, String> = line[7..]
        .split(' ')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let http = Arc::new(ready["http"].clone());

    let started = Instant::now();
    let handles: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let http = http.clone();
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
                let ua = format!("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.{c}.0 Safari/537.36");
                let bot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
                let mut sent_valid: Vec<String> = Vec::new();
                let mut tally: HashMap<&'static str, usize> = HashMap::new();
                for i in 0..PER_CLIENT {
                    let ts = now_ms();
                    let fresh = format!(r#"{{"s":"demo","sid":"load{c}","u":"http://localhost/p{}","eid":"ld{c:03}x{i:05}","ts":{ts}}}"#, i % 20);
                    let (kind, body, agent_ua) = match i % 10 {
                        0 if !sent_valid.is_empty() => ("duplicate", sent_valid[i % sent_valid.len()].clone(), ua.as_str()),
                        1 => ("bot", fresh, bot),
                        2 => ("bad", r#"{"s":"demo","u":"#.to_owned(), ua.as_str()),
                        _ => ("valid", fresh, ua.as_str()),
                    };
                    let mut response = agent.post(&format!("{http}/collect")).header("user-agent", agent_ua).header("accept-language", "en-GB,en;q=0.9").send(body.clone()).unwrap();
                    let status = response.status().as_u16();
                    let json: serde_json::Value = serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
                    let outcome = match (status, json["status"].as_str()) {
                        (202, Some("accepted")) => "accepted",
                        (202, Some("duplicate")) => "duplicate",
                        (202, Some("dropped")) => "dropped",
                        (400, _) => "rejected",
                        other => panic!("{kind}: unexpected {other:?} {json}"),
                    };
                    let expected = match kind {
                        "valid" => "accepted",
                        "duplicate" => "duplicate",
                        "bot" => "dropped",
                        _ => "rejected",
                    };
                    assert_eq!(outcome, expected, "{kind}: {json}");
                    if kind == "valid" {
                        sent_valid.push(body);
                    }
                    *tally.entry(kind).or_default() += 1;
                }
                tally
            })
        })
        .collect();
    let mut totals: HashMap<&'static str, usize> = HashMap::new();
    for h in handles {
        for (k, v) in h.join().unwrap() {
            *totals.entry(k).or_default() += v;
        }
    }
    let elapsed = started.elapsed();
    let requests = CLIENTS * PER_CLIENT;
    println!(
        "load: {requests} requests from {CLIENTS} clients in {:.2} s = {:.0} requests/s ({totals:?})",
        elapsed.as_secs_f64(),
        requests as f64 / elapsed.as_secs_f64()
    );
    let valid = totals["valid"];

    // The store holds exactly the accepted events, each once.
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(aws_sdk_dynamodb::config::BehaviorVersion::latest())
        .http_client(tally_store::client::http_client())
        .endpoint_url(&ready["dynamodb"])
        .region(aws_sdk_dynamodb::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "x", "x", None, None, "test",
        ))
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    let mut eids = Vec::new();
    let mut start = None;
    loop {
        let page = client
            .scan()
            .table_name(&ready["table"])
            .set_exclusive_start_key(start)
            .send()
            .await
            .unwrap();
        for item in page.items.unwrap_or_default() {
            let pk = item["pk"].as_s().unwrap();
            if pk.contains("#H#") {
                eids.push(
                    item["sk"]
                        .as_s()
                        .unwrap()
                        .split_once('#')
                        .unwrap()
                        .1
                        .to_owned(),
                );
            }
        }
        match page.last_evaluated_key {
            Some(k) if !k.is_empty() => start = Some(k),
            _ => break,
        }
    }
    let stored = eids.len();
    eids.sort();
    eids.dedup();
    assert_eq!(eids.len(), stored, "no event is stored twice");
    assert_eq!(
        stored, valid,
        "every accepted event is stored, nothing else"
    );

    // The query API reports what was sent.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut response = agent
        .get(&format!("{}/api/sites/demo/stats?period=7d", ready["http"]))
        .header("authorization", &format!("Bearer {}", ready["key"]))
        .call()
        .unwrap();
    let stats: serde_json::Value =
        serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
    assert_eq!(
        stats["results"]["pageviews"].as_u64().unwrap() as usize,
        valid,
        "{stats}"
    );
    assert!(
        stats["results"]["visitors"].as_u64().unwrap() as usize >= CLIENTS,
        "{stats}"
    );
    let health: serde_json::Value = serde_json::from_str(
        &agent
            .get(&format!("{}/health", ready["http"]))
            .call()
            .unwrap()
            .body_mut()
            .read_to_string()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        health["counters"]["accepted"].as_u64().unwrap() as usize,
        valid
    );
    assert!(elapsed < Duration::from_secs(600));
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
