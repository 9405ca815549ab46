//! Job state under `JOBS` / `JOB#{name}`: the rollup job's cursor, so a run
//! that runs out of time continues where it stopped, and which sites runs
//! started without finishing (a crash inside a site: out of memory, the
//! function's timeout), so a site that keeps crashing is set aside
//! (quarantined) instead of stalling every run.

use crate::Store;
use crate::error::StoreError;
use crate::item::{from_item, key, with_keys};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tally_core::Millis;
use tally_core::keys::{JOBS_PK, job_sk};

/// A job's persisted state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobState {
    /// The last site finished by an unfinished run; the next run starts after it.
    #[serde(default)]
    pub cursor: Option<String>,
    /// When the current (or last) run started.
    #[serde(default)]
    pub run_started: Millis,
    /// When the last complete pass over every site finished.
    #[serde(default)]
    pub last_finished: Option<Millis>,
    /// Sites that failed in the last run.
    #[serde(default)]
    pub failed: Vec<String>,
    /// Sites started and not finished, with how many runs in a row started
    /// them without finishing. A run marks a site before it starts it and
    /// clears the mark when the site finishes (with or without an error),
    /// so a mark found by the next run is a crash inside that site.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unfinished: BTreeMap<String, u32>,
    /// Sites scheduled runs skip, until when and why.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub quarantined: BTreeMap<String, Quarantine>,
}

/// Why and until when scheduled runs skip a site.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quarantine {
    /// When it was set aside.
    pub since: Millis,
    /// When runs try it again.
    pub until: Millis,
    /// Runs in a row that started it and never finished it.
    pub attempts: u32,
    /// Why, for people.
    pub reason: String,
}

impl Store {
    /// A job's state, if it has run before.
    pub async fn job(&self, name: &str) -> Result<Option<JobState>, StoreError> {
        match self.get(key(JOBS_PK, job_sk(name)), true).await? {
            Some(item) => Ok(Some(from_item(item)?)),
            None => Ok(None),
        }
    }

    /// Saves a job's state.
    pub async fn put_job(&self, name: &str, state: &JobState) -> Result<(), StoreError> {
        self.put(with_keys(state, JOBS_PK.to_owned(), job_sk(name), None)?)
            .await
    }
}
