//! `GET …/bots?period=…` (or `from`/`to`): the bots ingest dropped for a
//! site, per site-local day and reason (`user_agent`, `datacenter`,
//! `headers`, `rate`), from the `BOTS#{date}` counters
//! (`tally_store::bots`). Counts only: nothing about a bot is kept. The
//! counts are the site's whatever narrows the reader's other reports (a
//! dropped bot has no page or source to filter by). Shared links are
//! refused (403 `not_shared`): a link is public, its filter cannot narrow
//! these counts, and a bot's operator could read from them which signal
//! catches it; keys and members' sessions read them.

use crate::access::Access;
use crate::batch::Reader;
use crate::error::{ApiError, json_response};
use crate::store::QueryStore;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use tally_core::ingest::payload::BotReason;
use tally_store::bots::BotDay;

/// `GET …/bots`.
#[derive(Debug, Clone, Serialize)]
pub struct BotsReport {
    /// The site.
    pub site_id: String,
    /// The first local day.
    pub from: String,
    /// The last local day.
    pub to: String,
    /// Every bot dropped in the range.
    pub total: u64,
    /// The range's counts by reason.
    pub reasons: Reasons,
    /// The days with a dropped bot, oldest first.
    pub days: Vec<BotsDay>,
}

/// One day's counts.
#[derive(Debug, Clone, Serialize)]
pub struct BotsDay {
    /// The local day.
    pub date: String,
    /// Its bots.
    pub total: u64,
    /// By reason.
    pub reasons: Reasons,
}

/// Counts by reason ([`BotReason`]).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Reasons {
    /// A crawler's, a tool's or a headless browser's user agent.
    pub user_agent: u64,
    /// A hosting or datacenter network.
    pub datacenter: u64,
    /// Headers no real browser sends.
    pub headers: u64,
    /// More page views a minute than a person makes.
    pub rate: u64,
}

impl Reasons {
    fn add(&mut self, reason: BotReason, n: u64) {
        let slot = match reason {
            BotReason::UserAgent => &mut self.user_agent,
            BotReason::Datacenter => &mut self.datacenter,
            BotReason::Headers => &mut self.headers,
            BotReason::Rate => &mut self.rate,
        };
        *slot = slot.saturating_add(n);
    }

    fn total(&self) -> u64 {
        self.user_agent
            .saturating_add(self.datacenter)
            .saturating_add(self.headers)
            .saturating_add(self.rate)
    }
}

/// The report of `days` for `from`..=`to`.
pub fn report(site: &str, from: String, to: String, days: &[BotDay]) -> BotsReport {
    let mut reasons = Reasons::default();
    let days: Vec<BotsDay> = days
        .iter()
        .map(|d| {
            let mut day = Reasons::default();
            for (&reason, &n) in &d.counts {
                day.add(reason, n);
                reasons.add(reason, n);
            }
            BotsDay {
                date: tally_core::time::zone::format_date(d.day),
                total: day.total(),
                reasons: day,
            }
        })
        .collect();
    BotsReport {
        site_id: site.to_owned(),
        from,
        to,
        total: reasons.total(),
        reasons,
        days,
    }
}

/// `GET …/bots`: `period` (or `from`/`to`) as every report takes them;
/// not through a shared link.
pub(crate) async fn bots<S: QueryStore>(
    store: &S,
    reader: &Reader<'_>,
    request: &Request,
    access: &Access,
) -> Result<Response<Body>, ApiError> {
    crate::doors::refuse_links(access, "bots blocked")?;
    // `segment` is taken and ignored: the counts are site-wide.
    let (range, _) = crate::doors::local_range(reader, request, "bots", &["segment"])?;
    let days = store
        .bot_counts(&reader.site.id, range.from, range.to)
        .await?;
    let body = report(
        &reader.site.id,
        tally_core::time::zone::format_date(range.from),
        tally_core::time::zone::format_date(range.to),
        &days,
    );
    Ok(json_response(200, &body))
}
