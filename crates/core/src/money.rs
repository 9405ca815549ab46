//! Money: exact decimal amounts in an ISO 4217 currency, and their sums.
//!
//! A custom event may carry a [`Revenue`]. Its amount is kept as the
//! decimal text the tracker sent (normalised), never as a float, and sums
//! are integers of millionths ([`Amount`]), so 19.99 three times is 59.97
//! exactly. There are no exchange rates: every report keeps one sum per
//! currency ([`RevenueSum`]).
//!
//! The currency list is ISO 4217's active codes as data (180 three-letter
//! strings): a crate for it would add a build script for a table that
//! changes about once a year.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// ISO 4217's active currency codes, sorted (no `XXX` or `XTS`, which
/// name no currency and a test currency).
pub const CURRENCIES: [&str; 180] = [
    "AED", "AFN", "ALL", "AMD", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT",
    "BGN", "BHD", "BIF", "BMD", "BND", "BOB", "BOV", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD",
    "CAD", "CDF", "CHE", "CHF", "CHW", "CLF", "CLP", "CNY", "COP", "COU", "CRC", "CUC", "CUP",
    "CVE", "CZK", "DJF", "DKK", "DOP", "DZD", "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP",
    "GEL", "GHS", "GIP", "GMD", "GNF", "GTQ", "GYD", "HKD", "HNL", "HTG", "HUF", "IDR", "ILS",
    "INR", "IQD", "IRR", "ISK", "JMD", "JOD", "JPY", "KES", "KGS", "KHR", "KMF", "KPW", "KRW",
    "KWD", "KYD", "KZT", "LAK", "LBP", "LKR", "LRD", "LSL", "LYD", "MAD", "MDL", "MGA", "MKD",
    "MMK", "MNT", "MOP", "MRU", "MUR", "MVR", "MWK", "MXN", "MXV", "MYR", "MZN", "NAD", "NGN",
    "NIO", "NOK", "NPR", "NZD", "OMR", "PAB", "PEN", "PGK", "PHP", "PKR", "PLN", "PYG", "QAR",
    "RON", "RSD", "RUB", "RWF", "SAR", "SBD", "SCR", "SDG", "SEK", "SGD", "SHP", "SLE", "SLL",
    "SOS", "SRD", "SSP", "STN", "SVC", "SYP", "SZL", "THB", "TJS", "TMT", "TND", "TOP", "TRY",
    "TTD", "TWD", "TZS", "UAH", "UGX", "USD", "USN", "UYI", "UYU", "UYW", "UZS", "VED", "VES",
    "VND", "VUV", "WST", "XAF", "XAG", "XAU", "XBA", "XBB", "XBC", "XBD", "XCD", "XCG", "XDR",
    "XOF", "XPD", "XPF", "XPT", "XSU", "XUA", "YER", "ZAR", "ZMW", "ZWG", "ZWL",
];

/// Whether `code` is an ISO 4217 currency code (upper case).
pub fn is_currency(code: &str) -> bool {
    CURRENCIES.binary_search(&code).is_ok()
}

/// Why an amount of money was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MoneyError {
    /// The currency is not an ISO 4217 code.
    #[error("unknown currency: use an ISO 4217 code such as EUR or USD")]
    UnknownCurrency,
    /// The amount is not a plain decimal within range.
    #[error("amount must be a decimal with at most 18 integer and 6 fraction digits")]
    InvalidAmount,
}

/// An amount of money: an exact decimal and its ISO 4217 currency.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Revenue {
    /// The amount as a plain decimal (`19.99`, `-5`, `0.5`), never a float.
    #[serde(rename = "a")]
    pub amount: String,
    /// The ISO 4217 currency code (`EUR`).
    #[serde(rename = "c")]
    pub currency: String,
}

impl Revenue {
    /// A revenue from an amount's text (a JSON number's digits or a string)
    /// and a currency (any case); `None` when either is not well formed.
    pub fn parse(amount: &str, currency: &str) -> Option<Self> {
        Self::try_parse(amount, currency).ok()
    }

    /// As [`Revenue::parse`], saying what is wrong.
    pub fn try_parse(amount: &str, currency: &str) -> Result<Self, MoneyError> {
        let currency = currency.trim().to_ascii_uppercase();
        if !is_currency(&currency) {
            return Err(MoneyError::UnknownCurrency);
        }
        Ok(Self {
            amount: decimal(amount.trim()).ok_or(MoneyError::InvalidAmount)?,
            currency,
        })
    }

    /// The amount as an integer of millionths.
    pub fn value(&self) -> Amount {
        Amount::parse(&self.amount).unwrap_or_default()
    }
}

/// Fraction digits kept: amounts are integers of millionths.
const SCALE_DIGITS: usize = 6;
const SCALE: i128 = 1_000_000;

/// A plain decimal normalised: optional minus, digits, optional fraction
/// (trailing zeros dropped), at most 18 integer and 6 fraction digits.
/// Exponents, `NaN` and infinities are refused.
fn decimal(text: &str) -> Option<String> {
    Amount::parse(text).map(|a| a.to_string())
}

/// An exact amount: an integer of millionths of a currency unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Amount(pub i128);

impl Amount {
    /// Parses a plain decimal (see [`Revenue`]); `None` when malformed or
    /// out of range.
    pub fn parse(text: &str) -> Option<Self> {
        let (neg, body) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text.strip_prefix('+').unwrap_or(text)),
        };
        let (int, frac) = body.split_once('.').unwrap_or((body, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if (int.is_empty() && frac.is_empty()) || !digits(int) || !digits(frac) {
            return None;
        }
        let int = int.trim_start_matches('0');
        let frac = frac.trim_end_matches('0');
        if int.len() > 18 || frac.len() > SCALE_DIGITS {
            return None;
        }
        let whole: i128 = if int.is_empty() { 0 } else { int.parse().ok()? };
        let part: i128 = if frac.is_empty() {
            0
        } else {
            let padded = format!("{frac:0<SCALE_DIGITS$}");
            padded.parse().ok()?
        };
        let v = whole * SCALE + part;
        Some(Self(if neg { -v } else { v }))
    }

    /// The sum, saturating (a sum of 10^14 amounts of 10^18 still fits).
    pub fn plus(self, o: Self) -> Self {
        Self(self.0.saturating_add(o.0))
    }

    /// `self / n`, rounded half away from zero to millionths.
    pub fn divided_by(self, n: u64) -> Self {
        if n == 0 {
            return Self(0);
        }
        let n = i128::from(n);
        let (q, r) = (self.0 / n, self.0 % n);
        let up = 2 * r.abs() >= n;
        Self(if up { q + self.0.signum() } else { q })
    }
}

impl fmt::Display for Amount {
    /// The shortest plain decimal: `59.97`, `-5`, `0.5`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (neg, abs) = (self.0 < 0, self.0.unsigned_abs());
        let scale = SCALE.unsigned_abs();
        let (whole, part) = (abs / scale, abs % scale);
        if neg {
            f.write_str("-")?;
        }
        write!(f, "{whole}")?;
        if part != 0 {
            let frac = format!("{part:0>SCALE_DIGITS$}");
            write!(f, ".{}", frac.trim_end_matches('0'))?;
        }
        Ok(())
    }
}

impl Serialize for Amount {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).ok_or_else(|| serde::de::Error::custom("not a decimal amount"))
    }
}

impl Amount {
    /// Rounded half to even to `places` fraction digits (at most six), as
    /// CLDR formats numbers: `(negative, whole, fraction)`.
    fn rounded(self, places: u32) -> (bool, u128, u128) {
        let places = places.min(SCALE_DIGITS as u32);
        let step = 10_u128.pow(SCALE_DIGITS as u32 - places);
        let units = half_even(self.0.unsigned_abs(), step);
        let per = 10_u128.pow(places);
        (self.0 < 0 && units != 0, units / per, units % per)
    }

    /// Cut (towards zero) to `places` fraction digits (at most six), as
    /// ClickHouse's `toDecimal64(x, places)` cuts a number.
    pub fn truncated(self, places: u32) -> Self {
        let step = 10_i128.pow(SCALE_DIGITS as u32 - places.min(SCALE_DIGITS as u32));
        Self(self.0 / step * step)
    }

    /// The amount as a float, for APIs that answer numbers (`59.97`).
    pub fn to_f64(self) -> f64 {
        self.to_string().parse().unwrap_or(0.0)
    }
}

/// Digits after the decimal point in a currency's usual notation (ISO
/// 4217's minor unit): 0 for the yen or the won, 3 for the dinars of
/// Bahrain, Iraq, Jordan, Kuwait, Libya and Tunisia and the rial of Oman,
/// 2 otherwise.
pub fn minor_digits(currency: &str) -> u32 {
    match currency {
        "BIF" | "CLP" | "DJF" | "GNF" | "ISK" | "JPY" | "KMF" | "KRW" | "PYG" | "RWF" | "UGX"
        | "UYI" | "VND" | "VUV" | "XAF" | "XOF" | "XPF" => 0,
        "BHD" | "IQD" | "JOD" | "KWD" | "LYD" | "OMR" | "TND" => 3,
        _ => 2,
    }
}

/// The symbol written before an amount where one is unambiguous; other
/// currencies are written with their code (`CHF 12.00`).
fn symbol(currency: &str) -> Option<&'static str> {
    Some(match currency {
        "USD" => "$",
        "EUR" => "\u{20ac}",
        "GBP" => "\u{a3}",
        "JPY" => "\u{a5}",
        "INR" => "\u{20b9}",
        "KRW" => "\u{20a9}",
        "ILS" => "\u{20aa}",
        "VND" => "\u{20ab}",
        "CNY" => "CN\u{a5}",
        "AUD" => "A$",
        "CAD" => "CA$",
        "NZD" => "NZ$",
        "HKD" => "HK$",
        "MXN" => "MX$",
        "BRL" => "R$",
        _ => return None,
    })
}

fn with_symbol(currency: &str, negative: bool, digits: &str) -> String {
    let sign = if negative { "-" } else { "" };
    match symbol(currency) {
        Some(sym) => format!("{sign}{sym}{digits}"),
        None => format!("{sign}{currency}\u{a0}{digits}"),
    }
}

/// `n / d` rounded half to even.
pub(crate) fn half_even(n: u128, d: u128) -> u128 {
    let (q, r) = (n / d, n % d);
    match (2 * r).cmp(&d) {
        std::cmp::Ordering::Greater => q + 1,
        std::cmp::Ordering::Equal if q % 2 == 1 => q + 1,
        _ => q,
    }
}

/// Digits with thousands separators: `1,234`.
fn grouped(whole: u128) -> String {
    let text = whole.to_string();
    let mut out = String::with_capacity(text.len() + text.len() / 3);
    for (i, c) in text.chars().enumerate() {
        if i > 0 && (text.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// An amount written out in full as Plausible writes it (ex_money's
/// `Money.to_string!`): rounded half to even to the currency's minor
/// unit, with thousands separators: `$1,234.50`, `\u{a5}1,234`,
/// `-\u{20ac}5.00`, `CHF 12.00`.
pub fn format_long(amount: Amount, currency: &str) -> String {
    let places = minor_digits(currency);
    let (negative, whole, fraction) = amount.rounded(places);
    let mut digits = grouped(whole);
    if places > 0 {
        digits = format!("{digits}.{fraction:0>width$}", width = places as usize);
    }
    with_symbol(currency, negative, &digits)
}

/// An amount written short as Plausible writes it (ex_money's
/// `format: :short, fractional_digits: 1`): one decimal, rounded half to
/// even, in full below a thousand (`$100.3`, `\u{20ac}100.0`), else in
/// K, M, B or T (`$1.2K`, `$3.0K`, `\u{20ac}2.5M`).
pub fn format_short(amount: Amount, currency: &str) -> String {
    let abs = amount.0.unsigned_abs();
    let unit_scale = SCALE.unsigned_abs();
    // The largest unit the amount reaches, then a larger one if rounding
    // to one decimal reaches a thousand of it.
    let units = ["", "K", "M", "B", "T"];
    let mut i = 0;
    while i + 1 < units.len() && abs >= unit_scale * 1000_u128.pow(i as u32 + 1) {
        i += 1;
    }
    let mut tenths = half_even(abs * 10, unit_scale * 1000_u128.pow(i as u32));
    if tenths >= 10_000 && i + 1 < units.len() {
        i += 1;
        tenths = half_even(abs * 10, unit_scale * 1000_u128.pow(i as u32));
    }
    let digits = format!("{}.{}{}", grouped(tenths / 10), tenths % 10, units[i]);
    with_symbol(currency, amount.0 < 0 && tenths != 0, &digits)
}

/// The revenue of one report row in one currency: the exact total and the
/// number of conversions that carried it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevenueSum {
    /// The exact total.
    #[serde(rename = "t")]
    pub total: Amount,
    /// Conversions with revenue in this currency.
    #[serde(rename = "n")]
    pub conversions: u64,
}

impl RevenueSum {
    /// Counts one more conversion of `amount`.
    pub fn record(&mut self, amount: Amount) {
        self.total = self.total.plus(amount);
        self.conversions += 1;
    }

    /// Adds another row's sum.
    pub fn add(&mut self, o: &RevenueSum) {
        self.total = self.total.plus(o.total);
        self.conversions += o.conversions;
    }

    /// The average revenue per conversion that carried revenue.
    pub fn average(&self) -> Amount {
        self.total.divided_by(self.conversions)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn revenue_amounts_are_exact_decimals_with_a_currency() {
        let cases = [
            ("19.99", "eur", Ok(("19.99", "EUR"))),
            ("49", "USD", Ok(("49", "USD"))),
            ("0049.500", "USD", Ok(("49.5", "USD"))),
            ("-5", "JPY", Ok(("-5", "JPY"))),
            ("-0.0", "JPY", Ok(("0", "JPY"))),
            (".5", "GBP", Ok(("0.5", "GBP"))),
            ("1e3", "USD", Err(MoneyError::InvalidAmount)),
            ("NaN", "USD", Err(MoneyError::InvalidAmount)),
            ("", "USD", Err(MoneyError::InvalidAmount)),
            ("1.2345678", "USD", Err(MoneyError::InvalidAmount)),
            ("1234567890123456789", "USD", Err(MoneyError::InvalidAmount)),
            ("12", "EURO", Err(MoneyError::UnknownCurrency)),
            ("12", "E1R", Err(MoneyError::UnknownCurrency)),
            ("12", "ABC", Err(MoneyError::UnknownCurrency)),
            ("12", "XXX", Err(MoneyError::UnknownCurrency)),
        ];
        for (amount, currency, want) in cases {
            let got = Revenue::try_parse(amount, currency);
            assert_eq!(
                got.as_ref()
                    .map(|r| (r.amount.as_str(), r.currency.as_str()))
                    .map_err(|e| *e),
                want,
                "{amount} {currency}"
            );
        }
    }

    #[test]
    fn the_currency_list_is_sorted_three_upper_case_letters() {
        assert!(CURRENCIES.windows(2).all(|w| w[0] < w[1]));
        assert!(
            CURRENCIES
                .iter()
                .all(|c| c.len() == 3 && c.bytes().all(|b| b.is_ascii_uppercase()))
        );
        for known in ["EUR", "USD", "GBP", "JPY", "CHF", "SEK"] {
            assert!(is_currency(known), "{known}");
        }
    }

    #[test]
    fn sums_of_cents_are_exact_where_floats_drift() {
        let mut tenths = RevenueSum::default();
        let mut float = 0.0_f64;
        for _ in 0..10 {
            tenths.record(Amount::parse("0.1").unwrap());
            float += 0.1;
        }
        assert_eq!(tenths.total.to_string(), "1");
        assert_ne!(float, 1.0);
        let mut sum = RevenueSum::default();
        for _ in 0..3 {
            sum.record(Amount::parse("19.99").unwrap());
        }
        assert_eq!(sum.total.to_string(), "59.97");
        assert_eq!(sum.average().to_string(), "19.99");
        sum.record(Amount::parse("0.01").unwrap());
        assert_eq!(sum.total.to_string(), "59.98");
        assert_eq!(sum.average().to_string(), "14.995");
    }

    #[test]
    fn averages_round_half_away_from_zero_to_millionths() {
        assert_eq!(
            Amount::parse("1").unwrap().divided_by(3).to_string(),
            "0.333333"
        );
        assert_eq!(
            Amount::parse("2").unwrap().divided_by(3).to_string(),
            "0.666667"
        );
        assert_eq!(
            Amount::parse("-2").unwrap().divided_by(3).to_string(),
            "-0.666667"
        );
        assert_eq!(Amount::parse("5").unwrap().divided_by(0).to_string(), "0");
    }

    #[test]
    fn amounts_are_written_in_each_currencys_notation() {
        // Plausible's (ex_money's) notations, rounding half to even.
        let cases = [
            ("1234.5", "USD", "$1,234.50", "$1.2K"),
            ("39.98", "EUR", "\u{20ac}39.98", "\u{20ac}40.0"),
            ("100.3", "USD", "$100.30", "$100.3"),
            ("100", "EUR", "\u{20ac}100.00", "\u{20ac}100.0"),
            ("50.45", "USD", "$50.45", "$50.4"),
            ("50.55", "USD", "$50.55", "$50.6"),
            ("67.066", "USD", "$67.07", "$67.1"),
            ("3000", "USD", "$3,000.00", "$3.0K"),
            ("999.996", "GBP", "\u{a3}1,000.00", "\u{a3}1.0K"),
            ("1234.5", "JPY", "\u{a5}1,234", "\u{a5}1.2K"),
            ("1235.5", "JPY", "\u{a5}1,236", "\u{a5}1.2K"),
            ("-5", "EUR", "-\u{20ac}5.00", "-\u{20ac}5.0"),
            ("12", "CHF", "CHF\u{a0}12.00", "CHF\u{a0}12.0"),
            ("1.2345", "KWD", "KWD\u{a0}1.234", "KWD\u{a0}1.2"),
            ("2500000", "USD", "$2,500,000.00", "$2.5M"),
            ("1999999", "USD", "$1,999,999.00", "$2.0M"),
            ("999999", "USD", "$999,999.00", "$1.0M"),
            ("0.004", "USD", "$0.00", "$0.0"),
            ("-0.004", "USD", "$0.00", "$0.0"),
        ];
        for (amount, currency, long, short) in cases {
            let a = Amount::parse(amount).unwrap();
            assert_eq!(format_long(a, currency), long, "{amount} {currency}");
            assert_eq!(format_short(a, currency), short, "{amount} {currency}");
        }
        assert_eq!(Amount::parse("59.97").unwrap().to_f64(), 59.97);
    }

    #[test]
    fn amounts_are_cut_to_fewer_digits_towards_zero() {
        let cut = |a: &str, places| Amount::parse(a).unwrap().truncated(places).to_string();
        assert_eq!(cut("67.066667", 3), "67.066");
        assert_eq!(cut("-67.066667", 3), "-67.066");
        assert_eq!(cut("201.2", 3), "201.2");
        assert_eq!(cut("1.999", 0), "1");
    }

    proptest! {
        #[test]
        fn amounts_round_trip_through_text(cents in -10_i128.pow(20)..10_i128.pow(20)) {
            let a = Amount(cents);
            prop_assert_eq!(Amount::parse(&a.to_string()), Some(a));
            let json = serde_json::to_string(&a).unwrap();
            prop_assert_eq!(serde_json::from_str::<Amount>(&json).unwrap(), a);
        }

        #[test]
        fn a_sum_equals_the_sum_of_integer_millionths(xs in proptest::collection::vec(0_u32..10_000_000, 0..50)) {
            let mut sum = RevenueSum::default();
            for x in &xs {
                let text = format!("{}.{:02}", x / 100, x % 100);
                sum.record(Amount::parse(&text).unwrap());
            }
            let cents: i128 = xs.iter().map(|x| i128::from(*x)).sum();
            prop_assert_eq!(sum.total, Amount(cents * 10_000));
        }
    }
}
