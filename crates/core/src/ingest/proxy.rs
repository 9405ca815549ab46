//! Trusted proxies: a site tracked through its own proxy (a Cloudflare
//! Worker, Nginx, a Next.js rewrite on Vercel, Netlify, its own CloudFront)
//! or by a server-side sender (a backend calling `/api/event` for its
//! users) proves it with the site's **proxy secret**, sent in the
//! [`SECRET_HEADER`] header. For such a request the visitor is the
//! forwarded one: the rightmost `X-Forwarded-For` address that is not one
//! of the site's proxy networks ([`forwarded_client`]), and every check
//! runs on it (the visitor hash, the hosting-network and rate signals, the
//! network budgets, the site's excluded networks); its geography is the
//! one the proxy forwards ([`forwarded_geo`]); and a header the proxy or
//! backend could not forward (`Accept-Language` from a server-side call)
//! is not held against it, while every header it does forward is checked.
//!
//! Without the proof `X-Forwarded-For` is ignored, as before: anyone can
//! write it, and trusting it would let a client pick a new identity and a
//! new budget with every request.
//!
//! The secret is made from the system's randomness ([`new_secret`]),
//! shown once, and stored as its SHA-256 ([`hash_secret`]); a rotation
//! keeps the previous one valid for [`ROTATION_GRACE_MS`] so the proxy can
//! be updated without losing a visitor. When the site lists proxy networks
//! (CIDR, or the `cloudflare` preset: [`CLOUDFLARE`]), the request must
//! also come from one of them.

use crate::Millis;
use crate::ingest::site::Cidr;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// The header a site's proxy sends its secret in.
pub const SECRET_HEADER: &str = "tally-proxy-secret";

/// How long a rotated-out secret is still accepted.
pub const ROTATION_GRACE_MS: Millis = 24 * 60 * 60 * 1000;

/// The preset name for Cloudflare's published ranges.
pub const CLOUDFLARE_PRESET: &str = "cloudflare";

/// Cloudflare's published ranges (https://www.cloudflare.com/ips/, as of
/// 2026-12), the networks a Cloudflare Worker's requests come from.
pub const CLOUDFLARE: [&str; 22] = [
    "173.245.48.0/20",
    "103.21.244.0/22",
    "103.22.200.0/22",
    "103.31.4.0/22",
    "141.101.64.0/18",
    "108.162.192.0/18",
    "190.93.240.0/20",
    "188.114.96.0/20",
    "197.234.240.0/22",
    "198.41.128.0/17",
    "162.158.0.0/15",
    "104.16.0.0/13",
    "104.24.0.0/14",
    "172.64.0.0/13",
    "131.0.72.0/22",
    "2400:cb00::/32",
    "2606:4700::/32",
    "2803:f800::/32",
    "2405:b500::/32",
    "2405:8100::/32",
    "2a06:98c0::/29",
    "2c0f:f248::/32",
];

/// Most proxy networks a site may list (after presets are expanded).
pub const MAX_NETWORKS: usize = 64;

/// A site's proxy: the secret's hash (and the previous one's, during a
/// rotation's grace), and the networks its requests must come from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proxy {
    /// SHA-256 of the secret, hex (empty: no secret, nothing is trusted).
    #[serde(default)]
    pub secret_hash: String,
    /// The rotated-out secret's hash, accepted until `previous_until`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_hash: Option<String>,
    /// When the previous secret stops being accepted.
    #[serde(default)]
    pub previous_until: Millis,
    /// Networks the proxy's requests come from (canonical CIDR); empty:
    /// any address that holds the secret.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub networks: Vec<String>,
}

/// A proxy setting that cannot be kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProxyError {
    /// A network is neither CIDR nor a preset.
    #[error("not a network (CIDR) or the cloudflare preset: {0:?}")]
    InvalidNetwork(String),
    /// Too many networks.
    #[error("at most {MAX_NETWORKS} proxy networks")]
    TooMany,
}

impl ProxyError {
    /// A stable code for API errors.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidNetwork(_) => "invalid_network",
            Self::TooMany => "too_many_networks",
        }
    }
}

/// A new secret from 24 random bytes: `tps_` and 48 hex digits.
pub fn new_secret(bytes: &[u8; 24]) -> String {
    format!("tps_{}", crate::hex::encode(bytes))
}

/// The stored form of a secret: its SHA-256, hex.
pub fn hash_secret(secret: &str) -> String {
    crate::hex::encode(
        ring::digest::digest(&ring::digest::SHA256, secret.trim().as_bytes()).as_ref(),
    )
}

/// Networks as given (CIDR, one address, or [`CLOUDFLARE_PRESET`]), in
/// canonical CIDR form, presets expanded, duplicates removed.
pub fn normalize_networks(given: &[String]) -> Result<Vec<String>, ProxyError> {
    let mut out: Vec<String> = Vec::new();
    for g in given {
        let texts: Vec<String> = if g.trim().eq_ignore_ascii_case(CLOUDFLARE_PRESET) {
            CLOUDFLARE.iter().map(|s| (*s).to_owned()).collect()
        } else {
            vec![g.clone()]
        };
        for t in texts {
            let cidr = Cidr::parse(&t).ok_or_else(|| ProxyError::InvalidNetwork(t.clone()))?;
            let text = cidr.to_text();
            if !out.contains(&text) {
                out.push(text);
            }
        }
    }
    if out.len() > MAX_NETWORKS {
        return Err(ProxyError::TooMany);
    }
    Ok(out)
}

impl Proxy {
    /// A proxy with this secret (its hash kept) and networks.
    pub fn with_secret(secret: &str, networks: Vec<String>) -> Self {
        Self {
            secret_hash: hash_secret(secret),
            previous_hash: None,
            previous_until: 0,
            networks,
        }
    }

    /// The same proxy with a new secret; the old one is accepted for
    /// [`ROTATION_GRACE_MS`] more.
    pub fn rotated(&self, secret: &str, now: Millis) -> Self {
        Self {
            secret_hash: hash_secret(secret),
            previous_hash: (!self.secret_hash.is_empty()).then(|| self.secret_hash.clone()),
            previous_until: now + ROTATION_GRACE_MS,
            networks: self.networks.clone(),
        }
    }

    /// Whether a request that presented `secret` from the address `peer`
    /// (the address it arrived from, before any forwarding) is the site's
    /// proxy. The hashes are compared in constant time.
    pub fn proves(&self, secret: &str, peer: &str, now: Millis) -> bool {
        if self.secret_hash.is_empty() || secret.trim().is_empty() {
            return false;
        }
        let presented = hash_secret(secret);
        let current = same(&presented, &self.secret_hash);
        let previous = now < self.previous_until
            && self
                .previous_hash
                .as_deref()
                .is_some_and(|h| same(&presented, h));
        (current || previous) && (self.networks.is_empty() || self.in_networks(peer))
    }

    /// Whether an address is one of the proxy's networks.
    pub fn in_networks(&self, ip: &str) -> bool {
        self.networks
            .iter()
            .filter_map(|n| Cidr::parse(n))
            .any(|n| n.contains(ip))
    }
}

/// A change of a site's proxy, as `tally site proxy` and the console's
/// `POST sites/{site}/proxy` make it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyChange {
    /// Make a new secret: the first, or a rotation (the old one is
    /// accepted for [`ROTATION_GRACE_MS`] more).
    #[serde(default)]
    pub rotate: bool,
    /// Replace the networks (CIDR or `cloudflare`; `[]` clears them).
    #[serde(default)]
    pub networks: Option<Vec<String>>,
    /// Remove the proxy: nothing forwarded is trusted any more.
    #[serde(default)]
    pub remove: bool,
}

/// What a change made: the proxy to store (`None`: none) and the new
/// secret, to be shown once, when one was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The site's proxy after the change.
    pub proxy: Option<Proxy>,
    /// The secret made, if any.
    pub secret: Option<String>,
}

impl ProxyChange {
    /// Applies the change to the site's `current` proxy; `fresh` is a new
    /// secret ([`new_secret`] of the system's randomness), used when the
    /// change makes one (`rotate`, or networks set on a site without a
    /// proxy yet).
    pub fn apply(
        &self,
        current: Option<&Proxy>,
        fresh: &str,
        now: Millis,
    ) -> Result<Applied, ProxyError> {
        if self.remove {
            return Ok(Applied {
                proxy: None,
                secret: None,
            });
        }
        let networks = self
            .networks
            .as_deref()
            .map(normalize_networks)
            .transpose()?;
        let (mut proxy, secret) = match (current, self.rotate) {
            (Some(p), false) => (p.clone(), None),
            (Some(p), true) => (p.rotated(fresh, now), Some(fresh.to_owned())),
            (None, _) if self.rotate || networks.is_some() => (
                Proxy::with_secret(fresh, Vec::new()),
                Some(fresh.to_owned()),
            ),
            (None, _) => {
                return Ok(Applied {
                    proxy: None,
                    secret: None,
                });
            }
        };
        if let Some(n) = networks {
            proxy.networks = n;
        }
        Ok(Applied {
            proxy: Some(proxy),
            secret,
        })
    }
}

fn same(a: &str, b: &str) -> bool {
    crate::ingest::salt::constant_time_eq(a.as_bytes(), b.as_bytes())
}

/// The visitor's address in an `X-Forwarded-For` value: the rightmost
/// valid address that is not one of `proxy`'s networks (each proxy appends
/// the address it saw, so entries to the left of the first untrusted one
/// are the client's own claims). `None` when there is none.
pub fn forwarded_client(forwarded_for: &str, proxy: &Proxy) -> Option<String> {
    forwarded_for
        .split(',')
        .rev()
        .map(|s| unbracket(s.trim()))
        .filter_map(|s| s.parse::<IpAddr>().ok())
        .map(|ip| ip.to_string())
        .find(|ip| !proxy.in_networks(ip))
}

/// `[2001:db8::1]:443` or `203.0.113.7:443` as the address alone.
fn unbracket(s: &str) -> &str {
    if let Some(rest) = s.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match s.rsplit_once(':') {
        // One colon: an IPv4 address with a port.
        Some((addr, port)) if !addr.contains(':') && port.parse::<u16>().is_ok() => addr,
        _ => s,
    }
}

/// Headers a proxy forwards the visitor's geography in, by provider:
/// (country, region, city).
pub const GEO_HEADERS: [(&str, Option<&str>, Option<&str>); 4] = [
    // The site's own CloudFront (with the viewer headers in its origin
    // request policy).
    (
        "cloudfront-viewer-country",
        Some("cloudfront-viewer-country-region"),
        Some("cloudfront-viewer-city"),
    ),
    // Cloudflare (IP geolocation on).
    ("cf-ipcountry", Some("cf-region-code"), Some("cf-ipcity")),
    // Vercel.
    (
        "x-vercel-ip-country",
        Some("x-vercel-ip-country-region"),
        Some("x-vercel-ip-city"),
    ),
    // Netlify's edge functions and Tally's own name, for any other proxy.
    ("x-country", Some("x-country-region"), Some("x-city")),
];

/// The geography a proven proxy forwarded: the first provider's headers
/// present (`header` reads one by its lower-case name), a country only
/// when it is two letters (Cloudflare's `XX` and `T1` mean unknown and
/// Tor). Vercel's city is percent-encoded and is decoded.
pub fn forwarded_geo<'a>(
    header: impl Fn(&str) -> Option<&'a str>,
) -> Option<(String, Option<String>, Option<String>)> {
    for (country, region, city) in GEO_HEADERS {
        let Some(c) = header(country) else { continue };
        let c = c.trim().to_ascii_uppercase();
        if c.len() != 2 || !c.bytes().all(|b| b.is_ascii_uppercase()) || c == "XX" || c == "T1" {
            return None;
        }
        let region = region.and_then(&header).map(|r| r.trim().to_owned());
        let city = city
            .and_then(&header)
            .map(|v| percent_decode(v.trim()))
            .filter(|v| !v.is_empty());
        return Some((c, region.filter(|r| !r.is_empty()), city));
    }
    None
}

fn percent_decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn proxy(networks: &[&str]) -> Proxy {
        Proxy::with_secret(
            "tps_secret",
            normalize_networks(&networks.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
                .unwrap(),
        )
    }

    #[test]
    fn only_the_right_secret_from_a_listed_network_proves_the_proxy() {
        let open = proxy(&[]);
        assert!(open.proves("tps_secret", "198.51.100.1", 0));
        assert!(!open.proves("tps_wrong", "198.51.100.1", 0));
        assert!(!open.proves("", "198.51.100.1", 0));
        assert!(!Proxy::default().proves("", "198.51.100.1", 0));
        let cf = proxy(&["cloudflare"]);
        assert_eq!(cf.networks.len(), CLOUDFLARE.len());
        assert!(cf.proves("tps_secret", "104.16.3.4", 0));
        assert!(cf.proves("tps_secret", "2606:4700::1", 0));
        assert!(!cf.proves("tps_secret", "198.51.100.1", 0));
    }

    #[test]
    fn a_rotated_secret_is_accepted_for_a_day() {
        let p = proxy(&[]).rotated("tps_new", 1_000);
        assert!(p.proves("tps_new", "192.0.2.1", 1_000));
        assert!(p.proves("tps_secret", "192.0.2.1", 1_000 + ROTATION_GRACE_MS - 1));
        assert!(!p.proves("tps_secret", "192.0.2.1", 1_000 + ROTATION_GRACE_MS));
        assert!(p.proves("tps_new", "192.0.2.1", 1_000 + ROTATION_GRACE_MS));
    }

    #[test]
    fn the_client_is_the_rightmost_address_that_is_not_a_proxy() {
        let table: [(&str, &[&str], Option<&str>); 9] = [
            ("203.0.113.7", &[], Some("203.0.113.7")),
            // Nginx appends what it saw: the client's own claims are left.
            ("1.1.1.1, 203.0.113.7", &[], Some("203.0.113.7")),
            // A CDN in front of Nginx: its address is skipped.
            (
                "203.0.113.7, 104.16.0.9",
                &["cloudflare"],
                Some("203.0.113.7"),
            ),
            (
                "10.0.0.1, 203.0.113.7, 104.16.0.9",
                &["cloudflare"],
                Some("203.0.113.7"),
            ),
            ("[2001:db8::5]:4711", &[], Some("2001:db8::5")),
            ("203.0.113.7:51234", &[], Some("203.0.113.7")),
            ("2001:db8::5", &[], Some("2001:db8::5")),
            ("unknown, garbage", &[], None),
            ("104.16.0.9", &["cloudflare"], None),
        ];
        for (xff, nets, want) in table {
            assert_eq!(
                forwarded_client(xff, &proxy(nets)).as_deref(),
                want,
                "{xff} {nets:?}"
            );
        }
    }

    #[test]
    fn a_change_makes_rotates_and_removes_the_secret() {
        let made = ProxyChange {
            networks: Some(vec!["cloudflare".into()]),
            ..ProxyChange::default()
        }
        .apply(None, "tps_a", 0)
        .unwrap();
        assert_eq!(made.secret.as_deref(), Some("tps_a"));
        let p = made.proxy.unwrap();
        assert!(p.proves("tps_a", "104.16.0.1", 0));
        // Networks alone keep the secret and show none.
        let kept = ProxyChange {
            networks: Some(vec![]),
            ..ProxyChange::default()
        }
        .apply(Some(&p), "tps_b", 5)
        .unwrap();
        assert_eq!(kept.secret, None);
        assert!(
            kept.proxy
                .as_ref()
                .unwrap()
                .proves("tps_a", "198.51.100.1", 5)
        );
        let rotated = ProxyChange {
            rotate: true,
            ..ProxyChange::default()
        }
        .apply(kept.proxy.as_ref(), "tps_c", 10)
        .unwrap();
        assert_eq!(rotated.secret.as_deref(), Some("tps_c"));
        let r = rotated.proxy.unwrap();
        assert!(r.proves("tps_c", "198.51.100.1", 10));
        assert!(r.proves("tps_a", "198.51.100.1", 10));
        let removed = ProxyChange {
            remove: true,
            ..ProxyChange::default()
        }
        .apply(Some(&r), "tps_d", 20)
        .unwrap();
        assert_eq!(removed.proxy, None);
        assert_eq!(
            ProxyChange::default()
                .apply(None, "tps_e", 0)
                .unwrap()
                .proxy,
            None
        );
    }

    #[test]
    fn networks_are_canonical_and_checked() {
        assert_eq!(
            normalize_networks(&["203.0.113.9/24".into(), "203.0.113.0/24".into()]).unwrap(),
            vec!["203.0.113.0/24".to_owned()]
        );
        assert_eq!(
            normalize_networks(&["nope".into()]).unwrap_err().code(),
            "invalid_network"
        );
        let many: Vec<String> = (0..70).map(|i| format!("10.0.{i}.0/24")).collect();
        assert_eq!(
            normalize_networks(&many).unwrap_err().code(),
            "too_many_networks"
        );
    }

    #[test]
    fn geography_comes_from_the_first_provider_present() {
        let headers = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
        };
        assert_eq!(
            forwarded_geo(headers(&[
                ("x-vercel-ip-country", "de"),
                ("x-vercel-ip-country-region", "BE"),
                ("x-vercel-ip-city", "S%C3%A3o%20Paulo"),
            ])),
            Some(("DE".into(), Some("BE".into()), Some("São Paulo".into())))
        );
        assert_eq!(
            forwarded_geo(headers(&[("cf-ipcountry", "NZ")])),
            Some(("NZ".into(), None, None))
        );
        assert_eq!(forwarded_geo(headers(&[("cf-ipcountry", "XX")])), None);
        assert_eq!(forwarded_geo(headers(&[("cf-ipcountry", "T1")])), None);
        assert_eq!(forwarded_geo(headers(&[])), None);
    }
}
