//! Acceptance tests of the query API: generated traffic goes through the
//! real ingest handler into the embedded DynamoDB-compatible server, and the
//! real query handler's answers are compared with a naive reference counter
//! (`tally_tests::reference`) that implements docs/API.md's counting rules.

#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use tally_core::account::auth;
use tally_core::engine::goal::{Goal, GoalRule, PageMatch};
use tally_core::ingest::site::Site;
use tally_core::time::zone::{Zone, format_date};
use tally_ingest::Config;
use tally_ingest::store::DynamoIngest;
use tally_query::store::DynamoQuery;
use tally_store::clock::ManualClock;
use tally_store::item::string;
use tally_store::salt::SharedSalt;
use tally_store::sites::ApiKeyRecord;
use tally_tests::generator::{self, BROWSERS, Intent, Plan, Post, Rng, Tab, Traffic, Visitor};
use tally_tests::reference::{self, Counts, DIMENSIONS, RefGoal, Reference, Rounded};
use tally_tests::{Harness, collect_request, status_and_json};
use time::Date;
use time::macros::date;

const MINUTE: i64 = 60_000;
const HOUR: i64 = 3_600_000;

// ---------------------------------------------------------------- the rig

struct Rig {
    h: Harness,
    ingest: DynamoIngest,
    query: DynamoQuery,
    clock: ManualClock,
    config: Config,
    keys: u64,
}

/// The goals every test site has: (stored goal, the reference's view).
fn goals() -> Vec<(Goal, RefGoal)> {
    let page = |id: &str, name: &str, pattern: &str, matching| {
        (
            Goal::new(
                id,
                name,
                GoalRule::Page {
                    pattern: pattern.to_owned(),
                    matching,
                },
                0,
            )
            .unwrap(),
            RefGoal {
                name: name.to_owned(),
                rule: reference::GoalRule::Page(pattern.to_owned()),
            },
        )
    };
    let event = |id: &str, name: &str, event: &str| {
        (
            Goal::new(
                id,
                name,
                GoalRule::Event {
                    name: event.to_owned(),
                },
                0,
            )
            .unwrap(),
            RefGoal {
                name: name.to_owned(),
                rule: reference::GoalRule::Event(event.to_owned()),
            },
        )
    };
    vec![
        page("g1", "Visit pricing", "/pricing", PageMatch::Exact),
        page("g2", "Read blog", "/blog/*", PageMatch::Wildcard),
        event("g3", "Signup", "Signup"),
        event("g4", "Purchase", "Purchase"),
        event("g5", "Outbound", "Outbound Link: Click"),
    ]
}

fn ref_goals() -> Vec<RefGoal> {
    goals().into_iter().map(|(_, r)| r).collect()
}

impl Rig {
    async fn new() -> Self {
        let h = Harness::start().await;
        let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
        let query = DynamoQuery::new(h.store.clone());
        Self {
            h,
            ingest,
            query,
            clock: ManualClock::at(0),
            config: Config::default(),
            keys: 0,
        }
    }

    /// Creates a site with the standard goals and returns a valid key.
    async fn site(&mut self, id: &str, domain: &str, tz: &str) -> String {
        let site = Site::new(id, &[domain.to_owned()], tz, 0).unwrap();
        self.h.store.create_site(&site).await.unwrap();
        for (goal, _) in goals() {
            self.h.store.put_goal(id, &goal).await.unwrap();
        }
        self.key(id, None).await
    }

    /// Stores a new key for a site (revoked at `revoked_at` if given).
    async fn key(&mut self, site: &str, revoked_at: Option<i64>) -> String {
        self.keys += 1;
        let mut rng = Rng::new(0x6b65_7900 + self.keys);
        let mut bytes = [0u8; 20];
        for b in &mut bytes {
            *b = rng.below(256) as u8;
        }
        let key = auth::key_from_bytes(site, &bytes);
        let record = ApiKeyRecord {
            hash: auth::hash_key(&key),
            prefix: key[..auth::SHOWN_PREFIX_LEN].to_owned(),
            label: "test".into(),
            created_at: 1,
            revoked_at,
            owner: None,
            scope: tally_core::account::KeyScope::Read,
        };
        self.h.store.put_api_key(site, &record).await.unwrap();
        key
    }

    async fn post(&self, post: &Post) -> (u16, Value) {
        self.clock.set(post.now_ms);
        status_and_json(
            tally_ingest::handle(
                &self.ingest,
                &self.clock,
                &self.config,
                collect_request(&post.body, &post.ip, &post.user_agent),
            )
            .await,
        )
    }

    /// Posts every post and checks each answer against its intent.
    async fn post_all(&self, posts: &[Post]) {
        for p in posts {
            let (status, json) = self.post(p).await;
            let want = match p.intent {
                Intent::PageView | Intent::Custom | Intent::Engagement => "accepted",
                Intent::Bot => "dropped",
                Intent::Duplicate => "duplicate",
            };
            assert_eq!(
                (status, json["status"].as_str()),
                (202, Some(want)),
                "{:?} {} -> {json}",
                p.intent,
                p.body
            );
        }
    }

    /// GET with an optional `Authorization` header value: status, JSON, raw body.
    async fn get_raw(&self, uri: &str, authorization: Option<&str>) -> (u16, Value, String) {
        let mut b = http::Request::builder().method("GET").uri(uri);
        if let Some(a) = authorization {
            b = b.header("authorization", a);
        }
        let request = b.body(lambda_http::Body::Empty).unwrap();
        let response = tally_query::handle(&self.query, &self.clock, request).await;
        let text = match response.body() {
            lambda_http::Body::Text(t) => t.clone(),
            lambda_http::Body::Binary(b) => String::from_utf8_lossy(b).into_owned(),
            _ => String::new(),
        };
        let (status, json) = status_and_json(response);
        (status, json, text)
    }

    async fn get(&self, key: &str, uri: &str) -> (u16, Value) {
        let (status, json, _) = self.get_raw(uri, Some(&format!("Bearer {key}"))).await;
        (status, json)
    }

    /// The scheduled job as it runs in production while traffic comes in:
    /// every day at 02:00 UTC from the day after `first`, and once at
    /// `now`. Raw events live seven days, so older days are answered from
    /// what the job compacted and rolled up.
    async fn run_jobs(&self, first: Date, now: i64) {
        let mut at = tally_core::time::zone::utc_midnight(first) + 26 * HOUR;
        while at < now {
            self.job(at).await;
            at += 24 * HOUR;
        }
        self.job(now).await;
    }

    async fn job(&self, at: i64) {
        tally_tests::run_job(&self.h.store, at).await;
    }

    async fn reference(&self, site: &str, zone: &Zone) -> Reference {
        let events = reference::decode_events(self.h.event_items().await, site);
        Reference::new(events, zone.clone(), ref_goals())
    }
}

/// Percent-encodes a query value.
fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn with_filters(q: &str, filters: &str) -> String {
    if filters.is_empty() {
        q.to_owned()
    } else {
        format!("{q}&filters={}", enc(filters))
    }
}

// ---------------------------------------------------------------- checking

/// Collects every mismatch, so one run reports all of them.
#[derive(Default)]
struct Check {
    errors: Vec<String>,
    compared: usize,
}

impl Check {
    fn fail(&mut self, msg: String) {
        self.errors.push(msg);
    }

    fn int(&mut self, ctx: &str, got: &Value, field: &str, want: u64) {
        self.compared += 1;
        if got[field].as_u64() != Some(want) {
            self.fail(format!(
                "{ctx}: {field}: expected {want}, got {}",
                got[field]
            ));
        }
    }

    fn rounded(&mut self, ctx: &str, got: &Value, field: &str, want: Rounded) {
        self.compared += 1;
        if !got[field].as_f64().is_some_and(|g| want.accepts(g)) {
            self.fail(format!(
                "{ctx}: {field}: expected {}{}, got {}",
                want.value,
                want.alt.map(|a| format!(" (or {a})")).unwrap_or_default(),
                got[field]
            ));
        }
    }

    fn text(&mut self, ctx: &str, got: &Value, field: &str, want: &str) {
        self.compared += 1;
        if got[field].as_str() != Some(want) {
            self.fail(format!(
                "{ctx}: {field}: expected {want:?}, got {}",
                got[field]
            ));
        }
    }

    /// The seven documented metrics of a stats result or a series bucket.
    fn metrics(&mut self, ctx: &str, got: &Value, want: &Counts) {
        self.int(ctx, got, "visitors", want.visitors);
        self.int(ctx, got, "visits", want.visits);
        self.int(ctx, got, "pageviews", want.pageviews);
        self.rounded(
            ctx,
            got,
            "views_per_visit",
            reference::views_per_visit(want),
        );
        self.rounded(ctx, got, "bounce_rate", reference::bounce_rate(want));
        self.rounded(ctx, got, "visit_duration", reference::visit_duration(want));
        self.int(ctx, got, "events", want.events);
    }

    fn status(&mut self, ctx: &str, status: u16, json: &Value) -> bool {
        if status == 200 {
            true
        } else {
            self.fail(format!("{ctx}: expected 200, got {status} {json}"));
            false
        }
    }

    fn finish(self, what: &str) {
        assert!(self.compared > 0, "{what}: nothing compared");
        if !self.errors.is_empty() {
            let shown: Vec<&String> = self.errors.iter().take(80).collect();
            panic!(
                "{what}: {} of {} comparisons differ from the reference (first {}):\n{}",
                self.errors.len(),
                self.compared,
                shown.len(),
                shown
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
        eprintln!("{what}: {} comparisons agree", self.compared);
    }
}

/// A site under test: its id, zone, key and reference.
struct Subject<'a> {
    rig: &'a Rig,
    site: &'a str,
    key: &'a str,
    zone: &'a Zone,
    reference: &'a Reference,
}

impl Subject<'_> {
    fn uri(&self, endpoint: &str, q: &str) -> String {
        format!("/api/sites/{}/{endpoint}?{q}", self.site)
    }

    async fn stats(&self, c: &mut Check, range_q: &str, from: Date, to: Date, filters: &str) {
        let q = with_filters(&format!("{range_q}&compare=previous"), filters);
        let ctx = format!("{} stats?{q}", self.site);
        let (status, json) = self.rig.get(self.key, &self.uri("stats", &q)).await;
        if !c.status(&ctx, status, &json) {
            return;
        }
        let cur = self.reference.totals(from, to, filters);
        c.metrics(&ctx, &json["results"], &cur);
        let days = (to - from).whole_days() + 1;
        let (pf, pt) = (
            from - time::Duration::days(days),
            to - time::Duration::days(days),
        );
        let prev = self.reference.totals(pf, pt, filters);
        c.metrics(&format!("{ctx} comparison"), &json["comparison"], &prev);
        c.text(&ctx, &json["meta"], "from", &format_date(from));
        c.text(&ctx, &json["meta"], "to", &format_date(to));
        c.text(&ctx, &json["meta"], "time_zone", self.zone.name());
        c.text(&ctx, &json["meta"]["comparison"], "from", &format_date(pf));
        c.text(&ctx, &json["meta"]["comparison"], "to", &format_date(pt));
        let now = reference::exact(&cur);
        let before = reference::exact(&prev);
        for ((name, n), (_, p)) in now.iter().zip(before.iter()) {
            let cctx = format!("{ctx} change");
            let expected = if *name == "bounce_rate" {
                // In points; null when there were no visits before.
                reference::difference(*n, *p)
            } else {
                reference::change(*n, *p)
            };
            match expected {
                Some(r) => c.rounded(&cctx, &json["change"], name, r),
                None => {
                    c.compared += 1;
                    if !json["change"][name].is_null() {
                        c.fail(format!(
                            "{cctx}: {name}: expected null (nothing before to compare with), got {}",
                            json["change"][name]
                        ));
                    }
                }
            }
        }
        // Without compare: null comparison and change (checked once per
        // range, unfiltered, to keep the run short).
        if !filters.is_empty() {
            return;
        }
        let q = with_filters(range_q, filters);
        let (status, json) = self.rig.get(self.key, &self.uri("stats", &q)).await;
        if c.status(&ctx, status, &json) {
            c.metrics(&format!("{ctx} (no compare)"), &json["results"], &cur);
            c.compared += 1;
            if !(json["comparison"].is_null() && json["change"].is_null()) {
                c.fail(format!(
                    "{ctx}: without compare, comparison and change must be null: {json}"
                ));
            }
        }
    }

    async fn series(
        &self,
        c: &mut Check,
        range_q: &str,
        interval: Option<&str>,
        filters: &str,
        want: &[(String, Counts)],
    ) {
        let q = match interval {
            Some(i) => format!("{range_q}&interval={i}"),
            None => range_q.to_owned(),
        };
        let q = with_filters(&q, filters);
        let ctx = format!("{} timeseries?{q}", self.site);
        let (status, json) = self.rig.get(self.key, &self.uri("timeseries", &q)).await;
        if !c.status(&ctx, status, &json) {
            return;
        }
        let rows = json["results"].as_array().cloned().unwrap_or_default();
        c.compared += 1;
        if rows.len() != want.len() {
            c.fail(format!(
                "{ctx}: expected {} buckets, got {}: {:?}",
                want.len(),
                rows.len(),
                rows.iter().map(|r| r["date"].clone()).collect::<Vec<_>>()
            ));
            return;
        }
        for (row, (label, counts)) in rows.iter().zip(want) {
            let bctx = format!("{ctx} [{label}]");
            c.text(&bctx, row, "date", label);
            c.metrics(&bctx, row, counts);
        }
    }

    async fn breakdown(
        &self,
        c: &mut Check,
        dim: &str,
        range_q: &str,
        from: Date,
        to: Date,
        filters: &str,
    ) {
        let q = with_filters(&format!("{range_q}&limit=1000"), filters);
        let ctx = format!("{} breakdown/{dim}?{q}", self.site);
        let (status, json) = self
            .rig
            .get(self.key, &self.uri(&format!("breakdown/{dim}"), &q))
            .await;
        if !c.status(&ctx, status, &json) {
            return;
        }
        let canonical = tally_dimension(dim);
        let want = self.reference.breakdown(canonical, from, to, filters);
        let total = self.reference.totals(from, to, filters);
        let got = json["results"].as_array().cloned().unwrap_or_default();
        c.int(&ctx, &json["meta"], "total_rows", want.len() as u64);
        c.int(&ctx, &json["meta"], "total_visitors", total.visitors);
        c.text(&ctx, &json["meta"], "dimension", canonical);
        if !got.iter().all(|r| r["value"].is_string()) {
            // docs/API.md names both a row's dimension value and (for event
            // and goal rows) its value sum `value`; without the name the rows
            // can only be compared by their numbers.
            c.fail(format!(
                "{ctx}: rows carry no dimension value (`value` is {:?})",
                got.iter().map(|r| r["value"].clone()).collect::<Vec<_>>()
            ));
            let events_of = |r: &Value| r["events"].as_u64().or_else(|| r["conversions"].as_u64());
            let mut got_sigs: Vec<String> = got
                .iter()
                .map(|r| {
                    format!(
                        "visitors={:?} visits={:?} pageviews={:?} events={:?} unique={:?} rate={:?} sum={:?}",
                        r["visitors"].as_u64(),
                        r["visits"].as_u64(),
                        r["pageviews"].as_u64(),
                        events_of(r),
                        r["unique_conversions"].as_u64(),
                        r["conversion_rate"].as_f64().or_else(|| r["percentage"].as_f64()),
                        r["value"].as_f64(),
                    )
                })
                .collect();
            let mut want_sigs: Vec<String> = want
                .iter()
                .map(|w| {
                    let w = &w.counts;
                    format!(
                        "visitors={:?} visits={:?} pageviews={:?} events={:?} unique={:?} rate={:?} sum={:?}",
                        Some(w.visitors),
                        Some(w.visits),
                        Some(w.pageviews),
                        Some(w.events),
                        (canonical == "goal").then_some(w.visitors),
                        Some(reference::percent(w.visitors, total.visitors).value),
                        Some(w.value),
                    )
                })
                .collect();
            got_sigs.sort();
            want_sigs.sort();
            c.compared += 1;
            if got_sigs != want_sigs {
                c.fail(format!(
                    "{ctx}: unnamed rows differ from the reference:\n  expected {want_sigs:?}\n  got      {got_sigs:?}"
                ));
            }
            self.check_order(c, &ctx, &got);
            return;
        }
        let want_values: BTreeSet<&str> = want.iter().map(|r| r.value.as_str()).collect();
        let got_values: BTreeSet<&str> = got.iter().filter_map(|r| r["value"].as_str()).collect();
        c.compared += 1;
        if want_values != got_values {
            let missing: Vec<_> = want_values.difference(&got_values).collect();
            let extra: Vec<_> = got_values.difference(&want_values).collect();
            c.fail(format!(
                "{ctx}: rows differ: missing {missing:?}, unexpected {extra:?}"
            ));
        }
        let by_value: BTreeMap<&str, &reference::Row> =
            want.iter().map(|r| (r.value.as_str(), r)).collect();
        for row in &got {
            let Some(value) = row["value"].as_str() else {
                c.fail(format!("{ctx}: a row without a string value: {row}"));
                continue;
            };
            let Some(w) = by_value.get(value) else {
                continue;
            };
            let w = &w.counts;
            let rctx = format!("{ctx} [{value}]");
            c.int(&rctx, row, "visitors", w.visitors);
            c.int(&rctx, row, "visits", w.visits);
            c.int(&rctx, row, "pageviews", w.pageviews);
            c.rounded(
                &rctx,
                row,
                "percentage",
                reference::percent(w.visitors, total.visitors),
            );
            match canonical {
                "page" => {
                    c.int(&rctx, row, "entries", w.entries);
                    c.rounded(&rctx, row, "bounce_rate", reference::entry_bounce_rate(w));
                }
                "event" => {
                    c.int(&rctx, row, "events", w.events);
                    c.compared += 1;
                    if row["total_value"].as_f64() != Some(w.value) {
                        c.fail(format!(
                            "{rctx}: total_value: expected {}, got {}",
                            w.value, row["total_value"]
                        ));
                    }
                }
                "goal" => {
                    c.int(&rctx, row, "conversions", w.events);
                    c.compared += 1;
                    if row["total_value"].as_f64() != Some(w.value) {
                        c.fail(format!(
                            "{rctx}: total_value: expected {}, got {}",
                            w.value, row["total_value"]
                        ));
                    }
                    c.int(&rctx, row, "unique_conversions", w.visitors);
                    c.rounded(
                        &rctx,
                        row,
                        "conversion_rate",
                        reference::percent(w.visitors, total.visitors),
                    );
                }
                _ => {
                    c.rounded(&rctx, row, "bounce_rate", reference::bounce_rate(w));
                    c.rounded(&rctx, row, "visit_duration", reference::visit_duration(w));
                    c.int(&rctx, row, "events", w.events);
                    if canonical == "country" {
                        c.text(&rctx, row, "name", country_name(value));
                    }
                }
            }
        }
        self.check_order(c, &ctx, &got);
    }

    fn check_order(&self, c: &mut Check, ctx: &str, got: &[Value]) {
        // Order: visitors, then visits, page views, events (conversions), value.
        let key = |r: &Value| {
            let events = r["events"]
                .as_u64()
                .or_else(|| r["conversions"].as_u64())
                .unwrap_or(0);
            (
                r["visitors"].as_u64().unwrap_or(0),
                r["visits"].as_u64().unwrap_or(0),
                r["pageviews"].as_u64().unwrap_or(0),
                events,
                r["total_value"].as_f64().unwrap_or(0.0),
            )
        };
        for pair in got.windows(2) {
            c.compared += 1;
            if key(&pair[0]) < key(&pair[1]) {
                c.fail(format!(
                    "{ctx}: rows out of order (visitors, visits, pageviews, events, value): {:?} {:?} before {:?} {:?}",
                    pair[0]["value"],
                    key(&pair[0]),
                    pair[1]["value"],
                    key(&pair[1])
                ));
            }
        }
    }

    async fn realtime(&self, c: &mut Check, now: i64) {
        let ctx = format!("{} realtime", self.site);
        let (status, json) = self.rig.get(self.key, &self.uri("realtime", "")).await;
        if !c.status(&ctx, status, &json) {
            return;
        }
        let (visitors, pages) = self.reference.realtime(now);
        c.int(&ctx, &json, "visitors", visitors);
        let got: BTreeMap<String, u64> = json["pages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|p| {
                (
                    p["value"].as_str().unwrap_or("?").to_owned(),
                    p["visitors"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        c.compared += 1;
        if got != pages {
            c.fail(format!("{ctx}: pages: expected {pages:?}, got {got:?}"));
        }
        c.int(&ctx, &json["meta"], "window_seconds", 300);
    }
}

/// The canonical name of a dimension or its plural alias.
fn tally_dimension(name: &str) -> &str {
    match name {
        "pages" => "page",
        "countries" => "country",
        "screen_sizes" => "screen",
        "events" => "event",
        "goals" => "goal",
        other => other,
    }
}

fn country_name(code: &str) -> &'static str {
    match code {
        "DE" => "Germany",
        "AT" => "Austria",
        "US" => "United States",
        "NZ" => "New Zealand",
        "GB" => "United Kingdom",
        "JP" => "Japan",
        "BR" => "Brazil",
        "IN" => "India",
        "FR" => "France",
        _ => "?",
    }
}

fn day_series(r: &Reference, from: Date, to: Date, filters: &str) -> Vec<(String, Counts)> {
    r.days(from, to, filters)
        .into_iter()
        .map(|(d, c)| (format_date(d), c))
        .collect()
}

fn week_series(r: &Reference, from: Date, to: Date, filters: &str) -> Vec<(String, Counts)> {
    r.weeks(from, to, filters)
        .into_iter()
        .map(|(d, c)| (format_date(d), c))
        .collect()
}

// ---------------------------------------------------------------- the dataset

/// The clock while the dataset is queried: 2026-11-30 10:00 UTC (23:00 in
/// Auckland, 11:00 in Berlin: "today" is 2026-11-30 in both).
fn query_now() -> i64 {
    tally_core::time::zone::utc_midnight(date!(2026 - 11 - 30)) + 10 * HOUR
}

const FIRST_DAY: Date = date!(2026 - 11 - 20);

struct SiteData {
    id: &'static str,
    zone: Zone,
    key: String,
    traffic: Traffic,
}

/// Two sites (Auckland, far from UTC, and Berlin), ten days of generated
/// traffic each, plus a few visitors in the last minutes before the clock.
async fn dataset() -> (Rig, Vec<SiteData>) {
    let mut rig = Rig::new().await;
    let mut sites = Vec::new();
    for (id, host, tz, seed) in [
        ("kiwi", "kiwi.example", "Pacific/Auckland", 11u64),
        ("berlin", "example.com", "Europe/Berlin", 22u64),
    ] {
        let key = rig.site(id, host, tz).await;
        let zone = Zone::parse(tz).unwrap();
        let traffic = generator::generate(&Plan {
            seed,
            site: id.to_owned(),
            host: host.to_owned(),
            zone: zone.clone(),
            first_day: FIRST_DAY,
            days: 10,
            visitors: 300,
        });
        assert!(traffic.last_ts() < query_now() - 10 * MINUTE);
        sites.push(SiteData {
            id,
            zone,
            key,
            traffic,
        });
    }
    let mut all: Vec<Post> = sites
        .iter()
        .flat_map(|s| s.traffic.posts.iter().cloned())
        .collect();
    all.sort_by_key(|p| p.now_ms);
    rig.post_all(&all).await;
    for s in &sites {
        let host = if s.id == "kiwi" {
            "kiwi.example"
        } else {
            "example.com"
        };
        rig.post_all(&realtime_posts(s.id, host, query_now())).await;
    }
    rig.clock.set(query_now());
    rig.run_jobs(FIRST_DAY, query_now()).await;
    (rig, sites)
}

/// Visitors around the clock: three with an event in the last five minutes
/// (one on the page of an older view), one only before the window, one
/// whose tab was hidden (a leave) and one whose tab was hidden and shown
/// again (a leave, then a show).
fn realtime_posts(site: &str, host: &str, now: i64) -> Vec<Post> {
    let mut rng = Rng::new(99);
    let visitors: Vec<Visitor> = (0..6)
        .map(|n| Visitor {
            ip: format!("203.0.113.{}", 10 + n),
            user_agent: BROWSERS[n as usize].1,
            tz: Some("Europe/Berlin"),
            screen: Some((1440, 900)),
        })
        .collect();
    let mut posts = Vec::new();
    let mut a = Tab::new(&mut rng, site, host, &visitors[0]);
    posts.push(a.pageview(&mut rng, now - 4 * MINUTE, "/pricing", None));
    posts.push(a.pageview(&mut rng, now - 2 * MINUTE, "/signup", None));
    let mut b = Tab::new(&mut rng, site, host, &visitors[1]);
    posts.push(b.pageview(&mut rng, now - 3 * MINUTE, "/", None));
    let mut c = Tab::new(&mut rng, site, host, &visitors[2]);
    posts.push(c.pageview(&mut rng, now - 7 * MINUTE, "/blog/rust-tips", None));
    posts.push(c.engagement(&mut rng, now - 150_000, 200, 90));
    let mut d = Tab::new(&mut rng, site, host, &visitors[3]);
    posts.push(d.pageview(&mut rng, now - 6 * MINUTE, "/about", None));
    let mut e = Tab::new(&mut rng, site, host, &visitors[4]);
    posts.push(e.pageview(&mut rng, now - 3 * MINUTE, "/docs", None));
    posts.push(e.leave(&mut rng, now - MINUTE, 60, 40));
    let mut f = Tab::new(&mut rng, site, host, &visitors[5]);
    posts.push(f.pageview(&mut rng, now - 4 * MINUTE, "/docs", None));
    posts.push(f.leave(&mut rng, now - 3 * MINUTE, 30, 20));
    posts.push(f.show(&mut rng, now - MINUTE));
    for p in &mut posts {
        p.now_ms = p.ts + 1_000;
    }
    posts.sort_by_key(|p| p.now_ms);
    posts
}

/// Ranges: (query, from, to).
fn ranges() -> Vec<(&'static str, Date, Date)> {
    vec![
        (
            "from=2026-11-22&to=2026-11-22",
            date!(2026 - 11 - 22),
            date!(2026 - 11 - 22),
        ),
        (
            "period=yesterday",
            date!(2026 - 11 - 29),
            date!(2026 - 11 - 29),
        ),
        (
            "from=2026-11-21&to=2026-11-27",
            date!(2026 - 11 - 21),
            date!(2026 - 11 - 27),
        ),
        ("period=7d", date!(2026 - 11 - 24), date!(2026 - 11 - 30)),
    ]
}

const FILTERS: [&str; 12] = [
    "page==/blog/*",
    "country==DE",
    "browser!=Safari",
    "source~=goo",
    "entry_page==/",
    "event==Signup",
    "goal==Visit pricing",
    "utm_campaign==(none)",
    "country==DE|AT;browser!=Safari;page==/blog/*",
    "page!=/pricing;source!~twit",
    "exit_page==/docs*;device==desktop",
    "event==Signup|Purchase;channel!=Direct",
];

async fn check_unfiltered(site_index: usize) {
    let (rig, sites) = dataset().await;
    let s = &sites[site_index];
    let reference = rig.reference(s.id, &s.zone).await;
    assert!(
        reference.visits.len() > 300,
        "{} visits",
        reference.visits.len()
    );
    let subject = Subject {
        rig: &rig,
        site: s.id,
        key: &s.key,
        zone: &s.zone,
        reference: &reference,
    };
    let mut c = Check::default();
    for (q, from, to) in ranges() {
        subject.stats(&mut c, q, from, to, "").await;
        subject
            .series(
                &mut c,
                q,
                Some("day"),
                "",
                &day_series(&reference, from, to, ""),
            )
            .await;
        subject
            .series(
                &mut c,
                q,
                Some("week"),
                "",
                &week_series(&reference, from, to, ""),
            )
            .await;
        if from == to {
            let hours = reference.hours(from, "");
            subject.series(&mut c, q, Some("hour"), "", &hours).await;
            // One day defaults to hours.
            subject.series(&mut c, q, None, "", &hours).await;
        } else {
            subject
                .series(&mut c, q, None, "", &day_series(&reference, from, to, ""))
                .await;
        }
        for dim in DIMENSIONS {
            subject.breakdown(&mut c, dim, q, from, to, "").await;
        }
    }
    // Plural aliases name the same dimensions.
    let (q, from, to) = ranges()[2];
    for alias in ["pages", "countries", "screen_sizes", "events", "goals"] {
        subject.breakdown(&mut c, alias, q, from, to, "").await;
    }
    // Pages of a breakdown are slices of the whole ordered list.
    let full_uri = subject.uri("breakdown/source", &format!("{q}&limit=1000"));
    let (_, full) = rig.get(&s.key, &full_uri).await;
    let (status, page2) = rig
        .get(
            &s.key,
            &subject.uri("breakdown/source", &format!("{q}&limit=3&page=2")),
        )
        .await;
    c.compared += 1;
    if status != 200
        || page2["results"].as_array().map(Vec::as_slice)
            != full["results"].as_array().map(|r| &r[3..6])
        || page2["meta"]["limit"] != 3
        || page2["meta"]["page"] != 2
        || page2["meta"]["total_rows"] != full["meta"]["total_rows"]
    {
        c.fail(format!("limit=3&page=2 is not rows 4-6 of {full}: {page2}"));
    }
    let (_, default) = rig.get(&s.key, &subject.uri("breakdown/source", q)).await;
    c.int(
        "breakdown/source default limit",
        &default["meta"],
        "limit",
        100,
    );
    // A longer custom range with weeks.
    subject
        .series(
            &mut c,
            "from=2026-11-18&to=2026-11-30",
            Some("week"),
            "",
            &week_series(&reference, date!(2026 - 11 - 18), date!(2026 - 11 - 30), ""),
        )
        .await;
    subject.realtime(&mut c, query_now()).await;
    c.finish(&format!("{} unfiltered", s.id));
}

async fn check_filtered(site_index: usize) {
    let (rig, sites) = dataset().await;
    let s = &sites[site_index];
    let reference = rig.reference(s.id, &s.zone).await;
    let subject = Subject {
        rig: &rig,
        site: s.id,
        key: &s.key,
        zone: &s.zone,
        reference: &reference,
    };
    let mut c = Check::default();
    let (q, from, to) = ranges()[2];
    let (day_q, day, _) = ranges()[0];
    for filters in FILTERS {
        let kept = reference.totals(from, to, filters);
        assert!(
            kept.visits > 0,
            "{filters} keeps no visit: a useless filter"
        );
        subject.stats(&mut c, q, from, to, filters).await;
        subject.stats(&mut c, day_q, day, day, filters).await;
        subject
            .series(
                &mut c,
                q,
                Some("day"),
                filters,
                &day_series(&reference, from, to, filters),
            )
            .await;
        subject
            .series(
                &mut c,
                day_q,
                Some("hour"),
                filters,
                &reference.hours(day, filters),
            )
            .await;
        for dim in DIMENSIONS {
            subject.breakdown(&mut c, dim, q, from, to, filters).await;
        }
    }
    c.finish(&format!("{} filtered", s.id));
}

#[tokio::test]
async fn every_unfiltered_report_matches_the_reference_for_a_site_far_from_utc() {
    check_unfiltered(0).await;
}

#[tokio::test]
async fn every_unfiltered_report_matches_the_reference_for_a_berlin_site() {
    check_unfiltered(1).await;
}

#[tokio::test]
async fn every_filtered_report_matches_the_reference_for_a_site_far_from_utc() {
    check_filtered(0).await;
}

#[tokio::test]
async fn every_filtered_report_matches_the_reference_for_a_berlin_site() {
    check_filtered(1).await;
}

/// Raw events live seven days; after that every report is answered from
/// what the scheduled job compacted (segments) and rolled up. Here the raw
/// events older than two days are deleted outright: filtered stats, every
/// breakdown and the hourly series of an older day still equal the
/// reference counter (built before the deletion), and a range reaching
/// before the stored history says so instead of counting zeros.
#[tokio::test]
async fn reports_past_raw_retention_equal_the_reference() {
    let (rig, sites) = dataset().await;
    let s = &sites[1];
    let reference = rig.reference(s.id, &s.zone).await;
    let cut = query_now() - 2 * 24 * HOUR;
    let deleted = rig.h.delete_raw_before(s.id, cut).await;
    assert!(deleted > 1000, "{deleted} raw events deleted");
    let subject = Subject {
        rig: &rig,
        site: s.id,
        key: &s.key,
        zone: &s.zone,
        reference: &reference,
    };
    let mut c = Check::default();
    let (q, from, to) = ranges()[2];
    let (day_q, day, _) = ranges()[0];
    for filters in ["", FILTERS[0], FILTERS[8], FILTERS[9], FILTERS[11]] {
        subject.stats(&mut c, q, from, to, filters).await;
        subject
            .series(
                &mut c,
                day_q,
                Some("hour"),
                filters,
                &reference.hours(day, filters),
            )
            .await;
        for dim in DIMENSIONS {
            subject.breakdown(&mut c, dim, q, from, to, filters).await;
        }
    }
    c.finish("past raw retention");
    // Those days came from segments (filtered) and rollups, no raw hour.
    let (_, json) = rig
        .get(
            &s.key,
            &format!(
                "/api/sites/{}/stats?{q}&filters=page%3D%3D%2Fblog%2F*",
                s.id
            ),
        )
        .await;
    assert_eq!(json["meta"]["sources"]["segment"]["days"], 7, "{json}");
    assert_eq!(json["meta"]["sources"]["raw"], Value::Null, "{json}");
    assert_eq!(json["meta"]["warnings"], Value::Array(vec![]), "{json}");
    // A range from before anything was stored: the days without detail are
    // named in a warning, the others answered.
    let (status, json) = rig
        .get(
            &s.key,
            &format!(
                "/api/sites/{}/stats?from=2026-10-01&to=2026-11-27&filters=page%3D%3D%2Fblog%2F*",
                s.id
            ),
        )
        .await;
    assert_eq!(status, 200);
    let warning = &json["meta"]["warnings"][0];
    assert_eq!(warning["code"], "detail_expired", "{json}");
    assert_eq!(warning["from"], "2026-10-01");
    let last = warning["to"].as_str().unwrap();
    assert!(
        ("2026-11-01".."2026-11-20").contains(&last),
        "warned up to {last}"
    );
    let want = reference.totals(date!(2026 - 10 - 01), to, FILTERS[0]);
    assert_eq!(json["results"]["visitors"], want.visitors, "{json}");
}

#[tokio::test]
async fn stored_events_are_what_the_generator_intended() {
    let (rig, sites) = dataset().await;
    let items = rig.h.event_items().await;
    for s in &sites {
        let mine: Vec<_> = items
            .iter()
            .filter(|i| {
                string(i, "pk").is_some_and(|pk| pk.starts_with(&format!("SITE#{}#H#", s.id)))
            })
            .collect();
        let kind = |k: &str| mine.iter().filter(|i| string(i, "k") == Some(k)).count();
        let realtime = 7; // page views posted by realtime_posts
        assert_eq!(
            kind("pv"),
            s.traffic.count(Intent::PageView) + realtime,
            "{}: page views = generated non-bot, non-duplicate page views",
            s.id
        );
        assert_eq!(kind("ev"), s.traffic.count(Intent::Custom), "{}", s.id);
        assert_eq!(
            kind("en"),
            s.traffic.count(Intent::Engagement) + 4, // realtime_posts' beacons
            "{}",
            s.id
        );
        // Every event id is stored once; bots' ids never.
        let eid_of = |body: &str| -> String {
            serde_json::from_str::<Value>(body).unwrap()["eid"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        let mut stored: BTreeMap<String, usize> = BTreeMap::new();
        for i in &mine {
            let sk = string(i, "sk").unwrap();
            let eid = sk.split_once('#').unwrap().1.to_owned();
            *stored.entry(eid).or_default() += 1;
        }
        assert!(
            stored.values().all(|n| *n == 1),
            "{}: an event id stored twice",
            s.id
        );
        let bots = s.traffic.count(Intent::Bot);
        let duplicates = s.traffic.count(Intent::Duplicate);
        assert!(
            bots > 20 && duplicates > 20,
            "{bots} bots, {duplicates} duplicates"
        );
        for p in &s.traffic.posts {
            let n = stored.get(&eid_of(&p.body)).copied().unwrap_or(0);
            match p.intent {
                Intent::Bot => assert_eq!(n, 0, "a bot's event is stored: {}", p.body),
                _ => assert_eq!(n, 1, "{:?} stored {n} times: {}", p.intent, p.body),
            }
        }
    }
}

#[test]
fn the_generator_is_deterministic() {
    let plan = |seed| Plan {
        seed,
        site: "berlin".into(),
        host: "example.com".into(),
        zone: Zone::parse("Europe/Berlin").unwrap(),
        first_day: FIRST_DAY,
        days: 3,
        visitors: 40,
    };
    let bodies = |t: &Traffic| -> Vec<String> { t.posts.iter().map(|p| p.body.clone()).collect() };
    let a = generator::generate(&plan(7));
    assert_eq!(bodies(&a), bodies(&generator::generate(&plan(7))));
    assert_ne!(bodies(&a), bodies(&generator::generate(&plan(8))));
}

#[tokio::test]
async fn the_generated_traffic_covers_the_documented_cases() {
    let (rig, sites) = dataset().await;
    for s in &sites {
        let r = rig.reference(s.id, &s.zone).await;
        let id = s.id;
        let count = |what: &str, n: usize, at_least: usize| {
            assert!(
                n >= at_least,
                "{id}: {n} {what}, expected at least {at_least}"
            );
        };
        // Tabs open across local midnight are generated, but ingest stores
        // a tab's id hashed with the day's salt (docs/PRIVACY.md), so no
        // stored visit crosses midnight: the spill rule is tested on events
        // stored with a raw tab id ([`legacy_tab_ids`]).
        let mut tab_days: BTreeMap<String, BTreeSet<Date>> = BTreeMap::new();
        for p in &s.traffic.posts {
            let body: Value = serde_json::from_str(&p.body).unwrap();
            if let Some(sid) = body["sid"].as_str() {
                tab_days
                    .entry(sid.to_owned())
                    .or_default()
                    .insert(s.zone.local_date(p.ts));
            }
        }
        count(
            "tabs open across local midnight",
            tab_days.values().filter(|d| d.len() > 1).count(),
            5,
        );
        assert_eq!(
            r.visits
                .iter()
                .filter(|v| s.zone.local_date(v.events[v.events.len() - 1].ts) != v.day)
                .count(),
            0,
            "{id}: a stored visit crosses local midnight"
        );
        count(
            "visits starting at 23:30 local",
            r.visits
                .iter()
                .filter(|v| s.zone.local_minute_label(v.start).ends_with("23:30"))
                .count(),
            5,
        );
        let mut per_sid: BTreeMap<&str, usize> = BTreeMap::new();
        for v in &r.visits {
            *per_sid.entry(v.events[0].sid.as_str()).or_default() += 1;
        }
        count(
            "tabs split by a long gap",
            per_sid.values().filter(|n| **n > 1).count(),
            5,
        );
        let in_visits: usize = r.visits.iter().map(|v| v.events.len()).sum();
        count(
            "engagement-only fragments (events in no visit)",
            r.events.len() - in_visits,
            5,
        );
        let one_page = |v: &&reference::Visit| v.pageviews().len() == 1 && v.customs().is_empty();
        count(
            "one-page visits engaged 10 s or more",
            r.visits
                .iter()
                .filter(one_page)
                .filter(|v| v.engaged_ms().is_some_and(|ms| ms >= 10_000))
                .count(),
            5,
        );
        count(
            "one-page visits engaged under 10 s",
            r.visits
                .iter()
                .filter(one_page)
                .filter(|v| v.engaged_ms().is_some_and(|ms| ms < 10_000))
                .count(),
            5,
        );
        let names: BTreeSet<&str> = r.events.iter().filter_map(|e| e.name.as_deref()).collect();
        for name in [
            "Signup",
            "Purchase",
            "Newsletter",
            "Outbound Link: Click",
            "File Download",
        ] {
            assert!(names.contains(name), "{id}: no {name} event");
        }
        count(
            "custom events without value",
            r.events
                .iter()
                .filter(|e| e.name.is_some() && e.value.is_none())
                .count(),
            5,
        );
        count(
            "custom events with props",
            r.events
                .iter()
                .filter(|e| e.name.is_some() && !e.props.is_empty())
                .count(),
            5,
        );
        let distinct = |dim: &str| -> usize {
            r.visits
                .iter()
                .filter_map(|v| v.property(dim))
                .collect::<BTreeSet<_>>()
                .len()
        };
        count("browsers", distinct("browser"), 5);
        count("operating systems", distinct("os"), 5);
        count("devices", distinct("device"), 3);
        count("countries", distinct("country"), 8);
        count("screens", distinct("screen"), 5);
        count("sources", distinct("source"), 5);
        count("channels", distinct("channel"), 4);
        count("utm terms", distinct("utm_term"), 1);
        count("utm contents", distinct("utm_content"), 1);
        count("entry pages", distinct("entry_page"), 8);
    }
}

// ---------------------------------------------------------------- small, hand-made cases

/// A hand-made site in a zone, with a key.
async fn small_site(tz: &str) -> (Rig, String, Zone) {
    let mut rig = Rig::new().await;
    let key = rig.site("hand", "example.com", tz).await;
    (rig, key, Zone::parse(tz).unwrap())
}

fn visitor(n: u8) -> Visitor {
    Visitor {
        ip: format!("203.0.113.{n}"),
        user_agent: BROWSERS[usize::from(n) % BROWSERS.len()].1,
        tz: Some("Europe/Berlin"),
        screen: Some((1440, 900)),
    }
}

/// Posts every post at its own time (+1 s) and sets the clock to `now`.
async fn post_at(rig: &Rig, mut posts: Vec<Post>, now: i64) {
    for p in &mut posts {
        p.now_ms = p.ts + 1_000;
    }
    posts.sort_by_key(|p| p.now_ms);
    rig.post_all(&posts).await;
    rig.clock.set(now);
}

/// Gives every stored event of `site` the raw tab id `sid`, as events were
/// stored before ingest hashed tab ids with the day's salt (they stay up to
/// `history_days`): one tab whose visit may cross local midnight.
async fn legacy_tab_ids(rig: &Rig, site: &str, sid: &str) {
    let prefix = format!("SITE#{site}#H#");
    for mut item in rig.h.event_items().await {
        if string(&item, "pk").is_some_and(|pk| pk.starts_with(&prefix)) {
            item.insert(
                "sid".to_owned(),
                aws_sdk_dynamodb::types::AttributeValue::S(sid.to_owned()),
            );
            rig.h
                .store
                .client()
                .put_item()
                .table_name(rig.h.store.table())
                .set_item(Some(item))
                .send()
                .await
                .unwrap();
        }
    }
}

#[tokio::test]
async fn hand_made_visits_count_bounces_durations_and_splits_as_documented() {
    let (rig, key, zone) = small_site("UTC").await;
    let day = date!(2026 - 11 - 25);
    let t = zone.day_start(day);
    let mut rng = Rng::new(5);
    let vs: Vec<Visitor> = (1..=5).map(visitor).collect();
    let mut posts = Vec::new();
    // A: one page, 5 s engaged: a bounce of 5 s.
    let mut a = Tab::new(&mut rng, "hand", "example.com", &vs[0]);
    posts.push(a.pageview(&mut rng, t + 10 * HOUR, "/", None));
    posts.push(a.engagement(&mut rng, t + 10 * HOUR + 30_000, 5, 40));
    // B: one page, 12 s engaged: no bounce.
    let mut b = Tab::new(&mut rng, "hand", "example.com", &vs[1]);
    posts.push(b.pageview(&mut rng, t + 11 * HOUR, "/pricing", None));
    posts.push(b.engagement(&mut rng, t + 11 * HOUR + MINUTE, 12, 40));
    // C: two pages and a custom event, no beacon: 180 s from first to last.
    let mut cc = Tab::new(&mut rng, "hand", "example.com", &vs[2]);
    posts.push(cc.pageview(&mut rng, t + 12 * HOUR, "/", None));
    posts.push(cc.pageview(&mut rng, t + 12 * HOUR + 2 * MINUTE, "/pricing", None));
    posts.push(cc.custom(
        &mut rng,
        t + 12 * HOUR + 3 * MINUTE,
        "Signup",
        Some(10.0),
        None,
    ));
    // D: a 45-minute gap: two visits, two bounces.
    let mut d = Tab::new(&mut rng, "hand", "example.com", &vs[3]);
    posts.push(d.pageview(&mut rng, t + 13 * HOUR, "/docs", None));
    posts.push(d.pageview(&mut rng, t + 13 * HOUR + 45 * MINUTE, "/about", None));
    // E: a beacon 40 minutes after the only page view is no visit of its own.
    let mut e = Tab::new(&mut rng, "hand", "example.com", &vs[4]);
    posts.push(e.pageview(&mut rng, t + 14 * HOUR, "/blog/x", None));
    posts.push(e.engagement(&mut rng, t + 14 * HOUR + 40 * MINUTE, 3, 10));
    // A again in another tab: a visit, not a new visitor.
    let mut a2 = Tab::new(&mut rng, "hand", "example.com", &vs[0]);
    posts.push(a2.pageview(&mut rng, t + 15 * HOUR, "/", None));
    post_at(&rig, posts, t + 20 * HOUR).await;

    let (status, json) = rig
        .get(&key, "/api/sites/hand/stats?from=2026-11-25&to=2026-11-25")
        .await;
    assert_eq!(status, 200, "{json}");
    let r = &json["results"];
    // 7 visits by 5 visitors, 8 page views, 5 bounces, 197 s in all, 1 event.
    assert_eq!(r["visitors"], 5, "{r}");
    assert_eq!(r["visits"], 7, "{r}");
    assert_eq!(r["pageviews"], 8, "{r}");
    assert_eq!(r["views_per_visit"], 1.14, "{r}");
    assert_eq!(r["bounce_rate"], 71.4, "{r}");
    assert_eq!(r["visit_duration"], 28.0, "{r}");
    assert_eq!(r["events"], 1, "{r}");
    // The reference agrees with the hand count.
    let reference = rig.reference("hand", &zone).await;
    let want = reference.totals(day, day, "");
    assert_eq!(
        (
            want.visitors,
            want.visits,
            want.pageviews,
            want.bounces,
            want.duration_ms,
            want.events
        ),
        (5, 7, 8, 5, 197_000, 1)
    );
}

#[tokio::test]
async fn the_period_before_a_site_existed_costs_no_reads() {
    let mut rig = Rig::new().await;
    let zone = Zone::parse("Europe/Berlin").unwrap();
    let created = zone.day_start(date!(2026 - 11 - 20)) + 9 * HOUR;
    let mut site = Site::new(
        "young",
        &["example.com".to_owned()],
        "Europe/Berlin",
        created,
    )
    .unwrap();
    // Raw events kept long enough that no job is needed here.
    site.retention_days = 30;
    rig.h.store.create_site(&site).await.unwrap();
    let key = rig.key("young", None).await;
    let mut rng = Rng::new(11);
    let v = visitor(2);
    let mut tab = Tab::new(&mut rng, "young", "example.com", &v);
    let at = created + 2 * HOUR;
    let posts = vec![tab.pageview(&mut rng, at, "/", None)];
    post_at(
        &rig,
        posts,
        zone.day_start(date!(2026 - 11 - 27)) + 12 * HOUR,
    )
    .await;
    let range = "from=2026-11-20&to=2026-11-26";
    let queries = |rig: &Rig| {
        rig.h
            .counter
            .by_operation()
            .get("Query")
            .copied()
            .unwrap_or(0)
    };
    // Warm the site and key caches, then count what each answer reads.
    let _ = rig
        .get(&key, &format!("/api/sites/young/stats?{range}"))
        .await;
    rig.h.counter.reset();
    let (status, alone) = rig
        .get(&key, &format!("/api/sites/young/stats?{range}"))
        .await;
    assert_eq!(status, 200, "{alone}");
    let without = queries(&rig);
    rig.h.counter.reset();
    let (status, compared) = rig
        .get(
            &key,
            &format!("/api/sites/young/stats?{range}&compare=previous"),
        )
        .await;
    assert_eq!(status, 200, "{compared}");
    assert_eq!(compared["results"]["visitors"], 1);
    assert_eq!(compared["comparison"]["visitors"], 0, "{compared}");
    // The previous week (13-19 November) is before the site existed: its
    // raw hour partitions (7 x 24) and segments are not read, only one
    // Query page of rollups (where imported history would be), and the
    // answer says why it is empty.
    assert!(without > 0);
    assert_eq!(queries(&rig), without + 1, "the earlier week was read");
    let warnings = &compared["meta"]["comparison"]["warnings"];
    assert_eq!(warnings[0]["code"], "before_site", "{compared}");
    assert_eq!(
        (&warnings[0]["from"], &warnings[0]["to"]),
        (&Value::from("2026-11-13"), &Value::from("2026-11-19"))
    );
    assert_eq!(compared["meta"]["warnings"], Value::Array(vec![]));
}

#[tokio::test]
async fn a_visit_at_2330_local_time_lands_on_that_local_day() {
    for tz in ["Europe/Berlin", "Pacific/Auckland", "America/Los_Angeles"] {
        let (rig, key, zone) = small_site(tz).await;
        let day = date!(2026 - 11 - 24);
        let at = zone.day_end(day) - 30 * MINUTE;
        let mut rng = Rng::new(7);
        let v = visitor(1);
        let mut tab = Tab::new(&mut rng, "hand", "example.com", &v);
        let posts = vec![tab.pageview(&mut rng, at, "/", None)];
        post_at(&rig, posts, at + 2 * HOUR).await;
        let (status, json) = rig
            .get(
                &key,
                "/api/sites/hand/timeseries?from=2026-11-24&to=2026-11-25&interval=day",
            )
            .await;
        assert_eq!(status, 200, "{json}");
        let visits: Vec<(String, u64)> = json["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["date"].as_str().unwrap().to_owned(),
                    r["visits"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            visits,
            vec![("2026-11-24".to_owned(), 1), ("2026-11-25".to_owned(), 0)],
            "{tz}"
        );
        let (_, json) = rig
            .get(
                &key,
                "/api/sites/hand/timeseries?from=2026-11-24&to=2026-11-24&interval=hour",
            )
            .await;
        let rows = json["results"].as_array().unwrap();
        assert_eq!(rows.len(), 24, "{tz}");
        assert_eq!(rows[23]["date"], "2026-11-24 23:00", "{tz}");
        assert_eq!(rows[23]["visits"], 1, "{tz}");
        let total: u64 = rows.iter().map(|r| r["visits"].as_u64().unwrap()).sum();
        assert_eq!(total, 1, "{tz}");
    }
}

#[tokio::test]
async fn a_visit_crossing_local_midnight_belongs_with_all_its_page_views_to_its_start_day() {
    let (rig, key, zone) = small_site("Europe/Berlin").await;
    let day = date!(2026 - 11 - 24);
    let midnight = zone.day_end(day);
    let mut rng = Rng::new(8);
    let v = visitor(2);
    let mut tab = Tab::new(&mut rng, "hand", "example.com", &v);
    let posts = vec![
        tab.pageview(&mut rng, midnight - 10 * MINUTE, "/", None),
        tab.pageview(&mut rng, midnight + 10 * MINUTE, "/pricing", None),
        tab.pageview(&mut rng, midnight + 25 * MINUTE, "/signup", None),
        tab.custom(&mut rng, midnight + 26 * MINUTE, "Signup", None, None),
    ];
    post_at(&rig, posts, midnight + 3 * HOUR).await;
    legacy_tab_ids(&rig, "hand", "tab-across-midnight").await;
    let (status, json) = rig
        .get(
            &key,
            "/api/sites/hand/timeseries?from=2026-11-24&to=2026-11-25&interval=day",
        )
        .await;
    assert_eq!(status, 200, "{json}");
    let rows = json["results"].as_array().unwrap();
    assert_eq!(
        (
            &rows[0]["visitors"],
            &rows[0]["visits"],
            &rows[0]["pageviews"],
            &rows[0]["events"]
        ),
        (
            &Value::from(1),
            &Value::from(1),
            &Value::from(3),
            &Value::from(1)
        ),
        "{json}"
    );
    assert_eq!(
        (&rows[1]["visits"], &rows[1]["pageviews"]),
        (&Value::from(0), &Value::from(0)),
        "{json}"
    );
    let (_, json) = rig
        .get(
            &key,
            "/api/sites/hand/breakdown/exit_page?from=2026-11-24&to=2026-11-24",
        )
        .await;
    assert_eq!(json["results"][0]["value"], "/signup", "{json}");
}

#[tokio::test]
async fn a_visit_spills_at_most_six_hours_past_the_end_of_its_start_day() {
    let (rig, key, zone) = small_site("Europe/Berlin").await;
    let day = date!(2026 - 11 - 24);
    let mut rng = Rng::new(9);
    let v = visitor(3);
    let mut tab = Tab::new(&mut rng, "hand", "example.com", &v);
    // A page view every 20 minutes from 22:05 until 08:05 the next day.
    let mut posts = Vec::new();
    let mut t = zone.day_end(day) - 2 * HOUR + 5 * MINUTE;
    while t <= zone.day_end(day) + 8 * HOUR + 5 * MINUTE {
        posts.push(tab.pageview(&mut rng, t, "/", None));
        t += 20 * MINUTE;
    }
    let now = zone.day_end(day) + 12 * HOUR;
    post_at(&rig, posts, now).await;
    legacy_tab_ids(&rig, "hand", "tab-across-midnight").await;
    let (status, json) = rig
        .get(
            &key,
            "/api/sites/hand/timeseries?from=2026-11-24&to=2026-11-25&interval=day",
        )
        .await;
    assert_eq!(status, 200, "{json}");
    let rows = json["results"].as_array().unwrap();
    // 22:05 .. 05:45 (24 views) is the first visit; 06:05 starts another.
    assert_eq!(
        (&rows[0]["visits"], &rows[0]["pageviews"]),
        (&Value::from(1), &Value::from(24)),
        "{json}"
    );
    assert_eq!(
        (&rows[1]["visits"], &rows[1]["pageviews"]),
        (&Value::from(1), &Value::from(7)),
        "{json}"
    );
    let reference = rig.reference("hand", &zone).await;
    assert_eq!(reference.totals(day, day, "").pageviews, 24);
}

/// Page views every 20 minutes, each its own visit, from two hours before
/// `day` until two hours after it; returns how many fall inside the day.
async fn every_twenty_minutes(rig: &Rig, zone: &Zone, day: Date, seed: u64) -> u64 {
    let mut rng = Rng::new(seed);
    let vs: Vec<Visitor> = (1..=4).map(visitor).collect();
    let (start, end) = (zone.day_start(day), zone.day_end(day));
    let mut posts = Vec::new();
    let mut inside = 0;
    let mut t = start - 2 * HOUR;
    let mut n = 0;
    while t < end + 2 * HOUR {
        let mut tab = Tab::new(&mut rng, "hand", "example.com", &vs[n % vs.len()]);
        posts.push(tab.pageview(&mut rng, t, "/", None));
        if n % 2 == 0 {
            posts.push(tab.custom(&mut rng, t + MINUTE, "Signup", None, None));
        }
        if (start..end).contains(&t) {
            inside += 1;
        }
        t += 20 * MINUTE;
        n += 1;
    }
    post_at(rig, posts, end + 6 * HOUR).await;
    inside
}

async fn check_dst_day(rig: &Rig, key: &str, zone: &Zone, day: Date, labels: &[String], seed: u64) {
    let views = every_twenty_minutes(rig, zone, day, seed).await;
    assert_eq!(views, labels.len() as u64 * 3, "{day}");
    let d = format_date(day);
    let (status, json) = rig
        .get(
            key,
            &format!("/api/sites/hand/timeseries?from={d}&to={d}&interval=hour"),
        )
        .await;
    assert_eq!(status, 200, "{json}");
    let rows = json["results"].as_array().unwrap();
    let got: Vec<&str> = rows.iter().map(|r| r["date"].as_str().unwrap()).collect();
    assert_eq!(
        got,
        labels.iter().map(String::as_str).collect::<Vec<_>>(),
        "{day}"
    );
    for r in rows {
        assert_eq!(r["visits"], 3, "{day}: every local hour has 3 visits: {r}");
    }
    let sum = |f: &str| rows.iter().map(|r| r[f].as_u64().unwrap()).sum::<u64>();
    let (_, json) = rig
        .get(key, &format!("/api/sites/hand/stats?from={d}&to={d}"))
        .await;
    assert_eq!(
        sum("visits"),
        views,
        "{day}: hourly visits add up to the day's"
    );
    assert_eq!(json["results"]["visits"], views, "{day}: {json}");
    assert_eq!(
        sum("pageviews"),
        views,
        "{day}: no page view lost or doubled"
    );
    assert_eq!(json["results"]["pageviews"], views, "{day}");
    assert_eq!(
        sum("events"),
        json["results"]["events"].as_u64().unwrap(),
        "{day}"
    );
    // And the reference agrees bucket by bucket.
    let reference = rig.reference("hand", zone).await;
    let mut c = Check::default();
    let subject = Subject {
        rig,
        site: "hand",
        key,
        zone,
        reference: &reference,
    };
    let q = format!("from={d}&to={d}");
    subject
        .series(&mut c, &q, Some("hour"), "", &reference.hours(day, ""))
        .await;
    c.finish(&format!("{} {day} hours", zone.name()));
}

fn hour_labels(day: &str, hours: &[u32]) -> Vec<String> {
    hours.iter().map(|h| format!("{day} {h:02}:00")).collect()
}

#[tokio::test]
async fn berlin_dst_days_have_23_and_25_hourly_buckets_that_add_up() {
    let (rig, key, zone) = small_site("Europe/Berlin").await;
    assert_eq!(zone.day_hours(date!(2026 - 03 - 29)), 23);
    let spring: Vec<u32> = [0, 1].into_iter().chain(3..24).collect();
    check_dst_day(
        &rig,
        &key,
        &zone,
        date!(2026 - 03 - 29),
        &hour_labels("2026-03-29", &spring),
        1,
    )
    .await;
    let autumn: Vec<u32> = [0, 1, 2, 2].into_iter().chain(3..24).collect();
    check_dst_day(
        &rig,
        &key,
        &zone,
        date!(2026 - 10 - 25),
        &hour_labels("2026-10-25", &autumn),
        2,
    )
    .await;
}

#[tokio::test]
async fn new_york_dst_days_have_23_and_25_hourly_buckets_that_add_up() {
    let (rig, key, zone) = small_site("America/New_York").await;
    let spring: Vec<u32> = [0, 1].into_iter().chain(3..24).collect();
    check_dst_day(
        &rig,
        &key,
        &zone,
        date!(2026 - 03 - 08),
        &hour_labels("2026-03-08", &spring),
        3,
    )
    .await;
    let autumn: Vec<u32> = [0, 1, 1].into_iter().chain(2..24).collect();
    check_dst_day(
        &rig,
        &key,
        &zone,
        date!(2026 - 11 - 01),
        &hour_labels("2026-11-01", &autumn),
        4,
    )
    .await;
}

#[tokio::test]
async fn a_visit_without_page_views_has_no_entry_or_exit_page() {
    // A click 45 minutes after the last page view starts a visit with no
    // page view: docs/API.md takes entry and exit pages from the visit's
    // first and last page view, and a visit lacking a property gives no row.
    let (rig, key, zone) = small_site("UTC").await;
    let t = zone.day_start(date!(2026 - 11 - 25)) + 9 * HOUR;
    let mut rng = Rng::new(10);
    let v = visitor(1);
    let mut tab = Tab::new(&mut rng, "hand", "example.com", &v);
    let posts = vec![
        tab.pageview(&mut rng, t, "/docs", None),
        tab.click(
            &mut rng,
            t + 45 * MINUTE,
            "https://github.com/x",
            "outbound",
        ),
    ];
    post_at(&rig, posts, t + 5 * HOUR).await;
    let (_, stats) = rig
        .get(&key, "/api/sites/hand/stats?from=2026-11-25&to=2026-11-25")
        .await;
    assert_eq!(stats["results"]["visits"], 2, "{stats}");
    for dim in ["entry_page", "exit_page"] {
        let (status, json) = rig
            .get(
                &key,
                &format!("/api/sites/hand/breakdown/{dim}?from=2026-11-25&to=2026-11-25"),
            )
            .await;
        assert_eq!(status, 200);
        let visits: u64 = json["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["visits"].as_u64().unwrap())
            .sum();
        assert_eq!(
            visits, 1,
            "{dim}: only the visit with a page view has one: {json}"
        );
    }
}

/// The value sum of an `event` or `goal` row (`total_value`); `names` is
/// kept for the callers' signature and unused now that rows are named.
fn row_sum(row: &Value, _names: &BTreeMap<&str, f64>) -> Option<f64> {
    row["total_value"].as_f64()
}

#[tokio::test]
async fn event_rows_carry_the_event_name_as_their_value() {
    let (rig, key, zone) = small_site("UTC").await;
    let t = zone.day_start(date!(2026 - 11 - 25)) + 9 * HOUR;
    let mut rng = Rng::new(13);
    let v = visitor(1);
    let mut tab = Tab::new(&mut rng, "hand", "example.com", &v);
    let posts = vec![
        tab.pageview(&mut rng, t, "/signup", None),
        tab.custom(&mut rng, t + MINUTE, "Signup", Some(10.0), None),
    ];
    post_at(&rig, posts, t + 5 * HOUR).await;
    for dim in ["event", "goal"] {
        let (status, json) = rig
            .get(
                &key,
                &format!("/api/sites/hand/breakdown/{dim}?from=2026-11-25&to=2026-11-25"),
            )
            .await;
        assert_eq!(status, 200, "{json}");
        assert_eq!(
            json["results"][0]["value"], "Signup",
            "{dim}: every row has `value`, the dimension value: {json}"
        );
    }
}

#[tokio::test]
async fn rows_equal_in_visitors_visits_views_and_events_are_ordered_by_value() {
    let (rig, key, zone) = small_site("UTC").await;
    let t = zone.day_start(date!(2026 - 11 - 25)) + 9 * HOUR;
    let mut rng = Rng::new(11);
    let v = visitor(1);
    let mut tab = Tab::new(&mut rng, "hand", "example.com", &v);
    let posts = vec![
        tab.pageview(&mut rng, t, "/shop", None),
        tab.custom(&mut rng, t + MINUTE, "Alpha", Some(1.0), None),
        tab.custom(&mut rng, t + 2 * MINUTE, "Beta", Some(100.0), None),
    ];
    post_at(&rig, posts, t + 5 * HOUR).await;
    let (_, json) = rig
        .get(
            &key,
            "/api/sites/hand/breakdown/event?from=2026-11-25&to=2026-11-25",
        )
        .await;
    let names = BTreeMap::from([("Alpha", 1.0), ("Beta", 100.0)]);
    let sums: Vec<Option<f64>> = json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| row_sum(r, &names))
        .collect();
    assert_eq!(
        sums,
        vec![Some(100.0), Some(1.0)],
        "Beta (value 100) before Alpha (value 1): {json}"
    );
}

#[tokio::test]
async fn a_page_filter_counts_only_passing_page_views_as_page_goal_conversions() {
    // "A page filter ... counts only those page views": a /pricing view in a
    // visit kept for its /blog/ view is not counted, so it converts nothing.
    let (rig, key, zone) = small_site("UTC").await;
    let t = zone.day_start(date!(2026 - 11 - 25)) + 9 * HOUR;
    let mut rng = Rng::new(12);
    let v = visitor(1);
    let mut tab = Tab::new(&mut rng, "hand", "example.com", &v);
    let posts = vec![
        tab.pageview(&mut rng, t, "/blog/a", None),
        tab.pageview(&mut rng, t + MINUTE, "/pricing", None),
    ];
    post_at(&rig, posts, t + 5 * HOUR).await;
    let q = format!(
        "from=2026-11-25&to=2026-11-25&filters={}",
        enc("page==/blog/*")
    );
    let (_, stats) = rig.get(&key, &format!("/api/sites/hand/stats?{q}")).await;
    assert_eq!(stats["results"]["pageviews"], 1, "{stats}");
    let (status, json) = rig
        .get(&key, &format!("/api/sites/hand/breakdown/goal?{q}"))
        .await;
    assert_eq!(status, 200, "{json}");
    let conversions: u64 = json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["conversions"].as_u64().unwrap())
        .sum();
    assert_eq!(
        (json["meta"]["total_rows"].as_u64(), conversions),
        (Some(1), 1),
        "only \"Read blog\" converts, once: {json}"
    );
}

#[tokio::test]
async fn realtime_counts_visitors_with_a_tab_present_on_their_latest_page() {
    let (rig, key, _) = small_site("Europe/Berlin").await;
    let now = query_now();
    let posts = realtime_posts("hand", "example.com", now);
    rig.post_all(&posts).await;
    rig.clock.set(now);
    let (status, json) = rig.get(&key, "/api/sites/hand/realtime").await;
    assert_eq!(status, 200, "{json}");
    // a, b, c, and f shown again; not d (gone) nor e (hidden).
    assert_eq!(json["visitors"], 4, "{json}");
    let pages: BTreeMap<&str, u64> = json["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["value"].as_str().unwrap(),
                p["visitors"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        pages,
        BTreeMap::from([
            ("/signup", 1),
            ("/", 1),
            ("/blog/rust-tips", 1),
            ("/docs", 1)
        ]),
        "{json}"
    );
    assert_eq!(json["meta"]["window_seconds"], 300);
}

/// The live view's cost (BENCHMARKS.md, "The live view"): 300 visits over
/// 40 minutes of one hour, each a page view and a leave, every third shown
/// again and hidden again (a show and a leave more), every fifth still
/// open; then one realtime read. Writes are one unit per beacon; the read
/// is one Query of the hour's partition, its units the hour's items.
#[tokio::test]
async fn the_live_view_costs_a_write_per_beacon_and_one_query_per_read() {
    let (rig, key, _) = small_site("UTC").await;
    let hour = query_now();
    let now = hour + 40 * MINUTE + 30_000;
    let mut rng = Rng::new(22);
    let mut posts = Vec::new();
    let mut open = 0;
    for i in 0..300i64 {
        let v = Visitor {
            ip: format!("10.0.{}.{}", i / 200, i % 200 + 1),
            user_agent: BROWSERS[(i % 9) as usize].1,
            tz: Some("UTC"),
            screen: Some((1440, 900)),
        };
        let mut tab = Tab::new(&mut rng, "hand", "example.com", &v);
        let t = hour + i * 8_000;
        posts.push(tab.pageview(&mut rng, t, "/", None));
        let still_open = i % 5 == 0;
        if i % 3 == 0 {
            posts.push(tab.leave(&mut rng, t + 20_000, 20, 50));
            posts.push(tab.show(&mut rng, t + 60_000));
            if !still_open {
                posts.push(tab.leave(&mut rng, t + 90_000, 30, 80));
            }
        } else if !still_open {
            posts.push(tab.leave(&mut rng, t + 20_000, 20, 50));
        }
        // Counted now: open, and heard from within five minutes.
        let last = if i % 3 == 0 { t + 60_000 } else { t };
        if still_open && last > now - 5 * MINUTE {
            open += 1;
        }
    }
    let beacons = posts.len();
    rig.h.counter.reset();
    post_at(&rig, posts, now).await;
    let writes = rig.h.counter.write_units();
    let puts = rig.h.counter.by_operation().get("PutItem").copied();
    // Warm the key and site caches, then measure one read.
    let _ = rig.get(&key, "/api/sites/hand/realtime").await;
    rig.h.counter.reset();
    let (status, json) = rig.get(&key, "/api/sites/hand/realtime").await;
    assert_eq!(status, 200, "{json}");
    let ops = rig.h.counter.by_operation();
    let read_units = rig.h.counter.read_units();
    eprintln!(
        "live view: 300 visits, {beacons} beacons, {writes} write units ({:.2} a visit); \
         realtime: {ops:?}, {read_units} read units, {} visitors",
        writes / 300.0,
        json["visitors"]
    );
    assert_eq!(json["visitors"], open, "{json}");
    assert!(open > 0);
    // And the day's salt, agreed on once.
    assert_eq!(puts, Some(beacons as u64 + 1));
    assert_eq!(writes, beacons as f64, "one unit per beacon");
    // One Query of the hour's partition, and the key's GetItem.
    assert_eq!(ops.get("Query"), Some(&1), "{ops:?}");
    assert_eq!(rig.h.counter.total(), 2, "{ops:?}");
    assert!(read_units > 0.0);
}

// ---------------------------------------------------------------- auth and bad input

#[tokio::test]
async fn requests_without_a_valid_key_get_json_401_or_403_and_never_see_the_key() {
    let mut rig = Rig::new().await;
    let good = rig.site("blog", "example.com", "Europe/Berlin").await;
    let other = rig.site("shop", "shop.example", "America/New_York").await;
    let revoked = rig.key("blog", Some(5)).await;
    let other_revoked = rig.key("shop", Some(5)).await;
    let unknown = auth::key_from_bytes("blog", &[0xab; 20]);
    rig.clock.set(query_now());
    let uri = "/api/sites/blog/stats?period=7d";
    let cases: Vec<(Option<String>, u16, &str, Option<&str>)> = vec![
        (None, 401, "missing_api_key", None),
        (
            Some("Basic dXNlcjpwYXNz".into()),
            401,
            "malformed_authorization",
            None,
        ),
        (
            Some("Bearer tk_nothex".into()),
            401,
            "malformed_authorization",
            None,
        ),
        (
            Some(format!("Token {good}")),
            401,
            "malformed_authorization",
            Some(&good),
        ),
        (
            Some(good[..20].to_owned()),
            401,
            "malformed_authorization",
            Some(&good),
        ),
        (
            Some(format!("Bearer {unknown}")),
            401,
            "invalid_api_key",
            Some(&unknown),
        ),
        (
            Some(format!("Bearer {revoked}")),
            401,
            "invalid_api_key",
            Some(&revoked),
        ),
        (
            Some(format!("Bearer {other}")),
            403,
            "forbidden",
            Some(&other),
        ),
        (
            Some(format!("Bearer {other_revoked}")),
            401,
            "invalid_api_key",
            Some(&other_revoked),
        ),
    ];
    for (header, status, code, secret) in &cases {
        for endpoint in [
            "stats?period=7d",
            "timeseries",
            "breakdown/page",
            "realtime",
        ] {
            let uri = format!("/api/sites/blog/{endpoint}");
            let (got, json, body) = rig.get_raw(&uri, header.as_deref()).await;
            assert_eq!(
                (got, json["error"]["code"].as_str()),
                (*status, Some(*code)),
                "{header:?} {uri}: {body}"
            );
            assert!(
                json["error"]["message"]
                    .as_str()
                    .is_some_and(|m| !m.is_empty()),
                "{body}"
            );
            if let Some(secret) = secret {
                let random = &secret[3..43];
                assert!(!body.contains(random), "the key leaks into {body}");
            }
        }
    }
    let (status, json, body) = rig.get_raw(uri, Some(&format!("Bearer {good}"))).await;
    assert_eq!(status, 200, "{json}");
    assert!(!body.contains(&good[3..43]));
    let (status, _, _) = rig
        .get_raw("/api/sites/shop/stats", Some(&format!("Bearer {other}")))
        .await;
    assert_eq!(status, 200);
}

macro_rules! bad_query {
    ($($name:ident: $path:expr => $code:expr;)*) => {$(
        #[tokio::test]
        async fn $name() {
            let (rig, key, _) = small_site("Europe/Berlin").await;
            rig.clock.set(query_now());
            let (status, json, body) = rig
                .get_raw(&format!("/api/sites/hand/{}", $path), Some(&format!("Bearer {key}")))
                .await;
            assert_eq!((status, json["error"]["code"].as_str()), (400, Some($code)), "{body}");
            assert!(json["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
        }
    )*};
}

bad_query! {
    rejects_an_unknown_dimension: "breakdown/shoe_size" => "unknown_dimension";
    rejects_an_unknown_metric: "stats?metrics=visitors,foo" => "unknown_metric";
    rejects_an_impossible_date: "stats?from=2026-02-30&to=2026-03-01" => "invalid_date";
    rejects_a_sloppy_date: "stats?from=2026-2-1&to=2026-03-01" => "invalid_date";
    rejects_from_after_to: "stats?from=2026-11-10&to=2026-11-01" => "from_after_to";
    rejects_a_range_over_the_maximum: "stats?from=2010-01-01&to=2026-11-01" => "range_too_long";
    rejects_half_a_range: "stats?from=2026-11-01" => "incomplete_range";
    rejects_an_unknown_period: "stats?period=fortnight" => "unknown_period";
    rejects_a_malformed_filter: "stats?filters=page%3D%2Fx" => "malformed_filter";
    rejects_a_filter_without_a_value: "stats?filters=page%3D%3D" => "malformed_filter";
    rejects_an_unknown_filter_dimension: "stats?filters=shoe%3D%3D42" => "unknown_filter_dimension";
    rejects_an_unknown_interval: "timeseries?interval=minute" => "unknown_interval";
    rejects_hours_over_a_long_range: "timeseries?from=2026-01-01&to=2026-03-01&interval=hour" => "interval_too_fine";
    rejects_an_unknown_comparison: "stats?compare=tomorrow" => "unknown_comparison";
    rejects_a_zero_limit: "breakdown/page?limit=0" => "invalid_number";
    rejects_an_unknown_parameter: "stats?colour=blue" => "unknown_parameter";
}

#[tokio::test]
async fn the_range_maximum_is_3660_days_inclusive() {
    let (rig, key, _) = small_site("UTC").await;
    rig.clock.set(query_now());
    // 2016-11-23 .. 2026-11-30 is 3,660 days: the range is accepted (the
    // hourly interval is what is refused, before anything is read);
    // 2016-11-22 .. is 3,661 days: too long.
    let (status, json) = rig
        .get(
            &key,
            "/api/sites/hand/timeseries?from=2016-11-23&to=2026-11-30&interval=hour",
        )
        .await;
    assert_eq!(
        (status, json["error"]["code"].as_str()),
        (400, Some("interval_too_fine")),
        "{json}"
    );
    let (status, json) = rig
        .get(
            &key,
            "/api/sites/hand/timeseries?from=2016-11-22&to=2026-11-30&interval=hour",
        )
        .await;
    assert_eq!(
        (status, json["error"]["code"].as_str()),
        (400, Some("range_too_long")),
        "{json}"
    );
}

#[tokio::test]
async fn metrics_selects_the_stats_fields() {
    let (rig, key, _) = small_site("UTC").await;
    rig.clock.set(query_now());
    let (status, json) = rig
        .get(
            &key,
            "/api/sites/hand/stats?period=7d&metrics=visitors,pageviews&compare=previous",
        )
        .await;
    assert_eq!(status, 200, "{json}");
    let keys = |v: &Value| -> BTreeSet<String> { v.as_object().unwrap().keys().cloned().collect() };
    let want: BTreeSet<String> = ["visitors", "pageviews"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(keys(&json["results"]), want);
    assert_eq!(keys(&json["comparison"]), want);
    assert_eq!(keys(&json["change"]), want);
}

/// A long range is streamed, not held: ten compacted days of a site read
/// for a daily series hold, at most, about an hour of events as rows and
/// two local days of visits (the scan's `held`), far below one day's
/// events; parts are fetched a few at a time within the prefetch budget;
/// and the answers, in one window or in windows side by side, are the
/// batch fold of the same events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_range_is_streamed_holding_an_hour_of_rows_and_a_day_of_visits() {
    use tally_core::engine::aggregate::{FoldSpec, fold};
    use tally_core::engine::filter::Filter;
    use tally_core::engine::range::DateRange;
    use tally_query::read::{Buckets, Fold, Request, read};
    let h = Harness::start().await;
    let first = date!(2026 - 03 - 02);
    let last = date!(2026 - 03 - 11);
    let zone = Zone::parse("Europe/Berlin").unwrap();
    let mut site = Site::new("long.example", &["long.example".into()], zone.name(), 0).unwrap();
    site.retention_days = 3650;
    site.created_at = zone.day_start(first);
    h.store.create_site(&site).await.unwrap();
    let days = (last - first).whole_days() + 1;
    let seeded = tally_tests::seed::traffic(&site, zone.day_start(first), days, 2_500, 19);
    tally_tests::seed::store_events(&h.store, &site, &seeded).await;
    let now = zone.day_end(last) + 3 * tally_core::DAY_MS;
    let one = time::Duration::days(1);
    tally_rollup::compact::compact_days(&h.store, &site, now, first - one, last + one)
        .await
        .unwrap();

    // What a day and an hour hold, at most.
    let mut events: Vec<tally_core::ingest::event::Event> =
        seeded.into_iter().map(|s| s.event).collect();
    events.sort_by_key(|e| e.ts);
    let mut per_day: BTreeMap<Date, usize> = BTreeMap::new();
    let mut per_hour: BTreeMap<i64, usize> = BTreeMap::new();
    for e in &events {
        *per_day.entry(zone.local_date(e.ts)).or_default() += 1;
        *per_hour.entry(e.ts / tally_core::HOUR_MS).or_default() += 1;
    }
    let busiest_day = per_day.values().copied().max().unwrap();
    let busiest_hour = per_hour.values().copied().max().unwrap();
    // The batch fold of the same events, by local day.
    let visits = tally_core::engine::visit::visits(&events, &zone);
    let filter = Filter::parse("country!=DE").unwrap();
    let spec = FoldSpec {
        dims: &[tally_core::engine::dimension::Dimension::Page],
        props: &[],
        goals: &[],
        filter: &filter,
        top_n: None,
    };
    let expected = fold(&visits, &spec, |s| {
        let d = zone.local_date(s.start);
        (first <= d && d <= last).then_some(d)
    });

    let query = DynamoQuery::new(h.store.clone());
    for (workers, prefetch) in [(1, 64 * 1024), (3, 256 * 1024)] {
        let config = tally_query::Config {
            read_workers: workers,
            min_window_bytes: 0,
            prefetch_bytes: prefetch,
            ..tally_query::Config::default()
        };
        let r = Request {
            site: &site,
            zone: &zone,
            range: DateRange {
                from: first,
                to: last,
            },
            goals: &[],
            goals_fp: "",
            now,
            config: &config,
            deadline: None,
        };
        let dims = [tally_core::engine::dimension::Dimension::Page];
        h.counter.reset();
        let mut got = read(&query, &r, &[Fold::new(&filter, Buckets::Days).dims(&dims)])
            .await
            .unwrap();
        let ops = h.counter.by_operation();
        let streamed = got.streamed();
        assert_eq!(streamed.windows, workers, "{streamed:?}");
        assert!(streamed.events >= events.len() as u64, "{streamed:?}");
        let held = streamed.most_held;
        assert!(
            held.hour_rows <= 2 * busiest_hour && held.hour_rows + held.open_rows < busiest_day / 4,
            "{held:?}: the busiest hour has {busiest_hour} events, the busiest day {busiest_day}"
        );
        assert!(held.days <= 2, "{held:?}");
        // The parts come a few at a time (a request never asks for more
        // than the budget; here a day's part each, or two).
        let batches = ops.get("BatchGetItem").copied().unwrap_or(0);
        let least = if workers == 1 {
            days as u64
        } else {
            workers as u64 + 1
        };
        assert!(batches >= least, "{ops:?}");
        assert_eq!(got.take(0).days(), expected, "{workers} windows");
        assert!(got.warnings().is_empty());
    }
}
