//! The typed request and response bodies of the site routes (sites, their
//! settings, goals, funnels, shared links, keys, members, invites, the
//! audit log). Goals, funnels, shared links and site changes are taken in
//! core's own spec types (`GoalSpec`, `FunnelSpec`, `ShareSpec`,
//! `SiteChange`), the same the CLI builds.

use serde::{Deserialize, Serialize};
use tally_core::Millis;
use tally_core::account::share::Share;
use tally_core::account::{AuditEntry, Invite, KeyScope, Membership, Role, token};
use tally_core::ingest::site::Site;
use tally_core::product::deletion::{Deletion, Stage};
use tally_store::sites::ApiKeyRecord;

/// The public id of a stored credential, invite or link: the first 12 hex
/// of its hash.
pub fn public_id(hash: &str) -> String {
    token::session_id(hash).to_owned()
}

/// `POST sites`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateSiteRequest {
    /// The id (default: from the first domain).
    #[serde(default)]
    pub id: Option<String>,
    /// The domains whose pages may send events.
    pub domains: Vec<String>,
    /// The IANA time zone (default `UTC`).
    #[serde(default)]
    pub timezone: Option<String>,
    /// Days raw events are kept.
    #[serde(default)]
    pub retention_days: Option<u32>,
    /// Days segments are kept, 0 forever.
    #[serde(default)]
    pub history_days: Option<u32>,
    /// Excluded client networks.
    #[serde(default)]
    pub exclude_networks: Option<Vec<String>>,
    /// Excluded page paths.
    #[serde(default)]
    pub exclude_paths: Option<Vec<String>>,
}

/// A site as the console shows it.
#[derive(Debug, Serialize)]
pub struct SiteBody {
    /// Site id.
    pub id: String,
    /// Domains.
    pub domains: Vec<String>,
    /// IANA time zone.
    pub timezone: String,
    /// Days raw events are kept.
    pub retention_days: u32,
    /// Days segments are kept, 0 forever.
    pub history_days: u32,
    /// Excluded networks (CIDR).
    pub exclude_networks: Vec<String>,
    /// Excluded paths.
    pub exclude_paths: Vec<String>,
    /// When it was created.
    pub created_at: Millis,
    /// The role the caller acts with.
    pub role: Role,
}

impl SiteBody {
    /// The body of a site for a caller of `role`.
    pub fn of(site: &Site, role: Role) -> Self {
        Self {
            id: site.id.clone(),
            domains: site.domains.clone(),
            timezone: site.time_zone.clone(),
            retention_days: site.retention_days,
            history_days: site.history_days,
            exclude_networks: site.exclude_networks.clone(),
            exclude_paths: site.exclude_paths.clone(),
            created_at: site.created_at,
            role,
        }
    }
}

/// `GET sites`.
#[derive(Debug, Serialize)]
pub struct SiteList {
    /// The sites the caller may see, in id order.
    pub sites: Vec<SiteBody>,
    /// Sites being deleted that the caller deleted (the instance owner:
    /// all), in id order.
    pub deleting: Vec<DeletionBody>,
}

/// A site being deleted, as `DELETE sites/{site}` answers and `GET sites`
/// lists it.
#[derive(Debug, Serialize)]
pub struct DeletionBody {
    /// The site id (not reusable until the deletion is done).
    pub id: String,
    /// When it was deleted.
    pub requested_at: Millis,
    /// When the job's sweep may start (ingest caches have forgotten it).
    pub sweep_after: Millis,
    /// Where it stands.
    pub stage: Stage,
    /// Percent of the raw hours swept.
    pub percent: u8,
    /// Items removed so far.
    pub removed: u64,
}

impl DeletionBody {
    /// The body of `deletion` at `now`.
    pub fn of(deletion: &Deletion, now: Millis) -> Self {
        Self {
            id: deletion.site.id.clone(),
            requested_at: deletion.requested_at,
            sweep_after: deletion.requested_at + tally_core::product::deletion::GRACE_MS,
            stage: deletion.stage(now),
            percent: deletion.percent(),
            removed: deletion.removed,
        }
    }
}

/// `GET sites/{site}/snippet`.
#[derive(Debug, Serialize)]
pub struct SnippetBody {
    /// The `<script>` tag.
    pub snippet: String,
    /// The ingest URL it loads from.
    pub ingest_url: String,
}

/// `GET sites/{site}/first-pageview`.
#[derive(Debug, Serialize)]
pub struct SeenBody {
    /// Whether an event arrived in the last `hours` hours.
    pub seen: bool,
    /// How many hours were looked at.
    pub hours: u32,
}

/// A shared link as listed (never its token).
#[derive(Debug, Serialize)]
pub struct ShareItem {
    /// Its id for `DELETE shares/{id}`.
    pub id: String,
    /// The token's first characters.
    pub prefix: String,
    /// Label.
    pub label: String,
    /// The filter every report of it is narrowed by.
    pub filter: String,
    /// The saved segment it is locked to, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
    /// When it was made.
    pub created_at: Millis,
    /// When it stops working.
    pub expires_at: Option<Millis>,
    /// Whether it asks for a password.
    pub password: bool,
    /// When it was revoked.
    pub revoked_at: Option<Millis>,
}

impl From<&Share> for ShareItem {
    fn from(s: &Share) -> Self {
        Self {
            id: public_id(&s.hash),
            prefix: s.prefix.clone(),
            label: s.label.clone(),
            filter: s.filter.clone(),
            segment: s.segment.clone(),
            created_at: s.created_at,
            expires_at: s.expires_at,
            password: s.password.is_some(),
            revoked_at: s.revoked_at,
        }
    }
}

/// `POST sites/{site}/shares`: the link, shown once.
#[derive(Debug, Serialize)]
pub struct ShareCreated {
    /// The dashboard URL with the token in its fragment.
    pub link: String,
    /// The token.
    pub token: String,
    /// The link as listed.
    pub share: ShareItem,
}

/// `POST sites/{site}/keys`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyRequest {
    /// A label.
    #[serde(default)]
    pub label: String,
    /// `read` (default) or `configure`.
    #[serde(default)]
    pub scope: KeyScope,
}

/// An API key as listed (never the key).
#[derive(Debug, Serialize)]
pub struct KeyItem {
    /// Its id for `DELETE keys/{id}`.
    pub id: String,
    /// The key's first characters.
    pub prefix: String,
    /// Label.
    pub label: String,
    /// `read` or `configure`.
    pub scope: KeyScope,
    /// The user who made it (none: the CLI).
    pub owner: Option<String>,
    /// Who made it, as the Keys tab shows it: the maker's email while they
    /// are a member (the key's power is capped by their role), `None`
    /// otherwise (see `owner`: made with the CLI, or by a former member,
    /// whose key does nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maker: Option<String>,
    /// When it was made.
    pub created_at: Millis,
    /// When it was revoked.
    pub revoked_at: Option<Millis>,
}

impl KeyItem {
    /// The item with its maker's email looked up among `members`.
    pub fn with_maker(record: &ApiKeyRecord, members: &[Membership]) -> Self {
        let maker = record.owner.as_deref().and_then(|uid| {
            members
                .iter()
                .find(|m| m.uid == uid)
                .map(|m| m.email.clone())
        });
        Self {
            maker,
            ..Self::from(record)
        }
    }
}

impl From<&ApiKeyRecord> for KeyItem {
    fn from(k: &ApiKeyRecord) -> Self {
        Self {
            id: public_id(&k.hash),
            prefix: k.prefix.clone(),
            label: k.label.clone(),
            scope: k.scope,
            owner: k.owner.clone(),
            maker: None,
            created_at: k.created_at,
            revoked_at: k.revoked_at,
        }
    }
}

/// `POST sites/{site}/keys`: the key, shown once.
#[derive(Debug, Serialize)]
pub struct KeyCreated {
    /// The key (`tk_…`).
    pub key: String,
    /// The key as listed.
    pub item: KeyItem,
}

/// A member as listed.
#[derive(Debug, Serialize)]
pub struct MemberItem {
    /// User id.
    pub uid: String,
    /// Email.
    pub email: String,
    /// Role on the site.
    pub role: Role,
}

impl From<&Membership> for MemberItem {
    fn from(m: &Membership) -> Self {
        Self {
            uid: m.uid.clone(),
            email: m.email.clone(),
            role: m.role,
        }
    }
}

/// `GET sites/{site}/members`.
#[derive(Debug, Serialize)]
pub struct MemberList {
    /// The site's members.
    pub members: Vec<MemberItem>,
}

/// `PATCH sites/{site}/members/{uid}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleRequest {
    /// The new role.
    pub role: Role,
}

/// `POST sites/{site}/invites`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InviteRequest {
    /// The role it grants.
    pub role: Role,
    /// Who it is for (mailed when the console has a mailer; only this
    /// address may accept it).
    #[serde(default)]
    pub email: Option<String>,
}

/// An invite as listed (never its token).
#[derive(Debug, Serialize)]
pub struct InviteItem {
    /// Its id for `DELETE invites/{id}`.
    pub id: String,
    /// The role it grants.
    pub role: Role,
    /// Who it is for.
    pub email: Option<String>,
    /// When it was made.
    pub created: Millis,
    /// When it ends.
    pub expires: Millis,
    /// Who made it (user id).
    pub by: String,
}

impl From<&Invite> for InviteItem {
    fn from(i: &Invite) -> Self {
        Self {
            id: public_id(&i.hash),
            role: i.role,
            email: i.email.clone(),
            created: i.created,
            expires: i.expires,
            by: i.by.clone(),
        }
    }
}

/// `POST sites/{site}/invites`: the link, shown once.
#[derive(Debug, Serialize)]
pub struct InviteCreated {
    /// Where to accept it (`{console}#invite={token}`).
    pub link: String,
    /// The token (`ti_…`).
    pub token: String,
    /// Whether it was mailed.
    pub mailed: bool,
    /// The invite as listed.
    pub invite: InviteItem,
}

/// `POST invites/accept`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcceptRequest {
    /// The invite token.
    pub token: String,
    /// A new user's email (default: the invite's).
    #[serde(default)]
    pub email: Option<String>,
    /// A new user's password.
    #[serde(default)]
    pub password: Option<String>,
}

/// `GET sites/{site}/audit`.
#[derive(Debug, Serialize)]
pub struct AuditBody {
    /// Entries, newest first.
    pub entries: Vec<AuditEntry>,
    /// Pass as `?before=` for the next page (none: the last page).
    pub next: Option<String>,
}
