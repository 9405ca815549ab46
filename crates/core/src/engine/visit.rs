//! Visits ("sessions") from raw events.
//!
//! Events are grouped by the tab's session id (the visitor id when the
//! tracker sent none) and split after [`VISIT_GAP_MS`] without an event.
//! A visit belongs to the site-local day it started on, with everything in
//! it, and may spill into the next day by at most [`MAX_SPILL_MS`] after its
//! start day ends: an event later than that starts a new visit. That bound
//! makes a day's visits computable from a bounded window of raw events
//! (`[day start - READ_BEFORE_MS, day end + MAX_SPILL_MS)`), so a day folded
//! alone (rollups) and inside a longer range (raw reads) gives the same visits.
//!
//! Within a tab, events are taken in time order, page views before custom
//! events before engagement beacons at the same millisecond, and events
//! still tied in the segments' canonical order
//! ([`crate::engine::segment::canonical_cmp`]): visits do not depend on the order
//! events were read in (raw partitions, segment blocks, or both). The rules
//! that decide where a visit ends ([`continues`]) and what it adds up to
//! ([`Tally`]) are shared with the streaming scan ([`crate::engine::scan`]).

use crate::engine::segment::canonical_cmp;
use crate::ingest::event::{Event, Kind};
use crate::time::zone::Zone;
use crate::{HOUR_MS, MINUTE_MS, Millis};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use time::Date;

/// A visit ends after this long without an event.
pub const VISIT_GAP_MS: Millis = 30 * MINUTE_MS;
/// A visit may continue this long past the end of its start day.
pub const MAX_SPILL_MS: Millis = 6 * HOUR_MS;
/// Events this long before a day are read to tell whether the day's first
/// events continue an earlier visit (any gap longer than [`VISIT_GAP_MS`]
/// splits, so one session gap is enough; an hour is the partition size).
pub const READ_BEFORE_MS: Millis = HOUR_MS;
/// Engagement beacons adding up to at least this much active time make a
/// one-page visit engaged (not a bounce); the tracker sends a beacon for
/// every page view, so any beacon at all would count nobody as a bounce.
pub const ENGAGED_MS: u64 = 10_000;

/// One visit.
#[derive(Debug, Clone)]
pub struct Visit<'a> {
    /// The visitor (the first event's visitor id, as a number).
    pub visitor: u64,
    /// The first event's time.
    pub start: Millis,
    /// The last event's time.
    pub end: Millis,
    /// The first event: the visit's source, device, country, ….
    pub first: &'a Event,
    /// Every event of the visit, in time order (up to eight are held inline,
    /// so building a day's visits allocates nothing for most of them).
    pub events: SmallVec<[&'a Event; 8]>,
    /// Page views in the visit.
    pub pageviews: u32,
    /// Custom events in the visit.
    pub custom_events: u32,
    /// The first page viewed (`None` for a visit without page views).
    pub entry: Option<&'a str>,
    /// The last page viewed (`None` for a visit without page views).
    pub exit: Option<&'a str>,
    /// One page view, no interactive custom event, less than
    /// [`ENGAGED_MS`] engaged.
    pub bounce: bool,
    /// Engaged time from engagement beacons when there are any, else the
    /// time from the first to the last event, ms.
    pub duration_ms: u64,
}

/// A visitor id as a number: its 16 hex digits, or a hash of other text.
pub fn visitor_number(vid: &str) -> u64 {
    if vid.len() == 16
        && let Ok(n) = u64::from_str_radix(vid, 16)
    {
        return n;
    }
    vid.bytes().fold(0xcbf2_9ce4_8422_2325, |h: u64, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Whether an event at `ts` continues a visit whose last event was at
/// `last` and which must end before `limit` (see [`limit`]).
pub fn continues(last: Millis, ts: Millis, limit: Millis) -> bool {
    ts.saturating_sub(last) <= VISIT_GAP_MS && ts < limit
}

/// The first instant a visit starting on a local day that ends at
/// `day_end` can no longer reach.
pub fn limit(day_end: Millis) -> Millis {
    day_end.saturating_add(MAX_SPILL_MS)
}

/// What a visit's events add up to, fed one event at a time in order.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tally {
    /// Page views.
    pub pageviews: u32,
    /// Custom events.
    pub custom_events: u32,
    /// Custom events that end a bounce (not Plausible's `interactive: false`).
    interactive: u32,
    /// Engaged ms of the engagement beacons.
    engaged_ms: u64,
    /// Engagement beacons.
    beacons: u32,
}

impl Tally {
    /// Counts one event.
    pub fn add(&mut self, kind: Kind, non_interactive: bool, engaged_ms: u64) {
        match kind {
            Kind::PageView => self.pageviews += 1,
            Kind::Custom => {
                self.custom_events += 1;
                self.interactive += u32::from(!non_interactive);
            }
            Kind::Engagement => {
                self.beacons += 1;
                self.engaged_ms += engaged_ms;
            }
        }
    }

    /// Whether the events make a visit: engagement beacons alone do not.
    pub fn is_visit(&self) -> bool {
        self.pageviews > 0 || self.custom_events > 0
    }

    /// One page view, no interactive custom event, less than
    /// [`ENGAGED_MS`] engaged.
    pub fn bounce(&self) -> bool {
        self.pageviews == 1 && self.interactive == 0 && self.engaged_ms < ENGAGED_MS
    }

    /// Engaged time when there are beacons, else the time from the first
    /// event (`start`) to the last (`end`), ms.
    pub fn duration_ms(&self, start: Millis, end: Millis) -> u64 {
        if self.beacons > 0 {
            self.engaged_ms
        } else {
            u64::try_from(end - start).unwrap_or(0)
        }
    }
}

/// The order of a tab's events: time, then page views before custom events
/// before beacons, then the canonical order for exact ties.
fn tab_order(a: &Event, b: &Event) -> std::cmp::Ordering {
    a.ts.cmp(&b.ts)
        .then(kind_order(a.kind).cmp(&kind_order(b.kind)))
        .then_with(|| canonical_cmp(a, b))
}

/// Page views, custom events, engagement beacons: the order of kinds at
/// one instant.
pub(crate) fn kind_order(k: Kind) -> u8 {
    match k {
        Kind::PageView => 0,
        Kind::Custom => 1,
        Kind::Engagement => 2,
    }
}

/// Builds the visits of a site's events, grouped by tab in the order of each
/// tab's first event, and in time order within a tab (exact ties in the
/// canonical order, so the visits do not depend on the input's order).
/// Visits made only of
/// engagement beacons (a tab hidden after a long pause) are not visits and
/// are left out.
pub fn visits<'a>(events: &'a [Event], zone: &Zone) -> Vec<Visit<'a>> {
    // Tabs numbered in the order of their first event, so the result does
    // not depend on hashing; then every tab's events gathered into one flat
    // list (a counting sort, which keeps each tab's events in input order).
    let mut index: FxHashMap<&str, u32> = FxHashMap::default();
    let mut tab_of = Vec::with_capacity(events.len());
    let mut sizes: Vec<usize> = Vec::new();
    for e in events {
        let key = if e.sid.is_empty() {
            e.vid.as_str()
        } else {
            e.sid.as_str()
        };
        let next = u32::try_from(sizes.len()).unwrap_or(u32::MAX);
        let tab = *index.entry(key).or_insert(next);
        if tab == next {
            sizes.push(0);
        }
        sizes[tab as usize] += 1;
        tab_of.push(tab);
    }
    drop(index);
    let mut starts = Vec::with_capacity(sizes.len() + 1);
    let mut at = 0;
    for n in &sizes {
        starts.push(at);
        at += n;
    }
    starts.push(at);
    let mut fill = starts.clone();
    let Some(first) = events.first() else {
        return Vec::new();
    };
    let mut flat: Vec<&Event> = vec![first; events.len()];
    for (e, tab) in events.iter().zip(tab_of) {
        let slot = &mut fill[tab as usize];
        flat[*slot] = e;
        *slot += 1;
    }
    let mut out = Vec::with_capacity(sizes.len());
    let mut days = DayCache::new(zone);
    for w in starts.windows(2) {
        let group = &mut flat[w[0]..w[1]];
        if !group.is_sorted_by(|a, b| tab_order(a, b).is_le()) {
            group.sort_by(|a, b| tab_order(a, b));
        }
        let mut start = 0;
        let mut end = limit(days.day(group[0].ts).1);
        for i in 1..group.len() {
            if !continues(group[i - 1].ts, group[i].ts, end) {
                push(&mut out, &group[start..i]);
                start = i;
                end = limit(days.day(group[i].ts).1);
            }
        }
        push(&mut out, &group[start..]);
    }
    out
}

/// The local day of an instant and its end, remembering the last day asked
/// for (a day's events mostly fall in it).
pub(crate) struct DayCache<'z> {
    zone: &'z Zone,
    date: Date,
    start: Millis,
    end: Millis,
}

impl<'z> DayCache<'z> {
    pub(crate) fn new(zone: &'z Zone) -> Self {
        Self {
            zone,
            date: Date::MIN,
            start: 0,
            end: 0,
        }
    }

    /// The local date of `ts` and the first instant after it.
    pub(crate) fn day(&mut self, ts: Millis) -> (Date, Millis) {
        if !(self.start..self.end).contains(&ts) {
            self.date = self.zone.local_date(ts);
            self.start = self.zone.day_start(self.date);
            self.end = self.zone.day_end(self.date);
        }
        (self.date, self.end)
    }
}

fn push<'a>(out: &mut Vec<Visit<'a>>, events: &[&'a Event]) {
    let mut tally = Tally::default();
    let (mut entry, mut exit) = (None, None);
    for e in events {
        tally.add(e.kind, e.non_interactive, e.engaged_ms.unwrap_or(0));
        if e.kind == Kind::PageView {
            entry.get_or_insert(e.path.as_str());
            exit = Some(e.path.as_str());
        }
    }
    if !tally.is_visit() {
        return;
    }
    let first = events[0];
    let last = events[events.len() - 1];
    out.push(Visit {
        visitor: visitor_number(&first.vid),
        start: first.ts,
        end: last.ts,
        first,
        events: SmallVec::from_slice(events),
        pageviews: tally.pageviews,
        custom_events: tally.custom_events,
        entry,
        exit,
        bounce: tally.bounce(),
        duration_ms: tally.duration_ms(first.ts, last.ts),
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;
    use crate::ingest::classify::referrer::Channel;
    use crate::ingest::classify::ua::DeviceType;

    /// A page view for tests.
    pub(crate) fn ev(kind: Kind, ts: Millis, sid: &str, path: &str) -> Event {
        Event {
            kind,
            ts,
            vid: format!("{:016x}", sid.len() as u64 + 1),
            sid: sid.to_owned(),
            host: "example.com".into(),
            path: path.into(),
            referrer: None,
            source: "Direct".into(),
            channel: Channel::Direct,
            utm_source: None,
            utm_medium: None,
            utm_campaign: None,
            utm_content: None,
            utm_term: None,
            browser: "Chrome".into(),
            os: "macOS".into(),
            browser_version: Some("Chrome 120.0".into()),
            os_version: Some("macOS 10.15".into()),
            device: DeviceType::Desktop,
            country: None,
            region: None,
            city: None,
            screen: None,
            name: (kind == Kind::Custom).then(|| "Signup".to_owned()),
            value: None,
            props: Default::default(),
            engaged_ms: (kind == Kind::Engagement).then_some(3_000),
            scroll: None,
            live: None,
            vitals: None,
            non_interactive: false,
            revenue: None,
        }
    }

    const M: Millis = MINUTE_MS;

    #[test]
    fn splits_after_thirty_idle_minutes() {
        let events = vec![
            ev(Kind::PageView, 0, "a", "/"),
            ev(Kind::PageView, 29 * M, "a", "/x"),
            ev(Kind::PageView, 29 * M + 30 * M + 1, "a", "/y"),
        ];
        let s = visits(&events, &Zone::utc());
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[0].pageviews, s[0].entry, s[0].exit),
            (2, Some("/"), Some("/x"))
        );
        assert_eq!(s[0].duration_ms, 29 * 60_000);
        assert!(!s[0].bounce);
        assert!(s[1].bounce);
    }

    #[test]
    fn engagement_time_is_the_duration_and_long_engagement_is_no_bounce() {
        let mut long = ev(Kind::Engagement, 5 * M, "a", "/");
        long.engaged_ms = Some(12_000);
        let events = vec![ev(Kind::PageView, 0, "a", "/"), long];
        let s = visits(&events, &Zone::utc());
        assert_eq!((s[0].duration_ms, s[0].bounce), (12_000, false));
        let short = vec![
            ev(Kind::PageView, 0, "b", "/"),
            ev(Kind::Engagement, 60_000, "b", "/"),
        ];
        let s = visits(&short, &Zone::utc());
        assert_eq!((s[0].duration_ms, s[0].bounce), (3_000, true));
    }

    #[test]
    fn engagement_only_fragments_are_not_visits() {
        let events = vec![ev(Kind::Engagement, 0, "a", "/")];
        assert!(visits(&events, &Zone::utc()).is_empty());
    }

    #[test]
    fn a_visit_spills_at_most_six_hours_into_the_next_day() {
        let day = crate::DAY_MS;
        let mut events = Vec::new();
        // One page view every 20 minutes from 23:00 until 07:00 next day.
        let mut t = day - HOUR_MS;
        while t <= day + 7 * HOUR_MS {
            events.push(ev(Kind::PageView, t, "a", "/"));
            t += 20 * M;
        }
        let s = visits(&events, &Zone::utc());
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].start, day - HOUR_MS);
        assert!(s[0].end < day + MAX_SPILL_MS);
        assert!(s[1].start >= day + MAX_SPILL_MS);
    }
}
