//! Every DynamoDB key pattern of the one Tally table, built and parsed here.
//!
//! | item | pk | sk |
//! | --- | --- | --- |
//! | site | `SITES` | `SITE#{site}` |
//! | site being deleted ([`crate::product::deletion`]) | `SITES` | `GONE#{site}` |
//! | API key | `SITE#{site}` | `KEY#{sha256(key)}` |
//! | shared link | `SITE#{site}` | `SHARE#{sha256(token)}` |
//! | a shared link's password attempts in one minute | `SITE#{site}` | `ATTEMPTS#SHARE#{sha256(token)}#{minute}` |
//! | goal | `SITE#{site}` | `GOAL#{id}` |
//! | funnel | `SITE#{site}` | `FUNNEL#{id}` |
//! | raw event | `SITE#{site}#H#{YYYY-MM-DDTHH}[#{shard}]` | `{mm:ss.mmm}#{eid}` |
//! | day rollup | `SITE#{site}` | `ROLLUP#DAY#{YYYY-MM-DD}` |
//! | day dimensions | `SITE#{site}` | `ROLLUP#DIMS#{YYYY-MM-DD}` |
//! | day transitions table | `SITE#{site}` | `ROLLUP#TRANS#{YYYY-MM-DD}` |
//! | segment manifest of a UTC day | `SITE#{site}#SEG` | `M#{YYYY-MM-DD}` |
//! | segment part (id `d-{hash}`, per-day layout: every part written) | `SITE#{site}#SEG#{YYYY-MM-DD}` | `P#{YYYY-MM-DD}#d-{hash}` |
//! | segment part of the first layout (id `{hash}`: read until it expires, never written) | `SITE#{site}#SEG` | `P#{YYYY-MM-DD}#{hash}` |
//! | daily salt | `SALT` | `DAY#{YYYY-MM-DD}` |
//! | job state | `JOBS` | `JOB#{name}` |
//! | user (console account) | `USER#{uid}` | `USER` |
//! | email → user (unique by a conditional put) | `EMAIL#{email}` | `EMAIL` |
//! | session | `USER#{uid}` | `SESSION#{sha256(token)}` |
//! | pending 2FA login | `USER#{uid}` | `PENDING#{sha256(challenge)}` |
//! | membership, by site | `SITE#{site}` | `MEMBER#{uid}` |
//! | membership, by user (written with the one above in one transaction) | `USER#{uid}` | `MEMBER#{site}` |
//! | invite | `SITE#{site}` | `INVITE#{sha256(token)}` |
//! | setup token | `INSTANCE` | `SETUP#{sha256(token)}` |
//! | password reset token | `USER#{uid}` | `RESET#{sha256(token)}` |
//! | instance owner marker | `INSTANCE` | `OWNER` |
//! | instance settings | `INSTANCE` | `SETTINGS` |
//! | the first owner's setup link was mailed | `INSTANCE` | `SETUP_MAILED` |
//! | audit entry | `SITE#{site}` or `INSTANCE` | `AUDIT#{millis:013}#{6 hex}` |
//! | guess window | `GUESS#{scope}` | `{window start millis}` |
//!
//! A segment part's id names where it is stored ([`part_key`]): parts are
//! spread over one partition per UTC day, so a range of days is read from
//! as many partitions (each serves about 3,000 read units a second), while
//! the manifests of a range stay one Query on one partition. Ids of the
//! first layout (a bare hash) are still read from the site's segment
//! partition; a manifest may list parts of both layouts.
//!
//! Site ids are validated to a small alphabet and never need escaping; any
//! other user text that reaches a key (event ids, goal ids, job names) is
//! escaped with [`escape`], so a `#` in it can never forge a key prefix.

use crate::time::zone::{format_date, parse_date, utc_date, utc_midnight};
use crate::{HOUR_MS, MINUTE_MS, Millis};
use time::Date;

/// Partition key of the site list.
pub const SITES_PK: &str = "SITES";
/// Partition key of the daily salts.
pub const SALT_PK: &str = "SALT";
/// Partition key of job state.
pub const JOBS_PK: &str = "JOBS";
/// Sort-key prefix of API keys under a site.
pub const API_KEY_PREFIX: &str = "KEY#";
/// Sort-key prefix of shared links under `SITE#{site}`.
pub const SHARE_PREFIX: &str = "SHARE#";
/// Sort-key prefix of attempt counters under a site (apart from
/// [`SHARE_PREFIX`], so a listing of links never meets one).
pub const ATTEMPTS_PREFIX: &str = "ATTEMPTS#";
/// Sort-key prefix of goals under a site.
pub const GOAL_PREFIX: &str = "GOAL#";
/// Sort-key prefix of funnels under a site.
pub const FUNNEL_PREFIX: &str = "FUNNEL#";
/// Sort-key prefix of saved segments under a site.
pub const SAVED_SEGMENT_PREFIX: &str = "SEGMENT#";
/// Sort-key prefix of annotations under a site (`ANNOTATION#{date}#{id}`).
pub const ANNOTATION_PREFIX: &str = "ANNOTATION#";
/// Sort-key prefix of a site's per-day bots-blocked counts.
pub const BOTS_PREFIX: &str = "BOTS#";
/// Sort-key prefix of scalar day rollups under a site.
pub const ROLLUP_DAY_PREFIX: &str = "ROLLUP#DAY#";
/// Sort-key prefix of dimension day rollups under a site.
pub const ROLLUP_DIMS_PREFIX: &str = "ROLLUP#DIMS#";
/// Sort-key prefix of day transitions tables under a site.
pub const ROLLUP_TRANS_PREFIX: &str = "ROLLUP#TRANS#";

/// The longest site id accepted.
pub const MAX_SITE_ID_LEN: usize = 64;

/// Whether a site id is well formed: 1-64 characters of `a-z`, `0-9`, `.`,
/// `-`, `_`, starting with a letter or digit. Ids are ASCII only, so no two
/// ids can look alike through Unicode normalisation.
pub fn valid_site_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_SITE_ID_LEN
        && bytes[0].is_ascii_alphanumeric()
        && bytes.iter().all(|&b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'_')
        })
}

/// Escapes user text for use inside a key: `%`, `#` and control characters
/// become `%XX`. Everything else is kept, so keys stay readable.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '%' || c == '#' || c.is_control() {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Reverses [`escape`]; `None` if the text is not a valid escape.
pub fn unescape(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = text.get(i + 1..i + 3)?;
                if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return None;
                }
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'#' => return None,
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// `SITE#{site}`: the partition of a site's settings, keys, goals and rollups.
pub fn site_pk(site: &str) -> String {
    format!("SITE#{site}")
}

/// Parses [`site_pk`].
pub fn parse_site_pk(pk: &str) -> Option<&str> {
    pk.strip_prefix("SITE#").filter(|s| valid_site_id(s))
}

/// `SITE#{site}` under [`SITES_PK`]: the site's settings item.
pub fn site_sk(site: &str) -> String {
    site_pk(site)
}

/// `GONE#{site}` under [`SITES_PK`]: a site being deleted, holding its id.
pub fn deletion_sk(site: &str) -> String {
    format!("{DELETION_PREFIX}{site}")
}

/// Sort-key prefix of deletions under [`SITES_PK`].
pub const DELETION_PREFIX: &str = "GONE#";

/// Parses [`site_sk`].
pub fn parse_site_sk(sk: &str) -> Option<&str> {
    parse_site_pk(sk)
}

/// `SHARE#{hash}`: a shared link stored by the hex SHA-256 of its token.
pub fn share_sk(token_hash_hex: &str) -> String {
    format!("{SHARE_PREFIX}{token_hash_hex}")
}

/// The token hash of a `SHARE#` sort key.
pub fn parse_share_sk(sk: &str) -> Option<&str> {
    sk.strip_prefix(SHARE_PREFIX)
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `ATTEMPTS#SHARE#{hash}#{minute}`: the password attempts at the shared
/// link with this token hash in one minute (minutes since the epoch).
pub fn share_attempts_sk(token_hash_hex: &str, minute: i64) -> String {
    format!("{ATTEMPTS_PREFIX}{SHARE_PREFIX}{token_hash_hex}#{minute}")
}

/// Parses [`share_attempts_sk`]: the token hash and the minute.
pub fn parse_share_attempts_sk(sk: &str) -> Option<(&str, i64)> {
    let (hash, minute) = sk
        .strip_prefix(ATTEMPTS_PREFIX)?
        .strip_prefix(SHARE_PREFIX)?
        .split_once('#')?;
    let hex = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit());
    let minute = minute.parse().ok()?;
    hex.then_some((hash, minute))
}

/// `KEY#{hash}`: an API key stored by the hex SHA-256 of the key.
pub fn api_key_sk(key_hash_hex: &str) -> String {
    format!("{API_KEY_PREFIX}{key_hash_hex}")
}

/// Parses [`api_key_sk`].
pub fn parse_api_key_sk(sk: &str) -> Option<&str> {
    sk.strip_prefix(API_KEY_PREFIX)
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `GOAL#{id}`: a goal of a site.
pub fn goal_sk(goal_id: &str) -> String {
    format!("{GOAL_PREFIX}{}", escape(goal_id))
}

/// `SEGMENT#{id}`: a saved segment of a site.
pub fn saved_segment_sk(id: &str) -> String {
    format!("{SAVED_SEGMENT_PREFIX}{}", escape(id))
}

/// `ANNOTATION#{date}#{id}`: an annotation of a site, in date order.
pub fn annotation_sk(date: &str, id: &str) -> String {
    format!("{ANNOTATION_PREFIX}{}#{}", escape(date), escape(id))
}

/// `BOTS#{YYYY-MM-DD}`: a site's bots-blocked counts of a site-local day.
pub fn bots_sk(day: Date) -> String {
    format!("{BOTS_PREFIX}{}", format_date(day))
}

/// Parses [`bots_sk`].
pub fn parse_bots_sk(sk: &str) -> Option<Date> {
    parse_date(sk.strip_prefix(BOTS_PREFIX)?)
}

/// Partition of a site's trusted conversions (`SITE#{site}#CONV`).
pub fn conversions_pk(site: &str) -> String {
    format!("SITE#{site}#CONV")
}

/// `ORDER#{order id}`: a trusted conversion, one per order id.
pub fn order_sk(order_id: &str) -> String {
    format!("ORDER#{}", escape(order_id))
}

/// Sort-key prefix of a site's affiliates (`AFFILIATE#{slug}`).
pub const AFFILIATE_PREFIX: &str = "AFFILIATE#";

/// `AFFILIATE#{slug}`: an affiliate of a site.
pub fn affiliate_sk(slug: &str) -> String {
    format!("{AFFILIATE_PREFIX}{}", escape(slug))
}

/// Parses [`goal_sk`].
pub fn parse_goal_sk(sk: &str) -> Option<String> {
    unescape(sk.strip_prefix(GOAL_PREFIX)?)
}

/// `FUNNEL#{id}`: a funnel of a site.
pub fn funnel_sk(funnel_id: &str) -> String {
    format!("{FUNNEL_PREFIX}{}", escape(funnel_id))
}

/// Parses [`funnel_sk`].
pub fn parse_funnel_sk(sk: &str) -> Option<String> {
    unescape(sk.strip_prefix(FUNNEL_PREFIX)?)
}

/// `ROLLUP#DAY#{YYYY-MM-DD}`: a day's scalar rollup.
pub fn rollup_day_sk(day: Date) -> String {
    format!("{ROLLUP_DAY_PREFIX}{}", format_date(day))
}

/// Parses [`rollup_day_sk`].
pub fn parse_rollup_day_sk(sk: &str) -> Option<Date> {
    parse_date(sk.strip_prefix(ROLLUP_DAY_PREFIX)?)
}

/// `ROLLUP#DIMS#{YYYY-MM-DD}`: a day's dimension rollup.
pub fn rollup_dims_sk(day: Date) -> String {
    format!("{ROLLUP_DIMS_PREFIX}{}", format_date(day))
}

/// Parses [`rollup_dims_sk`].
pub fn parse_rollup_dims_sk(sk: &str) -> Option<Date> {
    parse_date(sk.strip_prefix(ROLLUP_DIMS_PREFIX)?)
}

/// `ROLLUP#TRANS#{YYYY-MM-DD}`: a day's transitions table.
pub fn rollup_trans_sk(day: Date) -> String {
    format!("{ROLLUP_TRANS_PREFIX}{}", format_date(day))
}

/// Parses [`rollup_trans_sk`].
pub fn parse_rollup_trans_sk(sk: &str) -> Option<Date> {
    parse_date(sk.strip_prefix(ROLLUP_TRANS_PREFIX)?)
}

/// `SITE#{site}#SEG`: the partition of a site's segment manifests (and of
/// its parts of the first layout, [`PartLayout::Site`]).
pub fn segment_pk(site: &str) -> String {
    format!("SITE#{site}#SEG")
}

/// Parses [`segment_pk`].
pub fn parse_segment_pk(pk: &str) -> Option<&str> {
    parse_site_pk(pk.strip_suffix("#SEG")?)
}

/// `SITE#{site}#SEG#{YYYY-MM-DD}`: the partition of a UTC day's segment
/// parts ([`PartLayout::Day`]).
pub fn segment_day_pk(site: &str, day: Date) -> String {
    format!("SITE#{site}#SEG#{}", format_date(day))
}

/// Parses [`segment_day_pk`] into the site and the day.
pub fn parse_segment_day_pk(pk: &str) -> Option<(&str, Date)> {
    let (rest, day) = pk.rsplit_once('#')?;
    Some((parse_segment_pk(rest)?, parse_date(day)?))
}

/// `M#{YYYY-MM-DD}`: the segment manifest of a UTC day.
pub fn manifest_sk(day: Date) -> String {
    format!("M#{}", format_date(day))
}

/// Parses [`manifest_sk`].
pub fn parse_manifest_sk(sk: &str) -> Option<Date> {
    parse_date(sk.strip_prefix("M#")?)
}

/// `P#{YYYY-MM-DD}#{id}`: the sort key of one part of a UTC day's segments,
/// in either layout (`id` is [`day_part_id`] of the part's content hash, or
/// the bare hash of the first layout).
pub fn part_sk(day: Date, id: &str) -> String {
    format!("P#{}#{}", format_date(day), escape(id))
}

/// Parses [`part_sk`].
pub fn parse_part_sk(sk: &str) -> Option<(Date, String)> {
    let (day, id) = sk.strip_prefix("P#")?.split_once('#')?;
    Some((parse_date(day)?, unescape(id)?))
}

/// The prefix of the id of a part stored under its day's partition.
pub const DAY_PART_PREFIX: &str = "d-";

/// Where a segment part is stored, as its id says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PartLayout {
    /// The first layout: every part of a site under [`segment_pk`] (ids
    /// without a prefix). Read until it expires; never written.
    Site,
    /// Parts under their UTC day's [`segment_day_pk`] (ids starting with
    /// [`DAY_PART_PREFIX`]).
    Day,
}

/// The id of a part written now: its content hash (16 hex digits) with
/// [`DAY_PART_PREFIX`], so it is stored under its day's partition.
pub fn day_part_id(hash: &str) -> String {
    format!("{DAY_PART_PREFIX}{hash}")
}

/// The layout of the part with this id.
pub fn part_layout(id: &str) -> PartLayout {
    if id.starts_with(DAY_PART_PREFIX) {
        PartLayout::Day
    } else {
        PartLayout::Site
    }
}

/// The partition key of a part of a UTC day, by its id's layout.
pub fn part_pk(site: &str, day: Date, id: &str) -> String {
    match part_layout(id) {
        PartLayout::Site => segment_pk(site),
        PartLayout::Day => segment_day_pk(site, day),
    }
}

/// The key (`pk`, `sk`) of a part of a UTC day: [`part_pk`], [`part_sk`].
pub fn part_key(site: &str, day: Date, id: &str) -> (String, String) {
    (part_pk(site, day, id), part_sk(day, id))
}

/// `DAY#{YYYY-MM-DD}` under [`SALT_PK`]: the shared salt of a day.
pub fn salt_sk(day: Date) -> String {
    format!("DAY#{}", format_date(day))
}

/// Parses [`salt_sk`].
pub fn parse_salt_sk(sk: &str) -> Option<Date> {
    parse_date(sk.strip_prefix("DAY#")?)
}

/// `JOB#{name}` under [`JOBS_PK`]: a job's state (cursor, last run).
pub fn job_sk(name: &str) -> String {
    format!("JOB#{}", escape(name))
}

/// Parses [`job_sk`].
pub fn parse_job_sk(sk: &str) -> Option<String> {
    unescape(sk.strip_prefix("JOB#")?)
}

/// Partition key of instance-wide items (setup tokens, the owner marker,
/// settings, the instance's audit log).
pub const INSTANCE_PK: &str = "INSTANCE";
/// Sort key of a user item under [`user_pk`].
pub const USER_SK: &str = "USER";
/// Sort key of an email item under [`email_pk`].
pub const EMAIL_SK: &str = "EMAIL";
/// Sort key of the instance owner marker under [`INSTANCE_PK`].
pub const OWNER_SK: &str = "OWNER";
/// Sort key of the instance settings under [`INSTANCE_PK`].
pub const SETTINGS_SK: &str = "SETTINGS";
/// Sort key of the record that the first owner's setup link was mailed
/// (once per table) under [`INSTANCE_PK`].
pub const SETUP_MAILED_SK: &str = "SETUP_MAILED";
/// Sort-key prefix of sessions under a user.
pub const SESSION_PREFIX: &str = "SESSION#";
/// Sort-key prefix of pending 2FA logins under a user.
pub const PENDING_PREFIX: &str = "PENDING#";
/// Sort-key prefix of memberships: `MEMBER#{uid}` under a site,
/// `MEMBER#{site}` under a user.
pub const MEMBER_PREFIX: &str = "MEMBER#";
/// Sort-key prefix of invites under a site.
pub const INVITE_PREFIX: &str = "INVITE#";
/// Sort-key prefix of setup tokens under [`INSTANCE_PK`].
pub const SETUP_PREFIX: &str = "SETUP#";
/// Sort-key prefix of password reset tokens under a user.
pub const RESET_PREFIX: &str = "RESET#";
/// Sort-key prefix of audit entries under a site or [`INSTANCE_PK`].
pub const AUDIT_PREFIX: &str = "AUDIT#";

/// `USER#{uid}`: a console user's partition (the user, sessions, pending
/// logins, password reset tokens, memberships by site).
pub fn user_pk(uid: &str) -> String {
    format!("USER#{}", escape(uid))
}

/// `EMAIL#{email}`: the item that maps a (lower-case) email to its user.
pub fn email_pk(email: &str) -> String {
    format!("EMAIL#{}", escape(email))
}

/// `SESSION#{hash}`: a session by its token's hash.
pub fn session_sk(token_hash_hex: &str) -> String {
    format!("{SESSION_PREFIX}{token_hash_hex}")
}

/// `PENDING#{hash}`: a pending 2FA login by its challenge's hash.
pub fn pending_sk(challenge_hash_hex: &str) -> String {
    format!("{PENDING_PREFIX}{challenge_hash_hex}")
}

/// `MEMBER#{uid}` under a site, or `MEMBER#{site}` under a user.
pub fn member_sk(id: &str) -> String {
    format!("{MEMBER_PREFIX}{}", escape(id))
}

/// Parses [`member_sk`].
pub fn parse_member_sk(sk: &str) -> Option<String> {
    unescape(sk.strip_prefix(MEMBER_PREFIX)?)
}

/// `INVITE#{hash}`: an invite by its token's hash.
pub fn invite_sk(token_hash_hex: &str) -> String {
    format!("{INVITE_PREFIX}{token_hash_hex}")
}

/// `SETUP#{hash}`: a setup token by its hash.
pub fn setup_sk(token_hash_hex: &str) -> String {
    format!("{SETUP_PREFIX}{token_hash_hex}")
}

/// `RESET#{hash}`: a password reset token by its hash.
pub fn reset_sk(token_hash_hex: &str) -> String {
    format!("{RESET_PREFIX}{token_hash_hex}")
}

/// `AUDIT#{millis:013}#{nonce}`: an audit entry, sorted by time.
pub fn audit_sk(at: Millis, nonce: &str) -> String {
    format!("{AUDIT_PREFIX}{:013}#{}", at.max(0), escape(nonce))
}

/// Parses [`audit_sk`] into the time and the nonce.
pub fn parse_audit_sk(sk: &str) -> Option<(Millis, String)> {
    let (at, nonce) = sk.strip_prefix(AUDIT_PREFIX)?.split_once('#')?;
    let digits = at.len() == 13 && at.bytes().all(|b| b.is_ascii_digit());
    Some((at.parse().ok().filter(|_| digits)?, unescape(nonce)?))
}

/// `GUESS#{scope}`: a guess-limit scope's windows
/// (`tally_core::account::guess::Scope::key`).
pub fn guess_pk(scope: &str) -> String {
    format!("GUESS#{}", escape(scope))
}

/// The sort key of a guess window: its start in milliseconds.
pub fn guess_sk(window_start: Millis) -> String {
    window_start.to_string()
}

/// The key of one raw event: its site, the UTC hour partition (with an
/// optional shard), and a sort key that orders events by time and is unique
/// per event id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventKey {
    /// The site id.
    pub site: String,
    /// The event time, milliseconds since the epoch.
    pub at: Millis,
    /// The shard of a sharded site, `None` for an unsharded one.
    pub shard: Option<u16>,
    /// The event id (client supplied, escaped in the key).
    pub eid: String,
}

impl EventKey {
    /// The partition key: `SITE#{site}#H#{YYYY-MM-DDTHH}[#{shard}]`.
    pub fn pk(&self) -> String {
        event_pk(&self.site, hour_start(self.at), self.shard)
    }

    /// The sort key: `{mm:ss.mmm}#{eid}`.
    pub fn sk(&self) -> String {
        let within = self.at - hour_start(self.at);
        format!(
            "{:02}:{:02}.{:03}#{}",
            within / MINUTE_MS,
            (within % MINUTE_MS) / 1000,
            within % 1000,
            escape(&self.eid)
        )
    }

    /// Parses a pair of keys built by [`EventKey::pk`] and [`EventKey::sk`].
    pub fn parse(pk: &str, sk: &str) -> Option<Self> {
        let (site, hour, shard) = parse_event_pk(pk)?;
        let (time, eid) = sk.split_once('#')?;
        let t = time.as_bytes();
        if t.len() != 9 || t[2] != b':' || t[5] != b'.' {
            return None;
        }
        let num = |s: &str| -> Option<i64> {
            s.bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| s.parse().ok())?
        };
        let (m, s, ms) = (num(&time[0..2])?, num(&time[3..5])?, num(&time[6..9])?);
        if m > 59 || s > 59 {
            return None;
        }
        Some(Self {
            site,
            at: hour + m * MINUTE_MS + s * 1000 + ms,
            shard,
            eid: unescape(eid)?,
        })
    }
}

/// The start of the UTC hour containing an instant.
pub fn hour_start(at: Millis) -> Millis {
    at.div_euclid(HOUR_MS) * HOUR_MS
}

/// The partition key of one UTC hour of a site's raw events.
pub fn event_pk(site: &str, hour: Millis, shard: Option<u16>) -> String {
    let day = utc_date(hour);
    let h = (hour - utc_midnight(day)) / HOUR_MS;
    match shard {
        Some(shard) => format!("SITE#{site}#H#{}T{h:02}#{shard}", format_date(day)),
        None => format!("SITE#{site}#H#{}T{h:02}", format_date(day)),
    }
}

/// The sort-key lower bound of events at or after `at` within its hour
/// partition (for `sk >= :from` conditions).
pub fn event_sk_from(at: Millis) -> String {
    let within = at - hour_start(at);
    format!(
        "{:02}:{:02}.{:03}",
        within / MINUTE_MS,
        (within % MINUTE_MS) / 1000,
        within % 1000
    )
}

/// Parses [`event_pk`] into the site, the hour start and the shard.
pub fn parse_event_pk(pk: &str) -> Option<(String, Millis, Option<u16>)> {
    let rest = pk.strip_prefix("SITE#")?;
    let (site, rest) = rest.split_once("#H#")?;
    if !valid_site_id(site) {
        return None;
    }
    let (hour_text, shard) = match rest.split_once('#') {
        Some((h, s)) => {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (h, Some(s.parse().ok()?))
        }
        None => (rest, None),
    };
    let (day, h) = hour_text.split_once('T')?;
    if h.len() != 2 || !h.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let h: i64 = h.parse().ok()?;
    if h > 23 {
        return None;
    }
    Some((
        site.to_owned(),
        utc_midnight(parse_date(day)?) + h * HOUR_MS,
        shard,
    ))
}

/// The start of every UTC hour that overlaps `[from, to)`.
pub fn hours_between(from: Millis, to: Millis) -> Vec<Millis> {
    let mut out = Vec::new();
    let mut hour = hour_start(from);
    while hour < to {
        out.push(hour);
        hour += HOUR_MS;
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use time::macros::date;

    fn site_id() -> impl Strategy<Value = String> {
        "[a-z0-9][a-z0-9._-]{0,40}"
    }

    #[test]
    fn account_keys() {
        assert_eq!(user_pk("0123456789abcdef"), "USER#0123456789abcdef");
        assert_eq!(email_pk("a#b@example.com"), "EMAIL#a%23b@example.com");
        assert_eq!(session_sk("ab"), "SESSION#ab");
        assert_eq!(pending_sk("ab"), "PENDING#ab");
        assert_eq!(member_sk("blog"), "MEMBER#blog");
        assert_eq!(parse_member_sk("MEMBER#blog").as_deref(), Some("blog"));
        assert_eq!(invite_sk("ab"), "INVITE#ab");
        assert_eq!(setup_sk("ab"), "SETUP#ab");
        assert_eq!(reset_sk("ab"), "RESET#ab");
        let sk = audit_sk(1_700_000_000_000, "a1b2c3");
        assert_eq!(sk, "AUDIT#1700000000000#a1b2c3");
        assert_eq!(
            parse_audit_sk(&sk),
            Some((1_700_000_000_000, "a1b2c3".to_owned()))
        );
        // Thirteen digits keep entries in time order as strings.
        assert!(audit_sk(999, "x") < audit_sk(1_000, "x"));
        assert_eq!(parse_audit_sk("AUDIT#12#x"), None);
        assert_eq!(guess_pk("NET#ab"), "GUESS#NET%23ab");
        assert_eq!(guess_sk(900_000), "900000");
    }

    #[test]
    fn event_key_has_the_documented_shape() {
        let at = utc_midnight(date!(2026 - 11 - 30)) + 13 * HOUR_MS + 5 * MINUTE_MS + 7_042;
        let key = EventKey {
            site: "blog".into(),
            at,
            shard: None,
            eid: "abc123".into(),
        };
        assert_eq!(key.pk(), "SITE#blog#H#2026-11-30T13");
        assert_eq!(key.sk(), "05:07.042#abc123");
        let sharded = EventKey {
            shard: Some(3),
            ..key
        };
        assert_eq!(sharded.pk(), "SITE#blog#H#2026-11-30T13#3");
    }

    #[test]
    fn a_hash_in_user_text_cannot_forge_a_key() {
        let key = EventKey {
            site: "blog".into(),
            at: 0,
            shard: None,
            eid: "x#GOAL#1".into(),
        };
        assert_eq!(key.sk(), "00:00.000#x%23GOAL%231");
        assert_eq!(goal_sk("a#b"), "GOAL#a%23b");
        assert_eq!(parse_goal_sk("GOAL#a#b"), None);
    }

    #[test]
    fn site_ids_are_a_small_ascii_alphabet() {
        for ok in ["blog", "example.com", "my-site_2", "0"] {
            assert!(valid_site_id(ok), "{ok}");
        }
        let long = "a".repeat(65);
        for bad in [
            "",
            "Blog",
            "-x",
            "a#b",
            "ｂlog",
            "blo\u{0301}g",
            "a b",
            long.as_str(),
        ] {
            assert!(!valid_site_id(bad), "{bad}");
        }
    }

    #[test]
    fn rejects_malformed_keys() {
        assert_eq!(parse_event_pk("SITE#blog#H#2026-11-30T24"), None);
        assert_eq!(parse_event_pk("SITE#Blog#H#2026-11-30T01"), None);
        assert_eq!(parse_event_pk("SITE#blog#H#2026-11-30T01#"), None);
        assert_eq!(
            EventKey::parse("SITE#blog#H#2026-11-30T01", "61:00.000#a"),
            None
        );
        assert_eq!(parse_rollup_day_sk("ROLLUP#DAY#2026-13-01"), None);
        assert_eq!(parse_api_key_sk("KEY#abc"), None);
    }

    #[test]
    fn segment_keys_have_the_documented_shape() {
        let day = date!(2026 - 11 - 30);
        assert_eq!(segment_pk("blog"), "SITE#blog#SEG");
        assert_eq!(segment_day_pk("blog", day), "SITE#blog#SEG#2026-11-30");
        assert_eq!(manifest_sk(day), "M#2026-11-30");
        assert_eq!(
            part_key("blog", day, &day_part_id("0123456789abcdef")),
            (
                "SITE#blog#SEG#2026-11-30".to_owned(),
                "P#2026-11-30#d-0123456789abcdef".to_owned()
            )
        );
        assert_eq!(
            part_key("blog", day, "0123456789abcdef"),
            (
                "SITE#blog#SEG".to_owned(),
                "P#2026-11-30#0123456789abcdef".to_owned()
            )
        );
        assert_eq!(parse_segment_day_pk("SITE#blog#SEG#2026-13-01"), None);
        assert_eq!(parse_segment_day_pk("SITE#blog#H#2026-11-30"), None);
    }

    #[test]
    fn hours_between_covers_partial_hours() {
        let h = HOUR_MS;
        assert_eq!(hours_between(h + 5, 3 * h), vec![h, 2 * h]);
        assert_eq!(hours_between(h, h), Vec::<Millis>::new());
        assert_eq!(hours_between(h, h + 1), vec![h]);
    }

    proptest! {
        #[test]
        fn event_keys_round_trip(
            site in site_id(),
            at in 0i64..4_102_444_800_000,
            shard in proptest::option::of(0u16..1000),
            eid in "\\PC{1,40}",
        ) {
            let key = EventKey { site, at, shard, eid };
            prop_assert_eq!(EventKey::parse(&key.pk(), &key.sk()), Some(key.clone()));
        }

        #[test]
        fn event_sort_keys_order_by_time(site in site_id(), a in 0i64..3_600_000, b in 0i64..3_600_000) {
            let ka = EventKey { site: site.clone(), at: a, shard: None, eid: "e".into() };
            let kb = EventKey { site, at: b, shard: None, eid: "e".into() };
            prop_assert_eq!(a.cmp(&b), ka.sk().cmp(&kb.sk()));
            prop_assert!(event_sk_from(a).as_str() <= ka.sk().as_str());
        }

        #[test]
        fn escape_round_trips_and_drops_hashes(text in "\\PC*|[#%\\x00-\\x1f]{0,8}") {
            let escaped = escape(&text);
            prop_assert!(!escaped.contains('#'));
            prop_assert_eq!(unescape(&escaped), Some(text));
        }

        #[test]
        fn segment_keys_round_trip(site in site_id(), days in 0i32..2_900_000, id in "[0-9a-f]{16}|\\PC{1,20}") {
            let day = Date::from_julian_day(days + 1_721_426).unwrap();
            let pk = segment_pk(&site);
            prop_assert_eq!(parse_segment_pk(&pk), Some(site.as_str()));
            prop_assert_eq!(parse_manifest_sk(&manifest_sk(day)), Some(day));
            prop_assert_eq!(parse_part_sk(&part_sk(day, &id)), Some((day, id.clone())));
            // Manifests and parts of a day range are each one sort-key range.
            prop_assert!(manifest_sk(day) < part_sk(day, &id));
            let day_pk = segment_day_pk(&site, day);
            prop_assert_eq!(parse_segment_day_pk(&day_pk), Some((site.as_str(), day)));
            prop_assert_eq!(parse_segment_pk(&day_pk), None);
            prop_assert_eq!(parse_segment_day_pk(&pk), None);
        }

        #[test]
        fn a_part_is_keyed_by_the_layout_its_id_names(site in site_id(), days in 0i32..2_900_000, hash in "[0-9a-f]{16}") {
            let day = Date::from_julian_day(days + 1_721_426).unwrap();
            let id = day_part_id(&hash);
            prop_assert_eq!(part_layout(&id), PartLayout::Day);
            prop_assert_eq!(part_key(&site, day, &id), (segment_day_pk(&site, day), part_sk(day, &id)));
            prop_assert_eq!(parse_part_sk(&part_sk(day, &id)), Some((day, id.clone())));
            // A bare hash is of the first layout, whatever its digits.
            prop_assert_eq!(part_layout(&hash), PartLayout::Site);
            prop_assert_eq!(part_key(&site, day, &hash), (segment_pk(&site), part_sk(day, &hash)));
        }

        #[test]
        fn day_keys_round_trip(days in 0i32..2_900_000) {
            let day = Date::from_julian_day(days + 1_721_426).unwrap();
            prop_assert_eq!(parse_rollup_day_sk(&rollup_day_sk(day)), Some(day));
            prop_assert_eq!(parse_rollup_dims_sk(&rollup_dims_sk(day)), Some(day));
            prop_assert_eq!(parse_rollup_trans_sk(&rollup_trans_sk(day)), Some(day));
            prop_assert_eq!(parse_salt_sk(&salt_sk(day)), Some(day));
        }

        #[test]
        fn site_and_named_keys_round_trip(site in site_id(), name in "\\PC{0,30}") {
            let (pk, sk) = (site_pk(&site), site_sk(&site));
            prop_assert_eq!(parse_site_pk(&pk), Some(site.as_str()));
            prop_assert_eq!(parse_site_sk(&sk), Some(site.as_str()));
            prop_assert_eq!(parse_goal_sk(&goal_sk(&name)), Some(name.clone()));
            prop_assert_eq!(parse_funnel_sk(&funnel_sk(&name)), Some(name.clone()));
            prop_assert_eq!(parse_job_sk(&job_sk(&name)), Some(name));
        }

        #[test]
        fn api_key_hashes_round_trip(hash in "[0-9a-f]{64}") {
            let sk = api_key_sk(&hash);
            prop_assert_eq!(parse_api_key_sk(&sk), Some(hash.as_str()));
            let sk = share_sk(&hash);
            prop_assert_eq!(parse_share_sk(&sk), Some(hash.as_str()));
            prop_assert_eq!(parse_api_key_sk(&sk), None);
            let sk = share_attempts_sk(&hash, 29_000_000);
            prop_assert_eq!(parse_share_attempts_sk(&sk), Some((hash.as_str(), 29_000_000)));
            prop_assert!(!sk.starts_with(SHARE_PREFIX), "never in a listing of links");
            prop_assert_eq!(parse_share_sk(&sk), None);
        }
    }
}
