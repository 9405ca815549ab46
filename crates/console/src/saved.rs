//! Saved segments and annotations of a site (issue 23):
//! `GET|POST sites/{site}/segments`, `DELETE sites/{site}/segments/{id}`,
//! the same for `annotations`.
//!
//! Listing is a read and shows the site-wide items and the caller's own
//! personal ones. A site-wide item is configured (admins, owners,
//! `configure` keys); a personal one (`"personal": true`) any member may
//! make and only its maker sees or removes (another's answers 404, as if
//! it did not exist); keys make none. An owner lists every member's
//! personal items with `?everyone=true` and may remove any of them; a
//! member's personal items go when their membership does. Personal items
//! are capped per member and do not count toward the site's caps
//! ([`saved_segment::MAX_PERSONAL_SEGMENTS`],
//! [`tally_core::annotation::MAX_PERSONAL_ANNOTATIONS`]). Definitions are core's
//! [`SegmentSpec`] and [`AnnotationSpec`], as `tally segment add` and
//! `tally annotation add` build them. A segment a live shared link is
//! locked to is not removed (409 `segment_in_use`). Every change is
//! audited.

use crate::audit;
use crate::auth::random;
use crate::body;
use crate::config::Config;
use crate::error::{ConsoleError, json_response};
use crate::permit::{Actor, Permit, site_permit};
use crate::site_store::SiteStore;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use tally_core::Millis;
use tally_core::account::{Action, AuditAction};
use tally_core::annotation::{Annotation, AnnotationError, AnnotationSpec};
use tally_core::saved_segment::{self, SavedSegment, SegmentError, SegmentSpec};

impl From<SegmentError> for ConsoleError {
    fn from(e: SegmentError) -> Self {
        Self::new(e.status(), e.code(), e.to_string())
    }
}

impl From<AnnotationError> for ConsoleError {
    fn from(e: AnnotationError) -> Self {
        Self::new(e.status(), e.code(), e.to_string())
    }
}

/// `GET sites/{site}/segments`.
#[derive(Debug, Serialize)]
pub struct SegmentList {
    /// What the caller sees.
    pub segments: Vec<SavedSegment>,
}

/// `GET sites/{site}/annotations`.
#[derive(Debug, Serialize)]
pub struct AnnotationList {
    /// What the caller sees, oldest first.
    pub annotations: Vec<Annotation>,
}

/// The signed-in caller's user id (keys have none).
fn uid(permit: &Permit) -> Option<&str> {
    match &permit.actor {
        Actor::User(signed) => Some(&signed.user.id),
        Actor::Key(_) => None,
    }
}

/// Whether the caller sees every member's personal items: owners (who
/// manage members), and only when they ask (`?everyone=true` on a list;
/// a removal by id looks among all for them).
fn sees_everyone(permit: &Permit) -> bool {
    permit.role.allows(Action::ManageMembers) && uid(permit).is_some()
}

/// Whether the list asks for every member's personal items: `403` for a
/// caller who may not see them.
fn everyone_asked(request: &Request, permit: &Permit) -> Result<bool, ConsoleError> {
    let asked = body::query_param(request, "everyone").is_some_and(|v| v == "true");
    if asked && !sees_everyone(permit) {
        return Err(ConsoleError::forbidden(
            "only a site owner sees every member's personal items",
        ));
    }
    Ok(asked)
}

/// Who makes an item: the user for a personal one (keys make none), and
/// for a site-wide one a caller who configures.
fn creator(permit: &Permit, personal: bool) -> Result<String, ConsoleError> {
    if personal {
        return Ok(permit.user()?.user.id.clone());
    }
    if !permit.role.allows(Action::Configure) {
        return Err(ConsoleError::forbidden(format!(
            "a site {} may only make personal ones",
            permit.role.as_str()
        )));
    }
    Ok(permit.actor.audit_name().0)
}

/// Whether the caller may remove an item they see: their own personal
/// one, or a site-wide one when they configure.
fn may_remove(permit: &Permit, owner: Option<&str>) -> Result<(), ConsoleError> {
    if owner.is_none() && !permit.role.allows(Action::Configure) {
        return Err(ConsoleError::forbidden(format!(
            "a site {} may not remove site-wide ones",
            permit.role.as_str()
        )));
    }
    Ok(())
}

fn kind(personal: bool) -> &'static str {
    if personal { "personal" } else { "site-wide" }
}

/// `GET sites/{site}/segments`.
pub async fn segments<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Read, now).await?;
    let everyone = everyone_asked(request, &permit)?;
    let uid = uid(&permit);
    let mut segments = store.saved_segments(site).await?;
    segments.retain(|s| everyone || s.visible_to(uid));
    Ok(json_response(200, &SegmentList { segments }))
}

/// `POST sites/{site}/segments`: a [`SegmentSpec`]; answers the segment.
pub async fn add_segment<S: SiteStore>(
    store: &S,
    config: &Config,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Read, now).await?;
    let spec: SegmentSpec = body::parse(request, config.max_body)?;
    let by = creator(&permit, spec.personal)?;
    let segment = spec.build(u32::from_le_bytes(random()?), &by, now)?;
    saved_segment::check_new(&store.saved_segments(site).await?, &segment)?;
    store.put_saved_segment(site, &segment).await?;
    let target = format!("segment:{}", segment.id);
    let detail = format!("{} segment added", kind(segment.personal()));
    audit::record(
        store,
        &permit,
        AuditAction::SiteChanged,
        &target,
        &detail,
        now,
    )
    .await?;
    Ok(json_response(201, &segment))
}

/// `DELETE sites/{site}/segments/{id}`.
pub async fn remove_segment<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    id: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Read, now).await?;
    let segments = store.saved_segments(site).await?;
    let segment = match segments.iter().find(|s| s.id == id) {
        Some(s) if sees_everyone(&permit) => s,
        _ => saved_segment::find(&segments, id, uid(&permit))?,
    };
    may_remove(&permit, segment.owner.as_deref())?;
    saved_segment::check_removable(&store.shares(site).await?, id, now)?;
    store.delete_saved_segment(site, id).await?;
    let target = format!("segment:{id}");
    let detail = format!("{} segment removed", kind(segment.personal()));
    audit::done(
        store,
        &permit,
        AuditAction::SiteChanged,
        &target,
        &detail,
        now,
    )
    .await
}

/// `GET sites/{site}/annotations`.
pub async fn annotations<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Read, now).await?;
    let everyone = everyone_asked(request, &permit)?;
    let uid = uid(&permit);
    let mut annotations = store.annotations(site).await?;
    annotations.retain(|a| everyone || a.visible_to(uid));
    Ok(json_response(200, &AnnotationList { annotations }))
}

/// `POST sites/{site}/annotations`: an [`AnnotationSpec`]; answers the
/// annotation.
pub async fn add_annotation<S: SiteStore>(
    store: &S,
    config: &Config,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Read, now).await?;
    let spec: AnnotationSpec = body::parse(request, config.max_body)?;
    let by = creator(&permit, spec.personal)?;
    let note = spec.build(u32::from_le_bytes(random()?), &by, now)?;
    tally_core::annotation::check_new(&store.annotations(site).await?, &note)?;
    store.put_annotation(site, &note).await?;
    let target = format!("annotation:{}", note.id);
    let detail = format!(
        "{} annotation added for {}",
        kind(note.owner.is_some()),
        note.date
    );
    audit::record(
        store,
        &permit,
        AuditAction::SiteChanged,
        &target,
        &detail,
        now,
    )
    .await?;
    Ok(json_response(201, &note))
}

/// `DELETE sites/{site}/annotations/{id}`.
pub async fn remove_annotation<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    id: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::Read, now).await?;
    let uid = uid(&permit);
    let everyone = sees_everyone(&permit);
    let note = store
        .annotations(site)
        .await?
        .into_iter()
        .find(|a| a.id == id && (everyone || a.visible_to(uid)))
        .ok_or_else(|| ConsoleError::not_found("annotation_not_found", "no such annotation"))?;
    may_remove(&permit, note.owner.as_deref())?;
    store.delete_annotation(site, &note).await?;
    let target = format!("annotation:{id}");
    let detail = format!("{} annotation removed", kind(note.owner.is_some()));
    audit::done(
        store,
        &permit,
        AuditAction::SiteChanged,
        &target,
        &detail,
        now,
    )
    .await
}
