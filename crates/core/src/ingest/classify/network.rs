//! Hosting and datacenter networks: whether a client address belongs to a
//! cloud, VPS, dedicated or web-hosting provider, where people do not
//! browse from but scripts run (ingest drops such an event as a bot,
//! reason `datacenter`).
//!
//! The ranges are every route of the hosting ASNs listed in
//! `data/datacenter_asns.txt`, as `@ip-location-db/asn` (RouteViews, the
//! RIRs and DB-IP, CC BY 4.0) maps addresses to ASNs, merged by
//! `infra/scripts/gen_datacenter_ranges.py` into `data/datacenter_ipv4.txt`
//! and `data/datacenter_ipv6.txt` (provenance and refresh:
//! `data/README.md`). `build.rs` compiles them into two sorted arrays of
//! disjoint inclusive pairs, `(u32, u32)` for IPv4 and `(u64, u64)` for the
//! upper 64 bits of an IPv6 address (a /64 is one network, as the rate
//! limiter keys it), searched by binary search: nothing is parsed at
//! start-up, nothing read at run time.
//!
//! Loopback, private, link-local, shared (CGNAT), unique-local and
//! documentation addresses are never a hosting network (they are not
//! routed; `tally dev` and the tests send from 127.0.0.1), whatever the
//! tables say. An IPv4-mapped IPv6 address is looked up as IPv4.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

include!(concat!(env!("OUT_DIR"), "/datacenter_ranges.rs"));

/// Whether `ip` (as the limiter sees it: the request's client address) is
/// in a hosting or datacenter network. Text that is not an address is not.
pub fn is_datacenter(ip: &str) -> bool {
    match ip.trim().parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => is_datacenter_v4(v4),
        Ok(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => is_datacenter_v4(v4),
            None => is_datacenter_v6(v6),
        },
        Err(_) => false,
    }
}

/// [`is_datacenter`] of an IPv4 address.
pub fn is_datacenter_v4(ip: Ipv4Addr) -> bool {
    let local = ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_documentation()
        // 100.64.0.0/10, carrier-grade NAT's shared space.
        || (ip.octets()[0] == 100 && (ip.octets()[1] & 0xc0) == 64);
    !local && within(&DATACENTER_V4, u32::from(ip))
}

/// [`is_datacenter`] of an IPv6 address (its /64).
pub fn is_datacenter_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    let local = ip.is_loopback()
        || ip.is_unspecified()
        // fc00::/7 unique local, fe80::/10 link-local, 2001:db8::/32
        // documentation.
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first == 0x2001 && ip.segments()[1] == 0x0db8);
    !local && within(&DATACENTER_V6, (u128::from(ip) >> 64) as u64)
}

/// Whether `x` is in one of the sorted, disjoint, inclusive `ranges`.
fn within<T: Ord + Copy>(ranges: &[(T, T)], x: T) -> bool {
    // The first range starting after x; the one before it is the candidate.
    let after = ranges.partition_point(|&(start, _)| start <= x);
    after
        .checked_sub(1)
        .and_then(|i| ranges.get(i))
        .is_some_and(|&(_, end)| x <= end)
}

/// The tables' sizes: (IPv4 ranges, IPv6 ranges, bytes of read-only data).
pub fn table_size() -> (usize, usize, usize) {
    (
        DATACENTER_V4.len(),
        DATACENTER_V6.len(),
        std::mem::size_of_val(&DATACENTER_V4) + std::mem::size_of_val(&DATACENTER_V6),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Addresses and their network in `@ip-location-db/asn` 2.3.2026061719
    /// (looked up in its CSVs, not in these tables), and whether each is a
    /// hosting network.
    const CASES: &[(&str, &str, bool)] = &[
        // Hosting, IPv4.
        ("52.95.110.1", "AS16509 Amazon (AWS)", true),
        ("3.5.140.1", "AS16509 Amazon (AWS)", true),
        ("34.64.0.1", "AS396982 Google Cloud", true),
        ("20.0.0.1", "AS8075 Microsoft (Azure)", true),
        ("104.131.0.1", "AS14061 DigitalOcean", true),
        ("51.38.0.1", "AS16276 OVH", true),
        ("88.198.0.1", "AS24940 Hetzner", true),
        ("45.32.0.1", "AS20473 Vultr (The Constant Company)", true),
        ("139.162.0.1", "AS63949 Linode (Akamai)", true),
        ("47.74.0.1", "AS45102 Alibaba Cloud", true),
        ("129.146.0.1", "AS31898 Oracle Cloud", true),
        ("163.172.0.1", "AS12876 Scaleway", true),
        ("62.171.128.1", "AS51167 Contabo", true),
        // Hosting, IPv6 (and an IPv4-mapped hosting address).
        ("2a01:4f8::1", "AS24940 Hetzner", true),
        ("2604:a880::1", "AS14061 DigitalOcean", true),
        ("2a03:b0c0::1", "AS14061 DigitalOcean", true),
        ("2600:1f00::1", "AS16509 Amazon (AWS)", true),
        ("2001:41d0::1", "AS16276 OVH", true),
        ("2600:1900::1", "AS396982 Google Cloud", true),
        ("::ffff:88.198.0.1", "AS24940 Hetzner, IPv4-mapped", true),
        // Residential and mobile networks.
        ("73.0.0.1", "AS7922 Comcast", false),
        ("84.128.0.1", "AS3320 Deutsche Telekom", false),
        ("90.0.0.1", "AS3215 Orange", false),
        ("86.0.0.1", "AS5089 Virgin Media", false),
        ("49.36.0.1", "AS55836 Reliance Jio (mobile)", false),
        ("189.0.0.1", "AS26599 Telefonica Brasil", false),
        ("2601::1", "AS7922 Comcast", false),
        ("2003::1", "AS3320 Deutsche Telekom", false),
        ("2607:fb90::1", "AS21928 T-Mobile USA (mobile)", false),
        ("2a00:23c0::1", "AS5400 British Telecom", false),
        ("2409:4000::1", "AS55836 Reliance Jio (mobile)", false),
        ("2806:1000::1", "AS8151 Uninet (Telmex)", false),
        // Left out on purpose: relays that carry people.
        (
            "104.28.0.1",
            "AS13335 Cloudflare (WARP, Private Relay)",
            false,
        ),
        ("172.64.0.1", "AS13335 Cloudflare", false),
        // Never routed: local runs, tests, private networks.
        ("127.0.0.1", "loopback", false),
        ("::1", "loopback", false),
        ("10.1.2.3", "private", false),
        ("192.168.1.10", "private", false),
        ("172.16.0.1", "private", false),
        ("100.64.0.1", "carrier-grade NAT", false),
        ("169.254.1.1", "link-local", false),
        ("fd00::1", "unique local", false),
        ("fe80::1", "link-local", false),
        ("203.0.113.7", "documentation", false),
        ("2001:db8::7", "documentation", false),
        ("", "no address", false),
        ("not an address", "no address", false),
    ];

    #[test]
    fn hosting_networks_are_found_and_others_not() {
        for &(ip, network, hosting) in CASES {
            assert_eq!(is_datacenter(ip), hosting, "{ip} ({network})");
        }
        let found = CASES.iter().filter(|c| is_datacenter(c.0)).count();
        assert_eq!(found, 20, "the hosting rows above");
    }

    #[test]
    fn a_range_is_inclusive_at_both_ends() {
        let (start, end) = DATACENTER_V4[DATACENTER_V4.len() / 2];
        assert!(is_datacenter_v4(Ipv4Addr::from(start)));
        assert!(is_datacenter_v4(Ipv4Addr::from(end)));
        let (_, end) = DATACENTER_V4[0];
        let (next, _) = DATACENTER_V4[1];
        // Between two ranges (they are merged when adjacent, so a gap).
        assert!(next > end + 1);
        assert!(!is_datacenter_v4(Ipv4Addr::from(end + 1)));
        let (start, end) = DATACENTER_V6[DATACENTER_V6.len() / 2];
        assert!(is_datacenter_v6(Ipv6Addr::from(u128::from(start) << 64)));
        assert!(is_datacenter_v6(Ipv6Addr::from(
            (u128::from(end) << 64) | 0xffff
        )));
    }

    #[test]
    fn the_tables_are_sorted_disjoint_and_compact() {
        assert!(DATACENTER_V4.windows(2).all(|w| w[0].1 < w[1].0));
        assert!(DATACENTER_V6.windows(2).all(|w| w[0].1 < w[1].0));
        let (v4, v6, bytes) = table_size();
        // As many as the data files' lines (data/datacenter_ipv*.txt).
        let lines = |text: &str| text.lines().filter(|l| !l.starts_with('#')).count();
        assert_eq!(v4, lines(include_str!("../../../data/datacenter_ipv4.txt")));
        assert_eq!(v6, lines(include_str!("../../../data/datacenter_ipv6.txt")));
        // Measured: 19,841 IPv4 and 2,668 IPv6 ranges, 201,416 bytes.
        assert_eq!(bytes, v4 * 8 + v6 * 16);
        assert!(bytes < 256 * 1024, "{bytes} bytes");
    }
}
