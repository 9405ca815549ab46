//! Traffic alerts (issue 23, item 2): per site, a spike or a drop of the
//! hour the job just sealed, judged against the same hour of the week in
//! the site's zone, and what each channel is sent.
//!
//! Pure, as the rest of core: the job passes in the hourly counts, the
//! zone, the sealed hour, the site's [`AlertConfig`], when the site's last
//! alert went out, the secrets and the instants.
//!
//! # The model
//!
//! - **Hour of week.** The sealed hour `H` (a UTC hour start) has a local
//!   hour of the week in the site's zone: weekday (Monday = 0) × 24 + local
//!   hour, so Monday 09:00 in Auckland is the same slot in NZST and NZDT
//!   although its UTC hour moves ([`hour_of_week`]).
//! - **Baseline.** The samples are the counts of the series' hours with
//!   that same local hour of week in the [`BASELINE_WEEKS`] weeks before
//!   `H` (an hour from more than one day to 8 weeks and one day before `H`:
//!   exactly one local week each, whatever the DST changes between). An
//!   hour missing from the series is *unknown* (before the site existed,
//!   past retention), not zero: the caller lists hours without traffic as
//!   zero. A local hour skipped by a spring change gives that week no
//!   sample; one repeated by an autumn change gives two. With fewer than
//!   [`MIN_BASELINE_WEEKS`] samples nothing fires. The baseline is the
//!   **median** of the samples and the spread their **MAD** (median of the
//!   absolute deviations from the median; not scaled to a σ): both robust,
//!   so one past spike or outage in the window does not move them much.
//! - **Minimum volume.** A baseline below [`AlertConfig::min_volume`]
//!   never fires: at a handful of visitors an hour, doubling is noise.
//! - **Spike**: observed ≥ max(baseline × `spike_pct`/100, baseline +
//!   `spread_pct`/100 × MAD); a steady hour needs the ratio, a noisy one
//!   also needs to leave its usual spread. **Drop**: observed ≤ baseline ×
//!   `drop_pct`/100. The observed count is the series' entry for `H` (none
//!   is zero: the hour is sealed). The comparisons are exact (integers, no
//!   floating point), so a series multiplied by a constant keeps its
//!   verdicts once its baseline clears the minimum volume.
//! - **Cooldown.** At most one alert per site per `cooldown_hours`: an
//!   hour that would fire less than that after the site's last alert (of
//!   either kind) is quiet, so a spike lasting a few hours alerts once.
//!
//! # Delivery
//!
//! Email ([`email`]), a Slack incoming webhook ([`SlackBody`]) and a
//! generic webhook: a JSON [`WebhookBody`] signed Stripe-style in
//! [`SIGNATURE_HEADER`] (`t=<unix seconds>,v1=<hex HMAC-SHA256(secret,
//! "<t>.<body>")>`, [`sign_webhook`], [`verify_webhook`]; a receiver
//! rejects a timestamp more than [`SIGNATURE_TOLERANCE_SECS`] off its
//! clock, so a captured request cannot be replayed later). A failed
//! delivery is retried on [`RETRY_DELAYS_MS`] ([`retry_delay`]), each
//! attempt kept as a [`DeliveryRecord`].

use crate::hex::{decode as unhex, encode as hex};
use crate::product::report_mail::schedule::local_hour;
use crate::time::zone::Zone;
use crate::{HOUR_MS, MINUTE_MS, Millis};
use ring::hmac;
use serde::{Deserialize, Serialize};

/// Weeks of history the baseline reads.
pub const BASELINE_WEEKS: i64 = 8;

/// Samples (weeks) the baseline needs before anything fires.
pub const MIN_BASELINE_WEEKS: usize = 4;

const WEEK_MS: Millis = 7 * crate::DAY_MS;

/// What a site is alerted about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Watch {
    /// Spikes only.
    Spike,
    /// Drops only.
    Drop,
    /// Both.
    Both,
}

impl Watch {
    fn spikes(self) -> bool {
        matches!(self, Self::Spike | Self::Both)
    }

    fn drops(self) -> bool {
        matches!(self, Self::Drop | Self::Both)
    }
}

/// A site's alert settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertConfig {
    /// Spikes, drops or both.
    pub watch: Watch,
    /// The baseline (per hour) below which nothing fires; at least 1.
    pub min_volume: u64,
    /// A spike is at least this percentage of the baseline (over 100).
    pub spike_pct: u32,
    /// …and at least the baseline plus this percentage of the MAD.
    pub spread_pct: u32,
    /// A drop is at most this percentage of the baseline (under 100).
    pub drop_pct: u32,
    /// Hours after an alert during which the site gets no other; at least 1.
    pub cooldown_hours: u32,
}

impl Default for AlertConfig {
    /// Both, from 20 an hour: a spike at 3× and baseline + 5 MAD, a drop at
    /// 30 %, one alert per 6 hours.
    fn default() -> Self {
        Self {
            watch: Watch::Both,
            min_volume: 20,
            spike_pct: 300,
            spread_pct: 500,
            drop_pct: 30,
            cooldown_hours: 6,
        }
    }
}

/// Why an [`AlertConfig`] was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AlertConfigError {
    /// `min_volume` is 0.
    #[error("the minimum volume must be at least 1")]
    MinVolume,
    /// `spike_pct` is 100 or less (a steady hour would fire).
    #[error("the spike factor must be above 100 %")]
    SpikeFactor,
    /// `drop_pct` is 100 or more (a steady hour would fire).
    #[error("the drop factor must be below 100 %")]
    DropFactor,
    /// `cooldown_hours` is 0 or above [`MAX_COOLDOWN_HOURS`].
    #[error("the cooldown must be 1 to 168 hours")]
    Cooldown,
    /// `spread_pct` above [`MAX_PCT`], `spike_pct` above it, or
    /// `min_volume` above [`MAX_MIN_VOLUME`].
    #[error(
        "a threshold is out of range (percentages at most 10000, minimum volume at most 1000000000)"
    )]
    OutOfRange,
    /// An alert address is not an email address.
    #[error("not an email address")]
    Email,
    /// More than [`MAX_ALERT_EMAILS`] addresses.
    #[error("at most 10 alert addresses")]
    TooManyEmails,
    /// A webhook URL refused (the reason).
    #[error("invalid webhook URL: {0}")]
    Url(&'static str),
    /// Alerts turned on without a channel to send them to.
    #[error("alerts need at least one channel (an address, a Slack or a webhook URL)")]
    NoChannel,
}

impl AlertConfigError {
    /// The machine code of the error body.
    pub fn code(&self) -> &'static str {
        match self {
            Self::MinVolume => "invalid_min_volume",
            Self::SpikeFactor => "invalid_spike_pct",
            Self::DropFactor => "invalid_drop_pct",
            Self::Cooldown => "invalid_cooldown",
            Self::OutOfRange => "threshold_out_of_range",
            Self::Email => "invalid_email",
            Self::TooManyEmails => "too_many_emails",
            Self::Url(_) => "invalid_url",
            Self::NoChannel => "no_channel",
        }
    }
}

/// The longest cooldown: a week.
pub const MAX_COOLDOWN_HOURS: u32 = 168;
/// The largest percentage a threshold takes.
pub const MAX_PCT: u32 = 10_000;
/// The largest minimum volume.
pub const MAX_MIN_VOLUME: u64 = 1_000_000_000;

impl AlertConfig {
    /// Checks the settings.
    pub fn validate(&self) -> Result<(), AlertConfigError> {
        if self.min_volume == 0 {
            return Err(AlertConfigError::MinVolume);
        }
        if self.spike_pct <= 100 {
            return Err(AlertConfigError::SpikeFactor);
        }
        if self.drop_pct >= 100 {
            return Err(AlertConfigError::DropFactor);
        }
        if self.cooldown_hours == 0 || self.cooldown_hours > MAX_COOLDOWN_HOURS {
            return Err(AlertConfigError::Cooldown);
        }
        if self.spike_pct > MAX_PCT || self.spread_pct > MAX_PCT || self.min_volume > MAX_MIN_VOLUME
        {
            return Err(AlertConfigError::OutOfRange);
        }
        Ok(())
    }
}

/// Which way an hour went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertKind {
    /// Above the spike threshold.
    Spike,
    /// Below the drop threshold.
    Drop,
}

impl AlertKind {
    /// `spike` or `drop`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Spike => "spike",
            Self::Drop => "drop",
        }
    }
}

/// An hour that fires.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Alert {
    /// Spike or drop.
    pub kind: AlertKind,
    /// The sealed hour's start, Unix ms.
    pub hour: Millis,
    /// Its count.
    pub observed: u64,
    /// The median of the same hour of week.
    pub baseline: f64,
    /// The threshold it crossed.
    pub threshold: f64,
}

/// The verdict on one sealed hour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// Nothing to send.
    None,
    /// A spike.
    Spike(Alert),
    /// A drop.
    Drop(Alert),
}

impl Verdict {
    /// The alert, if any.
    pub fn alert(&self) -> Option<&Alert> {
        match self {
            Self::None => None,
            Self::Spike(a) | Self::Drop(a) => Some(a),
        }
    }
}

/// The hour of the week (0 = Monday 00:00 local … 167) of an instant in a
/// zone.
pub fn hour_of_week(zone: &Zone, at: Millis) -> u32 {
    let day = u32::from(zone.local_date(at).weekday().number_days_from_monday());
    let hour = u32::from(local_hour(zone, at));
    day * 24 + hour
}

/// The baseline samples of `hour`: the counts of the same local hour of
/// week in the [`BASELINE_WEEKS`] weeks before it, oldest first.
pub fn baseline_samples(series: &[(Millis, u64)], zone: &Zone, hour: Millis) -> Vec<u64> {
    let slot = hour_of_week(zone, hour);
    let from = hour - BASELINE_WEEKS * WEEK_MS - crate::DAY_MS;
    let to = hour - crate::DAY_MS;
    let mut picked: Vec<(Millis, u64)> = series
        .iter()
        .copied()
        .filter(|&(t, _)| t >= from && t < to && hour_of_week(zone, t) == slot)
        .collect();
    picked.sort_by_key(|&(t, _)| t);
    picked.into_iter().map(|(_, n)| n).collect()
}

/// Twice the median (an integer even for an even count). `values` sorted.
fn median2(sorted: &[u64]) -> u128 {
    let n = sorted.len();
    if n == 0 {
        return 0;
    }
    if !n.is_multiple_of(2) {
        2 * u128::from(sorted[n / 2])
    } else {
        u128::from(sorted[n / 2 - 1]) + u128::from(sorted[n / 2])
    }
}

/// The baseline of some samples, exactly: twice the median and four times
/// the MAD.
fn stats(samples: &[u64]) -> (u128, u128) {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let m2 = median2(&sorted);
    // |2x − 2m| = 2|x − m|; their doubled median is 4 × MAD.
    let mut dev: Vec<u64> = sorted
        .iter()
        .map(|&x| u64::try_from((2 * u128::from(x)).abs_diff(m2)).unwrap_or(u64::MAX))
        .collect();
    dev.sort_unstable();
    (m2, median2(&dev))
}

/// The median and the MAD of some samples.
pub fn median_and_mad(samples: &[u64]) -> (f64, f64) {
    let (m2, mad4) = stats(samples);
    (m2 as f64 / 2.0, mad4 as f64 / 4.0)
}

/// The verdict on the sealed `hour` of a site in `zone` before any
/// cooldown: the model of the module documentation.
pub fn detect(
    series: &[(Millis, u64)],
    zone: &Zone,
    hour: Millis,
    config: &AlertConfig,
) -> Verdict {
    let samples = baseline_samples(series, zone, hour);
    if samples.len() < MIN_BASELINE_WEEKS {
        return Verdict::None;
    }
    let (m2, mad4) = stats(&samples);
    if m2 < 2 * u128::from(config.min_volume) {
        return Verdict::None;
    }
    let observed: u64 = series
        .iter()
        .filter(|&&(t, _)| t == hour)
        .map(|&(_, n)| n)
        .sum();
    // Everything in 400ths: observed × 400, baseline × 400 = m2 × 200,
    // baseline × pct/100 × 400 = m2 × 2 × pct, MAD × pct/100 × 400 = mad4 × pct.
    let obs = u128::from(observed) * 400;
    let baseline = m2 as f64 / 2.0;
    let alert = |kind, threshold_400: u128| Alert {
        kind,
        hour,
        observed,
        baseline,
        threshold: threshold_400 as f64 / 400.0,
    };
    if config.watch.spikes() {
        let by_ratio = m2 * 2 * u128::from(config.spike_pct);
        let by_spread = m2 * 200 + mad4 * u128::from(config.spread_pct);
        let threshold = by_ratio.max(by_spread);
        if obs >= threshold {
            return Verdict::Spike(alert(AlertKind::Spike, threshold));
        }
    }
    if config.watch.drops() {
        let threshold = m2 * 2 * u128::from(config.drop_pct);
        if obs <= threshold {
            return Verdict::Drop(alert(AlertKind::Drop, threshold));
        }
    }
    Verdict::None
}

/// Whether a site whose last alert went out for hour `last` (if any) may
/// be alerted for `hour`.
pub fn cooled_down(last: Option<Millis>, hour: Millis, cooldown_hours: u32) -> bool {
    last.is_none_or(|last| hour - last >= i64::from(cooldown_hours) * HOUR_MS)
}

/// The verdict on the sealed `hour`, honouring the cooldown after the
/// site's last alert (`last_alert`, the hour it was for).
pub fn evaluate(
    series: &[(Millis, u64)],
    zone: &Zone,
    hour: Millis,
    config: &AlertConfig,
    last_alert: Option<Millis>,
) -> Verdict {
    if !cooled_down(last_alert, hour, config.cooldown_hours) {
        return Verdict::None;
    }
    detect(series, zone, hour, config)
}

/// The generic webhook's JSON body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookBody {
    /// The site id.
    pub site: String,
    /// `spike` or `drop`.
    pub kind: AlertKind,
    /// The hour's start, RFC 3339 UTC.
    pub hour: String,
    /// The hour's count.
    pub observed: u64,
    /// The median of the same hour of week.
    pub baseline: f64,
    /// The threshold it crossed.
    pub threshold: f64,
    /// The site's dashboard.
    pub dashboard_url: String,
}

fn utc_iso(at: Millis) -> String {
    Zone::utc().local_iso(at)
}

impl WebhookBody {
    /// The body of `alert` for `site`.
    pub fn new(site: &str, alert: &Alert, dashboard_url: &str) -> Self {
        Self {
            site: site.to_owned(),
            kind: alert.kind,
            hour: utc_iso(alert.hour),
            observed: alert.observed,
            baseline: alert.baseline,
            threshold: alert.threshold,
            dashboard_url: dashboard_url.to_owned(),
        }
    }

    /// The JSON text sent (and signed).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The header carrying the webhook's signature.
pub const SIGNATURE_HEADER: &str = "Tally-Signature";

/// How far (seconds) a signature's timestamp may be from the receiver's
/// clock.
pub const SIGNATURE_TOLERANCE_SECS: i64 = 300;

fn webhook_mac(secret: &[u8], t: i64, body: &str) -> hmac::Tag {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    hmac::sign(&key, format!("{t}.{body}").as_bytes())
}

/// The [`SIGNATURE_HEADER`] value of `body` sent at `now_secs` (Unix
/// seconds): `t=<now_secs>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
pub fn sign_webhook(secret: &[u8], body: &str, now_secs: i64) -> String {
    format!(
        "t={now_secs},v1={}",
        hex(webhook_mac(secret, now_secs, body).as_ref())
    )
}

/// Why a webhook signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// Not `t=…,v1=…`.
    #[error("malformed signature header")]
    Malformed,
    /// The timestamp is too far from now.
    #[error("signature timestamp outside the tolerance")]
    Stale,
    /// No `v1` matches.
    #[error("signature does not match")]
    Mismatch,
}

/// Checks a [`SIGNATURE_HEADER`] value against `body` at `now_secs`
/// (constant-time; any of several `v1` values may match, as when a secret
/// is being rotated).
pub fn verify_webhook(
    secret: &[u8],
    body: &str,
    header: &str,
    now_secs: i64,
) -> Result<(), SignatureError> {
    let mut t = None;
    let mut macs = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = Some(v.parse::<i64>().map_err(|_| SignatureError::Malformed)?),
            Some(("v1", v)) => macs.push(unhex(v).ok_or(SignatureError::Malformed)?),
            _ => {}
        }
    }
    let t = t.ok_or(SignatureError::Malformed)?;
    if macs.is_empty() {
        return Err(SignatureError::Malformed);
    }
    if now_secs.abs_diff(t) > SIGNATURE_TOLERANCE_SECS.unsigned_abs() {
        return Err(SignatureError::Stale);
    }
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let text = format!("{t}.{body}");
    if macs
        .iter()
        .any(|mac| hmac::verify(&key, text.as_bytes(), mac).is_ok())
    {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

fn sentence(site: &str, alert: &Alert, zone: &Zone) -> String {
    let local = zone.local_minute_label(alert.hour);
    let word = match alert.kind {
        AlertKind::Spike => "Traffic spike",
        AlertKind::Drop => "Traffic drop",
    };
    format!(
        "{word} on {site}: {} in the hour from {local} ({}), usually {}.",
        alert.observed,
        zone.name(),
        alert.baseline
    )
}

/// A Slack incoming webhook's body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlackBody {
    /// The message (Slack's mrkdwn).
    pub text: String,
}

impl SlackBody {
    /// The message of `alert` for `site`, its hour in the site's zone.
    pub fn new(site: &str, alert: &Alert, zone: &Zone, dashboard_url: &str) -> Self {
        Self {
            text: format!(
                "{} <{dashboard_url}|Open the dashboard>",
                sentence(site, alert, zone)
            ),
        }
    }
}

/// An alert email: subject and plain text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertEmail {
    /// The subject.
    pub subject: String,
    /// The plain-text body.
    pub text: String,
}

/// The email of `alert` for `site`, its hour in the site's zone.
pub fn email(site: &str, alert: &Alert, zone: &Zone, dashboard_url: &str) -> AlertEmail {
    let word = match alert.kind {
        AlertKind::Spike => "Traffic spike",
        AlertKind::Drop => "Traffic drop",
    };
    AlertEmail {
        subject: format!("{word} on {site}"),
        text: format!(
            "{}\n\nThreshold: {}.\nDashboard: {dashboard_url}\n\nYou get at most one alert for this site per cooldown.\n",
            sentence(site, alert, zone),
            alert.threshold
        ),
    }
}

/// The waits before the retries of a failed delivery: 1 min, 5 min,
/// 30 min, 2 h; after the fourth retry fails the delivery is given up.
pub const RETRY_DELAYS_MS: [Millis; 4] = [MINUTE_MS, 5 * MINUTE_MS, 30 * MINUTE_MS, 2 * HOUR_MS];

/// The wait after `failed` attempts (1 = the first try failed) before the
/// next, or `None`: give up (or nothing failed yet).
pub fn retry_delay(failed: u32) -> Option<Millis> {
    let i = usize::try_from(failed.checked_sub(1)?).ok()?;
    RETRY_DELAYS_MS.get(i).copied()
}

/// A delivery channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    /// Email.
    Email,
    /// A Slack incoming webhook.
    Slack,
    /// The generic, signed webhook.
    Webhook,
}

/// One attempt in the delivery log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryRecord {
    /// The channel.
    pub channel: Channel,
    /// The alert's hour, Unix ms.
    pub hour: Millis,
    /// 1 for the first try.
    pub attempt: u32,
    /// When it was made, Unix ms.
    pub at: Millis,
    /// The HTTP status, if one came back.
    pub status: Option<u16>,
    /// Whether it was delivered.
    pub ok: bool,
    /// When the next attempt is due (`None`: delivered or given up).
    pub next_at: Option<Millis>,
}

impl DeliveryRecord {
    /// The record of attempt `attempt` at `at`, its next attempt per
    /// [`retry_delay`].
    pub fn new(
        channel: Channel,
        hour: Millis,
        attempt: u32,
        at: Millis,
        status: Option<u16>,
        ok: bool,
    ) -> Self {
        let next_at = if ok {
            None
        } else {
            retry_delay(attempt).map(|d| at + d)
        };
        Self {
            channel,
            hour,
            attempt,
            at,
            status,
            ok,
            next_at,
        }
    }
}

/// The hour the job judges at `now`: the UTC hour before the current one
/// (sealed: the job runs at 20 past).
pub fn sealed_hour(now: Millis) -> Millis {
    now.div_euclid(HOUR_MS) * HOUR_MS - HOUR_MS
}

/// The hours whose counts [`detect`] reads for `hour`: its baseline's
/// candidates ([`baseline_samples`]' window and hour of week), oldest
/// first, then `hour` itself. The job reads exactly these (at most about
/// ten), not the whole eight weeks.
pub fn sample_hours(zone: &Zone, hour: Millis) -> Vec<Millis> {
    let slot = hour_of_week(zone, hour);
    let from = hour - BASELINE_WEEKS * WEEK_MS - crate::DAY_MS;
    let to = hour - crate::DAY_MS;
    let mut out: Vec<Millis> = (0..)
        .map(|i| from + i * HOUR_MS)
        .take_while(|&t| t < to)
        .filter(|&t| hour_of_week(zone, t) == slot)
        .collect();
    out.push(hour);
    out
}

/// The most alert addresses a site has.
pub const MAX_ALERT_EMAILS: usize = 10;

/// The longest webhook URL accepted.
pub const MAX_URL_LEN: usize = 2000;

/// A site's alert settings as stored: whether the job judges its hours,
/// the model's thresholds and where alerts go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertSettings {
    /// Whether the job judges the site's hours.
    pub enabled: bool,
    /// The thresholds.
    pub config: AlertConfig,
    /// Addresses mailed (normalised).
    pub emails: Vec<String>,
    /// A Slack incoming webhook (its path is a credential: never logged,
    /// shown as [`redact_url`]).
    pub slack_url: Option<String>,
    /// The generic webhook.
    pub webhook_url: Option<String>,
    /// The generic webhook's signing secret (`whsec_` + 64 hex digits),
    /// made when its URL is first set; the HMAC key is this text's bytes.
    pub webhook_secret: Option<String>,
    /// When the settings were last written, Unix ms.
    pub updated_at: Millis,
}

impl AlertSettings {
    /// The channels configured, in delivery order.
    pub fn channels(&self) -> Vec<Channel> {
        let mut out = Vec::new();
        if !self.emails.is_empty() {
            out.push(Channel::Email);
        }
        if self.slack_url.is_some() {
            out.push(Channel::Slack);
        }
        if self.webhook_url.is_some() {
            out.push(Channel::Webhook);
        }
        out
    }
}

/// A change of a site's alert settings, as the console's body and the
/// CLI's flags give it: every field optional (unchanged when absent); an
/// empty URL removes that channel.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertSpec {
    /// Turn alerts on or off.
    pub enabled: Option<bool>,
    /// Spikes, drops or both.
    pub watch: Option<Watch>,
    /// [`AlertConfig::min_volume`].
    pub min_volume: Option<u64>,
    /// [`AlertConfig::spike_pct`].
    pub spike_pct: Option<u32>,
    /// [`AlertConfig::spread_pct`].
    pub spread_pct: Option<u32>,
    /// [`AlertConfig::drop_pct`].
    pub drop_pct: Option<u32>,
    /// [`AlertConfig::cooldown_hours`].
    pub cooldown_hours: Option<u32>,
    /// The addresses (the whole list).
    pub emails: Option<Vec<String>>,
    /// The Slack incoming webhook (`""` removes it).
    pub slack_url: Option<String>,
    /// The generic webhook (`""` removes it and its secret).
    pub webhook_url: Option<String>,
    /// Make a new signing secret for the generic webhook.
    #[serde(default)]
    pub rotate_secret: bool,
}

impl AlertSpec {
    /// The settings after this change of `current` (none: the defaults,
    /// off), checked: thresholds by [`AlertConfig::validate`], addresses
    /// normalised (at most [`MAX_ALERT_EMAILS`]), URLs by [`check_url`]
    /// (`allow_local`: plain `http` to this machine, as in `tally dev`),
    /// a channel when on. `fresh_secret` (random bytes from the caller)
    /// becomes the signing secret when a webhook URL is set without one or
    /// `rotate_secret` asks.
    pub fn apply(
        self,
        current: Option<&AlertSettings>,
        fresh_secret: &[u8; 32],
        allow_local: bool,
        now: Millis,
    ) -> Result<AlertSettings, AlertConfigError> {
        let mut s = current.cloned().unwrap_or(AlertSettings {
            enabled: false,
            config: AlertConfig::default(),
            emails: Vec::new(),
            slack_url: None,
            webhook_url: None,
            webhook_secret: None,
            updated_at: now,
        });
        let c = &mut s.config;
        c.watch = self.watch.unwrap_or(c.watch);
        c.min_volume = self.min_volume.unwrap_or(c.min_volume);
        c.spike_pct = self.spike_pct.unwrap_or(c.spike_pct);
        c.spread_pct = self.spread_pct.unwrap_or(c.spread_pct);
        c.drop_pct = self.drop_pct.unwrap_or(c.drop_pct);
        c.cooldown_hours = self.cooldown_hours.unwrap_or(c.cooldown_hours);
        c.validate()?;
        if let Some(emails) = self.emails {
            let mut list = Vec::new();
            for e in emails {
                let e = crate::account::record::valid_email(&e).ok_or(AlertConfigError::Email)?;
                if !list.contains(&e) {
                    list.push(e);
                }
            }
            if list.len() > MAX_ALERT_EMAILS {
                return Err(AlertConfigError::TooManyEmails);
            }
            s.emails = list;
        }
        let url = |raw: String| -> Result<Option<String>, AlertConfigError> {
            if raw.trim().is_empty() {
                Ok(None)
            } else {
                check_url(&raw, allow_local).map(Some)
            }
        };
        if let Some(raw) = self.slack_url {
            s.slack_url = url(raw)?;
        }
        if let Some(raw) = self.webhook_url {
            s.webhook_url = url(raw)?;
        }
        if s.webhook_url.is_none() {
            s.webhook_secret = None;
        } else if s.webhook_secret.is_none() || self.rotate_secret {
            s.webhook_secret = Some(format!("whsec_{}", hex(fresh_secret)));
        }
        s.enabled = self.enabled.unwrap_or(s.enabled);
        if s.enabled && s.channels().is_empty() {
            return Err(AlertConfigError::NoChannel);
        }
        s.updated_at = now;
        Ok(s)
    }
}

/// Checks a Slack or webhook URL: `https` with a host, no user or
/// password, at most [`MAX_URL_LEN`] bytes, not an IP address of this
/// machine or a private network; with `allow_local` (`tally dev`, tests)
/// also plain `http` to `localhost`, `127.0.0.1` or `[::1]`. The URL as
/// parsed is returned.
pub fn check_url(raw: &str, allow_local: bool) -> Result<String, AlertConfigError> {
    use std::net::IpAddr;
    let raw = raw.trim();
    if raw.len() > MAX_URL_LEN {
        return Err(AlertConfigError::Url("longer than 2000 characters"));
    }
    let url = url::Url::parse(raw).map_err(|_| AlertConfigError::Url("not a URL"))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(AlertConfigError::Url("a user or password in the URL"));
    }
    let local = match url.host() {
        None => return Err(AlertConfigError::Url("no host")),
        Some(url::Host::Domain(d)) => {
            let local = d.eq_ignore_ascii_case("localhost");
            if !local && url.scheme() == "https" {
                // Names that resolve only inside, or spell an inside
                // address; the job checks what they resolve to again.
                crate::product::outbound::check_host(d).map_err(AlertConfigError::Url)?;
            }
            local
        }
        Some(url::Host::Ipv4(ip)) => {
            let ip = IpAddr::V4(ip);
            if !allow_local && internal(ip) {
                return Err(AlertConfigError::Url("an internal address"));
            }
            ip.is_loopback()
        }
        Some(url::Host::Ipv6(ip)) => {
            let ip = IpAddr::V6(ip);
            if !allow_local && internal(ip) {
                return Err(AlertConfigError::Url("an internal address"));
            }
            ip.is_loopback()
        }
    };
    match url.scheme() {
        "https" if !local || allow_local => Ok(url.to_string()),
        "http" if local && allow_local => Ok(url.to_string()),
        "https" => Err(AlertConfigError::Url("an internal address")),
        _ => Err(AlertConfigError::Url("not https")),
    }
}

/// Any special-purpose address ([`crate::product::outbound::special_purpose`]).
fn internal(ip: std::net::IpAddr) -> bool {
    crate::product::outbound::special_purpose(ip)
}

/// A URL as shown and logged: its scheme and host, the path (a Slack
/// webhook's credential) hidden.
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => format!(
            "{}://{}{}/…",
            u.scheme(),
            u.host_str().unwrap_or(""),
            u.port().map(|p| format!(":{p}")).unwrap_or_default()
        ),
        Err(_) => "…".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::product::report_mail::schedule::tests::at;
    use proptest::prelude::*;

    /// 2026-06-01T00:00Z, a Monday.
    const T0: Millis = 1_780_272_000_000;

    /// Nine weeks of hours ending with `hour`, count `f(t)`.
    fn series(hour: Millis, f: impl Fn(Millis) -> u64) -> Vec<(Millis, u64)> {
        let start = hour - 9 * WEEK_MS;
        (0..=9 * 168)
            .map(|i| start + i * HOUR_MS)
            .map(|t| (t, f(t)))
            .collect()
    }

    /// A weekly shape: every hour of the week its own level.
    fn weekly(levels: &[u64; 168], zone: &Zone) -> impl Fn(Millis) -> u64 {
        let levels = *levels;
        let zone = zone.clone();
        move |t| levels[hour_of_week(&zone, t) as usize]
    }

    fn config(watch: Watch, min_volume: u64) -> AlertConfig {
        AlertConfig {
            watch,
            min_volume,
            ..AlertConfig::default()
        }
    }

    #[test]
    fn t0_is_a_monday_midnight() {
        assert_eq!(T0, at("UTC", "2026-06-01T00:00"));
        assert_eq!(hour_of_week(&Zone::utc(), T0), 0);
    }

    #[test]
    fn the_median_and_mad_are_exact() {
        for (samples, want) in [
            (vec![5, 1, 3], (3.0, 2.0)),
            (vec![1, 2, 3, 4], (2.5, 1.0)),
            (vec![10, 10, 10, 10, 400], (10.0, 0.0)),
            (vec![1, 2], (1.5, 0.5)),
        ] {
            assert_eq!(median_and_mad(&samples), want, "{samples:?}");
        }
    }

    #[test]
    fn a_config_is_checked() {
        let ok = AlertConfig::default();
        assert_eq!(ok.validate(), Ok(()));
        for (bad, err) in [
            (
                AlertConfig {
                    min_volume: 0,
                    ..ok
                },
                AlertConfigError::MinVolume,
            ),
            (
                AlertConfig {
                    spike_pct: 100,
                    ..ok
                },
                AlertConfigError::SpikeFactor,
            ),
            (
                AlertConfig {
                    drop_pct: 100,
                    ..ok
                },
                AlertConfigError::DropFactor,
            ),
            (
                AlertConfig {
                    cooldown_hours: 0,
                    ..ok
                },
                AlertConfigError::Cooldown,
            ),
        ] {
            assert_eq!(bad.validate(), Err(err));
        }
    }

    #[test]
    fn thresholds_by_ratio_by_spread_and_for_drops() {
        let zone = Zone::utc();
        let hour = T0 + 9 * WEEK_MS;
        // Baseline samples 100 each week except a noisy pattern.
        let noisy = [60u64, 140, 100, 60, 140, 100, 100, 100];
        let cfg = AlertConfig {
            spike_pct: 120,
            ..config(Watch::Both, 1)
        };
        let mk = |observed: u64| {
            let mut s = series(hour, |_| 100);
            for (w, n) in noisy.iter().enumerate() {
                let t = hour - (w as i64 + 1) * WEEK_MS;
                s.iter_mut().find(|e| e.0 == t).unwrap().1 = *n;
            }
            s.iter_mut().find(|e| e.0 == hour).unwrap().1 = observed;
            s
        };
        // median 100, MAD 0 (six of eight deviations… 40,40,0,40,40,0,0,0 → 20).
        assert_eq!(median_and_mad(&noisy), (100.0, 20.0));
        // Spike at max(120, 100 + 5 × 20 = 200) = 200.
        for (observed, want) in [
            (199, Verdict::None),
            (31, Verdict::None),
            (
                200,
                Verdict::Spike(Alert {
                    kind: AlertKind::Spike,
                    hour,
                    observed: 200,
                    baseline: 100.0,
                    threshold: 200.0,
                }),
            ),
            (
                30,
                Verdict::Drop(Alert {
                    kind: AlertKind::Drop,
                    hour,
                    observed: 30,
                    baseline: 100.0,
                    threshold: 30.0,
                }),
            ),
        ] {
            assert_eq!(detect(&mk(observed), &zone, hour, &cfg), want, "{observed}");
        }
        // Watching one side ignores the other.
        assert_eq!(
            detect(&mk(500), &zone, hour, &config(Watch::Drop, 1)),
            Verdict::None
        );
        assert_eq!(
            detect(&mk(0), &zone, hour, &config(Watch::Spike, 1)),
            Verdict::None
        );
    }

    #[test]
    fn too_little_history_never_fires() {
        let zone = Zone::utc();
        let hour = T0 + 9 * WEEK_MS;
        let s: Vec<_> = series(hour, |_| 100)
            .into_iter()
            .filter(|&(t, _)| t > hour - 3 * WEEK_MS - HOUR_MS)
            .map(|(t, n)| (t, if t == hour { 10_000 } else { n }))
            .collect();
        assert_eq!(baseline_samples(&s, &zone, hour).len(), 3);
        assert_eq!(
            detect(&s, &zone, hour, &config(Watch::Both, 1)),
            Verdict::None
        );
    }

    #[test]
    fn dst_weeks_read_the_same_local_hour_of_week() {
        // Tuesday 09:00 local, across the spring and autumn changes.
        for (zone_name, hour_iso, first_iso) in [
            // New York springs forward on 2026-03-08.
            ("America/New_York", "2026-03-24T09:00", "2026-01-27T09:00"),
            // Auckland falls back on 2026-04-05.
            ("Pacific/Auckland", "2026-04-21T09:00", "2026-02-24T09:00"),
        ] {
            let zone = Zone::parse(zone_name).unwrap();
            let hour = at(zone_name, hour_iso);
            let first = at(zone_name, first_iso);
            // Only the local Tuesdays 09:00 have 100, the rest 1.
            let want: Vec<Millis> = (0..8)
                .map(|w| {
                    let d: jiff::civil::DateTime = first_iso.parse().unwrap();
                    let d = d.checked_add(jiff::Span::new().days(7 * w)).unwrap();
                    d.to_zoned_datetime(jiff::tz::TimeZone::get(zone_name).unwrap())
                        .unwrap()
                        .timestamp()
                        .as_millisecond()
                })
                .collect();
            assert_eq!(want[0], first);
            let offsets: std::collections::BTreeSet<Millis> = want
                .iter()
                .map(|t| (hour - t).rem_euclid(WEEK_MS))
                .collect();
            assert_eq!(offsets.len(), 2, "{zone_name}: the UTC hour moved");
            let s = series(hour, |t| if want.contains(&t) { 100 } else { 1 });
            assert_eq!(
                baseline_samples(&s, &zone, hour),
                vec![100; 8],
                "{zone_name}"
            );
        }
    }

    #[test]
    fn a_spring_gap_hour_gives_its_week_no_sample() {
        // 02:00 on Sunday 2026-03-08 does not exist in New York.
        let zone = Zone::parse("America/New_York").unwrap();
        let hour = at("America/New_York", "2026-03-15T02:00");
        let s = series(hour, |_| 50);
        assert_eq!(baseline_samples(&s, &zone, hour).len(), 7);
    }

    #[test]
    fn signatures_verify_only_what_was_signed() {
        let secret = b"whsec_test";
        let body = WebhookBody::new(
            "shop.example",
            &Alert {
                kind: AlertKind::Spike,
                hour: T0,
                observed: 900,
                baseline: 100.0,
                threshold: 300.0,
            },
            "https://tally.example/sites/shop.example",
        )
        .to_json();
        let now = 1_780_272_300;
        let header = sign_webhook(secret, &body, now);
        assert!(header.starts_with(&format!("t={now},v1=")));
        let other_t = header.replacen(&now.to_string(), &(now + 1).to_string(), 1);
        let changed = body.replace("900", "901");
        let (k, b, h): (&[u8], &str, &str) = (secret, &body, &header);
        let other: &[u8] = b"whsec_other";
        for (name, secret_used, body_used, header_used, now_used, want) in [
            ("as produced", k, b, h, now, Ok(())),
            ("within tolerance", k, b, h, now + 300, Ok(())),
            (
                "changed body",
                k,
                changed.as_str(),
                h,
                now,
                Err(SignatureError::Mismatch),
            ),
            (
                "changed timestamp",
                k,
                b,
                other_t.as_str(),
                now,
                Err(SignatureError::Mismatch),
            ),
            (
                "wrong secret",
                other,
                b,
                h,
                now,
                Err(SignatureError::Mismatch),
            ),
            ("stale", k, b, h, now + 301, Err(SignatureError::Stale)),
            (
                "no v1",
                k,
                b,
                "t=1780272300",
                now,
                Err(SignatureError::Malformed),
            ),
            ("no t", k, b, "v1=00", now, Err(SignatureError::Malformed)),
            (
                "bad hex",
                k,
                b,
                "t=1780272300,v1=zz",
                now,
                Err(SignatureError::Malformed),
            ),
        ] {
            assert_eq!(
                verify_webhook(secret_used, body_used, header_used, now_used),
                want,
                "{name}"
            );
        }
        // The signed text is "<t>.<body>".
        let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
        let mac = hex(hmac::sign(&key, format!("{now}.{body}").as_bytes()).as_ref());
        assert_eq!(header, format!("t={now},v1={mac}"));
    }

    #[test]
    fn payloads_name_the_site_kind_hour_and_figures() {
        let zone = Zone::parse("Pacific/Auckland").unwrap();
        let alert = Alert {
            kind: AlertKind::Drop,
            hour: T0,
            observed: 3,
            baseline: 42.5,
            threshold: 12.75,
        };
        let url = "https://tally.example/sites/a";
        let body: serde_json::Value =
            serde_json::from_str(&WebhookBody::new("a", &alert, url).to_json()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "site": "a", "kind": "drop", "hour": "2026-06-01T00:00:00+00:00",
                "observed": 3, "baseline": 42.5, "threshold": 12.75, "dashboard_url": url
            })
        );
        let slack = serde_json::to_value(SlackBody::new("a", &alert, &zone, url)).unwrap();
        assert_eq!(
            slack,
            serde_json::json!({"text": "Traffic drop on a: 3 in the hour from 2026-06-01 12:00 (Pacific/Auckland), usually 42.5. <https://tally.example/sites/a|Open the dashboard>"})
        );
        let mail = email("a", &alert, &zone, url);
        assert_eq!(mail.subject, "Traffic drop on a");
        assert!(mail.text.contains("usually 42.5"));
        assert!(mail.text.contains(url));
    }

    #[test]
    fn retries_wait_one_five_thirty_minutes_then_two_hours_then_give_up() {
        for (failed, want) in [
            (0, None),
            (1, Some(MINUTE_MS)),
            (2, Some(5 * MINUTE_MS)),
            (3, Some(30 * MINUTE_MS)),
            (4, Some(2 * HOUR_MS)),
            (5, None),
            (u32::MAX, None),
        ] {
            assert_eq!(retry_delay(failed), want, "{failed}");
        }
        let r = DeliveryRecord::new(Channel::Webhook, T0, 2, T0 + 10, Some(500), false);
        assert_eq!(r.next_at, Some(T0 + 10 + 5 * MINUTE_MS));
        let r = DeliveryRecord::new(Channel::Slack, T0, 2, T0 + 10, Some(200), true);
        assert_eq!(r.next_at, None);
        let r = DeliveryRecord::new(Channel::Email, T0, 5, T0, None, false);
        assert_eq!(r.next_at, None);
    }

    #[test]
    fn the_hours_read_are_the_baselines_candidates_and_the_hour() {
        for zone in [
            "UTC",
            "America/New_York",
            "Pacific/Auckland",
            "Asia/Kolkata",
        ] {
            let zone = Zone::parse(zone).unwrap();
            for hour in [
                T0 + 9 * WEEK_MS,
                at("America/New_York", "2026-03-15T02:00"),
                at("Pacific/Auckland", "2026-04-07T02:00"),
            ] {
                let hours = sample_hours(&zone, hour);
                // Counted independently: a series whose every hour's count
                // is its own index, so the samples name the hours picked.
                let s = series(hour, |t| ((t - (hour - 9 * WEEK_MS)) / HOUR_MS) as u64);
                let picked: Vec<Millis> = baseline_samples(&s, &zone, hour)
                    .into_iter()
                    .map(|i| hour - 9 * WEEK_MS + i as i64 * HOUR_MS)
                    .collect();
                assert_eq!(
                    &hours[..hours.len() - 1],
                    picked.as_slice(),
                    "{}",
                    zone.name()
                );
                assert_eq!(hours.last(), Some(&hour));
                assert!((7..=9).contains(&(hours.len() - 1)), "{}", hours.len());
            }
        }
        assert_eq!(sealed_hour(T0 + 20 * MINUTE_MS), T0 - HOUR_MS);
        assert_eq!(sealed_hour(T0), T0 - HOUR_MS);
    }

    #[test]
    fn webhook_urls_are_https_and_not_internal() {
        for (url, local, want) in [
            ("https://hooks.slack.com/services/T/B/x", false, Ok(())),
            ("https://example.com:8443/hook?a=1", false, Ok(())),
            ("http://example.com/hook", false, Err("not https")),
            ("http://example.com/hook", true, Err("not https")),
            (
                "http://127.0.0.1:9000/hook",
                false,
                Err("an internal address"),
            ),
            ("http://127.0.0.1:9000/hook", true, Ok(())),
            ("http://localhost:9000/hook", true, Ok(())),
            ("http://localhost:9000/hook", false, Err("not https")),
            ("https://localhost/hook", false, Err("an internal address")),
            (
                "https://169.254.169.254/latest",
                false,
                Err("an internal address"),
            ),
            ("https://10.0.0.1/", false, Err("an internal address")),
            ("https://[fd00::1]/", false, Err("an internal address")),
            (
                "https://[::ffff:192.168.0.1]/",
                false,
                Err("an internal address"),
            ),
            (
                "https://user:pw@example.com/",
                false,
                Err("a user or password in the URL"),
            ),
            ("ftp://example.com/", false, Err("not https")),
            // Names (issue 29): each refused however the deployment runs.
            ("https://localhost./", false, Err("an internal address")),
            ("https://foo.localhost/", true, Err("an internal address")),
            (
                "https://127.0.0.1.nip.io/",
                false,
                Err("an internal address"),
            ),
            (
                "https://169.254.169.254.nip.io/",
                false,
                Err("an internal address"),
            ),
            (
                "https://metadata.google.internal/",
                false,
                Err("an internal address"),
            ),
            ("https://intranet/", false, Err("a single-label name")),
            ("https://100.64.0.1/", false, Err("an internal address")),
            ("https://198.18.0.1/", false, Err("an internal address")),
            ("https://224.0.0.1/", false, Err("an internal address")),
            (
                "https://[64:ff9b::a9fe:a9fe]/",
                false,
                Err("an internal address"),
            ),
            (
                "https://[2002:7f00:1::]/",
                false,
                Err("an internal address"),
            ),
            ("hooks.slack.com/services", false, Err("not a URL")),
        ] {
            assert_eq!(
                check_url(url, local).map(|_| ()),
                want.map_err(AlertConfigError::Url),
                "{url} {local}"
            );
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        assert!(check_url(&long, false).is_err());
        assert_eq!(
            redact_url("https://hooks.slack.com/services/T0/B0/secret"),
            "https://hooks.slack.com/…"
        );
        assert_eq!(
            redact_url("http://127.0.0.1:9000/x"),
            "http://127.0.0.1:9000/…"
        );
    }

    #[test]
    fn a_spec_changes_only_what_it_names_and_makes_the_secret_once() {
        let one = [1u8; 32];
        let two = [2u8; 32];
        let s = AlertSpec {
            enabled: Some(true),
            emails: Some(vec![" Ops@Example.com ".into(), "ops@example.com".into()]),
            webhook_url: Some("https://example.com/hook".into()),
            spike_pct: Some(250),
            ..AlertSpec::default()
        }
        .apply(None, &one, false, 5)
        .unwrap();
        assert_eq!(s.emails, ["ops@example.com"]);
        assert_eq!(s.config.spike_pct, 250);
        assert_eq!(s.config.drop_pct, AlertConfig::default().drop_pct);
        let secret = format!("whsec_{}", "01".repeat(32));
        assert_eq!(s.webhook_secret.as_deref(), Some(secret.as_str()));
        assert_eq!(s.channels(), [Channel::Email, Channel::Webhook]);
        // Another change keeps the secret; a rotation replaces it.
        let kept = AlertSpec {
            cooldown_hours: Some(2),
            ..AlertSpec::default()
        }
        .apply(Some(&s), &two, false, 6)
        .unwrap();
        assert_eq!(
            (
                kept.webhook_secret.clone(),
                kept.config.cooldown_hours,
                kept.config.spike_pct
            ),
            (s.webhook_secret.clone(), 2, 250)
        );
        let rotated = AlertSpec {
            rotate_secret: true,
            ..AlertSpec::default()
        }
        .apply(Some(&s), &two, false, 6)
        .unwrap();
        assert_eq!(
            rotated.webhook_secret,
            Some(format!("whsec_{}", "02".repeat(32)))
        );
        // Removing the last channel of an enabled site is refused.
        for (spec, err) in [
            (
                AlertSpec {
                    webhook_url: Some(String::new()),
                    emails: Some(vec![]),
                    ..AlertSpec::default()
                },
                AlertConfigError::NoChannel,
            ),
            (
                AlertSpec {
                    emails: Some(vec!["nope".into()]),
                    ..AlertSpec::default()
                },
                AlertConfigError::Email,
            ),
            (
                AlertSpec {
                    emails: Some((0..11).map(|i| format!("a{i}@example.com")).collect()),
                    ..AlertSpec::default()
                },
                AlertConfigError::TooManyEmails,
            ),
            (
                AlertSpec {
                    cooldown_hours: Some(169),
                    ..AlertSpec::default()
                },
                AlertConfigError::Cooldown,
            ),
            (
                AlertSpec {
                    spread_pct: Some(10_001),
                    ..AlertSpec::default()
                },
                AlertConfigError::OutOfRange,
            ),
            (
                AlertSpec {
                    slack_url: Some("http://hooks.slack.com/x".into()),
                    ..AlertSpec::default()
                },
                AlertConfigError::Url("not https"),
            ),
        ] {
            assert_eq!(spec.apply(Some(&s), &two, false, 7), Err(err));
        }
        // Off, the last channel may go, and the secret goes with its URL.
        let off = AlertSpec {
            enabled: Some(false),
            webhook_url: Some(String::new()),
            emails: Some(vec![]),
            ..AlertSpec::default()
        }
        .apply(Some(&s), &two, false, 8)
        .unwrap();
        assert_eq!(
            (off.enabled, off.webhook_secret.clone(), off.channels()),
            (false, None, vec![])
        );
    }

    fn zones() -> impl Strategy<Value = Zone> {
        prop::sample::select(vec!["UTC", "America/New_York", "Pacific/Auckland"])
            .prop_map(|z| Zone::parse(z).unwrap())
    }

    /// A sealed hour somewhere in 2026, on the hour.
    fn hours() -> impl Strategy<Value = Millis> {
        (10 * 168i64..(365 * 24)).prop_map(|h| T0 - 150 * crate::DAY_MS + h * HOUR_MS)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn a_flat_weekly_shape_never_fires(
            zone in zones(),
            hour in hours(),
            levels in prop::array::uniform32(0u64..5000).prop_map(|a| {
                let mut l = [0u64; 168];
                for (i, v) in l.iter_mut().enumerate() { *v = a[i % 32]; }
                l
            }),
        ) {
            let s = series(hour, weekly(&levels, &zone));
            let sampled = baseline_samples(&s, &zone, hour);
            // Every sample of a spring-gap slot aside, the hour equals them all.
            prop_assume!(sampled.iter().all(|&n| n == sampled[0]));
            prop_assert_eq!(detect(&s, &zone, hour, &config(Watch::Both, 1)), Verdict::None);
        }

        #[test]
        fn scaling_the_series_keeps_the_verdict(
            zone in zones(),
            hour in hours(),
            weeks in prop::collection::vec(20u64..400, 8),
            observed in 0u64..2000,
            scale in 1u64..50,
        ) {
            let make = |k: u64| {
                let mut s = series(hour, |_| 0);
                for (t, n) in s.iter_mut() {
                    let w = (hour - *t).div_euclid(WEEK_MS);
                    *n = if *t == hour { observed } else { weeks[(w as usize).min(7)] } * k;
                }
                s
            };
            let cfg = config(Watch::Both, 20);
            let one = detect(&make(1), &zone, hour, &cfg);
            let many = detect(&make(scale), &zone, hour, &cfg);
            let kind = |v: &Verdict| v.alert().map(|a| a.kind);
            prop_assert_eq!(kind(&one), kind(&many));
            if let (Some(a), Some(b)) = (one.alert(), many.alert()) {
                prop_assert_eq!(a.baseline * scale as f64, b.baseline);
            }
        }

        #[test]
        fn a_spike_alerts_once_per_cooldown(
            zone in zones(),
            hour in hours(),
            base in 20u64..500,
            len in 1i64..12,
            cooldown in 1u32..12,
        ) {
            let cfg = AlertConfig { cooldown_hours: cooldown, ..config(Watch::Spike, 20) };
            let spike = |t: Millis| t >= hour && t < hour + len * HOUR_MS;
            let s: Vec<(Millis, u64)> = series(hour + 12 * HOUR_MS, |t| {
                if spike(t) { base * 10 } else { base }
            });
            let mut last = None;
            let mut fired = Vec::new();
            for h in 0..12 {
                let at = hour + h * HOUR_MS;
                if let Some(a) = evaluate(&s, &zone, at, &cfg, last).alert() {
                    prop_assert!(spike(at));
                    fired.push(at);
                    last = Some(a.hour);
                }
            }
            prop_assert_eq!(fired[0], hour);
            let want = (len + i64::from(cooldown) - 1) / i64::from(cooldown);
            prop_assert_eq!(fired.len() as i64, want);
            for pair in fired.windows(2) {
                prop_assert!(pair[1] - pair[0] >= i64::from(cooldown) * HOUR_MS);
            }
        }

        #[test]
        fn a_site_below_the_minimum_volume_never_fires(
            zone in zones(),
            hour in hours(),
            weeks in prop::collection::vec(0u64..20, 8),
            observed in 0u64..100_000,
        ) {
            let mut s = series(hour, |_| 0);
            for (t, n) in s.iter_mut() {
                let w = (hour - *t).div_euclid(WEEK_MS);
                *n = if *t == hour { observed } else { weeks[(w as usize).min(7)] };
            }
            prop_assert_eq!(detect(&s, &zone, hour, &config(Watch::Both, 20)), Verdict::None);
        }
    }
}
