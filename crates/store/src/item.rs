//! Item <-> type mapping through `serde_dynamo`, with the key attributes
//! added beside the type's own.

use crate::error::StoreError;
use aws_sdk_dynamodb::types::AttributeValue;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::HashMap;

/// A DynamoDB item.
pub type Item = HashMap<String, AttributeValue>;

/// Serialises `value` and adds `pk` and `sk` (and `ttl` when given).
pub fn with_keys<T: Serialize>(
    value: &T,
    pk: String,
    sk: String,
    ttl: Option<i64>,
) -> Result<Item, StoreError> {
    let mut item: Item =
        serde_dynamo::to_item(value).map_err(|e| StoreError::Request(format!("serialise: {e}")))?;
    item.insert("pk".to_owned(), AttributeValue::S(pk));
    item.insert("sk".to_owned(), AttributeValue::S(sk));
    if let Some(ttl) = ttl {
        item.insert("ttl".to_owned(), AttributeValue::N(ttl.to_string()));
    }
    Ok(item)
}

/// Reads a type from an item (key attributes and unknown attributes ignored).
pub fn from_item<T: DeserializeOwned>(item: Item) -> Result<T, StoreError> {
    let sk = string(&item, "sk").unwrap_or_default().to_owned();
    serde_dynamo::from_item(item).map_err(|e| StoreError::Corrupt(format!("{sk}: {e}")))
}

/// A string attribute.
pub fn string<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    match item.get(name) {
        Some(AttributeValue::S(s)) => Some(s),
        _ => None,
    }
}

/// A number attribute as `i64`.
pub fn number(item: &Item, name: &str) -> Option<i64> {
    match item.get(name) {
        Some(AttributeValue::N(n)) => n.parse().ok(),
        _ => None,
    }
}

/// The key map of an item.
pub fn key(pk: impl Into<String>, sk: impl Into<String>) -> Item {
    HashMap::from([
        ("pk".to_owned(), AttributeValue::S(pk.into())),
        ("sk".to_owned(), AttributeValue::S(sk.into())),
    ])
}
