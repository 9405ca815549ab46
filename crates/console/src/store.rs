//! What the console needs from storage ([`ConsoleStore`]), implemented for
//! [`tally_store::Store`] (`tally_store::accounts`).

use std::future::Future;
use tally_core::Millis;
use tally_core::account::guess::Window;
use tally_core::account::{
    AuditEntry, ConsoleSession, InstanceSettings, PasswordReset, PendingLogin, Role, User,
};
use tally_core::ingest::site::Site;
use tally_store::accounts::{AuditLog, SetupRefused};
use tally_store::{Store, StoreError};

/// A store result in a `Send` future.
pub trait Fut<T>: Future<Output = Result<T, StoreError>> + Send {}
impl<T, F: Future<Output = Result<T, StoreError>> + Send> Fut<T> for F {}

/// What the console needs from storage.
pub trait ConsoleStore: Send + Sync {
    /// The instance owner's id, once there is one.
    fn instance_owner(&self) -> impl Fut<Option<String>>;
    /// The instance settings.
    fn instance_settings(&self) -> impl Fut<InstanceSettings>;
    /// Writes the instance settings.
    fn put_instance_settings(&self, settings: &InstanceSettings) -> impl Fut<()>;
    /// Creates the first owner with a setup token (one transaction).
    fn complete_setup(
        &self,
        token_hash: &str,
        user: &User,
        now: Millis,
    ) -> impl Fut<Result<(), SetupRefused>>;
    /// A user by id.
    fn user(&self, uid: &str) -> impl Fut<Option<User>>;
    /// A user by (normalised) email.
    fn user_by_email(&self, email: &str) -> impl Fut<Option<User>>;
    /// Writes an existing user's record: `false` if the user is gone.
    fn put_user(&self, user: &User) -> impl Fut<bool>;
    /// Records an accepted TOTP step unless it or a later one was: whether
    /// it did.
    fn accept_totp_step(&self, uid: &str, step: i64) -> impl Fut<bool>;
    /// Stores a session.
    fn put_session(&self, session: &ConsoleSession) -> impl Fut<()>;
    /// A session by its token's hash.
    fn session(&self, uid: &str, hash: &str) -> impl Fut<Option<ConsoleSession>>;
    /// A user's stored sessions.
    fn sessions(&self, uid: &str) -> impl Fut<Vec<ConsoleSession>>;
    /// Writes a session's `last_seen`.
    fn touch_session(&self, session: &ConsoleSession) -> impl Fut<()>;
    /// Deletes a session: whether it existed.
    fn delete_session(&self, uid: &str, hash: &str) -> impl Fut<bool>;
    /// Stores a pending 2FA login.
    fn put_pending(&self, pending: &PendingLogin) -> impl Fut<()>;
    /// A pending 2FA login.
    fn pending(&self, uid: &str, hash: &str) -> impl Fut<Option<PendingLogin>>;
    /// Spends a pending 2FA login: whether this call did.
    fn spend_pending(&self, uid: &str, hash: &str) -> impl Fut<bool>;
    /// Stores a password reset token.
    fn put_reset(&self, reset: &PasswordReset) -> impl Fut<()>;
    /// A password reset token by its hash.
    fn reset(&self, uid: &str, hash: &str) -> impl Fut<Option<PasswordReset>>;
    /// Spends a live reset token and sets the password (a PHC string), in
    /// one transaction: whether it did.
    fn complete_reset(&self, reset: &PasswordReset, phc: &str, now: Millis) -> impl Fut<bool>;
    /// Sets a password if it is still `current`: whether it did.
    fn change_password(&self, uid: &str, current: &str, phc: &str) -> impl Fut<bool>;
    /// Ends a user's sessions (but the one with hash `keep`), pending 2FA
    /// logins and reset tokens: how many sessions ended.
    fn end_credentials(&self, uid: &str, keep: Option<&str>) -> impl Fut<usize>;
    /// The sites a user is a member of, with their roles.
    fn user_sites(&self, uid: &str) -> impl Fut<Vec<(String, Role)>>;
    /// Every site (what an instance owner sees).
    fn sites(&self) -> impl Fut<Vec<Site>>;
    /// Adds to a guess window: its count after.
    fn add_guess(&self, window: &Window, delta: i64) -> impl Fut<u32>;
    /// Appends an audit entry.
    fn put_audit(&self, log: &AuditLog, entry: &AuditEntry) -> impl Fut<()>;
}

impl ConsoleStore for Store {
    fn instance_owner(&self) -> impl Fut<Option<String>> {
        Store::instance_owner(self)
    }
    fn instance_settings(&self) -> impl Fut<InstanceSettings> {
        Store::instance_settings(self)
    }
    fn put_instance_settings(&self, settings: &InstanceSettings) -> impl Fut<()> {
        Store::put_instance_settings(self, settings)
    }
    fn complete_setup(
        &self,
        token_hash: &str,
        user: &User,
        now: Millis,
    ) -> impl Fut<Result<(), SetupRefused>> {
        Store::complete_setup(self, token_hash, user, now)
    }
    fn user(&self, uid: &str) -> impl Fut<Option<User>> {
        Store::user(self, uid)
    }
    fn user_by_email(&self, email: &str) -> impl Fut<Option<User>> {
        Store::user_by_email(self, email)
    }
    fn put_user(&self, user: &User) -> impl Fut<bool> {
        Store::put_user(self, user)
    }
    fn accept_totp_step(&self, uid: &str, step: i64) -> impl Fut<bool> {
        Store::accept_totp_step(self, uid, step)
    }
    fn put_session(&self, session: &ConsoleSession) -> impl Fut<()> {
        Store::put_session(self, session)
    }
    fn session(&self, uid: &str, hash: &str) -> impl Fut<Option<ConsoleSession>> {
        Store::session(self, uid, hash)
    }
    fn sessions(&self, uid: &str) -> impl Fut<Vec<ConsoleSession>> {
        Store::sessions(self, uid)
    }
    fn touch_session(&self, session: &ConsoleSession) -> impl Fut<()> {
        Store::touch_session(self, session)
    }
    fn delete_session(&self, uid: &str, hash: &str) -> impl Fut<bool> {
        Store::delete_session(self, uid, hash)
    }
    fn put_pending(&self, pending: &PendingLogin) -> impl Fut<()> {
        Store::put_pending(self, pending)
    }
    fn pending(&self, uid: &str, hash: &str) -> impl Fut<Option<PendingLogin>> {
        Store::pending(self, uid, hash)
    }
    fn spend_pending(&self, uid: &str, hash: &str) -> impl Fut<bool> {
        Store::spend_pending(self, uid, hash)
    }
    fn put_reset(&self, reset: &PasswordReset) -> impl Fut<()> {
        Store::put_reset(self, reset)
    }
    fn reset(&self, uid: &str, hash: &str) -> impl Fut<Option<PasswordReset>> {
        Store::reset(self, uid, hash)
    }
    fn complete_reset(&self, reset: &PasswordReset, phc: &str, now: Millis) -> impl Fut<bool> {
        Store::complete_reset(self, reset, phc, now)
    }
    fn change_password(&self, uid: &str, current: &str, phc: &str) -> impl Fut<bool> {
        Store::change_password(self, uid, current, phc)
    }
    fn end_credentials(&self, uid: &str, keep: Option<&str>) -> impl Fut<usize> {
        Store::end_credentials(self, uid, keep)
    }
    fn user_sites(&self, uid: &str) -> impl Fut<Vec<(String, Role)>> {
        Store::user_sites(self, uid)
    }
    fn sites(&self) -> impl Fut<Vec<Site>> {
        Store::sites(self)
    }
    fn add_guess(&self, window: &Window, delta: i64) -> impl Fut<u32> {
        Store::add_guess(self, window, delta)
    }
    fn put_audit(&self, log: &AuditLog, entry: &AuditEntry) -> impl Fut<()> {
        Store::put_audit(self, log, entry)
    }
}
