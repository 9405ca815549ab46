//! Fuzz the query parameters: any query string through the range, interval,
//! comparison, dimension and filter parsers, and every parsed filter back
//! through its own printer.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tally_core::dimension::Dimension;
use tally_core::filter::Filter;
use tally_core::range::{Compare, Interval, resolve};
use time::macros::date;

fuzz_target!(|data: &[u8]| {
    let q: std::collections::HashMap<String, String> = url::form_urlencoded::parse(data).into_owned().collect();
    let get = |k: &str| q.get(k).map(String::as_str);
    if let Ok((_, range)) = resolve(get("period"), get("from"), get("to"), date!(2026 - 11 - 30), date!(2020 - 01 - 01)) {
        assert!(range.from <= range.to);
        if let Ok(interval) = Interval::parse(get("interval"), range) {
            let buckets = tally_core::range::day_buckets(range, interval);
            assert!(!buckets.is_empty());
        }
        if let Some(Ok(c)) = get("compare").map(Compare::parse) {
            let other = c.range(range);
            assert!(other.from <= other.to);
        }
    }
    if let Some(d) = get("dimension") {
        let _ = Dimension::parse(d);
    }
    if let Some(f) = get("filters")
        && let Ok(filter) = Filter::parse(f)
    {
        assert_eq!(Filter::parse(&filter.to_query()).as_ref(), Ok(&filter), "filters round-trip");
    }
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(filter) = Filter::parse(text)
    {
        let _ = filter.to_query();
    }
});
