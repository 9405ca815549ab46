//! Saved segments (issue 23) through the query function and the real
//! client: `segment=ID` answers what the segment's filters passed directly
//! answer and what an independent recount of the raw events says, over
//! days the job compacted and rolled up; Plausible's `["is", "segment",
//! [ID]]`; a personal segment is its owner's only; a shared link locked to
//! a segment never reads wider than it, and stops working once its
//! segment is gone.

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use tally_core::account::share::ShareSpec;
use tally_core::ingest::site::Site;
use tally_core::product::saved_segment::SegmentSpec;
use tally_core::{DAY_MS, HOUR_MS};
use tally_tests::reference::Reference;
use tally_tests::{Api, Harness, status_and_json};
use time::macros::date;

struct Rig {
    h: Harness,
    api: Api,
    site: Site,
    reference: Reference,
    first: time::Date,
    last: time::Date,
}

/// A Berlin site with eight days of generated traffic, the job run as in
/// production (so older days are segments and rollups), a read key.
async fn rig() -> Rig {
    let h = Harness::start().await;
    let first = date!(2026 - 03 - 02);
    let zone = tally_core::time::zone::Zone::parse("Europe/Berlin").unwrap();
    let mut site = Site::new("seg.example", &["seg.example".into()], zone.name(), 0).unwrap();
    site.retention_days = 3650;
    site.created_at = zone.day_start(first);
    h.store.create_site(&site).await.unwrap();
    let seeded = tally_tests::seed::traffic(&site, zone.day_start(first), 8, 60, 23);
    tally_tests::seed::store_events(&h.store, &site, &seeded).await;
    let now = zone.day_start(first) + 8 * DAY_MS + 10 * HOUR_MS;
    let mut at = zone.day_start(first) + 26 * HOUR_MS;
    while at < now {
        tally_tests::run_job(&h.store, at).await;
        at += DAY_MS;
    }
    let key = tally_tests::new_key(&h.store, &site.id, 7).await;
    let events = seeded.into_iter().map(|s| s.event).collect();
    let reference = Reference::new(events, zone, Vec::new());
    let api = Api {
        query: tally_query::store::DynamoQuery::new(h.store.clone()),
        site: site.id.clone(),
        key,
        now,
    };
    Rig {
        h,
        api,
        site,
        reference,
        first,
        last: date!(2026 - 03 - 09),
    }
}

/// Stores a segment as the CLI and the console build it.
async fn save(rig: &Rig, id: u32, filter: &str, owner: Option<&str>) -> String {
    let spec = SegmentSpec {
        name: format!("s{id}"),
        filter: filter.into(),
        personal: owner.is_some(),
    };
    let segment = spec.build(id, owner.unwrap_or("cli"), 0).unwrap();
    rig.h
        .store
        .put_saved_segment(&rig.site.id, &segment)
        .await
        .unwrap();
    segment.id
}

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The most common page path and browser of the traffic.
fn common(r: &Reference) -> (String, String) {
    let top = |f: &dyn Fn(&tally_core::ingest::event::Event) -> String| {
        let mut counts = std::collections::BTreeMap::<String, usize>::new();
        for e in &r.events {
            *counts.entry(f(e)).or_default() += 1;
        }
        counts.into_iter().max_by_key(|(_, n)| *n).unwrap().0
    };
    (top(&|e| e.path.clone()), top(&|e| e.browser.clone()))
}

#[tokio::test]
async fn a_segments_report_equals_its_filters_and_a_recount_of_the_raw_events() {
    let rig = rig().await;
    let (path, browser) = common(&rig.reference);
    let filter = format!("browser=={browser};page!={path}");
    let id = save(&rig, 11, &filter, None).await;
    let period = format!("from={}&to={}", rig.first, rig.last);
    let default = tally_query::Config::default();
    for report in ["stats", "timeseries", "breakdown/source", "breakdown/page"] {
        let by_segment = rig
            .api
            .get(&default, &format!("{report}?{period}&segment={id}"))
            .await;
        let direct = rig
            .api
            .get(
                &default,
                &format!("{report}?{period}&filters={}", enc(&filter)),
            )
            .await;
        assert_eq!(by_segment["results"], direct["results"], "{report}");
    }
    let stats = rig
        .api
        .get(&default, &format!("stats?{period}&segment={id}"))
        .await;
    let want = rig.reference.totals(rig.first, rig.last, &filter);
    assert!(want.visits > 0, "the segment keeps some visits");
    assert_eq!(stats["results"]["visits"], json!(want.visits), "{stats}");
    assert_eq!(stats["results"]["pageviews"], json!(want.pageviews));
    assert_eq!(stats["results"]["visitors"], json!(want.visitors));
    // A segment and the request's own filters: their conditions ANDed.
    let narrower = format!("page=={path}");
    let both = rig
        .api
        .get(
            &default,
            &format!("stats?{period}&segment={id}&filters={}", enc(&narrower)),
        )
        .await;
    let want = rig
        .reference
        .totals(rig.first, rig.last, &format!("{filter};{narrower}"));
    assert_eq!(both["results"]["visits"], json!(want.visits));
    // Unknown and personal segments are not a key's.
    let mine = save(&rig, 12, "page==/", Some("u-someone")).await;
    for unknown in ["999", mine.as_str()] {
        let (status, body) = rig
            .api
            .call(&default, &format!("stats?{period}&segment={unknown}"))
            .await;
        assert_eq!(status, 404, "{body}");
        assert_eq!(body["error"]["code"], "unknown_segment");
    }
}

#[tokio::test]
async fn the_stats_api_takes_plausibles_segment_filter() {
    let rig = rig().await;
    let config = tally_query::Config::default();
    let (_, browser) = common(&rig.reference);
    let id = save(&rig, 21, &format!("browser=={browser}"), None).await;
    let range = json!([rig.first.to_string(), rig.last.to_string()]);
    let query = |filters: Value| {
        json!({"metrics": ["visitors", "visits", "pageviews"], "date_range": range,
               "dimensions": ["visit:source"], "filters": filters})
    };
    let direct = rig
        .api
        .v2(&config, query(json!([["is", "visit:browser", [browser]]])))
        .await;
    let numeric: u64 = id.parse().unwrap();
    for form in [json!(numeric), json!(id)] {
        let by_segment = rig
            .api
            .v2(&config, query(json!([["is", "segment", [form]]])))
            .await;
        assert_eq!(by_segment["results"], direct["results"]);
        assert_eq!(
            by_segment["query"]["filters"],
            json!([["is", "segment", [form]]])
        );
    }
    let unknown = query(json!([["is", "segment", [424242]]]));
    let mut body = unknown.clone();
    body["site_id"] = json!(rig.site.id);
    let request = http::Request::builder()
        .method("POST")
        .uri("/api/v2/query")
        .header("authorization", format!("Bearer {}", rig.api.key))
        .body(lambda_http::Body::Text(body.to_string()))
        .unwrap();
    let clock = tally_store::clock::ManualClock::at(rig.api.now);
    let (status, answer) =
        status_and_json(tally_query::handle_with(&rig.api.query, &clock, &config, request).await);
    assert_eq!(status, 400);
    assert_eq!(
        answer["error"],
        "Invalid filters. Some segments don't exist or aren't accessible."
    );
}

#[tokio::test]
async fn a_segment_locked_link_never_reads_wider_than_its_segment() {
    let rig = rig().await;
    let config = tally_query::Config::default();
    let (path, browser) = common(&rig.reference);
    let narrow = format!("browser=={browser}");
    let id = save(&rig, 31, &narrow, None).await;
    let broad = save(&rig, 32, "page~=/", None).await;
    let spec = ShareSpec {
        segment: Some(id.clone()),
        ..ShareSpec::default()
    };
    let (share, token) = spec
        .build(&rig.site.id, &[1; 16], &[9; 20], None, rig.api.now)
        .unwrap();
    rig.h.store.put_share(&rig.site.id, &share).await.unwrap();
    let link = Api {
        query: tally_query::store::DynamoQuery::new(rig.h.store.clone()),
        site: rig.site.id.clone(),
        key: token,
        now: rig.api.now,
    };
    let period = format!("from={}&to={}", rig.first, rig.last);
    let visits = |body: &Value| body["results"]["visits"].as_u64().unwrap();
    let locked = link.get(&config, &format!("stats?{period}")).await;
    let want = rig.reference.totals(rig.first, rig.last, &narrow);
    assert_eq!(visits(&locked), want.visits);
    // A contradicting filter, a broader one, a broader segment: never more.
    for extra in [
        format!("filters={}", enc(&format!("browser!={browser}"))),
        format!("filters={}", enc("page~=/")),
        format!("segment={broad}"),
        format!("filters={}", enc(&format!("page=={path}"))),
    ] {
        let got = link.get(&config, &format!("stats?{period}&{extra}")).await;
        assert!(visits(&got) <= want.visits, "{extra}: {got}");
    }
    let contradicted = link
        .get(
            &config,
            &format!(
                "stats?{period}&filters={}",
                enc(&format!("browser!={browser}"))
            ),
        )
        .await;
    assert_eq!(visits(&contradicted), 0);
    let (status, _) = link.call(&config, "realtime").await;
    assert_eq!(status, 403, "realtime is not narrowed, so not shown");
    // Its segment gone (the console and CLI refuse this while the link
    // lives), the link stops working rather than widening.
    rig.h
        .store
        .delete_saved_segment(&rig.site.id, &id)
        .await
        .unwrap();
    let (status, body) = link.call(&config, &format!("stats?{period}")).await;
    assert_eq!(status, 410, "{body}");
    assert_eq!(body["error"]["code"], "share_segment_gone");
}
