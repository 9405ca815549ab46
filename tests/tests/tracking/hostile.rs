//! Hostile input to `POST /collect` and to the query API, table-driven:
//! each case has its expected status, and a refused request stores nothing.

#![allow(clippy::unwrap_used)]

use lambda_http::Body;
use tally_core::ingest::site::Site;
use tally_core::time::zone::utc_midnight;
use tally_ingest::store::DynamoIngest;
use tally_ingest::{Config, handle};
use tally_query::store::DynamoQuery;
use tally_store::clock::ManualClock;
use tally_store::item::string;
use tally_store::salt::SharedSalt;
use tally_tests::{Harness, status_and_json};
use time::macros::date;

const UA: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

fn now() -> i64 {
    utc_midnight(date!(2026 - 11 - 30)) + 36_000_000
}

/// Posts a raw body to the ingest handler; its status and JSON answer.
async fn post(ingest: &DynamoIngest, body: Vec<u8>) -> (u16, serde_json::Value) {
    status_and_json(
        handle(
            ingest,
            &ManualClock::at(now()),
            &Config::default(),
            raw_request(body),
        )
        .await,
    )
}

fn raw_request(body: Vec<u8>) -> lambda_http::Request {
    use lambda_http::RequestExt;
    let mut context =
        lambda_http::aws_lambda_events::apigw::ApiGatewayV2httpRequestContext::default();
    context.http.source_ip = Some("203.0.113.50".to_owned());
    let body = match String::from_utf8(body) {
        Ok(text) => Body::Text(text),
        Err(e) => Body::Binary(e.into_bytes()),
    };
    http::Request::builder()
        .method("POST")
        .uri("/collect")
        .header("user-agent", UA)
        .body(body)
        .unwrap()
        .with_request_context(lambda_http::request::RequestContext::ApiGatewayV2(context))
}

fn page(extra: &str) -> Vec<u8> {
    format!(
        r#"{{"s":"blog","u":"https://example.com/x","ts":{}{extra}}}"#,
        now()
    )
    .into_bytes()
}

#[tokio::test]
async fn hostile_collect_payloads_get_their_status_and_store_nothing() {
    let long = "a".repeat(4096);
    let nested = format!(
        r#"{{"s":"blog","u":"https://example.com/","p":{}1{}}}"#,
        r#"{"a":"#.repeat(300),
        "}".repeat(300)
    );
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("invalid UTF-8", vec![b'{', b'"', b's', b'"', b':', 0xff, 0xfe, b'}'], 400),
        ("deeply nested JSON", nested.into_bytes(), 400),
        ("a 1 MB body", format!(r#"{{"s":"blog","u":"https://example.com/","t":"{}"}}"#, "x".repeat(1 << 20)).into_bytes(), 413),
        ("a huge number", page(r#","sw":1e400,"sh":1"#), 400),
        ("a number past u64", page(r#","ts":184467440737095516150"#), 400),
        ("negative screen sizes", page(r#","sw":-1920,"sh":-1080"#), 400),
        ("a 4 KB path", format!(r#"{{"s":"blog","u":"https://example.com/{long}"}}"#).into_bytes(), 400),
        ("control characters in an event name", page(r#","e":"event","p":{"name":"Sign\u0007up"}"#), 400),
        ("a 4 KB event name", format!(r#"{{"s":"blog","e":"event","u":"https://example.com/","p":{{"name":"{long}"}}}}"#).into_bytes(), 400),
        ("a NUL in a session id", page(r#","sid":"ab\u0000c""#), 400),
        ("a hash in an event id", page(r##","eid":"abc#GOAL#x""##), 400),
        ("a full-width site id", r#"{"s":"ｂｌｏｇ","u":"https://example.com/"}"#.as_bytes().to_vec(), 404),
        ("a combining-accent site id", "{\"s\":\"blo\u{0301}g\",\"u\":\"https://example.com/\"}".as_bytes().to_vec(), 404),
        ("an upper-case site id", r#"{"s":"BLOG","u":"https://example.com/"}"#.as_bytes().to_vec(), 404),
        ("a javascript: URL", r#"{"s":"blog","u":"javascript:alert(document.cookie)"}"#.as_bytes().to_vec(), 400),
        ("a data: URL", r#"{"s":"blog","u":"data:text/html;base64,PHNjcmlwdD4="}"#.as_bytes().to_vec(), 400),
        ("a file: URL", r#"{"s":"blog","u":"file:///etc/passwd"}"#.as_bytes().to_vec(), 400),
        ("a URL of another site", r#"{"s":"blog","u":"https://example.com.evil.net/"}"#.as_bytes().to_vec(), 403),
        ("a tz that is not a zone name", page(r#","tz":"Europe/Berlin; DROP TABLE""#), 400),
        ("a tz with a newline", page(r#","tz":"Europe/\nBerlin""#), 400),
        ("props as an array", page(r#","e":"event","p":[1,2]"#), 400),
        ("a string value", page(r#","e":"event","p":{"name":"x","value":"100"}"#), 400),
        ("too many properties", format!(r#"{{"s":"blog","e":"event","u":"https://example.com/","p":{{"name":"x","props":{{{}}}}}}}"#, (0..50).map(|i| format!(r#""k{i}":"v""#)).collect::<Vec<_>>().join(",")).into_bytes(), 400),
        ("JSON null", b"null".to_vec(), 400),
        ("an empty object", b"{}".to_vec(), 400),
    ];
    for (what, body, status) in cases {
        let h = Harness::start().await;
        h.store
            .create_site(&Site::new("blog", &["example.com".into()], "UTC", 0).unwrap())
            .await
            .unwrap();
        let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
        let (got, json) = post(&ingest, body).await;
        assert_eq!(got, status, "{what}: {json}");
        assert!(
            json["error"]["code"].is_string() && json["error"]["message"].is_string(),
            "{what}: {json}"
        );
        assert!(h.event_items().await.is_empty(), "{what} stored something");
    }
}

#[tokio::test]
async fn odd_but_harmless_input_is_stored_cleaned() {
    let h = Harness::start().await;
    h.store
        .create_site(&Site::new("blog", &["example.com".into()], "UTC", 0).unwrap())
        .await
        .unwrap();
    let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "a referrer on another scheme",
            page(r#","r":"javascript:alert(1)""#),
        ),
        (
            "a well-formed but unknown zone",
            page(r#","tz":"Mars/Olympus_Mons""#),
        ),
        (
            "a fragment and encoded controls in the path",
            format!(
                r#"{{"s":"blog","u":"https://example.com/a%00b%0A#frag","ts":{}}}"#,
                now()
            )
            .into_bytes(),
        ),
    ];
    for (what, body) in cases {
        let (status, json) = post(&ingest, body).await;
        assert_eq!(status, 202, "{what}: {json}");
    }
    let items = h.event_items().await;
    assert_eq!(items.len(), 3);
    for item in &items {
        assert!(
            item.get("rf").is_none(),
            "no foreign-scheme referrer is kept"
        );
        assert!(item.get("co").is_none(), "an unknown zone gives no country");
        let path = string(item, "p").unwrap();
        assert!(
            !path.contains('#') && !path.chars().any(char::is_control),
            "{path:?}"
        );
    }
}

#[tokio::test]
async fn hostile_query_parameters_get_400s() {
    let h = Harness::start().await;
    h.store
        .create_site(&Site::new("blog", &["example.com".into()], "UTC", 0).unwrap())
        .await
        .unwrap();
    let key = tally_tests::new_key(&h.store, "blog", 6).await;
    let query = DynamoQuery::new(h.store.clone());
    let many = vec!["country==DE"; 40].join(";");
    let cases = [
        ("stats?limit=99999999999999999999999", "invalid_number"),
        ("breakdown/pages?page=0", "invalid_number"),
        ("breakdown/pages?limit=-5", "invalid_number"),
        ("stats?from=2026-01-01&to=9999-12-31", "range_too_long"),
        ("stats?from=%00&to=2026-01-01", "invalid_date"),
        ("stats?period=7d%0A", "unknown_period"),
        ("stats?filters=page%3D%3D", "malformed_filter"),
        ("stats?filters=%F0%9F%92%A9==1", "unknown_filter_dimension"),
        (&format!("stats?filters={many}"), "too_many_filters"),
        ("breakdown/..%2F..%2Fetc", "unknown_dimension"),
        ("stats?metrics=visitors,__proto__", "unknown_metric"),
        ("stats?interval=hour&period=12mo&x=1", "unknown_parameter"),
    ];
    for (path, code) in cases {
        let request = http::Request::builder()
            .uri(format!("/api/sites/blog/{path}"))
            .header("authorization", format!("Bearer {key}"))
            .body(Body::Empty)
            .unwrap();
        let (status, json) =
            status_and_json(tally_query::handle(&query, &ManualClock::at(now()), request).await);
        assert_eq!(
            (status, json["error"]["code"].as_str()),
            (400, Some(code)),
            "{path}: {json}"
        );
    }
}
