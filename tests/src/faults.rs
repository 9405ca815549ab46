//! A fault-injecting HTTP proxy in front of the embedded store: requests
//! pass through, or the "DynamoDB endpoint" disappears, hangs, or throttles
//! (all requests, those whose body contains a marker, or everything after
//! the first N).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
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
    /// Answer DynamoDB's throttling error.
    Throttle,
    /// Throttle requests whose body contains the text; pass the rest.
    ThrottleMatching(String),
    /// Pass this many more requests, then close connections.
    DownAfter(u64),
}

/// A running proxy.
#[derive(Clone)]
pub struct FaultProxy {
    /// The proxy's endpoint URL.
    pub endpoint: String,
    fault: Arc<Mutex<Fault>>,
    /// Requests seen.
    pub seen: Arc<AtomicU64>,
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
        let (f, s) = (fault.clone(), seen.clone());
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, target.clone(), f.clone(), s.clone()));
            }
        });
        Self {
            endpoint,
            fault,
            seen,
        }
    }

    /// Sets the fault.
    pub fn set(&self, fault: Fault) {
        if let Ok(mut f) = self.fault.lock() {
            *f = fault;
        }
    }
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

async fn serve(socket: TcpStream, target: String, fault: Arc<Mutex<Fault>>, seen: Arc<AtomicU64>) {
    let (read, mut write) = socket.into_split();
    let mut reader = BufReader::new(read);
    while let Some((head, body)) = read_request(&mut reader).await {
        seen.fetch_add(1, Ordering::SeqCst);
        let current = fault.lock().map(|f| f.clone()).unwrap_or(Fault::Pass);
        let action = match current {
            Fault::DownAfter(0) => Fault::Down,
            Fault::DownAfter(n) => {
                if let Ok(mut f) = fault.lock() {
                    *f = Fault::DownAfter(n - 1);
                }
                Fault::Pass
            }
            Fault::ThrottleMatching(marker) => {
                if String::from_utf8_lossy(&body).contains(&marker) {
                    Fault::Throttle
                } else {
                    Fault::Pass
                }
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
