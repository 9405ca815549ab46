//! Writing CloudWatch Embedded Metric Format lines
//! ([`tally_core::metrics`]): one JSON object per line on standard output,
//! which Lambda sends to CloudWatch Logs, which makes them metrics. No API
//! call, nothing on the request path but a buffered write.

use std::io::Write;

/// Writes the lines to standard output.
pub fn emit(lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
    let _ = out.flush();
}
