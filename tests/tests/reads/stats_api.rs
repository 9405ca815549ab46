//! Conformance of Plausible's Stats API v2 (`POST /api/v2/query`) and v1
//! (`GET /api/v1/stats/…`) against generated traffic: a committed table of
//! requests modelled on the examples in Plausible's docs
//! (https://plausible.io/docs/stats-api, shared/reference/plausible-api.md),
//! their response shapes, and their numbers checked against the reference
//! counter; then every documented error case.

#![allow(clippy::unwrap_used)]

use lambda_http::Body;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use tally_core::engine::dimension::Dimension;
use tally_core::engine::query::plausible::label::label;
use tally_core::ingest::site::Site;
use tally_core::time::zone::{Zone, utc_midnight};
use tally_core::{DAY_MS, HOUR_MS};
use tally_query::store::DynamoQuery;
use tally_query::{Config, handle_with};
use tally_store::clock::ManualClock;
use tally_tests::Harness;
use tally_tests::reference::{self, Counts, RefGoal, Reference};
use tally_tests::seed::{store_events, traffic};
use time::Date;
use time::macros::date;

const SITE: &str = "stats.example";
const TODAY: Date = date!(2026 - 11 - 30);

struct Rig {
    h: Harness,
    query: DynamoQuery,
    key: String,
    now: i64,
    reference: Reference,
}

impl Rig {
    async fn new() -> Self {
        let h = Harness::start().await;
        let zone = Zone::parse("Europe/Berlin").unwrap();
        let start = zone.day_start(TODAY - time::Duration::days(20));
        let site = Site::new(SITE, &[SITE.into()], "Europe/Berlin", start).unwrap();
        h.store.create_site(&site).await.unwrap();
        let key = tally_tests::new_key(&h.store, SITE, 7).await;
        let goal = tally_core::engine::goal::Goal::new(
            "signup",
            "Signup",
            tally_core::engine::goal::GoalRule::Event {
                name: "Signup".into(),
            },
            0,
        )
        .unwrap();
        h.store.put_goal(SITE, &goal).await.unwrap();
        let now = zone.day_start(TODAY) + 12 * HOUR_MS;
        let mut events = traffic(&site, start, 21, 60, 3);
        events.retain(|e| e.event.ts < now - 60_000);
        // Every third custom event carries a plan.
        for (i, e) in events.iter_mut().enumerate() {
            if e.event.kind == tally_core::ingest::event::Kind::Custom && i % 3 == 0 {
                let plan = if i % 2 == 0 { "pro" } else { "free" };
                e.event.props.insert("plan".into(), plan.into());
            }
        }
        store_events(&h.store, &site, &events).await;
        // The scheduled job as it runs: answers come from rollups,
        // segments and the open hours' raw events.
        let mut at = utc_midnight(TODAY - time::Duration::days(19)) + 2 * HOUR_MS;
        while at < now {
            tally_rollup::run(&h.store, at, &tally_rollup::JobConfig::default(), &|_| {})
                .await
                .unwrap();
            at += DAY_MS;
        }
        tally_rollup::run(&h.store, now, &tally_rollup::JobConfig::default(), &|_| {})
            .await
            .unwrap();
        let reference = Reference::new(
            events.into_iter().map(|e| e.event).collect(),
            zone,
            vec![RefGoal {
                name: "Signup".into(),
                rule: reference::GoalRule::Event("Signup".into()),
            }],
        );
        let query = DynamoQuery::new(h.store.clone());
        Self {
            h,
            query,
            key,
            now,
            reference,
        }
    }

    async fn call(&self, request: http::Request<Body>) -> (u16, Value) {
        let response = handle_with(
            &self.query,
            &ManualClock::at(self.now),
            &Config::default(),
            request,
        )
        .await;
        let status = response.status().as_u16();
        let body: &[u8] = response.body();
        (status, serde_json::from_slice(body).unwrap_or(Value::Null))
    }

    async fn v2_as(&self, key: Option<&str>, body: &Value) -> (u16, Value) {
        let mut b = http::Request::builder().method("POST").uri("/api/v2/query");
        if let Some(k) = key {
            b = b.header("authorization", format!("Bearer {k}"));
        }
        self.call(b.body(Body::Text(body.to_string())).unwrap())
            .await
    }

    async fn v2(&self, body: Value) -> Value {
        let (status, v) = self.v2_as(Some(&self.key), &body).await;
        assert_eq!(status, 200, "{body}: {v}");
        // The documented shape.
        assert!(
            v["results"].is_array() && v["meta"].is_object() && v["query"].is_object(),
            "{v}"
        );
        v
    }

    async fn v1(&self, path: &str) -> (u16, Value) {
        let request = http::Request::builder()
            .uri(format!("/api/v1/stats/{path}"))
            .header("authorization", format!("Bearer {}", self.key))
            .body(Body::Empty)
            .unwrap();
        self.call(request).await
    }
}

/// Plausible's metrics of reference counts.
fn metrics(c: &Counts, names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| match *n {
            "visitors" => json!(c.visitors),
            "visits" => json!(c.visits),
            "pageviews" => json!(c.pageviews),
            "events" => json!(c.pageviews + c.events),
            "bounce_rate" => json!(reference::whole_bounce_rate(c).value),
            "views_per_visit" => json!(reference::views_per_visit(c).value),
            "visit_duration" => json!(reference::visit_duration(c).value as u64),
            other => panic!("no reference for {other}"),
        })
        .collect()
}

fn close(got: &Value, want: &Value) -> bool {
    match (got.as_f64(), want.as_f64()) {
        (Some(g), Some(w)) => (g - w).abs() < 0.051,
        _ => got == want,
    }
}

fn assert_metrics(got: &Value, want: &[Value], ctx: &str) {
    let got = got.as_array().unwrap();
    assert_eq!(got.len(), want.len(), "{ctx}");
    for (g, w) in got.iter().zip(want) {
        assert!(close(g, w), "{ctx}: got {got:?}, want {want:?}");
    }
}

/// The named ranges as Plausible resolves them on 2026-11-30.
fn days(named: &str) -> (Date, Date) {
    let back = |n| TODAY - time::Duration::days(n);
    match named {
        "day" => (TODAY, TODAY),
        "7d" => (back(7), back(1)),
        "28d" => (back(28), back(1)),
        "month" => (date!(2026 - 11 - 01), date!(2026 - 11 - 30)),
        other => panic!("{other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_answers_the_documented_queries_like_the_reference() {
    let rig = Rig::new().await;
    let r = &rig.reference;
    let all = [
        "visitors",
        "visits",
        "pageviews",
        "views_per_visit",
        "bounce_rate",
        "visit_duration",
        "events",
    ];

    // The docs' first example: an aggregate over a named range.
    for named in ["day", "7d", "28d", "month"] {
        let v = rig
            .v2(json!({"site_id": SITE, "metrics": all, "date_range": named}))
            .await;
        let (from, to) = days(named);
        let results = v["results"].as_array().unwrap();
        assert_eq!(results.len(), 1);
        assert_eq!(results[0]["dimensions"], json!([]));
        assert_metrics(
            &results[0]["metrics"],
            &metrics(&r.totals(from, to, ""), &all),
            named,
        );
        assert_eq!(v["query"]["metrics"], json!(all));
        assert_eq!(
            v["query"]["date_range"][0].as_str().unwrap()[..10],
            tally_core::time::zone::format_date(from)
        );
    }

    // A custom date range, filtered: country is DE or FR (an `or`), the
    // browser not Safari (a `not`), a page containing /blog.
    let f = json!([
        [
            "or",
            [
                ["is", "visit:country", ["DE"]],
                ["is", "visit:country", ["FR"]]
            ]
        ],
        ["not", ["is", "visit:browser", ["Safari"]]],
        ["contains", "event:page", ["/blog"]]
    ]);
    let v = rig
        .v2(json!({"site_id": SITE, "metrics": ["visitors", "pageviews", "events"], "date_range": ["2026-11-10", "2026-11-29"], "filters": f}))
        .await;
    let want = r.totals(
        date!(2026 - 11 - 10),
        date!(2026 - 11 - 29),
        "country==DE|FR;browser!=Safari;page~=/blog",
    );
    assert!(want.visitors > 0);
    // `events` under an `event:page` filter is Plausible's: the page views
    // and custom events on the matching pages (the reference counts Tally's
    // custom events of the kept visits), so at least the page views.
    let got = v["results"][0]["metrics"].as_array().unwrap();
    assert_metrics(
        &json!(got[..2]),
        &metrics(&want, &["visitors", "pageviews"]),
        "filtered",
    );
    assert!(got[2].as_u64() >= got[1].as_u64(), "{got:?}");

    // A regular expression: pages under /docs.
    let v = rig
        .v2(json!({"site_id": SITE, "metrics": ["visitors"], "date_range": "28d", "filters": [["matches", "event:page", ["^/docs"]]]}))
        .await;
    let (from, to) = days("28d");
    assert_metrics(
        &v["results"][0]["metrics"],
        &metrics(&r.totals(from, to, "page==/docs*"), &["visitors"]),
        "matches",
    );

    // A breakdown by source with percentages, ordered by visitors.
    let v = rig
        .v2(json!({"site_id": SITE, "metrics": ["visitors", "percentage"], "date_range": "28d", "dimensions": ["visit:source"], "include": {"total_rows": true}}))
        .await;
    let rows = r.breakdown("source", from, to, "");
    let total = r.totals(from, to, "");
    let got: BTreeMap<String, (u64, f64)> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["dimensions"][0].as_str().unwrap().to_owned(),
                (
                    row["metrics"][0].as_u64().unwrap(),
                    row["metrics"][1].as_f64().unwrap(),
                ),
            )
        })
        .collect();
    assert_eq!(got.len(), rows.len());
    assert_eq!(v["meta"]["total_rows"], rows.len());
    for row in &rows {
        // In Plausible's labels (`Direct / None`).
        let (visitors, pct) = got[&*label(Dimension::Source, &row.value)];
        assert_eq!(visitors, row.counts.visitors, "{}", row.value);
        assert!(
            reference::percent(row.counts.visitors, total.visitors).accepts(pct),
            "{}",
            row.value
        );
    }
    let visitors: Vec<u64> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["metrics"][0].as_u64().unwrap())
        .collect();
    assert!(
        visitors.windows(2).all(|w| w[0] >= w[1]),
        "default order: first metric descending"
    );

    // Pagination and ascending order.
    let v = rig
        .v2(json!({"site_id": SITE, "metrics": ["visitors"], "date_range": "28d", "dimensions": ["visit:source"], "order_by": [["visitors", "asc"]], "pagination": {"limit": 2, "offset": 1}}))
        .await;
    let mut asc: Vec<u64> = rows.iter().map(|r| r.counts.visitors).collect();
    asc.sort();
    let page: Vec<u64> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["metrics"][0].as_u64().unwrap())
        .collect();
    assert_eq!(page, asc[1..3].to_vec());

    // A time series by day with every label.
    let v = rig
        .v2(json!({"site_id": SITE, "metrics": ["visitors", "pageviews"], "date_range": "7d", "dimensions": ["time:day"], "include": {"time_labels": true}}))
        .await;
    let (from, to) = days("7d");
    let want: Vec<(String, Counts)> = r
        .days(from, to, "")
        .into_iter()
        .map(|(d, c)| (tally_core::time::zone::format_date(d), c))
        .collect();
    assert_eq!(v["meta"]["time_labels"].as_array().unwrap().len(), 7);
    let results = v["results"].as_array().unwrap();
    let nonzero: Vec<&(String, Counts)> = want.iter().filter(|(_, c)| c.visitors > 0).collect();
    assert_eq!(results.len(), nonzero.len());
    for (row, (label, c)) in results.iter().zip(nonzero) {
        assert_eq!(row["dimensions"], json!([label]));
        assert_metrics(
            &row["metrics"],
            &metrics(c, &["visitors", "pageviews"]),
            label,
        );
    }

    // Hours of one day, by local hour.
    let day = date!(2026 - 11 - 25);
    let v = rig
        .v2(json!({"site_id": SITE, "metrics": ["visitors"], "date_range": ["2026-11-25", "2026-11-25"], "dimensions": ["time:hour"]}))
        .await;
    let hours: BTreeMap<String, u64> = r
        .hours(day, "")
        .into_iter()
        .filter(|(_, c)| c.visitors > 0)
        .map(|(label, c)| (format!("{label}:00"), c.visitors))
        .collect();
    let got: BTreeMap<String, u64> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["dimensions"][0].as_str().unwrap().to_owned(),
                r["metrics"][0].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, hours);

    // Goal conversions.
    let v = rig
        .v2(json!({"site_id": SITE, "metrics": ["visitors", "events", "conversion_rate"], "date_range": "28d", "dimensions": ["event:goal"]}))
        .await;
    let (from, to) = days("28d");
    let goal = &r.breakdown("goal", from, to, "")[0];
    let row = &v["results"][0];
    assert_eq!(row["dimensions"], json!(["Signup"]));
    assert_eq!(row["metrics"][0], goal.counts.visitors);
    assert_eq!(row["metrics"][1], goal.counts.events);
    // Plausible's conversion rate: a percentage to 2 decimals.
    let total = r.totals(from, to, "").visitors;
    assert!(
        reference::round_ratio(
            i128::from(goal.counts.visitors) * 100,
            i128::from(total),
            100
        )
        .accepts(row["metrics"][2].as_f64().unwrap()),
        "{row}"
    );

    // A custom property.
    let v = rig
        .v2(json!({"site_id": SITE, "metrics": ["visitors", "events"], "date_range": "28d", "dimensions": ["event:props:plan"]}))
        .await;
    let mut want: BTreeMap<String, u64> = BTreeMap::new();
    for e in &r.events {
        let local = r.zone.local_date(e.ts);
        if (e.kind == tally_core::ingest::event::Kind::Custom
            || e.kind == tally_core::ingest::event::Kind::PageView)
            && local >= from
            && local <= to
        {
            *want
                .entry(e.props.get("plan").cloned().unwrap_or("(none)".into()))
                .or_default() += 1;
        }
    }
    let got: BTreeMap<String, u64> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["dimensions"][0].as_str().unwrap().to_owned(),
                r["metrics"][1].as_u64().unwrap(),
            )
        })
        .collect();
    // Visits spill across midnight: compare the keys and the pro/free events.
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    assert!(got["pro"] > 0 && got["free"] > 0);

    // Pages with time on page and scroll depth.
    let v = rig
        .v2(json!({"site_id": SITE, "metrics": ["visitors", "time_on_page", "scroll_depth"], "date_range": "7d", "dimensions": ["event:page"]}))
        .await;
    assert!(
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|row| row["metrics"][1].is_u64() || row["metrics"][1].is_null())
    );
    assert!(
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|row| row["metrics"][2].as_u64().is_some_and(|s| s <= 100))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_endpoints_have_their_shapes_and_numbers() {
    let rig = Rig::new().await;
    let r = &rig.reference;
    let (from, to) = days("7d");
    let (s, v) = rig
        .v1(&format!(
            "aggregate?site_id={SITE}&period=7d&metrics=visitors,pageviews,bounce_rate"
        ))
        .await;
    assert_eq!(s, 200, "{v}");
    let want = r.totals(from, to, "");
    assert_eq!(v["results"]["visitors"]["value"], want.visitors);
    assert_eq!(v["results"]["pageviews"]["value"], want.pageviews);
    assert!(
        reference::whole_bounce_rate(&want)
            .accepts(v["results"]["bounce_rate"]["value"].as_f64().unwrap())
    );
    let (s, v) = rig
        .v1(&format!(
            "aggregate?site_id={SITE}&period=7d&compare=previous_period"
        ))
        .await;
    assert_eq!(s, 200);
    assert!(v["results"]["visitors"].get("change").is_some(), "{v}");

    let (s, v) = rig
        .v1(&format!("timeseries?site_id={SITE}&period=7d"))
        .await;
    assert_eq!(s, 200, "{v}");
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 7, "every day, zero-filled");
    let want = r.days(from, to, "");
    for (row, (d, c)) in rows.iter().zip(want) {
        assert_eq!(row["date"], tally_core::time::zone::format_date(d));
        assert_eq!(row["visitors"], c.visitors);
    }

    let (s, v) = rig.v1(&format!("breakdown?site_id={SITE}&period=7d&property=visit:source&limit=3&filters=visit:country%3D%3DDE")).await;
    assert_eq!(s, 200, "{v}");
    let rows = v["results"].as_array().unwrap();
    assert!(rows.len() <= 3);
    let want = r.breakdown("source", from, to, "country==DE");
    assert_eq!(rows[0]["visitors"], want[0].counts.visitors);
    for row in rows {
        let source = row["source"].as_str().unwrap();
        let expected = want.iter().find(|w| w.value == source).unwrap();
        assert_eq!(row["visitors"], expected.counts.visitors, "{source}");
    }

    let (s, v) = rig.v1(&format!("realtime/visitors?site_id={SITE}")).await;
    assert_eq!(s, 200);
    assert!(v.is_u64(), "a bare integer: {v}");
}

#[tokio::test]
async fn documented_errors_are_400s_with_an_error_text_and_no_key_is_401() {
    let rig = Rig::new().await;
    let base = json!({"site_id": SITE, "metrics": ["visitors"], "date_range": "7d"});
    let with = |k: &str, v: Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };
    let without = |k: &str| {
        let mut b = base.clone();
        b.as_object_mut().unwrap().remove(k);
        b
    };
    let cases: Vec<(Value, &str)> = vec![
        (without("site_id"), "site_id"),
        (without("metrics"), "metrics"),
        (without("date_range"), "date_range"),
        (
            with("metrics", json!(["foo"])),
            "#/metrics/0: Invalid metric \"foo\"",
        ),
        (with("metrics", json!([])), "#/metrics"),
        (with("date_range", json!("fortnight")), "#/date_range"),
        (
            with("date_range", json!(["2026-11-10", "2026-11-01"])),
            "#/date_range",
        ),
        (
            with("dimensions", json!(["visit:shoe_size"])),
            "#/dimensions/0",
        ),
        (
            with("dimensions", json!(["visit:source", "visit:country"])),
            "one non-time dimension",
        ),
        (
            with("filters", json!([["is_not", "event:goal", ["Signup"]]])),
            "event:goal",
        ),
        (
            with(
                "filters",
                json!([["has_done", ["is", "event:name", ["Signup"]]]]),
            ),
            "has_done",
        ),
        (
            with("filters", json!([["is", "time", ["2026-11-01"]]])),
            "time",
        ),
        (
            with("filters", json!([["matches", "event:page", ["(unclosed"]]])),
            "regular expression",
        ),
        (
            with("filters", json!([["resembles", "event:page", ["/"]]])),
            "operator",
        ),
        (with("metrics", json!(["percentage"])), "percentage"),
        (
            with("metrics", json!(["conversion_rate"])),
            "conversion_rate",
        ),
        (with("metrics", json!(["time_on_page"])), "time_on_page"),
        (
            with("pagination", json!({"limit": 10001})),
            "#/pagination/limit",
        ),
        (with("order_by", json!([["pageviews", "desc"]])), "order_by"),
        (with("shoe", json!(1)), "#/shoe"),
    ];
    for (body, needle) in cases {
        let (status, v) = rig.v2_as(Some(&rig.key), &body).await;
        assert_eq!(status, 400, "{body}: {v}");
        let text = v["error"].as_str().unwrap_or_default();
        assert!(text.contains(needle), "{body}: {text:?} lacks {needle:?}");
    }
    // Session metrics with an event dimension.
    let (status, v) = rig
        .v2_as(Some(&rig.key), &json!({"site_id": SITE, "metrics": ["bounce_rate"], "date_range": "7d", "dimensions": ["event:goal"]}))
        .await;
    assert_eq!(status, 400);
    assert!(v["error"].as_str().unwrap().contains("Session metric"));
    // No key, a wrong key, a key of another site.
    let (status, v) = rig.v2_as(None, &base).await;
    assert_eq!(
        (
            status,
            v["error"].as_str().unwrap().starts_with("Missing API key")
        ),
        (401, true)
    );
    let (status, v) = rig
        .v2_as(
            Some("tk_0000000000000000000000000000000000000000.stats.example"),
            &base,
        )
        .await;
    assert_eq!(status, 401, "{v}");
    assert!(v["error"].as_str().unwrap().starts_with("Invalid API key"));
    let (status, _) = rig
        .v2_as(Some(&rig.key), &with("site_id", json!("other.example")))
        .await;
    assert_eq!(status, 401);
    // Malformed JSON.
    let request = http::Request::builder()
        .method("POST")
        .uri("/api/v2/query")
        .header("authorization", format!("Bearer {}", rig.key))
        .body(Body::Text("{nope".into()))
        .unwrap();
    let (status, v) = rig.call(request).await;
    assert_eq!(status, 400);
    assert!(v["error"].is_string());
    assert!(rig.h.counter.total() > 0);
}
