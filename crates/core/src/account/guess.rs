//! Guess limits for passwords and 2FA codes, as pure arithmetic: which
//! counting windows a login attempt takes a unit from, and whether the
//! counts after taking it allow the check.
//!
//! | window | scope key | length | limit |
//! | --- | --- | --- | --- |
//! | one account from one network | `ACCOUNT#{account}#NET#{network}` | 15 min | 10 |
//! | one network, every account | `NET#{network}` | 15 min | 100 |
//! | one account, every network (a distributed attack) | `ACCOUNT#{account}` | 1 h | 100 |
//! | one account from one known browser | `ACCOUNT#{account}#DEV#{device}` | 15 min | 10 |
//!
//! A browser that has logged in to the account before (its `tally_device`
//! cookie is on the account's list) counts only in its own window, so
//! guessers elsewhere, even on its network, never lock it out; every other
//! attempt counts in the first three. A unit is taken before the check and
//! given back when the password or code was right, so parallel guesses
//! cannot slip past the limit. The network is a keyed hash of the address
//! (an IPv6 /64), never the address ([`crate::ingest::salt::network_id`]).

use crate::{HOUR_MS, MINUTE_MS, Millis};

/// Length of the per-network windows.
pub const WINDOW_MS: Millis = 15 * MINUTE_MS;
/// Guesses at one account from one network (or one known browser) per window.
pub const ACCOUNT_NETWORK_LIMIT: u32 = 10;
/// Guesses from one network per window.
pub const NETWORK_LIMIT: u32 = 100;
/// Length of the account-wide window.
pub const ACCOUNT_WINDOW_MS: Millis = HOUR_MS;
/// Failed guesses at one account from all unknown browsers per hour before
/// they are asked to wait.
pub const ACCOUNT_LIMIT: u32 = 100;

/// Failed API-key guesses a network may make at the console in a minute
/// (the query function's default too).
pub const KEY_GUESSES_PER_MINUTE: u32 = 20;

/// The window a key check from `network` takes a unit from.
pub fn key_window(network: &str, now: Millis) -> Window {
    let scope = Scope::KeyNetwork {
        network: network.to_owned(),
    };
    Window {
        start: window_start(now, scope.window_ms()),
        scope,
    }
}

/// What a window counts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Scope {
    /// One account from one network.
    AccountNetwork {
        /// The account (a user id, or [`account_for_unknown_email`]).
        account: String,
        /// The keyed network hash.
        network: String,
    },
    /// One network, every account.
    Network {
        /// The keyed network hash.
        network: String,
    },
    /// One account, every unknown browser.
    Account {
        /// The account.
        account: String,
    },
    /// API keys guessed from one network (the console's key guard; the
    /// query function keeps its own per instance).
    KeyNetwork {
        /// The keyed network hash.
        network: String,
    },
    /// One account from one browser that logged in to it before.
    AccountDevice {
        /// The account.
        account: String,
        /// The hash of the device id.
        device: String,
    },
}

impl Scope {
    /// The scope's key (the table item is `GUESS#{key}` / `{window start}`).
    pub fn key(&self) -> String {
        match self {
            Self::AccountNetwork { account, network } => {
                format!("ACCOUNT#{account}#NET#{network}")
            }
            Self::Network { network } => format!("NET#{network}"),
            Self::KeyNetwork { network } => format!("KEYNET#{network}"),
            Self::Account { account } => format!("ACCOUNT#{account}"),
            Self::AccountDevice { account, device } => format!("ACCOUNT#{account}#DEV#{device}"),
        }
    }

    /// The window's length.
    pub fn window_ms(&self) -> Millis {
        match self {
            Self::Account { .. } => ACCOUNT_WINDOW_MS,
            Self::KeyNetwork { .. } => MINUTE_MS,
            _ => WINDOW_MS,
        }
    }

    /// Units the window allows.
    pub fn limit(&self) -> u32 {
        match self {
            Self::AccountNetwork { .. } | Self::AccountDevice { .. } => ACCOUNT_NETWORK_LIMIT,
            Self::Network { .. } => NETWORK_LIMIT,
            Self::Account { .. } => ACCOUNT_LIMIT,
            Self::KeyNetwork { .. } => KEY_GUESSES_PER_MINUTE,
        }
    }
}

/// One counting window: a scope and the start of its current window.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Window {
    /// What it counts.
    pub scope: Scope,
    /// When it started (a multiple of its length since the epoch).
    pub start: Millis,
}

impl Window {
    /// When it ends.
    pub fn end(&self) -> Millis {
        self.start + self.scope.window_ms()
    }

    /// When its item may be deleted (TTL, seconds): a minute after it ends.
    pub fn expires_s(&self) -> i64 {
        (self.end() + MINUTE_MS).div_euclid(1000)
    }
}

/// The start of the window of length `length` containing `now`.
pub fn window_start(now: Millis, length: Millis) -> Millis {
    now.div_euclid(length) * length
}

/// The windows an attempt at `account` takes a unit from: its known
/// device's own window when the browser logged in to it before, else the
/// account's window from this network, the network's and the account's.
pub fn windows(
    account: &str,
    network: &str,
    known_device: Option<&str>,
    now: Millis,
) -> Vec<Window> {
    let scopes = match known_device {
        Some(device) => vec![Scope::AccountDevice {
            account: account.to_owned(),
            device: device.to_owned(),
        }],
        None => vec![
            Scope::AccountNetwork {
                account: account.to_owned(),
                network: network.to_owned(),
            },
            Scope::Network {
                network: network.to_owned(),
            },
            Scope::Account {
                account: account.to_owned(),
            },
        ],
    };
    scopes
        .into_iter()
        .map(|scope| {
            let start = window_start(now, scope.window_ms());
            Window { scope, start }
        })
        .collect()
}

/// Whether the attempt may be checked, given each window's count after its
/// unit was taken: `Ok`, or `Err(seconds)` to wait until the last window
/// over its limit ends (at least 1).
pub fn verdict(counts: &[(Window, u32)], now: Millis) -> Result<(), u64> {
    let wait = counts
        .iter()
        .filter(|(window, count)| *count > window.scope.limit())
        .map(|(window, _)| window.end() - now)
        .max();
    match wait {
        None => Ok(()),
        Some(ms) => Err((ms.max(0) as u64).div_ceil(1000).max(1)),
    }
}

/// The account an attempt at an email no user has counts against: a hash
/// of the email, so attempts at unknown and known emails are limited alike
/// (and a 429 tells nothing about whether an account exists).
pub fn account_for_unknown_email(email: &str) -> String {
    let hash = crate::account::auth::hash_key(&format!("email|{email}"));
    format!("email-{}", &hash[..16])
}

/// The hash a device id is counted and remembered by.
pub fn device_hash(device: &str) -> String {
    crate::account::auth::hash_key(&format!("device|{device}"))[..32].to_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NOW: Millis = 1_700_000_123_456;

    fn counted(windows: &[Window], count: u32) -> Vec<(Window, u32)> {
        windows.iter().map(|w| (w.clone(), count)).collect()
    }

    #[test]
    fn unknown_browsers_take_three_windows_known_ones_one() {
        let w = windows("u1", "n1", None, NOW);
        let keys: Vec<_> = w.iter().map(|w| w.scope.key()).collect();
        assert_eq!(keys, ["ACCOUNT#u1#NET#n1", "NET#n1", "ACCOUNT#u1"]);
        let limits: Vec<_> = w.iter().map(|w| w.scope.limit()).collect();
        assert_eq!(limits, [10, 100, 100]);
        let known = windows("u1", "n1", Some("d1"), NOW);
        assert_eq!(known.len(), 1);
        assert_eq!(known[0].scope.key(), "ACCOUNT#u1#DEV#d1");
    }

    #[test]
    fn the_eleventh_guess_from_a_network_waits() {
        let w = windows("u1", "n1", None, NOW);
        for count in 1..=10 {
            let mut counts = counted(&w, 1);
            counts[0].1 = count;
            assert_eq!(verdict(&counts, NOW), Ok(()), "{count}");
        }
        let mut counts = counted(&w, 1);
        counts[0].1 = 11;
        let wait = verdict(&counts, NOW).unwrap_err();
        assert_eq!(wait, ((w[0].end() - NOW) as u64).div_ceil(1000));
        assert!(wait <= 15 * 60);
    }

    #[test]
    fn a_network_and_an_account_have_their_own_limits() {
        let w = windows("u1", "n1", None, NOW);
        // The 101st guess from one network at any accounts.
        let counts = vec![(w[0].clone(), 1), (w[1].clone(), 101), (w[2].clone(), 1)];
        assert!(verdict(&counts, NOW).is_err());
        // The 101st failure at one account across networks in the hour.
        let counts = vec![(w[0].clone(), 1), (w[1].clone(), 1), (w[2].clone(), 101)];
        let wait = verdict(&counts, NOW).unwrap_err();
        assert!(wait > 0 && wait <= 3600);
    }

    #[test]
    fn windows_are_aligned_and_expire_after_they_end() {
        for w in windows("u", "n", None, NOW) {
            assert_eq!(w.start % w.scope.window_ms(), 0);
            assert!(w.start <= NOW && NOW < w.end());
            assert_eq!(w.expires_s() * 1000, w.end() + MINUTE_MS);
        }
    }

    #[test]
    fn unknown_emails_count_like_accounts() {
        let a = account_for_unknown_email("a@example.com");
        assert!(a.starts_with("email-") && a.len() == 22);
        assert_ne!(a, account_for_unknown_email("b@example.com"));
        assert_eq!(device_hash("d").len(), 32);
    }

    proptest! {
        #[test]
        fn waits_end_with_the_window(offset in 0i64..(2 * HOUR_MS), count in 0u32..300) {
            let now = NOW + offset;
            for w in windows("u", "n", None, now) {
                let result = verdict(&[(w.clone(), count)], now);
                prop_assert_eq!(result.is_ok(), count <= w.scope.limit());
                if let Err(wait) = result {
                    prop_assert!(now + (wait as i64) * 1000 >= w.end());
                    prop_assert!(now + (wait as i64 - 1) * 1000 < w.end());
                }
            }
        }
    }
}
