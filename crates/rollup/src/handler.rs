//! The Lambda handler: an EventBridge scheduled event in, a run report out.

use crate::{JobConfig, RunReport, run};
use aws_lambda_events::eventbridge::EventBridgeEvent;
use lambda_runtime::LambdaEvent;
use std::time::{Duration, Instant, SystemTime};
use tally_store::Store;
use tally_store::clock::Clock;

/// Time kept back from the Lambda deadline to save the cursor and answer.
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(30);

/// Runs the job for one scheduled event. The event's `detail` may name a
/// `site` to roll up only that one.
pub async fn handle<C: Clock>(
    store: &Store,
    clock: &C,
    event: LambdaEvent<EventBridgeEvent<serde_json::Value>>,
) -> Result<RunReport, tally_store::StoreError> {
    let deadline = event
        .context
        .deadline()
        .duration_since(SystemTime::now())
        .ok()
        .filter(|left| !left.is_zero())
        .map(|left| Instant::now() + left.saturating_sub(DEADLINE_MARGIN));
    let config = JobConfig {
        deadline,
        site: event
            .payload
            .detail
            .get("site")
            .and_then(|s| s.as_str())
            .map(str::to_owned),
        ..JobConfig::default()
    };
    let report = run(store, clock.now(), &config, &|_| {}).await?;
    tracing::info!(
        processed = report.processed.len(),
        failed = report.failed.len(),
        days_written = report.days_written,
        finished = report.finished,
        "rollup run"
    );
    Ok(report)
}
