//! Visits ("sessions") from raw events.
//!
//! Events are grouped by the tab's session id (the visitor id when the
//! tracker sent none) and split after [`SESSION_GAP_MS`] without an event.
//! A visit belongs to the site-local day it started on, with everything in
//! it, and may spill into the next day by at most [`MAX_SPILL_MS`] after its
//! start day ends: an event later than that starts a new visit. That bound
//! makes a day's visits computable from a bounded window of raw events
//! (`[day start - READ_BEFORE_MS, day end + MAX_SPILL_MS)`), so a day folded
//! alone (rollups) and inside a longer range (raw reads) gives the same visits.

use crate::event::{Event, Kind};
use crate::zone::Zone;
use crate::{HOUR_MS, MINUTE_MS, Millis};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// A visit ends after this long without an event.
pub const SESSION_GAP_MS: Millis = 30 * MINUTE_MS;
/// A visit may continue this long past the end of its start day.
pub const MAX_SPILL_MS: Millis = 6 * HOUR_MS;
/// Events this long before a day are read to tell whether the day's first
/// events continue an earlier visit (any gap longer than [`SESSION_GAP_MS`]
/// splits, so one session gap is enough; an hour is the partition size).
pub const READ_BEFORE_MS: Millis = HOUR_MS;
/// Engagement beacons adding up to at least this much active time make a
/// one-page visit engaged (not a bounce); the tracker sends a beacon for
/// every page view, so any beacon at all would count nobody as a bounce.
pub const ENGAGED_MS: u64 = 10_000;

/// One visit.
#[derive(Debug, Clone)]
pub struct Session<'a> {
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

fn kind_order(k: Kind) -> u8 {
    match k {
        Kind::PageView => 0,
        Kind::Custom => 1,
        Kind::Engagement => 2,
    }
}

/// Builds the visits of a site's events, grouped by tab in the order of each
/// tab's first event, and in time order within a tab. Visits made only of
/// engagement beacons (a tab hidden after a long pause) are not visits and
/// are left out.
pub fn sessions<'a>(events: &'a [Event], zone: &Zone) -> Vec<Session<'a>> {
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
        let order = |e: &&Event| (e.ts, kind_order(e.kind));
        if !group.is_sorted_by_key(order) {
            group.sort_by_key(order);
        }
        let mut start = 0;
        let mut limit = days.end(group[0].ts) + MAX_SPILL_MS;
        for i in 1..group.len() {
            if group[i].ts - group[i - 1].ts > SESSION_GAP_MS || group[i].ts >= limit {
                push(&mut out, &group[start..i]);
                start = i;
                limit = days.end(group[i].ts) + MAX_SPILL_MS;
            }
        }
        push(&mut out, &group[start..]);
    }
    out
}

/// The end of the local day of an instant, remembering the last day asked
/// for (a day's events mostly fall in it).
struct DayCache<'z> {
    zone: &'z Zone,
    start: Millis,
    end: Millis,
}

impl<'z> DayCache<'z> {
    fn new(zone: &'z Zone) -> Self {
        Self {
            zone,
            start: 0,
            end: 0,
        }
    }

    fn end(&mut self, ts: Millis) -> Millis {
        if !(self.start..self.end).contains(&ts) {
            let day = self.zone.local_date(ts);
            self.start = self.zone.day_start(day);
            self.end = self.zone.day_end(day);
        }
        self.end
    }
}

fn push<'a>(out: &mut Vec<Session<'a>>, events: &[&'a Event]) {
    let (mut pageviews, mut custom, mut engaged, mut beacons) = (0u32, 0u32, 0u64, 0u32);
    // Custom events that end a bounce (not Plausible's `interactive: false`).
    let mut interactive = 0u32;
    let (mut entry, mut exit) = (None, None);
    for e in events {
        match e.kind {
            Kind::PageView => {
                pageviews += 1;
                entry.get_or_insert(e.path.as_str());
                exit = Some(e.path.as_str());
            }
            Kind::Custom => {
                custom += 1;
                interactive += u32::from(!e.non_interactive);
            }
            Kind::Engagement => {
                beacons += 1;
                engaged += e.engaged_ms.unwrap_or(0);
            }
        }
    }
    if pageviews == 0 && custom == 0 {
        return;
    }
    let first = events[0];
    let last = events[events.len() - 1];
    out.push(Session {
        visitor: visitor_number(&first.vid),
        start: first.ts,
        end: last.ts,
        first,
        events: SmallVec::from_slice(events),
        pageviews,
        custom_events: custom,
        entry,
        exit,
        bounce: pageviews == 1 && interactive == 0 && engaged < ENGAGED_MS,
        duration_ms: if beacons > 0 {
            engaged
        } else {
            u64::try_from(last.ts - first.ts).unwrap_or(0)
        },
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;
    use crate::classify::referrer::Channel;
    use crate::classify::ua::DeviceType;

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
        let s = sessions(&events, &Zone::utc());
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
        let s = sessions(&events, &Zone::utc());
        assert_eq!((s[0].duration_ms, s[0].bounce), (12_000, false));
        let short = vec![
            ev(Kind::PageView, 0, "b", "/"),
            ev(Kind::Engagement, 60_000, "b", "/"),
        ];
        let s = sessions(&short, &Zone::utc());
        assert_eq!((s[0].duration_ms, s[0].bounce), (3_000, true));
    }

    #[test]
    fn engagement_only_fragments_are_not_visits() {
        let events = vec![ev(Kind::Engagement, 0, "a", "/")];
        assert!(sessions(&events, &Zone::utc()).is_empty());
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
        let s = sessions(&events, &Zone::utc());
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].start, day - HOUR_MS);
        assert!(s[0].end < day + MAX_SPILL_MS);
        assert!(s[1].start >= day + MAX_SPILL_MS);
    }
}
