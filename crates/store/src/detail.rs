//! Reading the events a [`Plan`] names, as streams: the parts and raw hours
//! of each stream fetched in the order its scans take them, a bounded
//! amount ahead, and handed to a worker on the blocking pool that pushes
//! them into its sink ([`tally_core::engine::stream::run`]) while the next ones
//! are fetched. Nothing of the range is held: a stream holds at most
//! [`StreamLimits::prefetch_bytes`] of parts fetched and not yet taken
//! (the response being parsed takes about as much again), the input its
//! worker is on, and what the worker's scans hold.
//!
//! [`Store::stream`] runs several streams side by side (a plan split into
//! windows of whole days, [`Plan::split`]), each with its own fetches and
//! worker. A part that is missing, corrupt, truncated or of an unknown
//! version is logged, and its hours are read raw where raw events still
//! exist (the worker asks [`Feed`] for them); otherwise the days it held
//! are left out and the plan names them in a warning. Never a panic,
//! never a guess.
//!
//! [`Store::hour_events`] reads one hour's events whole, for a reader that
//! wants events rather than counts (`tally export`).

use crate::{Store, StoreError};
use futures::stream::StreamExt;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;
use tally_core::Millis;
use tally_core::engine::plan::{PartKey, Plan, Step};
use tally_core::engine::segment::decode_part;
use tally_core::engine::stream::{Input, Source};
use tally_core::ingest::event::Event;
use tally_core::ingest::site::Site;
use tokio::runtime::Handle;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

/// How a stream reads.
#[derive(Debug, Clone, Copy)]
pub struct StreamLimits {
    /// Most bytes of segment parts (as stored) one stream has asked for and
    /// its worker has not finished with: requests in flight, answers
    /// waiting, the part being pushed. A larger part is fetched alone.
    pub prefetch_bytes: usize,
    /// Most bytes of parts asked for in one BatchGetItem (at most 100 keys
    /// a request, whatever their size; never more than `prefetch_bytes`).
    pub batch_bytes: usize,
    /// Most requests (BatchGetItems, raw hours) one stream has in flight.
    pub in_flight: usize,
    /// When to stop: a stream still running then ends with
    /// [`StreamError::Late`].
    pub deadline: Option<Instant>,
}

/// Parts one stream may have fetched ahead by default (as stored).
pub const PREFETCH_BYTES: usize = 6 * 1024 * 1024;
/// Bytes of parts one BatchGetItem asks for by default.
pub const BATCH_BYTES: usize = 1024 * 1024;
/// Requests one stream has in flight by default.
pub const IN_FLIGHT: usize = 3;

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            prefetch_bytes: PREFETCH_BYTES,
            batch_bytes: BATCH_BYTES,
            in_flight: IN_FLIGHT,
            deadline: None,
        }
    }
}

/// Why a stream stopped.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// Reading failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The deadline passed before the stream was done.
    #[error("the read ran past its deadline")]
    Late,
    /// The stream could not go on (its worker failed, its inputs were out
    /// of order).
    #[error("a read stream stopped: {0}")]
    Stopped(String),
}

impl<E: Into<StreamError>> From<tally_core::engine::stream::RunError<E>> for StreamError {
    fn from(e: tally_core::engine::stream::RunError<E>) -> Self {
        match e {
            tally_core::engine::stream::RunError::Source(e) => e.into(),
            tally_core::engine::stream::RunError::Order(why) => Self::Stopped(why),
        }
    }
}

/// A step's input with the share of the byte budget it holds.
type Fetched = Result<(Input, Option<OwnedSemaphorePermit>), StoreError>;

/// What a stream's worker reads from ([`Source`]): the inputs of its
/// plan's steps, in order, as they arrive; raw hours on demand. Lives on
/// the worker's blocking thread.
pub struct Feed {
    rx: mpsc::UnboundedReceiver<Fetched>,
    /// The budget share of the input handed over last (freed at the next).
    held: Option<OwnedSemaphorePermit>,
    handle: Handle,
    store: Store,
    site: Site,
    now: Millis,
    deadline: Option<Instant>,
}

impl Feed {
    /// Waits for `fut` on the runtime, up to the deadline.
    fn wait<F: std::future::Future>(&self, fut: F) -> Result<F::Output, StreamError> {
        match self.deadline {
            None => Ok(self.handle.block_on(fut)),
            Some(d) if Instant::now() >= d => Err(StreamError::Late),
            Some(d) => self
                .handle
                .block_on(tokio::time::timeout_at(d.into(), fut))
                .map_err(|_| StreamError::Late),
        }
    }
}

impl Source for Feed {
    type Error = StreamError;

    fn next(&mut self) -> Result<Input, StreamError> {
        self.held = None;
        let rx = &mut self.rx;
        let got = match self.deadline {
            None => rx.blocking_recv(),
            Some(d) if Instant::now() >= d => return Err(StreamError::Late),
            Some(d) => self
                .handle
                .block_on(tokio::time::timeout_at(d.into(), rx.recv()))
                .map_err(|_| StreamError::Late)?,
        };
        match got {
            None => Err(StreamError::Stopped("its reads ended early".into())),
            Some(Err(e)) => Err(e.into()),
            Some(Ok((input, permit))) => {
                self.held = permit;
                Ok(input)
            }
        }
    }

    fn raw_hours(&mut self, hours: &[Millis]) -> Result<Vec<Event>, StreamError> {
        let read = self
            .store
            .events_in_hours(&self.site, hours.to_vec(), self.now);
        Ok(self.wait(read)??)
    }
}

/// What one request of a stream fetches.
enum Unit {
    /// Parts, in step order, with their sizes: one BatchGetItem.
    Parts(Vec<(PartKey, u32)>),
    /// One raw hour.
    Raw(Millis),
}

/// The steps' fetches: consecutive parts batched up to `batch_bytes` (and
/// 100 keys), each raw hour alone.
fn units(steps: &[Step], batch_bytes: usize) -> Vec<Unit> {
    let mut out = Vec::new();
    let mut batch: Vec<(PartKey, u32)> = Vec::new();
    let mut size = 0usize;
    for step in steps {
        match step {
            Step::Part { key, bytes, .. } => {
                let b = *bytes as usize;
                if !batch.is_empty()
                    && (size + b > batch_bytes || batch.len() >= crate::segments::BATCH_GET_KEYS)
                {
                    out.push(Unit::Parts(std::mem::take(&mut batch)));
                    size = 0;
                }
                batch.push((key.clone(), *bytes));
                size += b;
            }
            Step::Raw(hour) => {
                if !batch.is_empty() {
                    out.push(Unit::Parts(std::mem::take(&mut batch)));
                    size = 0;
                }
                out.push(Unit::Raw(*hour));
            }
        }
    }
    if !batch.is_empty() {
        out.push(Unit::Parts(batch));
    }
    out
}

impl Store {
    /// Runs one stream per `(plan, work)`, side by side: each plan's steps
    /// are fetched in order within `limits` while `work` (on the blocking
    /// pool) takes them from its [`Feed`] (usually with
    /// [`tally_core::engine::stream::run`]). The works' results in order, or the
    /// first error.
    pub async fn stream<T, W>(
        &self,
        site: &Site,
        now: Millis,
        limits: StreamLimits,
        jobs: Vec<(Plan, W)>,
    ) -> Result<Vec<T>, StreamError>
    where
        T: Send + 'static,
        W: FnOnce(Plan, &mut Feed) -> Result<T, StreamError> + Send + 'static,
    {
        let runs = jobs
            .into_iter()
            .map(|(plan, work)| self.stream_one(site, now, limits, plan, work));
        futures::future::try_join_all(runs).await
    }

    async fn stream_one<T, W>(
        &self,
        site: &Site,
        now: Millis,
        limits: StreamLimits,
        plan: Plan,
        work: W,
    ) -> Result<T, StreamError>
    where
        T: Send + 'static,
        W: FnOnce(Plan, &mut Feed) -> Result<T, StreamError> + Send + 'static,
    {
        // A request never asks for more than the budget lets be fetched.
        let batch = limits.batch_bytes.min(limits.prefetch_bytes).max(1);
        let units = units(&plan.steps(), batch);
        let (tx, rx) = mpsc::unbounded_channel();
        let mut feed = Feed {
            rx,
            held: None,
            handle: Handle::current(),
            store: self.clone(),
            site: site.clone(),
            now,
            deadline: limits.deadline,
        };
        let mut consumer = tokio::task::spawn_blocking(move || work(plan, &mut feed));
        let producer = self.produce(site, now, units, limits, tx);
        tokio::pin!(producer);
        // The worker may stop early (an error, the deadline): its reads are
        // dropped with it.
        let done = tokio::select! {
            done = &mut consumer => done,
            () = &mut producer => consumer.await,
        };
        done.map_err(|e| {
            tracing::error!(site = %site.id, error = %e, "a read stream's worker failed");
            StreamError::Stopped("its worker failed".into())
        })?
    }

    /// Fetches the units in order, at most `limits.in_flight` at once and
    /// within the byte budget, and sends each step's input to the worker.
    async fn produce(
        &self,
        site: &Site,
        now: Millis,
        units: Vec<Unit>,
        limits: StreamLimits,
        tx: mpsc::UnboundedSender<Fetched>,
    ) {
        let cap = u32::try_from(limits.prefetch_bytes.max(1)).unwrap_or(u32::MAX);
        let budget = Arc::new(Semaphore::new(cap as usize));
        let raw_weight = u32::try_from(limits.batch_bytes).unwrap_or(u32::MAX);
        let fetches = futures::stream::iter(units)
            // Budget taken in order, before the request is made.
            .then(|unit| {
                let budget = Arc::clone(&budget);
                async move {
                    let want = match &unit {
                        Unit::Parts(parts) => parts.iter().map(|(_, b)| *b).sum::<u32>(),
                        Unit::Raw(_) => raw_weight,
                    };
                    let permit = budget.acquire_many_owned(want.clamp(1, cap)).await.ok();
                    (unit, permit)
                }
            })
            .map(|(unit, permit)| async move { (self.fetch(site, now, unit).await, permit) })
            .buffered(limits.in_flight.max(1));
        futures::pin_mut!(fetches);
        while let Some((fetched, mut permit)) = fetches.next().await {
            let inputs = match fetched {
                Ok(inputs) => inputs,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            };
            let n = inputs.len();
            for (i, (input, bytes)) in inputs.into_iter().enumerate() {
                // Each part holds its own share until its worker is done
                // with it; the last one what is left.
                let share = if i + 1 == n {
                    permit.take()
                } else {
                    permit.as_mut().and_then(|p| {
                        let room = p.num_permits().saturating_sub(1);
                        p.split((bytes as usize).min(room))
                    })
                };
                if tx.send(Ok((input, share))).is_err() {
                    return;
                }
            }
        }
    }

    /// One unit's inputs in step order, each with its size.
    async fn fetch(
        &self,
        site: &Site,
        now: Millis,
        unit: Unit,
    ) -> Result<Vec<(Input, u32)>, StoreError> {
        match unit {
            Unit::Parts(parts) => {
                let keys: Vec<PartKey> = parts.iter().map(|(k, _)| k.clone()).collect();
                let mut got = self.segment_parts(&site.id, &keys).await?;
                Ok(parts
                    .into_iter()
                    .map(|(key, bytes)| {
                        let found = got.remove(&key);
                        if found.is_none() {
                            tracing::error!(site = %site.id, day = %key.0, part = %key.1, "segment part missing");
                        }
                        (Input::Part(found), bytes)
                    })
                    .collect())
            }
            Unit::Raw(hour) => {
                let events = self.events_in_hours(site, [hour], now).await?;
                Ok(vec![(Input::Raw(events), 0)])
            }
        }
    }

    /// The events of one UTC hour of `plan`, whole and in time order, with
    /// the plan of that hour as carried out (a part that cannot be read
    /// sends the hour raw, or drops it with a warning, as for a stream).
    pub async fn hour_events(
        &self,
        site: &Site,
        plan: &Plan,
        hour: Millis,
        now: Millis,
    ) -> Result<HourEvents, StoreError> {
        let mut plan = plan.only_hour(hour);
        let keys: Vec<PartKey> = plan.parts.keys().cloned().collect();
        let raw_hours: Vec<Millis> = plan.raw_hours.iter().copied().collect();
        let (parts, raw) = futures::join!(
            self.segment_parts(&site.id, &keys),
            self.events_in_hours(site, raw_hours, now)
        );
        let parts = parts?;
        let mut events = raw?;
        let mut failed = BTreeSet::new();
        let mut decoded = Vec::new();
        for key in &keys {
            let Some(bytes) = parts.get(key) else {
                tracing::error!(site = %site.id, day = %key.0, part = %key.1, "segment part missing");
                failed.insert(key.clone());
                continue;
            };
            match decode_part(bytes, |h| h == hour) {
                Ok(blocks) => decoded.extend(blocks.into_iter().flat_map(|(_, e)| e)),
                Err(e) => {
                    tracing::error!(site = %site.id, day = %key.0, part = %key.1, error = %e, "segment part unreadable");
                    failed.insert(key.clone());
                }
            }
        }
        if failed.is_empty() {
            events.extend(decoded);
        } else {
            let extra = plan.fall_back(&failed);
            events.extend(self.events_in_hours(site, extra, now).await?);
            if plan.segment_hours.contains(&hour) {
                events.extend(decoded);
            }
        }
        events.retain(|e| plan.keeps(e.ts));
        events.sort_by_key(|e| e.ts);
        Ok(HourEvents { events, plan })
    }
}

/// One hour's events ([`Store::hour_events`]).
#[derive(Debug, Clone, Default)]
pub struct HourEvents {
    /// Every event of the hour inside the plan's windows, in time order.
    pub events: Vec<Event>,
    /// The hour's plan after any fall-back.
    pub plan: Plan,
}
