//! The Lambda handler: an EventBridge scheduled event in, a run report out.

use crate::alerts::AlertJob;
use crate::reports::ReportJob;
use crate::{JobConfig, RunReport, run};
use aws_lambda_events::eventbridge::EventBridgeEvent;
use lambda_runtime::LambdaEvent;
use std::time::{Duration, Instant, SystemTime};
use tally_store::Store;
use tally_store::clock::Clock;

/// The run's EMF lines ([`tally_core::metrics`]): days written and days
/// failed, sites processed, failed (with an error, a failed day, or
/// skipped because quarantined: the failed-sites alarm) and quarantined,
/// whether the run reached every site, and the age of the oldest settled
/// day still without a rollup.
pub fn metric_lines(report: &RunReport, now: tally_core::Millis) -> Vec<String> {
    use tally_core::metrics::{Metric, Unit, line};
    let n = |v: usize| v as f64;
    line(
        "rollup",
        None,
        &[
            Metric::one("DaysWritten", Unit::Count, n(report.days_written)),
            Metric::one("SitesProcessed", Unit::Count, n(report.processed.len())),
            Metric::one("DaysFailed", Unit::Count, n(report.failed_days.len())),
            Metric::one(
                "SitesFailed",
                Unit::Count,
                n(report.failed.len() + report.quarantined.len()),
            ),
            Metric::one("SitesQuarantined", Unit::Count, n(report.quarantined.len())),
            Metric::one(
                "RunFinished",
                Unit::Count,
                if report.finished { 1.0 } else { 0.0 },
            ),
            Metric::one(
                "OldestUnrolledDayAge",
                Unit::Seconds,
                (report.oldest_unrolled_ms / 1000) as f64,
            ),
        ],
        now,
    )
    .into_iter()
    .collect()
}

/// Time kept back from the Lambda deadline to save the cursor and answer.
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(30);

/// Runs the job for one scheduled event. The event's `detail` may name a
/// `site` to roll up only that one.
pub async fn handle<C: Clock>(
    store: &Store,
    clock: &C,
    event: LambdaEvent<EventBridgeEvent<serde_json::Value>>,
) -> Result<RunReport, tally_store::StoreError> {
    handle_with_steps(store, clock, event, None, None).await
}

/// [`handle`], then step 3, the email reports due ([`crate::reports`]),
/// when a mailer is configured, and step 4, traffic alerts
/// ([`crate::alerts`]), when a webhook client is. A failed step is logged;
/// the run's report stands.
pub async fn handle_with_steps<C: Clock>(
    store: &Store,
    clock: &C,
    event: LambdaEvent<EventBridgeEvent<serde_json::Value>>,
    reports: Option<&ReportJob<'_>>,
    alerts: Option<&AlertJob<'_>>,
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
    let now = clock.now();
    let report = run(store, now, &config, &|_| {}).await?;
    tally_lambda::metrics::emit(&metric_lines(&report, now));
    tracing::info!(
        processed = report.processed.len(),
        failed = report.failed.len(),
        days_failed = report.failed_days.len(),
        quarantined = report.quarantined.len(),
        days_written = report.days_written,
        finished = report.finished,
        "rollup run"
    );
    if let Some(job) = reports {
        let job = ReportJob {
            site: config.site.clone(),
            ..job.clone()
        };
        if let Err(e) = crate::reports::send_due(store, clock.now(), &job).await {
            tracing::error!(error = %e, "email reports failed");
        }
    }
    if let Some(job) = alerts {
        let job = AlertJob {
            site: config.site.as_deref(),
            ..*job
        };
        if let Err(e) = crate::alerts::run_due(store, clock.now(), &job).await {
            tracing::error!(error = %e, "traffic alerts failed");
        }
    }
    Ok(report)
}
