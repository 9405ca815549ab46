//! Deleting a site deletes it (issue 29, item 5): after `DELETE
//! sites/{site}` and the job's sweep, a scan of the table finds no item of
//! the site (raw hours, segments, rollups, conversions, settings,
//! recipients, alerts with their webhook secret, the audit log, keys,
//! links, members), a neighbour keeps every item, the id cannot be taken
//! while the sweep is pending, and a new site with the same id starts
//! empty. An event a warm ingest instance stores after the delete is swept
//! too.

use serde_json::{Value, json};
use tally_core::product::deletion::GRACE_MS;
use tally_core::{DAY_MS, MINUTE_MS};
use tally_ingest::store::DynamoIngest;
use tally_query::store::DynamoQuery;
use tally_store::clock::ManualClock;
use tally_store::item::Item;
use tally_store::salt::SharedSalt;
use tally_tests::console::{Browser, Console, Now, owner};
use tally_tests::seed::{store_events, traffic};
use tally_tests::{Api, collect_request, run_job, status_and_json};

const GONE: &str = "gone";
const KEPT: &str = "kept";
const CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

/// Whether a stored item belongs to site `id`: under one of its
/// partitions, its settings or deletion record, or a user's membership.
fn of_site(item: &Item, id: &str) -> bool {
    let text = |name: &str| {
        item.get(name)
            .and_then(|v| v.as_s().ok())
            .cloned()
            .unwrap_or_default()
    };
    let (pk, sk) = (text("pk"), text("sk"));
    let own = format!("SITE#{id}");
    pk == own
        || pk.starts_with(&format!("{own}#"))
        || (pk == "SITES" && (sk == own || sk == format!("GONE#{id}")))
        || (pk.starts_with("USER#") && sk == format!("MEMBER#{id}"))
}

async fn count_of(console: &Console, id: &str) -> usize {
    console
        .scan()
        .await
        .iter()
        .filter(|item| of_site(item, id))
        .count()
}

async fn ok(console: &Console, b: &mut Browser, method: &str, path: &str, body: Value) -> Value {
    let (status, answer) = b.call(console, method, path, Some(body)).await;
    assert!(
        (200..300).contains(&status),
        "{method} {path}: {status} {answer}"
    );
    answer
}

/// A site with everything a real one gathers: traffic compacted and
/// rolled up, settings of every kind, keys, links, an invite, and
/// conversions with an affiliate.
async fn furnish(console: &Console, b: &mut Browser, id: &str) {
    let domain = format!("{id}.example");
    ok(
        console,
        b,
        "POST",
        "sites",
        json!({"id": id, "domains": [domain], "timezone": "Europe/Berlin"}),
    )
    .await;
    let now = console.clock.now_ms();
    let site = console.store.site(id).await.unwrap().unwrap();
    store_events(
        &console.store,
        &site,
        &traffic(&site, now - 5 * DAY_MS, 5, 30, 3),
    )
    .await;
    let base = format!("sites/{id}");
    for (path, body) in [
        ("goals", json!({"event": "Signup"})),
        ("funnels", json!({"name": "F", "steps": ["/", "/pricing"]})),
        ("segments", json!({"name": "DE", "filter": "country==DE"})),
        (
            "annotations",
            json!({"date": "2026-03-01", "text": "launch"}),
        ),
        (
            "email-reports",
            json!({"email": "boss@example.com", "weekly": true}),
        ),
        (
            "affiliates",
            json!({"slug": "bob", "fixed": "5.00", "currency": "usd"}),
        ),
        ("keys", json!({"scope": "read"})),
        ("shares", json!({"label": "board"})),
        ("invites", json!({"role": "viewer"})),
    ] {
        ok(console, b, "POST", &format!("{base}/{path}"), body).await;
    }
    ok(
        console,
        b,
        "PUT",
        &format!("{base}/alerts"),
        json!({"enabled": true, "webhook_url": "https://hooks.example.com/tally"}),
    )
    .await;
    let writer = tally_tests::write_key(&console.store, id, 9).await;
    let api = Api {
        query: DynamoQuery::new(console.store.clone()),
        site: id.into(),
        key: writer.clone(),
        now,
    };
    for order in ["A-1", "A-2"] {
        let body = format!(
            r#"{{"order_id":"{order}","amount":"20.00","currency":"USD","affiliate":"bob"}}"#
        );
        let (status, answer) = api.post(&writer, "conversions", &body).await;
        assert_eq!(status, 201, "{answer}");
    }
    Box::pin(run_job(&console.store, now)).await;
}

#[tokio::test]
async fn a_deleted_site_leaves_no_item_and_its_id_starts_empty() {
    let console = Console::start().await;
    let mut b = owner(&console).await;
    // Boxed: each furnishing is a deep future (debug builds).
    Box::pin(furnish(&console, &mut b, GONE)).await;
    Box::pin(furnish(&console, &mut b, KEPT)).await;
    let start = console.clock.now_ms();

    // A warm ingest instance holds the site in its cache.
    let ingest = DynamoIngest::new(console.store.clone(), SharedSalt::new());
    let ingest_config = tally_ingest::Config::default();
    let beacon = |n: u32| {
        collect_request(
            &json!({"s": GONE, "u": "https://gone.example/after", "eid": format!("late{n:08}")})
                .to_string(),
            "203.0.113.7",
            CHROME,
        )
    };
    let clock = ManualClock::at(start);
    let (status, answer) =
        status_and_json(tally_ingest::handle(&ingest, &clock, &ingest_config, beacon(1)).await);
    assert_eq!((status, answer["status"].clone()), (202, json!("accepted")));

    let kept_before = count_of(&console, KEPT).await;
    assert!(count_of(&console, GONE).await > 100);

    let (status, answer) = b.call(&console, "DELETE", "sites/gone", None).await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer["stage"], "waiting");
    assert_eq!(answer["sweep_after"], json!(start + GRACE_MS));

    // The id is held: neither the console nor the CLI's store call takes it.
    let (status, answer) = b
        .call(
            &console,
            "POST",
            "sites",
            Some(json!({"id": GONE, "domains": ["gone.example"]})),
        )
        .await;
    assert_eq!(
        (status, answer["error"]["code"].clone()),
        (409, json!("site_deleting"))
    );
    let site =
        tally_core::ingest::site::Site::new(GONE, &["gone.example".into()], "UTC", 0).unwrap();
    assert!(console.store.create_site(&site).await.is_err());
    let (_, list) = b.call(&console, "GET", "sites", None).await;
    assert_eq!(list["deleting"][0]["id"], GONE);
    assert!(
        list["sites"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["id"] != GONE)
    );

    // The warm instance still takes a beacon after the delete; it lands in
    // the table, and the sweep removes it too.
    let late = ManualClock::at(start + 30_000);
    let (status, _) =
        status_and_json(tally_ingest::handle(&ingest, &late, &ingest_config, beacon(2)).await);
    assert_eq!(status, 202);

    // Before the grace nothing is swept.
    let report = Box::pin(run_job(&console.store, start + MINUTE_MS)).await;
    assert_eq!(report.purged.pending, vec![GONE.to_owned()]);
    let left = count_of(&console, GONE).await;
    assert!(left > 100, "{left}");

    // After it, every item goes, and the count removed is the count left.
    let report = Box::pin(run_job(&console.store, start + GRACE_MS + MINUTE_MS)).await;
    // The deletion record itself is not among the removed items.
    assert_eq!(
        report.purged.finished,
        vec![(GONE.to_owned(), left as u64 - 1)]
    );
    assert_eq!(count_of(&console, GONE).await, 0);
    assert_eq!(count_of(&console, KEPT).await, kept_before);
    let (_, list) = b.call(&console, "GET", "sites", None).await;
    assert_eq!(list["deleting"], json!([]));

    // The id is free, and a new site with it starts empty.
    ok(
        &console,
        &mut b,
        "POST",
        "sites",
        json!({"id": GONE, "domains": ["other.example"]}),
    )
    .await;
    // Its item, the owner's membership (two items) and one audit entry.
    assert_eq!(count_of(&console, GONE).await, 4);
    for (path, field) in [
        ("goals", "goals"),
        ("email-reports", "recipients"),
        ("affiliates", "affiliates"),
        ("annotations", "annotations"),
    ] {
        let (status, answer) = b
            .call(&console, "GET", &format!("sites/gone/{path}"), None)
            .await;
        assert_eq!(status, 200, "{path}: {answer}");
        assert_eq!(answer[field], json!([]), "{path}");
    }
    let (_, alerts) = b.call(&console, "GET", "sites/gone/alerts", None).await;
    assert_eq!(alerts["updated_at"], Value::Null);
    assert_eq!(alerts["webhook_url"], Value::Null);
}
