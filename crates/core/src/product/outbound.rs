//! Outbound requests that cannot reach inside: which hosts and addresses
//! a URL Tally posts to (an alert webhook, a Slack hook) may name or
//! resolve to. Checked when the URL is saved ([`check_host`] on the name,
//! [`special_purpose`] on an address literal) and again when the job
//! connects: every address the name resolves to must be public, and the
//! connection goes to the address checked (no second resolution, so a
//! name cannot rebind between the check and the connect).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether an address is in IANA's IPv4 or IPv6 special-purpose
/// registries (loopback, private, shared, link-local, documentation,
/// benchmarking, multicast, reserved, broadcast, unspecified), or reaches
/// one through a translation (IPv4-mapped, IPv4-compatible, NAT64, 6to4,
/// Teredo): nothing a public webhook lives at.
pub fn special_purpose(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => special_v6(v6),
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix)
    };
    (u32::from(ip) & mask) == (u32::from(Ipv4Addr::from(net)) & mask)
}

fn special_v4(ip: Ipv4Addr) -> bool {
    const NETS: [([u8; 4], u32); 20] = [
        ([0, 0, 0, 0], 8),
        ([10, 0, 0, 0], 8),
        ([100, 64, 0, 0], 10),
        ([127, 0, 0, 0], 8),
        ([169, 254, 0, 0], 16),
        ([172, 16, 0, 0], 12),
        ([192, 0, 0, 0], 24),
        ([192, 0, 2, 0], 24),
        ([192, 31, 196, 0], 24),
        ([192, 52, 193, 0], 24),
        ([192, 88, 99, 0], 24),
        ([192, 168, 0, 0], 16),
        ([192, 175, 48, 0], 24),
        ([198, 18, 0, 0], 15),
        ([198, 51, 100, 0], 24),
        ([203, 0, 113, 0], 24),
        ([224, 0, 0, 0], 4),
        ([240, 0, 0, 0], 4),
        ([255, 255, 255, 255], 32),
        ([233, 252, 0, 0], 24),
    ];
    NETS.iter().any(|(net, prefix)| in_v4(ip, *net, *prefix))
}

fn in_v6(ip: Ipv6Addr, net: [u16; 8], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - prefix)
    };
    (u128::from(ip) & mask) == (u128::from(Ipv6Addr::from(net)) & mask)
}

fn special_v6(ip: Ipv6Addr) -> bool {
    // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d): the
    // IPv4 address they carry decides, and the compatible form is
    // deprecated: refused whole.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return special_v4(v4);
    }
    const NETS: [([u16; 8], u32); 14] = [
        ([0, 0, 0, 0, 0, 0, 0, 0], 96), // ::/96: unspecified, loopback, IPv4-compatible
        ([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96), // NAT64
        ([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48), // local-use NAT64
        ([0x100, 0, 0, 0, 0, 0, 0, 0], 64), // discard-only
        ([0x2001, 0, 0, 0, 0, 0, 0, 0], 23), // IETF protocol assignments (Teredo, ORCHID, …)
        ([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32), // documentation
        ([0x2002, 0, 0, 0, 0, 0, 0, 0], 16), // 6to4
        ([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20), // documentation
        ([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16), // segment routing
        ([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7), // unique local
        ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10), // link-local
        ([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10), // site-local (deprecated)
        ([0xff00, 0, 0, 0, 0, 0, 0, 0], 8), // multicast
        ([0x2620, 0x4f, 0x8000, 0, 0, 0, 0, 0], 48), // AS112 direct delegation
    ];
    NETS.iter().any(|(net, prefix)| in_v6(ip, *net, *prefix))
}

/// Names that only resolve inside (RFC 6761/6762/8375 special-use and
/// private-use top-level names) or that public wildcard DNS services map to
/// any address written in them.
const INTERNAL_SUFFIXES: [&str; 14] = [
    "localhost",
    "local",
    "internal",
    "localdomain",
    "home.arpa",
    "invalid",
    "test",
    "example",
    "onion",
    "alt",
    "lan",
    "intranet",
    "corp",
    "home",
];

/// Public names that answer any address spelled in them
/// (`127.0.0.1.nip.io`) or loopback for every name (`*.localtest.me`).
const WILDCARD_DNS: [&str; 9] = [
    "nip.io",
    "sslip.io",
    "xip.io",
    "localtest.me",
    "lvh.me",
    "vcap.me",
    "traefik.me",
    "local.gd",
    "nip.direct",
];

/// Why a host name is refused: a single label (`intranet`), an internal
/// top-level name (`*.localhost`, `*.internal`, …, with or without the
/// trailing dot), a wildcard-DNS service, or a name spelling an internal
/// IPv4 address (`10-0-0-1.example.net`, `127.0.0.1.example.net`).
pub fn check_host(name: &str) -> Result<(), &'static str> {
    let name = name.trim().trim_end_matches('.').to_ascii_lowercase();
    if name.is_empty() || !name.contains('.') {
        return if name == "localhost" || name.is_empty() {
            Err("an internal address")
        } else {
            Err("a single-label name")
        };
    }
    let ends = |suffix: &str| name == suffix || name.ends_with(&format!(".{suffix}"));
    if INTERNAL_SUFFIXES.iter().any(|s| ends(s)) || WILDCARD_DNS.iter().any(|s| ends(s)) {
        return Err("an internal address");
    }
    if spells_internal_v4(&name) {
        return Err("an internal address");
    }
    Ok(())
}

/// Whether four consecutive labels (or one label of four `-`-separated
/// numbers) spell a special-purpose IPv4 address.
fn spells_internal_v4(name: &str) -> bool {
    let labels: Vec<&str> = name.split('.').collect();
    let parse = |parts: &[&str]| -> Option<Ipv4Addr> {
        let octets: Vec<u8> = parts
            .iter()
            .map(|p| p.parse().ok())
            .collect::<Option<_>>()?;
        Some(Ipv4Addr::new(octets[0], octets[1], octets[2], octets[3]))
    };
    let dotted = labels.windows(4).filter_map(parse).any(special_v4);
    let dashed = labels.iter().any(|l| {
        let parts: Vec<&str> = l.split('-').collect();
        parts.len() == 4 && parse(&parts).is_some_and(special_v4)
    });
    dotted || dashed
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn special_purpose_addresses_in_every_spelling_are_refused() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "198.18.0.1",
            "224.0.0.1",
            "240.0.0.1",
            "255.255.255.255",
            "0.0.0.0",
            "192.0.2.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2001::1",
            "2001:db8::1",
            "ff02::1",
            "::127.0.0.1",
        ] {
            assert!(special_purpose(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1",
            "::ffff:8.8.8.8",
            "2a00:1450::1",
        ] {
            assert!(!special_purpose(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn internal_names_are_refused() {
        for name in [
            "localhost",
            "localhost.",
            "foo.localhost",
            "metadata.google.internal",
            "127.0.0.1.nip.io",
            "169.254.169.254.nip.io",
            "intranet",
            "printer.local",
            "router.home.arpa",
            "x.localtest.me",
            "10-0-0-1.sslip.io",
            "127.0.0.1.attacker.example.net",
            "10-0-0-1.attacker.example.net",
        ] {
            assert!(check_host(name).is_err(), "{name}");
        }
        for name in [
            "hooks.slack.com",
            "example.com",
            "api.example.net",
            "8.8.8.8.dns.example.org",
        ] {
            assert_eq!(check_host(name), Ok(()), "{name}");
        }
    }
}
