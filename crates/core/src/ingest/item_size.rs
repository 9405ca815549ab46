//! The size DynamoDB gives an item, measured as AWS documents it ("Item
//! sizes and formats", DynamoDB Developer Guide), so a stored event can be
//! held to one write unit ([`MAX_ITEM_BYTES`]) before it is written.
//!
//! An item's size is the sum, over its attributes, of the attribute name's
//! UTF-8 bytes and the value's size:
//! - a string: its UTF-8 bytes;
//! - a number: 1 byte per two significant digits (leading and trailing
//!   zeros trimmed; the integer and the fraction digits each rounded up to
//!   whole bytes), plus 1 byte, plus 1 for a minus sign;
//! - a Boolean or a null: 1 byte;
//! - a map or a list: 3 bytes, plus 1 byte per element, plus each element's
//!   size (a map element's name counts as an attribute name).
//!
//! Values are taken in their JSON shape (`serde_json::Value`), which is how
//! `serde` hands a stored type to `serde_dynamo`: a JSON string is an `S`,
//! a number an `N`, a Boolean a `BOOL`, null a `NULL`, an object an `M` and
//! an array an `L`.

use serde::Serialize;
use serde_json::{Map, Value};

/// The largest item one write unit covers: DynamoDB charges a write unit
/// per started kilobyte.
pub const MAX_ITEM_BYTES: usize = 1_024;

/// The size of one attribute: its name and its value.
pub fn attribute_bytes(name: &str, value: &Value) -> usize {
    name.len() + value_bytes(value)
}

/// The size of a value without a name.
pub fn value_bytes(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len(),
        Value::Number(n) => number_bytes(&n.to_string()),
        Value::Bool(_) | Value::Null => 1,
        Value::Array(items) => 3 + items.iter().map(|v| 1 + value_bytes(v)).sum::<usize>(),
        Value::Object(map) => {
            3 + map
                .iter()
                .map(|(k, v)| 1 + attribute_bytes(k, v))
                .sum::<usize>()
        }
    }
}

/// The size of an item given as its attributes.
pub fn item_bytes(item: &Map<String, Value>) -> usize {
    item.iter().map(|(k, v)| attribute_bytes(k, v)).sum()
}

/// The size of a number written as text (`42`, `-0.5`, `1e-7`, `19.990`).
/// Text that is not a number is measured as its length plus one (more than
/// any number of that length would take).
pub fn number_bytes(text: &str) -> usize {
    let text = text.trim();
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((m, e)) => match e.parse::<i64>() {
            Ok(e) => (m, e),
            Err(_) => return text.len() + 1,
        },
        None => (unsigned, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if !(int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())) {
        return text.len() + 1;
    }
    // Every digit in order, and where the decimal point falls among them.
    let digits: Vec<u8> = int.bytes().chain(frac.bytes()).collect();
    let mut point = i64::try_from(int.len()).unwrap_or(i64::MAX) + exponent;
    let lead = digits.iter().take_while(|&&d| d == b'0').count();
    let significant = &digits[lead..];
    let significant = match significant.iter().rposition(|&d| d != b'0') {
        Some(last) => &significant[..=last],
        None => &[][..],
    };
    point -= i64::try_from(lead).unwrap_or(0);
    let len = i64::try_from(significant.len()).unwrap_or(i64::MAX);
    let int_digits = point.clamp(0, len);
    let frac_digits = len - int_digits;
    let bytes = (int_digits + 1) / 2 + (frac_digits + 1) / 2 + 1;
    let sign = i64::from(negative && !significant.is_empty());
    usize::try_from(bytes + sign).unwrap_or(usize::MAX)
}

/// The size of a value of a stored type (its attributes as `serde_dynamo`
/// writes them), plus `extra` attributes stored beside it (its keys, its
/// TTL). A type that does not serialise to a map measures `usize::MAX`.
pub fn stored_bytes<T: Serialize>(value: &T, extra: &[(&str, &Value)]) -> usize {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => {
            item_bytes(&map)
                + extra
                    .iter()
                    .map(|(k, v)| attribute_bytes(k, v))
                    .sum::<usize>()
        }
        _ => usize::MAX,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_take_a_byte_per_two_significant_digits_plus_one() {
        for (text, bytes) in [
            ("0", 1),
            ("7", 2),
            ("42", 2),
            ("123", 3),
            ("-42", 3),
            ("-0", 1),
            ("100", 2),
            ("0.5", 2),
            ("19.99", 3),
            ("19.990", 3),
            ("0042", 2),
            ("1e-7", 2),
            ("1.5e3", 2),
            ("1764460800123", 8),
            ("0.30000000000000004", 10),
        ] {
            assert_eq!(number_bytes(text), bytes, "{text}");
        }
        assert_eq!(number_bytes("NaN"), 4);
    }

    #[test]
    fn an_item_is_its_names_and_values_with_the_documented_overheads() {
        // Worked by hand from the rules in the module docs.
        let item = json!({
            "pk": "SITE#blog",            // 2 + 9
            "n": 42,                       // 1 + 2
            "ni": true,                    // 2 + 1
            "pr": {"plan": "pro", "a": ""},// 2 + 3 + (1+4+3) + (1+1+0)
            "l": [1, "xy"],                // 1 + 3 + (1+2) + (1+2)
        });
        let Value::Object(map) = item else { panic!() };
        assert_eq!(item_bytes(&map), 11 + 3 + 3 + 15 + 10);
    }

    #[test]
    fn a_stored_value_counts_its_extra_attributes() {
        #[derive(Serialize)]
        struct T {
            a: String,
        }
        let t = T { a: "xyz".into() };
        assert_eq!(stored_bytes(&t, &[]), 4);
        assert_eq!(stored_bytes(&t, &[("sk", &json!("12"))]), 8);
        assert_eq!(stored_bytes(&"not a map", &[]), usize::MAX);
    }
}
