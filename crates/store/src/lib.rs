//! `tally-store`: the DynamoDB adapter of Tally.
//!
//! Everything that talks to DynamoDB goes through [`Store`], which wraps one
//! `aws-sdk-dynamodb` client and one table. Locally the client points at the
//! embedded `dynoxide` server (`DYNAMODB_ENDPOINT`), in AWS at DynamoDB
//! itself: the same code path either way.
//!
//! - [`table`]: the one table spec (keys, TTL, billing) and its creation.
//! - [`client`]: building the SDK client, timeouts, and request counting.
//! - [`error`]: one error type for every store failure.
//! - [`events`]: raw-event writes (one conditional PutItem) and hour reads.
//! - [`segments`]: segment manifests and parts (Query, BatchGetItem, BatchWriteItem).
//! - [`detail`]: the events a read plan names, from segments and raw hours,
//!   streamed in order within a byte budget to workers that scan them.
//! - [`rollups`]: day rollups.
//! - [`sites`]: sites and API keys, with a per-instance site cache.
//! - [`settings`]: a site's goals and funnels.
//! - [`saved`]: a site's saved segments and annotations.
//! - [`conversions`]: trusted conversions (one conditional PutItem per
//!   order id) and affiliates.
//! - [`deletions`]: sites being deleted, and clearing a partition.
//! - [`salt`]: the shared daily salt with its cache and local fallback.
//! - [`accounts`]: the console's users, sessions, memberships, invites,
//!   setup tokens, settings, audit entries and guess windows.
//! - [`alerts`]: a site's traffic alert settings, recorded alerts and
//!   their deliveries.
//! - [`clock`]: the clock the handlers are given.

pub mod accounts;
pub mod alerts;
pub mod bots;
pub mod client;
pub mod clock;
pub mod conversions;
pub mod deletions;
pub mod detail;
pub mod env;
pub mod error;
pub mod events;
pub mod item;
pub mod jobs;
pub mod query;
pub mod reports;
pub mod rollups;
pub mod salt;
pub mod saved;
pub mod segments;
pub mod settings;
pub mod sites;
pub mod table;

pub use client::{ClientOptions, RequestCounter};
pub use error::StoreError;

use aws_sdk_dynamodb::Client;
use std::sync::Arc;

/// One table reached through one SDK client.
#[derive(Clone, Debug)]
pub struct Store {
    client: Client,
    table: Arc<str>,
    counter: Option<Arc<RequestCounter>>,
}

impl Store {
    /// Wraps a client and a table name.
    pub fn new(client: Client, table: impl Into<Arc<str>>) -> Self {
        Self {
            client,
            table: table.into(),
            counter: None,
        }
    }

    /// Builds the client from options and wraps it.
    pub async fn connect(options: &ClientOptions, table: &str) -> Self {
        let client = client::build(options).await;
        Self {
            client,
            table: table.into(),
            counter: options.counter.clone(),
        }
    }

    /// The SDK client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The table name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The request counter, when the client was built with one.
    pub fn counter(&self) -> Option<&Arc<RequestCounter>> {
        self.counter.as_ref()
    }

    pub(crate) fn add_write_units(&self, units: Option<f64>) {
        if let (Some(counter), Some(units)) = (&self.counter, units) {
            counter.add_write_units(units);
        }
    }

    pub(crate) fn add_read_units(&self, units: Option<f64>) {
        if let (Some(counter), Some(units)) = (&self.counter, units) {
            counter.add_read_units(units);
        }
    }
}
