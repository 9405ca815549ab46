//! The console's mail port: a [`Mailer`] sends one [`Message`] (an
//! invitation). Implemented for `tally-mail`'s [`Ses`] (deployed, when
//! `EMAIL_FROM` is set) and [`Outbox`] (`tally dev`); a console without a
//! mailer only returns links. Nothing here logs an address or a body:
//! links carry tokens.

use std::future::Future;
use std::pin::Pin;
pub use tally_mail::{MailError, Message, Outbox, Ses};

/// A mail being sent.
pub type MailFuture<'a> = Pin<Box<dyn Future<Output = Result<(), MailError>> + Send + 'a>>;

/// Sends mail for the console.
pub trait Mailer: Send + Sync + std::fmt::Debug {
    /// Sends one message.
    fn send<'a>(&'a self, message: &'a Message) -> MailFuture<'a>;
}

impl Mailer for Ses {
    fn send<'a>(&'a self, message: &'a Message) -> MailFuture<'a> {
        Box::pin(async move { Ses::send(self, message).await.map(|_| ()) })
    }
}

impl Mailer for Outbox {
    fn send<'a>(&'a self, message: &'a Message) -> MailFuture<'a> {
        Box::pin(async move { Outbox::send(self, message).map(|_| ()) })
    }
}

/// The invitation mail: where to accept, for what, and for how long.
pub fn invitation(to: &str, site: &str, role: &str, link: &str, inviter: &str) -> Message {
    Message::new(
        to,
        format!("Invitation to {site} on Tally"),
        format!(
            "{inviter} invited you to the site {site} on Tally as {role}.\n\n\
             Accept the invitation here (it works once, for 7 days):\n{link}\n\n\
             If you did not expect this mail, ignore it.\n"
        ),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_outbox_is_a_mailer() {
        let dir = std::env::temp_dir().join(format!("tally-console-mail-{}", std::process::id()));
        let outbox = Outbox::new(&dir);
        let mailer: &dyn Mailer = &outbox;
        let message = invitation(
            "ann@example.com",
            "blog",
            "admin",
            "https://x/#invite=ti_",
            "bo@example.com",
        );
        mailer.send(&message).await.unwrap();
        let listed = outbox.list().unwrap();
        assert_eq!(listed.len(), 1);
        assert!(format!("{listed:?}").contains("ann@example.com"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
