//! Report ranges: presets and custom dates in the site's time zone,
//! comparison ranges, and time-series intervals and buckets.

use crate::Millis;
use crate::time::zone::{Zone, parse_date};
use time::{Date, Duration, Month};

/// The longest range a query may span, in days.
pub const MAX_RANGE_DAYS: i64 = 3_660;
/// The longest range an hourly time series may span, in days.
pub const MAX_HOURLY_DAYS: i64 = 31;

/// An inclusive range of site-local dates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateRange {
    /// First day.
    pub from: Date,
    /// Last day (inclusive).
    pub to: Date,
}

impl DateRange {
    /// Number of days.
    pub fn days(&self) -> i64 {
        (self.to - self.from).whole_days() + 1
    }

    /// Every day, in order.
    pub fn each_day(&self) -> impl Iterator<Item = Date> + '_ {
        let mut day = Some(self.from);
        std::iter::from_fn(move || {
            let d = day?;
            if d > self.to {
                return None;
            }
            day = d.next_day();
            Some(d)
        })
    }

    /// Whether a date is inside.
    pub fn contains(&self, d: Date) -> bool {
        self.from <= d && d <= self.to
    }

    /// The instants `[start, end)` the range covers in a zone.
    pub fn bounds(&self, zone: &Zone) -> (Millis, Millis) {
        (zone.day_start(self.from), zone.day_end(self.to))
    }
}

/// Why a range is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    /// Not a `YYYY-MM-DD` date.
    #[error("invalid date {0:?}: expected YYYY-MM-DD")]
    InvalidDate(String),
    /// `from` without `to` or the other way round.
    #[error("a custom range needs both `from` and `to`")]
    IncompleteRange,
    /// `from` is after `to`.
    #[error("`from` must not be after `to`")]
    FromAfterTo,
    /// Longer than [`MAX_RANGE_DAYS`].
    #[error("the range is longer than {MAX_RANGE_DAYS} days")]
    TooLong,
    /// Unknown preset.
    #[error(
        "unknown period {0:?}: use today, yesterday, 7d, 30d, month, last_month, 12mo, year, all, or from/to"
    )]
    UnknownPeriod(String),
    /// Unknown interval.
    #[error("unknown interval {0:?}: use hour, day, week or month")]
    UnknownInterval(String),
    /// Hourly series over too long a range.
    #[error("an hourly series may span at most {MAX_HOURLY_DAYS} days")]
    IntervalTooFine,
    /// Unknown comparison.
    #[error("unknown comparison {0:?}: use previous or year")]
    UnknownComparison(String),
}

impl RangeError {
    /// The machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidDate(_) => "invalid_date",
            Self::IncompleteRange => "incomplete_range",
            Self::FromAfterTo => "from_after_to",
            Self::TooLong => "range_too_long",
            Self::UnknownPeriod(_) => "unknown_period",
            Self::UnknownInterval(_) => "unknown_interval",
            Self::IntervalTooFine => "interval_too_fine",
            Self::UnknownComparison(_) => "unknown_comparison",
        }
    }
}

/// Resolves `period` or `from`/`to` against the site's today. `first_day` is
/// the site's first local day (for `all`).
pub fn resolve(
    period: Option<&str>,
    from: Option<&str>,
    to: Option<&str>,
    today: Date,
    first_day: Date,
) -> Result<(String, DateRange), RangeError> {
    let date = |s: &str| parse_date(s).ok_or_else(|| RangeError::InvalidDate(s.to_owned()));
    let (name, range) = match (from, to) {
        (Some(f), Some(t)) => (
            "custom".to_owned(),
            DateRange {
                from: date(f)?,
                to: date(t)?,
            },
        ),
        (Some(_), None) | (None, Some(_)) => return Err(RangeError::IncompleteRange),
        (None, None) => {
            let p = period.unwrap_or("30d");
            let back = |days: i64| today - Duration::days(days);
            let month_start = |d: Date| d.replace_day(1).unwrap_or(d);
            let range = match p {
                "today" | "day" => DateRange {
                    from: today,
                    to: today,
                },
                "yesterday" => DateRange {
                    from: back(1),
                    to: back(1),
                },
                "7d" => DateRange {
                    from: back(6),
                    to: today,
                },
                "30d" => DateRange {
                    from: back(29),
                    to: today,
                },
                "month" => DateRange {
                    from: month_start(today),
                    to: today,
                },
                "last_month" => {
                    let last = month_start(today).previous_day().unwrap_or(today);
                    DateRange {
                        from: month_start(last),
                        to: last,
                    }
                }
                "12mo" => DateRange {
                    from: months_back(month_start(today), 11),
                    to: today,
                },
                "year" => DateRange {
                    from: Date::from_calendar_date(today.year(), Month::January, 1)
                        .unwrap_or(today),
                    to: today,
                },
                "all" => DateRange {
                    from: first_day.min(today),
                    to: today,
                },
                other => return Err(RangeError::UnknownPeriod(other.to_owned())),
            };
            (p.to_owned(), range)
        }
    };
    if range.from > range.to {
        return Err(RangeError::FromAfterTo);
    }
    if range.days() > MAX_RANGE_DAYS {
        return Err(RangeError::TooLong);
    }
    Ok((name, range))
}

/// The first day of the month `months` before the month that
/// `first_of_month` starts.
pub fn months_back(first_of_month: Date, months: i32) -> Date {
    let total =
        first_of_month.year() * 12 + i32::from(u8::from(first_of_month.month())) - 1 - months;
    let (y, m) = (total.div_euclid(12), total.rem_euclid(12) + 1);
    Month::try_from(m as u8)
        .ok()
        .and_then(|m| Date::from_calendar_date(y, m, 1).ok())
        .unwrap_or(first_of_month)
}

/// What a comparison compares with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// The range of equal length just before.
    Previous,
    /// The same dates a year earlier.
    Year,
}

impl Compare {
    /// Parses `previous` / `previous_period` / `year` / `year_over_year`.
    pub fn parse(text: &str) -> Result<Self, RangeError> {
        match text {
            "previous" | "previous_period" => Ok(Self::Previous),
            "year" | "year_over_year" => Ok(Self::Year),
            other => Err(RangeError::UnknownComparison(other.to_owned())),
        }
    }

    /// The range compared with.
    pub fn range(self, r: DateRange) -> DateRange {
        match self {
            Self::Previous => {
                let len = Duration::days(r.days());
                DateRange {
                    from: r.from - len,
                    to: r.to - len,
                }
            }
            Self::Year => DateRange {
                from: year_back(r.from),
                to: year_back(r.to),
            },
        }
    }
}

fn year_back(d: Date) -> Date {
    Date::from_calendar_date(d.year() - 1, d.month(), d.day())
        .or_else(|_| Date::from_calendar_date(d.year() - 1, d.month(), d.day() - 1))
        .unwrap_or(d)
}

/// A time-series interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interval {
    /// Local hours.
    Hour,
    /// Local days.
    Day,
    /// Weeks starting on Monday.
    Week,
    /// Calendar months.
    Month,
}

impl Interval {
    /// Parses an interval, or picks one for the range when absent.
    pub fn parse(text: Option<&str>, range: DateRange) -> Result<Self, RangeError> {
        let interval = match text {
            None => match range.days() {
                1 => Self::Hour,
                d if d <= 90 => Self::Day,
                d if d <= 400 => Self::Week,
                _ => Self::Month,
            },
            Some("hour") => Self::Hour,
            Some("day" | "date") => Self::Day,
            Some("week") => Self::Week,
            Some("month") => Self::Month,
            Some(other) => return Err(RangeError::UnknownInterval(other.to_owned())),
        };
        if interval == Self::Hour && range.days() > MAX_HOURLY_DAYS {
            return Err(RangeError::IntervalTooFine);
        }
        Ok(interval)
    }

    /// The name used in responses.
    pub fn name(self) -> &'static str {
        match self {
            Self::Hour => "hour",
            Self::Day => "day",
            Self::Week => "week",
            Self::Month => "month",
        }
    }

    /// The bucket a day belongs to (its label date): the day, its week's
    /// Monday, or its month's first day, never before the range start.
    pub fn day_bucket(self, day: Date, range: DateRange) -> Date {
        let start = match self {
            Self::Hour | Self::Day => day,
            Self::Week => day - Duration::days(i64::from(day.weekday().number_days_from_monday())),
            Self::Month => day.replace_day(1).unwrap_or(day),
        };
        start.max(range.from)
    }
}

/// Every hour bucket of a range: (start instant, local label `YYYY-MM-DD HH:00`).
/// DST days give 23 or 25 buckets.
pub fn hour_buckets(range: DateRange, zone: &Zone) -> Vec<(Millis, String)> {
    let (start, end) = range.bounds(zone);
    let mut out = Vec::new();
    let mut t = start;
    while t < end {
        let mut label = zone.local_minute_label(t);
        label.truncate(13);
        label.push_str(":00");
        out.push((t, label));
        t += crate::HOUR_MS;
    }
    out
}

/// Every day bucket label of a range for an interval, in order.
pub fn day_buckets(range: DateRange, interval: Interval) -> Vec<Date> {
    let mut out: Vec<Date> = Vec::new();
    for d in range.each_day() {
        let b = interval.day_bucket(d, range);
        if out.last() != Some(&b) {
            out.push(b);
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use time::macros::date;

    const TODAY: Date = date!(2026 - 11 - 30);

    fn r(p: &str) -> DateRange {
        resolve(Some(p), None, None, TODAY, date!(2026 - 01 - 15))
            .unwrap()
            .1
    }

    #[test]
    fn presets_resolve_against_the_local_today() {
        assert_eq!(
            r("today"),
            DateRange {
                from: TODAY,
                to: TODAY
            }
        );
        assert_eq!(
            r("yesterday"),
            DateRange {
                from: date!(2026 - 11 - 29),
                to: date!(2026 - 11 - 29)
            }
        );
        assert_eq!(
            r("7d"),
            DateRange {
                from: date!(2026 - 11 - 24),
                to: TODAY
            }
        );
        assert_eq!(r("30d").days(), 30);
        assert_eq!(
            r("month"),
            DateRange {
                from: date!(2026 - 11 - 01),
                to: TODAY
            }
        );
        assert_eq!(
            r("last_month"),
            DateRange {
                from: date!(2026 - 10 - 01),
                to: date!(2026 - 10 - 31)
            }
        );
        assert_eq!(
            r("12mo"),
            DateRange {
                from: date!(2025 - 12 - 01),
                to: TODAY
            }
        );
        assert_eq!(
            r("year"),
            DateRange {
                from: date!(2026 - 01 - 01),
                to: TODAY
            }
        );
        assert_eq!(
            r("all"),
            DateRange {
                from: date!(2026 - 01 - 15),
                to: TODAY
            }
        );
    }

    #[test]
    fn bad_ranges_have_their_reasons() {
        let f = |p: Option<&str>, a: Option<&str>, b: Option<&str>| {
            resolve(p, a, b, TODAY, TODAY).unwrap_err().code()
        };
        assert_eq!(f(Some("fortnight"), None, None), "unknown_period");
        assert_eq!(
            f(None, Some("2026-02-30"), Some("2026-03-01")),
            "invalid_date"
        );
        assert_eq!(
            f(None, Some("2026-03-02"), Some("2026-03-01")),
            "from_after_to"
        );
        assert_eq!(f(None, Some("2026-03-02"), None), "incomplete_range");
        assert_eq!(
            f(None, Some("1990-01-01"), Some("2026-03-01")),
            "range_too_long"
        );
    }

    #[test]
    fn comparisons_shift_the_range() {
        let range = DateRange {
            from: date!(2026 - 11 - 24),
            to: TODAY,
        };
        assert_eq!(
            Compare::Previous.range(range),
            DateRange {
                from: date!(2026 - 11 - 17),
                to: date!(2026 - 11 - 23)
            }
        );
        assert_eq!(
            Compare::Year.range(range),
            DateRange {
                from: date!(2025 - 11 - 24),
                to: date!(2025 - 11 - 30)
            }
        );
        let leap = DateRange {
            from: date!(2028 - 02 - 29),
            to: date!(2028 - 02 - 29),
        };
        assert_eq!(Compare::Year.range(leap).from, date!(2027 - 02 - 28));
    }

    #[test]
    fn buckets_cover_the_range() {
        let range = DateRange {
            from: date!(2026 - 11 - 04),
            to: date!(2026 - 12 - 02),
        };
        let weeks = day_buckets(range, Interval::Week);
        assert_eq!(weeks[0], date!(2026 - 11 - 04));
        assert_eq!(weeks[1], date!(2026 - 11 - 09));
        assert_eq!(weeks.len(), 5);
        assert_eq!(
            day_buckets(range, Interval::Month),
            vec![date!(2026 - 11 - 04), date!(2026 - 12 - 01)]
        );
        let berlin = Zone::parse("Europe/Berlin").unwrap();
        let dst = DateRange {
            from: date!(2026 - 10 - 25),
            to: date!(2026 - 10 - 25),
        };
        let hours = hour_buckets(dst, &berlin);
        assert_eq!(hours.len(), 25);
        assert_eq!(hours[2].1, "2026-10-25 02:00");
        assert_eq!(hours[3].1, "2026-10-25 02:00");
    }

    #[test]
    fn hourly_series_are_limited() {
        let long = DateRange {
            from: date!(2026 - 01 - 01),
            to: TODAY,
        };
        assert_eq!(
            Interval::parse(Some("hour"), long),
            Err(RangeError::IntervalTooFine)
        );
        assert_eq!(
            Interval::parse(
                None,
                DateRange {
                    from: TODAY,
                    to: TODAY
                }
            ),
            Ok(Interval::Hour)
        );
    }
}
