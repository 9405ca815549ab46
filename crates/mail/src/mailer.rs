//! The mail port: a [`Mailer`] sends one [`Message`]. Implemented for
//! [`Ses`] (deployed, when `EMAIL_FROM` is set) and [`Outbox`] (`tally
//! dev`); the console (invitations, resets) and the scheduled job (email
//! reports) take one, and tests pass their own.

use crate::{MailError, Message, Outbox, Ses};
use std::future::Future;
use std::pin::Pin;

/// A mail being sent.
pub type MailFuture<'a> = Pin<Box<dyn Future<Output = Result<(), MailError>> + Send + 'a>>;

/// Sends mail.
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
