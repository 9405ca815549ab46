//! Annotations and the saved-segment list as the dashboard reads them
//! (issue 23): made through the real console handler, read through the
//! real query handler (`GET …/annotations`, `GET …/segments`) with a
//! member's session cookie or an API key, on the embedded store.
//!
//! The expectation is written independently of the route: the notes the
//! test made, kept when their date lies in the asked range of the site's
//! own days (Honolulu, UTC-10 all year, so its today is not UTC's) and
//! when the reader may see them (site-wide: everyone; personal: its maker).

#![allow(clippy::unwrap_used)]

use lambda_http::Body;
use serde_json::{Value, json};
use tally_core::account::{Membership, Role};
use tally_core::ingest::site::Site;
use tally_core::time::zone::format_date;
use tally_query::store::DynamoQuery;
use tally_store::clock::{Clock, ManualClock};
use tally_tests::console::{Browser, Console, PASSWORD, error_code, member, owner};
use tally_tests::status_and_json;
use time::{Date, Duration};

const SITE: &str = "notes.example";

struct Rig {
    console: Console,
    query: DynamoQuery,
    key: String,
    now: i64,
}

/// A note as the test made it: date, text, the maker when personal.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Note {
    date: String,
    text: String,
    personal_of: Option<&'static str>,
}

impl Rig {
    /// A Honolulu site, a key, and the browsers of its instance owner and
    /// of a viewer (signed in).
    async fn new() -> (Self, Browser, Browser) {
        let console = Console::start().await;
        let now = console.clock.now();
        let owner = owner(&console).await;
        let site = Site::new(
            SITE,
            &["notes.example".into()],
            "Pacific/Honolulu",
            now - 100 * tally_core::DAY_MS,
        )
        .unwrap();
        console.store.create_site(&site).await.unwrap();
        member(&console, "viewer@example.com").await;
        console
            .store
            .put_membership(&Membership {
                site: SITE.into(),
                uid: tally_core::account::token::user_id_from_bytes(&[9; 8]),
                role: Role::Viewer,
                email: "viewer@example.com".into(),
            })
            .await
            .unwrap();
        let mut viewer = Browser::new("203.0.113.20");
        let (status, body) = viewer.login(&console, "viewer@example.com", PASSWORD).await;
        assert_eq!(status, 200, "{body}");
        let key = tally_tests::new_key(&console.store, SITE, 4).await;
        let (store, _) = console.second_store().await;
        let rig = Self {
            console,
            query: DynamoQuery::new(store),
            key,
            now,
        };
        (rig, owner, viewer)
    }

    /// `POST sites/{site}/{what}` in the console as `who`.
    async fn add(&self, who: &mut Browser, what: &str, body: Value) -> (u16, Value) {
        who.call(
            &self.console,
            "POST",
            &format!("sites/{SITE}/{what}"),
            Some(body),
        )
        .await
    }

    /// `GET /api/sites/{site}/{path}` of the query function, with a
    /// browser's session cookie or (`None`) the API key.
    async fn read(&self, who: Option<&Browser>, path: &str) -> (u16, Value, Vec<u8>) {
        let mut request = http::Request::builder().uri(format!("/api/sites/{SITE}/{path}"));
        match who {
            Some(b) => {
                let session = b.cookie("tally_session").unwrap();
                request = request.header("cookie", format!("tally_session={session}"));
            }
            None => request = request.header("authorization", format!("Bearer {}", self.key)),
        }
        let clock = ManualClock::at(self.now);
        let response = tally_query::handle_with(
            &self.query,
            &clock,
            &tally_query::Config::default(),
            request.body(Body::Empty).unwrap(),
        )
        .await;
        let raw: Vec<u8> = response.body().to_vec();
        let (status, json) = status_and_json(response);
        (status, json, raw)
    }
}

/// The site's today, from UTC-10 (Honolulu keeps no summer time).
fn honolulu_today(now_ms: i64) -> Date {
    let utc = time::OffsetDateTime::from_unix_timestamp(now_ms / 1000).unwrap();
    (utc - Duration::hours(10)).date()
}

/// What `GET …/annotations` should list for `reader` (a maker's name, or
/// `None` for a key) between `from` and `to`, oldest first.
fn expected(
    notes: &[Note],
    from: Date,
    to: Date,
    reader: Option<&str>,
) -> Vec<(String, String, bool)> {
    let mut kept: Vec<Note> = notes
        .iter()
        .filter(|n| {
            let d = tally_core::time::zone::parse_date(&n.date).unwrap();
            d >= from && d <= to && (n.personal_of.is_none() || n.personal_of == reader)
        })
        .cloned()
        .collect();
    kept.sort();
    kept.into_iter()
        .map(|n| (n.date, n.text, n.personal_of.is_some()))
        .collect()
}

fn listed(body: &Value) -> Vec<(String, String, bool)> {
    let mut rows: Vec<(String, String, bool)> = body["results"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|a| {
            (
                a["date"].as_str().unwrap().to_owned(),
                a["text"].as_str().unwrap().to_owned(),
                a["personal"].as_bool().unwrap(),
            )
        })
        .collect();
    // Oldest first is the route's promise; same-day order is not.
    let dates: Vec<&String> = rows.iter().map(|r| &r.0).collect();
    assert!(dates.windows(2).all(|w| w[0] <= w[1]), "{body}");
    rows.sort();
    rows
}

#[tokio::test]
async fn annotations_are_listed_within_the_sites_own_period_and_personal_ones_only_for_their_maker()
{
    let (rig, mut owner, mut viewer) = Rig::new().await;
    let today = honolulu_today(rig.now);
    let utc_today = time::OffsetDateTime::from_unix_timestamp(rig.now / 1000)
        .unwrap()
        .date();
    assert_ne!(today, utc_today, "the site's today is not UTC's");
    // `7d`: the site's last seven days, today included.
    let (from, to) = (today - Duration::days(6), today);
    let day = |d: Date| format_date(d);
    let mut notes = Vec::new();
    for (date, text) in [
        (from - Duration::days(1), "the day before the range"),
        (from, "first day"),
        (
            from + Duration::days(3),
            "<script>window.__pwned=1</script>",
        ),
        (to, "last day"),
        (to + Duration::days(1), "the day after (UTC's today)"),
    ] {
        let (status, body) = rig
            .add(
                &mut owner,
                "annotations",
                json!({"date": day(date), "text": text}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        notes.push(Note {
            date: day(date),
            text: text.into(),
            personal_of: None,
        });
    }
    for (who, name, text) in [
        (&mut owner, "owner", "the owner's own note"),
        (&mut viewer, "viewer", "the viewer's own note"),
    ] {
        let (status, body) = rig
            .add(
                who,
                "annotations",
                json!({"date": day(to), "text": text, "personal": true}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        notes.push(Note {
            date: day(to),
            text: text.into(),
            personal_of: Some(name),
        });
    }
    let readers: [(Option<&Browser>, Option<&str>); 3] = [
        (Some(&owner), Some("owner")),
        (Some(&viewer), Some("viewer")),
        (None, None),
    ];
    for (who, name) in readers {
        let (status, body, _) = rig.read(who, "annotations?period=7d").await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            (body["from"].as_str(), body["to"].as_str()),
            (Some(day(from).as_str()), Some(day(to).as_str()))
        );
        assert_eq!(listed(&body), expected(&notes, from, to, name), "{name:?}");
        // A custom range one day wide at each end.
        for d in [from - Duration::days(1), to + Duration::days(1)] {
            let (_, body, _) = rig
                .read(who, &format!("annotations?from={}&to={}", day(d), day(d)))
                .await;
            assert_eq!(listed(&body), expected(&notes, d, d, name), "{name:?} {d}");
            assert_eq!(
                listed(&body).len(),
                1,
                "the note outside 7d is there when asked"
            );
        }
    }
    // A key is not a person: no personal note, whoever made it.
    let (_, body, _) = rig.read(None, "annotations?period=7d").await;
    assert!(
        body["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["personal"] == json!(false))
    );
    let (status, body, _) = rig
        .read(None, "annotations?period=7d&filters=page==/")
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("unknown_parameter"))
    );
}

#[tokio::test]
async fn an_annotation_holds_at_most_500_characters() {
    let (rig, mut owner, _) = Rig::new().await;
    let date = format_date(honolulu_today(rig.now));
    // Characters, not bytes: 500 two-byte letters fit.
    let longest = "é".repeat(500);
    let (status, body) = rig
        .add(
            &mut owner,
            "annotations",
            json!({"date": date, "text": longest}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = rig
        .add(
            &mut owner,
            "annotations",
            json!({"date": date, "text": "é".repeat(501)}),
        )
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (400, Some("annotation_too_long"))
    );
    let (_, list, _) = rig.read(None, "annotations?period=today").await;
    let texts: Vec<&str> = list["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, [longest.as_str()]);
}

#[tokio::test]
async fn annotations_download_as_csv_with_formulas_defused() {
    let (rig, mut owner, _) = Rig::new().await;
    let today = honolulu_today(rig.now);
    for (d, text) in [(1, "=HYPERLINK(\"x\")"), (0, "Launch <b>day</b>")] {
        let (status, body) = rig
            .add(
                &mut owner,
                "annotations",
                json!({"date": format_date(today - Duration::days(d)), "text": text}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
    let (status, _, raw) = rig.read(None, "annotations?period=7d&format=csv").await;
    assert_eq!(status, 200);
    let text = String::from_utf8(raw).unwrap();
    let lines: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).collect();
    assert_eq!(
        lines,
        [
            // Columns in the report CSV's order (by name).
            "date,personal,text".to_owned(),
            format!(
                "{},false,\"'=HYPERLINK(\"\"x\"\")\"",
                format_date(today - Duration::days(1))
            ),
            format!("{},false,Launch <b>day</b>", format_date(today)),
        ]
    );
}

#[tokio::test]
async fn the_segment_list_shows_site_wide_segments_and_only_the_readers_own_personal_ones() {
    let (rig, mut owner, mut viewer) = Rig::new().await;
    let (status, wide) = rig
        .add(
            &mut owner,
            "segments",
            json!({"name": "Germany", "filter": "country==DE"}),
        )
        .await;
    assert_eq!(status, 201, "{wide}");
    let (status, mine) = rig
        .add(
            &mut viewer,
            "segments",
            json!({"name": "My blog", "filter": "page==/blog/*", "personal": true}),
        )
        .await;
    assert_eq!(status, 201, "{mine}");
    let names = |body: &Value| -> Vec<(String, String, String, bool)> {
        body["results"]
            .as_array()
            .unwrap_or_else(|| panic!("{body}"))
            .iter()
            .map(|s| {
                (
                    s["id"].as_str().unwrap().to_owned(),
                    s["name"].as_str().unwrap().to_owned(),
                    s["filter"].as_str().unwrap().to_owned(),
                    s["personal"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    let germany = (
        wide["id"].as_str().unwrap().to_owned(),
        "Germany".to_owned(),
        "country==DE".to_owned(),
        false,
    );
    let blog = (
        mine["id"].as_str().unwrap().to_owned(),
        "My blog".to_owned(),
        "page==/blog/*".to_owned(),
        true,
    );
    let (_, body, _) = rig.read(Some(&viewer), "segments").await;
    assert_eq!(
        names(&body),
        [germany.clone(), blog],
        "by name, the viewer's own too"
    );
    for who in [Some(&owner), None] {
        let (status, body, _) = rig.read(who, "segments").await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(names(&body), std::slice::from_ref(&germany));
    }
}
