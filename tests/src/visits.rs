//! The visits list and a journey as the reference sees them: the
//! reference counter's visits ([`Reference`], built with plain loops from
//! the stored raw events, without `tally_core::engine::visit`), each shown with
//! docs/API.md's "Visits" fields, newest first; and an API row read back
//! into the same shape (its `start` parsed as RFC 3339 back to an instant,
//! so the offset the API wrote is checked too).

use crate::reference::{Reference, Visit};
use serde_json::Value;
use tally_core::ingest::event::Kind;
use time::Date;
use time::format_description::well_known::Rfc3339;

/// A visit as the list shows it (the id aside), and its events.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Shown {
    /// Its start, whole seconds since the epoch.
    pub start_s: i64,
    /// Its local date.
    pub day: String,
    /// Duration, seconds rounded.
    pub duration: u64,
    /// Entry page.
    pub entry_page: Option<String>,
    /// Exit page.
    pub exit_page: Option<String>,
    /// Page views.
    pub pageviews: u64,
    /// Custom events.
    pub events: u64,
    /// Bounce.
    pub bounce: bool,
    /// Source, referrer, channel, device, browser, OS, country.
    pub looks: [Option<String>; 7],
    /// Its events: kind, offset ms, page, custom name (journeys only).
    pub journey: Vec<(String, i64, String, Option<String>)>,
}

const LOOKS: [&str; 7] = [
    "source", "referrer", "channel", "device", "browser", "os", "country",
];

/// How the reference shows a visit (with its journey when `journey`).
pub fn shown(v: &Visit, journey: bool) -> Shown {
    let ms = v.duration_ms();
    Shown {
        start_s: v.start.div_euclid(1000),
        day: v.day.to_string(),
        duration: (ms + 500) / 1000,
        entry_page: v.property("entry_page"),
        exit_page: v.property("exit_page"),
        pageviews: v.pageviews().len() as u64,
        events: v.customs().len() as u64,
        bounce: v.bounce(),
        looks: LOOKS.map(|d| v.property(d)),
        journey: if journey {
            v.events
                .iter()
                .map(|e| {
                    let kind = match e.kind {
                        Kind::PageView => "pageview",
                        Kind::Custom => "event",
                        Kind::Engagement => "engagement",
                    };
                    let name = (e.kind == Kind::Custom).then(|| e.name.clone()).flatten();
                    (kind.to_owned(), e.ts - v.start, e.path.clone(), name)
                })
                .collect()
        } else {
            Vec::new()
        },
    }
}

/// The visits started on `[from, to]` that `filters` keep, newest first.
pub fn list(r: &Reference, from: Date, to: Date, filters: &str) -> Vec<Shown> {
    let mut out: Vec<Shown> = r
        .kept(from, to, filters)
        .iter()
        .map(|k| shown(k.visit, false))
        .collect();
    out.sort_by(|a, b| b.cmp(a));
    out
}

/// An API row read back (and, given a journey body's `events`, them).
pub fn read_row(row: &Value, events: Option<&Value>) -> Shown {
    let text = |k: &str| row[k].as_str().map(str::to_owned);
    let start = row["start"].as_str().expect("a start");
    let at = time::OffsetDateTime::parse(start, &Rfc3339).expect("an RFC 3339 start");
    Shown {
        start_s: at.unix_timestamp(),
        day: start[..10].to_owned(),
        duration: row["duration"].as_u64().expect("a duration"),
        entry_page: text("entry_page"),
        exit_page: text("exit_page"),
        pageviews: row["pageviews"].as_u64().expect("pageviews"),
        events: row["events"].as_u64().expect("events"),
        bounce: row["bounce"].as_bool().expect("bounce"),
        looks: LOOKS.map(text),
        journey: events
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .map(|e| {
                        (
                            e["kind"].as_str().unwrap_or_default().to_owned(),
                            e["offset_ms"].as_i64().unwrap_or(-1),
                            e["page"].as_str().unwrap_or_default().to_owned(),
                            e["name"].as_str().map(str::to_owned),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}
