//! Mail for Tally: one plain-text [`Message`], sent through Amazon SES
//! (API v2, [`Ses`]) when `EMAIL_FROM` is set, or written to a local
//! [`Outbox`] (one file per message under `{data_dir}/outbox/`) by
//! `tally dev`.
//!
//! Links in Tally's mails carry tokens (invites, password resets), so
//! nothing here logs a recipient, a subject or a body, and the errors'
//! `Display` never quotes SES's message (which may name an address); the
//! full text is kept for a `debug`-level log ([`MailError::detail`]).

mod mailer;
mod outbox;
mod ses;

pub use mailer::{MailFuture, Mailer};
pub use outbox::{OUTBOX_DIR, Outbox, StoredMessage};
pub use ses::{Ses, SesOptions};

use serde::{Deserialize, Serialize};

/// One mail to one recipient: plain text, optionally an HTML alternative
/// and extra headers (`List-Unsubscribe`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// The recipient's address.
    pub to: String,
    /// The subject line.
    pub subject: String,
    /// The body, plain text.
    pub text: String,
    /// The same body as HTML (sent as the alternative part), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
    /// Extra headers, `(name, value)`: SES API v2 sends them with simple
    /// content (e.g. `List-Unsubscribe`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
}

impl Message {
    /// A message to `to`.
    pub fn new(to: impl Into<String>, subject: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            to: to.into(),
            subject: subject.into(),
            text: text.into(),
            html: None,
            headers: Vec::new(),
        }
    }

    /// With an HTML part.
    pub fn with_html(mut self, html: impl Into<String>) -> Self {
        self.html = Some(html.into());
        self
    }

    /// With one more header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
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
