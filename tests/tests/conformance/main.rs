//! Plausible's own tests as Tally's conformance suite (issue 20).
//!
//! Plausible's ExUnit tests of the Events API and of the Stats API (v1 and
//! v2) are translated, case by case, into data files under
//! `tests/conformance-cases/` (one YAML file per Plausible test file, each
//! case named after the Plausible test it comes from, with Plausible's
//! fixtures, request and assertions). This binary replays them against
//! Tally's real handlers and store: fixtures and Events API requests go
//! through `tally_ingest::handle` at the fixture's time, queries through
//! `tally_query::handle_with`, on the embedded DynamoDB-compatible server
//! through the real SDK client (one store per case file, one site per
//! case).
//!
//! A case passes when every assertion of Plausible's test holds. A case
//! marked `difference` is one where Tally deliberately differs (the
//! docs/API.md paragraph that says so); it still runs, and failing it is
//! counted as a difference. Every other failing case names its cause
//! (`fails:`, the table), so the report lists them by cause. The
//! test asserts that each file passes at least the cases committed in
//! `tests/conformance-cases/floor.yaml` (the count when it was last
//! raised) and that every failing case has a cause: a fix raises the floor,
//! a regression fails the test.
//!
//! `CONFORMANCE_FILTER=text` runs only the cases whose file or test name
//! contains `text` (no floor then); `CONFORMANCE_VERBOSE=1` prints every
//! failing case's difference.

#![allow(clippy::disallowed_methods)] // reads the environment: configuration

// The report is this binary's output.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod cases;
mod run;
mod seed;

use cases::{CAUSES, Case, CaseFile};
use futures::stream::{self, StreamExt};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What one case file gave.
struct Outcome {
    name: String,
    plausible: String,
    ported: usize,
    passed: usize,
    /// `(test, cause, what differed)` of failing cases.
    failed: Vec<(String, Option<String>, String)>,
    /// `(test, docs/API.md paragraph, what differed)` of differing cases.
    differences: Vec<(String, String, String)>,
    /// Tests marked as failing or differing that pass.
    stale: Vec<String>,
    not_runnable: usize,
}

fn case_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance-cases")
}

/// A site id for the `i`th case of a file: `aggregate-test-12.c`.
fn site_id(file: &str, i: usize) -> String {
    let stem = file.trim_end_matches(".yaml").replace('_', "-");
    format!("{stem}-{i}.c")
}

async fn run_file(name: &str, file: &CaseFile, cases: &[Case], filter: Option<&str>) -> Outcome {
    let rig = run::Rig::new().await;
    let selected: Vec<(usize, &Case)> = cases
        .iter()
        .enumerate()
        .filter(|(_, c)| filter.is_none_or(|f| name.contains(f) || c.test.contains(f)))
        .collect();
    let results: Vec<(usize, Result<(), String>)> = stream::iter(selected)
        .map(|(i, c)| {
            let rig = &rig;
            async move {
                let id = site_id(name, i);
                (i, run::case(rig, &id, file.now.as_deref(), c).await)
            }
        })
        .buffered(4)
        .collect()
        .await;
    let mut out = Outcome {
        name: name.to_owned(),
        plausible: file.plausible.clone(),
        ported: results.len(),
        passed: 0,
        failed: Vec::new(),
        differences: Vec::new(),
        stale: Vec::new(),
        not_runnable: file.not_runnable.len(),
    };
    for (i, result) in results {
        let c = &cases[i];
        match (result, &c.difference) {
            (Ok(()), _) => {
                out.passed += 1;
                if c.difference.is_some() || c.fails.is_some() {
                    out.stale.push(c.test.clone());
                }
            }
            (Err(e), Some(d)) => out.differences.push((c.test.clone(), d.clone(), e)),
            (Err(e), None) => out.failed.push((c.test.clone(), c.fails.clone(), e)),
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plausibles_tests_pass_at_least_the_committed_floor() {
    let dir = case_dir();
    let files = cases::load(&dir);
    let floor = cases::floor(&dir);
    let filter = std::env::var("CONFORMANCE_FILTER").ok();
    let verbose = std::env::var("CONFORMANCE_VERBOSE").is_ok();
    // Three case files at a time, each on a server of its own.
    let outcomes: Vec<Outcome> = stream::iter(&files)
        .map(|(name, file, cases)| run_file(name, file, cases, filter.as_deref()))
        .buffered(3)
        .collect()
        .await;

    let width = outcomes
        .iter()
        .map(|o| o.plausible.len())
        .max()
        .unwrap_or(0);
    println!(
        "\n{:<width$} {:>6} {:>7} {:>7} {:>11} {:>12}",
        "Plausible test file", "ported", "passing", "failing", "differences", "not runnable"
    );
    let mut total = [0usize; 5];
    for o in &outcomes {
        let row = [
            o.ported,
            o.passed,
            o.failed.len(),
            o.differences.len(),
            o.not_runnable,
        ];
        println!(
            "{:<width$} {:>6} {:>7} {:>7} {:>11} {:>12}",
            o.plausible, row[0], row[1], row[2], row[3], row[4]
        );
        for (t, r) in total.iter_mut().zip(row) {
            *t += r;
        }
    }
    println!(
        "{:<width$} {:>6} {:>7} {:>7} {:>11} {:>12}",
        "total", total[0], total[1], total[2], total[3], total[4]
    );

    let mut by_cause: BTreeMap<&str, Vec<(&str, &str, &str)>> = BTreeMap::new();
    for o in &outcomes {
        for (test, cause, e) in &o.failed {
            by_cause
                .entry(cause.as_deref().unwrap_or("unclassified"))
                .or_default()
                .push((&o.name, test, e));
        }
    }
    println!("\nFailing cases by cause:");
    for (cause, title) in CAUSES
        .iter()
        .copied()
        .chain([("unclassified", "No cause named")])
    {
        let Some(list) = by_cause.get(cause) else {
            continue;
        };
        println!("  {title} ({cause}): {}", list.len());
        for (file, test, e) in list {
            if verbose || cause == "unclassified" {
                println!("    {file}: {test}\n      {e}");
            } else {
                println!("    {file}: {test}");
            }
        }
    }
    println!("\nDifferences (docs/API.md):");
    for o in &outcomes {
        for (test, doc, e) in &o.differences {
            println!("  {}: {test} [{doc}]", o.name);
            if verbose {
                println!("      {e}");
            }
        }
    }
    if verbose {
        println!("\nNot runnable:");
        for (name, file, _) in &files {
            for n in &file.not_runnable {
                println!("  {name} ({}): {}: {}", file.commit, n.test, n.reason);
            }
        }
    }
    for o in &outcomes {
        for test in &o.stale {
            println!("  now passing, drop its mark: {}: {test}", o.name);
        }
    }

    if filter.is_some() {
        return;
    }
    let mut problems = Vec::new();
    for o in &outcomes {
        let Some(&min) = floor.get(&o.name) else {
            problems.push(format!("{}: no floor in floor.yaml", o.name));
            continue;
        };
        if o.passed < min {
            problems.push(format!(
                "{}: {} cases pass, below the floor of {min}",
                o.name, o.passed
            ));
        } else if o.passed > min {
            println!(
                "raise the floor: {}: {} (from {min}) in tests/conformance-cases/floor.yaml",
                o.name, o.passed
            );
        }
    }
    if let Some(list) = by_cause.get("unclassified") {
        problems.push(format!(
            "{} failing cases name no cause (a new failure: a regression, or mark it `fails:`)",
            list.len()
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
