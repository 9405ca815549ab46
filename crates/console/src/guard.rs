//! The guess limits around every password and code check
//! (`tally_core::account::guess`): a unit is taken from each window before
//! the check and given back when it passed, so parallel guesses cannot slip
//! past a limit; counts live in the table, shared by every instance. A
//! signed-in user's password ([`password`]) and TOTP codes ([`code`]) are
//! checked here; a login's password, against an account that may not
//! exist, in `login`.

use crate::auth::request_cookie;
use crate::config::Config;
use crate::error::ConsoleError;
use crate::store::ConsoleStore;
use lambda_http::Request;
use tally_core::Millis;
use tally_core::account::guess::{self, Window};
use tally_core::account::{User, cookie, token, totp};

/// Units taken for one check, to give back if it passes.
#[derive(Debug)]
pub struct Taken(Vec<Window>);

/// The account a check counts against: the user's id, or a hash of an
/// email no user has.
pub fn account_of(user: Option<&User>, email: &str) -> String {
    user.map_or_else(|| guess::account_for_unknown_email(email), |u| u.id.clone())
}

/// Takes a unit from each window of an attempt at `account` (the browser's
/// own window when it logged in to `user` before): `Err` 429 when a window
/// is over its limit.
pub async fn take<S: ConsoleStore>(
    store: &S,
    config: &Config,
    request: &Request,
    account: &str,
    user: Option<&User>,
    now: Millis,
) -> Result<Taken, ConsoleError> {
    let ip = tally_lambda::request::client_ip(request, false);
    let network = tally_core::ingest::salt::network_id(&config.network_key, &ip);
    let device = request_cookie(request, cookie::DEVICE_COOKIE)
        .filter(|d| token::valid_device_id(d))
        .map(guess::device_hash)
        .filter(|hash| user.is_some_and(|u| u.knows_device(hash)));
    let windows = guess::windows(account, &network, device.as_deref(), now);
    let mut counts = Vec::with_capacity(windows.len());
    for window in windows {
        let count = store.add_guess(&window, 1).await?;
        counts.push((window, count));
    }
    if let Err(wait) = guess::verdict(&counts, now) {
        tracing::warn!(event = "guess_limited", "too many failed attempts");
        return Err(ConsoleError::too_many_attempts(wait));
    }
    Ok(Taken(counts.into_iter().map(|(w, _)| w).collect()))
}

/// How a request's API key goes through the key guard.
#[derive(Debug)]
pub enum KeyCheck {
    /// Its tag is this deployment's: no limit applies (a member's key
    /// never locks them out); a refusal by the store still counts.
    Tagged(Window),
    /// Untagged (made before tags): a unit taken, given back unless the
    /// key was refused.
    Taken(Taken),
}

/// The key guard before a request that carries an API key
/// (`Authorization: Bearer`), as the query function guards its keys: a
/// tag that is not this deployment's is a failed guess told offline (401,
/// nothing read; 429 past [`guess::KEY_GUESSES_PER_MINUTE`] a minute from
/// the network); an untagged key takes a unit from the network's window
/// first (429 when it is spent).
pub async fn take_key<S: ConsoleStore>(
    store: &S,
    config: &Config,
    request: &Request,
    key: &str,
    now: Millis,
) -> Result<KeyCheck, ConsoleError> {
    use tally_core::account::tag::TagVerdict;
    let ip = tally_lambda::request::client_ip(request, false);
    let network = tally_core::ingest::salt::network_id(&config.network_key, &ip);
    let window = guess::key_window(&network, now);
    let verdict = config.tag_keys.verify(key, now);
    if verdict == TagVerdict::Tagged(true) {
        return Ok(KeyCheck::Tagged(window));
    }
    let count = store.add_guess(&window, 1).await?;
    if let Err(wait) = guess::verdict(&[(window.clone(), count)], now) {
        tracing::warn!(event = "key_guess_limited", "too many failed API keys");
        return Err(ConsoleError::too_many_attempts(wait));
    }
    if verdict == TagVerdict::Tagged(false) {
        return Err(ConsoleError::new(
            401,
            "invalid_api_key",
            "invalid or revoked API key",
        ));
    }
    Ok(KeyCheck::Taken(Taken(vec![window])))
}

/// The key guard after the request: `refused` when the key was (401).
pub async fn after_key<S: ConsoleStore>(store: &S, check: KeyCheck, refused: bool) {
    match check {
        KeyCheck::Tagged(window) if refused => {
            if let Err(e) = store.add_guess(&window, 1).await {
                tracing::warn!(error = %e, "a refused key was not counted");
            }
        }
        KeyCheck::Taken(taken) if !refused => give_back(store, taken).await,
        _ => {}
    }
}

/// Gives back the units of a check that passed.
pub async fn give_back<S: ConsoleStore>(store: &S, taken: Taken) {
    for window in taken.0 {
        if let Err(e) = store.add_guess(&window, -1).await {
            tracing::warn!(error = %e, "a guess unit was not given back");
        }
    }
}

/// Checks a code of `user` made with `secret` (their TOTP secret, when it
/// may be used here), guess-limited, a step accepted once: 401
/// `invalid_code` when wrong or used.
pub async fn code<S: ConsoleStore>(
    store: &S,
    config: &Config,
    request: &Request,
    user: &User,
    secret: Option<Vec<u8>>,
    code: &str,
    now: Millis,
) -> Result<(), ConsoleError> {
    let taken = take(store, config, request, &user.id, Some(user), now).await?;
    let step = secret.and_then(|secret| totp::verify(&secret, code, now, user.totp_last_step));
    let accepted = match step {
        Some(step) => store.accept_totp_step(&user.id, step).await?,
        None => false,
    };
    if !accepted {
        tracing::info!(event = "totp_failed", uid = %user.id, "wrong 2FA code");
        return Err(ConsoleError::new(
            401,
            "invalid_code",
            "wrong or already used code",
        ));
    }
    give_back(store, taken).await;
    Ok(())
}

/// Checks a signed-in user's password, guess-limited: whether it is
/// theirs (when wrong, answer [`wrong_password`]).
pub async fn password<S: ConsoleStore>(
    store: &S,
    config: &Config,
    request: &Request,
    user: &User,
    password: String,
    now: Millis,
) -> Result<bool, ConsoleError> {
    let taken = take(store, config, request, &user.id, Some(user), now).await?;
    let right = check_password(password, Some(user.password.clone())).await?;
    if right {
        give_back(store, taken).await;
    }
    Ok(right)
}

/// Runs a password check off the async workers (Argon2id takes ~30 ms and
/// 19 MiB): `verify` against the user's hash, or the decoy's.
pub async fn check_password(password: String, phc: Option<String>) -> Result<bool, ConsoleError> {
    tokio::task::spawn_blocking(move || match phc {
        Some(phc) => tally_core::account::password::verify(&password, &phc),
        None => tally_core::account::password::verify_decoy(&password),
    })
    .await
    .map_err(|e| {
        tracing::error!(error = %e, "password check failed");
        ConsoleError::internal()
    })
}

/// 401 `invalid_credentials`: a signed-in user's password was wrong.
pub fn wrong_password() -> ConsoleError {
    ConsoleError::new(401, "invalid_credentials", "wrong password")
}
