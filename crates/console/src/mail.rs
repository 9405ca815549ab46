//! The console's mail port: a [`Mailer`] sends one [`Message`] (an
//! invitation, a password reset link). Implemented for `tally-mail`'s [`Ses`] (deployed, when
//! `EMAIL_FROM` is set) and [`Outbox`] (`tally dev`); a console without a
//! mailer only returns links. Nothing here logs an address or a body:
//! links carry tokens.

pub use tally_mail::{MailError, MailFuture, Mailer, Message, Outbox, Ses};

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

/// The password reset mail: the link, for how long, and who made it (the
/// instance owner, or `None`: someone asked on the sign-in page).
pub fn password_reset(to: &str, link: &str, by: Option<&str>) -> Message {
    let (why, life) = match by {
        Some(owner) => (
            format!("{owner} made a link to set a new password"),
            "24 hours",
        ),
        None => (
            "Someone asked to reset the password of this account".to_owned(),
            "1 hour",
        ),
    };
    Message::new(
        to,
        "Reset your Tally password",
        format!(
            "{why} on Tally.\n\n\
             Choose a new password here (the link works once, for {life}):\n{link}\n\n\
             Setting it signs you out everywhere. If you did not ask for this, \
             ignore this mail: your password stays as it is.\n"
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

    #[test]
    fn the_reset_mail_carries_the_link_and_its_life() {
        let link = "https://x/console#reset=tr_0.u";
        let asked = password_reset("ann@example.com", link, None);
        assert!(asked.text.contains(link) && asked.text.contains("1 hour"));
        let made = password_reset("ann@example.com", link, Some("bo@example.com"));
        assert!(made.text.contains("bo@example.com") && made.text.contains("24 hours"));
    }
}
