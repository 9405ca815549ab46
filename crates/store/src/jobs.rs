//! Job state under `JOBS` / `JOB#{name}`: the rollup job's cursor, so a run
//! that runs out of time continues where it stopped.

use crate::Store;
use crate::error::StoreError;
use crate::item::{from_item, key, with_keys};
use serde::{Deserialize, Serialize};
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
