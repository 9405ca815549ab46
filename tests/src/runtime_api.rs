//! A minimal emulator of the AWS Lambda runtime API, for starting a real
//! `bootstrap` binary on this machine: it hands the binary one event,
//! records when the binary first asked for work (the end of its init) and
//! when it answered, and reads its peak memory.
//!
//! Shared by the crates' start-up tests (`#[path]`-included) and the
//! cold-start benchmark.

#![allow(dead_code, clippy::unwrap_used)]
#![allow(clippy::disallowed_methods)] // reads the environment: configuration

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// What one cold start of a bootstrap did.
#[derive(Debug, Clone)]
pub struct ColdStart {
    /// From spawning the process to its first `invocation/next` request.
    pub init: Duration,
    /// From spawning to the response of the first event.
    pub first_response: Duration,
    /// The response body (or the error body).
    pub response: String,
    /// Whether the runtime reported an error.
    pub error: bool,
    /// Peak resident memory (VmHWM), KiB.
    pub peak_rss_kib: u64,
    /// CPU time the process used (user and system), from its start to its
    /// answer.
    pub cpu: Duration,
}

enum Seen {
    Next(Instant),
    Response(Instant, String, bool),
}

/// Runs `binary` with `env` against an emulated runtime API, gives it
/// `event` (JSON) and waits up to `timeout` for the answer.
pub async fn cold_start(
    binary: &str,
    env: &[(&str, String)],
    event: &str,
    timeout: Duration,
) -> Result<ColdStart, String> {
    cold_start_via(None, binary, env, event, timeout).await
}

/// [`cold_start`] with `runner` in front of the binary when given (an
/// emulator such as `qemu-aarch64-static` for another architecture's
/// bootstrap).
pub async fn cold_start_via(
    runner: Option<&str>,
    binary: &str,
    env: &[(&str, String)],
    event: &str,
    timeout: Duration,
) -> Result<ColdStart, String> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let event = event.to_owned();
    let server = tokio::spawn(async move {
        let mut served = false;
        loop {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            let tx = tx.clone();
            let event = event.clone();
            let first = !served;
            served = true;
            tokio::spawn(async move { serve(socket, tx, event, first).await });
        }
    });
    let started = Instant::now();
    let mut cmd = match runner {
        Some(runner) => {
            let mut cmd = Command::new(runner);
            cmd.arg(binary);
            cmd
        }
        None => Command::new(binary),
    };
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("AWS_LAMBDA_RUNTIME_API", addr.to_string())
        .env("AWS_LAMBDA_FUNCTION_NAME", "tally-cold-start")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_LOG_STREAM_NAME", "local")
        .env("AWS_LAMBDA_LOG_GROUP_NAME", "/aws/lambda/tally-cold-start")
        .env("AWS_REGION", "us-east-1")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child: Child = cmd.spawn().map_err(|e| format!("spawning {binary}: {e}"))?;
    let pid = child.id();
    let mut init = None;
    let outcome = tokio::time::timeout(timeout, async {
        while let Some(seen) = rx.recv().await {
            match seen {
                Seen::Next(at) => {
                    init.get_or_insert(at - started);
                }
                Seen::Response(at, body, error) => return Some((at - started, body, error)),
            }
        }
        None
    })
    .await;
    let peak_rss_kib = peak_rss(pid);
    let cpu = cpu_time(pid);
    let _ = child.kill();
    let _ = child.wait();
    server.abort();
    match outcome {
        Ok(Some((first_response, response, error))) => Ok(ColdStart {
            init: init.unwrap_or(first_response),
            first_response,
            response,
            error,
            peak_rss_kib,
            cpu,
        }),
        _ => Err(format!("{binary} gave no answer within {timeout:?}")),
    }
}

fn peak_rss(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

/// User and system CPU time of a running process (`/proc/{pid}/stat`,
/// fields 14 and 15, in clock ticks of 1/100 s).
fn cpu_time(pid: u32) -> Duration {
    let ticks = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            // After the command name, which may hold spaces, in parentheses.
            let rest = s.rsplit_once(')')?.1;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let user: u64 = fields.get(11)?.parse().ok()?;
            let system: u64 = fields.get(12)?.parse().ok()?;
            Some(user + system)
        })
        .unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

async fn serve(
    socket: tokio::net::TcpStream,
    tx: mpsc::UnboundedSender<Seen>,
    event: String,
    _first: bool,
) {
    let (read, mut write) = socket.into_split();
    let mut reader = BufReader::new(read);
    let mut handed_out = false;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).await.unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; length];
        if length > 0 && reader.read_exact(&mut body).await.is_err() {
            return;
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        if path.ends_with("/invocation/next") {
            let _ = tx.send(Seen::Next(Instant::now()));
            if handed_out {
                // One event per cold start: park the runtime's next poll.
                tokio::time::sleep(Duration::from_secs(3600)).await;
                return;
            }
            handed_out = true;
            let deadline = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis()
                + 60_000;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nlambda-runtime-aws-request-id: cold-start-1\r\nlambda-runtime-deadline-ms: {deadline}\r\nlambda-runtime-invoked-function-arn: arn:aws:lambda:us-east-1:123456789012:function:tally-cold-start\r\nlambda-runtime-trace-id: Root=1-00000000-000000000000000000000000\r\n\r\n",
                event.len()
            );
            let _ = write.write_all(head.as_bytes()).await;
            let _ = write.write_all(event.as_bytes()).await;
        } else {
            let error = path.ends_with("/error");
            let _ = tx.send(Seen::Response(
                Instant::now(),
                String::from_utf8_lossy(&body).into_owned(),
                error,
            ));
            let _ = write
                .write_all(b"HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\ncontent-length: 16\r\n\r\n{\"status\":\"OK\"}\n")
                .await;
        }
    }
}
