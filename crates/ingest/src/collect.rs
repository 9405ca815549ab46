//! `POST /collect`: one tracker event in, at most one PutItem out.
//!
//! Order matters for cost: size and shape are checked before anything is
//! read; bots are dropped before the site is looked up; a warm instance has
//! the site and the day's salt cached, so an accepted event costs exactly
//! one DynamoDB request, the conditional PutItem.

use crate::config::{Config, Counters};
use crate::http_util::{error, json};
use lambda_http::{Body, Request, Response};
use tally_core::event::{self, Client, Geo};
use tally_core::keys::valid_site_id;
use tally_core::payload::{self, Drop, Rejection};
use tally_core::salt::network_id;
use tally_store::StoreError;
use tally_store::clock::Clock;
use tally_store::events::{PutOutcome, event_ttl};
use tally_store::ports::IngestStore;

/// Handles one collect request.
pub async fn collect<S: IngestStore, C: Clock>(
    store: &S,
    clock: &C,
    config: &Config,
    request: &Request,
) -> Response<Body> {
    match accept(store, clock, config, request).await {
        Ok(Outcome::Stored) => {
            Counters::bump(&config.counters.accepted);
            json(202, &serde_json::json!({"status": "accepted"}))
        }
        Ok(Outcome::Duplicate) => {
            Counters::bump(&config.counters.duplicates);
            json(202, &serde_json::json!({"status": "duplicate"}))
        }
        Ok(Outcome::Dropped(drop)) => {
            Counters::bump(&config.counters.dropped);
            tracing::info!(outcome = "dropped", reason = drop.reason(), "event dropped");
            json(
                202,
                &serde_json::json!({"status": "dropped", "reason": drop.reason()}),
            )
        }
        Err(Failure::Rejected(rejection)) => {
            Counters::bump(&config.counters.rejected);
            tracing::info!(
                outcome = "rejected",
                code = rejection.code(),
                "event rejected"
            );
            error(rejection.status(), rejection.code(), &rejection.to_string())
        }
        Err(Failure::Store(err)) => {
            Counters::bump(&config.counters.failed);
            tracing::error!(outcome = "failed", error = %err, "store failed");
            error(
                503,
                "store_unavailable",
                "the event store is unavailable, retry later",
            )
        }
    }
}

/// What happened to an accepted request.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Stored now.
    Stored,
    /// Stored before.
    Duplicate,
    /// Not stored, on purpose.
    Dropped(Drop),
}

/// Why a request failed.
#[derive(Debug)]
pub enum Failure {
    /// The caller's fault.
    Rejected(Rejection),
    /// Ours.
    Store(StoreError),
}

impl From<Rejection> for Failure {
    fn from(r: Rejection) -> Self {
        Self::Rejected(r)
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

async fn accept<S: IngestStore, C: Clock>(
    store: &S,
    clock: &C,
    config: &Config,
    request: &Request,
) -> Result<Outcome, Failure> {
    let hit = match payload::parse(request.body(), &config.limits)? {
        Ok(hit) => hit,
        Err(drop) => return Ok(Outcome::Dropped(drop)),
    };
    let headers = request.headers();
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let ip = tally_store::request::client_ip(request, config.behind_cloudfront);
    let client = Client {
        ip: &ip,
        user_agent: header("user-agent").unwrap_or_default(),
        origin: header("origin"),
        geo: config.behind_cloudfront.then(|| Geo {
            country: header("cloudfront-viewer-country"),
            region: header("cloudfront-viewer-country-region"),
            city: header("cloudfront-viewer-city"),
        }),
    };
    if let Err(drop) = event::screen_client(&client) {
        return Ok(Outcome::Dropped(drop));
    }
    if !valid_site_id(&hit.site) {
        return Err(Rejection::UnknownSite.into());
    }
    let site = store.site(&hit.site).await?.ok_or(Rejection::UnknownSite)?;
    if let Err(drop) = event::check_site(&hit, &site, &client)? {
        return Ok(Outcome::Dropped(drop));
    }
    let now = clock.now();
    let at = payload::event_time(hit.client_ts, now);
    let salt = store.salt(site.zone().local_date(at)).await;
    if !config.within_budget(&site.id, &network_id(&salt, &ip), now) {
        return Err(Rejection::RateLimited.into());
    }
    let stored = event::build(&hit, &site, &client, at, &salt);
    let eid = hit.eid.clone().unwrap_or_else(fresh_eid);
    let key = stored.key(&site.id, &eid, site.shards);
    let ttl = event_ttl(at, site.retention_days);
    Ok(match store.put_event(&key, &stored, Some(ttl)).await? {
        PutOutcome::Stored => Outcome::Stored,
        PutOutcome::Duplicate => Outcome::Duplicate,
    })
}

/// A random event id for a payload that carried none (no dedupe possible).
fn fresh_eid() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 12];
    let _ = ring::rand::SystemRandom::new().fill(&mut bytes);
    format!("srv{}", tally_core::hex::encode(&bytes))
}
