//! Site-local calendar days.
//!
//! A site has an IANA time zone and its days are local calendar days: a day
//! may last 23, 24 or 25 hours. This module turns instants into local dates
//! and local dates into the instants that bound them. The time-zone database
//! is compiled into the binary (`jiff` with its bundled tzdb), so results do
//! not depend on the machine.

use crate::Millis;
use time::{Date, Month};

/// A validated IANA time zone.
#[derive(Clone, Debug)]
pub struct Zone {
    tz: jiff::tz::TimeZone,
    name: String,
}

/// Why a time zone or date could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZoneError {
    /// The name is not in the time-zone database.
    #[error("unknown time zone {0:?}")]
    UnknownZone(String),
    /// The date is outside the range the database can express.
    #[error("date out of range")]
    OutOfRange,
}

impl PartialEq for Zone {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Zone {
    /// Looks up an IANA zone name such as `Europe/Berlin` or `UTC`.
    pub fn parse(name: &str) -> Result<Self, ZoneError> {
        if name.is_empty() || name.len() > 64 || !name.is_ascii() {
            return Err(ZoneError::UnknownZone(name.to_owned()));
        }
        let tz =
            jiff::tz::TimeZone::get(name).map_err(|_| ZoneError::UnknownZone(name.to_owned()))?;
        Ok(Self {
            tz,
            name: name.to_owned(),
        })
    }

    /// The zone `UTC`.
    pub fn utc() -> Self {
        Self {
            tz: jiff::tz::TimeZone::UTC,
            name: "UTC".to_owned(),
        }
    }

    /// The zone's IANA name as configured.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The local calendar date of an instant.
    pub fn local_date(&self, at: Millis) -> Date {
        let ts = timestamp(at);
        let offset = self.tz.to_offset(ts);
        let local = offset.to_datetime(ts).date();
        from_jiff(local)
    }

    /// The first instant of a local date (DST-safe: if local midnight does
    /// not exist, the day starts at the first instant after the gap).
    pub fn day_start(&self, date: Date) -> Millis {
        let civil = to_jiff(date);
        match civil.to_zoned_datetime(self.tz.clone()) {
            Ok(zdt) => zdt.timestamp().as_millisecond(),
            // Dates outside jiff's range (year > 9999) never come from
            // validated input; fall back to a UTC midnight.
            Err(_) => utc_midnight(date),
        }
    }

    /// The first instant after a local date (the start of the next day).
    pub fn day_end(&self, date: Date) -> Millis {
        match date.next_day() {
            Some(next) => self.day_start(next),
            None => self.day_start(date) + crate::DAY_MS,
        }
    }

    /// The length of a local day in hours (23, 24 or 25 around DST changes).
    pub fn day_hours(&self, date: Date) -> i64 {
        (self.day_end(date) - self.day_start(date)) / crate::HOUR_MS
    }

    /// The local time of an instant as ISO 8601 with its offset,
    /// `YYYY-MM-DDTHH:MM:SS+HH:MM` (whole seconds).
    pub fn local_iso(&self, at: Millis) -> String {
        let ts = timestamp(at.div_euclid(1000) * 1000);
        let offset = self.tz.to_offset(ts);
        let dt = offset.to_datetime(ts);
        let secs = offset.seconds();
        let sign = if secs < 0 { '-' } else { '+' };
        let (h, m) = (secs.abs() / 3600, secs.abs() % 3600 / 60);
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{sign}{h:02}:{m:02}",
            dt.year(),
            dt.month(),
            dt.day(),
            dt.hour(),
            dt.minute(),
            dt.second()
        )
    }

    /// The local date and time of an instant formatted as `YYYY-MM-DD HH:MM`.
    pub fn local_minute_label(&self, at: Millis) -> String {
        let ts = timestamp(at);
        let dt = self.tz.to_offset(ts).to_datetime(ts);
        format!(
            "{:04}-{:02}-{:02} {:02}:{:02}",
            dt.year(),
            dt.month(),
            dt.day(),
            dt.hour(),
            dt.minute()
        )
    }
}

fn timestamp(at: Millis) -> jiff::Timestamp {
    jiff::Timestamp::from_millisecond(at).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

fn to_jiff(date: Date) -> jiff::civil::Date {
    let year = i16::try_from(date.year()).unwrap_or(9999);
    jiff::civil::Date::new(year, date.month() as i8, date.day() as i8)
        .unwrap_or(jiff::civil::Date::MAX)
}

fn from_jiff(date: jiff::civil::Date) -> Date {
    let month = Month::try_from(date.month() as u8).unwrap_or(Month::January);
    Date::from_calendar_date(i32::from(date.year()), month, date.day() as u8).unwrap_or(Date::MIN)
}

/// Midnight UTC of a date, in milliseconds.
pub fn utc_midnight(date: Date) -> Millis {
    date.midnight().assume_utc().unix_timestamp() * 1000
}

/// The UTC calendar date of an instant.
pub fn utc_date(at: Millis) -> Date {
    time::OffsetDateTime::from_unix_timestamp(at.div_euclid(1000))
        .map(|t| t.date())
        .unwrap_or(Date::MIN)
}

/// Formats a date as `YYYY-MM-DD`.
pub fn format_date(date: Date) -> String {
    format!(
        "{:04}-{:02}-{:02}",
        date.year(),
        u8::from(date.month()),
        date.day()
    )
}

/// Parses a `YYYY-MM-DD` date strictly (four-digit year, two-digit month and day).
pub fn parse_date(text: &str) -> Option<Date> {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let digits = |s: &str| -> Option<u32> {
        if s.bytes().all(|c| c.is_ascii_digit()) {
            s.parse().ok()
        } else {
            None
        }
    };
    let year = i32::try_from(digits(&text[0..4])?).ok()?;
    let month = Month::try_from(u8::try_from(digits(&text[5..7])?).ok()?).ok()?;
    let day = u8::try_from(digits(&text[8..10])?).ok()?;
    Date::from_calendar_date(year, month, day).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use time::macros::date;

    #[test]
    fn berlin_dst_days_have_23_and_25_hours() {
        let berlin = Zone::parse("Europe/Berlin").unwrap();
        assert_eq!(berlin.day_hours(date!(2026 - 03 - 29)), 23);
        assert_eq!(berlin.day_hours(date!(2026 - 10 - 25)), 25);
        assert_eq!(berlin.day_hours(date!(2026 - 06 - 01)), 24);
    }

    #[test]
    fn new_york_dst_days_have_23_and_25_hours() {
        let ny = Zone::parse("America/New_York").unwrap();
        assert_eq!(ny.day_hours(date!(2026 - 03 - 08)), 23);
        assert_eq!(ny.day_hours(date!(2026 - 11 - 01)), 25);
    }

    #[test]
    fn late_evening_lands_on_the_local_day() {
        // 2026-07-01 23:30 in Berlin (UTC+2) is 21:30 UTC.
        let berlin = Zone::parse("Europe/Berlin").unwrap();
        let at = utc_midnight(date!(2026 - 07 - 01)) + 21 * crate::HOUR_MS + 30 * crate::MINUTE_MS;
        assert_eq!(berlin.local_date(at), date!(2026 - 07 - 01));
        // The same instant is already July 2nd in Tokyo.
        let tokyo = Zone::parse("Asia/Tokyo").unwrap();
        assert_eq!(tokyo.local_date(at), date!(2026 - 07 - 02));
    }

    #[test]
    fn rejects_unknown_zones() {
        assert!(Zone::parse("Mars/Olympus").is_err());
        assert!(Zone::parse("").is_err());
        assert!(Zone::parse("Europe/Berlin\u{0}").is_err());
    }

    #[test]
    fn parses_only_strict_dates() {
        assert_eq!(parse_date("2026-02-28"), Some(date!(2026 - 02 - 28)));
        for bad in [
            "2026-02-30",
            "2026-2-28",
            "26-02-28",
            "2026/02/28",
            "2026-02-2x",
            "+026-02-28",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
    }

    proptest! {
        #[test]
        fn every_instant_falls_inside_its_local_day(
            at in 0i64..4_102_444_800_000,
            zone in prop::sample::select(vec!["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Pacific/Chatham", "America/Santiago", "Australia/Lord_Howe", "Pacific/Kiritimati"]),
        ) {
            let zone = Zone::parse(zone).unwrap();
            let day = zone.local_date(at);
            prop_assert!(zone.day_start(day) <= at);
            prop_assert!(at < zone.day_end(day));
        }

        #[test]
        fn consecutive_days_tile_time(
            days in 0i32..50_000,
            zone in prop::sample::select(vec!["Europe/Berlin", "America/New_York", "Asia/Tehran", "America/Havana", "Africa/Casablanca"]),
        ) {
            let zone = Zone::parse(zone).unwrap();
            let day = Date::from_julian_day(2_440_588 + days).unwrap();
            prop_assert_eq!(zone.day_end(day), zone.day_start(day.next_day().unwrap()));
            let hours = zone.day_hours(day);
            prop_assert!((22..=26).contains(&hours), "{} hours", hours);
        }

        #[test]
        fn format_and_parse_round_trip(days in 0i32..2_900_000) {
            let day = Date::from_julian_day(days + 1_721_426).unwrap();
            prop_assert_eq!(parse_date(&format_date(day)), Some(day));
        }
    }
}
