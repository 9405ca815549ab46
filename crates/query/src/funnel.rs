//! Funnel reports: `GET /api/sites/{site}/funnels` lists a site's funnels,
//! `GET /api/sites/{site}/funnels/{id}` counts one over the period.
//!
//! A funnel follows visits through their events, so it reads events only
//! (segments, then raw hours; never rollups): the read is made as for an
//! hourly series. The usual period, `compare` and `filters` apply
//! (filters keep or drop whole visits); `mode=ordered|strict` overrides the
//! funnel's own mode.

use crate::error::{ApiError, typed_response};
use crate::read::{Buckets, Fold, Read, read};
use crate::response::{ComparisonMeta, Meta};
use crate::store::QueryStore;
use crate::{Ctx, comparison_meta, goals_for, meta, read_request};
use lambda_http::{Body, Response};
use serde::Serialize;
use tally_core::funnel::{Funnel, Mode, StepCounts, StepRow, rows};
use tally_core::range::DateRange;
use tally_core::scan::FunnelSpec;

/// `funnels`: the site's funnels.
#[derive(Debug, Clone, Serialize)]
pub struct FunnelList {
    /// Each funnel with its steps' labels.
    pub results: Vec<FunnelInfo>,
}

/// A funnel as reports name it.
#[derive(Debug, Clone, Serialize)]
pub struct FunnelInfo {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its own mode.
    pub mode: &'static str,
    /// Its steps, as people read them.
    pub steps: Vec<String>,
}

impl FunnelInfo {
    fn of(f: &Funnel) -> Self {
        Self {
            id: f.id.clone(),
            name: f.name.clone(),
            mode: f.mode.as_str(),
            steps: f.steps.iter().map(|s| s.label()).collect(),
        }
    }
}

/// `funnels/{id}`: per step, visitors and visits that reached it,
/// conversion and drop-off.
#[derive(Debug, Clone, Serialize)]
pub struct FunnelResponse {
    /// The funnel.
    pub funnel: FunnelInfo,
    /// The steps over the period.
    pub results: Vec<StepRow>,
    /// The steps over the comparison period, or `null`.
    pub comparison: Option<Vec<StepRow>>,
    /// What was asked and where it came from.
    pub meta: FunnelMeta,
}

/// `funnels/{id}` meta.
#[derive(Debug, Clone, Serialize)]
pub struct FunnelMeta {
    /// The common part.
    #[serde(flatten)]
    pub common: Meta,
    /// The mode counted.
    pub mode: &'static str,
    /// The comparison range, or `null`.
    pub comparison: Option<ComparisonMeta>,
}

/// Lists the site's funnels.
pub(crate) async fn list<S: QueryStore>(store: &S, site: &str) -> Result<Response<Body>, ApiError> {
    let funnels = store.funnels(site).await?;
    Ok(typed_response(&FunnelList {
        results: funnels.iter().map(FunnelInfo::of).collect(),
    }))
}

/// Counts one funnel over the period (and the comparison period).
pub(crate) async fn report<S: QueryStore>(
    store: &S,
    ctx: &Ctx<'_>,
    id: &str,
    mode: Option<&str>,
) -> Result<Response<Body>, ApiError> {
    let mode = match mode {
        None | Some("") => None,
        Some(m) => Some(Mode::parse(m).ok_or_else(|| {
            ApiError::bad_request("invalid_mode", "mode must be ordered or strict")
        })?),
    };
    let funnel = store
        .funnels(&ctx.site.id)
        .await?
        .into_iter()
        .find(|f| f.id == id)
        .ok_or_else(|| ApiError::not_found("unknown_funnel", format!("no funnel {id:?}")))?;
    let mode = mode.unwrap_or(funnel.mode);
    let (goals, fp) = goals_for(store, ctx, &[]).await?;
    let count = |range: DateRange| {
        let goals = &goals;
        let fp = &fp;
        let funnel = &funnel;
        async move {
            // A funnel reads events only: every visit of the range.
            let r = read_request(ctx, range, goals, fp);
            let fold = Fold {
                funnel: Some(FunnelSpec {
                    steps: &funnel.steps,
                    mode,
                }),
                ..Fold::new(&ctx.params.filter, Buckets::Total)
            };
            let mut got: Read = Box::pin(read(store, &r, &[fold])).await?;
            let counts = got.take(0).funnel.unwrap_or_else(|| StepCounts {
                visitors: vec![0; funnel.steps.len()],
                visits: vec![0; funnel.steps.len()],
            });
            let steps = rows(&funnel.steps, &counts);
            Ok::<_, ApiError>((got, steps))
        }
    };
    let compare = ctx.params.compare.map(|c| c.range(ctx.params.range));
    let previous = async {
        match compare {
            Some(range) => count(range).await.map(|(r, steps)| Some((range, r, steps))),
            None => Ok(None),
        }
    };
    let (current, previous) = tokio::join!(Box::pin(count(ctx.params.range)), Box::pin(previous));
    let (current, results) = current?;
    let previous = previous?;
    let comparison = previous.as_ref().map(|(_, _, steps)| steps.clone());
    let previous_read = previous.map(|(range, r, _)| (range, r));
    Ok(typed_response(&FunnelResponse {
        funnel: FunnelInfo::of(&funnel),
        results,
        comparison,
        meta: FunnelMeta {
            common: meta(ctx, &current),
            mode: mode.as_str(),
            comparison: comparison_meta(&previous_read),
        },
    }))
}
