//! Running a case: its site, its fixtures through the ingest handler, its
//! requests through the query and ingest handlers, and Plausible's
//! expectations compared with the answers.

use crate::cases::{Case, Fixture, GoalSpec, Step};
use crate::seed::{self, PLAUSIBLE_UA};
use lambda_http::Body;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use tally_core::Millis;
use tally_core::engine::goal::{Goal, GoalRule, PageMatch};
use tally_core::ingest::site::Site;
use tally_core::time::zone::{parse_date, utc_midnight};
use tally_ingest::store::DynamoIngest;
use tally_query::store::DynamoQuery;
use tally_store::clock::ManualClock;
use tally_tests::Harness;

/// The clock of cases that set none and have no dated fixture.
const DEFAULT_NOW: &str = "2026-06-15 12:00:00";

/// The store and handlers one case file's cases share (each case has sites
/// of its own).
pub struct Rig {
    pub h: Harness,
    /// The handlers' store: the harness's table through a client with the
    /// batch timeouts, so that a case reading a year of raw hours does not
    /// time out another case's requests on the shared server.
    store: tally_store::Store,
    ingest: DynamoIngest,
    query: DynamoQuery,
    /// A site and key that are not the case's (`key: other`).
    other: (String, String),
}

impl Rig {
    pub async fn new() -> Self {
        let h = Harness::start().await;
        let store = tally_store::Store::connect(
            &tally_store::ClientOptions::local(&h.endpoint).for_batch(),
            "tally",
        )
        .await;
        let other = Site::new("other.conformance", &["other.example".into()], "UTC", 0).unwrap();
        store.create_site(&other).await.unwrap();
        let other_key = tally_tests::new_key(&store, &other.id, 9).await;
        let ingest = DynamoIngest::new(store.clone(), tally_store::salt::SharedSalt::new());
        let query = DynamoQuery::new(store.clone());
        Self {
            h,
            store,
            ingest,
            query,
            other: (other.id, other_key),
        }
    }
}

/// A user's client: user agent and CloudFront viewer headers.
type Client = (String, Vec<(&'static str, String)>);

/// A case's sites, keys and clock.
struct Ctx<'a> {
    rig: &'a Rig,
    /// Site ids, `$SITE` first.
    sites: Vec<String>,
    keys: Vec<String>,
    now: Millis,
    /// Clients without a user so far.
    anon: u32,
    /// Each user's client (user agent, viewer headers), set by the user's
    /// first fixture: Plausible's session takes its browser, system,
    /// device and place from its first event.
    clients: std::collections::HashMap<String, Client>,
    /// The `query` of the last v2 answer (`v2: $LAST_QUERY` posts it back).
    last_query: Option<Value>,
    /// The `results` of the last answer (`disjoint`).
    last_results: Value,
}

/// Runs one case: `Ok` when every expectation holds, else what differed.
pub async fn case(
    rig: &Rig,
    site_id: &str,
    file_now: Option<&str>,
    c: &Case,
) -> Result<(), String> {
    let now = case_now(c, file_now)?;
    let times: Vec<Millis> = c
        .events
        .iter()
        .map(|f| time(f.at.as_deref(), now))
        .collect::<Result<_, _>>()?;
    let created = match &c.site.created {
        Some(day) => utc_midnight(parse_date(day).ok_or("bad site.created")?),
        None => {
            let earliest = times.iter().copied().chain([now]).min().unwrap_or(now);
            (earliest / tally_core::DAY_MS - 1) * tally_core::DAY_MS
        }
    };
    let domains = domains(c);
    let zone = c.site.timezone.as_deref().unwrap_or("UTC");
    let mut sites = vec![site_id.to_owned()];
    for n in 2..=(c.site.extra_sites + 1) {
        sites.push(format!("{site_id}-{n}"));
    }
    let mut keys = Vec::new();
    for id in &sites {
        let mut own = domains.clone();
        own.push(id.clone());
        let mut site = Site::new(id, &own, zone, created).map_err(|e| format!("site: {e}"))?;
        // Reads come from raw events (no job runs), kept as long as a
        // site may keep them, so fixtures of any age stay readable.
        site.retention_days = tally_core::ingest::site::MAX_RETENTION_DAYS;
        rig.store
            .create_site(&site)
            .await
            .map_err(|e| format!("site: {e}"))?;
        keys.push(tally_tests::new_key(&rig.store, id, 7).await);
        for (i, g) in c.site.goals.iter().enumerate() {
            let goal = goal(i, g)?;
            rig.store
                .put_goal(id, &goal)
                .await
                .map_err(|e| format!("goal: {e}"))?;
        }
    }
    let mut ctx = Ctx {
        rig,
        sites,
        keys,
        now,
        anon: 0,
        clients: std::collections::HashMap::new(),
        last_query: None,
        last_results: Value::Null,
    };
    for (n, (f, at)) in c.events.iter().zip(&times).enumerate() {
        seed_one(&mut ctx, n, f, *at)
            .await
            .map_err(|e| format!("fixture {n}: {e}"))?;
    }
    let mut errors = Vec::new();
    for (label, step) in c
        .before
        .iter()
        .map(|s| ("before", s))
        .chain([("", &c.step)])
        .chain(c.then.iter().map(|s| ("then", s)))
    {
        if let Err(e) = run_step(&mut ctx, step).await {
            errors.push(if label.is_empty() {
                e
            } else {
                format!("{label}: {e}")
            });
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// The case's clock: its own, else the day after its latest dated fixture
/// (noon), else the file's, else [`DEFAULT_NOW`].
fn case_now(c: &Case, file_now: Option<&str>) -> Result<Millis, String> {
    if let Some(now) = &c.now {
        return absolute(now);
    }
    let dated = c
        .events
        .iter()
        .filter_map(|f| f.at.as_deref())
        .filter(|at| !is_relative(at))
        .map(absolute)
        .collect::<Result<Vec<_>, _>>()?;
    match dated.iter().max() {
        Some(latest) => {
            Ok((latest / tally_core::DAY_MS + 1) * tally_core::DAY_MS + 12 * tally_core::HOUR_MS)
        }
        None => absolute(file_now.unwrap_or(DEFAULT_NOW)),
    }
}

fn is_relative(at: &str) -> bool {
    at == "now" || at.starts_with('-') || at.starts_with('+')
}

/// `YYYY-MM-DD HH:MM:SS` (or a date) in UTC, ms.
pub fn absolute(text: &str) -> Result<Millis, String> {
    let (day, clock) = text.split_once(' ').unwrap_or((text, "00:00:00"));
    let date = parse_date(day).ok_or_else(|| format!("bad date {text:?}"))?;
    let parts: Vec<i64> = clock
        .split(':')
        .map(|p| p.parse::<i64>().map_err(|_| format!("bad time {text:?}")))
        .collect::<Result<_, _>>()?;
    let [h, m, s] = parts[..] else {
        return Err(format!("bad time {text:?}"));
    };
    Ok(utc_midnight(date) + ((h * 60 + m) * 60 + s) * 1000)
}

/// A fixture's time: absolute, `now`, or relative (`-5m`, `+1d`).
fn time(at: Option<&str>, now: Millis) -> Result<Millis, String> {
    let Some(at) = at else { return Ok(now) };
    if at == "now" {
        return Ok(now);
    }
    if !is_relative(at) {
        return absolute(at);
    }
    let (sign, rest) = at.split_at(1);
    let unit = rest.chars().last().ok_or("empty offset")?;
    let n: i64 = rest[..rest.len() - 1]
        .parse()
        .map_err(|_| format!("bad offset {at:?}"))?;
    let ms = n * match unit {
        's' => 1000,
        'm' => 60_000,
        'h' => tally_core::HOUR_MS,
        'd' => tally_core::DAY_MS,
        _ => return Err(format!("bad offset {at:?}")),
    };
    Ok(if sign == "-" { now - ms } else { now + ms })
}

/// The sites' domains beside their own ids: every host the case's events
/// and posts use (as `*.` of their last label: Plausible does not check
/// the host).
fn domains(c: &Case) -> Vec<String> {
    let mut hosts: BTreeSet<String> = BTreeSet::from(["*.com".to_owned()]);
    let mut add = |host: &str| {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        match host.rsplit_once('.') {
            Some((_, tld)) if !tld.is_empty() => hosts.insert(format!("*.{tld}")),
            _ if !host.is_empty() => hosts.insert(host),
            _ => false,
        };
    };
    for f in &c.events {
        if let Some(h) = &f.hostname {
            add(h);
        }
    }
    for step in c.before.iter().chain([&c.step]).chain(&c.then) {
        if let Some(body) = &step.post {
            for key in ["u", "url"] {
                if let Some(host) = body[key]
                    .as_str()
                    .and_then(|u| url::Url::parse(u.trim()).ok())
                    .and_then(|u| u.host_str().map(str::to_owned))
                {
                    add(&host);
                }
            }
        }
    }
    hosts
        .into_iter()
        .filter(|d| tally_core::ingest::site::normalize_domain(d).is_ok())
        .collect()
}

fn goal(i: usize, g: &GoalSpec) -> Result<Goal, String> {
    if let Some(c) = &g.currency
        && !(c.len() == 3 && c.bytes().all(|b| b.is_ascii_uppercase()))
    {
        return Err(format!("goal currency {c:?} is not a code"));
    }
    let (name, rule) = match (&g.event, &g.page) {
        (Some(event), None) => (
            event.clone(),
            GoalRule::Event {
                name: event.clone(),
            },
        ),
        (None, Some(page)) => (
            format!("Visit {page}"),
            GoalRule::Page {
                pattern: page.clone(),
                matching: if page.contains('*') {
                    PageMatch::Wildcard
                } else {
                    PageMatch::Exact
                },
            },
        ),
        _ => return Err("a goal is `event` or `page`".into()),
    };
    let name = g.display.clone().unwrap_or(name);
    Goal::new(&format!("g{i}"), &name, rule, 0).map_err(|e| format!("goal {name}: {e}"))
}

/// Stores one fixture through `POST /api/event`.
async fn seed_one(ctx: &mut Ctx<'_>, n: usize, f: &Fixture, at: Millis) -> Result<(), String> {
    let mut r = seed::request(&ctx.sites[0], f, at, n, &mut ctx.anon);
    if let Some(user) = &f.user {
        let (ua, geo) = ctx
            .clients
            .entry(user.to_string())
            .or_insert_with(|| (r.ua.clone(), r.geo.clone()));
        r.ua.clone_from(ua);
        r.geo.clone_from(geo);
    }
    let mut headers: Vec<(String, String)> = r
        .geo
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    headers.push(("user-agent".into(), r.ua.clone()));
    let mut raw = f.raw.clone();
    for (field, version) in seed::unreadable_versions(f, &r.ua) {
        raw.entry(field).or_insert(version);
    }
    let before = if raw.is_empty() {
        BTreeSet::new()
    } else {
        site_items(ctx.rig, &ctx.sites[0]).await
    };
    let answer = ingest(ctx.rig, &r.body.to_string(), &r.ip, &headers, r.at).await;
    if answer.status == 202 && !answer.dropped {
        if !raw.is_empty() {
            overwrite(ctx.rig, &ctx.sites[0], &before, &raw).await?;
        }
        Ok(())
    } else {
        Err(format!(
            "{} -> {} {}{}",
            r.body,
            answer.status,
            answer.text,
            if answer.dropped { " (dropped)" } else { "" }
        ))
    }
}

/// The sort keys of a site's stored events.
async fn site_items(rig: &Rig, site: &str) -> BTreeSet<(String, String)> {
    let prefix = format!("SITE#{site}#");
    rig.h
        .event_items()
        .await
        .iter()
        .filter_map(|i| {
            let pk = tally_store::item::string(i, "pk")?;
            let sk = tally_store::item::string(i, "sk")?;
            pk.starts_with(&prefix)
                .then(|| (pk.to_owned(), sk.to_owned()))
        })
        .collect()
}

/// Writes a fixture's `raw` fields over the event ingest just stored (a
/// version as Tally stores it: after its browser's or system's name).
async fn overwrite(
    rig: &Rig,
    site: &str,
    before: &BTreeSet<(String, String)>,
    raw: &BTreeMap<String, Option<String>>,
) -> Result<(), String> {
    use aws_sdk_dynamodb::types::AttributeValue;
    let after = site_items(rig, site).await;
    let new: Vec<_> = after.difference(before).collect();
    let [(pk, sk)] = new[..] else {
        return Err(format!("raw: {} new items", new.len()));
    };
    let mut item = rig
        .h
        .event_items()
        .await
        .into_iter()
        .find(|i| {
            tally_store::item::string(i, "pk") == Some(pk.as_str())
                && tally_store::item::string(i, "sk") == Some(sk.as_str())
        })
        .ok_or("raw: item gone")?;
    for (field, value) in raw {
        let named = |name: &str| {
            let name = tally_store::item::string(&item, name)
                .unwrap_or(tally_core::ingest::classify::ua::UNKNOWN);
            value
                .as_deref()
                .and_then(|v| tally_core::ingest::classify::ua::with_version(name, Some(v)))
        };
        let value = &match field.as_str() {
            "browser_version" => named("br"),
            "operating_system_version" => named("os"),
            _ => value.clone(),
        };
        let attribute = match field.as_str() {
            "referrer" => "rf",
            "referrer_source" => "src",
            "hostname" => "h",
            "pathname" => "p",
            "utm_source" => "us",
            "utm_medium" => "um",
            "utm_campaign" => "uc",
            "utm_content" => "ux",
            "utm_term" => "ut",
            "browser" => "br",
            "operating_system" => "os",
            "browser_version" => "bv",
            "operating_system_version" => "ov",
            "country_code" => "co",
            other => return Err(format!("raw: no stored attribute for {other}")),
        };
        match value {
            Some(v) => item.insert(attribute.to_owned(), AttributeValue::S(v.clone())),
            None => item.remove(attribute),
        };
    }
    rig.store
        .client()
        .put_item()
        .table_name(rig.store.table())
        .set_item(Some(item))
        .send()
        .await
        .map_err(|e| format!("raw: {e}"))?;
    Ok(())
}

/// An answer of either handler.
#[derive(Debug)]
struct Answer {
    status: u16,
    dropped: bool,
    text: String,
    json: Option<Value>,
}

fn answer(response: lambda_http::Response<Body>) -> Answer {
    let text = match response.body() {
        Body::Text(t) => t.clone(),
        Body::Binary(b) => String::from_utf8_lossy(b).into_owned(),
        _ => String::new(),
    };
    Answer {
        status: response.status().as_u16(),
        dropped: response.headers().get("x-plausible-dropped").is_some(),
        json: serde_json::from_str(&text).ok(),
        text,
    }
}

/// `POST /api/event` from `ip` at `at`, behind CloudFront.
async fn ingest(
    rig: &Rig,
    body: &str,
    ip: &str,
    headers: &[(String, String)],
    at: Millis,
) -> Answer {
    let mut request = tally_tests::post_request("/api/event", body, ip, "");
    let viewer = [
        ("cloudfront-viewer-address".to_owned(), format!("{ip}:443")),
        (
            tally_lambda::request::ORIGIN_VERIFY_HEADER.to_owned(),
            ORIGIN_SECRET.to_owned(),
        ),
    ];
    for (k, v) in viewer.iter().chain(headers) {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(k.as_bytes()),
            http::HeaderValue::from_str(v),
        ) {
            request.headers_mut().append(name, value);
        }
    }
    let config = tally_ingest::Config {
        cloudfront: tally_lambda::request::OriginVerify::new(ORIGIN_SECRET),
        ..tally_ingest::Config::default()
    };
    let clock = ManualClock::at(at);
    answer(tally_ingest::handle(&rig.ingest, &clock, &config, request).await)
}

/// The origin secret the conformance run's CloudFront adds.
const ORIGIN_SECRET: &str = "conformance-origin-secret-0123456789abcdef";

/// A query request at the case's clock (one second after it).
async fn query(ctx: &Ctx<'_>, request: http::Request<Body>) -> Answer {
    let clock = ManualClock::at(ctx.now + 1000);
    // Ranges of months read every hour's raw partition (no job has rolled
    // them up): given the time, not answered 503.
    let config = tally_query::Config {
        fold_budget: std::time::Duration::from_secs(300),
        ..tally_tests::raw_only()
    };
    answer(tally_query::handle_with(&ctx.rig.query, &clock, &config, request).await)
}

impl Ctx<'_> {
    fn site(&self, step: &Step) -> Result<String, String> {
        match step.site_id.as_deref() {
            Some("other") => Ok(self.rig.other.0.clone()),
            Some(id) => Ok(id.to_owned()),
            None => self.nth(step).map(|i| self.sites[i].clone()),
        }
    }

    fn nth(&self, step: &Step) -> Result<usize, String> {
        let i = usize::from(step.on.unwrap_or(1)).saturating_sub(1);
        if i < self.sites.len() {
            Ok(i)
        } else {
            Err(format!("no site {}", i + 1))
        }
    }

    fn authorization(&self, step: &Step) -> Result<Option<String>, String> {
        let own = || self.nth(step).map(|i| self.keys[i].clone());
        Ok(match step.key.as_deref() {
            None => Some(format!("Bearer {}", own()?)),
            Some("none") => None,
            Some("other") => Some(format!("Bearer {}", self.rig.other.1)),
            Some("unknown") => Some(format!(
                "Bearer {}",
                tally_core::account::auth::key_from_bytes(&self.sites[0], &[0xAB; 20])
            )),
            Some(literal) => Some(literal.to_owned()),
        })
    }

    /// `$SITE`, `$SITE2`, … in a text.
    fn placeholders(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (i, id) in self.sites.iter().enumerate().rev() {
            let name = if i == 0 {
                "$SITE".to_owned()
            } else {
                format!("$SITE{}", i + 1)
            };
            out = out.replace(&name, id);
        }
        out
    }
}

/// A step's request and its checks.
async fn run_step(ctx: &mut Ctx<'_>, step: &Step) -> Result<(), String> {
    let mut errors = Vec::new();
    let got = if let Some((path, params)) = &step.get {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        if !params.contains_key("site_id") {
            q.append_pair("site_id", &ctx.site(step)?);
        }
        for (k, v) in params {
            match v {
                Value::Null => {}
                Value::String(s) => {
                    q.append_pair(k, &ctx.placeholders(s));
                }
                other => {
                    q.append_pair(k, &other.to_string());
                }
            }
        }
        let mut b = http::Request::builder().uri(format!("/api/v1/stats/{path}?{}", q.finish()));
        if let Some(auth) = ctx.authorization(step)? {
            b = b.header("authorization", auth);
        }
        for (k, v) in &step.headers {
            b = b.header(k.as_str(), v.as_str());
        }
        Some(query(ctx, b.body(Body::Empty).unwrap()).await)
    } else if let Some(v2) = &step.v2 {
        let body = match v2 {
            Value::Object(m) => {
                let mut m = m.clone();
                if !m.contains_key("site_id") {
                    m.insert("site_id".into(), json!(ctx.site(step)?));
                }
                m.retain(|_, v| !v.is_null());
                ctx.placeholders(&Value::Object(m).to_string())
            }
            Value::String(raw) if raw == "$LAST_QUERY" => ctx
                .last_query
                .as_ref()
                .map(Value::to_string)
                .ok_or("no earlier query")?,
            Value::String(raw) => ctx.placeholders(raw),
            other => other.to_string(),
        };
        let mut b = http::Request::builder()
            .method("POST")
            .uri("/api/v2/query")
            .header("content-type", "application/json");
        if let Some(auth) = ctx.authorization(step)? {
            b = b.header("authorization", auth);
        }
        let got = query(ctx, b.body(Body::Text(body)).unwrap()).await;
        ctx.last_query = got.json.as_ref().map(|j| j["query"].clone());
        Some(got)
    } else if let Some(post) = &step.post {
        let body = match post {
            Value::String(raw) => ctx.placeholders(raw),
            other => ctx.placeholders(&other.to_string()),
        };
        let mut headers: Vec<(String, String)> = step
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        match step.ua.as_deref() {
            Some("") => {}
            Some(ua) => headers.push(("user-agent".into(), ua.to_owned())),
            None => headers.push(("user-agent".into(), PLAUSIBLE_UA.to_owned())),
        }
        let at = time(step.at.as_deref(), ctx.now)?;
        // The client address: Plausible's tests set it with
        // X-Forwarded-For; behind CloudFront it is the viewer address.
        let ip = step
            .headers
            .get("x-forwarded-for")
            .map_or("198.51.100.7", String::as_str)
            .to_owned();
        Some(ingest(ctx.rig, &body, &ip, &headers, at).await)
    } else {
        None
    };
    if let Some(got) = &got {
        expect(step, got, &mut errors);
        let results = got
            .json
            .as_ref()
            .map_or(Value::Null, |j| j["results"].clone());
        if step.disjoint {
            let shared: Vec<&Value> = results
                .as_array()
                .into_iter()
                .flatten()
                .filter(|r| ctx.last_results.as_array().is_some_and(|l| l.contains(r)))
                .collect();
            if !results.is_array() || !shared.is_empty() {
                errors.push(format!("results repeat earlier rows: {results}"));
            }
        }
        ctx.last_results = results;
    }
    for (field, value) in &step.stored {
        if let Err(e) = stored(ctx, step, field, value).await {
            errors.push(e);
        }
    }
    if let Some(n) = step.count {
        totals(ctx, step, "events", n, &mut errors).await?;
    }
    if let Some(n) = step.visitors {
        totals(ctx, step, "visitors", n, &mut errors).await?;
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// Plausible's assertions on one answer.
fn expect(step: &Step, got: &Answer, errors: &mut Vec<String>) {
    let want_status = step
        .status
        .unwrap_or(if step.post.is_some() { 202 } else { 200 });
    if got.status != want_status {
        errors.push(format!(
            "status {} (want {want_status}): {}",
            got.status,
            clip(&got.text)
        ));
        return;
    }
    if let Some(text) = &step.text
        && &got.text != text
    {
        errors.push(format!("body {:?} (want {text:?})", clip(&got.text)));
    }
    if let Some(d) = step.dropped
        && got.dropped != d
    {
        errors.push(format!("x-plausible-dropped {} (want {d})", got.dropped));
    }
    let needs_json = step.body.is_some()
        || step.results.is_some()
        || step.pattern.is_some()
        || !step.contains.is_empty()
        || !step.absent.is_empty()
        || !step.lengths.is_empty()
        || !step.rows.is_empty()
        || !step.equals.is_empty();
    if !needs_json {
        return;
    }
    let Some(json) = &got.json else {
        errors.push(format!("not JSON: {}", clip(&got.text)));
        return;
    };
    if let Some(body) = &step.body
        && !same(json, body)
    {
        errors.push(format!("body {} (want {body})", clip(&json.to_string())));
    }
    if let Some(results) = &step.results
        && !same(&json["results"], results)
    {
        errors.push(format!(
            "results {} (want {results})",
            clip(&json["results"].to_string())
        ));
    }
    if let Some(pattern) = &step.pattern
        && !matches(json, pattern)
    {
        errors.push(format!(
            "{} does not match {pattern}",
            clip(&json.to_string())
        ));
    }
    for (pointer, part) in &step.contains {
        match json.pointer(pointer).and_then(Value::as_str) {
            Some(s) if s.contains(part.as_str()) => {}
            other => errors.push(format!("{pointer}: {other:?} lacks {part:?}")),
        }
    }
    for (pointer, want) in &step.equals {
        match json.pointer(pointer) {
            Some(got) if same(got, want) => {}
            got => errors.push(format!("{pointer}: {got:?} (want {want})")),
        }
    }
    for row in &step.rows {
        let found = json["results"]
            .as_array()
            .is_some_and(|rows| rows.iter().any(|r| same(r, row)));
        if !found {
            errors.push(format!(
                "results {} lack {row}",
                clip(&json["results"].to_string())
            ));
        }
    }
    for (pointer, n) in &step.lengths {
        let len = json
            .pointer(pointer)
            .and_then(Value::as_array)
            .map(Vec::len);
        if len != Some(*n) {
            errors.push(format!("{pointer}: length {len:?} (want {n})"));
        }
    }
    for pointer in &step.absent {
        if json.pointer(pointer).is_some_and(|v| !v.is_null()) {
            errors.push(format!(
                "{pointer} present: {}",
                json.pointer(pointer).unwrap()
            ));
        }
    }
}

fn clip(s: &str) -> String {
    if s.len() <= 400 {
        return s.to_owned();
    }
    let mut end = 400;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// JSON equality with numbers compared by value (Elixir's `==`: `50 ==
/// 50.0`).
pub fn same(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Number(a), Value::Number(b)) => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(1.0),
            _ => a == b,
        },
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && b.iter().all(|(k, v)| a.get(k).is_some_and(|g| same(g, v)))
        }
        _ => got == want,
    }
}

/// Elixir's `%{…} = value`: a map pattern needs only its keys.
fn matches(got: &Value, pattern: &Value) -> bool {
    match (got, pattern) {
        (Value::Object(a), Value::Object(b)) => b
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|g| matches(g, v))),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| matches(x, y))
        }
        _ => same(got, pattern),
    }
}

/// The v2 dimension that shows a stored field, and how Plausible's Stats
/// API shows an empty value of it.
fn stored_dimension(field: &str) -> Option<(String, &'static str)> {
    if let Some(key) = field.strip_prefix("props.") {
        return Some((format!("event:props:{key}"), "(none)"));
    }
    let (dim, empty) = match field {
        "hostname" => ("event:hostname", "(none)"),
        "pathname" => ("event:page", "(none)"),
        "name" => ("event:name", "(none)"),
        "referrer_source" => ("visit:source", "Direct / None"),
        "referrer" => ("visit:referrer", "Direct / None"),
        "acquisition_channel" => ("visit:channel", "(not set)"),
        "utm_source" => ("visit:utm_source", "(not set)"),
        "utm_medium" => ("visit:utm_medium", "(not set)"),
        "utm_campaign" => ("visit:utm_campaign", "(not set)"),
        "utm_content" => ("visit:utm_content", "(not set)"),
        "utm_term" => ("visit:utm_term", "(not set)"),
        "screen_size" => ("visit:device", "(not set)"),
        "browser" => ("visit:browser", "(not set)"),
        "browser_version" => ("visit:browser_version", "(not set)"),
        "operating_system" => ("visit:os", "(not set)"),
        "operating_system_version" => ("visit:os_version", "(not set)"),
        "country_code" => ("visit:country", "(not set)"),
        "subdivision1_code" => ("visit:region", "(not set)"),
        "city_geoname_id" => ("visit:city", "(not set)"),
        "entry_page" => ("visit:entry_page", "(none)"),
        "exit_page" => ("visit:exit_page", "(none)"),
        _ => return None,
    };
    Some((dim.to_owned(), empty))
}

/// A v2 query on the step's site over all time.
async fn v2_all(ctx: &Ctx<'_>, step: &Step, mut body: Value) -> Result<Value, String> {
    body["site_id"] = json!(ctx.site(step)?);
    body["date_range"] = json!("all");
    let mut b = http::Request::builder()
        .method("POST")
        .uri("/api/v2/query")
        .header("content-type", "application/json");
    let own_key = Step {
        on: step.on,
        ..Step::default()
    };
    if let Some(auth) = ctx.authorization(&own_key)? {
        b = b.header("authorization", auth);
    }
    let got = query(ctx, b.body(Body::Text(body.to_string())).unwrap()).await;
    match (got.status, got.json) {
        (200, Some(json)) => Ok(json),
        (status, _) => Err(format!("{body}: {status} {}", clip(&got.text))),
    }
}

/// A stored field, as Plausible's test reads it, through the dimension
/// that shows it: every row of the site has the value (an empty value as
/// the API shows it), or for `scroll_depth` the page's metric.
async fn stored(ctx: &Ctx<'_>, step: &Step, field: &str, want: &Value) -> Result<(), String> {
    if field == "scroll_depth" {
        let json = v2_all(
            ctx,
            step,
            json!({"metrics": ["scroll_depth"], "dimensions": ["event:page"]}),
        )
        .await?;
        let got: Vec<Value> = json["results"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| r["metrics"][0].clone())
            .collect();
        return if got.len() == 1 && same(&got[0], want) {
            Ok(())
        } else {
            Err(format!("scroll_depth {got:?} (want {want})"))
        };
    }
    let (dim, empty) =
        stored_dimension(field).ok_or_else(|| format!("no dimension for {field}"))?;
    let json = v2_all(
        ctx,
        step,
        json!({"metrics": ["events"], "dimensions": [dim]}),
    )
    .await?;
    let got: BTreeSet<String> = json["results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| match &r["dimensions"][0] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    let want = match want {
        Value::Null => empty.to_owned(),
        Value::String(s) if s.is_empty() => empty.to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if got == BTreeSet::from([want.clone()]) {
        Ok(())
    } else {
        Err(format!("{field} via {dim}: {got:?} (want {want:?})"))
    }
}

/// `events` or `visitors` of the step's site over all time.
async fn totals(
    ctx: &Ctx<'_>,
    step: &Step,
    metric: &str,
    want: u64,
    errors: &mut Vec<String>,
) -> Result<(), String> {
    let json = v2_all(ctx, step, json!({"metrics": [metric]})).await?;
    let got = &json["results"][0]["metrics"][0];
    if !same(got, &json!(want)) {
        errors.push(format!("{metric} {got} (want {want})"));
    }
    Ok(())
}
