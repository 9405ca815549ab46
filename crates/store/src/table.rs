//! The one table: its spec, and creating it where it does not exist yet.
//!
//! The same [`TABLE`] spec is used by `tally dev`, by the tests, and is
//! compared against `template.yaml` by a test, so the local table and the
//! deployed one cannot drift apart. No GSI: every access pattern is served
//! by the primary key (see ARCHITECTURE.md).

use crate::error::{StoreError, from_sdk};
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType, TableStatus,
    TimeToLiveSpecification,
};
use std::time::Duration;

/// The table's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableSpec {
    /// Partition key attribute (string).
    pub partition_key: &'static str,
    /// Sort key attribute (string).
    pub sort_key: &'static str,
    /// TTL attribute (epoch seconds).
    pub ttl_attribute: &'static str,
    /// Billing mode as CloudFormation spells it.
    pub billing_mode: &'static str,
}

/// The spec of the Tally table.
pub const TABLE: TableSpec = TableSpec {
    partition_key: "pk",
    sort_key: "sk",
    ttl_attribute: "ttl",
    billing_mode: "PAY_PER_REQUEST",
};

/// The table name used when none is configured.
pub const DEFAULT_TABLE_NAME: &str = "tally";

/// Whether [`ensure_table`] made the table or found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ensured {
    /// The table was created now.
    Created,
    /// The table already existed.
    Existed,
}

/// Creates the table from [`TABLE`] unless it exists, waits until it is
/// active (polling `DescribeTable`, not the SDK waiter with its 20 s floor),
/// and enables TTL.
pub async fn ensure_table(client: &Client, name: &str) -> Result<Ensured, StoreError> {
    match client.describe_table().table_name(name).send().await {
        Ok(_) => return Ok(Ensured::Existed),
        Err(err) => {
            if crate::error::service_code(&err) != Some("ResourceNotFoundException") {
                return Err(from_sdk(err));
            }
        }
    }
    let attr = |n: &str| {
        AttributeDefinition::builder()
            .attribute_name(n)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .map_err(|e| StoreError::Request(e.to_string()))
    };
    let key = |n: &str, t: KeyType| {
        KeySchemaElement::builder()
            .attribute_name(n)
            .key_type(t)
            .build()
            .map_err(|e| StoreError::Request(e.to_string()))
    };
    let created = client
        .create_table()
        .table_name(name)
        .attribute_definitions(attr(TABLE.partition_key)?)
        .attribute_definitions(attr(TABLE.sort_key)?)
        .key_schema(key(TABLE.partition_key, KeyType::Hash)?)
        .key_schema(key(TABLE.sort_key, KeyType::Range)?)
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await;
    if let Err(err) = created {
        // Another process created it first: fine.
        if crate::error::service_code(&err) != Some("ResourceInUseException") {
            return Err(from_sdk(err));
        }
    }
    for _ in 0..200 {
        let described = client
            .describe_table()
            .table_name(name)
            .send()
            .await
            .map_err(from_sdk)?;
        if described.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    client
        .update_time_to_live()
        .table_name(name)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .attribute_name(TABLE.ttl_attribute)
                .enabled(true)
                .build()
                .map_err(|e| StoreError::Request(e.to_string()))?,
        )
        .send()
        .await
        .map_err(from_sdk)?;
    Ok(Ensured::Created)
}
