//! First-call and per-call cost of the source and channel classifier, URL
//! parsing included (a measurement, not a check, so it is not a test):
//!
//! ```text
//! cargo run --release -p tally-core --example classifier_cost
//! ```

#![allow(clippy::unwrap_used, clippy::print_stdout, missing_docs)]

use std::time::Instant;
use tally_core::ingest::classify::referrer::{Utm, classify, click_id};
use tally_core::ingest::classify::sources;
use url::Url;

/// A page view of `page` from `referrer`, as ingest classifies it: the
/// length of the source name it is given.
fn visit(page: &str, referrer: Option<&str>) -> usize {
    let page = Url::parse(page).unwrap();
    let referrer = referrer.map(|r| Url::parse(r).unwrap());
    let utm = Utm::from_query(&page);
    let host = page.host_str().unwrap_or_default();
    classify(referrer.as_ref(), host, &utm, click_id(&page))
        .name
        .len()
}

fn main() {
    let t = Instant::now();
    let first = visit(
        "https://example.com/?utm_source=fb-ads",
        Some("https://www.google.co.uk/"),
    );
    let first_call = t.elapsed();
    let pages = [
        (
            "https://example.com/a?gclid=1",
            Some("https://www.google.com/search?q=x"),
        ),
        (
            "https://example.com/b",
            Some("https://l.facebook.com/l.php"),
        ),
        (
            "https://example.com/c",
            Some("https://www.some-blog.example.org/post/1/"),
        ),
        (
            "https://example.com/d?utm_source=newsletter&utm_medium=email",
            None,
        ),
        ("https://example.com/e", None),
        ("https://example.com/f", Some("https://chatgpt.com/")),
    ];
    let n = 200_000;
    let t = Instant::now();
    let mut total = first;
    for i in 0..n {
        let (page, referrer) = pages[i % pages.len()];
        total += visit(page, referrer);
    }
    let per_call = t.elapsed() / n as u32;
    println!(
        "first call {first_call:?}, then {per_call:?} a call (URL parsing included); {total} name bytes"
    );
    println!(
        "table rows {:?} (referrer hosts, names, categories, paid sources, spam hosts)",
        sources::table_sizes()
    );
}
