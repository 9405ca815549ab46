//! One site collection: `GET|POST sites/{site}/{collection}` and
//! `DELETE sites/{site}/{collection}/{id}`, for every list a site keeps
//! (goals, funnels, affiliates, saved segments, annotations, email report
//! recipients, shared links, API keys, invites).
//!
//! Every request is the same steps, written once here: the caller's
//! permit for the collection's action ([`site_permit`]), the collection's
//! own admission (a person, not a key, where it says so), the body parsed
//! into its spec, the collection's work (core's spec, the store), the
//! audit entry, the typed answer. A collection is a short
//! `impl` [`Collection`] beside its domain's rules; the router names it
//! by its path word ([`serve`]).

use crate::audit;
use crate::body;
use crate::config::Config;
use crate::error::{ConsoleError, json_response};
use crate::permit::{Permit, site_permit};
use crate::reports::ReportStore;
use crate::site_store::SiteStore;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde::ser::SerializeMap;
use std::future::Future;
use tally_core::Millis;
use tally_core::account::{Action, AuditAction};

/// The store every collection reads and writes through.
pub trait CollectionStore: SiteStore + ReportStore {}
impl<S: SiteStore + ReportStore> CollectionStore for S {}

/// What a request asks of a collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op<'a> {
    /// `GET`: the list the caller may see.
    List,
    /// `POST`: a new item from the body.
    Add,
    /// `DELETE …/{id}`: an item removed (or revoked).
    Remove(&'a str),
}

/// What each request to a collection needs of the caller's role.
#[derive(Debug, Clone, Copy)]
pub struct Needs {
    /// To list.
    pub list: Action,
    /// To add.
    pub add: Action,
    /// To remove.
    pub remove: Action,
}

impl Needs {
    /// Members read it; admins (and `configure` keys) change it.
    pub const CONFIGURED: Self = Self {
        list: Action::Read,
        add: Action::Configure,
        remove: Action::Configure,
    };
    /// Only admins read or change it.
    pub const ADMINS: Self = Self::all(Action::Configure);
    /// Every member reads and changes it (the collection narrows).
    pub const MEMBERS: Self = Self::all(Action::Read);
    /// Owners only.
    pub const OWNERS: Self = Self::all(Action::ManageMembers);

    const fn all(action: Action) -> Self {
        Self {
            list: action,
            add: action,
            remove: action,
        }
    }
}

/// One request to a collection, as its methods see it: the store, the
/// configuration, the request, the caller's permit (which holds the site)
/// and the time.
pub struct Call<'a, S> {
    /// The store.
    pub store: &'a S,
    /// The console's configuration.
    pub config: &'a Config,
    /// The request (its query, its origin).
    pub request: &'a Request,
    /// Who asks, with which role, about which site.
    pub permit: &'a Permit,
    /// When.
    pub now: Millis,
}

impl<S> Call<'_, S> {
    /// The site's id.
    pub fn site(&self) -> &str {
        &self.permit.site.id
    }
}

impl<S> Clone for Call<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Call<'_, S> {}

/// An item added: what the audit entry names and what is answered.
#[derive(Debug)]
pub struct Added<T> {
    /// The id in the audit target (`goal:{id}`).
    pub id: String,
    /// The audit entry's detail.
    pub detail: String,
    /// 201, or 200 where a post changed an item already there.
    pub status: u16,
    /// The answer.
    pub answer: T,
}

impl<T> Added<T> {
    /// A new item (201).
    pub fn new(id: impl Into<String>, detail: impl Into<String>, answer: T) -> Self {
        Self {
            id: id.into(),
            detail: detail.into(),
            status: 201,
            answer,
        }
    }
}

/// An item removed: what the audit entry names.
#[derive(Debug)]
pub struct Removed {
    /// The id in the audit target.
    pub id: String,
    /// The audit entry's detail.
    pub detail: String,
}

impl Removed {
    /// The removal of `id`, told as `detail`.
    pub fn new(id: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            detail: detail.into(),
        }
    }
}

/// A list a site keeps, as the console lists, adds to and removes from it.
pub trait Collection {
    /// The audit target's prefix: `goal` in `goal:{id}`.
    const NOUN: &'static str;
    /// What each request needs of the caller's role.
    const NEEDS: Needs = Needs::CONFIGURED;
    /// How a change is audited.
    const AUDIT: AuditAction = AuditAction::SiteChanged;
    /// What a `POST` carries.
    type Spec: DeserializeOwned + Send;
    /// The key of the list a `GET` answers: `{"goals": [...]}`.
    const LISTED: &'static str;
    /// What the list holds.
    type Item: Serialize;
    /// What a `POST` answers.
    type Answer: Serialize;

    /// Refuses a caller the collection does not serve for `op` beyond its
    /// role (a key where only a person may act), before the body is read.
    fn admit(_permit: &Permit, _op: Op<'_>) -> Result<(), ConsoleError> {
        Ok(())
    }

    /// The list the caller may see.
    fn list<S: CollectionStore>(
        call: Call<'_, S>,
    ) -> impl Future<Output = Result<Vec<Self::Item>, ConsoleError>> + Send;

    /// Builds, checks and stores a new item.
    fn add<S: CollectionStore>(
        call: Call<'_, S>,
        spec: Self::Spec,
    ) -> impl Future<Output = Result<Added<Self::Answer>, ConsoleError>> + Send;

    /// Removes (or revokes) the item `id` names.
    fn remove<S: CollectionStore>(
        call: Call<'_, S>,
        id: &str,
    ) -> impl Future<Output = Result<Removed, ConsoleError>> + Send;
}

/// A collection's list as answered: `{"<LISTED>": [items]}`.
struct Listed<C: Collection> {
    items: Vec<C::Item>,
}

impl<C: Collection> Serialize for Listed<C> {
    fn serialize<Z: serde::Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(C::LISTED, &self.items)?;
        map.end()
    }
}

/// Serves one request to the collection `C` of `site`.
pub async fn serve<C: Collection, S: CollectionStore>(
    store: &S,
    config: &Config,
    request: &Request,
    site: &str,
    op: Op<'_>,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let action = match op {
        Op::List => C::NEEDS.list,
        Op::Add => C::NEEDS.add,
        Op::Remove(_) => C::NEEDS.remove,
    };
    let permit = site_permit(store, request, site, action, now).await?;
    C::admit(&permit, op)?;
    let call = Call {
        store,
        config,
        request,
        permit: &permit,
        now,
    };
    match op {
        Op::List => {
            let items = C::list(call).await?;
            Ok(json_response(200, &Listed::<C> { items }))
        }
        Op::Add => {
            let spec: C::Spec = body::parse(request, config.max_body)?;
            let added = C::add(call, spec).await?;
            let target = format!("{}:{}", C::NOUN, added.id);
            audit::record(store, &permit, C::AUDIT, &target, &added.detail, now).await?;
            Ok(json_response(added.status, &added.answer))
        }
        Op::Remove(id) => {
            let removed = C::remove(call, id).await?;
            let target = format!("{}:{}", C::NOUN, removed.id);
            audit::done(store, &permit, C::AUDIT, &target, &removed.detail, now).await
        }
    }
}
