//! Mail for Tally: one plain-text [`Message`], sent through Amazon SES
//! (API v2, [`Ses`]) when `EMAIL_FROM` is set, or written to a local
//! [`Outbox`] (one file per message under `{data_dir}/outbox/`) by
//! `tally dev`.
//!
//! Links in Tally's mails carry tokens (invites, password resets), so
//! nothing here logs a recipient, a subject or a body, and the errors'
//! `Display` never quotes SES's message (which may name an address); the
//! full text is kept for a `debug`-level log ([`MailError::detail`]).

mod outbox;
mod ses;

pub use outbox::{OUTBOX_DIR, Outbox, StoredMessage};
pub use ses::{Ses, SesOptions};

use serde::{Deserialize, Serialize};

/// One plain-text mail to one recipient.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// The recipient's address.
    pub to: String,
    /// The subject line.
    pub subject: String,
    /// The body, plain text.
    pub text: String,
}

impl Message {
    /// A message to `to`.
    pub fn new(to: impl Into<String>, subject: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            to: to.into(),
            subject: subject.into(),
            text: text.into(),
        }
    }
}

/// A failure to send or store a mail.
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    /// The configuration is unusable (an empty `EMAIL_FROM`, an empty
    /// recipient).
    #[error("mail is misconfigured: {0}")]
    Config(&'static str),
    /// SES could not be reached, timed out, or failed on its side: worth
    /// trying again later.
    #[error("SES is unavailable ({kind})")]
    Unavailable {
        /// What failed, with no address in it.
        kind: String,
        /// The SDK's full error text (may name addresses: debug logs only).
        detail: String,
    },
    /// SES refused the message (an unverified identity, a suppressed or
    /// malformed recipient, the sending quota, missing permission).
    #[error("SES refused the message ({code})")]
    Rejected {
        /// SES's error code, e.g. `MessageRejected`.
        code: String,
        /// SES's message (may name addresses: debug logs only).
        detail: String,
    },
    /// Reading or writing the outbox failed.
    #[error("outbox {path}: {source}")]
    Io {
        /// The file or directory.
        path: std::path::PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An outbox file is not a stored message.
    #[error("outbox {path}: not a stored message: {source}")]
    Corrupt {
        /// The file.
        path: std::path::PathBuf,
        /// The underlying error.
        source: serde_json::Error,
    },
}

impl MailError {
    /// Whether trying again later may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Unavailable { .. } => true,
            Self::Rejected { code, .. } => {
                matches!(
                    code.as_str(),
                    "TooManyRequestsException" | "LimitExceededException"
                )
            }
            _ => false,
        }
    }

    /// The full text of the failure, which for SES's errors may name an
    /// address: for `debug`-level logs only.
    pub fn detail(&self) -> String {
        match self {
            Self::Unavailable { detail, .. } | Self::Rejected { detail, .. } => detail.clone(),
            other => other.to_string(),
        }
    }
}
