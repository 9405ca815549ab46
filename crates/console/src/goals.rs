//! Goals and funnels of a site: `GET|POST sites/{site}/goals`,
//! `DELETE sites/{site}/goals/{id}`, the same for `funnels` (served by
//! [`crate::collection`]). Listing is a read; adding and removing
//! configure. Definitions are core's [`GoalSpec`] and [`FunnelSpec`],
//! built and checked against the site's others ([`goal::check_new`],
//! [`funnel::check_new`]) as `tally goal add` and `tally funnel add` do.

use crate::collection::{Added, Call, Collection, CollectionStore, Removed};
use crate::error::ConsoleError;
use tally_core::engine::funnel::{self, Funnel, FunnelError, FunnelSpec};
use tally_core::engine::goal::{self, Goal, GoalError, GoalSpec};

impl From<GoalError> for ConsoleError {
    fn from(e: GoalError) -> Self {
        let status = match e {
            GoalError::Exists(_) | GoalError::TooMany => 409,
            _ => 400,
        };
        Self::new(status, e.code(), e.to_string())
    }
}

impl From<FunnelError> for ConsoleError {
    fn from(e: FunnelError) -> Self {
        let status = match e {
            FunnelError::Exists(_) | FunnelError::TooMany => 409,
            _ => 400,
        };
        Self::new(status, e.code(), e.to_string())
    }
}

/// `sites/{site}/goals`.
pub struct Goals;

impl Collection for Goals {
    const NOUN: &'static str = "goal";
    const LISTED: &'static str = "goals";
    type Spec = GoalSpec;
    type Item = Goal;
    type Answer = Goal;

    async fn list<S: CollectionStore>(call: Call<'_, S>) -> Result<Vec<Goal>, ConsoleError> {
        Ok(call.store.goals(call.site()).await?)
    }

    async fn add<S: CollectionStore>(
        call: Call<'_, S>,
        spec: GoalSpec,
    ) -> Result<Added<Goal>, ConsoleError> {
        let store = call.store;
        let goal = spec.build(call.now)?;
        goal::check_new(&store.goals(call.site()).await?, &goal)?;
        store.put_goal(call.site(), &goal).await?;
        Ok(Added::new(goal.id.clone(), "goal added", goal))
    }

    async fn remove<S: CollectionStore>(
        call: Call<'_, S>,
        id: &str,
    ) -> Result<Removed, ConsoleError> {
        let store = call.store;
        if !store.goals(call.site()).await?.iter().any(|g| g.id == id) {
            return Err(ConsoleError::not_found("goal_not_found", "no such goal"));
        }
        store.delete_goal(call.site(), id).await?;
        Ok(Removed::new(id, "goal removed"))
    }
}

/// `sites/{site}/funnels`.
pub struct Funnels;

impl Collection for Funnels {
    const NOUN: &'static str = "funnel";
    const LISTED: &'static str = "funnels";
    type Spec = FunnelSpec;
    type Item = Funnel;
    type Answer = Funnel;

    async fn list<S: CollectionStore>(call: Call<'_, S>) -> Result<Vec<Funnel>, ConsoleError> {
        Ok(call.store.funnels(call.site()).await?)
    }

    async fn add<S: CollectionStore>(
        call: Call<'_, S>,
        spec: FunnelSpec,
    ) -> Result<Added<Funnel>, ConsoleError> {
        let store = call.store;
        let funnel = spec.build(call.now)?;
        funnel::check_new(&store.funnels(call.site()).await?, &funnel)?;
        store.put_funnel(call.site(), &funnel).await?;
        Ok(Added::new(funnel.id.clone(), "funnel added", funnel))
    }

    async fn remove<S: CollectionStore>(
        call: Call<'_, S>,
        id: &str,
    ) -> Result<Removed, ConsoleError> {
        let store = call.store;
        if !store.funnels(call.site()).await?.iter().any(|f| f.id == id) {
            return Err(ConsoleError::not_found(
                "funnel_not_found",
                "no such funnel",
            ));
        }
        store.delete_funnel(call.site(), id).await?;
        Ok(Removed::new(id, "funnel removed"))
    }
}
