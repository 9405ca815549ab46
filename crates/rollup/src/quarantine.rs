//! Which sites a scheduled run sets aside, so one site the job cannot
//! finish never stalls the others (pure rules over [`JobState`]).
//!
//! A run marks a site in [`JobState::unfinished`] (and saves the state)
//! before it starts it, and clears the mark when the site finishes, with
//! or without an error. A site still marked when the next run begins was
//! being worked on when a run died (out of memory, the function's
//! timeout): a crash inside that site. The rule:
//! - a site with such a mark (a suspect) runs alone, so a crash is its own;
//! - after [`MAX_UNFINISHED`] runs in a row that started it and never
//!   finished it, it is quarantined: scheduled runs skip it (logged at
//!   error, counted in the `SitesQuarantined` and `SitesFailed` metrics, so
//!   the failed-sites alarm fires) for [`QUARANTINE_MS`], and the cursor
//!   moves past it;
//! - then it is tried again, on probation: one more crash quarantines it
//!   again; a finished run clears everything;
//! - `tally rollup --site ID` runs a quarantined site by hand at once, and
//!   lifts the quarantine when it finishes.
//!
//! A site that fails with an error (not a crash) finishes: it is reported
//! and the run goes on.

use std::collections::BTreeMap;
use tally_core::{DAY_MS, Millis};
use tally_store::jobs::{JobState, Quarantine};

/// Runs in a row that may start a site without finishing it before it is
/// quarantined.
pub const MAX_UNFINISHED: u32 = 3;

/// How long a quarantined site is skipped.
pub const QUARANTINE_MS: Millis = DAY_MS;

/// At the start of a scheduled run: quarantines the sites the last
/// [`MAX_UNFINISHED`] runs started and never finished, and releases the
/// quarantines that are over (on probation). Returns the sites newly
/// quarantined.
pub fn begin_run(state: &mut JobState, now: Millis) -> Vec<String> {
    let mut released = Vec::new();
    state.quarantined.retain(|site, q| {
        let over = now >= q.until;
        if over {
            released.push(site.clone());
        }
        !over
    });
    for site in released {
        // One more crash quarantines it again.
        state
            .unfinished
            .insert(site, MAX_UNFINISHED.saturating_sub(1));
    }
    let crashed: BTreeMap<String, u32> = state
        .unfinished
        .iter()
        .filter(|(_, n)| **n >= MAX_UNFINISHED)
        .map(|(site, n)| (site.clone(), *n))
        .collect();
    for (site, attempts) in &crashed {
        state.unfinished.remove(site);
        state.quarantined.insert(
            site.clone(),
            Quarantine {
                since: now,
                until: now + QUARANTINE_MS,
                attempts: *attempts,
                reason: format!(
                    "{attempts} runs in a row started the site and never finished it (out of memory or out of time)"
                ),
            },
        );
    }
    crashed.into_keys().collect()
}

/// The quarantine a scheduled run at `now` skips `site` for, if any.
pub fn skipped<'a>(state: &'a JobState, site: &str, now: Millis) -> Option<&'a Quarantine> {
    state.quarantined.get(site).filter(|q| now < q.until)
}

/// Whether a previous run started `site` and never finished it: it runs
/// alone.
pub fn suspect(state: &JobState, site: &str) -> bool {
    state.unfinished.get(site).is_some_and(|n| *n > 0)
}

/// Marks `site` as started (save the state before starting it).
pub fn started(state: &mut JobState, site: &str) {
    *state.unfinished.entry(site.to_owned()).or_default() += 1;
}

/// Clears `site`'s marks: it finished (with or without an error).
pub fn finished(state: &mut JobState, site: &str) {
    state.unfinished.remove(site);
    state.quarantined.remove(site);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_that_never_finishes_is_quarantined_after_three_runs_then_tried_again() {
        let mut state = JobState::default();
        let now = 1_000 * DAY_MS;
        for run in 0..MAX_UNFINISHED {
            assert!(begin_run(&mut state, now).is_empty(), "run {run}");
            assert!(skipped(&state, "hostile", now).is_none());
            assert_eq!(suspect(&state, "hostile"), run > 0);
            started(&mut state, "hostile");
            started(&mut state, "calm");
            finished(&mut state, "calm");
            // The run dies inside "hostile".
        }
        assert_eq!(begin_run(&mut state, now), vec!["hostile".to_owned()]);
        let q = skipped(&state, "hostile", now).cloned();
        assert!(
            q.as_ref()
                .is_some_and(|q| q.attempts == MAX_UNFINISHED && q.until == now + QUARANTINE_MS),
            "{q:?}"
        );
        assert!(!suspect(&state, "calm") && skipped(&state, "calm", now).is_none());
        // Still skipped a little later; tried again once it is over, on
        // probation: one more crash sets it aside again.
        let later = now + QUARANTINE_MS - 1;
        assert!(begin_run(&mut state, later).is_empty());
        assert!(skipped(&state, "hostile", later).is_some());
        let over = now + QUARANTINE_MS;
        assert!(begin_run(&mut state, over).is_empty());
        assert!(skipped(&state, "hostile", over).is_none());
        assert!(suspect(&state, "hostile"));
        started(&mut state, "hostile");
        assert_eq!(
            begin_run(&mut state, over + DAY_MS / 24),
            vec!["hostile".to_owned()]
        );
        // A run that finishes it (by hand) clears everything.
        finished(&mut state, "hostile");
        assert_eq!(state, JobState::default());
    }
}
