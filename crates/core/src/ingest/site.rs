//! A site's configuration and its domain rules.

use crate::Millis;
use crate::keys::valid_site_id;
use crate::time::zone::Zone;
use serde::{Deserialize, Serialize};

/// Raw events are kept this many days unless the site says otherwise: the
/// job's recompute window (three days) and the open hours need them; older
/// days are read from segments.
pub const DEFAULT_RETENTION_DAYS: u32 = 7;
/// Segments (compacted events) are kept this many days unless the site says
/// otherwise; `0` keeps them forever.
pub const DEFAULT_HISTORY_DAYS: u32 = 400;
/// The longest segment history a site may ask for (besides `0`, forever).
pub const MAX_HISTORY_DAYS: u32 = 36_500;
/// The longest raw retention a site may ask for.
pub const MAX_RETENTION_DAYS: u32 = 3650;

/// Most excluded networks, and most excluded paths, per site: every ingest
/// checks them all, and the site item is read on each cold start.
pub const MAX_EXCLUSIONS: usize = 100;

/// Longest excluded path pattern, in bytes.
pub const MAX_EXCLUDED_PATH: usize = 300;

/// A tracked site.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Site {
    /// The site id (see [`valid_site_id`]).
    pub id: String,
    /// The domains whose pages may send events: `example.com` or `*.example.com`.
    pub domains: Vec<String>,
    /// The IANA time zone the site's days are counted in.
    pub time_zone: String,
    /// Days raw events are kept before their TTL removes them.
    #[serde(default = "default_retention")]
    pub retention_days: u32,
    /// Days segments (compacted events, for filters, hourly series and
    /// anything rollups cannot answer) are kept; `0` keeps them forever.
    #[serde(default = "default_history")]
    pub history_days: u32,
    /// Number of write shards of the raw-event partitions (1 = unsharded)
    /// before the first change in [`Site::reshards`].
    #[serde(default = "default_shards")]
    pub shards: u16,
    /// Changes of the shard count over time, oldest first
    /// ([`crate::ingest::shard`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reshards: Vec<crate::ingest::shard::Reshard>,
    /// Bumped by every change of [`Site::reshards`]; every write of the
    /// site is conditional on the version it read.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shard_version: u64,
    /// When the site was created.
    #[serde(default)]
    pub created_at: Millis,
    /// Client networks whose events are not stored (CIDR, e.g. the site
    /// owner's office), checked before anything is hashed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude_networks: Vec<String>,
    /// Page paths whose events are not stored (`*` wildcards).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude_paths: Vec<String>,
    /// The site's trusted proxy ([`crate::ingest::proxy`]): requests proving it
    /// are counted as the visitor they forward.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<crate::ingest::proxy::Proxy>,
}

/// A client network: an address and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    net: std::net::IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Parses `10.0.0.0/8`, `2001:db8::/32`, or one address. Host bits
    /// are cleared: `203.0.113.7/24` is `203.0.113.0/24`.
    pub fn parse(text: &str) -> Option<Self> {
        use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
        let (addr, prefix) = match text.trim().split_once('/') {
            Some((a, p)) => (a, Some(p.parse::<u8>().ok()?)),
            None => (text.trim(), None),
        };
        let net: IpAddr = addr.parse().ok()?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        if prefix > max {
            return None;
        }
        let net = match net {
            IpAddr::V4(v) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
                IpAddr::V4(Ipv4Addr::from(u32::from(v) & mask))
            }
            IpAddr::V6(v) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
                IpAddr::V6(Ipv6Addr::from(u128::from(v) & mask))
            }
        };
        Some(Self { net, prefix })
    }

    /// Whether an address is inside.
    pub fn contains(&self, ip: &str) -> bool {
        use std::net::IpAddr;
        let Ok(ip) = ip.trim().parse::<IpAddr>() else {
            return false;
        };
        // An IPv4 address reached over IPv6 (::ffff:a.b.c.d) is the same client.
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        let bits = |a: IpAddr| -> u128 {
            match a {
                IpAddr::V4(v) => u128::from(u32::from(v)) << 96,
                IpAddr::V6(v) => u128::from(v),
            }
        };
        if ip.is_ipv4() != self.net.is_ipv4() {
            return false;
        }
        // Both families sit in the top bits: the prefix masks from the top.
        let mask = if self.prefix == 0 {
            0
        } else {
            u128::MAX << (128 - u32::from(self.prefix))
        };
        bits(ip) & mask == bits(self.net) & mask
    }

    /// The canonical text.
    pub fn to_text(&self) -> String {
        format!("{}/{}", self.net, self.prefix)
    }
}

fn default_retention() -> u32 {
    DEFAULT_RETENTION_DAYS
}

fn default_history() -> u32 {
    DEFAULT_HISTORY_DAYS
}

fn default_shards() -> u16 {
    1
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Why a site definition is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SiteError {
    /// The id does not fit the site-id alphabet.
    #[error("site id must be 1-64 characters of a-z, 0-9, '.', '-', '_'")]
    InvalidId,
    /// A domain is not a host name or `*.` wildcard.
    #[error("invalid domain {0:?}")]
    InvalidDomain(String),
    /// No domain given.
    #[error("a site needs at least one domain")]
    NoDomain,
    /// The time zone is unknown.
    #[error("unknown time zone {0:?}")]
    InvalidTimeZone(String),
    /// Retention out of range.
    #[error("retention must be between 1 and {MAX_RETENTION_DAYS} days")]
    InvalidRetention,
    /// History out of range.
    #[error("history must be 0 (forever) or between 1 and {MAX_HISTORY_DAYS} days")]
    InvalidHistory,
    /// Not an address or network in CIDR form.
    #[error("invalid network {0:?}: expected CIDR such as 203.0.113.0/24 or 2001:db8::/32")]
    InvalidNetwork(String),
    /// An excluded path pattern that does not start with `/` or is too long.
    #[error(
        "invalid path pattern {0:?}: expected a path such as /admin/* of at most {MAX_EXCLUDED_PATH} bytes"
    )]
    InvalidPath(String),
    /// More exclusions of one kind than [`MAX_EXCLUSIONS`].
    #[error("at most {MAX_EXCLUSIONS} excluded networks and {MAX_EXCLUSIONS} excluded paths")]
    TooManyExclusions,
}

impl Site {
    /// Builds a validated site with default retention.
    pub fn new(
        id: &str,
        domains: &[String],
        time_zone: &str,
        created_at: Millis,
    ) -> Result<Self, SiteError> {
        let site = Self {
            id: id.to_owned(),
            domains: domains
                .iter()
                .map(|d| normalize_domain(d))
                .collect::<Result<_, _>>()?,
            time_zone: time_zone.to_owned(),
            retention_days: DEFAULT_RETENTION_DAYS,
            history_days: DEFAULT_HISTORY_DAYS,
            shards: 1,
            reshards: Vec::new(),
            shard_version: 0,
            created_at,
            exclude_networks: Vec::new(),
            exclude_paths: Vec::new(),
            proxy: None,
        };
        site.validate()?;
        Ok(site)
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), SiteError> {
        if !valid_site_id(&self.id) {
            return Err(SiteError::InvalidId);
        }
        if self.domains.is_empty() {
            return Err(SiteError::NoDomain);
        }
        for d in &self.domains {
            if normalize_domain(d).as_deref() != Ok(d.as_str()) {
                return Err(SiteError::InvalidDomain(d.clone()));
            }
        }
        Zone::parse(&self.time_zone)
            .map_err(|_| SiteError::InvalidTimeZone(self.time_zone.clone()))?;
        if self.retention_days == 0 || self.retention_days > MAX_RETENTION_DAYS {
            return Err(SiteError::InvalidRetention);
        }
        if self.history_days > MAX_HISTORY_DAYS {
            return Err(SiteError::InvalidHistory);
        }
        if self.exclude_networks.len() > MAX_EXCLUSIONS || self.exclude_paths.len() > MAX_EXCLUSIONS
        {
            return Err(SiteError::TooManyExclusions);
        }
        for n in &self.exclude_networks {
            if Cidr::parse(n).is_none() {
                return Err(SiteError::InvalidNetwork(n.clone()));
            }
        }
        for p in &self.exclude_paths {
            if !p.starts_with('/') || p.len() > MAX_EXCLUDED_PATH {
                return Err(SiteError::InvalidPath(p.clone()));
            }
        }
        Ok(())
    }

    /// The site's zone (falls back to UTC for a corrupt stored zone).
    pub fn zone(&self) -> Zone {
        Zone::parse(&self.time_zone).unwrap_or_else(|_| Zone::utc())
    }

    /// Whether events from this client address are excluded.
    pub fn excludes_address(&self, ip: &str) -> bool {
        self.exclude_networks
            .iter()
            .filter_map(|n| Cidr::parse(n))
            .any(|c| c.contains(ip))
    }

    /// Whether events of this page path are excluded. Patterns and paths
    /// are compared normalised ([`normalize_path`]): `//Admin/` matches
    /// `/admin/*`, and `/Preview` matches `/preview`.
    pub fn excludes_path(&self, path: &str) -> bool {
        let path = normalize_path(path);
        self.exclude_paths
            .iter()
            .any(|p| crate::ingest::text::wildcard_match(&normalize_path(p), &path))
    }

    /// Whether a page on `host` may send events for this site.
    pub fn allows_host(&self, host: &str) -> bool {
        host_allowed(&self.domains, host)
    }
}

/// A change of a site's settings, as `tally site update` and the console's
/// `PATCH sites/{site}` make it: each field given replaces that setting
/// (an empty list of exclusions clears them), the rest stay. Domains and
/// networks are normalised ([`normalize_domain`], [`Cidr::to_text`]) and
/// the changed site is validated as a whole, so both doors write the same
/// item.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteChange {
    /// The domains whose pages may send events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domains: Option<Vec<String>>,
    /// The IANA time zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// Excluded client networks (CIDR).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_networks: Option<Vec<String>>,
    /// Excluded page paths (`*` wildcards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_paths: Option<Vec<String>>,
    /// Days raw events are kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_days: Option<u32>,
    /// Days segments are kept, 0 forever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_days: Option<u32>,
}

impl SiteChange {
    /// Applies the change to `site` and validates the result: the names of
    /// the settings that changed (empty when nothing did). On an error the
    /// site is left as it was.
    pub fn apply(&self, site: &mut Site) -> Result<Vec<&'static str>, SiteError> {
        let mut next = site.clone();
        if let Some(domains) = &self.domains {
            next.domains = domains
                .iter()
                .map(|d| normalize_domain(d))
                .collect::<Result<_, _>>()?;
        }
        if let Some(zone) = &self.timezone {
            zone.trim().clone_into(&mut next.time_zone);
        }
        if let Some(networks) = &self.exclude_networks {
            next.exclude_networks = normalize_networks(networks)?;
        }
        if let Some(paths) = &self.exclude_paths {
            next.exclude_paths.clone_from(paths);
        }
        if let Some(days) = self.retention_days {
            next.retention_days = days;
        }
        if let Some(days) = self.history_days {
            next.history_days = days;
        }
        next.validate()?;
        let mut changed = Vec::new();
        if next.domains != site.domains {
            changed.push("domains");
        }
        if next.time_zone != site.time_zone {
            changed.push("timezone");
        }
        if next.exclude_networks != site.exclude_networks {
            changed.push("exclude_networks");
        }
        if next.exclude_paths != site.exclude_paths {
            changed.push("exclude_paths");
        }
        if next.retention_days != site.retention_days {
            changed.push("retention_days");
        }
        if next.history_days != site.history_days {
            changed.push("history_days");
        }
        *site = next;
        Ok(changed)
    }
}

/// A new site as `tally site create` and the console's `POST sites` make
/// it: the id (derived from the first domain when not given,
/// [`site_id_from_domain`]), the domains, the time zone and any further
/// settings ([`SiteChange`]; its `domains` and `timezone` are not used).
pub fn new_site(
    id: Option<&str>,
    domains: &[String],
    time_zone: &str,
    settings: &SiteChange,
    created_at: Millis,
) -> Result<Site, SiteError> {
    let first = domains.first().ok_or(SiteError::NoDomain)?;
    let id = match id {
        Some(id) => id.trim().to_owned(),
        None => site_id_from_domain(first),
    };
    let mut site = Site::new(&id, domains, time_zone.trim(), created_at)?;
    SiteChange {
        domains: None,
        timezone: None,
        ..settings.clone()
    }
    .apply(&mut site)?;
    Ok(site)
}

/// A site id from a domain: `www.example.com` -> `example.com`,
/// `*.example.com` -> `example.com` (empty for a domain that does not
/// normalise).
pub fn site_id_from_domain(domain: &str) -> String {
    let d = normalize_domain(domain).unwrap_or_default();
    let d = d.trim_start_matches("*.");
    d.strip_prefix("www.").unwrap_or(d).to_owned()
}

/// Networks as given, in canonical CIDR form (an invalid one is an error).
pub fn normalize_networks(given: &[String]) -> Result<Vec<String>, SiteError> {
    given
        .iter()
        .map(|n| {
            Cidr::parse(n)
                .map(|c| c.to_text())
                .ok_or_else(|| SiteError::InvalidNetwork(n.clone()))
        })
        .collect()
}

/// The `<script>` tag of a site, loading the tracker from the ingest
/// function's public URL.
pub fn snippet(site: &str, ingest_url: &str) -> String {
    format!(
        "<script defer data-site=\"{site}\" src=\"{}/script.js\"></script>",
        ingest_url.trim_end_matches('/')
    )
}

/// A page path as exclusions compare it: invisible characters removed
/// ([`crate::ingest::text::neutralise`], as the stored path), runs of `/` collapsed
/// into one, and lower case (a path differing only in case or in doubled
/// slashes is usually the same page to the server behind it, and an
/// exclusion that misses it would let the owner's own visits in).
pub fn normalize_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in crate::ingest::text::neutralise(path).chars() {
        if c == '/' && out.ends_with('/') {
            continue;
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// Normalises a domain as typed by an operator: lower case, no scheme, no
/// path, no port, no trailing dot; `*.` allowed as a leading label.
pub fn normalize_domain(input: &str) -> Result<String, SiteError> {
    let bad = || SiteError::InvalidDomain(input.to_owned());
    let mut d = input.trim().to_ascii_lowercase();
    for scheme in ["https://", "http://"] {
        if let Some(rest) = d.strip_prefix(scheme) {
            d = rest.to_owned();
        }
    }
    if let Some(i) = d.find('/') {
        d.truncate(i);
    }
    if let Some(i) = d.rfind(':')
        && d[i + 1..].bytes().all(|b| b.is_ascii_digit())
    {
        d.truncate(i);
    }
    let d = d.trim_end_matches('.').to_owned();
    let host = d.strip_prefix("*.").unwrap_or(&d);
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    if host.is_empty() || host.len() > 253 || !host.split('.').all(label_ok) {
        return Err(bad());
    }
    Ok(d)
}

/// Whether `host` matches one of `domains`. `example.com` matches itself and
/// `www.example.com`; `*.example.com` matches `example.com` and every
/// subdomain. Comparison ignores ASCII case and a trailing dot.
pub fn host_allowed(domains: &[String], host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let bare = host.strip_prefix("www.").unwrap_or(&host);
    domains.iter().any(|d| match d.strip_prefix("*.") {
        Some(apex) => {
            host == apex
                || (host.len() > apex.len()
                    && host.ends_with(apex)
                    && host.as_bytes()[host.len() - apex.len() - 1] == b'.')
        }
        None => {
            let d = d.strip_prefix("www.").unwrap_or(d);
            bare == d
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn host_rules_match_exact_www_and_wildcards() {
        let domains = vec!["example.com".to_owned(), "*.shop.io".to_owned()];
        let cases = [
            ("example.com", true),
            ("www.example.com", true),
            ("EXAMPLE.com.", true),
            ("blog.example.com", false),
            ("evil-example.com", false),
            ("example.com.evil.net", false),
            ("shop.io", true),
            ("a.b.shop.io", true),
            ("badshop.io", false),
            ("", false),
        ];
        for (host, expected) in cases {
            assert_eq!(host_allowed(&domains, host), expected, "{host}");
        }
    }

    #[test]
    fn normalizes_operator_typed_domains() {
        assert_eq!(
            normalize_domain("https://Example.com/path").unwrap(),
            "example.com"
        );
        assert_eq!(normalize_domain("localhost:3000").unwrap(), "localhost");
        assert_eq!(normalize_domain("*.example.com").unwrap(), "*.example.com");
        for bad in [
            "",
            "exa mple.com",
            "*.",
            "-x.com",
            "a..b",
            "ex#ample.com",
            "*.*.com",
        ] {
            assert!(normalize_domain(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn networks_contain_their_addresses() {
        let cases = [
            ("203.0.113.0/24", "203.0.113.77", true),
            ("203.0.113.0/24", "203.0.114.1", false),
            ("10.0.0.0/8", "10.255.1.2", true),
            ("198.51.100.7", "198.51.100.7", true),
            ("198.51.100.7", "198.51.100.8", false),
            ("0.0.0.0/0", "192.0.2.1", true),
            ("2001:db8::/32", "2001:db8:1::5", true),
            ("2001:db8::/32", "2001:db9::5", false),
            ("2001:db8::/32", "203.0.113.1", false),
            ("203.0.113.0/24", "::ffff:203.0.113.9", true),
            ("203.0.113.0/24", "not an ip", false),
        ];
        for (net, ip, want) in cases {
            assert_eq!(Cidr::parse(net).unwrap().contains(ip), want, "{net} {ip}");
        }
        for bad in ["", "10.0.0.0/33", "2001:db8::/129", "10.0.0/8", "office"] {
            assert!(Cidr::parse(bad).is_none(), "{bad}");
        }
        assert_eq!(Cidr::parse("10.0.0.0/8").unwrap().to_text(), "10.0.0.0/8");
    }

    #[test]
    fn exclusions_match_networks_and_paths() {
        let mut site = Site::new("blog", &["example.com".into()], "UTC", 0).unwrap();
        site.exclude_networks = vec!["203.0.113.0/24".into()];
        site.exclude_paths = vec!["/admin/*".into(), "/preview".into()];
        assert_eq!(site.validate(), Ok(()));
        assert!(site.excludes_address("203.0.113.5"));
        assert!(!site.excludes_address("198.51.100.5"));
        assert!(site.excludes_path("/admin/users"));
        assert!(site.excludes_path("/preview"));
        assert!(!site.excludes_path("/previews"));
        // Case, doubled slashes and invisible characters do not dodge them.
        for dodge in [
            "//Admin/users",
            "/ADMIN//x",
            "/Pre\u{200B}view",
            "///preview",
        ] {
            assert!(site.excludes_path(dodge), "{dodge}");
        }
        assert!(!site.excludes_path("/admins"));
        site.exclude_networks.push("office".into());
        assert!(matches!(site.validate(), Err(SiteError::InvalidNetwork(_))));
        for (given, canonical) in [
            ("203.0.113.7/24", "203.0.113.0/24"),
            ("198.51.100.9", "198.51.100.9/32"),
            ("10.1.2.3/0", "0.0.0.0/0"),
            ("2001:db8:5:1::7/48", "2001:db8:5::/48"),
            ("::1", "::1/128"),
        ] {
            assert_eq!(Cidr::parse(given).unwrap().to_text(), canonical, "{given}");
        }
    }

    #[test]
    fn refuses_bad_or_too_many_exclusions() {
        let site = Site::new("blog", &["example.com".into()], "UTC", 0).unwrap();
        let with = |networks: Vec<String>, paths: Vec<String>| {
            let mut s = site.clone();
            s.exclude_networks = networks;
            s.exclude_paths = paths;
            s.validate()
        };
        let many = |f: fn(usize) -> String, n| (0..n).map(f).collect::<Vec<_>>();
        let net = |i: usize| format!("10.{}.{}.0/24", i / 256, i % 256);
        let path = |i: usize| format!("/p{i}");
        assert_eq!(
            with(many(net, MAX_EXCLUSIONS), many(path, MAX_EXCLUSIONS)),
            Ok(())
        );
        assert_eq!(
            with(many(net, MAX_EXCLUSIONS + 1), vec![]),
            Err(SiteError::TooManyExclusions)
        );
        assert_eq!(
            with(vec![], many(path, MAX_EXCLUSIONS + 1)),
            Err(SiteError::TooManyExclusions)
        );
        let long = format!("/{}", "a".repeat(MAX_EXCLUDED_PATH));
        for bad in ["admin/*".to_owned(), long] {
            assert_eq!(
                with(vec![], vec![bad.clone()]),
                Err(SiteError::InvalidPath(bad))
            );
        }
        for bad in ["10.0.0.0/33", "2001:db8::/129", "10.0.0", "::/x"] {
            assert_eq!(
                with(vec![bad.into()], vec![]),
                Err(SiteError::InvalidNetwork(bad.into()))
            );
        }
    }

    #[test]
    fn validates_a_site() {
        let site = Site::new("blog", &["example.com".into()], "Europe/Berlin", 0).unwrap();
        assert_eq!(site.retention_days, DEFAULT_RETENTION_DAYS);
        assert_eq!(site.history_days, DEFAULT_HISTORY_DAYS);
        let forever = Site {
            history_days: 0,
            ..site.clone()
        };
        assert_eq!(forever.validate(), Ok(()));
        let too_long = Site {
            history_days: MAX_HISTORY_DAYS + 1,
            ..site.clone()
        };
        assert_eq!(too_long.validate(), Err(SiteError::InvalidHistory));
        // A site stored before histories existed reads with the default.
        let old: Site = serde_json::from_str(
            r#"{"id":"blog","domains":["example.com"],"time_zone":"UTC","retention_days":30}"#,
        )
        .unwrap();
        assert_eq!(
            (old.retention_days, old.history_days),
            (30, DEFAULT_HISTORY_DAYS)
        );
        assert_eq!(
            Site::new("Blog", &["example.com".into()], "UTC", 0),
            Err(SiteError::InvalidId)
        );
        assert_eq!(Site::new("blog", &[], "UTC", 0), Err(SiteError::NoDomain));
        assert!(matches!(
            Site::new("blog", &["example.com".into()], "Nowhere/Land", 0),
            Err(SiteError::InvalidTimeZone(_))
        ));
    }

    #[test]
    fn a_change_replaces_what_it_names_and_validates_the_whole() {
        let mut site = Site::new("s", &["example.com".into()], "UTC", 0).unwrap();
        let change = SiteChange {
            domains: Some(vec!["https://WWW.Example.org/x".into()]),
            exclude_networks: Some(vec!["203.0.113.7/24".into()]),
            retention_days: Some(30),
            ..SiteChange::default()
        };
        let changed = change.apply(&mut site).unwrap();
        assert_eq!(changed, ["domains", "exclude_networks", "retention_days"]);
        assert_eq!(site.domains, ["www.example.org"]);
        assert_eq!(site.exclude_networks, ["203.0.113.0/24"]);
        assert_eq!(site.time_zone, "UTC");
        let before = site.clone();
        for bad in [
            SiteChange {
                domains: Some(vec![]),
                ..SiteChange::default()
            },
            SiteChange {
                timezone: Some("Mars/Olympus".into()),
                ..SiteChange::default()
            },
            SiteChange {
                exclude_networks: Some(vec!["nope".into()]),
                ..SiteChange::default()
            },
            SiteChange {
                retention_days: Some(0),
                ..SiteChange::default()
            },
        ] {
            assert!(bad.apply(&mut site).is_err(), "{bad:?}");
            assert_eq!(site, before, "an error changes nothing");
        }
        let clear = SiteChange {
            exclude_networks: Some(vec![]),
            ..SiteChange::default()
        };
        assert_eq!(clear.apply(&mut site).unwrap(), ["exclude_networks"]);
        assert!(SiteChange::default().apply(&mut site).unwrap().is_empty());
    }

    #[test]
    fn new_sites_derive_their_id_from_the_first_domain() {
        let site = new_site(
            None,
            &["www.Example.com".into(), "*.example.org".into()],
            "Europe/Berlin",
            &SiteChange {
                history_days: Some(0),
                ..SiteChange::default()
            },
            7,
        )
        .unwrap();
        assert_eq!(site.id, "example.com");
        assert_eq!(site.history_days, 0);
        assert_eq!(site.created_at, 7);
        assert_eq!(site_id_from_domain("*.example.org"), "example.org");
        assert_eq!(
            new_site(None, &[], "UTC", &SiteChange::default(), 0),
            Err(SiteError::NoDomain)
        );
        assert_eq!(
            new_site(
                Some("Bad Id"),
                &["a.com".into()],
                "UTC",
                &SiteChange::default(),
                0
            ),
            Err(SiteError::InvalidId)
        );
        assert_eq!(
            snippet("s", "https://in.example/"),
            "<script defer data-site=\"s\" src=\"https://in.example/script.js\"></script>"
        );
    }
}
