//! `POST /collect`: Tally's own tracker payload, one event in, at most one
//! PutItem out, through the [`pipeline`](crate::pipeline).
//!
//! Answers: 202 `{"status": "accepted" | "duplicate" | "dropped"}`, or a
//! 4xx JSON error with nothing stored, or 503 when the store fails.

use crate::config::Config;
use crate::http_util::{error, json};
use crate::pipeline::{self, Verdict};
use crate::store::IngestStore;
use lambda_http::{Body, Request, Response};
use tally_core::ingest::payload;
use tally_store::clock::Clock;

/// Handles one collect request.
pub async fn collect<S: IngestStore, C: Clock>(
    store: &S,
    clock: &C,
    config: &Config,
    request: &Request,
) -> Response<Body> {
    let facts = pipeline::gather(request, clock, config);
    let verdict = match payload::parse(facts.body, &config.limits) {
        Ok(Ok(hit)) => pipeline::ingest(store, config, &facts, &hit).await,
        Ok(Err(drop)) => refused(config, Verdict::Dropped(drop)),
        Err(rejection) => refused(config, Verdict::Rejected(rejection)),
    };
    respond(&verdict)
}

/// A verdict reached while parsing, counted like the pipeline's.
pub(crate) fn refused(config: &Config, verdict: Verdict) -> Verdict {
    pipeline::record(config, &verdict);
    verdict
}

/// The collect answer of a verdict.
pub fn respond(verdict: &Verdict) -> Response<Body> {
    match verdict {
        Verdict::Stored => json(202, &serde_json::json!({"status": "accepted"})),
        Verdict::Duplicate => json(202, &serde_json::json!({"status": "duplicate"})),
        Verdict::Dropped(drop) => json(
            202,
            &serde_json::json!({"status": "dropped", "reason": drop.reason()}),
        ),
        Verdict::Rejected(r) => error(r.status(), r.code(), &r.to_string()),
        Verdict::Failed(_) => error(
            503,
            "store_unavailable",
            "the event store is unavailable, retry later",
        ),
    }
}
