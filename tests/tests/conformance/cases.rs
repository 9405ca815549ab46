//! The case files: one YAML file per Plausible test file under
//! `tests/conformance-cases/`, read into these types.
//!
//! A file names the Plausible test file and the version read, lists the
//! tests left out of the port with the reason (`not_runnable`), and holds
//! the ported cases. A case is Plausible's fixtures (`events`, as
//! `build(:pageview, …)` sets them), the site's setup (`site`), and one or
//! more steps: a request (`get` for the v1 Stats API, `v2` for
//! `POST /api/v2/query`, `post` for the Events API) with Plausible's
//! expectations (`status`, `body`, `results`, `match`, `contains`,
//! `absent`, `text`, `dropped`, `stored`, `count`).

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// One Plausible test file's port.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    /// The Plausible test file, relative to `plausible/analytics`.
    pub plausible: String,
    /// The commit of `plausible/analytics` the cases were read from.
    pub commit: String,
    /// The default clock of the file's cases (UTC, `YYYY-MM-DD HH:MM:SS`).
    #[serde(default)]
    pub now: Option<String>,
    /// Tests of the file left out of the port, with the reason.
    #[serde(default)]
    pub not_runnable: Vec<NotRunnable>,
    /// The ported cases.
    pub cases: Vec<Value>,
}

/// A Plausible test that cannot run against Tally at all.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotRunnable {
    /// Plausible's test name.
    pub test: String,
    /// Why it cannot run.
    pub reason: String,
}

/// One ported test (keys checked by [`parse_case`]: `flatten` cannot deny
/// unknown ones).
#[derive(Debug, Deserialize)]
pub struct Case {
    /// Plausible's test name (`describe` prefix omitted).
    pub test: String,
    /// The clock (UTC); events without `at` happen then, queries run one
    /// second later.
    #[serde(default)]
    pub now: Option<String>,
    /// The site's setup.
    #[serde(default)]
    pub site: SiteSpec,
    /// Plausible's fixtures, stored through the Events API.
    #[serde(default)]
    pub events: Vec<Fixture>,
    /// Requests made before the checked step (their expectations, if any,
    /// are checked too).
    #[serde(default)]
    pub before: Vec<Step>,
    /// The checked step.
    #[serde(flatten)]
    pub step: Step,
    /// Further checked steps.
    #[serde(default)]
    pub then: Vec<Step>,
    /// Where Tally deliberately differs: the docs/API.md paragraph that
    /// says so. The case runs; failing it is counted as a difference.
    #[serde(default)]
    pub difference: Option<String>,
    /// The cause of a known failure (for the report; see `CAUSES`).
    #[serde(default)]
    pub fails: Option<String>,
}

/// The keys a case may have beside a step's.
pub const CASE_KEYS: &[&str] = &[
    "test",
    "now",
    "site",
    "events",
    "before",
    "then",
    "difference",
    "fails",
];

/// The keys a step may have.
pub const STEP_KEYS: &[&str] = &[
    "get", "v2", "post", "key", "site_id", "on", "ua", "headers", "at", "status", "body", "text",
    "results", "equals", "rows", "disjoint", "match", "contains", "absent", "lengths", "dropped",
    "stored", "count", "visitors",
];

/// The causes a failing case may name (the table, plus `misc`).
pub const CAUSES: &[(&str, &str)] = &[
    ("channels", "Channels"),
    ("sources", "Source names and aliases"),
    ("v1-validation", "v1 validation and auth"),
    ("labels", "Stats API labels"),
    ("event-semantics", "Event-level semantics"),
    ("v2-validation", "v2 validation"),
    ("ingestion", "Ingestion normalisation"),
    ("drops", "Drops and rejections"),
    ("v1-timeseries", "v1 timeseries"),
    ("misc", "Other"),
];

/// The site of a case.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteSpec {
    /// IANA time zone (Plausible's default `Etc/UTC`).
    #[serde(default)]
    pub timezone: Option<String>,
    /// Goals, as Plausible's `insert(:goal, …)`.
    #[serde(default)]
    pub goals: Vec<GoalSpec>,
    /// The day the site was created (default: the day before the earliest
    /// event or the clock).
    #[serde(default)]
    pub created: Option<String>,
    /// More sites with the same domains (`$SITE2`, …), for requests that
    /// name several.
    #[serde(default)]
    pub extra_sites: u8,
}

/// A goal: an event goal (`event`) or a page goal (`page`, wildcards with
/// `*`), named `display` or as Plausible names it (`Visit /path`, the
/// event name).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoalSpec {
    #[serde(default)]
    pub event: Option<String>,
    #[serde(default)]
    pub page: Option<String>,
    #[serde(default)]
    pub display: Option<String>,
    /// Plausible's revenue goal currency (checked to be a code; Tally keeps
    /// revenue per currency, so a goal has none).
    #[serde(default)]
    pub currency: Option<String>,
}

/// Plausible's `build(:pageview | :event | :engagement, …)`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fixture {
    /// `pageview` (default), `engagement`, or a custom event's name.
    #[serde(default)]
    pub name: Option<String>,
    /// `YYYY-MM-DD HH:MM:SS` (UTC) or relative to the clock (`-5m`).
    #[serde(default)]
    pub at: Option<String>,
    /// Plausible's `user_id`: events of one user come from one client.
    #[serde(default)]
    pub user: Option<Value>,
    #[serde(default)]
    pub hostname: Option<String>,
    #[serde(default)]
    pub pathname: Option<String>,
    #[serde(default)]
    pub referrer: Option<String>,
    #[serde(default)]
    pub referrer_source: Option<String>,
    #[serde(default)]
    pub utm_source: Option<String>,
    #[serde(default)]
    pub utm_medium: Option<String>,
    #[serde(default)]
    pub utm_campaign: Option<String>,
    #[serde(default)]
    pub utm_content: Option<String>,
    #[serde(default)]
    pub utm_term: Option<String>,
    /// `gclid`, `msclkid`, …: the landing URL carries it.
    #[serde(default)]
    pub click_id_param: Option<String>,
    #[serde(default)]
    pub screen_size: Option<String>,
    #[serde(default)]
    pub browser: Option<String>,
    #[serde(default)]
    pub browser_version: Option<String>,
    #[serde(default)]
    pub operating_system: Option<String>,
    #[serde(default)]
    pub operating_system_version: Option<String>,
    #[serde(default)]
    pub country_code: Option<String>,
    #[serde(default)]
    pub subdivision1_code: Option<String>,
    #[serde(default)]
    pub city_geoname_id: Option<u64>,
    /// `"meta.key"` / `"meta.value"`.
    #[serde(default)]
    pub props: BTreeMap<String, String>,
    /// `revenue_reporting_amount` / `_currency` (the amount as sent).
    #[serde(default)]
    pub revenue: Option<Value>,
    /// An engagement's `engagement_time`, ms.
    #[serde(default)]
    pub engagement_time: Option<u64>,
    /// An engagement's `scroll_depth`, %.
    #[serde(default)]
    pub scroll_depth: Option<u64>,
    /// `interactive?: false`.
    #[serde(default)]
    pub interactive: Option<bool>,
    /// Stored fields the fixture sets to a value no request gives (a
    /// referrer kept with its scheme, a source without a referrer), written
    /// over the stored event after ingest: field -> value (null: none).
    #[serde(default)]
    pub raw: BTreeMap<String, Option<String>>,
}

/// A request and what Plausible's test asserts of its answer.
#[derive(Debug, Default, Deserialize)]
pub struct Step {
    /// `GET /api/v1/stats/<path>` with these parameters (`site_id` added
    /// unless given; list and map values sent as JSON).
    #[serde(default)]
    pub get: Option<(String, BTreeMap<String, Value>)>,
    /// `POST /api/v2/query` with this body (`site_id` added unless given).
    #[serde(default)]
    pub v2: Option<Value>,
    /// `POST /api/event` with this body (a JSON value, or a string sent as
    /// it is).
    #[serde(default)]
    pub post: Option<Value>,
    /// The credentials: the site's key (default), `none`, `other` (a key of
    /// another site), `unknown` (a well-formed key never issued), or an
    /// `Authorization` header value to send as it is.
    #[serde(default)]
    pub key: Option<String>,
    /// `site_id` to send instead of the case's site: `other`, or a literal.
    #[serde(default)]
    pub site_id: Option<String>,
    /// Which of the case's sites (1, 2, …) a request without `site_id`
    /// names, and whose key it uses.
    #[serde(default)]
    pub on: Option<u8>,
    /// The Events API's `User-Agent` (a literal; default Plausible's
    /// `@user_agent`, since Tally requires one: docs/API.md, Events API).
    #[serde(default)]
    pub ua: Option<String>,
    /// More request headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// When an Events API request is made (as a fixture's `at`).
    #[serde(default)]
    pub at: Option<String>,
    /// Expected status (default 200, 202 for the Events API).
    #[serde(default)]
    pub status: Option<u16>,
    /// The whole JSON body.
    #[serde(default)]
    pub body: Option<Value>,
    /// The whole text body.
    #[serde(default)]
    pub text: Option<String>,
    /// The body's `results`.
    #[serde(default)]
    pub results: Option<Value>,
    /// JSON pointer -> the value there (`List.first(results) == …`).
    #[serde(default)]
    pub equals: BTreeMap<String, Value>,
    /// The body's `results` share no row with the previous step's.
    #[serde(default)]
    pub disjoint: bool,
    /// Rows the body's `results` has (in any order; Elixir's `in`).
    #[serde(default)]
    pub rows: Vec<Value>,
    /// A pattern the body matches (objects: at least these keys).
    #[serde(default, rename = "match")]
    pub pattern: Option<Value>,
    /// JSON pointer -> a substring of the string there.
    #[serde(default)]
    pub contains: BTreeMap<String, String>,
    /// JSON pointers that are absent or null.
    #[serde(default)]
    pub absent: Vec<String>,
    /// JSON pointer -> the length of the list there.
    #[serde(default)]
    pub lengths: BTreeMap<String, usize>,
    /// Whether `x-plausible-dropped` is set.
    #[serde(default)]
    pub dropped: Option<bool>,
    /// Stored fields as Plausible's tests read them from ClickHouse, read
    /// here through the v2 Stats API (see `run::stored_dimension`).
    #[serde(default)]
    pub stored: BTreeMap<String, Value>,
    /// Events stored on the site (v2 `events` over all time).
    #[serde(default)]
    pub count: Option<u64>,
    /// Visitors on the site (v2 `visitors` over all time).
    #[serde(default)]
    pub visitors: Option<u64>,
}

/// Reads every case file of `dir` (sorted by name), each with its parsed
/// cases; a malformed file or case is a panic naming it.
pub fn load(dir: &Path) -> Vec<(String, CaseFile, Vec<Case>)> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") && n != "floor.yaml")
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(dir.join(&name)).unwrap();
            let file: CaseFile =
                serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            let cases = file
                .cases
                .iter()
                .map(|raw| parse_case(&name, raw))
                .collect();
            (name, file, cases)
        })
        .collect()
}

fn parse_case(file: &str, raw: &Value) -> Case {
    let test = raw["test"].as_str().unwrap_or("?").to_owned();
    let keys = |v: &Value, allowed: &[&str], what: &str| {
        for k in v.as_object().into_iter().flat_map(|m| m.keys()) {
            assert!(
                allowed.contains(&k.as_str()),
                "{file}: {test}: unknown {what} key {k:?}"
            );
        }
    };
    let mut case_keys = CASE_KEYS.to_vec();
    case_keys.extend_from_slice(STEP_KEYS);
    keys(raw, &case_keys, "case");
    for list in ["before", "then"] {
        for step in raw[list].as_array().into_iter().flatten() {
            keys(step, STEP_KEYS, "step");
        }
    }
    let case: Case =
        serde_json::from_value(raw.clone()).unwrap_or_else(|e| panic!("{file}: {test}: {e}"));
    if let Some(cause) = &case.fails {
        assert!(
            CAUSES.iter().any(|(c, _)| c == cause),
            "{file}: {test}: unknown cause {cause:?}"
        );
    }
    case
}

/// The committed floor: passing cases per case file.
pub fn floor(dir: &Path) -> BTreeMap<String, usize> {
    let text = std::fs::read_to_string(dir.join("floor.yaml")).unwrap_or_default();
    if text.trim().is_empty() {
        return BTreeMap::new();
    }
    serde_norway::from_str(&text).unwrap_or_else(|e| panic!("floor.yaml: {e}"))
}
