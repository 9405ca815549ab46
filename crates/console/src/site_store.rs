//! What the console's site routes need from storage beyond accounts
//! ([`SiteStore`], on top of [`ConsoleStore`]): sites, goals, funnels,
//! shared links, API keys, memberships, invites, affiliates, the audit log and a
//! bounded look at recent raw events; implemented for
//! [`tally_store::Store`] by the same functions the CLI calls.

use crate::store::{ConsoleStore, Fut};
use tally_core::Millis;
use tally_core::account::share::Share;
use tally_core::account::{AuditEntry, Invite, Membership, User};
use tally_core::engine::funnel::Funnel;
use tally_core::engine::goal::Goal;
use tally_core::ingest::site::Site;
use tally_core::product::annotation::Annotation;
use tally_core::product::conversion::Affiliate;
use tally_core::product::deletion::Deletion;
use tally_core::product::saved_segment::SavedSegment;
use tally_store::Store;
use tally_store::accounts::AuditLog;
use tally_store::sites::ApiKeyRecord;

/// An audit page: entries newest first, and where the next page starts.
pub type AuditPage = (Vec<AuditEntry>, Option<String>);

/// What the site routes need from storage.
pub trait SiteStore: ConsoleStore {
    /// A site (strongly consistent: a change is read back at once).
    fn site(&self, id: &str) -> impl Fut<Option<Site>>;
    /// Creates a site: an error when the id is taken.
    fn create_site(&self, site: &Site) -> impl Fut<()>;
    /// Writes a site as read and changed, unless its shard plan changed
    /// meanwhile (`false`: read again).
    fn update_site(&self, site: &Site) -> impl Fut<bool>;
    /// Replaces a site's item with its deletion record: whether the site
    /// was there.
    fn begin_deletion(&self, deletion: &Deletion) -> impl Fut<bool>;
    /// The sites being deleted.
    fn deletions(&self) -> impl Fut<Vec<Deletion>>;
    /// The deletion holding an id, if any.
    fn deletion(&self, id: &str) -> impl Fut<Option<Deletion>>;
    /// A site's goals.
    fn goals(&self, site: &str) -> impl Fut<Vec<Goal>>;
    /// Stores a goal.
    fn put_goal(&self, site: &str, goal: &Goal) -> impl Fut<()>;
    /// Removes a goal.
    fn delete_goal(&self, site: &str, id: &str) -> impl Fut<()>;
    /// A site's funnels.
    fn funnels(&self, site: &str) -> impl Fut<Vec<Funnel>>;
    /// Stores a funnel.
    fn put_funnel(&self, site: &str, funnel: &Funnel) -> impl Fut<()>;
    /// Removes a funnel.
    fn delete_funnel(&self, site: &str, id: &str) -> impl Fut<()>;
    /// A site's saved segments (everyone's).
    fn saved_segments(&self, site: &str) -> impl Fut<Vec<SavedSegment>>;
    /// Stores a saved segment.
    fn put_saved_segment(&self, site: &str, segment: &SavedSegment) -> impl Fut<()>;
    /// Removes a saved segment.
    fn delete_saved_segment(&self, site: &str, id: &str) -> impl Fut<()>;
    /// A site's annotations (everyone's), oldest first.
    fn annotations(&self, site: &str) -> impl Fut<Vec<Annotation>>;
    /// Stores an annotation.
    fn put_annotation(&self, site: &str, note: &Annotation) -> impl Fut<()>;
    /// Removes an annotation.
    fn delete_annotation(&self, site: &str, note: &Annotation) -> impl Fut<()>;
    /// A site's shared links.
    fn shares(&self, site: &str) -> impl Fut<Vec<Share>>;
    /// Stores a shared link.
    fn put_share(&self, site: &str, share: &Share) -> impl Fut<()>;
    /// A site's API keys.
    fn api_keys(&self, site: &str) -> impl Fut<Vec<ApiKeyRecord>>;
    /// An API key by its hash.
    fn api_key(&self, site: &str, hash: &str) -> impl Fut<Option<ApiKeyRecord>>;
    /// Stores an API key record.
    fn put_api_key(&self, site: &str, record: &ApiKeyRecord) -> impl Fut<()>;
    /// A user's membership of a site.
    fn membership(&self, site: &str, uid: &str) -> impl Fut<Option<Membership>>;
    /// A site's members.
    fn members(&self, site: &str) -> impl Fut<Vec<Membership>>;
    /// Writes a membership's two items.
    fn put_membership(&self, membership: &Membership) -> impl Fut<()>;
    /// Deletes a membership's two items.
    fn delete_membership(&self, site: &str, uid: &str) -> impl Fut<()>;
    /// Stores an invite.
    fn put_invite(&self, invite: &Invite) -> impl Fut<()>;
    /// An invite by its token's hash.
    fn invite(&self, site: &str, hash: &str) -> impl Fut<Option<Invite>>;
    /// A site's invites.
    fn invites(&self, site: &str) -> impl Fut<Vec<Invite>>;
    /// Deletes an invite: whether it existed.
    fn delete_invite(&self, site: &str, hash: &str) -> impl Fut<bool>;
    /// Spends a live invite and writes the membership, in one transaction.
    fn accept_invite(
        &self,
        invite: &Invite,
        membership: &Membership,
        now: Millis,
    ) -> impl Fut<bool>;
    /// [`SiteStore::accept_invite`] and creating the user, in one
    /// transaction.
    fn accept_invite_as_new_user(
        &self,
        invite: &Invite,
        user: &User,
        membership: &Membership,
        now: Millis,
    ) -> impl Fut<bool>;
    /// A page of a log, newest first.
    fn audit(&self, log: &AuditLog, limit: usize, before: Option<&str>) -> impl Fut<AuditPage>;
    /// Whether any raw event of the site is stored in these UTC hours.
    fn any_event_in_hours(&self, site: &Site, hours: Vec<Millis>, now: Millis) -> impl Fut<bool>;
    /// A site's affiliates, in slug order.
    fn affiliates(&self, site: &str) -> impl Fut<Vec<Affiliate>>;
    /// Defines an affiliate unless its slug is taken: whether it was stored.
    fn create_affiliate(&self, site: &str, affiliate: &Affiliate) -> impl Fut<bool>;
    /// Removes an affiliate (its conversions stay): whether there was one.
    fn delete_affiliate(&self, site: &str, slug: &str) -> impl Fut<bool>;
}

impl SiteStore for Store {
    fn site(&self, id: &str) -> impl Fut<Option<Site>> {
        Store::site_consistent(self, id)
    }
    fn create_site(&self, site: &Site) -> impl Fut<()> {
        Store::create_site(self, site)
    }
    fn update_site(&self, site: &Site) -> impl Fut<bool> {
        Store::update_site(self, site)
    }
    fn begin_deletion(&self, deletion: &Deletion) -> impl Fut<bool> {
        Store::begin_deletion(self, deletion)
    }
    fn deletions(&self) -> impl Fut<Vec<Deletion>> {
        Store::deletions(self)
    }
    fn deletion(&self, id: &str) -> impl Fut<Option<Deletion>> {
        Store::deletion(self, id)
    }
    fn goals(&self, site: &str) -> impl Fut<Vec<Goal>> {
        Store::goals(self, site)
    }
    fn put_goal(&self, site: &str, goal: &Goal) -> impl Fut<()> {
        Store::put_goal(self, site, goal)
    }
    fn delete_goal(&self, site: &str, id: &str) -> impl Fut<()> {
        Store::delete_goal(self, site, id)
    }
    fn funnels(&self, site: &str) -> impl Fut<Vec<Funnel>> {
        Store::funnels(self, site)
    }
    fn put_funnel(&self, site: &str, funnel: &Funnel) -> impl Fut<()> {
        Store::put_funnel(self, site, funnel)
    }
    fn delete_funnel(&self, site: &str, id: &str) -> impl Fut<()> {
        Store::delete_funnel(self, site, id)
    }
    fn saved_segments(&self, site: &str) -> impl Fut<Vec<SavedSegment>> {
        Store::saved_segments(self, site)
    }
    fn put_saved_segment(&self, site: &str, segment: &SavedSegment) -> impl Fut<()> {
        Store::put_saved_segment(self, site, segment)
    }
    fn delete_saved_segment(&self, site: &str, id: &str) -> impl Fut<()> {
        Store::delete_saved_segment(self, site, id)
    }
    fn annotations(&self, site: &str) -> impl Fut<Vec<Annotation>> {
        Store::annotations(self, site, None)
    }
    fn put_annotation(&self, site: &str, note: &Annotation) -> impl Fut<()> {
        Store::put_annotation(self, site, note)
    }
    fn delete_annotation(&self, site: &str, note: &Annotation) -> impl Fut<()> {
        Store::delete_annotation(self, site, note)
    }
    fn shares(&self, site: &str) -> impl Fut<Vec<Share>> {
        Store::shares(self, site)
    }
    fn put_share(&self, site: &str, share: &Share) -> impl Fut<()> {
        Store::put_share(self, site, share)
    }
    fn api_keys(&self, site: &str) -> impl Fut<Vec<ApiKeyRecord>> {
        Store::api_keys(self, site)
    }
    fn api_key(&self, site: &str, hash: &str) -> impl Fut<Option<ApiKeyRecord>> {
        Store::api_key(self, site, hash)
    }
    fn put_api_key(&self, site: &str, record: &ApiKeyRecord) -> impl Fut<()> {
        Store::put_api_key(self, site, record)
    }
    fn membership(&self, site: &str, uid: &str) -> impl Fut<Option<Membership>> {
        Store::membership(self, site, uid)
    }
    fn members(&self, site: &str) -> impl Fut<Vec<Membership>> {
        Store::members(self, site)
    }
    fn put_membership(&self, membership: &Membership) -> impl Fut<()> {
        Store::put_membership(self, membership)
    }
    fn delete_membership(&self, site: &str, uid: &str) -> impl Fut<()> {
        Store::delete_membership(self, site, uid)
    }
    fn put_invite(&self, invite: &Invite) -> impl Fut<()> {
        Store::put_invite(self, invite)
    }
    fn invite(&self, site: &str, hash: &str) -> impl Fut<Option<Invite>> {
        Store::invite(self, site, hash)
    }
    fn invites(&self, site: &str) -> impl Fut<Vec<Invite>> {
        Store::invites(self, site)
    }
    fn delete_invite(&self, site: &str, hash: &str) -> impl Fut<bool> {
        Store::delete_invite(self, site, hash)
    }
    fn accept_invite(
        &self,
        invite: &Invite,
        membership: &Membership,
        now: Millis,
    ) -> impl Fut<bool> {
        Store::accept_invite(self, invite, membership, now)
    }
    fn accept_invite_as_new_user(
        &self,
        invite: &Invite,
        user: &User,
        membership: &Membership,
        now: Millis,
    ) -> impl Fut<bool> {
        Store::accept_invite_as_new_user(self, invite, user, membership, now)
    }
    fn audit(&self, log: &AuditLog, limit: usize, before: Option<&str>) -> impl Fut<AuditPage> {
        Store::audit(self, log, limit, before)
    }
    fn any_event_in_hours(&self, site: &Site, hours: Vec<Millis>, now: Millis) -> impl Fut<bool> {
        Store::any_event_in_hours(self, site, hours, now)
    }
    fn affiliates(&self, site: &str) -> impl Fut<Vec<Affiliate>> {
        Store::affiliates(self, site)
    }
    fn create_affiliate(&self, site: &str, affiliate: &Affiliate) -> impl Fut<bool> {
        Store::create_affiliate(self, site, affiliate)
    }
    fn delete_affiliate(&self, site: &str, slug: &str) -> impl Fut<bool> {
        Store::delete_affiliate(self, site, slug)
    }
}
