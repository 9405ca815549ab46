//! Reading the events a [`Plan`] names: segment parts (one BatchGetItem per
//! 100 parts) and raw hour partitions, fetched in parallel; parts decoded by
//! `tally-core`. A part that is missing, corrupt, truncated or of an unknown
//! version is logged, and its hours are read raw when raw events still
//! exist ([`Plan::fall_back`]); otherwise the plan drops the days it held
//! and says so in a warning. Never a panic, never a guess.

use crate::{Store, StoreError};
use std::collections::BTreeSet;
use tally_core::Millis;
use tally_core::event::Event;
use tally_core::plan::{PartKey, Plan};
use tally_core::segment::decode_part;
use tally_core::site::Site;

/// The events of a plan, and the plan as it was carried out.
#[derive(Debug, Clone, Default)]
pub struct Detail {
    /// Every event inside the plan's windows, in time order.
    pub events: Vec<Event>,
    /// The plan after any fall-back (sources and warnings are final).
    pub plan: Plan,
}

impl Store {
    /// Reads the events `plan` names.
    pub async fn read_detail(
        &self,
        site: &Site,
        mut plan: Plan,
        now: Millis,
    ) -> Result<Detail, StoreError> {
        if !plan.reads_events() {
            return Ok(Detail {
                events: Vec::new(),
                plan,
            });
        }
        let keys: Vec<PartKey> = plan.parts.keys().cloned().collect();
        let raw_hours: Vec<Millis> = plan.raw_hours.iter().copied().collect();
        let (parts, raw) = futures::join!(
            self.segment_parts(&site.id, &keys),
            self.events_in_hours(site, raw_hours, now)
        );
        let parts = parts?;
        let mut events = raw?;
        let mut failed = BTreeSet::new();
        let mut blocks: Vec<(Millis, Vec<Event>)> = Vec::new();
        for key in &keys {
            let Some(bytes) = parts.get(key) else {
                tracing::error!(site = %site.id, day = %key.0, part = %key.1, "segment part missing");
                failed.insert(key.clone());
                continue;
            };
            match decode_part(bytes, |h| plan.segment_hours.contains(&h)) {
                Ok(decoded) => blocks.extend(decoded),
                Err(e) => {
                    tracing::error!(site = %site.id, day = %key.0, part = %key.1, error = %e, "segment part unreadable");
                    failed.insert(key.clone());
                }
            }
        }
        if !failed.is_empty() {
            let extra = plan.fall_back(&failed);
            events.extend(self.events_in_hours(site, extra, now).await?);
        }
        for (hour, decoded) in blocks {
            if plan.segment_hours.contains(&hour) {
                events.extend(decoded);
            }
        }
        events.retain(|e| plan.keeps(e.ts));
        events.sort_by_key(|e| e.ts);
        Ok(Detail { events, plan })
    }
}
