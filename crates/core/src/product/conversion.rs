//! Trusted conversions and affiliates: sales a site's own server records
//! with a write-scoped API key, checked once here, and the exact sums
//! reported from them.
//!
//! A trusted conversion is not an event: the browser never sends it, so it
//! is kept apart from the client-claimed revenue of custom events
//! ([`crate::money::Revenue`] on goal rows) and reported apart
//! ([`Totals`], [`Commission`]). Its order id is its identity: the store
//! writes it once per order id, so a retried request changes nothing.
//!
//! Money is exact: amounts are [`Amount`]s (integers of millionths), a
//! currency is ISO 4217 and an amount may carry no more decimals than the
//! currency's minor unit ([`money::minor_digits`]: `10.005` USD is refused,
//! `1000` JPY taken, `1.5` JPY refused). There are no exchange rates.
//!
//! An affiliate ([`Affiliate`]) earns a commission per conversion
//! attributed to it: a rate of the amount (at most 1, six decimals) or a
//! fixed amount in the affiliate's currency. A rate's commission is
//! rounded half to even to the currency's minor unit **per conversion**
//! ([`commission_of`]), then summed, so a report is the sum of what each
//! conversion earned. The commission is fixed when the conversion is
//! stored (the affiliate's terms then), so changing or deleting an
//! affiliate never rewrites what was earned. A commission report mixing
//! currencies is refused, never a partial total ([`commission_report`]).

use crate::Millis;
use crate::money::{self, Amount, MoneyError, RevenueSum};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Longest order id, in bytes.
pub const MAX_ORDER_ID_BYTES: usize = 128;
/// Longest affiliate slug, in bytes.
pub const MAX_SLUG_BYTES: usize = 64;
/// Default and largest page of the conversions list.
pub const LIST_DEFAULT: usize = 50;
/// Largest page of the conversions list.
pub const LIST_MAX: usize = 200;
/// Millionths in one: a rate of 1.
const ONE: i128 = 1_000_000;

/// Why a conversion or an affiliate was refused (each a 400 with
/// [`ConversionError::code`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConversionError {
    /// The body is not the expected JSON object.
    #[error("{0}")]
    Body(String),
    /// The order id is empty, too long or holds control characters.
    #[error(
        "order_id must be 1 to 128 bytes without control or invisible (bidi, zero-width) characters"
    )]
    InvalidOrderId,
    /// The currency is not an ISO 4217 code.
    #[error("unknown currency: use an ISO 4217 code such as EUR or USD")]
    UnknownCurrency,
    /// The amount is not a plain decimal.
    #[error("amount must be a plain decimal such as \"19.99\" (at most 18 integer digits)")]
    InvalidAmount,
    /// The amount is below zero.
    #[error("amount must not be negative")]
    NegativeAmount,
    /// More decimals than the currency's minor unit.
    #[error("{currency} takes at most {digits} decimal places")]
    TooManyDecimals {
        /// The currency.
        currency: String,
        /// Its minor unit's digits.
        digits: u32,
    },
    /// Not a slug.
    #[error("affiliate must be 1 to 64 characters of a-z, 0-9, - and _")]
    InvalidSlug,
    /// The named affiliate is not defined on the site.
    #[error("no affiliate {0:?} on this site")]
    UnknownAffiliate(String),
    /// Neither or both of `rate` and `fixed`, or a rate outside 0..=1.
    #[error(
        "give either rate (a decimal from 0 to 1, at most 6 places) or fixed (an amount in the currency)"
    )]
    InvalidCommission,
}

impl ConversionError {
    /// The error's machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Body(_) => "invalid_body",
            Self::InvalidOrderId => "invalid_order_id",
            Self::UnknownCurrency => "invalid_currency",
            Self::InvalidAmount | Self::NegativeAmount => "invalid_amount",
            Self::TooManyDecimals { .. } => "too_many_decimals",
            Self::InvalidSlug => "invalid_affiliate",
            Self::UnknownAffiliate(_) => "unknown_affiliate",
            Self::InvalidCommission => "invalid_commission",
        }
    }
}

/// `POST /api/sites/{site}/conversions`' body as sent.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversionBody {
    /// The shop's order id: the conversion's identity.
    pub order_id: String,
    /// The amount: a decimal string (exact) or a JSON number (its digits).
    pub amount: serde_json::Value,
    /// ISO 4217 code, any case.
    pub currency: String,
    /// The affiliate the page attributed the sale to, if any.
    #[serde(default)]
    pub affiliate: Option<String>,
}

/// A conversion checked, before its affiliate is looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversionSpec {
    /// The order id.
    pub order_id: String,
    /// The amount.
    pub amount: Amount,
    /// The currency (upper case).
    pub currency: String,
    /// The affiliate's slug.
    pub affiliate: Option<String>,
}

/// Parses and checks a body's bytes: nothing is read or stored before it
/// passes.
pub fn parse(body: &[u8]) -> Result<ConversionSpec, ConversionError> {
    let body: ConversionBody =
        serde_json::from_slice(body).map_err(|e| ConversionError::Body(body_message(&e)))?;
    let order_id = body.order_id;
    if order_id.is_empty()
        || order_id.len() > MAX_ORDER_ID_BYTES
        || order_id.chars().any(char::is_control)
        || order_id.chars().any(crate::ingest::text::is_invisible)
    {
        return Err(ConversionError::InvalidOrderId);
    }
    let text = match &body.amount {
        // A decimal string as documented: digits, one point; no sign
        // (a `+5` is refused, as a negative one is).
        serde_json::Value::String(s) if s.starts_with('+') => {
            return Err(ConversionError::InvalidAmount);
        }
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => return Err(ConversionError::InvalidAmount),
    };
    let (amount, currency) = money_of(&text, &body.currency)?;
    let affiliate = body.affiliate.map(|s| check_slug(&s)).transpose()?;
    Ok(ConversionSpec {
        order_id,
        amount,
        currency,
        affiliate,
    })
}

/// A serde error without the body's text.
fn body_message(e: &serde_json::Error) -> String {
    let what = e.to_string();
    let what = what.split(" at line").next().unwrap_or("malformed");
    format!("body must be a JSON object {{order_id, amount, currency, affiliate?}}: {what}")
}

/// An amount and its currency checked: ISO 4217, not negative, no more
/// decimals than the currency's minor unit.
pub fn money_of(amount: &str, currency: &str) -> Result<(Amount, String), ConversionError> {
    let revenue = money::Revenue::try_parse(amount, currency).map_err(|e| match e {
        MoneyError::UnknownCurrency => ConversionError::UnknownCurrency,
        MoneyError::InvalidAmount => ConversionError::InvalidAmount,
    })?;
    let value = revenue.value();
    if value.0 < 0 {
        return Err(ConversionError::NegativeAmount);
    }
    let digits = money::minor_digits(&revenue.currency);
    if value.0 % minor_step(digits) != 0 {
        return Err(ConversionError::TooManyDecimals {
            currency: revenue.currency,
            digits,
        });
    }
    Ok((value, revenue.currency))
}

/// Millionths in one minor unit of a currency with `digits` decimals.
fn minor_step(digits: u32) -> i128 {
    10_i128.pow(6_u32.saturating_sub(digits))
}

/// A slug: 1 to 64 of `a-z`, `0-9`, `-`, `_` (upper case folded).
pub fn check_slug(slug: &str) -> Result<String, ConversionError> {
    let slug = slug.trim().to_ascii_lowercase();
    let ok = !slug.is_empty()
        && slug.len() <= MAX_SLUG_BYTES
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if ok {
        Ok(slug)
    } else {
        Err(ConversionError::InvalidSlug)
    }
}

/// A stored trusted conversion (`SITE#{site}#CONV` / `ORDER#{order id}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conversion {
    /// The order id.
    pub order_id: String,
    /// The amount.
    pub amount: Amount,
    /// The currency.
    pub currency: String,
    /// When it was recorded (server time, ms).
    pub at: Millis,
    /// Its site-local day when recorded (`YYYY-MM-DD`): what periods select.
    pub date: String,
    /// The affiliate it was attributed to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affiliate: Option<String>,
    /// What that affiliate earned on it, fixed when it was stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commission: Option<Amount>,
    /// The commission's currency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commission_currency: Option<String>,
}

impl ConversionSpec {
    /// The conversion to store at `now` on local day `date`, with the
    /// affiliate's commission (`affiliate` is the definition the spec
    /// names, looked up by the caller; `None` when it names none).
    pub fn into_conversion(
        self,
        now: Millis,
        date: String,
        affiliate: Option<&Affiliate>,
    ) -> Conversion {
        let earned = affiliate.map(|a| {
            let (amount, currency) = match a.commission {
                Terms::Rate { rate } => (
                    commission_of(self.amount, rate, &self.currency),
                    self.currency.clone(),
                ),
                Terms::Fixed { amount } => (amount, a.currency.clone()),
            };
            (amount, currency)
        });
        Conversion {
            order_id: self.order_id,
            amount: self.amount,
            currency: self.currency,
            at: now,
            date,
            affiliate: affiliate.map(|a| a.slug.clone()),
            commission: earned.as_ref().map(|e| e.0),
            commission_currency: earned.map(|e| e.1),
        }
    }
}

/// `amount × rate` (rate in millionths, 0..=1) rounded half to even to the
/// currency's minor unit.
pub fn commission_of(amount: Amount, rate: Amount, currency: &str) -> Amount {
    // amount and rate are millionths: their product is in 10^-12 units.
    let product = amount
        .0
        .unsigned_abs()
        .saturating_mul(rate.0.unsigned_abs());
    let step = (minor_step(money::minor_digits(currency)) as u128) * (ONE as u128);
    let units = money::half_even(product, step);
    let millionths = units.saturating_mul(step / ONE as u128);
    let value = i128::try_from(millionths).unwrap_or(i128::MAX);
    Amount(if (amount.0 < 0) != (rate.0 < 0) {
        -value
    } else {
        value
    })
}

/// What an affiliate earns per attributed conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Terms {
    /// A share of the amount (0 to 1).
    Rate {
        /// The rate, in millionths.
        rate: Amount,
    },
    /// A fixed amount in the affiliate's currency.
    Fixed {
        /// The amount.
        amount: Amount,
    },
}

/// An affiliate of a site (`SITE#{site}` / `AFFILIATE#{slug}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Affiliate {
    /// Its slug, as links carry it (`?ref=slug`).
    pub slug: String,
    /// Its commission.
    pub commission: Terms,
    /// The currency its commission is reported in.
    pub currency: String,
    /// When it was defined.
    pub created_at: Millis,
}

/// An affiliate as defined by the CLI or the API: `rate` or `fixed`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AffiliateSpec {
    /// The slug.
    pub slug: String,
    /// A rate from 0 to 1 (`"0.1"` is ten per cent).
    #[serde(default)]
    pub rate: Option<String>,
    /// A fixed amount per conversion.
    #[serde(default)]
    pub fixed: Option<String>,
    /// The currency.
    pub currency: String,
}

impl AffiliateSpec {
    /// The affiliate, checked.
    pub fn build(&self, now: Millis) -> Result<Affiliate, ConversionError> {
        let slug = check_slug(&self.slug)?;
        let currency = self.currency.trim().to_ascii_uppercase();
        if !money::is_currency(&currency) {
            return Err(ConversionError::UnknownCurrency);
        }
        let commission = match (&self.rate, &self.fixed) {
            (Some(rate), None) => {
                let rate = Amount::parse(rate.trim()).ok_or(ConversionError::InvalidCommission)?;
                if !(0..=ONE).contains(&rate.0) {
                    return Err(ConversionError::InvalidCommission);
                }
                Terms::Rate { rate }
            }
            (None, Some(fixed)) => Terms::Fixed {
                amount: money_of(fixed, &currency)?.0,
            },
            _ => return Err(ConversionError::InvalidCommission),
        };
        Ok(Affiliate {
            slug,
            commission,
            currency,
            created_at: now,
        })
    }
}

/// Trusted revenue of a period: one exact sum per currency.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    /// Conversions counted.
    pub conversions: u64,
    /// Per currency.
    pub revenue: BTreeMap<String, RevenueSum>,
}

impl Totals {
    /// Counts one conversion.
    pub fn add(&mut self, c: &Conversion) {
        self.conversions += 1;
        self.revenue
            .entry(c.currency.clone())
            .or_default()
            .record(c.amount);
    }

    /// The totals of `conversions`.
    pub fn of<'a>(conversions: impl IntoIterator<Item = &'a Conversion>) -> Self {
        let mut t = Self::default();
        for c in conversions {
            t.add(c);
        }
        t
    }

    /// The typed body of `GET …/conversions/summary`.
    pub fn body(&self, site_id: &str, from: String, to: String) -> SummaryBody {
        SummaryBody {
            site_id: site_id.to_owned(),
            from,
            to,
            conversions: self.conversions,
            trusted_revenue: self
                .revenue
                .iter()
                .map(|(currency, sum)| CurrencyRow {
                    currency: currency.clone(),
                    total: sum.total,
                    conversions: sum.conversions,
                    average: sum.average(),
                })
                .collect(),
        }
    }
}

/// `GET …/conversions/summary`.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryBody {
    /// The site.
    pub site_id: String,
    /// First local day.
    pub from: String,
    /// Last local day.
    pub to: String,
    /// Trusted conversions in the period.
    pub conversions: u64,
    /// Their revenue, one row per currency (never converted or added
    /// across currencies).
    pub trusted_revenue: Vec<CurrencyRow>,
}

/// One currency's trusted revenue.
#[derive(Debug, Clone, Serialize)]
pub struct CurrencyRow {
    /// ISO 4217 code.
    pub currency: String,
    /// Exact total.
    pub total: Amount,
    /// Conversions in this currency.
    pub conversions: u64,
    /// Total / conversions, half away from zero to millionths.
    pub average: Amount,
}

/// A commission report refused: the period's conversions of the affiliate
/// are in more than one currency (409 `mixed_currencies`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the affiliate's conversions in this period are in {0}: a commission is reported in one currency; narrow the period"
)]
pub struct MixedCurrencies(pub String);

/// `GET …/affiliates/{slug}/commission`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Commission {
    /// The site.
    pub site_id: String,
    /// The affiliate.
    pub affiliate: String,
    /// First local day.
    pub from: String,
    /// Last local day.
    pub to: String,
    /// The one currency of revenue and commission.
    pub currency: String,
    /// Conversions attributed to the affiliate.
    pub conversions: u64,
    /// Their exact revenue.
    pub revenue: Amount,
    /// The sum of each conversion's commission (each rounded to the
    /// currency's minor unit when stored).
    pub commission: Amount,
}

/// The commission report of `affiliate` from the period's conversions
/// (others' are skipped): every amount and commission must be in one
/// currency, the affiliate's when there are none.
pub fn commission_report<'a>(
    site_id: &str,
    affiliate: &Affiliate,
    from: String,
    to: String,
    conversions: impl IntoIterator<Item = &'a Conversion>,
) -> Result<Commission, MixedCurrencies> {
    let mut currencies = std::collections::BTreeSet::new();
    let (mut n, mut revenue, mut commission) = (0_u64, Amount(0), Amount(0));
    for c in conversions {
        if c.affiliate.as_deref() != Some(affiliate.slug.as_str()) {
            continue;
        }
        n += 1;
        revenue = revenue.plus(c.amount);
        commission = commission.plus(c.commission.unwrap_or_default());
        currencies.insert(c.currency.clone());
        if let Some(cc) = &c.commission_currency {
            currencies.insert(cc.clone());
        }
    }
    if currencies.len() > 1 {
        let names: Vec<&str> = currencies.iter().map(String::as_str).collect();
        return Err(MixedCurrencies(names.join(", ")));
    }
    let currency = currencies
        .into_iter()
        .next()
        .unwrap_or_else(|| affiliate.currency.clone());
    Ok(Commission {
        site_id: site_id.to_owned(),
        affiliate: affiliate.slug.clone(),
        from,
        to,
        currency,
        conversions: n,
        revenue,
        commission,
    })
}

/// `POST …/conversions`' answer: `stored` (201) or `duplicate` (200,
/// nothing changed).
#[derive(Debug, Clone, Serialize)]
pub struct WriteBody {
    /// `stored` or `duplicate`.
    pub status: &'static str,
    /// The order id.
    pub order_id: String,
    /// What was stored (not repeated for a duplicate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversion: Option<Conversion>,
}

/// `GET …/conversions`: a page of the period's conversions in order-id
/// order, and the cursor of the next page.
#[derive(Debug, Clone, Serialize)]
pub struct ListBody {
    /// The site.
    pub site_id: String,
    /// First local day.
    pub from: String,
    /// Last local day.
    pub to: String,
    /// The page.
    pub results: Vec<Conversion>,
    /// Pass as `cursor` for the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn amount(s: &str) -> Amount {
        Amount::parse(s).unwrap()
    }

    /// A body's expected amount and currency, or its error code.
    type Want = Result<(&'static str, &'static str), &'static str>;

    #[test]
    fn bodies_are_checked_before_anything_is_stored() {
        let ok = |b: &str| parse(b.as_bytes());
        let table: [(&str, Want); 18] = [
            (
                r#"{"order_id":"A1","amount":"19.99","currency":"eur"}"#,
                Ok(("19.99", "EUR")),
            ),
            (
                r#"{"order_id":"A1","amount":19.5,"currency":"USD"}"#,
                Ok(("19.5", "USD")),
            ),
            (
                r#"{"order_id":"A1","amount":"1000","currency":"JPY"}"#,
                Ok(("1000", "JPY")),
            ),
            (
                r#"{"order_id":"A1","amount":"10.500","currency":"USD"}"#,
                Ok(("10.5", "USD")),
            ),
            (
                r#"{"order_id":"A1","amount":"1.234","currency":"KWD"}"#,
                Ok(("1.234", "KWD")),
            ),
            (
                r#"{"order_id":"A1","amount":"0","currency":"EUR"}"#,
                Ok(("0", "EUR")),
            ),
            (
                r#"{"order_id":"A1","amount":"10.005","currency":"USD"}"#,
                Err("too_many_decimals"),
            ),
            (
                r#"{"order_id":"A1","amount":"1.5","currency":"JPY"}"#,
                Err("too_many_decimals"),
            ),
            (
                r#"{"order_id":"A1","amount":"-1","currency":"EUR"}"#,
                Err("invalid_amount"),
            ),
            (
                r#"{"order_id":"A1","amount":"1e3","currency":"EUR"}"#,
                Err("invalid_amount"),
            ),
            (
                r#"{"order_id":"A1","amount":"abc","currency":"EUR"}"#,
                Err("invalid_amount"),
            ),
            (
                r#"{"order_id":"A1","amount":"+5","currency":"EUR"}"#,
                Err("invalid_amount"),
            ),
            (
                r#"{"order_id":"A\u202e1","amount":"5","currency":"EUR"}"#,
                Err("invalid_order_id"),
            ),
            (
                r#"{"order_id":"A1","amount":"1","currency":"EURO"}"#,
                Err("invalid_currency"),
            ),
            (
                r#"{"order_id":"A1","amount":"1","currency":"XYZ"}"#,
                Err("invalid_currency"),
            ),
            (
                r#"{"order_id":"","amount":"1","currency":"EUR"}"#,
                Err("invalid_order_id"),
            ),
            (
                r#"{"order_id":"A1","amount":"1","currency":"EUR","visit":"x"}"#,
                Err("invalid_body"),
            ),
            (
                r#"{"order_id":"A1","amount":"1","currency":"EUR","affiliate":"a b"}"#,
                Err("invalid_affiliate"),
            ),
        ];
        for (body, want) in table {
            match (ok(body), want) {
                (Ok(spec), Ok((a, c))) => {
                    assert_eq!(
                        (spec.amount.to_string().as_str(), spec.currency.as_str()),
                        (a, c)
                    )
                }
                (Err(e), Err(code)) => assert_eq!(e.code(), code, "{body}"),
                (got, want) => panic!("{body}: {got:?} != {want:?}"),
            }
        }
    }

    #[test]
    fn affiliates_take_a_rate_or_a_fixed_amount() {
        let spec = |rate: Option<&str>, fixed: Option<&str>| AffiliateSpec {
            slug: "Alice".into(),
            rate: rate.map(Into::into),
            fixed: fixed.map(Into::into),
            currency: "eur".into(),
        };
        let a = spec(Some("0.1"), None).build(5).unwrap();
        assert_eq!(a.slug, "alice");
        assert_eq!(a.currency, "EUR");
        assert_eq!(
            a.commission,
            Terms::Rate {
                rate: amount("0.1")
            }
        );
        let f = spec(None, Some("2.50")).build(5).unwrap();
        assert_eq!(
            f.commission,
            Terms::Fixed {
                amount: amount("2.5")
            }
        );
        for (rate, fixed) in [
            (Some("1.1"), None),
            (Some("-0.1"), None),
            (None, None),
            (Some("0.1"), Some("1")),
        ] {
            assert_eq!(
                spec(rate, fixed).build(5),
                Err(ConversionError::InvalidCommission)
            );
        }
        assert_eq!(
            spec(None, Some("2.505")).build(5).unwrap_err().code(),
            "too_many_decimals"
        );
    }

    #[test]
    fn a_rate_commission_rounds_half_to_even_per_conversion() {
        // 10 % of 0.05 EUR is 0.005: a tie, to the even cent (0.00); of
        // 0.15 it is 0.015, to 0.02; of 1.25 JPY-free EUR 0.125 → 0.12.
        let ten = amount("0.1");
        let table = [
            ("0.05", "EUR", "0"),
            ("0.15", "EUR", "0.02"),
            ("1.25", "EUR", "0.12"),
            ("1.35", "EUR", "0.14"),
            ("19.99", "EUR", "2"),
            ("125", "JPY", "12"),
            ("135", "JPY", "14"),
            ("1.005", "KWD", "0.1"),
            ("1.015", "KWD", "0.102"),
        ];
        for (a, c, want) in table {
            assert_eq!(
                commission_of(amount(a), ten, c).to_string(),
                want,
                "{a} {c}"
            );
        }
    }

    fn conversion(order: &str, a: &str, c: &str, aff: Option<&Affiliate>) -> Conversion {
        ConversionSpec {
            order_id: order.into(),
            amount: amount(a),
            currency: c.into(),
            affiliate: aff.map(|a| a.slug.clone()),
        }
        .into_conversion(1, "2025-01-01".into(), aff)
    }

    #[test]
    fn a_commission_report_is_in_one_currency_or_refused() {
        let alice = AffiliateSpec {
            slug: "alice".into(),
            rate: Some("0.1".into()),
            fixed: None,
            currency: "EUR".into(),
        }
        .build(0)
        .unwrap();
        let bob = AffiliateSpec {
            slug: "bob".into(),
            rate: None,
            fixed: Some("3".into()),
            currency: "EUR".into(),
        }
        .build(0)
        .unwrap();
        let list = [
            conversion("1", "0.15", "EUR", Some(&alice)),
            conversion("2", "0.05", "EUR", Some(&alice)),
            conversion("3", "10", "EUR", Some(&bob)),
            conversion("4", "99", "EUR", None),
        ];
        let r = commission_report("s", &alice, "a".into(), "b".into(), &list).unwrap();
        assert_eq!(
            (r.conversions, r.revenue, r.commission),
            (2, amount("0.2"), amount("0.02"))
        );
        let r = commission_report("s", &bob, "a".into(), "b".into(), &list).unwrap();
        assert_eq!((r.conversions, r.commission), (1, amount("3")));
        let mixed = [list[0].clone(), conversion("5", "1", "USD", Some(&alice))];
        assert_eq!(
            commission_report("s", &alice, "a".into(), "b".into(), &mixed),
            Err(MixedCurrencies("EUR, USD".into()))
        );
        let none = commission_report("s", &alice, "a".into(), "b".into(), &[]).unwrap();
        assert_eq!(
            (none.currency.as_str(), none.commission),
            ("EUR", Amount(0))
        );
    }

    proptest! {
        /// The rounded commission is within half a minor unit of the exact
        /// product, a whole number of minor units, never above the amount,
        /// and a tie goes to the even unit.
        #[test]
        fn rate_commissions_are_the_nearest_minor_unit(
            cents in 0_i64..10_000_000_000,
            rate in 0_i64..=1_000_000,
            currency in prop::sample::select(vec!["EUR", "JPY", "KWD"]),
        ) {
            let digits = money::minor_digits(currency);
            let unit = minor_step(digits);
            let a = Amount(i128::from(cents) * unit);
            let r = Amount(i128::from(rate));
            let c = commission_of(a, r, currency);
            // Exact product in 10^-12 units; the commission in the same.
            let exact = a.0 * r.0;
            let got = c.0 * ONE;
            let half = unit * ONE / 2;
            prop_assert_eq!(c.0 % unit, 0);
            prop_assert!((got - exact).abs() <= half);
            prop_assert!(c.0 <= a.0);
            if (got - exact).abs() == half {
                prop_assert_eq!((c.0 / unit) % 2, 0);
            }
        }

        /// A report's commission is the sum of its conversions' rounded
        /// commissions (fixed terms: the amount times the count).
        #[test]
        fn a_report_sums_per_conversion_commissions(
            cents in prop::collection::vec(0_i64..1_000_000, 0..40),
            rate in 0_i64..=1_000_000,
            fixed in 0_i64..100_000,
        ) {
            let by_rate = Affiliate {
                slug: "r".into(),
                commission: Terms::Rate { rate: Amount(i128::from(rate)) },
                currency: "EUR".into(),
                created_at: 0,
            };
            let by_fixed = Affiliate {
                slug: "f".into(),
                commission: Terms::Fixed { amount: Amount(i128::from(fixed) * 10_000) },
                currency: "EUR".into(),
                created_at: 0,
            };
            let mut list = Vec::new();
            let mut want = 0_i128;
            for (i, c) in cents.iter().enumerate() {
                let a = Amount(i128::from(*c) * 10_000);
                want += commission_of(a, by_rate.commission_rate(), "EUR").0;
                let spec = |aff: &Affiliate| ConversionSpec {
                    order_id: format!("{i}{}", aff.slug),
                    amount: a,
                    currency: "EUR".into(),
                    affiliate: Some(aff.slug.clone()),
                };
                list.push(spec(&by_rate).into_conversion(0, "d".into(), Some(&by_rate)));
                list.push(spec(&by_fixed).into_conversion(0, "d".into(), Some(&by_fixed)));
            }
            let r = commission_report("s", &by_rate, "a".into(), "b".into(), &list).unwrap();
            prop_assert_eq!(r.commission, Amount(want));
            prop_assert_eq!(r.conversions as usize, cents.len());
            let f = commission_report("s", &by_fixed, "a".into(), "b".into(), &list).unwrap();
            prop_assert_eq!(f.commission, Amount(i128::from(fixed) * 10_000 * cents.len() as i128));
        }
    }

    impl Affiliate {
        fn commission_rate(&self) -> Amount {
            match self.commission {
                Terms::Rate { rate } => rate,
                Terms::Fixed { .. } => Amount(0),
            }
        }
    }
}
