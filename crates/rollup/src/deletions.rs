//! Step 5 of a scheduled run: sweeping the sites being deleted
//! ([`tally_core::product::deletion`]), each from its saved cursor, until the run's
//! time budget ends; a deletion is ended (its id free again) only once
//! every partition of its site is empty.

use std::time::Instant;
use tally_core::product::deletion::Deletion;
use tally_core::{HOUR_MS, Millis};
use tally_store::{Store, StoreError};

/// What a run did to deletions.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PurgeReport {
    /// Sites whose every item is gone, with the items removed in all.
    pub finished: Vec<(String, u64)>,
    /// Sites still being deleted (waiting, out of time or failed).
    pub pending: Vec<String>,
}

/// Sweeps every deletion that is due at `now`, until `deadline`.
pub async fn sweep_due(
    store: &Store,
    now: Millis,
    deadline: Option<Instant>,
) -> Result<PurgeReport, StoreError> {
    let mut report = PurgeReport::default();
    for deletion in store.deletions().await? {
        let id = deletion.site.id.clone();
        if !deletion.ready(now) || deadline.is_some_and(|d| Instant::now() >= d) {
            report.pending.push(id);
            continue;
        }
        match sweep(store, deletion, deadline).await {
            Ok(Some(removed)) => {
                tracing::info!(event = "site_purged", site = %id, removed, "every item of a deleted site removed");
                report.finished.push((id, removed));
            }
            Ok(None) => report.pending.push(id),
            Err(e) => {
                tracing::error!(site = %id, error = %e, "sweeping a deleted site failed");
                report.pending.push(id);
            }
        }
    }
    Ok(report)
}

/// Sweeps one deletion from its cursor: the items removed in all once it
/// is done, `None` when the deadline came first (the cursor saved).
async fn sweep(
    store: &Store,
    mut deletion: Deletion,
    deadline: Option<Instant>,
) -> Result<Option<u64>, StoreError> {
    loop {
        let hours = deletion.next_hours();
        let Some(&(last, _)) = hours.last() else {
            break;
        };
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }
        for (_, partitions) in &hours {
            for pk in partitions {
                deletion.removed += store.clear_partition(pk).await?;
            }
        }
        deletion.next_hour = Some(last + HOUR_MS);
        store.save_deletion(&deletion).await?;
    }
    let manifests = store.manifest_days(&deletion.site.id).await?;
    for pk in deletion.segment_days(&manifests) {
        deletion.removed += store.clear_partition(&pk).await?;
    }
    for pk in deletion.final_partitions() {
        deletion.removed += store.clear_partition(&pk).await?;
    }
    store.end_deletion(&deletion.site.id).await?;
    Ok(Some(deletion.removed))
}
