//! Trusted conversions and affiliates' commissions
//! (`tally_core::product::conversion`).
//!
//! - [`record`]: `POST …/conversions` with a `write`-scoped API key (a
//!   read key 403 `forbidden`; links and sessions never): the body checked
//!   by `conversion::parse` (400 with its code, nothing read or stored),
//!   the named affiliate read (400 `unknown_affiliate`), then one
//!   conditional PutItem: 201 `{"status":"stored"}`, or 200
//!   `{"status":"duplicate"}` when the order id is already stored (nothing
//!   changed, so a retry is safe); 429 `rate_limited` past
//!   [`crate::config::CONVERSIONS_PER_MINUTE`] a minute per key.
//! - [`summary`]: `GET …/conversions/summary?period=…`: trusted revenue
//!   per currency, apart from the client-claimed revenue of the reports.
//! - [`list`]: `GET …/conversions?period=…&limit=…&cursor=…`: a page in
//!   order-id order and the next page's cursor.
//! - [`commission`]: `GET …/affiliates/{slug}/commission?period=…`: one
//!   affiliate's conversions, revenue and commission, in one currency or
//!   409 `mixed_currencies`.
//!
//! Keys and members read them; a shared link does not (403 `not_shared`:
//! a link shows traffic, not sales).

use crate::access::{self, Access, Readers};
use crate::batch::Reader;
use crate::config::Config;
use crate::doors::{local_period, refuse_links};
use crate::error::{ApiError, json_response};
use crate::store::QueryStore;
use lambda_http::{Body, Request, Response};
use tally_core::Millis;
use tally_core::product::conversion::{self, ConversionError, LIST_DEFAULT, LIST_MAX, WriteBody};

/// Largest body of a conversion.
pub const MAX_BODY_BYTES: usize = 8 * 1024;

impl From<ConversionError> for ApiError {
    fn from(e: ConversionError) -> Self {
        ApiError::bad_request(e.code(), e.to_string())
    }
}

/// `POST /api/sites/{site}/conversions`.
pub(crate) async fn record<S: QueryStore>(
    store: &S,
    config: &Config,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ApiError> {
    let (site, access) =
        access::authenticate(store, config, request, site, now, Readers::Keys).await?;
    match access {
        Access::Key(scope) if scope.records_conversions() => {}
        _ => {
            return Err(ApiError {
                status: 403,
                code: "forbidden",
                message: "recording conversions needs an API key with the write scope".into(),
            });
        }
    }
    // A budget per key: 429 past CONVERSIONS_PER_MINUTE, nothing read or
    // stored.
    let key_hash = tally_lambda::request::header(request, "authorization")
        .and_then(|h| tally_core::account::auth::bearer(Some(h)).ok())
        .map(tally_core::account::auth::hash_key)
        .unwrap_or_default();
    if !config.guard.take_conversion(&key_hash, now) {
        return Err(ApiError {
            status: 429,
            code: "rate_limited",
            message: format!(
                "this key recorded {} conversions this minute; retry in a minute",
                crate::config::CONVERSIONS_PER_MINUTE
            ),
        });
    }
    let body: &[u8] = request.body().as_ref();
    if body.len() > MAX_BODY_BYTES {
        return Err(ApiError {
            status: 413,
            code: "body_too_large",
            message: format!("a conversion's body is at most {MAX_BODY_BYTES} bytes"),
        });
    }
    let spec = conversion::parse(body)?;
    let affiliate = match &spec.affiliate {
        Some(slug) => Some(
            store
                .affiliate(&site.id, slug)
                .await?
                .ok_or_else(|| ConversionError::UnknownAffiliate(slug.clone()))?,
        ),
        None => None,
    };
    let reader = Reader::new(&site, now, config);
    let date = tally_core::time::zone::format_date(reader.zone.local_date(now));
    let c = spec.into_conversion(now, date, affiliate.as_ref());
    Ok(if store.put_conversion(&site.id, &c).await? {
        json_response(
            201,
            &WriteBody {
                status: "stored",
                order_id: c.order_id.clone(),
                conversion: Some(c),
            },
        )
    } else {
        json_response(
            200,
            &WriteBody {
                status: "duplicate",
                order_id: c.order_id,
                conversion: None,
            },
        )
    })
}

/// `GET …/conversions/summary`.
pub(crate) async fn summary<S: QueryStore>(
    store: &S,
    reader: &Reader<'_>,
    request: &Request,
    access: &Access,
) -> Result<Response<Body>, ApiError> {
    refuse_links(access, "conversions")?;
    let (from, to, _) = local_period(reader, request, "summaries", &[])?;
    let list = store.conversions(&reader.site.id, &from, &to).await?;
    let totals = conversion::Totals::of(&list);
    Ok(json_response(200, &totals.body(&reader.site.id, from, to)))
}

/// `GET …/conversions`.
pub(crate) async fn list<S: QueryStore>(
    store: &S,
    reader: &Reader<'_>,
    request: &Request,
    access: &Access,
) -> Result<Response<Body>, ApiError> {
    refuse_links(access, "conversions")?;
    let (from, to, params) = local_period(reader, request, "conversions", &["limit", "cursor"])?;
    let limit = match params.get("limit") {
        None => LIST_DEFAULT,
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=LIST_MAX).contains(n))
            .ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_limit",
                    format!("limit must be from 1 to {LIST_MAX}"),
                )
            })?,
    };
    let cursor = params.get("cursor").map(String::as_str);
    let (results, next_cursor) = store
        .conversions_page(&reader.site.id, (&from, &to), cursor, limit)
        .await?;
    Ok(json_response(
        200,
        &conversion::ListBody {
            site_id: reader.site.id.clone(),
            from,
            to,
            results,
            next_cursor,
        },
    ))
}

/// `GET …/affiliates/{slug}/commission`.
pub(crate) async fn commission<S: QueryStore>(
    store: &S,
    reader: &Reader<'_>,
    request: &Request,
    access: &Access,
    slug: &str,
) -> Result<Response<Body>, ApiError> {
    refuse_links(access, "conversions")?;
    let (from, to, _) = local_period(reader, request, "commission reports", &[])?;
    let unknown = || ApiError::not_found("unknown_affiliate", format!("no affiliate {slug:?}"));
    let slug = conversion::check_slug(slug).map_err(|_| unknown())?;
    let affiliate = store
        .affiliate(&reader.site.id, &slug)
        .await?
        .ok_or_else(unknown)?;
    let list = store.conversions(&reader.site.id, &from, &to).await?;
    let report = conversion::commission_report(&reader.site.id, &affiliate, from, to, &list)
        .map_err(|e| ApiError {
            status: 409,
            code: "mixed_currencies",
            message: e.to_string(),
        })?;
    Ok(json_response(200, &report))
}
