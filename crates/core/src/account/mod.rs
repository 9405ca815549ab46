//! Accounts of the console (issue 21): who may sign in and what they may
//! do, as pure logic. Time and randomness are passed in.
//!
//! - [`role`]: roles, actions, the permission matrix, API key scopes.
//! - [`caps`]: how many keys, links, affiliates and sessions one may hold.
//! - [`password`]: the length rule and Argon2id PHC hashes.
//! - [`totp`]: RFC 6238 codes, with drift and replay rules.
//! - [`token`]: session, 2FA challenge, invite, setup and password reset
//!   tokens; ids.
//! - [`cookie`]: `Set-Cookie` values and reading `Cookie`.
//! - [`csrf`]: the CSRF token and `Origin` check.
//! - [`signin`]: who a session cookie signs in (every function's check).
//! - [`guess`]: password and code guess limits.
//! - [`record`]: the stored records (users, sessions, memberships, …)
//!   and the audit entry.

pub mod caps;
pub mod cookie;
pub mod csrf;
pub mod guess;
pub mod password;
pub mod record;
pub mod role;
pub mod signin;
pub mod token;
pub mod totp;

pub use record::{
    AuditAction, AuditEntry, InstanceSettings, Invite, Membership, PasswordReset, PendingLogin,
    Session, SetupToken, User,
};
pub use role::{Action, InstanceAction, KeyScope, Role};
