//! Structured JSON logging. Nothing logged anywhere in Tally holds an IP
//! address, a user agent, a salt or an API key.

/// Starts JSON logging on stderr, filtered by `RUST_LOG` (or
/// `TALLY_LOG_LEVEL`, default `info`). Safe to call twice.
pub fn init_tracing() {
    init_tracing_with("");
}

/// [`init_tracing`] with more comma-separated filter directives after the
/// level (e.g. `dynoxide::server=error` to quiet one target), unless
/// `RUST_LOG` is set: that filter is taken as written.
pub fn init_tracing_with(directives: &str) {
    let filter = match std::env::var("RUST_LOG") {
        Ok(filter) => filter,
        Err(_) => {
            let level = std::env::var("TALLY_LOG_LEVEL").unwrap_or_else(|_| "info".to_owned());
            if directives.is_empty() {
                level
            } else {
                format!("{level},{directives}")
            }
        }
    };
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_current_span(false)
        .with_target(false)
        .with_writer(std::io::stderr)
        .try_init();
}
