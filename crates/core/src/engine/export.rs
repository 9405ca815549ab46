//! Exported events: what `tally export` writes for each stored event, as
//! one JSON object per line or one CSV row. The fields a user needs (time,
//! page, referrer, source, UTM, device, browser, OS, location, event name,
//! value, revenue, properties, the visitor id of that day), never an
//! address or a user agent (neither is stored).
//!
//! Reports become CSV here too ([`table_csv`] of typed rows' cells, or
//! [`report_csv`] of a report's JSON; the query API's `format=csv`).
//!
//! CSV cells that a spreadsheet would run as a formula (starting with `=`,
//! `+`, `-`, `@`, a tab or a carriage return) are prefixed with `'`: page
//! paths, referrers, UTM values, event names and properties come from
//! visitors. A cell that starts with `'` itself gets one more, so the rule
//! reverses exactly: every text cell Tally writes ([`safe_cell`]) reads
//! back by dropping one leading `'` ([`cell_text`]), which is how
//! `tally import csv` reads the daily layout `tally export --format daily`
//! writes.

use crate::ingest::event::{Event, Kind};
use serde::Serialize;
use std::collections::BTreeMap;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// One exported event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExportRow<'a> {
    /// UTC time, RFC 3339 with milliseconds.
    pub time: String,
    /// `pageview`, `event` or `engagement`.
    pub kind: &'static str,
    /// Host name of the page.
    pub hostname: &'a str,
    /// Page path.
    pub page: &'a str,
    /// Referrer (`host/path`), if any.
    pub referrer: Option<&'a str>,
    /// Source (Google, Direct, …).
    pub source: &'a str,
    /// Channel.
    pub channel: &'static str,
    /// `utm_source`.
    pub utm_source: Option<&'a str>,
    /// `utm_medium`.
    pub utm_medium: Option<&'a str>,
    /// `utm_campaign`.
    pub utm_campaign: Option<&'a str>,
    /// `utm_content`.
    pub utm_content: Option<&'a str>,
    /// `utm_term`.
    pub utm_term: Option<&'a str>,
    /// Device type.
    pub device: &'static str,
    /// Browser.
    pub browser: &'a str,
    /// Operating system.
    pub os: &'a str,
    /// Country (ISO 3166 alpha-2).
    pub country: Option<&'a str>,
    /// Region.
    pub region: Option<&'a str>,
    /// City.
    pub city: Option<&'a str>,
    /// Screen size.
    pub screen: Option<&'a str>,
    /// Custom event name.
    pub name: Option<&'a str>,
    /// Custom event value.
    pub value: Option<f64>,
    /// Revenue amount (exact decimal).
    pub revenue_amount: Option<&'a str>,
    /// Revenue currency.
    pub revenue_currency: Option<&'a str>,
    /// Engaged milliseconds (engagement beacons).
    pub engaged_ms: Option<u64>,
    /// Deepest scroll, percent (engagement beacons).
    pub scroll_depth: Option<u8>,
    /// Custom properties.
    pub props: &'a BTreeMap<String, String>,
    /// The visitor id of that day (a daily salted hash: the same person
    /// has another id the next day).
    pub visitor: &'a str,
}

/// The fields, in order: the CSV header.
pub const FIELDS: [&str; 27] = [
    "time",
    "kind",
    "hostname",
    "page",
    "referrer",
    "source",
    "channel",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "utm_content",
    "utm_term",
    "device",
    "browser",
    "os",
    "country",
    "region",
    "city",
    "screen",
    "name",
    "value",
    "revenue_amount",
    "revenue_currency",
    "engaged_ms",
    "scroll_depth",
    "props",
    "visitor",
];

/// An event as exported.
pub fn row(e: &Event) -> ExportRow<'_> {
    let time = OffsetDateTime::from_unix_timestamp_nanos(i128::from(e.ts) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default();
    ExportRow {
        time,
        kind: match e.kind {
            Kind::PageView => "pageview",
            Kind::Custom => "event",
            Kind::Engagement => "engagement",
        },
        hostname: &e.host,
        page: &e.path,
        referrer: e.referrer.as_deref(),
        source: &e.source,
        channel: e.channel.as_str(),
        utm_source: e.utm_source.as_deref(),
        utm_medium: e.utm_medium.as_deref(),
        utm_campaign: e.utm_campaign.as_deref(),
        utm_content: e.utm_content.as_deref(),
        utm_term: e.utm_term.as_deref(),
        device: e.device.as_str(),
        browser: &e.browser,
        os: &e.os,
        country: e.country.as_deref(),
        region: e.region.as_deref(),
        city: e.city.as_deref(),
        screen: e.screen.as_deref(),
        name: e.name.as_deref(),
        value: e.value,
        revenue_amount: e.revenue.as_ref().map(|r| r.amount.as_str()),
        revenue_currency: e.revenue.as_ref().map(|r| r.currency.as_str()),
        engaged_ms: e.engaged_ms,
        scroll_depth: e.scroll,
        props: &e.props,
        visitor: &e.vid,
    }
}

/// A cell safe to open in a spreadsheet: text that would start a formula
/// (`=`, `+`, `-`, `@`, a tab, a carriage return) gets a leading `'`, and so
/// does text that starts with `'` (so [`cell_text`] reverses it exactly).
pub fn safe_cell(text: &str) -> String {
    if text.starts_with(['=', '+', '-', '@', '\t', '\r', '\'']) {
        format!("'{text}")
    } else {
        text.to_owned()
    }
}

/// The text a [`safe_cell`] was made from: one leading `'` dropped, if any.
pub fn cell_text(cell: &str) -> &str {
    cell.strip_prefix('\'').unwrap_or(cell)
}

/// The CSV cells of a row, in [`FIELDS`] order (`props` as a JSON object).
pub fn csv_cells(r: &ExportRow<'_>) -> Vec<String> {
    let opt = |v: Option<&str>| v.map(safe_cell).unwrap_or_default();
    let num = |v: Option<String>| v.unwrap_or_default();
    vec![
        r.time.clone(),
        r.kind.to_owned(),
        safe_cell(r.hostname),
        safe_cell(r.page),
        opt(r.referrer),
        safe_cell(r.source),
        r.channel.to_owned(),
        opt(r.utm_source),
        opt(r.utm_medium),
        opt(r.utm_campaign),
        opt(r.utm_content),
        opt(r.utm_term),
        r.device.to_owned(),
        safe_cell(r.browser),
        safe_cell(r.os),
        opt(r.country),
        opt(r.region),
        opt(r.city),
        opt(r.screen),
        opt(r.name),
        num(r.value.map(|v| v.to_string())),
        opt(r.revenue_amount),
        opt(r.revenue_currency),
        num(r.engaged_ms.map(|v| v.to_string())),
        num(r.scroll_depth.map(|v| v.to_string())),
        if r.props.is_empty() {
            String::new()
        } else {
            safe_cell(&serde_json::to_string(r.props).unwrap_or_default())
        },
        r.visitor.to_owned(),
    ]
}

/// Columns a report row leads with, when it has them.
const LEADING: [&str; 5] = ["date", "value", "step", "label", "name"];

/// One cell of a report's CSV.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    /// Nothing (a null).
    Empty,
    /// Text, numbers as JSON writes them (`25.0`): defused ([`safe_cell`]).
    Text(String),
    /// Written as is (revenue as `59.97 EUR; 5 USD`).
    Raw(String),
}

impl Cell {
    /// A number as JSON writes it (`3`, `25.0`); a number JSON cannot hold
    /// is empty.
    pub fn number(x: f64) -> Self {
        if x.is_finite() {
            Self::Text(serde_json::Value::from(x).to_string())
        } else {
            Self::Empty
        }
    }

    /// Revenue per currency, `(total, currency)`: `59.97 EUR; 5 USD`.
    pub fn revenue<'a>(sums: impl Iterator<Item = (&'a str, &'a str)>) -> Self {
        let parts: Vec<String> = sums
            .map(|(total, code)| format!("{total} {code}"))
            .collect();
        Self::Raw(parts.join("; "))
    }
}

/// One row of a report: its cells by column.
pub type Record = Vec<(String, Cell)>;

/// Report rows as CSV (`format=csv`): one column per name any row has, the
/// row's name first (`date`, `value`, `step`, `label`, `name`), the rest
/// in alphabetical order; a row without a column leaves it empty.
pub fn table_csv(rows: &[Record]) -> Option<String> {
    let mut columns: Vec<&str> = Vec::new();
    for row in rows {
        for (key, _) in row {
            if !columns.contains(&key.as_str()) {
                columns.push(key);
            }
        }
    }
    columns.sort_by_key(|c| {
        (
            LEADING.iter().position(|l| l == c).unwrap_or(LEADING.len()),
            *c,
        )
    });
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record(&columns).ok()?;
    for row in rows {
        let cells = columns.iter().map(|c| {
            // The last cell of a name wins, as in a JSON object.
            match row.iter().rev().find(|(k, _)| k == c).map(|(_, v)| v) {
                None | Some(Cell::Empty) => String::new(),
                Some(Cell::Text(s)) => safe_cell(s),
                Some(Cell::Raw(s)) => s.clone(),
            }
        });
        out.write_record(cells).ok()?;
    }
    String::from_utf8(out.into_inner().ok()?).ok()
}

/// A report's `results` as CSV (`format=csv`) from its JSON: an array of
/// rows or one object of totals ([`table_csv`]). A revenue list is written
/// `59.97 EUR; 5 USD`; other nested values as JSON. `None` when `results`
/// is neither.
pub fn report_csv(results: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let rows: Vec<&serde_json::Map<String, Value>> = match results {
        Value::Array(items) => items.iter().filter_map(Value::as_object).collect(),
        Value::Object(totals) => vec![totals],
        _ => return None,
    };
    let cell = |v: &Value| match v {
        Value::Null => Cell::Empty,
        Value::String(s) => Cell::Text(s.clone()),
        Value::Array(items) if items.iter().all(|i| i.get("currency").is_some()) => {
            Cell::revenue(items.iter().map(|i| {
                (
                    i["total"].as_str().unwrap_or_default(),
                    i["currency"].as_str().unwrap_or_default(),
                )
            }))
        }
        other => Cell::Text(other.to_string()),
    };
    let records: Vec<Record> = rows
        .iter()
        .map(|row| row.iter().map(|(k, v)| (k.clone(), cell(v))).collect())
        .collect();
    table_csv(&records)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reports_become_csv_with_their_name_first() {
        let rows = serde_json::json!([
            {"visitors": 3, "value": "/=1+1", "pageviews": 5, "time_on_page": null},
            {"visitors": 1, "value": "/a,b", "pageviews": 1, "revenue": [
                {"currency": "EUR", "total": "39.98", "average": "19.99", "conversions": 2},
                {"currency": "USD", "total": "5", "average": "5", "conversions": 1}
            ]}
        ]);
        assert_eq!(
            report_csv(&rows).unwrap(),
            "value,pageviews,revenue,time_on_page,visitors\n/=1+1,5,,,3\n\"/a,b\",1,39.98 EUR; 5 USD,,1\n"
        );
        let totals = serde_json::json!({"visitors": 7, "bounce_rate": 12.5});
        assert_eq!(
            report_csv(&totals).unwrap(),
            "bounce_rate,visitors\n12.5,7\n"
        );
        let hostile = serde_json::json!([{"value": "=HYPERLINK(\"x\")"}]);
        assert_eq!(
            report_csv(&hostile).unwrap(),
            "value\n\"'=HYPERLINK(\"\"x\"\")\"\n"
        );
        assert_eq!(report_csv(&serde_json::json!(3)), None);
    }

    #[test]
    fn formula_like_cells_are_defused() {
        for (given, want) in [
            ("=HYPERLINK(\"x\")", "'=HYPERLINK(\"x\")"),
            ("+1", "'+1"),
            ("-2", "'-2"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("/blog/=x", "/blog/=x"),
            ("Google", "Google"),
            ("'quoted", "''quoted"),
            ("''=x", "'''=x"),
            ("it's", "it's"),
        ] {
            assert_eq!(safe_cell(given), want);
            assert_eq!(cell_text(&safe_cell(given)), given, "reverses exactly");
        }
    }

    #[test]
    fn every_field_has_a_csv_cell_and_a_json_key() {
        let e: Event = serde_json::from_value(serde_json::json!({
            "k": "ev", "ts": 1_764_547_200_123_i64, "vid": "abc", "sid": "s", "h": "a.com",
            "p": "/=cmd", "src": "Direct", "ch": "Direct", "br": "Chrome", "os": "Mac",
            "dv": "desktop", "n": "=Purchase", "pr": {"plan": "pro"},
            "rv": {"a": "19.99", "c": "EUR"}
        }))
        .unwrap();
        let r = row(&e);
        assert_eq!(r.time, "2025-12-01T00:00:00.123Z");
        let cells = csv_cells(&r);
        assert_eq!(cells.len(), FIELDS.len());
        assert_eq!(cells[3], "/=cmd");
        assert_eq!(cells[19], "'=Purchase");
        assert_eq!(cells[21], "19.99");
        assert_eq!(cells[25], r#"{"plan":"pro"}"#);
        let json = serde_json::to_value(&r).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut fields = FIELDS.to_vec();
        fields.sort_unstable();
        assert_eq!(keys, fields);
        assert!(!json.to_string().contains("\"sid\""));
    }
}
