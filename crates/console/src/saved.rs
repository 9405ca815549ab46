//! Saved segments and annotations of a site (issue 23):
//! `GET|POST sites/{site}/segments`, `DELETE sites/{site}/segments/{id}`,
//! the same for `annotations` (served by [`crate::collection`]).
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
//! [`tally_core::product::annotation::MAX_PERSONAL_ANNOTATIONS`]). Definitions are core's
//! [`SegmentSpec`] and [`AnnotationSpec`], as `tally segment add` and
//! `tally annotation add` build them. A segment a live shared link is
//! locked to is not removed (409 `segment_in_use`). Every change is
//! audited.

use crate::auth::random;
use crate::body;
use crate::collection::{Added, Call, Collection, CollectionStore, Needs, Removed};
use crate::error::ConsoleError;
use crate::permit::{Actor, Permit};
use lambda_http::Request;
use tally_core::account::Action;
use tally_core::product::annotation::{self, Annotation, AnnotationError, AnnotationSpec};
use tally_core::product::saved_segment::{self, SavedSegment, SegmentError, SegmentSpec};

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

/// `sites/{site}/segments`.
pub struct Segments;

impl Collection for Segments {
    const NOUN: &'static str = "segment";
    const LISTED: &'static str = "segments";
    const NEEDS: Needs = Needs::MEMBERS;
    type Spec = SegmentSpec;
    type Item = SavedSegment;
    type Answer = SavedSegment;

    async fn list<S: CollectionStore>(
        call: Call<'_, S>,
    ) -> Result<Vec<SavedSegment>, ConsoleError> {
        let everyone = everyone_asked(call.request, call.permit)?;
        let uid = uid(call.permit);
        let mut segments = call.store.saved_segments(call.site()).await?;
        segments.retain(|s| everyone || s.visible_to(uid));
        Ok(segments)
    }

    async fn add<S: CollectionStore>(
        call: Call<'_, S>,
        spec: SegmentSpec,
    ) -> Result<Added<SavedSegment>, ConsoleError> {
        let store = call.store;
        let by = creator(call.permit, spec.personal)?;
        let segment = spec.build(u32::from_le_bytes(random()?), &by, call.now)?;
        saved_segment::check_new(&store.saved_segments(call.site()).await?, &segment)?;
        store.put_saved_segment(call.site(), &segment).await?;
        let detail = format!("{} segment added", kind(segment.personal()));
        Ok(Added::new(segment.id.clone(), detail, segment))
    }

    /// A segment a live shared link is locked to stays (409
    /// `segment_in_use`).
    async fn remove<S: CollectionStore>(
        call: Call<'_, S>,
        id: &str,
    ) -> Result<Removed, ConsoleError> {
        let store = call.store;
        let segments = store.saved_segments(call.site()).await?;
        let segment = match segments.iter().find(|s| s.id == id) {
            Some(s) if sees_everyone(call.permit) => s,
            _ => saved_segment::find(&segments, id, uid(call.permit))?,
        };
        may_remove(call.permit, segment.owner.as_deref())?;
        saved_segment::check_removable(&store.shares(call.site()).await?, id, call.now)?;
        store.delete_saved_segment(call.site(), id).await?;
        Ok(Removed::new(
            id,
            format!("{} segment removed", kind(segment.personal())),
        ))
    }
}

/// `sites/{site}/annotations`.
pub struct Annotations;

impl Collection for Annotations {
    const NOUN: &'static str = "annotation";
    const LISTED: &'static str = "annotations";
    const NEEDS: Needs = Needs::MEMBERS;
    type Spec = AnnotationSpec;
    type Item = Annotation;
    type Answer = Annotation;

    async fn list<S: CollectionStore>(call: Call<'_, S>) -> Result<Vec<Annotation>, ConsoleError> {
        let everyone = everyone_asked(call.request, call.permit)?;
        let uid = uid(call.permit);
        let mut annotations = call.store.annotations(call.site()).await?;
        annotations.retain(|a| everyone || a.visible_to(uid));
        Ok(annotations)
    }

    async fn add<S: CollectionStore>(
        call: Call<'_, S>,
        spec: AnnotationSpec,
    ) -> Result<Added<Annotation>, ConsoleError> {
        let store = call.store;
        let by = creator(call.permit, spec.personal)?;
        let note = spec.build(u32::from_le_bytes(random()?), &by, call.now)?;
        annotation::check_new(&store.annotations(call.site()).await?, &note)?;
        store.put_annotation(call.site(), &note).await?;
        let detail = format!(
            "{} annotation added for {}",
            kind(note.owner.is_some()),
            note.date
        );
        Ok(Added::new(note.id.clone(), detail, note))
    }

    async fn remove<S: CollectionStore>(
        call: Call<'_, S>,
        id: &str,
    ) -> Result<Removed, ConsoleError> {
        let store = call.store;
        let uid = uid(call.permit);
        let everyone = sees_everyone(call.permit);
        let note = store
            .annotations(&call.permit.site.id)
            .await?
            .into_iter()
            .find(|a| a.id == id && (everyone || a.visible_to(uid)))
            .ok_or_else(|| ConsoleError::not_found("annotation_not_found", "no such annotation"))?;
        may_remove(call.permit, note.owner.as_deref())?;
        store.delete_annotation(&call.permit.site.id, &note).await?;
        Ok(Removed::new(
            id,
            format!("{} annotation removed", kind(note.owner.is_some())),
        ))
    }
}
