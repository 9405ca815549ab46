//! The console's items (issue 21): users and their email index, sessions,
//! pending 2FA logins, memberships, invites, setup tokens, password reset
//! tokens, the instance owner marker and settings, audit entries and guess
//! windows. Key patterns
//! are `tally_core::keys`'; the records are `tally_core::account`'s.
//!
//! What must hold across instances is held by DynamoDB, never by a read
//! then a write: an email belongs to one user (a conditional put in the
//! transaction that creates the user), the first owner is made once (one
//! transaction spends the setup token, writes the owner marker, the user
//! and the email, each conditional), a membership's two items are written
//! and deleted together, a TOTP step is accepted once (a conditional
//! update), a challenge is spent once (a conditional delete), a password
//! reset token is spent once (a conditional delete in the transaction that
//! sets the password) and guesses are counted with an atomic `ADD`.

use crate::Store;
use crate::error::{StoreError, condition_held, from_sdk, service_code};
use crate::item::{Item, from_item, key, with_keys};
use crate::query::SortKeys;
use aws_sdk_dynamodb::types::{
    AttributeValue, Delete, Put, ReturnValue, TransactWriteItem, Update,
};
use serde::{Deserialize, Serialize};
use tally_core::Millis;
use tally_core::account::guess::Window;
use tally_core::account::{
    AuditEntry, ConsoleSession, InstanceSettings, Invite, Membership, PasswordReset, PendingLogin,
    Role, SetupToken, User,
};
use tally_core::keys::{self, INSTANCE_PK};

/// Most audit entries one page holds.
pub const MAX_AUDIT_PAGE: usize = 100;

/// Where an audit entry is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditLog {
    /// The instance's log (setup, settings, users' 2FA).
    Instance,
    /// A site's log.
    Site(String),
}

impl AuditLog {
    fn pk(&self) -> String {
        match self {
            Self::Instance => INSTANCE_PK.to_owned(),
            Self::Site(site) => keys::site_pk(site),
        }
    }
}

/// Why creating the first owner did not happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetupRefused {
    /// The instance has an owner already.
    OwnerExists,
    /// No live setup token has this hash (unknown, spent or expired).
    BadToken,
    /// A user has this email already.
    EmailTaken,
}

/// `EMAIL#{email}` / `EMAIL`: which user has an email.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct EmailItem {
    uid: String,
}

/// `INSTANCE` / `OWNER`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct OwnerItem {
    uid: String,
}

/// `USER#{uid}` / `MEMBER#{site}`: a user's side of a membership.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct UserMemberItem {
    site: String,
    role: Role,
}

fn ttl_s(at: Millis) -> i64 {
    at.div_euclid(1000) + 1
}

pub(crate) fn build<T, E: std::fmt::Display>(built: Result<T, E>) -> Result<T, StoreError> {
    built.map_err(|e| StoreError::Request(format!("build request: {e}")))
}

impl Store {
    pub(crate) fn put_item(
        &self,
        item: Item,
        condition: Option<&str>,
    ) -> Result<TransactWriteItem, StoreError> {
        let put = build(
            Put::builder()
                .table_name(self.table())
                .set_item(Some(item))
                .set_condition_expression(condition.map(str::to_owned))
                .build(),
        )?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    pub(crate) fn delete_item(
        &self,
        key: Item,
        condition: Option<&str>,
    ) -> Result<TransactWriteItem, StoreError> {
        let delete = build(
            Delete::builder()
                .table_name(self.table())
                .set_key(Some(key))
                .set_condition_expression(condition.map(str::to_owned))
                .build(),
        )?;
        Ok(TransactWriteItem::builder().delete(delete).build())
    }

    /// Spends a token's item in a transaction: deletes it on the condition
    /// that it exists and is live at `now`.
    fn spend_item(&self, key: Item, now: Millis) -> Result<TransactWriteItem, StoreError> {
        let spend = build(
            Delete::builder()
                .table_name(self.table())
                .set_key(Some(key))
                .condition_expression("attribute_exists(pk) AND expires > :now")
                .expression_attribute_values(":now", AttributeValue::N(now.to_string()))
                .build(),
        )?;
        Ok(TransactWriteItem::builder().delete(spend).build())
    }

    /// Runs a transaction: `Ok(false)` when a condition failed.
    pub(crate) async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<bool, StoreError> {
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(err) if service_code(&err) == Some("TransactionCanceledException") => Ok(false),
            Err(err) => Err(from_sdk(err)),
        }
    }

    fn user_item(user: &User) -> Result<Item, StoreError> {
        with_keys(
            user,
            keys::user_pk(&user.id),
            keys::USER_SK.to_owned(),
            None,
        )
    }

    /// The instance owner marker naming `uid`.
    fn owner_item(uid: &str) -> Result<Item, StoreError> {
        with_keys(
            &OwnerItem {
                uid: uid.to_owned(),
            },
            INSTANCE_PK.to_owned(),
            keys::OWNER_SK.to_owned(),
            None,
        )
    }

    fn user_items(&self, user: &User) -> Result<Vec<TransactWriteItem>, StoreError> {
        let user_item = Self::user_item(user)?;
        let email_item = with_keys(
            &EmailItem {
                uid: user.id.clone(),
            },
            keys::email_pk(&user.email),
            keys::EMAIL_SK.to_owned(),
            None,
        )?;
        Ok(vec![
            self.put_item(email_item, Some("attribute_not_exists(pk)"))?,
            self.put_item(user_item, Some("attribute_not_exists(pk)"))?,
        ])
    }

    /// Creates a user and claims their email, in one transaction:
    /// `Ok(false)` when the email (or the id) is taken.
    pub async fn create_user(&self, user: &User) -> Result<bool, StoreError> {
        self.transact(self.user_items(user)?).await
    }

    /// Creates the first instance owner with a setup token, in one
    /// transaction: the token is spent (it must exist and be live), the
    /// owner marker written (there must be none), the user and their
    /// email written (the email must be free).
    pub async fn complete_setup(
        &self,
        token_hash: &str,
        user: &User,
        now: Millis,
    ) -> Result<Result<(), SetupRefused>, StoreError> {
        let owner = Self::owner_item(&user.id)?;
        let mut items = vec![
            self.spend_item(key(INSTANCE_PK, keys::setup_sk(token_hash)), now)?,
            self.put_item(owner, Some("attribute_not_exists(pk)"))?,
        ];
        items.extend(self.user_items(user)?);
        if self.transact(items).await? {
            return Ok(Ok(()));
        }
        // Which condition failed, read back (the reasons' order is not
        // reported by every DynamoDB-compatible server).
        if self.instance_owner().await?.is_some() {
            Ok(Err(SetupRefused::OwnerExists))
        } else if self.user_by_email(&user.email).await?.is_some() {
            Ok(Err(SetupRefused::EmailTaken))
        } else {
            Ok(Err(SetupRefused::BadToken))
        }
    }

    /// Reads a user (strongly consistent: logins read what was just written).
    pub async fn user(&self, uid: &str) -> Result<Option<User>, StoreError> {
        self.get_as(keys::user_pk(uid), keys::USER_SK.to_owned(), true)
            .await
    }

    /// Reads the user with a (normalised) email.
    pub async fn user_by_email(&self, email: &str) -> Result<Option<User>, StoreError> {
        let found: Option<EmailItem> = self
            .get_as(keys::email_pk(email), keys::EMAIL_SK.to_owned(), true)
            .await?;
        match found {
            Some(item) => self.user(&item.uid).await,
            None => Ok(None),
        }
    }

    /// Writes an existing user's record as changed (password, TOTP secret,
    /// known devices): `Ok(false)` if the user is gone. The email is not
    /// changed here.
    pub async fn put_user(&self, user: &User) -> Result<bool, StoreError> {
        self.put_if(Self::user_item(user)?, "attribute_exists(pk)")
            .await
    }

    /// Records that a user's TOTP code of `step` was accepted, unless that
    /// step or a later one was already: whether it was recorded (a code is
    /// good once, across instances).
    pub async fn accept_totp_step(&self, uid: &str, step: i64) -> Result<bool, StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(self.table())
            .set_key(Some(key(keys::user_pk(uid), keys::USER_SK)))
            .update_expression("SET totp_last_step = :step")
            .condition_expression(
                "attribute_exists(pk) AND (attribute_not_exists(totp_last_step) OR totp_last_step < :step)",
            )
            .expression_attribute_values(":step", AttributeValue::N(step.to_string()))
            .send()
            .await;
        condition_held(result)
    }

    /// Stores a session (TTL when it can no longer be live).
    pub async fn put_session(&self, session: &ConsoleSession) -> Result<(), StoreError> {
        self.put_as(
            session,
            keys::user_pk(&session.uid),
            keys::session_sk(&session.hash),
            Some(session.expires_s()),
        )
        .await
    }

    /// Reads a session by its token's hash.
    pub async fn session(
        &self,
        uid: &str,
        hash: &str,
    ) -> Result<Option<ConsoleSession>, StoreError> {
        self.get_as(keys::user_pk(uid), keys::session_sk(hash), true)
            .await
    }

    /// Every stored session of a user (some may have ended: check
    /// [`ConsoleSession::is_live`]).
    pub async fn sessions(&self, uid: &str) -> Result<Vec<ConsoleSession>, StoreError> {
        self.query_items(&keys::user_pk(uid), SortKeys::Prefix(keys::SESSION_PREFIX))
            .await?
            .into_iter()
            .map(from_item)
            .collect()
    }

    /// Writes a session's `last_seen` (and its TTL), if it still exists.
    pub async fn touch_session(&self, session: &ConsoleSession) -> Result<(), StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(self.table())
            .set_key(Some(key(
                keys::user_pk(&session.uid),
                keys::session_sk(&session.hash),
            )))
            .update_expression("SET last_seen = :seen, #ttl = :ttl")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_values(":seen", AttributeValue::N(session.last_seen.to_string()))
            .expression_attribute_values(":ttl", AttributeValue::N(session.expires_s().to_string()))
            .send()
            .await;
        // A session ended meanwhile stays ended.
        condition_held(result).map(|_| ())
    }

    /// Deletes a session: whether it existed.
    pub async fn delete_session(&self, uid: &str, hash: &str) -> Result<bool, StoreError> {
        self.delete_existing(key(keys::user_pk(uid), keys::session_sk(hash)))
            .await
    }

    /// Stores a pending 2FA login (TTL at its end).
    pub async fn put_pending(&self, pending: &PendingLogin) -> Result<(), StoreError> {
        self.put_as(
            pending,
            keys::user_pk(&pending.uid),
            keys::pending_sk(&pending.hash),
            Some(ttl_s(pending.expires)),
        )
        .await
    }

    /// Reads a pending 2FA login.
    pub async fn pending(&self, uid: &str, hash: &str) -> Result<Option<PendingLogin>, StoreError> {
        self.get_as(keys::user_pk(uid), keys::pending_sk(hash), true)
            .await
    }

    /// Spends a pending 2FA login: whether this call did (a challenge
    /// makes one session).
    pub async fn spend_pending(&self, uid: &str, hash: &str) -> Result<bool, StoreError> {
        self.delete_existing(key(keys::user_pk(uid), keys::pending_sk(hash)))
            .await
    }

    /// Stores a password reset token (TTL at its end).
    pub async fn put_reset(&self, reset: &PasswordReset) -> Result<(), StoreError> {
        self.put_as(
            reset,
            keys::user_pk(&reset.uid),
            keys::reset_sk(&reset.hash),
            Some(ttl_s(reset.expires)),
        )
        .await
    }

    /// Reads a password reset token by its hash.
    pub async fn reset(&self, uid: &str, hash: &str) -> Result<Option<PasswordReset>, StoreError> {
        self.get_as(keys::user_pk(uid), keys::reset_sk(hash), true)
            .await
    }

    /// Sets a user's password (a PHC string) with a reset token, in one
    /// transaction: the token is spent (it must exist and be live) and only
    /// the user's `password` attribute is set (the user must exist).
    /// `Ok(false)` when the token was spent, revoked or expired, or the
    /// user is gone (nothing is written).
    pub async fn complete_reset(
        &self,
        reset: &PasswordReset,
        phc: &str,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let spend = self.spend_item(
            key(keys::user_pk(&reset.uid), keys::reset_sk(&reset.hash)),
            now,
        )?;
        let set = build(
            Update::builder()
                .table_name(self.table())
                .set_key(Some(key(keys::user_pk(&reset.uid), keys::USER_SK)))
                .update_expression("SET password = :phc")
                .condition_expression("attribute_exists(pk)")
                .expression_attribute_values(":phc", AttributeValue::S(phc.to_owned()))
                .build(),
        )?;
        self.transact(vec![
            spend,
            TransactWriteItem::builder().update(set).build(),
        ])
        .await
    }

    /// Sets a user's password (a PHC string) if it is still `current` (a
    /// conditional update: of two changes at once, one wins): whether it
    /// was set.
    pub async fn change_password(
        &self,
        uid: &str,
        current: &str,
        phc: &str,
    ) -> Result<bool, StoreError> {
        let result = self
            .client
            .update_item()
            .table_name(self.table())
            .set_key(Some(key(keys::user_pk(uid), keys::USER_SK)))
            .update_expression("SET password = :phc")
            .condition_expression("attribute_exists(pk) AND password = :current")
            .expression_attribute_values(":phc", AttributeValue::S(phc.to_owned()))
            .expression_attribute_values(":current", AttributeValue::S(current.to_owned()))
            .send()
            .await;
        condition_held(result)
    }

    /// Ends what a new password makes stale: every session of the user but
    /// the one with hash `keep`, their pending 2FA logins and their unused
    /// password reset tokens. How many sessions ended.
    pub async fn end_credentials(
        &self,
        uid: &str,
        keep: Option<&str>,
    ) -> Result<usize, StoreError> {
        let pk = keys::user_pk(uid);
        let mut ended = 0;
        for prefix in [
            keys::SESSION_PREFIX,
            keys::PENDING_PREFIX,
            keys::RESET_PREFIX,
        ] {
            for item in self.query_items(&pk, SortKeys::Prefix(prefix)).await? {
                let Some(sk) = crate::item::string(&item, "sk").map(str::to_owned) else {
                    continue;
                };
                if keep.is_some_and(|hash| sk == keys::session_sk(hash)) {
                    continue;
                }
                if self.delete_existing(key(pk.clone(), sk)).await?
                    && prefix == keys::SESSION_PREFIX
                {
                    ended += 1;
                }
            }
        }
        Ok(ended)
    }

    fn membership_items(&self, m: &Membership) -> Result<(Item, Item), StoreError> {
        let by_site = with_keys(m, keys::site_pk(&m.site), keys::member_sk(&m.uid), None)?;
        let by_user = with_keys(
            &UserMemberItem {
                site: m.site.clone(),
                role: m.role,
            },
            keys::user_pk(&m.uid),
            keys::member_sk(&m.site),
            None,
        )?;
        Ok((by_site, by_user))
    }

    /// Writes a membership's two items (by site, by user) in one transaction.
    pub async fn put_membership(&self, m: &Membership) -> Result<(), StoreError> {
        let (by_site, by_user) = self.membership_items(m)?;
        let items = vec![self.put_item(by_site, None)?, self.put_item(by_user, None)?];
        self.transact(items).await?;
        Ok(())
    }

    /// Deletes a membership's two items in one transaction.
    pub async fn delete_membership(&self, site: &str, uid: &str) -> Result<(), StoreError> {
        let items = vec![
            self.delete_item(key(keys::site_pk(site), keys::member_sk(uid)), None)?,
            self.delete_item(key(keys::user_pk(uid), keys::member_sk(site)), None)?,
        ];
        self.transact(items).await?;
        Ok(())
    }

    /// A user's role on a site, if they are a member.
    pub async fn membership(
        &self,
        site: &str,
        uid: &str,
    ) -> Result<Option<Membership>, StoreError> {
        self.get_as(keys::site_pk(site), keys::member_sk(uid), true)
            .await
    }

    /// A site's members.
    pub async fn members(&self, site: &str) -> Result<Vec<Membership>, StoreError> {
        self.query_items(&keys::site_pk(site), SortKeys::Prefix(keys::MEMBER_PREFIX))
            .await?
            .into_iter()
            .map(from_item)
            .collect()
    }

    /// The sites a user is a member of, with their roles, in site order.
    pub async fn user_sites(&self, uid: &str) -> Result<Vec<(String, Role)>, StoreError> {
        self.query_items(&keys::user_pk(uid), SortKeys::Prefix(keys::MEMBER_PREFIX))
            .await?
            .into_iter()
            .map(|item| from_item::<UserMemberItem>(item).map(|m| (m.site, m.role)))
            .collect()
    }

    /// Stores an invite (TTL at its end).
    pub async fn put_invite(&self, invite: &Invite) -> Result<(), StoreError> {
        self.put_as(
            invite,
            keys::site_pk(&invite.site),
            keys::invite_sk(&invite.hash),
            Some(ttl_s(invite.expires)),
        )
        .await
    }

    /// Reads an invite.
    pub async fn invite(&self, site: &str, hash: &str) -> Result<Option<Invite>, StoreError> {
        self.get_as(keys::site_pk(site), keys::invite_sk(hash), true)
            .await
    }

    /// A site's invites (some may have expired).
    pub async fn invites(&self, site: &str) -> Result<Vec<Invite>, StoreError> {
        self.query_items(&keys::site_pk(site), SortKeys::Prefix(keys::INVITE_PREFIX))
            .await?
            .into_iter()
            .map(from_item)
            .collect()
    }

    /// Accepts an invite: deletes it (it must exist and be live) and writes
    /// the membership's two items, in one transaction. `Ok(false)` when the
    /// invite was spent, revoked or expired.
    pub async fn accept_invite(
        &self,
        invite: &Invite,
        membership: &Membership,
        now: Millis,
    ) -> Result<bool, StoreError> {
        self.transact(self.accept_items(invite, membership, now)?)
            .await
    }

    /// Accepts an invite as a new user: [`Store::accept_invite`]'s items and
    /// [`Store::create_user`]'s (the email must be free), in one
    /// transaction. `Ok(false)` when the invite was spent, revoked or
    /// expired, or the email is taken (nothing is written).
    pub async fn accept_invite_as_new_user(
        &self,
        invite: &Invite,
        user: &User,
        membership: &Membership,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let mut items = self.user_items(user)?;
        items.extend(self.accept_items(invite, membership, now)?);
        self.transact(items).await
    }

    /// The invite spent (if live) and the membership's two items.
    fn accept_items(
        &self,
        invite: &Invite,
        membership: &Membership,
        now: Millis,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let spend = self.spend_item(
            key(keys::site_pk(&invite.site), keys::invite_sk(&invite.hash)),
            now,
        )?;
        let (by_site, by_user) = self.membership_items(membership)?;
        Ok(vec![
            spend,
            self.put_item(by_site, None)?,
            self.put_item(by_user, None)?,
        ])
    }

    /// Deletes an invite: whether it existed.
    pub async fn delete_invite(&self, site: &str, hash: &str) -> Result<bool, StoreError> {
        self.delete_existing(key(keys::site_pk(site), keys::invite_sk(hash)))
            .await
    }

    /// The instance owner's user id, once there is one.
    pub async fn instance_owner(&self) -> Result<Option<String>, StoreError> {
        let owner: Option<OwnerItem> = self
            .get_as(INSTANCE_PK.to_owned(), keys::OWNER_SK.to_owned(), true)
            .await?;
        Ok(owner.map(|o| o.uid))
    }

    /// Makes `uid` the instance owner unless there is one: whether it did.
    pub async fn claim_instance_owner(&self, uid: &str) -> Result<bool, StoreError> {
        self.put_if(Self::owner_item(uid)?, "attribute_not_exists(pk)")
            .await
    }

    /// Records that the first owner's setup link goes to `to` at `now`,
    /// unless one was sent before (once per table): whether this is the
    /// first.
    pub async fn claim_setup_mail(&self, to: &str, now: Millis) -> Result<bool, StoreError> {
        let mut item = key(INSTANCE_PK, keys::SETUP_MAILED_SK);
        item.insert(
            "to".to_owned(),
            aws_sdk_dynamodb::types::AttributeValue::S(to.to_owned()),
        );
        item.insert(
            "at".to_owned(),
            aws_sdk_dynamodb::types::AttributeValue::N(now.to_string()),
        );
        self.put_if(item, "attribute_not_exists(pk)").await
    }

    /// Forgets [`Store::claim_setup_mail`] (the mail failed: a later try
    /// may send it).
    pub async fn release_setup_mail(&self) -> Result<(), StoreError> {
        self.delete_existing(key(INSTANCE_PK, keys::SETUP_MAILED_SK))
            .await
            .map(|_| ())
    }

    /// The instance settings (defaults when never written).
    pub async fn instance_settings(&self) -> Result<InstanceSettings, StoreError> {
        Ok(self
            .get_as(INSTANCE_PK.to_owned(), keys::SETTINGS_SK.to_owned(), true)
            .await?
            .unwrap_or_default())
    }

    /// Writes the instance settings.
    pub async fn put_instance_settings(
        &self,
        settings: &InstanceSettings,
    ) -> Result<(), StoreError> {
        self.put_as(
            settings,
            INSTANCE_PK.to_owned(),
            keys::SETTINGS_SK.to_owned(),
            None,
        )
        .await
    }

    /// Stores a setup token (TTL at its end).
    pub async fn put_setup_token(&self, token: &SetupToken) -> Result<(), StoreError> {
        self.put_as(
            token,
            INSTANCE_PK.to_owned(),
            keys::setup_sk(&token.hash),
            Some(ttl_s(token.expires)),
        )
        .await
    }

    /// Reads a setup token by its hash.
    pub async fn setup_token(&self, hash: &str) -> Result<Option<SetupToken>, StoreError> {
        self.get_as(INSTANCE_PK.to_owned(), keys::setup_sk(hash), true)
            .await
    }

    /// Adds `delta` to a guess window's count (an atomic `ADD`, the item
    /// expiring a minute after the window): the count after it.
    pub async fn add_guess(&self, window: &Window, delta: i64) -> Result<u32, StoreError> {
        let out = self
            .client
            .update_item()
            .table_name(self.table())
            .set_key(Some(key(
                keys::guess_pk(&window.scope.key()),
                keys::guess_sk(window.start),
            )))
            .update_expression("ADD #count :delta SET #ttl = :ttl")
            .expression_attribute_names("#count", "count")
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_values(":delta", AttributeValue::N(delta.to_string()))
            .expression_attribute_values(":ttl", AttributeValue::N(window.expires_s().to_string()))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await
            .map_err(from_sdk)?;
        let count = out
            .attributes
            .as_ref()
            .and_then(|a| crate::item::number(a, "count"))
            .unwrap_or(0);
        Ok(u32::try_from(count.max(0)).unwrap_or(u32::MAX))
    }

    /// Appends an audit entry.
    pub async fn put_audit(&self, log: &AuditLog, entry: &AuditEntry) -> Result<(), StoreError> {
        self.put_as(
            entry,
            log.pk(),
            keys::audit_sk(entry.at, &entry.nonce),
            None,
        )
        .await
    }

    /// A page of a log's entries, newest first: at most `limit` (capped at
    /// [`MAX_AUDIT_PAGE`]) older than the entry `before` names (its sort
    /// key, from the previous page), and the sort key to ask the next page
    /// with, if there may be more.
    pub async fn audit(
        &self,
        log: &AuditLog,
        limit: usize,
        before: Option<&str>,
    ) -> Result<(Vec<AuditEntry>, Option<String>), StoreError> {
        let limit = limit.clamp(1, MAX_AUDIT_PAGE);
        let start = before
            .filter(|b| b.starts_with(keys::AUDIT_PREFIX))
            .map(|b| key(log.pk(), b));
        let page = self
            .client
            .query()
            .table_name(self.table())
            .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
            .expression_attribute_values(":pk", AttributeValue::S(log.pk()))
            .expression_attribute_values(
                ":prefix",
                AttributeValue::S(keys::AUDIT_PREFIX.to_owned()),
            )
            .scan_index_forward(false)
            .limit(i32::try_from(limit).unwrap_or(100))
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(from_sdk)?;
        let mut entries = Vec::new();
        let mut last = None;
        for item in page.items.unwrap_or_default() {
            last = crate::item::string(&item, "sk").map(str::to_owned);
            entries.push(from_item(item)?);
        }
        let more = page.last_evaluated_key.is_some_and(|k| !k.is_empty());
        Ok((entries, last.filter(|_| more)))
    }
}
