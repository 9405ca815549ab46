//! Who gets which report when.
//!
//! A site keeps a list of [`Subscription`]s (a recipient and the reports
//! they get: weekly, monthly or both). A weekly report covers the previous
//! Monday–Sunday and a monthly one the previous calendar month, both in the
//! site's zone; each is due on the day after its period, from
//! [`SEND_HOUR`]:00 local until that day ends (the job runs hourly, so a
//! run or two may fail and the report still goes; a longer outage skips
//! it rather than mail stale figures days late). Whether it was sent is
//! the job's send mark ([`SendState`]), passed in.

use crate::Millis;
use crate::account::record::valid_email;
use crate::engine::range::DateRange;
use crate::time::zone::Zone;
use serde::{Deserialize, Serialize};
use time::{Date, Duration, Weekday};

/// The local hour from which a report is due.
pub const SEND_HOUR: u8 = 7;

/// Recipients a site may have.
pub const MAX_SUBSCRIPTIONS: usize = 50;

/// A kind of report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The previous Monday–Sunday, sent on Monday.
    Weekly,
    /// The previous calendar month, sent on the 1st.
    Monthly,
}

impl Kind {
    /// Both kinds.
    pub const ALL: [Kind; 2] = [Kind::Weekly, Kind::Monthly];

    /// `weekly` or `monthly`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Weekly => "weekly",
            Self::Monthly => "monthly",
        }
    }

    /// Parses `weekly` or `monthly`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "weekly" => Some(Self::Weekly),
            "monthly" => Some(Self::Monthly),
            _ => None,
        }
    }
}

/// One recipient's reports of a site (stored as one site item).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscription {
    /// The recipient, normalised ([`valid_email`]).
    pub email: String,
    /// Gets the weekly report.
    pub weekly: bool,
    /// Gets the monthly report.
    pub monthly: bool,
    /// When it was made, Unix ms.
    #[serde(default)]
    pub created_at: Millis,
}

impl Subscription {
    /// Whether it gets reports of `kind`.
    pub fn gets(&self, kind: Kind) -> bool {
        match kind {
            Kind::Weekly => self.weekly,
            Kind::Monthly => self.monthly,
        }
    }

    /// Its reports, for people: `weekly`, `monthly` or `weekly, monthly`.
    pub fn kinds(&self) -> &'static str {
        match (self.weekly, self.monthly) {
            (true, true) => "weekly, monthly",
            (true, false) => "weekly",
            _ => "monthly",
        }
    }
}

/// Why a subscription was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubscriptionError {
    /// Not an email address.
    #[error("not an email address")]
    InvalidEmail,
    /// Neither weekly nor monthly.
    #[error("choose weekly, monthly or both")]
    NoKind,
    /// The site has as many recipients as it may.
    #[error("a site may have at most {MAX_SUBSCRIPTIONS} report recipients")]
    TooMany,
}

impl SubscriptionError {
    /// The API's error code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidEmail => "invalid_email",
            Self::NoKind => "invalid_report",
            Self::TooMany => "too_many_recipients",
        }
    }
}

/// A subscription as the CLI and the console's body give it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscriptionSpec {
    /// The recipient.
    pub email: String,
    /// Weekly reports.
    #[serde(default)]
    pub weekly: bool,
    /// Monthly reports.
    #[serde(default)]
    pub monthly: bool,
}

impl SubscriptionSpec {
    /// The subscription it describes, checked against the site's others
    /// (`existing`): an address already listed is replaced (its kinds are
    /// the ones given now), a new one must fit under
    /// [`MAX_SUBSCRIPTIONS`].
    pub fn build(
        &self,
        existing: &[Subscription],
        now: Millis,
    ) -> Result<Subscription, SubscriptionError> {
        let email = valid_email(&self.email).ok_or(SubscriptionError::InvalidEmail)?;
        if !self.weekly && !self.monthly {
            return Err(SubscriptionError::NoKind);
        }
        let known = existing.iter().find(|s| s.email == email);
        if known.is_none() && existing.len() >= MAX_SUBSCRIPTIONS {
            return Err(SubscriptionError::TooMany);
        }
        Ok(Subscription {
            email,
            weekly: self.weekly,
            monthly: self.monthly,
            created_at: known.map_or(now, |k| k.created_at),
        })
    }
}

/// The days the latest complete report of `kind` covers on local day
/// `today`: the Monday–Sunday before this week's Monday, or the previous
/// calendar month.
pub fn period_for(kind: Kind, today: Date) -> DateRange {
    match kind {
        Kind::Weekly => {
            let monday =
                today - Duration::days(i64::from(today.weekday().number_days_from_monday()));
            DateRange {
                from: monday - Duration::days(7),
                to: monday - Duration::days(1),
            }
        }
        Kind::Monthly => {
            let first = today.replace_day(1).unwrap_or(today);
            let to = first.previous_day().unwrap_or(first);
            DateRange {
                from: to.replace_day(1).unwrap_or(to),
                to,
            }
        }
    }
}

/// What the job knows of one report to one recipient (its send mark).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SendState {
    /// Marked before sending: sent, or a run stopped between sending and
    /// recording it. Never sent again (at most once).
    Sending,
    /// Sent and recorded.
    Sent,
}

/// A report to send now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    /// The recipient.
    pub email: String,
    /// The kind.
    pub kind: Kind,
    /// The days it covers (site-local).
    pub period: DateRange,
}

/// The local hour of an instant in a zone (DST-exact).
pub(crate) fn local_hour(zone: &Zone, at: Millis) -> u8 {
    // `YYYY-MM-DDTHH:…`
    zone.local_iso(at)
        .get(11..13)
        .and_then(|h| h.parse().ok())
        .unwrap_or(0)
}

/// The reports due at `now` for a site in `zone`: for each subscription and
/// kind it gets, the latest complete period's report when today (local) is
/// the day after that period, the local hour is [`SEND_HOUR`] or later, and
/// `marked(email, kind, period)` is `None` (no mark: never tried). In the
/// order of `subs`, weekly before monthly.
pub fn due_reports(
    now: Millis,
    zone: &Zone,
    subs: &[Subscription],
    marked: &dyn Fn(&str, Kind, DateRange) -> Option<SendState>,
) -> Vec<Due> {
    let today = zone.local_date(now);
    if local_hour(zone, now) < SEND_HOUR {
        return Vec::new();
    }
    let mut out = Vec::new();
    for sub in subs {
        for kind in Kind::ALL {
            if !sub.gets(kind) {
                continue;
            }
            let period = period_for(kind, today);
            let day_after = period.to.next_day();
            if day_after != Some(today) {
                continue;
            }
            if marked(&sub.email, kind, period).is_none() {
                out.push(Due {
                    email: sub.email.clone(),
                    kind,
                    period,
                });
            }
        }
    }
    out
}

/// Monday of the week of `day`.
pub fn monday_of(day: Date) -> Date {
    let mut d = day;
    while d.weekday() != Weekday::Monday {
        d = d.previous_day().unwrap_or(d);
    }
    d
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use time::macros::date;

    /// The instant of a local date and time in a zone (tests of other
    /// modules use it too).
    pub(crate) fn at(zone: &str, iso_local: &str) -> Millis {
        // An independent reference: jiff's own civil-to-instant conversion.
        let dt: jiff::civil::DateTime = iso_local.parse().unwrap();
        dt.to_zoned_datetime(jiff::tz::TimeZone::get(zone).unwrap())
            .unwrap()
            .timestamp()
            .as_millisecond()
    }

    fn sub(email: &str, weekly: bool, monthly: bool) -> Subscription {
        Subscription {
            email: email.into(),
            weekly,
            monthly,
            created_at: 0,
        }
    }

    fn none(_: &str, _: Kind, _: DateRange) -> Option<SendState> {
        None
    }

    #[test]
    fn a_weekly_period_is_the_previous_monday_to_sunday() {
        // 2026-01-12 is a Monday.
        for today in [
            date!(2026 - 01 - 12),
            date!(2026 - 01 - 14),
            date!(2026 - 01 - 18),
        ] {
            let p = period_for(Kind::Weekly, today);
            assert_eq!(
                (p.from, p.to),
                (date!(2026 - 01 - 05), date!(2026 - 01 - 11))
            );
        }
        assert_eq!(monday_of(date!(2026 - 01 - 18)), date!(2026 - 01 - 12));
    }

    #[test]
    fn a_monthly_period_is_the_previous_calendar_month() {
        let p = period_for(Kind::Monthly, date!(2026 - 03 - 01));
        assert_eq!(
            (p.from, p.to),
            (date!(2026 - 02 - 01), date!(2026 - 02 - 28))
        );
        let p = period_for(Kind::Monthly, date!(2026 - 01 - 20));
        assert_eq!(
            (p.from, p.to),
            (date!(2025 - 12 - 01), date!(2025 - 12 - 31))
        );
    }

    #[test]
    fn a_weekly_report_is_due_from_monday_seven_local_until_monday_ends() {
        let zone = Zone::parse("Pacific/Auckland").unwrap();
        let subs = [sub("a@example.com", true, false)];
        let due = |iso: &str| due_reports(at("Pacific/Auckland", iso), &zone, &subs, &none);
        assert!(due("2026-01-11T23:00").is_empty(), "Sunday night");
        assert!(due("2026-01-12T06:59").is_empty(), "Monday before seven");
        let got = due("2026-01-12T07:20");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].kind, Kind::Weekly);
        assert_eq!(got[0].period.from, date!(2026 - 01 - 05));
        assert_eq!(due("2026-01-12T23:59").len(), 1);
        assert!(due("2026-01-13T07:20").is_empty(), "Tuesday: too late");
    }

    #[test]
    fn a_marked_report_is_not_due_whatever_its_state() {
        let zone = Zone::parse("America/New_York").unwrap();
        let subs = [
            sub("a@example.com", true, true),
            sub("b@example.com", true, false),
        ];
        let now = at("America/New_York", "2026-06-01T07:20"); // a Monday and the 1st
        assert_eq!(due_reports(now, &zone, &subs, &none).len(), 3);
        for state in [SendState::Sending, SendState::Sent] {
            let marked = move |email: &str, kind: Kind, _: DateRange| {
                (email == "a@example.com" && kind == Kind::Weekly).then_some(state)
            };
            let got = due_reports(now, &zone, &subs, &marked);
            let names: Vec<(&str, Kind)> = got.iter().map(|d| (d.email.as_str(), d.kind)).collect();
            assert_eq!(
                names,
                [
                    ("a@example.com", Kind::Monthly),
                    ("b@example.com", Kind::Weekly)
                ]
            );
        }
    }

    #[test]
    fn the_send_hour_follows_daylight_saving_time() {
        // New York on 2026-03-09 (Monday after the spring change): UTC-4.
        let zone = Zone::parse("America/New_York").unwrap();
        let subs = [sub("a@example.com", true, false)];
        let six = at("America/New_York", "2026-03-09T06:30");
        let seven = at("America/New_York", "2026-03-09T07:00");
        assert_eq!(seven - six, 30 * crate::MINUTE_MS);
        assert!(due_reports(six, &zone, &subs, &none).is_empty());
        assert_eq!(due_reports(seven, &zone, &subs, &none).len(), 1);
    }

    #[test]
    fn a_spec_normalises_the_address_and_needs_a_kind() {
        let spec = SubscriptionSpec {
            email: "  Ann@Example.COM ".into(),
            weekly: true,
            monthly: false,
        };
        let s = spec.build(&[], 5).unwrap();
        assert_eq!(s.email, "ann@example.com");
        assert_eq!(s.created_at, 5);
        let again = SubscriptionSpec {
            monthly: true,
            ..spec.clone()
        }
        .build(std::slice::from_ref(&s), 9)
        .unwrap();
        assert_eq!(
            (again.weekly, again.monthly, again.created_at),
            (true, true, 5)
        );
        let none_kind = SubscriptionSpec {
            weekly: false,
            ..spec.clone()
        };
        assert_eq!(none_kind.build(&[], 0), Err(SubscriptionError::NoKind));
        let bad = SubscriptionSpec {
            email: "nobody".into(),
            ..spec
        };
        assert_eq!(bad.build(&[], 0), Err(SubscriptionError::InvalidEmail));
        let full: Vec<Subscription> = (0..MAX_SUBSCRIPTIONS)
            .map(|i| sub(&format!("r{i}@example.com"), true, false))
            .collect();
        let extra = SubscriptionSpec {
            email: "new@example.com".into(),
            weekly: true,
            monthly: false,
        };
        assert_eq!(extra.build(&full, 0), Err(SubscriptionError::TooMany));
    }
}
