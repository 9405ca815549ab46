//! Realtime: who is on the site now, counted from the events of the last
//! minutes (the read is the door's: every raw event of the window).
//!
//! The live count follows tabs (a tab is an event's `vid` and `sid`; events
//! without a `sid` make one tab per visitor). A tab is present when its
//! latest event of the window is not a leave ([`Live::Leave`]: Tally's
//! tracker sends one when the tab is hidden or closed, and a
//! [`Live::Show`] when it is shown again), so a hidden tab leaves the count
//! at the next read and comes back at the next read after it is shown. A
//! tab that vanishes without a word (a crash, a lost beacon, a tracker that
//! sends no leave) drops out [`WINDOW_MS`] after its last event: the safety
//! net. Shown tabs send nothing while idle (no heartbeat, so no write per
//! tick), so the safety net is no shorter than that: a reader idle on one
//! page stays counted five minutes. Each visitor counts once while any of
//! their tabs is present, on the page of the present tab they used last
//! (its latest page view; without one in the window, its latest event's
//! page). Tally's `realtime` lists the pages; Plausible's v1
//! `realtime/visitors` answers the count.

use crate::MINUTE_MS;
use crate::Millis;
use crate::ingest::event::{Event, Kind, Live};
use std::collections::{BTreeMap, HashMap};

/// How far back realtime looks: also how long a tab that sent no leave
/// stays counted after its last event.
pub const WINDOW_MS: Millis = 5 * MINUTE_MS;
/// How far ahead of the server's clock an event may be (a client's clock
/// the ingest trusts up to 2 minutes ahead).
pub const AHEAD_MS: Millis = MINUTE_MS;

/// Visitors now and their latest pages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Realtime {
    /// Distinct visitors with a present tab.
    pub visitors: usize,
    /// Each page with the visitors whose latest page it is, most visited
    /// first (ties by path).
    pub pages: Vec<(String, u64)>,
}

/// One tab's latest state.
struct Tab<'a> {
    /// The latest event's time and rank ([`rank`]), and whether it left.
    last: (Millis, u8),
    left: bool,
    /// The latest page view's time and path.
    page: Option<(Millis, &'a str)>,
    /// The latest event's path.
    path: &'a str,
}

/// The order of a tab's events at one instant: whatever else happened then
/// came before the leave that ended it.
fn rank(e: &Event) -> u8 {
    match (e.kind, e.live) {
        (_, Some(Live::Leave)) => 3,
        (Kind::PageView, _) => 0,
        (Kind::Custom, _) => 1,
        (Kind::Engagement, _) => 2,
    }
}

/// Counts the visitors present at `now` from the events of the window
/// `[now - WINDOW_MS, now + AHEAD_MS)` (others are left out).
pub fn count(events: &[Event], now: Millis) -> Realtime {
    let mut tabs: HashMap<(&str, &str), Tab<'_>> = HashMap::new();
    for e in events
        .iter()
        .filter(|e| e.ts >= now - WINDOW_MS && e.ts < now + AHEAD_MS)
    {
        let at = (e.ts, rank(e));
        let tab = tabs.entry((&e.vid, &e.sid)).or_insert(Tab {
            last: (Millis::MIN, 0),
            left: false,
            page: None,
            path: &e.path,
        });
        if at >= tab.last {
            tab.last = at;
            tab.left = e.live == Some(Live::Leave);
            tab.path = &e.path;
        }
        if e.kind == Kind::PageView && tab.page.is_none_or(|(ts, _)| e.ts >= ts) {
            tab.page = Some((e.ts, &e.path));
        }
    }
    // Each visitor on the page of their present tab used last.
    let mut visitors: HashMap<&str, ((Millis, u8), &str)> = HashMap::new();
    for ((vid, _), tab) in tabs.iter().filter(|(_, t)| !t.left) {
        let page = tab.page.map_or(tab.path, |(_, p)| p);
        let slot = visitors.entry(vid).or_insert((tab.last, page));
        if (tab.last, page) > *slot {
            *slot = (tab.last, page);
        }
    }
    let mut pages: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, page) in visitors.values() {
        *pages.entry(page).or_default() += 1;
    }
    let mut rows: Vec<(String, u64)> = pages.into_iter().map(|(p, n)| (p.to_owned(), n)).collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Realtime {
        visitors: visitors.len(),
        pages: rows,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::engine::visit::tests::ev;

    const NOW: Millis = 100 * MINUTE_MS;
    const S: Millis = 1_000;

    fn at(vid: &str, sid: &str, kind: Kind, live: Option<Live>, ts: Millis, path: &str) -> Event {
        Event {
            vid: vid.to_owned(),
            live,
            ..ev(kind, ts, sid, path)
        }
    }

    #[test]
    fn each_visitor_counts_once_on_their_latest_page_view() {
        let pv = |vid: &str, ts, path: &str| at(vid, "tab", Kind::PageView, None, NOW - ts, path);
        let mut events = vec![
            pv("a", 9_000, "/"),
            pv("a", 7_000, "/pricing"),
            pv("b", 8_000, "/pricing"),
            pv("c", 7_500, "/docs"),
            pv("c", 8_500, "/"),
        ];
        // An engagement beacon after a page view moves no one.
        events.push(at(
            "b",
            "tab",
            Kind::Engagement,
            None,
            NOW - 1_000,
            "/elsewhere",
        ));
        let got = count(&events, NOW);
        assert_eq!(got.visitors, 3);
        assert_eq!(
            got.pages,
            vec![("/pricing".to_owned(), 2), ("/docs".to_owned(), 1)]
        );
        assert_eq!(count(&[], NOW), Realtime::default());
    }

    /// What a tab does, as the tracker reports it.
    #[derive(Clone, Copy, Debug)]
    enum Step {
        /// A page view (a tab opened or navigated).
        View(&'static str),
        /// Hidden or closed: the leave beacon.
        Hide,
        /// Shown again: the show beacon.
        Show,
        /// A custom event.
        Click,
    }

    /// The tracker's events for one tab's steps at the given seconds
    /// before now.
    fn tab(vid: &str, sid: &str, steps: &[(Millis, Step)]) -> Vec<Event> {
        let mut page = "/";
        steps
            .iter()
            .map(|&(ago, step)| {
                let ts = NOW - ago * S;
                match step {
                    Step::View(p) => {
                        page = p;
                        at(vid, sid, Kind::PageView, None, ts, p)
                    }
                    Step::Hide => at(vid, sid, Kind::Engagement, Some(Live::Leave), ts, page),
                    Step::Show => at(vid, sid, Kind::Engagement, Some(Live::Show), ts, page),
                    Step::Click => at(vid, sid, Kind::Custom, None, ts, page),
                }
            })
            .collect()
    }

    /// A named tab's steps (seconds ago) and whether it counts now.
    type Case = (&'static str, &'static [(Millis, Step)], bool);

    /// Whether a tab should be counted, from its steps alone: shown (its
    /// last step is not a hide), and heard from within the safety net.
    fn expected_present(steps: &[(Millis, Step)]) -> bool {
        let in_window: Vec<_> = steps
            .iter()
            .filter(|(ago, _)| ago * S <= WINDOW_MS)
            .collect();
        match in_window.iter().min_by_key(|(ago, _)| *ago) {
            None => false,
            Some((_, step)) => !matches!(step, Step::Hide),
        }
    }

    #[test]
    fn tabs_follow_hide_and_show_with_a_safety_net() {
        use Step::*;
        // (what the tab did, seconds ago; counted now?)
        let cases: &[Case] = &[
            ("open", &[(20, View("/"))], true),
            ("open and idle for 4 minutes", &[(240, View("/"))], true),
            ("hidden a moment ago", &[(30, View("/")), (2, Hide)], false),
            ("closed", &[(30, View("/")), (1, Hide)], false),
            (
                "shown again",
                &[(30, View("/")), (20, Hide), (5, Show)],
                true,
            ),
            (
                "shown again long after its page view",
                &[(900, View("/")), (800, Hide), (60, Show)],
                true,
            ),
            (
                "hidden again",
                &[(30, View("/")), (20, Hide), (10, Show), (3, Hide)],
                false,
            ),
            (
                "navigated after a show",
                &[(30, View("/")), (20, Hide), (10, Show), (5, View("/b"))],
                true,
            ),
            (
                "a click after a show",
                &[(30, View("/")), (20, Hide), (10, Show), (5, Click)],
                true,
            ),
            ("vanished without a word", &[(301, View("/"))], false),
            (
                "vanished after a show",
                &[(900, View("/")), (800, Hide), (310, Show)],
                false,
            ),
            (
                "left before the window",
                &[(400, View("/")), (350, Hide)],
                false,
            ),
        ];
        let mut all = Vec::new();
        for (i, (name, steps, counted)) in cases.iter().enumerate() {
            assert_eq!(expected_present(steps), *counted, "{name}: the reference");
            let events = tab(&format!("v{i}"), "t", steps);
            let got = count(&events, NOW);
            assert_eq!(got.visitors, usize::from(*counted), "{name}");
            all.extend(events);
        }
        // All at once: the count is the reference's, pages included.
        let want = cases.iter().filter(|c| c.2).count();
        let got = count(&all, NOW);
        assert_eq!(got.visitors, want);
        assert_eq!(got.pages.iter().map(|p| p.1).sum::<u64>(), want as u64);
        assert!(got.pages.contains(&("/b".to_owned(), 1)));
    }

    #[test]
    fn a_visitor_counts_while_any_tab_is_present_on_the_tab_used_last() {
        use Step::*;
        let mut events = tab("a", "one", &[(60, View("/one")), (50, Hide)]);
        events.extend(tab("a", "two", &[(40, View("/two"))]));
        events.extend(tab("a", "three", &[(30, View("/three"))]));
        let got = count(&events, NOW);
        assert_eq!(got.visitors, 1);
        assert_eq!(got.pages, vec![("/three".to_owned(), 1)]);
        // Both shown tabs hidden: the visitor is gone.
        events.extend(tab("a", "two", &[(20, Hide)]));
        events.extend(tab("a", "three", &[(10, Hide)]));
        assert_eq!(count(&events, NOW), Realtime::default());
    }

    #[test]
    fn a_leave_at_the_instant_of_another_event_ends_the_tab() {
        let mut events = tab("a", "t", &[(10, Step::Hide), (10, Step::View("/"))]);
        assert_eq!(count(&events, NOW).visitors, 0);
        events.reverse();
        assert_eq!(count(&events, NOW).visitors, 0);
    }

    /// Many tabs on a random walk (opened shown or in the background,
    /// hidden, shown, navigated, closed with a leave, or gone without one),
    /// sending what the tracker sends, counted against the walk's own
    /// record: a tab counts when the last thing it said was not a leave and
    /// it was heard from within the safety net.
    #[test]
    fn a_random_walk_of_tabs_counts_as_its_own_record() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for round in 0..50 {
            let mut events = Vec::new();
            let mut want = 0;
            for t in 0..40 {
                let vid = format!("r{round}v{t}");
                let mut ago = 200 + next(900);
                // A tab loaded in the background sends its page view and
                // nothing on its first show (it never left).
                let mut shown = next(4) != 0;
                let mut left = false;
                let mut heard = ago;
                let send = |events: &mut Vec<Event>, kind, live, ago: u64, path| {
                    events.push(at(&vid, "t", kind, live, NOW - ago as Millis * S, path));
                };
                send(&mut events, Kind::PageView, None, ago, "/");
                loop {
                    let step = 1 + next(120);
                    if step > ago {
                        break;
                    }
                    ago -= step;
                    match next(6) {
                        0 | 3 if shown => {
                            // Hidden, or closed: a leave either way.
                            shown = false;
                            left = true;
                            heard = ago;
                            send(&mut events, Kind::Engagement, Some(Live::Leave), ago, "/");
                        }
                        1 if !shown => {
                            shown = true;
                            if left {
                                left = false;
                                heard = ago;
                                send(&mut events, Kind::Engagement, Some(Live::Show), ago, "/");
                            }
                        }
                        2 if shown => {
                            heard = ago;
                            send(&mut events, Kind::PageView, None, ago, "/next");
                        }
                        4 => break, // vanished without a word
                        _ => {}
                    }
                }
                if !left && heard as Millis * S <= WINDOW_MS {
                    want += 1;
                }
            }
            assert_eq!(count(&events, NOW).visitors, want, "round {round}");
        }
    }
}
