//! The deployment files agree with the code: the table in `template.yaml`
//! is the store's table spec, and every `infra/events` fixture is accepted
//! by its handler with the expected answer.

#![allow(clippy::unwrap_used)]

use serde_norway::Value;
use std::path::PathBuf;
use tally_core::ingest::site::Site;
use tally_ingest::store::DynamoIngest;
use tally_ingest::{Config, handle};
use tally_store::clock::ManualClock;
use tally_store::item::string;
use tally_store::salt::SharedSalt;
use tally_store::table::TABLE;
use tally_tests::{Harness, status_and_json};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

fn template() -> Value {
    let text = std::fs::read_to_string(repo().join("template.yaml")).unwrap();
    serde_norway::from_str(&text).unwrap()
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(repo().join("infra/events").join(name)).unwrap()
}

#[test]
fn the_template_table_is_the_store_table_spec() {
    let t = template();
    let table = &t["Resources"]["Table"];
    assert_eq!(table["Type"], "AWS::DynamoDB::Table");
    let p = &table["Properties"];
    let keys: Vec<(String, String)> = p["KeySchema"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["AttributeName"].as_str().unwrap().to_owned(),
                k["KeyType"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        vec![
            (TABLE.partition_key.to_owned(), "HASH".to_owned()),
            (TABLE.sort_key.to_owned(), "RANGE".to_owned())
        ]
    );
    let attrs: Vec<(String, String)> = p["AttributeDefinitions"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["AttributeName"].as_str().unwrap().to_owned(),
                a["AttributeType"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        attrs,
        vec![
            ("pk".to_owned(), "S".to_owned()),
            ("sk".to_owned(), "S".to_owned())
        ]
    );
    assert_eq!(p["BillingMode"], TABLE.billing_mode);
    assert_eq!(
        p["TimeToLiveSpecification"]["AttributeName"],
        TABLE.ttl_attribute
    );
    assert_eq!(p["TimeToLiveSpecification"]["Enabled"], true);
    assert!(
        p.get("GlobalSecondaryIndexes").is_none(),
        "no GSI: every access pattern uses the primary key"
    );
}

#[tokio::test]
async fn every_ingest_fixture_gets_its_answer_from_the_handler() {
    let h = Harness::start().await;
    h.store
        .create_site(
            &Site::new("example.com", &["example.com".into()], "Europe/Berlin", 0).unwrap(),
        )
        .await
        .unwrap();
    let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
    let config = Config::default();
    let cases = [
        ("ingest-pageview.json", 202, Some("accepted")),
        ("ingest-event.json", 202, Some("accepted")),
        ("ingest-engagement.json", 202, Some("accepted")),
        ("ingest-outbound.json", 202, Some("accepted")),
        ("ingest-bot.json", 202, Some("dropped")),
        ("ingest-preflight.json", 204, None),
        ("ingest-bad-body.json", 400, None),
        ("ingest-script.json", 200, None),
        ("ingest-plausible-script.json", 200, None),
        ("ingest-health.json", 200, None),
    ];
    for (name, status, outcome) in cases {
        let text = fixture(name);
        let raw: serde_json::Value = serde_json::from_str(&text).unwrap();
        // The fixture's own client time is "now", so its event time is trusted.
        let now = raw["body"]
            .as_str()
            .and_then(|b| serde_json::from_str::<serde_json::Value>(b).ok())
            .and_then(|b| b["ts"].as_i64())
            .unwrap_or(1_764_460_800_000);
        let clock = ManualClock::at(now);
        let request = lambda_http::request::from_str(&text).unwrap();
        let response = handle(&ingest, &clock, &config, request).await;
        let cors = response
            .headers()
            .get("access-control-allow-origin")
            .cloned();
        let (got, json) = status_and_json(response);
        assert_eq!(got, status, "{name}: {json}");
        if let Some(outcome) = outcome {
            assert_eq!(json["status"], outcome, "{name}");
        }
        assert_eq!(cors.unwrap(), "*", "{name} carries CORS");
    }
    // Plausible's tracker: `202 ok`, no dropped header.
    let text = fixture("ingest-plausible-event.json");
    let response = handle(
        &ingest,
        &ManualClock::at(1_764_460_850_210),
        &config,
        lambda_http::request::from_str(&text).unwrap(),
    )
    .await;
    assert_eq!(response.status(), 202);
    assert!(response.headers().get("x-plausible-dropped").is_none());
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    let items = h.event_items().await;
    assert_eq!(
        items.len(),
        5,
        "page view, event, engagement, outbound click, Plausible's event"
    );
    let pageview = items
        .iter()
        .find(|i| string(i, "p") == Some("/blog/hello") && string(i, "k") == Some("pv"))
        .unwrap();
    assert_eq!(string(pageview, "us"), Some("newsletter"));
    assert_eq!(string(pageview, "co"), Some("DE"));
}

#[tokio::test]
async fn every_query_fixture_gets_its_answer_from_the_handler() {
    let h = Harness::start().await;
    h.store
        .create_site(
            &Site::new("example.com", &["example.com".into()], "Europe/Berlin", 0).unwrap(),
        )
        .await
        .unwrap();
    // The fixtures carry a documented test key; store its hash as `tally key create` would.
    let key = "tk_0123456789abcdef0123456789abcdef01234567.example.com";
    tally_tests::put_key(&h.store, "example.com", key).await;
    let query = tally_query::store::DynamoQuery::new(h.store.clone());
    let clock = ManualClock::at(1_764_460_800_000);
    let cases = [
        ("query-stats.json", 200, "results"),
        ("query-timeseries.json", 200, "results"),
        ("query-breakdown.json", 200, "results"),
        ("query-realtime.json", 200, "visitors"),
        ("query-unauthorized.json", 401, "error"),
        ("query-v2.json", 200, "results"),
    ];
    for (name, status, key_field) in cases {
        let request = lambda_http::request::from_str(&fixture(name)).unwrap();
        let response = tally_query::handle(&query, &clock, request).await;
        assert!(
            response
                .headers()
                .get("access-control-allow-origin")
                .is_none(),
            "{name}: the query API has no CORS"
        );
        let (got, json) = status_and_json(response);
        assert_eq!(got, status, "{name}: {json}");
        assert!(json.get(key_field).is_some(), "{name}: {json}");
    }
    let request = lambda_http::request::from_str(&fixture("query-dashboard.json")).unwrap();
    let response = tally_query::handle(&query, &clock, request).await;
    assert_eq!(response.status(), 200);
    let body: &[u8] = response.body();
    assert!(String::from_utf8_lossy(body).contains("<html"));
}

/// A template condition's value for some parameter values (the template's
/// defaults for the others).
fn condition(t: &Value, name: &str, params: &[(&str, &str)]) -> bool {
    holds(t, &t["Conditions"][name], params)
}

/// A condition expression's value (`!Equals` of `!Ref`s and strings,
/// `!Not`, `!And`, `!Or`, `!Condition`), for some parameter values.
fn holds(t: &Value, v: &Value, params: &[(&str, &str)]) -> bool {
    fn text(v: &Value, t: &Value, params: &[(&str, &str)]) -> String {
        match v {
            Value::Tagged(tagged) if tagged.tag == "Ref" => {
                let p = tagged.value.as_str().unwrap();
                params
                    .iter()
                    .find(|(k, _)| *k == p)
                    .map(|(_, v)| (*v).to_owned())
                    .unwrap_or_else(|| match &t["Parameters"][p]["Default"] {
                        Value::Number(n) => n.to_string(),
                        other => other.as_str().unwrap().to_owned(),
                    })
            }
            Value::Number(n) => n.to_string(),
            other => other.as_str().unwrap().to_owned(),
        }
    }
    let Value::Tagged(tagged) = v else {
        panic!("not a condition: {v:?}")
    };
    let tag = tagged.tag.to_string();
    let tag = tag.trim_start_matches('!');
    if tag == "Condition" {
        return condition(t, tagged.value.as_str().unwrap(), params);
    }
    let args = tagged.value.as_sequence().unwrap();
    match tag {
        "Not" => !holds(t, &args[0], params),
        "And" => args.iter().all(|a| holds(t, a, params)),
        "Or" => args.iter().any(|a| holds(t, a, params)),
        "Equals" => text(&args[0], t, params) == text(&args[1], t, params),
        other => panic!("unknown condition function {other}"),
    }
}

/// A property's value for some parameter values: `!If` branches taken.
fn pick<'a>(t: &Value, v: &'a Value, params: &[(&str, &str)]) -> &'a Value {
    match v {
        Value::Tagged(tagged) if tagged.tag == "If" => {
            let args = tagged.value.as_sequence().unwrap();
            let branch = if condition(t, args[0].as_str().unwrap(), params) {
                &args[1]
            } else {
                &args[2]
            };
            pick(t, branch, params)
        }
        other => other,
    }
}

/// Whether CloudFormation takes these parameter values: every rule whose
/// condition holds has its assertions hold.
fn rules_hold(t: &Value, params: &[(&str, &str)]) -> bool {
    t["Rules"]
        .as_mapping()
        .into_iter()
        .flatten()
        .all(|(_, rule)| {
            !holds(t, &rule["RuleCondition"], params)
                || rule["Assertions"]
                    .as_sequence()
                    .unwrap()
                    .iter()
                    .all(|a| holds(t, &a["Assert"], params))
        })
}

/// The resources a deployment with these parameters creates: name -> type.
fn resources(t: &Value, params: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
    t["Resources"]
        .as_mapping()
        .unwrap()
        .iter()
        .filter(|(_, r)| match r["Condition"].as_str() {
            Some(c) => condition(t, c, params),
            None => true,
        })
        .map(|(k, r)| {
            (
                k.as_str().unwrap().to_owned(),
                r["Type"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn each_front_door_variant_creates_its_routes_urls_and_permissions() {
    let t = template();
    let ingest_routes = [
        "GET /script.js",
        "GET /vitals.js",
        "GET /forms.js",
        "GET /affiliate.js",
        "POST /collect",
        "OPTIONS /collect",
        "POST /api/event",
        "OPTIONS /api/event",
        "GET /js/{script}",
        "GET /health",
    ];
    let query_routes = [
        "GET /",
        "GET /api/{proxy+}",
        "POST /api/sites/{site}/unlock",
        "POST /api/sites/{site}/conversions",
        "POST /api/v2/query",
    ];
    // The query function is always on the HTTP API: the console's
    // Dashboard button opens the dashboard on the console's own origin.
    let allowed = |p: &str| {
        t["Parameters"][p]["AllowedValues"]
            .as_sequence()
            .unwrap()
            .clone()
    };
    assert_eq!(allowed("IngestFrontDoor").len(), 3);
    assert_eq!(
        allowed("QueryFrontDoor"),
        vec![Value::from("HttpApi"), Value::from("Both")]
    );
    for door in ["HttpApi", "FunctionUrl", "Both"] {
        let query_door = if door == "FunctionUrl" { "Both" } else { door };
        let params = [("IngestFrontDoor", door), ("QueryFrontDoor", query_door)];
        let made = resources(&t, &params);
        for (function, routes) in [("Ingest", &ingest_routes[..]), ("Query", &query_routes[..])] {
            let api = function == "Query" || door != "FunctionUrl";
            let url = door != "HttpApi";
            let keys: Vec<&str> = made
                .iter()
                .filter(|(k, ty)| {
                    k.starts_with(&format!("{function}Route")) && *ty == "AWS::ApiGatewayV2::Route"
                })
                .map(|(k, _)| {
                    t["Resources"][k.as_str()]["Properties"]["RouteKey"]
                        .as_str()
                        .unwrap()
                })
                .collect();
            let mut want: Vec<&str> = if api { routes.to_vec() } else { vec![] };
            let mut got = keys.clone();
            want.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, want, "{door}: {function} routes");
            assert_eq!(
                made.contains_key(&format!("{function}Integration")),
                api,
                "{door}"
            );
            assert_eq!(
                made.contains_key(&format!("{function}ApiPermission")),
                api,
                "{door}"
            );
            assert_eq!(
                made.contains_key(&format!("{function}FunctionUrl")),
                url,
                "{door}"
            );
            assert_eq!(
                made.contains_key(&format!("{function}FunctionUrlPermission")),
                url,
                "{door}"
            );
            assert_eq!(
                made.contains_key(&format!("{function}FunctionUrlInvokePermission")),
                url,
                "{door}"
            );
            // The permissions: API Gateway from this API only; the URL for
            // anyone, through the URL only.
            let r = &t["Resources"];
            let api_perm = &r[format!("{function}ApiPermission").as_str()]["Properties"];
            assert_eq!(api_perm["Principal"], "apigateway.amazonaws.com");
            assert_eq!(api_perm["Action"], "lambda:InvokeFunction");
            let Value::Tagged(arn) = &api_perm["SourceArn"] else {
                panic!()
            };
            assert!(arn.value.as_str().unwrap().ends_with(":${HttpApi}/*"));
            let url_perm = &r[format!("{function}FunctionUrlPermission").as_str()]["Properties"];
            assert_eq!(
                (
                    &url_perm["Action"],
                    &url_perm["Principal"],
                    &url_perm["FunctionUrlAuthType"]
                ),
                (
                    &Value::from("lambda:InvokeFunctionUrl"),
                    &Value::from("*"),
                    &Value::from("NONE")
                )
            );
            let invoke =
                &r[format!("{function}FunctionUrlInvokePermission").as_str()]["Properties"];
            assert_eq!(invoke["Action"], "lambda:InvokeFunction");
            assert_eq!(invoke["InvokedViaFunctionUrl"], true);
            assert_eq!(
                r[format!("{function}FunctionUrl").as_str()]["Properties"]["AuthType"],
                "NONE"
            );
        }
        // The rollup schedule and the table do not depend on the doors.
        assert!(made.contains_key("RollupFunction") && made.contains_key("Table"));
    }
    // The API has no OpenAPI body (an update would re-import it over the
    // routes), and its stage deploys them with the route throttling.
    let api = &t["Resources"]["HttpApi"];
    assert_eq!(api["Type"], "AWS::ApiGatewayV2::Api");
    assert!(api["Properties"]["Body"].is_null());
    let stage = &t["Resources"]["HttpApiStage"]["Properties"];
    assert_eq!(stage["AutoDeploy"], true);
    assert!(!stage["DefaultRouteSettings"]["ThrottlingRateLimit"].is_null());
    // Outputs follow the choice; the ingest function's own throttle.
    assert!(matches!(&t["Outputs"]["ScriptTag"]["Value"], Value::Tagged(v) if v.tag == "If"));
    assert_eq!(t["Outputs"]["IngestUrl"]["Condition"], "IngestUrl");
    let reserved = &t["Resources"]["IngestFunction"]["Properties"]["ReservedConcurrentExecutions"];
    assert!(matches!(reserved, Value::Tagged(v) if v.tag == "If"));
    assert!(!condition(&t, "IngestReserved", &[]));
    assert!(condition(
        &t,
        "IngestReserved",
        &[("IngestReservedConcurrency", "50")]
    ));
}

/// An origin secret as an operator would give it.
const ORIGIN_SECRET: &str = "0123456789abcdef0123456789abcdef";

/// Behind CloudFront the stack keeps an origin secret in Secrets Manager,
/// generated unless the operator gives one, and ingest gets only its ARN;
/// without CloudFront there is none.
#[test]
fn behind_cloudfront_the_origin_secret_is_made_or_given_and_only_its_arn_is_passed() {
    let t = template();
    let secret = &t["Resources"]["OriginSecret"]["Properties"];
    let env = &t["Resources"]["IngestFunction"]["Properties"]["Environment"]["Variables"];
    for given in ["", ORIGIN_SECRET] {
        let behind = [("BehindCloudFront", "true"), ("OriginVerifySecret", given)];
        assert!(rules_hold(&t, &behind), "{behind:?}");
        assert!(resources(&t, &behind).contains_key("OriginSecret"));
        assert!(
            matches!(pick(&t, &env["TALLY_ORIGIN_SECRET_ARN"], &behind), Value::Tagged(r) if r.tag == "Ref" && r.value == "OriginSecret")
        );
        let generated = pick(&t, &secret["GenerateSecretString"], &behind);
        let value = pick(&t, &secret["SecretString"], &behind);
        if given.is_empty() {
            assert!(generated["PasswordLength"].as_u64() >= Some(32));
            assert!(matches!(value, Value::Tagged(r) if r.value == "AWS::NoValue"));
        } else {
            assert!(matches!(value, Value::Tagged(r) if r.value == "OriginVerifySecret"));
            assert!(matches!(generated, Value::Tagged(r) if r.value == "AWS::NoValue"));
        }
    }
    assert!(!resources(&t, &[]).contains_key("OriginSecret"));
    assert_eq!(pick(&t, &env["TALLY_ORIGIN_SECRET_ARN"], &[]), "");
}

#[test]
fn behind_cloudfront_every_variant_closes_the_doors_that_skip_cloudfront() {
    // Ingest trusts CloudFront-Viewer-Address and the geography headers
    // behind CloudFront: a caller who reached it another way could send
    // them. In every variant CloudFormation takes, ingest trusts them only
    // when the API's execute-api endpoint is off and ingest has no
    // function URL, and no output names the endpoint that is off.
    let t = template();
    let doors = ["HttpApi", "FunctionUrl", "Both"];
    let mut deployable = Vec::new();
    for behind in ["true", "false"] {
        for ingest in doors {
            for query in ["HttpApi", "Both"] {
                let params = [
                    ("BehindCloudFront", behind),
                    ("IngestFrontDoor", ingest),
                    ("QueryFrontDoor", query),
                    ("OriginVerifySecret", ORIGIN_SECRET),
                ];
                let taken = rules_hold(&t, &params);
                assert_eq!(
                    taken,
                    behind == "false" || ingest == "HttpApi",
                    "{params:?}: a function URL cannot be closed to direct callers"
                );
                if !taken {
                    continue;
                }
                deployable.push(params);
                let made = resources(&t, &params);
                let trusts = pick(
                    &t,
                    &t["Resources"]["IngestFunction"]["Properties"]["Environment"]["Variables"]["TALLY_BEHIND_CLOUDFRONT"],
                    &params,
                ) == "1";
                assert_eq!(trusts, behind == "true", "{params:?}");
                let secret = pick(
                    &t,
                    &t["Resources"]["IngestFunction"]["Properties"]["Environment"]["Variables"]["TALLY_ORIGIN_SECRET_ARN"],
                    &params,
                );
                let given = matches!(secret, Value::Tagged(r) if r.tag == "Ref" && r.value == "OriginSecret");
                assert_eq!(
                    given, trusts,
                    "{params:?}: the origin secret with the trust"
                );
                let disabled = pick(
                    &t,
                    &t["Resources"]["HttpApi"]["Properties"]["DisableExecuteApiEndpoint"],
                    &params,
                ) == &Value::Bool(true);
                assert_eq!(disabled, trusts, "{params:?}: DisableExecuteApiEndpoint");
                if trusts {
                    assert!(!made.contains_key("IngestFunctionUrl"), "{params:?}");
                    assert!(made.contains_key("IngestRouteCollect"), "{params:?}");
                }
                let mut shown = Vec::new();
                for (name, output) in t["Outputs"].as_mapping().unwrap() {
                    if let Some(c) = output["Condition"].as_str()
                        && !condition(&t, c, &params)
                    {
                        continue;
                    }
                    let name = name.as_str().unwrap();
                    shown.push(name);
                    let value = format!("{:?}", pick(&t, &output["Value"], &params));
                    if disabled {
                        assert!(
                            !value.contains("execute-api"),
                            "{params:?}: {name}: {value}"
                        );
                    }
                }
                assert_eq!(shown.contains(&"ApiUrl"), !disabled, "{params:?}");
                assert!(shown.contains(&"ApiId"), "{params:?}");
            }
        }
    }
    // Every variant but the four that pair CloudFront with an ingest URL.
    assert_eq!(deployable.len(), 12 - 4);
}

#[test]
fn the_consoles_mailed_links_do_not_come_from_the_request() {
    // Invitation and reset links start with the console's PUBLIC_URL, the
    // same origin as the job's report links: never the Host header or
    // X-Forwarded-Proto a client sent (issue 29).
    let t = template();
    let console =
        &t["Resources"]["ConsoleFunction"]["Properties"]["Environment"]["Variables"]["PUBLIC_URL"];
    let job =
        &t["Resources"]["RollupFunction"]["Properties"]["Environment"]["Variables"]["PUBLIC_URL"];
    for params in [
        &[][..],
        &[("PublicUrl", "https://stats.example.com")][..],
        &[
            ("BehindCloudFront", "true"),
            ("PublicUrl", "https://stats.example.com"),
        ][..],
    ] {
        let got = format!("{:?}", pick(&t, console, params));
        assert_eq!(got, format!("{:?}", pick(&t, job, params)), "{params:?}");
        assert!(
            got.contains("execute-api") || got.contains("PublicUrl"),
            "{params:?}: {got}"
        );
    }
}

#[test]
fn the_jobs_report_links_point_at_the_console() {
    // The job mails reports whose links (dashboard, unsubscribe) start with
    // its PUBLIC_URL: PublicUrl when given, else the API's execute-api
    // origin (the ConsoleUrl output without `/console`); behind CloudFront
    // (that endpoint off) a deployment that mails reports must give
    // PublicUrl.
    let t = template();
    let env = &t["Resources"]["RollupFunction"]["Properties"]["Environment"]["Variables"];
    let console = format!("{:?}", pick(&t, &t["Outputs"]["ConsoleUrl"]["Value"], &[]));
    let api = format!("{:?}", pick(&t, &env["PUBLIC_URL"], &[]));
    assert_eq!(console.replace("/console", ""), api);
    assert!(api.contains("execute-api"), "{api}");
    let mine = [("PublicUrl", "https://stats.example.com")];
    assert!(
        matches!(pick(&t, &env["PUBLIC_URL"], &mine), Value::Tagged(v) if v.tag == "Ref" && v.value == "PublicUrl"),
        "PublicUrl when given"
    );
    for (email, public, taken) in [
        ("", "", true),
        ("reports@example.com", "", false),
        ("reports@example.com", "https://stats.example.com", true),
    ] {
        let params = [
            ("BehindCloudFront", "true"),
            ("OriginVerifySecret", ORIGIN_SECRET),
            ("EmailFrom", email),
            ("PublicUrl", public),
        ];
        assert_eq!(rules_hold(&t, &params), taken, "{params:?}");
    }
    assert!(rules_hold(
        &t,
        &[("EmailFrom", "reports@example.com"), ("PublicUrl", "")]
    ));
}

#[tokio::test]
async fn the_ingest_urls_cors_is_the_answer_ingest_gives_itself() {
    let t = template();
    let cors = &t["Resources"]["IngestFunctionUrl"]["Properties"]["Cors"];
    let h = Harness::start().await;
    let ingest = DynamoIngest::new(h.store.clone(), SharedSalt::new());
    let clock = ManualClock::at(1_764_460_800_000);
    let request = lambda_http::request::from_str(&fixture("ingest-preflight.json")).unwrap();
    let response = handle(&ingest, &clock, &Config::default(), request).await;
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let list = |v: &Value| -> Vec<String> {
        v.as_sequence()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_ascii_lowercase())
            .collect()
    };
    // The headers the browser may send.
    let own_headers: Vec<String> = header("access-control-allow-headers")
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .collect();
    assert_eq!(list(&cors["AllowHeaders"]), own_headers);
    // Every method ingest allows cross-origin (OPTIONS is the preflight
    // itself, which the URL answers), and GET for the scripts.
    let url_methods = list(&cors["AllowMethods"]);
    for m in header("access-control-allow-methods")
        .split(',')
        .map(str::trim)
    {
        if m != "OPTIONS" {
            assert!(url_methods.contains(&m.to_ascii_lowercase()), "{m}");
        }
    }
    assert_eq!(
        cors["MaxAge"].as_u64().unwrap().to_string(),
        header("access-control-max-age")
    );
    // Any origin, as ingest's own answers say.
    let post = lambda_http::request::from_str(&fixture("ingest-bad-body.json")).unwrap();
    let answer = handle(&ingest, &clock, &Config::default(), post).await;
    let origin = answer.headers()["access-control-allow-origin"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(list(&cors["AllowOrigins"]), vec![origin]);
    // The query API is not cross-origin: its URL has no CORS.
    assert!(t["Resources"]["QueryFunctionUrl"]["Properties"]["Cors"].is_null());
}

#[test]
fn the_alarms_watch_metrics_the_functions_write() {
    let t = template();
    // What the code writes: metric names per Function dimension.
    let mut counts = tally_core::metrics::IngestCounts {
        accepted: 1,
        store_ms: vec![1.0],
        ..Default::default()
    };
    counts.dropped.insert("bot", 1);
    let mut lines = counts.lines(0);
    lines.extend(tally_rollup::handler::metric_lines(
        &tally_rollup::RunReport::default(),
        0,
    ));
    let mut written: std::collections::BTreeSet<(String, String)> = Default::default();
    for l in &lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        for m in v["_aws"]["CloudWatchMetrics"][0]["Metrics"]
            .as_array()
            .unwrap()
        {
            written.insert((
                v["Function"].as_str().unwrap().to_owned(),
                m["Name"].as_str().unwrap().to_owned(),
            ));
        }
    }
    let alarms: Vec<&Value> = t["Resources"]
        .as_mapping()
        .unwrap()
        .values()
        .filter(|r| r["Type"] == "AWS::CloudWatch::Alarm")
        .collect();
    let mut tally_alarms = 0;
    let mut ses_alarms = 0;
    let mut lambda: std::collections::BTreeSet<(String, String)> = Default::default();
    for a in &alarms {
        let p = &a["Properties"];
        // Every alarm notifies the topic.
        let actions = p["AlarmActions"].as_sequence().unwrap();
        assert!(
            actions
                .iter()
                .any(|x| matches!(x, Value::Tagged(t) if t.value == "AlarmTopic")),
            "{p:?}"
        );
        match p["Namespace"].as_str().unwrap() {
            "Tally" => {
                let function = p["Dimensions"][0]["Value"].as_str().unwrap().to_owned();
                let metric = p["MetricName"].as_str().unwrap().to_owned();
                assert!(
                    written.contains(&(function.clone(), metric.clone())),
                    "{function}/{metric} is never written"
                );
                tally_alarms += 1;
            }
            "AWS/Lambda" => {
                let Value::Tagged(f) = &p["Dimensions"][0]["Value"] else {
                    panic!()
                };
                lambda.insert((
                    f.value.as_str().unwrap().to_owned(),
                    p["MetricName"].as_str().unwrap().to_owned(),
                ));
            }
            "AWS/DynamoDB" => {
                assert_eq!(p["Dimensions"][0]["Name"], "TableName");
            }
            // The account's sending reputation, kept by the configuration
            // set the functions send with (only when they send mail).
            "AWS/SES" => {
                let metric = p["MetricName"].as_str().unwrap();
                assert!(
                    ["Reputation.BounceRate", "Reputation.ComplaintRate"].contains(&metric),
                    "{metric}"
                );
                ses_alarms += 1;
            }
            other => panic!("unexpected namespace {other}"),
        }
    }
    assert_eq!(
        tally_alarms, 4,
        "failed writes, failed sites, lag, not running"
    );
    assert_eq!(ses_alarms, 2, "bounces and complaints");
    // The mail safety exists with mail, and every message uses its set.
    let mail = [("EmailFrom", "tally@example.com")];
    for r in [
        "MailConfigurationSet",
        "MailEventDestination",
        "MailBounceRateAlarm",
        "MailComplaintRateAlarm",
    ] {
        assert!(!resources(&t, &[]).contains_key(r), "{r}");
        assert!(resources(&t, &mail).contains_key(r), "{r}");
    }
    let set = &t["Resources"]["MailConfigurationSet"]["Properties"];
    assert_eq!(
        set["SuppressionOptions"]["SuppressedReasons"],
        serde_norway::from_str::<Value>("[BOUNCE, COMPLAINT]").unwrap()
    );
    for f in ["ConsoleFunction", "RollupFunction"] {
        let env = &t["Resources"][f]["Properties"]["Environment"]["Variables"];
        let picked = pick(&t, &env["SES_CONFIGURATION_SET"], &mail);
        assert!(
            matches!(picked, Value::Tagged(r) if r.value == "MailConfigurationSet"),
            "{f}: {picked:?}"
        );
    }
    for f in ["IngestFunction", "QueryFunction", "RollupFunction"] {
        for m in ["Errors", "Throttles"] {
            assert!(lambda.contains(&(f.to_owned(), m.to_owned())), "{f} {m}");
        }
    }
    // The topic's e-mail subscription exists only with an address.
    assert!(!condition(&t, "HasAlarmEmail", &[]));
    assert!(condition(
        &t,
        "HasAlarmEmail",
        &[("AlarmEmail", "ops@example.com")]
    ));
    assert_eq!(
        t["Resources"]["AlarmSubscription"]["Condition"],
        "HasAlarmEmail"
    );
    assert_eq!(
        t["Resources"]["Dashboard"]["Type"],
        "AWS::CloudWatch::Dashboard"
    );
}

/// A failed first deploy can be retried, and a kept or restored table
/// adopted (issue 30, item 5): the table is retained on stack deletion but
/// not on a failed creation, and with `ExistingTableName` the stack makes
/// no table while every function, policy, alarm and output names the
/// adopted one. Nothing refers to the table resource itself, which an
/// adopting stack does not have, but under its condition.
#[test]
fn a_failed_first_deploy_retries_and_an_existing_table_is_adopted() {
    let t = template();
    let table = &t["Resources"]["Table"];
    assert_eq!(table["DeletionPolicy"], "RetainExceptOnCreate");
    assert_eq!(table["UpdateReplacePolicy"], "Retain");
    let text = std::fs::read_to_string(repo().join("template.yaml")).unwrap();
    for reference in ["!GetAtt Table.", "!Ref Table\n", "Table.Arn"] {
        assert!(!text.contains(reference), "{reference:?} in template.yaml");
    }
    assert!(resources(&t, &[]).contains_key("Table"));
    let adopt = [("ExistingTableName", "tally-restored")];
    assert!(!resources(&t, &adopt).contains_key("Table"));
    // The first owner's resource reads the table while the stack is made:
    // it waits for the table the stack creates, and names the adopted one.
    let waits_for = &t["Resources"]["FirstOwner"]["Properties"]["Table"];
    assert!(
        matches!(pick(&t, waits_for, &[]), Value::Tagged(r) if r.tag == "Ref" && r.value == "Table")
    );
    assert!(
        matches!(pick(&t, waits_for, &adopt), Value::Tagged(r) if r.tag == "Ref" && r.value == "ExistingTableName")
    );
    // The name every reference resolves to, for some parameters.
    let name = |v: &Value, params: &[(&str, &str)]| -> String {
        let v = pick(&t, v, params);
        match v {
            Value::Tagged(r) if r.tag == "Ref" => {
                let p = r.value.as_str().unwrap();
                params
                    .iter()
                    .find(|(k, _)| *k == p)
                    .map(|(_, v)| (*v).to_owned())
                    .unwrap_or_else(|| t["Parameters"][p]["Default"].as_str().unwrap().to_owned())
            }
            other => panic!("not a name: {other:?}"),
        }
    };
    for (params, expected) in [(&[][..], "tally"), (&adopt[..], "tally-restored")] {
        let env = &t["Globals"]["Function"]["Environment"]["Variables"]["TABLE_NAME"];
        assert_eq!(name(env, params), expected);
        for function in [
            "IngestFunction",
            "QueryFunction",
            "ConsoleFunction",
            "RollupFunction",
        ] {
            let policies = t["Resources"][function]["Properties"]["Policies"]
                .as_sequence()
                .unwrap();
            let statements = policies
                .iter()
                .map(|p| pick(&t, p, params))
                .flat_map(|p| p["Statement"].as_sequence().cloned().unwrap_or_default())
                .filter(|s| {
                    s["Action"].as_sequence().is_some_and(|a| {
                        a.iter()
                            .any(|a| a.as_str().unwrap().starts_with("dynamodb:"))
                    })
                })
                .collect::<Vec<_>>();
            assert!(!statements.is_empty(), "{function}");
            for s in statements {
                let Value::Tagged(sub) = &s["Resource"] else {
                    panic!("{function}: {:?}", s["Resource"])
                };
                assert_eq!(sub.tag, "Sub");
                let parts = sub.value.as_sequence().unwrap();
                assert!(parts[0].as_str().unwrap().ends_with(":table/${Name}"));
                assert_eq!(name(&parts[1]["Name"], params), expected, "{function}");
            }
        }
        for alarm in ["TableWriteThrottlesAlarm", "TableReadThrottlesAlarm"] {
            let dims = &t["Resources"][alarm]["Properties"]["Dimensions"][0];
            assert_eq!(name(&dims["Value"], params), expected, "{alarm}");
        }
        assert_eq!(name(&t["Outputs"]["TableName"]["Value"], params), expected);
    }
}

/// The restore runbook rehearsed (infra/README.md, "Restoring the
/// table"): a restore makes a new table holding every item, and the
/// functions pointed at it answer every report as before, and go on
/// counting (a page view stored and rolled up there).
#[tokio::test]
async fn a_restored_copy_of_the_table_answers_every_report_the_same() {
    use tally_core::time::zone::utc_midnight;
    use tally_core::{DAY_MS, HOUR_MS};
    use tally_query::store::DynamoQuery;
    use tally_store::{ClientOptions, Store};
    use tally_tests::seed::{store_events, traffic};
    let h = Harness::start().await;
    let site = Site::new("kept", &["kept.example".into()], "Europe/Paris", 0).unwrap();
    h.store.create_site(&site).await.unwrap();
    let key = tally_tests::new_key(&h.store, "kept", 3).await;
    let now = utc_midnight(time::macros::date!(2026 - 12 - 01)) + 14 * HOUR_MS;
    store_events(&h.store, &site, &traffic(&site, now - 6 * DAY_MS, 6, 40, 7)).await;
    tally_tests::run_job(&h.store, now).await;

    // The restore: a new table with every item.
    let restored = Store::connect(&ClientOptions::local(&h.endpoint), "tally-restored").await;
    tally_store::table::ensure_table(restored.client(), "tally-restored")
        .await
        .unwrap();
    let items = h.scan().await;
    for item in &items {
        restored
            .client()
            .put_item()
            .table_name("tally-restored")
            .set_item(Some(item.clone()))
            .send()
            .await
            .unwrap();
    }
    let config = tally_query::Config::default();
    let reports = [
        "stats?period=7d",
        "timeseries?period=7d",
        "breakdown/page?period=7d",
        "breakdown/source?period=7d",
        "breakdown/country?period=7d",
        "stats?period=7d&filters=country%3D%3DDE",
    ];
    let read = |store: Store| {
        let api = tally_tests::Api {
            query: DynamoQuery::new(store),
            site: "kept".into(),
            key: key.clone(),
            now,
        };
        let config = &config;
        async move {
            let mut out = Vec::new();
            for path in reports {
                let (status, body) = api.call(config, path).await;
                assert_eq!(status, 200, "{path}: {body}");
                out.push(body);
            }
            out
        }
    };
    let before = read(h.store.clone()).await;
    assert!(
        before[0]["results"]["visitors"].as_u64().unwrap() > 0,
        "{}",
        before[0]
    );
    assert_eq!(read(restored.clone()).await, before);

    // Counting goes on in the restored table.
    let ingest = DynamoIngest::new(restored.clone(), SharedSalt::new());
    let body = r#"{"s":"kept","u":"https://kept.example/after-restore"}"#;
    let request = tally_tests::collect_request(body, "203.0.113.50", tally_tests::console::UA);
    let (status, _) =
        status_and_json(handle(&ingest, &ManualClock::at(now), &Config::default(), request).await);
    assert_eq!(status, 202);
    tally_tests::run_job(&restored, now + HOUR_MS).await;
    let after = read(restored).await;
    assert_eq!(
        after[0]["results"]["pageviews"].as_u64().unwrap(),
        before[0]["results"]["pageviews"].as_u64().unwrap() + 1
    );
}

/// Each function's description names the release it runs (the workspace
/// version, as `/health` and every log line do): a release bumps both.
#[test]
fn each_function_names_the_release_it_runs() {
    let t = template();
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let version = manifest
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|v| v.strip_suffix('"'))
        .unwrap();
    for function in [
        "IngestFunction",
        "QueryFunction",
        "ConsoleFunction",
        "RollupFunction",
    ] {
        let description = t["Resources"][function]["Properties"]["Description"]
            .as_str()
            .unwrap();
        assert!(
            description.starts_with(&format!("Tally {version} ")),
            "{function}: {description}"
        );
    }
    let changelog = std::fs::read_to_string(repo().join("CHANGELOG.md")).unwrap();
    assert!(
        changelog.contains(&format!("## {version}")),
        "CHANGELOG.md has a section for {version}"
    );
}

/// The first owner without a terminal (issue 30, item 3): every stack
/// has the `FirstOwner` custom resource, answered by the job's function
/// with the console's URL, `AdminEmail` and the secret a link not mailed
/// goes to (which the job may write and the `SetupLink` output names);
/// `AdminEmail` without `EmailFrom` is taken (the link goes to the
/// secret).
#[test]
fn every_stack_has_the_first_owner_resource_and_its_setup_link_secret() {
    let t = template();
    let with = [
        ("AdminEmail", "admin@example.com"),
        ("EmailFrom", "tally@example.com"),
    ];
    for params in [&with[..], &[], &[("AdminEmail", "admin@example.com")]] {
        assert!(rules_hold(&t, params), "{params:?}");
        let made = resources(&t, params);
        assert_eq!(
            made.get("FirstOwner").map(String::as_str),
            Some("Custom::TallyFirstOwner")
        );
        assert!(made.contains_key("SetupLinkSecret"));
    }
    let p = &t["Resources"]["FirstOwner"]["Properties"];
    assert!(
        matches!(&p["SetupLinkSecret"], Value::Tagged(r) if r.tag == "Ref" && r.value == "SetupLinkSecret")
    );
    let output = format!("{:?}", t["Outputs"]["SetupLink"]["Value"]);
    assert!(
        output.contains("get-secret-value") && output.contains("${SetupLinkSecret}"),
        "{output}"
    );
    let Value::Tagged(token) = &p["ServiceToken"] else {
        panic!("{:?}", p["ServiceToken"])
    };
    assert_eq!(
        (token.tag.to_string().as_str(), token.value.as_str()),
        ("!GetAtt", Some("RollupFunction.Arn"))
    );
    let url = format!("{:?}", pick(&t, &p["ConsoleUrl"], &with));
    assert!(
        url.contains("execute-api") && url.contains("/console"),
        "{url}"
    );
    let mine = [
        ("AdminEmail", "admin@example.com"),
        ("EmailFrom", "tally@example.com"),
        ("PublicUrl", "https://stats.example.com"),
    ];
    let url = format!("{:?}", pick(&t, &p["ConsoleUrl"], &mine));
    assert!(url.contains("${PublicUrl}/console"), "{url}");
}

/// Cost safety (issue 30, item 8): the table has on-demand ceilings by
/// default (0 lifts one), a budget to the alarm topic exists only when
/// given a monthly amount, both functions' reservations are off by default
/// (a new account's pool of 10 would refuse any), and everything billed
/// carries the stack's cost tag.
#[test]
fn cost_is_capped_by_default_and_budgeted_on_request() {
    let t = template();
    let limit = |v: &Value, params: &[(&str, &str)]| -> Option<String> {
        match pick(&t, v, params) {
            Value::Tagged(r) if r.tag == "Ref" && r.value == "AWS::NoValue" => None,
            Value::Tagged(r) if r.tag == "Ref" => {
                let p = r.value.as_str().unwrap();
                Some(
                    params
                        .iter()
                        .find(|(k, _)| *k == p)
                        .map(|(_, v)| (*v).to_owned())
                        .unwrap_or_else(|| {
                            t["Parameters"][p]["Default"].as_u64().unwrap().to_string()
                        }),
                )
            }
            other => panic!("{other:?}"),
        }
    };
    let throughput = &t["Resources"]["Table"]["Properties"]["OnDemandThroughput"];
    assert_eq!(
        limit(&throughput["MaxReadRequestUnits"], &[]),
        Some("20000".into())
    );
    assert_eq!(
        limit(&throughput["MaxWriteRequestUnits"], &[]),
        Some("4000".into())
    );
    assert_eq!(
        limit(
            &throughput["MaxWriteRequestUnits"],
            &[("TableMaxWriteUnits", "0")]
        ),
        None
    );
    assert!(!resources(&t, &[]).contains_key("CostBudget"));
    let budget = [("MonthlyBudgetUsd", "50")];
    let made = resources(&t, &budget);
    assert_eq!(
        made.get("CostBudget").map(String::as_str),
        Some("AWS::Budgets::Budget")
    );
    assert!(made.contains_key("AlarmTopicPolicy"));
    for (function, param) in [
        ("IngestFunction", "IngestReservedConcurrency"),
        ("QueryFunction", "QueryReservedConcurrency"),
    ] {
        let reserved = &t["Resources"][function]["Properties"]["ReservedConcurrentExecutions"];
        assert_eq!(limit(reserved, &[]), None, "{function}");
        assert_eq!(
            limit(reserved, &[(param, "50")]),
            Some("50".into()),
            "{function}"
        );
    }
    assert!(matches!(
        &t["Globals"]["Function"]["Tags"]["tally:stack"],
        Value::Tagged(_)
    ));
    let table_tags = t["Resources"]["Table"]["Properties"]["Tags"]
        .as_sequence()
        .unwrap();
    assert!(table_tags.iter().any(|tag| tag["Key"] == "tally:stack"));
}

/// infra/README.md's parameter and output tables, as the template gives
/// them: name, default and description of every parameter, name and
/// description of every output, in the template's order.
fn reference_tables(t: &Value) -> String {
    let one_line = |v: &Value| {
        v.as_str()
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut out = String::from("| parameter | default | what it does |\n| --- | --- | --- |\n");
    for (name, p) in t["Parameters"].as_mapping().unwrap() {
        let default = match &p["Default"] {
            Value::Null => "(required)".to_owned(),
            Value::String(s) if s.is_empty() => "(empty)".to_owned(),
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => panic!("{other:?}"),
        };
        out.push_str(&format!(
            "| `{}` | `{default}` | {} |\n",
            name.as_str().unwrap(),
            one_line(&p["Description"])
        ));
    }
    out.push_str("\n| output | what it gives |\n| --- | --- |\n");
    for (name, o) in t["Outputs"].as_mapping().unwrap() {
        out.push_str(&format!(
            "| `{}` | {} |\n",
            name.as_str().unwrap(),
            one_line(&o["Description"])
        ));
    }
    out
}

/// The parameter and output tables of infra/README.md are the template's
/// (issue 30, item 8): a parameter added, renamed or with another default
/// fails this until the README says so (the expected text is printed).
#[test]
fn infra_readme_lists_every_parameter_and_output_as_the_template_does() {
    const START: &str = "<!-- reference: generated from template.yaml, checked by tests/tests/stack/deploy.rs -->\n";
    const END: &str = "<!-- end reference -->";
    let t = template();
    let readme = std::fs::read_to_string(repo().join("infra/README.md")).unwrap();
    let expected = reference_tables(&t);
    let written = readme
        .split_once(START)
        .and_then(|(_, rest)| rest.split_once(END))
        .map(|(tables, _)| tables);
    assert_eq!(
        written,
        Some(expected.as_str()),
        "infra/README.md's tables between the markers should be:\n{START}{expected}{END}"
    );
}

/// Your own domain (issue 30, item 4): with `DomainName` the stack makes a
/// distribution in front of the HTTP API on that name, with the origin
/// secret as an origin custom header, the viewer's address and geography
/// forwarded, the viewer's host copied for the console's origin check,
/// DNS records when a hosted zone is given and the WAF ACL when one is;
/// ingest trusts the viewer headers (with the secret), the API's own
/// endpoint stays on as the origin, and every URL the stack gives out is
/// on the domain.
#[test]
fn a_domain_puts_a_distribution_in_front_with_the_origin_secret() {
    let t = template();
    let domain = [
        ("DomainName", "stats.example.com"),
        (
            "CertificateArn",
            "arn:aws:acm:us-east-1:123456789012:certificate/abc",
        ),
        ("OriginVerifySecret", ORIGIN_SECRET),
    ];
    assert!(rules_hold(&t, &domain));
    // A certificate is needed; the origin secret is generated when not
    // given.
    let without = |missing: &str| -> Vec<(&str, &str)> {
        domain
            .iter()
            .copied()
            .filter(|(k, _)| *k != missing)
            .collect()
    };
    assert!(!rules_hold(&t, &without("CertificateArn")));
    assert!(rules_hold(&t, &without("OriginVerifySecret")));
    let mut with_url = domain.to_vec();
    with_url.push(("IngestFrontDoor", "FunctionUrl"));
    assert!(
        !rules_hold(&t, &with_url),
        "the distribution's origin is the API"
    );
    assert!(!resources(&t, &[]).contains_key("Distribution"));
    let made = resources(&t, &domain);
    for r in [
        "Distribution",
        "CachePolicy",
        "OriginRequestPolicy",
        "ViewerHostFunction",
    ] {
        assert!(made.contains_key(r), "{r}");
    }
    assert!(!made.contains_key("DomainRecordA"), "no zone, no records");
    let mut zoned = domain.to_vec();
    zoned.push(("HostedZoneId", "Z123"));
    zoned.push((
        "WebAclArn",
        "arn:aws:wafv2:us-east-1:123456789012:global/webacl/x/y",
    ));
    let made = resources(&t, &zoned);
    assert!(made.contains_key("DomainRecordA") && made.contains_key("DomainRecordAAAA"));
    let config = &t["Resources"]["Distribution"]["Properties"]["DistributionConfig"];
    assert!(
        matches!(pick(&t, &config["WebACLId"], &zoned), Value::Tagged(r) if r.value == "WebAclArn")
    );
    let origin = &config["Origins"][0];
    assert_eq!(
        origin["OriginCustomHeaders"][0]["HeaderName"],
        "X-Tally-Origin-Verify"
    );
    // The header's value is resolved from the secret by CloudFormation.
    assert!(
        matches!(&origin["OriginCustomHeaders"][0]["HeaderValue"], Value::Tagged(r) if r.tag == "Sub" && r.value == "{{resolve:secretsmanager:${OriginSecret}:SecretString}}"),
        "{:?}",
        origin["OriginCustomHeaders"][0]["HeaderValue"]
    );
    assert!(made.contains_key("OriginSecret"));
    let forwarded: Vec<&str> = t["Resources"]["OriginRequestPolicy"]["Properties"]
        ["OriginRequestPolicyConfig"]["HeadersConfig"]["Headers"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    for header in [
        "CloudFront-Viewer-Address",
        "CloudFront-Viewer-Country",
        "User-Agent",
        "Accept-Language",
        "X-Forwarded-Host",
        "X-Tally-Proxy",
    ] {
        assert!(forwarded.contains(&header), "{header}");
    }
    // Ingest trusts the viewer headers, with the secret; the API's own
    // endpoint stays the origin.
    let env = &t["Resources"]["IngestFunction"]["Properties"]["Environment"]["Variables"];
    assert_eq!(pick(&t, &env["TALLY_BEHIND_CLOUDFRONT"], &domain), "1");
    assert!(
        matches!(pick(&t, &env["TALLY_ORIGIN_SECRET_ARN"], &domain), Value::Tagged(r) if r.value == "OriginSecret")
    );
    assert_eq!(
        pick(
            &t,
            &t["Resources"]["HttpApi"]["Properties"]["DisableExecuteApiEndpoint"],
            &domain
        ),
        &Value::Bool(false)
    );
    // Every URL the stack gives out is on the domain.
    let on_domain =
        |v: &Value| format!("{:?}", pick(&t, v, &domain)).contains("https://${DomainName}");
    let console_env = &t["Resources"]["ConsoleFunction"]["Properties"]["Environment"]["Variables"];
    assert!(on_domain(&console_env["INGEST_URL"]));
    assert!(on_domain(&console_env["PUBLIC_URL"]));
    let job_env = &t["Resources"]["RollupFunction"]["Properties"]["Environment"]["Variables"];
    assert!(on_domain(&job_env["PUBLIC_URL"]));
    for output in ["ScriptTag", "DashboardUrl", "ConsoleUrl"] {
        assert!(on_domain(&t["Outputs"][output]["Value"]), "{output}");
    }
}
