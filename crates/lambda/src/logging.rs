//! Structured JSON logging. Nothing logged anywhere in Tally holds an IP
//! address, a user agent, a salt or an API key.

/// Starts JSON logging on stderr, filtered by `RUST_LOG` (or
/// `TALLY_LOG_LEVEL`, default `info`). Safe to call twice.
pub fn init_tracing() {
    let level = std::env::var("RUST_LOG")
        .or_else(|_| std::env::var("TALLY_LOG_LEVEL"))
        .unwrap_or_else(|_| "info".to_owned());
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::new(level))
        .with_current_span(false)
        .with_target(false)
        .with_writer(std::io::stderr)
        .try_init();
}
