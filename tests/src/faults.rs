//! A fault-injecting HTTP proxy in front of the embedded store: requests
//! pass through, or the "DynamoDB endpoint" disappears, hangs (all
//! requests, or those whose body contains a marker), or throttles (all
//! requests, those whose body contains a marker, or everything after the
//! first N), or each partition key takes only so many PutItems a second,
//! as DynamoDB's partitions do (scaled down), or BatchGetItems are
//! throttled and then answered in part (the rest handed back as
//! `UnprocessedKeys`, as DynamoDB does under load or past 16 MB). It can
//! also record the requests it sees ([`FaultProxy::record`]), to tell
//! which partition keys a read touched.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy does with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Forward to the store.
    Pass,
    /// Close the connection without an answer.
    Down,
    /// Never answer.
    Hang,
    /// Never answer requests whose body contains the text; pass the rest.
    HangMatching(String),
    /// Answer DynamoDB's throttling error.
    Throttle,
    /// Throttle requests whose body contains the text; pass the rest.
    ThrottleMatching(String),
    /// Pass this many more requests, then close connections.
    DownAfter(u64),
    /// Throttle a PutItem when its partition key has taken this many in
    /// the current wall-clock second; pass everything else.
    PartitionLimit(u32),
    /// Refuse the next `throttle` BatchGetItems with DynamoDB's throttling
    /// error (`ProvisionedThroughputExceededException`); answer every
    /// later one with at most `keep` of its items, the other keys handed
    /// back as `UnprocessedKeys`. Other requests pass.
    BatchGet {
        /// BatchGetItems still to refuse.
        throttle: u64,
        /// Items each answer keeps.
        keep: usize,
    },
}

/// A request the proxy saw while recording.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Its action (`X-Amz-Target`'s, e.g. `BatchGetItem`).
    pub operation: String,
    /// Its JSON body.
    pub body: serde_json::Value,
}

/// A running proxy.
#[derive(Clone)]
pub struct FaultProxy {
    /// The proxy's endpoint URL.
    pub endpoint: String,
    fault: Arc<Mutex<Fault>>,
    /// Requests seen.
    pub seen: Arc<AtomicU64>,
    /// Requests answered with the throttling error.
    pub throttled: Arc<AtomicU64>,
    /// Read and write units the store reported in its answers
    /// (`ConsumedCapacity`), in thousandths.
    pub units_milli: Arc<AtomicU64>,
    /// Requests seen per operation (`X-Amz-Target`'s action).
    pub operations: Arc<Mutex<std::collections::BTreeMap<String, u64>>>,
    /// Keys handed back as `UnprocessedKeys` by [`Fault::BatchGet`].
    pub unprocessed: Arc<AtomicU64>,
    recording: Arc<AtomicBool>,
    recorded: Arc<Mutex<Vec<Recorded>>>,
}

/// PutItems per partition key in the current second.
#[derive(Debug, Default)]
struct PartitionWrites {
    second: u64,
    counts: HashMap<String, u32>,
}

impl PartitionWrites {
    /// Counts a PutItem to `pk`; whether it is within `limit`.
    fn take(&mut self, pk: &str, limit: u32) -> bool {
        let second = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if second != self.second {
            self.second = second;
            self.counts.clear();
        }
        let n = self.counts.entry(pk.to_owned()).or_default();
        if *n >= limit {
            return false;
        }
        *n += 1;
        true
    }
}

/// The partition key of a PutItem request, if it is one.
fn put_item_pk(head: &str, body: &[u8]) -> Option<String> {
    if !head
        .to_ascii_lowercase()
        .contains("dynamodb_20120810.putitem")
    {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    v["Item"]["pk"]["S"].as_str().map(str::to_owned)
}

impl FaultProxy {
    /// Starts a proxy in front of `target` (`http://host:port`).
    pub async fn start(target: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("bind: {e}"));
        let endpoint = format!(
            "http://{}",
            listener
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_default()
        );
        let target = target.trim_start_matches("http://").to_owned();
        let fault = Arc::new(Mutex::new(Fault::Pass));
        let seen = Arc::new(AtomicU64::new(0));
        let throttled = Arc::new(AtomicU64::new(0));
        let writes = Arc::new(Mutex::new(PartitionWrites::default()));
        let units_milli = Arc::new(AtomicU64::new(0));
        let operations = Arc::new(Mutex::new(std::collections::BTreeMap::new()));
        let unprocessed = Arc::new(AtomicU64::new(0));
        let recording = Arc::new(AtomicBool::new(false));
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let shared = Shared {
            target,
            fault: fault.clone(),
            seen: seen.clone(),
            throttled: throttled.clone(),
            writes,
            units_milli: units_milli.clone(),
            operations: operations.clone(),
            unprocessed: unprocessed.clone(),
            recording: recording.clone(),
            recorded: recorded.clone(),
        };
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, shared.clone()));
            }
        });
        Self {
            endpoint,
            fault,
            seen,
            throttled,
            units_milli,
            operations,
            unprocessed,
            recording,
            recorded,
        }
    }

    /// Starts (or stops) recording the requests seen; starting forgets
    /// what was recorded before.
    pub fn record(&self, on: bool) {
        if on && let Ok(mut r) = self.recorded.lock() {
            r.clear();
        }
        self.recording.store(on, Ordering::SeqCst);
    }

    /// The requests recorded of one operation (`BatchGetItem`, `Query`…),
    /// in the order they arrived.
    pub fn recorded(&self, operation: &str) -> Vec<Recorded> {
        self.recorded
            .lock()
            .map(|r| {
                r.iter()
                    .filter(|x| x.operation == operation)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Forgets the requests and units counted so far.
    pub fn reset_counts(&self) {
        self.seen.store(0, Ordering::SeqCst);
        self.units_milli.store(0, Ordering::SeqCst);
        if let Ok(mut ops) = self.operations.lock() {
            ops.clear();
        }
    }

    /// The units counted so far.
    pub fn units(&self) -> f64 {
        self.units_milli.load(Ordering::SeqCst) as f64 / 1000.0
    }

    /// Sets the fault.
    pub fn set(&self, fault: Fault) {
        if let Ok(mut f) = self.fault.lock() {
            *f = fault;
        }
    }
}

/// What every connection of a proxy shares.
#[derive(Clone)]
struct Shared {
    target: String,
    fault: Arc<Mutex<Fault>>,
    seen: Arc<AtomicU64>,
    throttled: Arc<AtomicU64>,
    writes: Arc<Mutex<PartitionWrites>>,
    units_milli: Arc<AtomicU64>,
    operations: Arc<Mutex<std::collections::BTreeMap<String, u64>>>,
    unprocessed: Arc<AtomicU64>,
    recording: Arc<AtomicBool>,
    recorded: Arc<Mutex<Vec<Recorded>>>,
}

/// The action a request names (`X-Amz-Target: DynamoDB_20120810.Query`).
fn operation(head: &str) -> String {
    head.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("x-amz-target")
                .then(|| v.trim().rsplit('.').next().unwrap_or_default().to_owned())
        })
        .unwrap_or_default()
}

/// The sum of the `"CapacityUnits"` an answer reports, in thousandths.
fn capacity_milli(response: &[u8]) -> u64 {
    let Ok(text) = std::str::from_utf8(response) else {
        return 0;
    };
    const KEY: &str = "\"CapacityUnits\":";
    text.match_indices(KEY)
        .filter_map(|(at, _)| {
            let rest = text[at + KEY.len()..].trim_start();
            let end = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(rest.len());
            rest[..end].parse::<f64>().ok()
        })
        .map(|u| (u * 1000.0).round() as u64)
        .sum()
}

/// `response` (a whole HTTP answer to a BatchGetItem) with at most `keep`
/// of its items; the keys (`pk`, `sk`) of the others are added to its
/// `UnprocessedKeys`. Returns the answer and how many keys were handed
/// back; an answer that is not a 200 with JSON is returned as it is.
fn keep_items(response: Vec<u8>, keep: usize) -> (Vec<u8>, u64) {
    let Some(split) = response.windows(4).position(|w| w == b"\r\n\r\n") else {
        return (response, 0);
    };
    let (head, body) = (&response[..split + 4], &response[split + 4..]);
    let head = String::from_utf8_lossy(head).into_owned();
    let ok = head.lines().next().is_some_and(|l| l.contains(" 200"));
    let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(body) else {
        return (response, 0);
    };
    if !ok {
        return (response, 0);
    }
    let mut handed_back = 0u64;
    let mut left: serde_json::Map<String, serde_json::Value> = serde_json::Map::new();
    if let Some(tables) = v["Responses"].as_object_mut() {
        for (table, items) in tables.iter_mut() {
            let Some(items) = items.as_array_mut() else {
                continue;
            };
            if items.len() <= keep {
                continue;
            }
            let rest: Vec<serde_json::Value> = items
                .split_off(keep)
                .into_iter()
                .map(|item| serde_json::json!({"pk": item["pk"], "sk": item["sk"]}))
                .collect();
            handed_back += rest.len() as u64;
            left.insert(table.clone(), serde_json::json!({ "Keys": rest }));
        }
    }
    if handed_back == 0 {
        return (response, 0);
    }
    let unprocessed = &mut v["UnprocessedKeys"];
    if !unprocessed.is_object() {
        *unprocessed = serde_json::json!({});
    }
    for (table, keys) in left {
        let entry = &mut unprocessed[&table];
        match entry["Keys"].as_array_mut() {
            Some(existing) => existing.extend(keys["Keys"].as_array().cloned().unwrap_or_default()),
            None => *entry = keys,
        }
    }
    let body = serde_json::to_vec(&v).unwrap_or_default();
    // The head again, with the new length and without the old body's
    // checksum.
    let mut out = String::new();
    for line in head.split("\r\n") {
        let name = line
            .split_once(':')
            .map(|(k, _)| k.trim().to_ascii_lowercase());
        match name.as_deref() {
            Some("content-length") => out.push_str(&format!("content-length: {}\r\n", body.len())),
            Some("x-amz-crc32") => {}
            _ if line.is_empty() => {}
            _ => {
                out.push_str(line);
                out.push_str("\r\n");
            }
        }
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&body);
    (bytes, handed_back)
}

const THROTTLE_BODY: &str = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded."}"#;

async fn read_request(
    reader: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
) -> Option<(String, Vec<u8>)> {
    let mut head = String::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        if let Some((k, v)) = line.trim_end().split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
        let end = line == "\r\n";
        head.push_str(&line);
        if end {
            break;
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).await.ok()?;
    Some((head, body))
}

async fn serve(socket: TcpStream, shared: Shared) {
    let Shared {
        target,
        fault,
        seen,
        throttled,
        writes,
        units_milli,
        operations,
        unprocessed,
        recording,
        recorded,
    } = shared;
    let (read, mut write) = socket.into_split();
    let mut reader = BufReader::new(read);
    while let Some((head, body)) = read_request(&mut reader).await {
        seen.fetch_add(1, Ordering::SeqCst);
        let op = operation(&head);
        if let Ok(mut ops) = operations.lock() {
            *ops.entry(op.clone()).or_default() += 1;
        }
        if recording.load(Ordering::SeqCst)
            && let Ok(body) = serde_json::from_slice(&body)
            && let Ok(mut r) = recorded.lock()
        {
            r.push(Recorded {
                operation: op.clone(),
                body,
            });
        }
        let current = fault.lock().map(|f| f.clone()).unwrap_or(Fault::Pass);
        let action = match current {
            Fault::DownAfter(0) => Fault::Down,
            Fault::DownAfter(n) => {
                if let Ok(mut f) = fault.lock() {
                    *f = Fault::DownAfter(n - 1);
                }
                Fault::Pass
            }
            Fault::ThrottleMatching(marker) | Fault::HangMatching(marker)
                if !String::from_utf8_lossy(&body).contains(&marker) =>
            {
                Fault::Pass
            }
            Fault::ThrottleMatching(_) => Fault::Throttle,
            Fault::HangMatching(_) => Fault::Hang,
            Fault::PartitionLimit(limit) => match put_item_pk(&head, &body) {
                Some(pk) if !writes.lock().is_ok_and(|mut w| w.take(&pk, limit)) => Fault::Throttle,
                _ => Fault::Pass,
            },
            Fault::BatchGet { .. } if op != "BatchGetItem" => Fault::Pass,
            Fault::BatchGet { throttle, keep } if throttle > 0 => {
                if let Ok(mut f) = fault.lock() {
                    *f = Fault::BatchGet {
                        throttle: throttle - 1,
                        keep,
                    };
                }
                Fault::Throttle
            }
            other => other,
        };
        match action {
            Fault::Down => return,
            Fault::Hang => {
                tokio::time::sleep(Duration::from_secs(600)).await;
                return;
            }
            Fault::Throttle => {
                throttled.fetch_add(1, Ordering::SeqCst);
                let response = format!(
                    "HTTP/1.1 400 Bad Request\r\ncontent-type: application/x-amz-json-1.0\r\nx-amzn-requestid: fault\r\ncontent-length: {}\r\n\r\n{THROTTLE_BODY}",
                    THROTTLE_BODY.len()
                );
                if write.write_all(response.as_bytes()).await.is_err() {
                    return;
                }
            }
            _ => match forward(&target, &head, &body).await {
                Some(response) => {
                    units_milli.fetch_add(capacity_milli(&response), Ordering::SeqCst);
                    let response = match action {
                        Fault::BatchGet { keep, .. } => {
                            let (response, n) = keep_items(response, keep);
                            unprocessed.fetch_add(n, Ordering::SeqCst);
                            response
                        }
                        _ => response,
                    };
                    if write.write_all(&response).await.is_err() {
                        return;
                    }
                }
                None => return,
            },
        }
    }
}

async fn forward(target: &str, head: &str, body: &[u8]) -> Option<Vec<u8>> {
    let upstream = TcpStream::connect(target).await.ok()?;
    let (read, mut write) = upstream.into_split();
    write.write_all(head.as_bytes()).await.ok()?;
    write.write_all(body).await.ok()?;
    let mut reader = BufReader::new(read);
    let mut out = Vec::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        if let Some((k, v)) = line.trim_end().split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
        out.extend_from_slice(line.as_bytes());
        if line == "\r\n" {
            break;
        }
    }
    let mut payload = vec![0u8; length];
    reader.read_exact(&mut payload).await.ok()?;
    out.extend_from_slice(&payload);
    Some(out)
}
