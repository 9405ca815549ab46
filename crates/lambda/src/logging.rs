//! Structured JSON logging. Nothing logged anywhere in Tally holds an IP
//! address, a user agent, a salt or an API key.

#![allow(clippy::disallowed_methods)] // reads the environment: configuration

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
        .with_writer(|| Versioned(std::io::stderr()))
        .try_init();
}

/// The field every line starts with, made once at compile time.
const VERSION_FIELD: &str = concat!("{\"version\":\"", env!("CARGO_PKG_VERSION"), "\",");

/// A writer that puts `"version":"…"` ([`crate::VERSION`]) first in every
/// JSON line it is given (the formatter writes each line whole).
struct Versioned<W>(W);

impl<W: std::io::Write> std::io::Write for Versioned<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match buf.strip_prefix(b"{") {
            Some(rest) => {
                // One write per line, so lines from threads never interleave.
                let mut line = Vec::with_capacity(VERSION_FIELD.len() + rest.len());
                line.extend_from_slice(VERSION_FIELD.as_bytes());
                line.extend_from_slice(rest);
                self.0.write_all(&line)
            }
            None => self.0.write_all(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::io::Write;

    #[test]
    fn every_json_line_names_the_version() {
        let mut out = Versioned(Vec::new());
        out.write_all(b"{\"level\":\"INFO\",\"fields\":{}}\n")
            .unwrap();
        let line: serde_json::Value = serde_json::from_slice(&out.0).unwrap();
        assert_eq!(line["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(line["level"], "INFO");
    }
}
