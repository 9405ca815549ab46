//! Members and invitations of a site (owners only): `GET members`,
//! `GET|PATCH|DELETE members/{uid}`, `GET|POST invites`,
//! `DELETE invites/{id}` under `sites/{site}/`, and
//! `POST invites/accept {token, email?, password?}`.
//!
//! A site keeps at least one owner: neither a role change nor a removal
//! may take away the last. An invite is a `ti_…` token (only its hash
//! stored) good once for 7 days; when it names an email, only that
//! address may accept it, and it is mailed there when the console has a
//! mailer. Accepting spends it with a conditional delete in the
//! transaction that writes the membership (and, for a new user, the user
//! and their email), so a second use, a revoked or an expired invite
//! changes nothing (410 `invite_invalid`).

use crate::audit;
use crate::auth::{self, random};
use crate::body::{self, Done};
use crate::collection::{Added, Call, Collection, CollectionStore, Needs, Op, Removed};
use crate::config::Config;
use crate::error::{ConsoleError, json_response};
use crate::login::hash_password;
use crate::mail;
use crate::permit::{Permit, site_permit};
use crate::site_body::{
    AcceptRequest, InviteCreated, InviteItem, InviteRequest, MemberItem, MemberList, RoleRequest,
    public_id,
};
use crate::site_store::SiteStore;
use crate::sites::public_origin;
use lambda_http::{Body, Request, Response};
use tally_core::Millis;
use tally_core::account::record::{INVITE_MS, valid_email};
use tally_core::account::{Action, AuditAction, Invite, Membership, Role, User, token};
use tally_store::accounts::AuditLog;

/// The console page invite links open (`page::PATH`).
pub const CONSOLE_PAGE: &str = "/console";

fn member_not_found() -> ConsoleError {
    ConsoleError::not_found("member_not_found", "no such member")
}

fn last_owner() -> ConsoleError {
    ConsoleError::new(
        409,
        "last_owner",
        "a site keeps at least one owner: make someone else owner first",
    )
}

/// Whether `uid` is the site's only owner.
async fn only_owner<S: SiteStore>(store: &S, site: &str, uid: &str) -> Result<bool, ConsoleError> {
    let owners: Vec<String> = store
        .members(site)
        .await?
        .into_iter()
        .filter(|m| m.role == Role::Owner)
        .map(|m| m.uid)
        .collect();
    Ok(owners == [uid])
}

/// `GET sites/{site}/members`.
pub async fn members<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    site_permit(store, request, site, Action::ManageMembers, now).await?;
    let members = store
        .members(site)
        .await?
        .iter()
        .map(MemberItem::from)
        .collect();
    Ok(json_response(200, &MemberList { members }))
}

/// `GET sites/{site}/members/{uid}`.
pub async fn member<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    uid: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    site_permit(store, request, site, Action::ManageMembers, now).await?;
    let m = store
        .membership(site, uid)
        .await?
        .ok_or_else(member_not_found)?;
    Ok(json_response(200, &MemberItem::from(&m)))
}

/// `PATCH sites/{site}/members/{uid} {role}`.
pub async fn set_role<S: SiteStore>(
    store: &S,
    config: &Config,
    request: &Request,
    site: &str,
    uid: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::ManageMembers, now).await?;
    let body: RoleRequest = body::parse(request, config.max_body)?;
    let mut m = store
        .membership(site, uid)
        .await?
        .ok_or_else(member_not_found)?;
    if m.role == body.role {
        return Ok(json_response(200, &MemberItem::from(&m)));
    }
    if m.role == Role::Owner && only_owner(store, site, uid).await? {
        return Err(last_owner());
    }
    let detail = format!("role {} -> {}", m.role.as_str(), body.role.as_str());
    m.role = body.role;
    store.put_membership(&m).await?;
    audit_member(store, &permit, uid, &detail, now).await?;
    Ok(json_response(200, &MemberItem::from(&m)))
}

/// `DELETE sites/{site}/members/{uid}`.
pub async fn remove<S: SiteStore>(
    store: &S,
    request: &Request,
    site: &str,
    uid: &str,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    let permit = site_permit(store, request, site, Action::ManageMembers, now).await?;
    let m = store
        .membership(site, uid)
        .await?
        .ok_or_else(member_not_found)?;
    if m.role == Role::Owner && only_owner(store, site, uid).await? {
        return Err(last_owner());
    }
    store.delete_membership(site, uid).await?;
    // Their personal segments and annotations go with the membership.
    let segments = store.saved_segments(site).await?;
    let theirs = segments.iter().filter(|s| s.owner.as_deref() == Some(uid));
    let mut gone = 0;
    for segment in theirs {
        store.delete_saved_segment(site, &segment.id).await?;
        gone += 1;
    }
    for note in store.annotations(site).await? {
        if note.owner.as_deref() == Some(uid) {
            store.delete_annotation(site, &note).await?;
            gone += 1;
        }
    }
    let detail = format!("removed, with {gone} personal item(s)");
    audit_member(store, &permit, uid, &detail, now).await?;
    Ok(json_response(200, &Done { ok: true }))
}

async fn audit_member<S: SiteStore>(
    store: &S,
    permit: &Permit,
    uid: &str,
    detail: &str,
    now: Millis,
) -> Result<(), ConsoleError> {
    let target = format!("user:{uid}");
    audit::record(
        store,
        permit,
        AuditAction::MemberChanged,
        &target,
        detail,
        now,
    )
    .await
}

/// `sites/{site}/invites` (owners only; served by [`crate::collection`]).
pub struct Invites;

impl Collection for Invites {
    const NOUN: &'static str = "invite";
    const LISTED: &'static str = "invites";
    const NEEDS: Needs = Needs::OWNERS;
    const AUDIT: AuditAction = AuditAction::InviteChanged;
    type Spec = InviteRequest;
    type Item = InviteItem;
    type Answer = InviteCreated;

    /// Only a person invites.
    fn admit(permit: &Permit, op: Op<'_>) -> Result<(), ConsoleError> {
        match op {
            Op::Add => permit.user().map(|_| ()),
            _ => Ok(()),
        }
    }

    /// The live ones.
    async fn list<S: CollectionStore>(call: Call<'_, S>) -> Result<Vec<InviteItem>, ConsoleError> {
        let invites = call
            .store
            .invites(call.site())
            .await?
            .iter()
            .filter(|i| i.expires > call.now)
            .map(InviteItem::from)
            .collect();
        Ok(invites)
    }

    /// `{role, email?}`: the link and token, once; mailed to `email` when
    /// the console has a mailer.
    async fn add<S: CollectionStore>(
        call: Call<'_, S>,
        body: InviteRequest,
    ) -> Result<Added<InviteCreated>, ConsoleError> {
        let inviter = &call.permit.user()?.user;
        let email = body
            .email
            .as_deref()
            .map(|e| {
                valid_email(e).ok_or_else(|| {
                    ConsoleError::bad_request("invalid_email", "not an email address")
                })
            })
            .transpose()?;
        let invite_token = token::invite_token(call.site(), &random::<20>()?);
        let invite = Invite {
            hash: token::hash_token(&invite_token),
            site: call.site().to_owned(),
            role: body.role,
            email: email.clone(),
            created: call.now,
            expires: call.now + INVITE_MS,
            by: inviter.id.clone(),
        };
        call.store.put_invite(&invite).await?;
        let item = InviteItem::from(&invite);
        let link = format!(
            "{}{}#invite={invite_token}",
            public_origin(call.config.public_url.as_deref(), call.request),
            CONSOLE_PAGE
        );
        let mut mailed = false;
        if let (Some(mailer), Some(to)) = (&call.config.mailer, &email) {
            let message =
                mail::invitation(to, call.site(), body.role.as_str(), &link, &inviter.email);
            match mailer.send(&message).await {
                Ok(()) => mailed = true,
                // The link is answered anyway: the inviter can pass it on.
                Err(e) => tracing::warn!(error = %e, "the invitation was not mailed"),
            }
        }
        let detail = format!("invited as {}", body.role.as_str());
        let created = InviteCreated {
            link,
            token: invite_token,
            mailed,
            invite: item,
        };
        Ok(Added::new(created.invite.id.clone(), detail, created))
    }

    async fn remove<S: CollectionStore>(
        call: Call<'_, S>,
        id: &str,
    ) -> Result<Removed, ConsoleError> {
        let store = call.store;
        let invite = store
            .invites(call.site())
            .await?
            .into_iter()
            .find(|i| public_id(&i.hash) == id)
            .ok_or_else(|| ConsoleError::not_found("invite_not_found", "no such invite"))?;
        store.delete_invite(call.site(), &invite.hash).await?;
        Ok(Removed::new(id, "invite revoked"))
    }
}

fn invite_invalid() -> ConsoleError {
    ConsoleError::new(
        410,
        "invite_invalid",
        "this invitation was used, revoked or has expired",
    )
}

/// `POST invites/accept {token, email?, password?}`: a signed-in user
/// joins the site; anyone else becomes a new user with `password` (and
/// `email`, default the invite's) and is signed in. Answers `me`.
pub async fn accept<S: SiteStore>(
    store: &S,
    config: &Config,
    request: &Request,
    now: Millis,
) -> Result<Response<Body>, ConsoleError> {
    auth::check_origin(request)?;
    let body: AcceptRequest = body::parse(request, config.max_body)?;
    let site = token::invite_site(&body.token).ok_or_else(invite_invalid)?;
    let invite = store
        .invite(site, &token::hash_token(&body.token))
        .await?
        .filter(|i| i.expires > now)
        .ok_or_else(invite_invalid)?;
    let has_session =
        auth::request_cookie(request, tally_core::account::cookie::SESSION_COOKIE).is_some();
    let signed = if has_session {
        match auth::signed_in(store, request, now).await {
            Ok(signed) => Some(signed),
            Err(e) if e.status == 401 => None,
            Err(e) => return Err(e),
        }
    } else {
        None
    };
    let for_email = |email: &str| invite.email.as_deref().is_none_or(|e| e == email);
    let (user, created) = match signed {
        Some(signed) => {
            if !for_email(&signed.user.email) {
                return Err(ConsoleError::forbidden(
                    "this invitation is for another email address",
                ));
            }
            let mut membership = membership_of(&invite, &signed.user);
            // A member already keeps the stronger of both roles.
            if let Some(m) = store.membership(site, &signed.user.id).await? {
                membership.role = membership.role.max(m.role);
            }
            if !store.accept_invite(&invite, &membership, now).await? {
                return Err(invite_invalid());
            }
            (signed.user, false)
        }
        None => {
            let email = body
                .email
                .as_deref()
                .or(invite.email.as_deref())
                .and_then(valid_email)
                .ok_or_else(|| ConsoleError::bad_request("invalid_email", "give your email"))?;
            if !for_email(&email) {
                return Err(ConsoleError::forbidden(
                    "this invitation is for another email address",
                ));
            }
            let password = body.password.clone().ok_or_else(|| {
                ConsoleError::bad_request("password_required", "choose a password")
            })?;
            let user = User {
                id: token::user_id_from_bytes(&random::<8>()?),
                email,
                password: hash_password(password).await?,
                totp_secret: None,
                totp_enabled: false,
                totp_last_step: None,
                instance_owner: false,
                created: now,
                known_devices: Vec::new(),
            };
            let membership = membership_of(&invite, &user);
            if !store
                .accept_invite_as_new_user(&invite, &user, &membership, now)
                .await?
            {
                // Which: the invite (spent meanwhile) or the email.
                if store.invite(site, &invite.hash).await?.is_none() {
                    return Err(invite_invalid());
                }
                return Err(ConsoleError::new(
                    409,
                    "email_taken",
                    "a user with this email exists: sign in, then accept the invitation",
                ));
            }
            (user, true)
        }
    };
    let log = AuditLog::Site(site.to_owned());
    let actor = (user.id.clone(), user.email.clone());
    let target = format!("user:{}", user.id);
    let detail = format!("joined as {} by invitation", invite.role.as_str());
    audit::append(
        store,
        &log,
        actor.clone(),
        AuditAction::MemberChanged,
        &target,
        &detail,
        now,
    )
    .await?;
    if created {
        audit::append(
            store,
            &AuditLog::Instance,
            actor,
            AuditAction::UserCreated,
            &target,
            "by invitation",
            now,
        )
        .await?;
        tracing::info!(event = "invite_accepted", site, uid = %user.id, "new user joined");
        return auth::start_session(store, config, request, user, now).await;
    }
    tracing::info!(event = "invite_accepted", site, uid = %user.id, "member joined");
    let signed = auth::signed_in(store, request, now).await?;
    let me = auth::me(store, &signed.user, &signed.session, &signed.settings).await?;
    Ok(json_response(200, &me))
}

fn membership_of(invite: &Invite, user: &User) -> Membership {
    Membership {
        site: invite.site.clone(),
        uid: user.id.clone(),
        role: invite.role,
        email: user.email.clone(),
    }
}
