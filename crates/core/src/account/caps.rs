//! Caps that keep one member from exhausting what a site holds for
//! everyone (issue 29, item 4): live API keys, live shared links and
//! affiliates per site, signed-in sessions per user. Personal saved
//! segments and annotations have caps per member of their own
//! ([`crate::product::saved_segment::MAX_PERSONAL_SEGMENTS`],
//! [`crate::product::annotation::MAX_PERSONAL_ANNOTATIONS`]) and do not count
//! toward the site's.

use crate::Millis;
use crate::account::ConsoleSession;

/// Live (unrevoked) API keys a site may hold.
pub const MAX_LIVE_KEYS: usize = 50;
/// Live (unrevoked, unexpired) shared links a site may hold.
pub const MAX_LIVE_LINKS: usize = 100;
/// Affiliates a site may define.
pub const MAX_AFFILIATES: usize = 500;
/// Sessions a user may hold at once: signing in once more ends the
/// least recently used.
pub const MAX_SESSIONS: usize = 20;

/// A capped kind of item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capped {
    /// API keys.
    Keys,
    /// Shared links.
    Links,
    /// Affiliates.
    Affiliates,
}

/// A site holds as many items of a kind as it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("this site holds {max} {what} already; revoke or remove one first")]
pub struct CapReached {
    /// The kind.
    pub capped: Capped,
    /// What it is called in the message.
    pub what: &'static str,
    /// The cap.
    pub max: usize,
}

impl CapReached {
    /// The error code (409).
    pub fn code(&self) -> &'static str {
        match self.capped {
            Capped::Keys => "too_many_keys",
            Capped::Links => "too_many_links",
            Capped::Affiliates => "too_many_affiliates",
        }
    }
}

/// Whether one more item fits beside `live` of a kind.
pub fn check(capped: Capped, live: usize) -> Result<(), CapReached> {
    let (what, max) = match capped {
        Capped::Keys => ("live API keys", MAX_LIVE_KEYS),
        Capped::Links => ("live shared links", MAX_LIVE_LINKS),
        Capped::Affiliates => ("affiliates", MAX_AFFILIATES),
    };
    if live >= max {
        return Err(CapReached { capped, what, max });
    }
    Ok(())
}

/// The sessions to end before one more is made, so a user holds at most
/// [`MAX_SESSIONS`]: expired ones, then the least recently used.
pub fn sessions_to_end(sessions: &[ConsoleSession], now: Millis) -> Vec<&ConsoleSession> {
    let mut live: Vec<&ConsoleSession> = sessions.iter().filter(|s| s.expires > now).collect();
    let mut end: Vec<&ConsoleSession> = sessions.iter().filter(|s| s.expires <= now).collect();
    live.sort_by_key(|s| (s.last_seen, s.created));
    let over = (live.len() + 1).saturating_sub(MAX_SESSIONS);
    end.extend(live.into_iter().take(over));
    end
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_cap_is_reached_at_its_count() {
        for (capped, max, code) in [
            (Capped::Keys, MAX_LIVE_KEYS, "too_many_keys"),
            (Capped::Links, MAX_LIVE_LINKS, "too_many_links"),
            (Capped::Affiliates, MAX_AFFILIATES, "too_many_affiliates"),
        ] {
            assert!(check(capped, max - 1).is_ok());
            let err = check(capped, max).unwrap_err();
            assert_eq!((err.code(), err.max), (code, max));
        }
    }

    fn session(n: i64, last_seen: Millis, expires: Millis) -> ConsoleSession {
        let mut s = ConsoleSession::new(format!("h{n}"), "u", String::new(), String::new(), n);
        s.last_seen = last_seen;
        s.expires = expires;
        s
    }

    #[test]
    fn a_new_session_ends_the_expired_then_the_least_recently_used() {
        let now = 1_000_000;
        let mut sessions: Vec<ConsoleSession> = (0..MAX_SESSIONS as i64)
            .map(|n| session(n, 500_000 - n, now + 1))
            .collect();
        sessions.push(session(99, 900_000, now - 1));
        let end: Vec<&str> = sessions_to_end(&sessions, now)
            .iter()
            .map(|s| s.hash.as_str())
            .collect();
        // The expired one, and the one seen longest ago among the live.
        let last = format!("h{}", MAX_SESSIONS - 1);
        assert_eq!(end, vec!["h99", last.as_str()]);
        sessions.truncate(3);
        assert!(sessions_to_end(&sessions, now).is_empty());
    }
}
