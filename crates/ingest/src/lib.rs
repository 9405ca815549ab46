//! `tally-ingest`: the public ingest function.
//!
//! Routes (API Gateway HTTP API, or `tally dev`):
//! - `GET /script.js`: the tracker, with an ETag and cache headers;
//! - `POST /collect`: one tracker event, answered 202 (stored, duplicate, or
//!   dropped as a bot), or a 4xx JSON error with nothing stored;
//! - `OPTIONS /collect`: the CORS preflight;
//! - `GET /health`: liveness and this instance's counters.
//!
//! [`handle`] is a plain async function over the [`IngestStore`] port and a
//! [`Clock`], so it is tested without AWS; `main.rs` only wires it to
//! `lambda_http`.

pub mod collect;
pub mod config;
pub mod http_util;
pub mod script;

pub use config::Config;

use http_util::{cors, error, json};
use lambda_http::{Body, Request, Response};
use tally_store::clock::Clock;
use tally_store::ports::IngestStore;

/// Handles one request.
pub async fn handle<S: IngestStore, C: Clock>(
    store: &S,
    clock: &C,
    config: &Config,
    request: Request,
) -> Response<Body> {
    let method = request.method().as_str().to_owned();
    let path = request.uri().path().trim_end_matches('/').to_owned();
    let response = match (method.as_str(), path.as_str()) {
        ("GET" | "HEAD", "/script.js" | "/js/script.js") => script::serve(&request),
        ("POST", "/collect" | "/api/event") => {
            collect::collect(store, clock, config, &request).await
        }
        ("OPTIONS", "/collect" | "/api/event") => http_util::preflight(),
        ("GET" | "HEAD", "/health" | "") => json(
            200,
            &serde_json::json!({"status": "ok", "service": "ingest", "counters": config.counters.snapshot()}),
        ),
        (_, "/collect" | "/script.js" | "/health") => error(
            405,
            "method_not_allowed",
            "method not allowed on this route",
        ),
        _ => error(404, "not_found", "no such route"),
    };
    cors(response)
}
