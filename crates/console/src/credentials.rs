//! Shared links and API keys of a site: `GET|POST sites/{site}/shares`,
//! `DELETE sites/{site}/shares/{id}`, the same for `keys` (served by
//! [`crate::collection`]). A link or key
//! is shown once, when made; only its hash is stored, and `DELETE`
//! revokes it (the item stays, marked, as `tally share|key revoke` do).
//!
//! Links are built by core's [`ShareSpec`] as `tally share create` builds
//! them. Keys are made by the signed-in user (its `owner`) with a scope,
//! `read` or `configure`; managing keys needs a person (a key may not mint
//! or revoke keys), and an admin revokes only keys they made (an owner,
//! any).

use crate::auth::random;
use crate::collection::{Added, Call, Collection, CollectionStore, Needs, Op, Removed};
use crate::error::ConsoleError;
use crate::permit::Permit;
use crate::site_body::{KeyCreated, KeyItem, KeyRequest, ShareCreated, ShareItem, public_id};
use crate::sites::public_origin;
use tally_core::account::caps::{self, Capped};
use tally_core::account::share::{ShareError, ShareSpec, ShareSpecError};
use tally_core::account::{AuditAction, Role};
use tally_store::sites::ApiKeyRecord;

impl From<ShareSpecError> for ConsoleError {
    fn from(e: ShareSpecError) -> Self {
        Self::bad_request(e.code(), e.to_string())
    }
}

impl From<ShareError> for ConsoleError {
    fn from(e: ShareError) -> Self {
        Self::bad_request(e.code(), e.to_string())
    }
}

/// `sites/{site}/shares`.
pub struct Shares;

impl Collection for Shares {
    const NOUN: &'static str = "share";
    const LISTED: &'static str = "shares";
    const NEEDS: Needs = Needs::ADMINS;
    const AUDIT: AuditAction = AuditAction::CredentialChanged;
    type Spec = ShareSpec;
    type Item = ShareItem;
    type Answer = ShareCreated;

    async fn list<S: CollectionStore>(call: Call<'_, S>) -> Result<Vec<ShareItem>, ConsoleError> {
        let shares = call
            .store
            .shares(call.site())
            .await?
            .iter()
            .map(ShareItem::from)
            .collect();
        Ok(shares)
    }

    /// Answers the link once.
    async fn add<S: CollectionStore>(
        call: Call<'_, S>,
        spec: ShareSpec,
    ) -> Result<Added<ShareCreated>, ConsoleError> {
        let store = call.store;
        if let Some(id) = &spec.segment {
            tally_core::product::saved_segment::lockable(
                &store.saved_segments(call.site()).await?,
                id,
            )?;
        }
        let (share, token) = spec.build(
            call.site(),
            &random()?,
            &random()?,
            Some(call.config.tag_keys.current()),
            call.now,
        )?;
        let live = store
            .shares(call.site())
            .await?
            .iter()
            .filter(|s| s.live(call.now))
            .count();
        caps::check(Capped::Links, live)?;
        store.put_share(call.site(), &share).await?;
        let item = ShareItem::from(&share);
        let link = format!(
            "{}/dashboard#share={token}",
            public_origin(call.config.public_url.as_deref(), call.request)
        );
        let id = item.id.clone();
        let created = ShareCreated {
            link,
            token,
            share: item,
        };
        Ok(Added::new(id, "shared link created", created))
    }

    /// Revokes it.
    async fn remove<S: CollectionStore>(
        call: Call<'_, S>,
        id: &str,
    ) -> Result<Removed, ConsoleError> {
        let store = call.store;
        let mut share = store
            .shares(call.site())
            .await?
            .into_iter()
            .find(|s| public_id(&s.hash) == id && s.revoked_at.is_none())
            .ok_or_else(|| ConsoleError::not_found("share_not_found", "no such live link"))?;
        share.revoked_at = Some(call.now);
        store.put_share(call.site(), &share).await?;
        Ok(Removed::new(id, "shared link revoked"))
    }
}

/// `sites/{site}/keys`: people only (a key may not mint or revoke keys).
pub struct Keys;

impl Collection for Keys {
    const NOUN: &'static str = "key";
    const LISTED: &'static str = "keys";
    const NEEDS: Needs = Needs::ADMINS;
    const AUDIT: AuditAction = AuditAction::CredentialChanged;
    type Spec = KeyRequest;
    type Item = KeyItem;
    type Answer = KeyCreated;

    fn admit(permit: &Permit, _: Op<'_>) -> Result<(), ConsoleError> {
        permit.user().map(|_| ())
    }

    async fn list<S: CollectionStore>(call: Call<'_, S>) -> Result<Vec<KeyItem>, ConsoleError> {
        let store = call.store;
        let members = store.members(call.site()).await?;
        let keys = store
            .api_keys(call.site())
            .await?
            .iter()
            .map(|k| KeyItem::with_maker(k, &members))
            .collect();
        Ok(keys)
    }

    /// `{label?, scope?}`; the key is answered once.
    async fn add<S: CollectionStore>(
        call: Call<'_, S>,
        body: KeyRequest,
    ) -> Result<Added<KeyCreated>, ConsoleError> {
        let store = call.store;
        let maker = &call.permit.user()?.user;
        let key = tally_core::account::tag::tagged_credential(
            call.config.tag_keys.current(),
            tally_core::account::auth::KEY_PREFIX,
            call.site(),
            &random()?,
        );
        let record = ApiKeyRecord::new(
            &key,
            &body.label,
            Some(maker.id.clone()),
            body.scope,
            call.now,
        )?;
        let live = store
            .api_keys(call.site())
            .await?
            .iter()
            .filter(|k| k.revoked_at.is_none())
            .count();
        caps::check(Capped::Keys, live)?;
        store.put_api_key(call.site(), &record).await?;
        let item = KeyItem {
            maker: Some(maker.email.clone()),
            ..KeyItem::from(&record)
        };
        let detail = format!("API key created ({} scope)", scope_name(&record));
        Ok(Added::new(
            item.id.clone(),
            detail,
            KeyCreated { key, item },
        ))
    }

    /// Revokes it; an admin only their own keys.
    async fn remove<S: CollectionStore>(
        call: Call<'_, S>,
        id: &str,
    ) -> Result<Removed, ConsoleError> {
        let store = call.store;
        let uid = &call.permit.user()?.user.id;
        let mut key = store
            .api_keys(call.site())
            .await?
            .into_iter()
            .find(|k| public_id(&k.hash) == id && k.revoked_at.is_none())
            .ok_or_else(|| ConsoleError::not_found("key_not_found", "no such live key"))?;
        if call.permit.role < Role::Owner && key.owner.as_deref() != Some(uid.as_str()) {
            return Err(ConsoleError::forbidden(
                "an admin may revoke only the keys they made",
            ));
        }
        key.revoked_at = Some(call.now);
        store.put_api_key(call.site(), &key).await?;
        Ok(Removed::new(id, "API key revoked"))
    }
}

fn scope_name(record: &ApiKeyRecord) -> &'static str {
    match record.scope {
        tally_core::account::KeyScope::Read => "read",
        tally_core::account::KeyScope::Configure => "configure",
        tally_core::account::KeyScope::Write => "write",
    }
}
