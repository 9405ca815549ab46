//! Realtime: who is on the site now, counted from the events of the last
//! minutes (the read is the door's: every raw event of the window). Each
//! visitor counts once, on the page of their latest page view (a visitor
//! without one, on their first event's page). Tally's `realtime` lists the
//! pages; Plausible's v1 `realtime/visitors` answers the count.

use crate::MINUTE_MS;
use crate::Millis;
use crate::event::{Event, Kind};
use std::collections::{BTreeMap, HashMap};

/// How far back realtime looks.
pub const WINDOW_MS: Millis = 5 * MINUTE_MS;

/// Visitors now and their latest pages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Realtime {
    /// Distinct visitors with an event in the window.
    pub visitors: usize,
    /// Each page with the visitors whose latest page it is, most visited
    /// first (ties by path).
    pub pages: Vec<(String, u64)>,
}

/// Counts the visitors of a window's events.
pub fn count(events: &[Event]) -> Realtime {
    let mut last_page: HashMap<&str, (Millis, &str)> = HashMap::new();
    for e in events {
        let entry = last_page
            .entry(e.vid.as_str())
            .or_insert((Millis::MIN, e.path.as_str()));
        if e.kind == Kind::PageView && e.ts >= entry.0 {
            *entry = (e.ts, e.path.as_str());
        }
    }
    let mut pages: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, page) in last_page.values() {
        *pages.entry(page).or_default() += 1;
    }
    let mut rows: Vec<(String, u64)> = pages.into_iter().map(|(p, n)| (p.to_owned(), n)).collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Realtime {
        visitors: last_page.len(),
        pages: rows,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::session::tests::ev;

    #[test]
    fn each_visitor_counts_once_on_their_latest_page_view() {
        let at = |vid: &str, ts, path: &str| Event {
            vid: vid.to_owned(),
            ..ev(Kind::PageView, ts, "tab", path)
        };
        let mut events = vec![
            at("a", 1_000, "/"),
            at("a", 3_000, "/pricing"),
            at("b", 2_000, "/pricing"),
            at("c", 2_500, "/docs"),
            at("c", 1_500, "/"),
        ];
        // An engagement beacon after a page view moves no one.
        events.push(Event {
            kind: Kind::Engagement,
            ..at("b", 9_000, "/elsewhere")
        });
        let got = count(&events);
        assert_eq!(got.visitors, 3);
        assert_eq!(
            got.pages,
            vec![("/pricing".to_owned(), 2), ("/docs".to_owned(), 1)]
        );
        assert_eq!(count(&[]), Realtime::default());
    }
}
