//! What a tracker sends and what Tally stores of it: the payload and
//! every reason to refuse it, the stored event, the site's rules, write
//! shards, classification, the daily salt and the limits on stored text.
//! It reads nothing of reports: the engine reads what this domain writes.
//!
//! - [`payload`]: the tracker payload, its limits and every refusal.
//! - [`plausible`]: Plausible's Events API body.
//! - [`event`]: the stored event and how an accepted hit becomes one.
//! - [`site`]: a site's configuration and its domain rules.
//! - [`proxy`]: trusted proxies in front of a site.
//! - [`shard`]: write shards of the raw-event partitions, over time.
//! - [`classify`]: user agents, bots, referrers and countries.
//! - [`salt`]: the deployment secret, the daily salt and the visitor id.
//! - [`vitals`]: the five Web Vitals and their beacon.
//! - [`text`]: the rules for text that becomes a stored label.
//! - [`item_size`]: an item's size as DynamoDB measures it.
//! - [`cardinality`]: distinct property keys and values per site per hour.

pub mod cardinality;
pub mod classify;
pub mod event;
pub mod item_size;
pub mod payload;
pub mod plausible;
pub mod proxy;
pub mod salt;
pub mod shard;
pub mod site;
pub mod text;
pub mod vitals;
