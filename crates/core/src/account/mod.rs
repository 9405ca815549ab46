//! Who may read and change what: console accounts, API keys, shared
//! links and the credential tags that tell a guessed credential from a
//! real one, as pure logic. Time and randomness are passed in.
//!
//! - [`auth`]: API keys: their format, their stored hash, the bearer header.
//! - [`share`]: shared dashboard links: read-only tokens for one site.
//! - [`tag`]: credential tags: a MAC under the deployment secret.
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

pub mod auth;
pub mod caps;
pub mod cookie;
pub mod csrf;
pub mod guess;
pub mod password;
pub mod record;
pub mod role;
pub mod share;
pub mod signin;
pub mod tag;
pub mod token;
pub mod totp;

pub use record::{
    AuditAction, AuditEntry, ConsoleSession, InstanceSettings, Invite, Membership, PasswordReset,
    PendingLogin, SetupToken, User,
};
pub use role::{Action, InstanceAction, KeyScope, Role};
