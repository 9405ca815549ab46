//! `POST /api/event`: Plausible's Events API, so Plausible's tracker, its
//! script tags and server-side callers work unchanged. The body is parsed
//! by `tally_core::ingest::plausible` into one hit per named site, each through the
//! same [`pipeline`](crate::pipeline) as `/collect`.
//!
//! Answers, as Plausible's:
//! - `202` with the text `ok` when stored (or already stored);
//! - `202 ok` with `x-plausible-dropped: 1` when nothing was stored on
//!   purpose: a bot, spam, an unknown site or a page of another host;
//! - `400 {"errors": {"<field>": ["<message>"]}}` for an invalid body or a
//!   missing `User-Agent`; `413` for a body over 64 KiB;
//! - `429` over the minute budget, `503` when the store fails.

use crate::collect::refused;
use crate::config::Config;
use crate::http_util::{json, nosniff};
use crate::pipeline::{self, Verdict};
use crate::store::IngestStore;
use lambda_http::http::StatusCode;
use lambda_http::http::header::{CONTENT_TYPE, HeaderValue};
use lambda_http::{Body, Request, Response};
use tally_core::ingest::payload::Rejection;
use tally_core::ingest::plausible;
use tally_store::clock::Clock;

/// Handles one Events API request.
pub async fn event<S: IngestStore, C: Clock>(
    store: &S,
    clock: &C,
    config: &Config,
    request: &Request,
) -> Response<Body> {
    let facts = pipeline::gather(request, clock, config);
    if facts.user_agent.trim().is_empty() {
        refused(
            config,
            Verdict::Rejected(Rejection::MissingField("user_agent")),
        );
        return errors(400, "user_agent", "is required");
    }
    let submission = match plausible::parse(facts.body, &config.events_api_limits) {
        Ok(Ok(submission)) => submission,
        Ok(Err(drop)) => return respond(&[refused(config, Verdict::Dropped(drop))]),
        Err(rejection) => {
            return rejection_response(&refused(config, Verdict::Rejected(rejection)));
        }
    };
    let mut verdicts = Vec::with_capacity(submission.hits.len());
    for hit in &submission.hits {
        verdicts.push(pipeline::ingest(store, config, &facts, hit).await);
    }
    respond(&verdicts)
}

/// The answer to the verdicts of one request (one per named site).
pub fn respond(verdicts: &[Verdict]) -> Response<Body> {
    if verdicts.iter().any(|v| matches!(v, Verdict::Failed(_))) {
        return errors(
            503,
            "request",
            "the event store is unavailable, retry later",
        );
    }
    if verdicts
        .iter()
        .any(|v| matches!(v, Verdict::Rejected(Rejection::RateLimited)))
    {
        return errors(429, "request", "too many events, slow down");
    }
    let stored = verdicts
        .iter()
        .any(|v| matches!(v, Verdict::Stored | Verdict::Duplicate));
    let mut response = text(StatusCode::ACCEPTED, "ok");
    if !stored {
        response
            .headers_mut()
            .insert("x-plausible-dropped", HeaderValue::from_static("1"));
    }
    response
}

fn rejection_response(verdict: &Verdict) -> Response<Body> {
    let Verdict::Rejected(r) = verdict else {
        return respond(std::slice::from_ref(verdict));
    };
    match r {
        Rejection::MissingField(field) => errors(400, field, "is required"),
        Rejection::InvalidField { field, reason } => errors(400, field, reason),
        Rejection::BodyTooLarge { .. } => errors(413, "request", &r.to_string()),
        other => errors(400, "request", &other.to_string()),
    }
}

/// `{"errors": {field: [message]}}`.
fn errors(status: u16, field: &str, message: &str) -> Response<Body> {
    json(status, &serde_json::json!({"errors": {field: [message]}}))
}

fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut response = Response::new(Body::Text(body.to_owned()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    nosniff(response)
}
