//! A deterministic day of traffic for the scan's bench and example: about
//! 1.1 M events (page views, custom events, engagement beacons) in about
//! 300,000 visits of 220,000 visitors, with the skew of real sites (a few
//! pages, sources and countries take most of the traffic), produced one UTC
//! hour at a time so a whole day of events is never held.

#![allow(dead_code)]

use tally_core::engine::aggregate::FoldSpec;
use tally_core::engine::dimension::Dimension;
use tally_core::engine::filter::Filter;
use tally_core::engine::scan::{ScanSpec, TopProps};
use tally_core::engine::segment::{HourBlocks, encode_hour};
use tally_core::ingest::classify::referrer::Channel;
use tally_core::ingest::classify::ua::DeviceType;
use tally_core::ingest::event::{Event, Kind, Revenue};
use tally_core::{HOUR_MS, Millis};

/// 2025-12-01T00:00Z.
pub const DAY: Millis = 1_764_547_200_000;

/// A stats query: totals only, with `filter`.
pub fn stats(filter: &Filter) -> ScanSpec<'_> {
    ScanSpec {
        fold: FoldSpec {
            dims: &[],
            props: &[],
            goals: &[],
            filter,
            top_n: None,
        },
        top_props: None,
        funnel: None,
    }
}

/// What a day rollup folds: every dimension, the top 300 values, the 100
/// most used property keys (`filter` is empty).
pub fn rollup(filter: &Filter) -> ScanSpec<'_> {
    ScanSpec {
        fold: FoldSpec {
            dims: &Dimension::ALL,
            props: &[],
            goals: &[],
            filter,
            top_n: Some(300),
        },
        top_props: Some(TopProps { n: 100, cap: 1000 }),
        funnel: None,
    }
}

/// A seeded PRNG (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Skewed towards 0: the minimum of two draws, squared in effect.
    fn skewed(&mut self, n: u64) -> u64 {
        let a = self.below(n);
        let b = self.below(n);
        (a * b) / n.max(1)
    }
}

const COUNTRIES: [&str; 12] = [
    "US", "DE", "GB", "FR", "IN", "BR", "JP", "CA", "NL", "ES", "IT", "PL",
];
const SOURCES: [(&str, Channel); 8] = [
    ("Direct", Channel::Direct),
    ("Google", Channel::OrganicSearch),
    ("Bing", Channel::OrganicSearch),
    ("Twitter", Channel::OrganicSocial),
    ("Reddit", Channel::OrganicSocial),
    ("Hacker News", Channel::Referral),
    ("Newsletter", Channel::Email),
    ("github.com", Channel::Referral),
];
const BROWSERS: [&str; 6] = [
    "Chrome",
    "Safari",
    "Firefox",
    "Edge",
    "Samsung Internet",
    "Opera",
];
const OSES: [&str; 5] = ["Windows", "macOS", "iOS", "Android", "Linux"];
const SCREENS: [&str; 6] = [
    "1920x1080",
    "1440x900",
    "390x844",
    "1536x864",
    "412x915",
    "2560x1440",
];

/// One event of the day, as numbers (16 bytes), before it is made.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Plan {
    ts: Millis,
    visit: u32,
    step: u16,
    kind: u8,
}

/// The day's traffic.
pub struct Day {
    plans: Vec<Plan>,
    /// Per visit: its visitor and its random traits.
    visits: Vec<(u32, u64)>,
    seed: u64,
}

impl Day {
    /// About `events` events (1.1 M for a busy site's day) of the UTC day
    /// starting at `start`, from `seed`.
    pub fn new(start: Millis, events: usize, seed: u64) -> Self {
        let mut rng = Rng(seed);
        let n_visits = events * 300 / 1050;
        let mut plans = Vec::with_capacity(events + 1000);
        let mut visits = Vec::with_capacity(n_visits);
        for v in 0..n_visits as u32 {
            // Most visitors visit once; some come back.
            let visitor = if rng.below(4) == 0 {
                rng.below(u64::from(v.max(1))) as u32
            } else {
                v
            };
            let traits = rng.next();
            visits.push((visitor, traits));
            // A diurnal day: more visits in the afternoon (UTC).
            let minute = (rng.below(1440) + rng.below(1440)) / 2;
            let mut ts = start + (minute * 60_000 + rng.below(60_000)) as Millis;
            let pages = 1 + rng.skewed(7);
            let mut step = 0u16;
            for p in 0..pages {
                plans.push(Plan {
                    ts,
                    visit: v,
                    step,
                    kind: 0,
                });
                step += 1;
                if rng.below(8) == 0 {
                    plans.push(Plan {
                        ts: ts + 2_000,
                        visit: v,
                        step,
                        kind: 1,
                    });
                    step += 1;
                }
                let stay = 5_000 + rng.skewed(240_000) as Millis;
                if rng.below(10) < 7 {
                    plans.push(Plan {
                        ts: ts + stay,
                        visit: v,
                        step,
                        kind: 2,
                    });
                    step += 1;
                }
                ts += stay + 1_000;
                // Now and then a long pause: a second visit of the same tab.
                if p == 1 && rng.below(20) == 0 {
                    ts += 40 * 60_000;
                }
            }
        }
        plans.sort_unstable();
        Self {
            plans,
            visits,
            seed,
        }
    }

    /// Events.
    pub fn len(&self) -> usize {
        self.plans.len()
    }

    /// The UTC hours the events fall in.
    pub fn hours(&self) -> Vec<Millis> {
        let mut h: Vec<Millis> = self
            .plans
            .iter()
            .map(|p| p.ts / HOUR_MS * HOUR_MS)
            .collect();
        h.dedup();
        h
    }

    /// The events of one UTC hour.
    pub fn events(&self, hour: Millis) -> Vec<Event> {
        let from = self.plans.partition_point(|p| p.ts < hour);
        let to = self.plans.partition_point(|p| p.ts < hour + HOUR_MS);
        self.plans[from..to].iter().map(|p| self.event(p)).collect()
    }

    /// Every hour's events encoded as segment blocks, as the job stores them.
    pub fn blocks(&self) -> Vec<HourBlocks> {
        self.hours()
            .into_iter()
            .map(|h| encode_hour(h, &self.events(h)))
            .collect()
    }

    fn event(&self, p: &Plan) -> Event {
        let (visitor, t) = self.visits[p.visit as usize];
        let mut r = Rng(t ^ u64::from(p.step).wrapping_mul(0x2545_f491_4f6c_dd1d));
        let pick = |shift: u32, n: u64| ((t >> shift) % n) as usize;
        let (source, channel) = SOURCES[(((t >> 3) % 64) * ((t >> 9) % 64) / 64 % 8) as usize];
        let country = COUNTRIES[(((t >> 15) % 32) * ((t >> 20) % 32) / 32 % 12) as usize];
        let mobile = pick(25, 3) == 0;
        let kind = [Kind::PageView, Kind::Custom, Kind::Engagement][usize::from(p.kind)];
        let page = r.skewed(2_000);
        let path = if page < 40 {
            format!("/{page}")
        } else {
            format!("/docs/section-{}/page-{page}", page % 17)
        };
        Event {
            kind,
            ts: p.ts,
            vid: format!(
                "{:016x}",
                (u64::from(visitor) ^ (self.seed << 32)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ),
            sid: if pick(30, 10) == 0 {
                String::new()
            } else {
                format!("{:012x}", (u64::from(p.visit) * 7919) ^ (self.seed << 40))
            },
            host: "example.com".into(),
            path,
            referrer: (source != "Direct")
                .then(|| format!("{}/", source.to_lowercase().replace(' ', ""))),
            source: source.into(),
            channel,
            utm_source: (channel == Channel::Email).then(|| "newsletter".to_owned()),
            utm_medium: (channel == Channel::Email).then(|| "email".to_owned()),
            utm_campaign: (channel == Channel::Email).then(|| format!("issue-{}", pick(35, 12))),
            utm_content: None,
            utm_term: None,
            browser: BROWSERS[pick(40, 6)].into(),
            os: OSES[if mobile { 2 + pick(44, 2) } else { pick(44, 5) }].into(),
            browser_version: None,
            os_version: None,
            device: if mobile {
                DeviceType::Mobile
            } else {
                DeviceType::Desktop
            },
            country: Some(country.into()),
            region: None,
            city: None,
            screen: Some(SCREENS[pick(48, 6)].into()),
            name: (kind == Kind::Custom)
                .then(|| ["Signup", "Download", "Outbound Link: Click"][pick(52, 3)].to_owned()),
            value: None,
            props: if kind == Kind::Custom {
                [(
                    "plan".to_owned(),
                    ["free", "pro", "team"][pick(55, 3)].to_owned(),
                )]
                .into()
            } else {
                Default::default()
            },
            engaged_ms: (kind == Kind::Engagement).then(|| 1_000 + r.below(120_000)),
            scroll: (kind == Kind::Engagement).then(|| r.below(101) as u8),
            live: None,
            vitals: None,
            non_interactive: false,
            revenue: (kind == Kind::Custom && pick(58, 20) == 0).then(|| Revenue {
                amount: "19.99".into(),
                currency: "EUR".into(),
            }),
        }
    }
}
