//! `tally-ingest`: the public ingest function.
//!
//! Routes (API Gateway HTTP API, or `tally dev`):
//! - `GET /script.js`: the tracker, with an ETag and cache headers;
//!   `GET /vitals.js`, `GET /forms.js` and `GET /affiliate.js`: its opt-in
//!   Web Vitals, form-submissions and affiliate modules, served alike;
//! - `POST /collect`: one event of Tally's tracker, answered 202 (stored,
//!   duplicate, or dropped as a bot), or a 4xx JSON error with nothing
//!   stored;
//! - `POST /api/event`: one event in Plausible's Events API format, answered
//!   as Plausible does ([`events_api`]);
//! - `OPTIONS /collect`, `OPTIONS /api/event`: the CORS preflight;
//! - `GET /js/script.js` and its extension variants: the tracker in its
//!   Plausible-compatible mode;
//!
//! Both event routes are parsers in front of one [`pipeline`].
//! - `GET /health`: liveness, the release (`version`) and this instance's counters.
//!
//! [`handle`] is a plain async function over the [`IngestStore`] port and a
//! [`Clock`], so it is tested without AWS; `main.rs` only wires it to
//! `lambda_http`.

pub mod collect;
pub mod config;
pub mod events_api;
pub mod http_util;
pub mod pipeline;
pub mod script;
pub mod store;

pub use config::Config;

use crate::store::IngestStore;
use http_util::{cors, error, json};
use lambda_http::{Body, Request, Response};
use tally_store::clock::Clock;

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
        ("GET" | "HEAD", "/script.js") => script::serve(&request),
        ("GET" | "HEAD", "/vitals.js") => script::serve_vitals(&request),
        ("GET" | "HEAD", "/forms.js") => script::serve_forms(&request),
        ("GET" | "HEAD", "/affiliate.js") => script::serve_affiliate(&request),
        ("GET" | "HEAD", p) if script::is_plausible_script(p) => script::serve_plausible(&request),
        ("POST", "/collect") => collect::collect(store, clock, config, &request).await,
        ("POST", "/api/event") => events_api::event(store, clock, config, &request).await,
        ("OPTIONS", "/collect" | "/api/event") => http_util::preflight(),
        ("GET" | "HEAD", "/health" | "") => json(
            200,
            &serde_json::json!({"status": "ok", "service": "ingest", "version": tally_lambda::VERSION, "counters": config.counters.snapshot()}),
        ),
        (
            _,
            "/collect" | "/api/event" | "/script.js" | "/vitals.js" | "/forms.js" | "/affiliate.js"
            | "/health",
        ) => error(
            405,
            "method_not_allowed",
            "method not allowed on this route",
        ),
        _ => error(404, "not_found", "no such route"),
    };
    if config.emit_metrics {
        tally_lambda::metrics::emit(&config.metrics.due(clock.now()));
    }
    cors(response)
}
