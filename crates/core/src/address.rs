//! Special-purpose IP addresses: the ranges an outbound call must not reach unless allowed.
//!
//! Jobs call URLs users wrote, from inside a network. Whatever is not an ordinary public address
//! is refused by default: every range of the IANA IPv4 and IPv6 Special-Purpose Address
//! Registries, plus multicast and the reserved `240.0.0.0/4`. IPv6 addresses that stand for an
//! IPv4 address are judged by that address: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible
//! (`::a.b.c.d`), SIIT's IPv4-translated (`::ffff:0:a.b.c.d`) and the NAT64 well-known prefix
//! (`64:ff9b::a.b.c.d`), so `[::169.254.169.254]` is the metadata endpoint it looks like. The
//! tunnel forms that carry an IPv4 address elsewhere in the address (6to4 `2002::/16`, Teredo in
//! `2001::/32`) and the local-use NAT64 prefix `64:ff9b:1::/48` are refused whatever they carry.
//!
//! Everything here is data and arithmetic: the outbound client (in `sundial-service`) decides what
//! a [`Class`] means under its policy (loopback is allowed on a developer's machine, private
//! ranges when configured, anything by an explicit allow list).
//!
//! ```
//! use sundial_core::address::{classify, Class};
//! let metadata = classify("::169.254.169.254".parse().unwrap()).unwrap();
//! assert_eq!(metadata.class, Class::Special);
//! assert!(metadata.reason.starts_with("link-local"));
//! assert!(classify("8.8.8.8".parse().unwrap()).is_none());
//! assert_eq!(classify("::ffff:127.0.0.1".parse().unwrap()).unwrap().class, Class::Loopback);
//! ```

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What a policy may open: loopback and private ranges can be allowed by a switch, the rest only
/// by an explicit allow-list entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// The machine itself: `127.0.0.0/8`, `::1`.
    Loopback,
    /// Private networks: `10/8`, `172.16/12`, `192.168/16`, the shared address space `100.64/10`,
    /// unique local `fc00::/7` and the deprecated site-local `fec0::/10`.
    Private,
    /// Every other special-purpose, multicast or reserved range.
    Special,
}

/// A non-public address: its class and why, naming the range (`"link-local (169.254.0.0/16,
/// where cloud metadata endpoints live)"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Which switch, if any, may open it.
    pub class: Class,
    /// The range and what it is, for messages.
    pub reason: &'static str,
}

/// One row of the table: a CIDR block (`bits` is the address as an integer) and its refusal.
#[derive(Clone, Copy, Debug)]
struct Range<T> {
    bits: T,
    prefix: u32,
    refusal: Refusal,
}

const fn v4(
    a: u8,
    b: u8,
    c: u8,
    d: u8,
    prefix: u32,
    class: Class,
    reason: &'static str,
) -> Range<u32> {
    Range {
        bits: u32::from_be_bytes([a, b, c, d]),
        prefix,
        refusal: Refusal { class, reason },
    }
}

const fn v6(segments: [u16; 8], prefix: u32, class: Class, reason: &'static str) -> Range<u128> {
    let [a, b, c, d, e, f, g, h] = segments;
    Range {
        bits: Ipv6Addr::new(a, b, c, d, e, f, g, h).to_bits(),
        prefix,
        refusal: Refusal { class, reason },
    }
}

use Class::{Loopback, Private, Special};

/// The IANA IPv4 Special-Purpose Address Registry, plus multicast. Where blocks nest, the most
/// specific one gives the reason; all are refused.
const IPV4: &[Range<u32>] = &[
    v4(
        0,
        0,
        0,
        0,
        8,
        Special,
        "unspecified (\"this network\", 0.0.0.0/8)",
    ),
    v4(10, 0, 0, 0, 8, Private, "a private address (10.0.0.0/8)"),
    v4(
        100,
        64,
        0,
        0,
        10,
        Private,
        "a private address (shared carrier-grade NAT space, 100.64.0.0/10)",
    ),
    v4(127, 0, 0, 0, 8, Loopback, "loopback (127.0.0.0/8)"),
    v4(
        169,
        254,
        0,
        0,
        16,
        Special,
        "link-local (169.254.0.0/16, where cloud metadata endpoints live)",
    ),
    v4(
        172,
        16,
        0,
        0,
        12,
        Private,
        "a private address (172.16.0.0/12)",
    ),
    v4(
        192,
        0,
        0,
        0,
        24,
        Special,
        "reserved for IETF protocol assignments (192.0.0.0/24)",
    ),
    v4(
        192,
        0,
        0,
        0,
        29,
        Special,
        "the IPv4 service continuity prefix (192.0.0.0/29)",
    ),
    v4(
        192,
        0,
        0,
        8,
        32,
        Special,
        "the IPv4 dummy address (192.0.0.8)",
    ),
    v4(
        192,
        0,
        0,
        9,
        32,
        Special,
        "the Port Control Protocol anycast address (192.0.0.9)",
    ),
    v4(
        192,
        0,
        0,
        10,
        32,
        Special,
        "the TURN anycast address (192.0.0.10)",
    ),
    v4(
        192,
        0,
        0,
        170,
        32,
        Special,
        "NAT64/DNS64 discovery (192.0.0.170)",
    ),
    v4(
        192,
        0,
        0,
        171,
        32,
        Special,
        "NAT64/DNS64 discovery (192.0.0.171)",
    ),
    v4(
        192,
        0,
        2,
        0,
        24,
        Special,
        "documentation (TEST-NET-1, 192.0.2.0/24)",
    ),
    v4(192, 31, 196, 0, 24, Special, "AS112 (192.31.196.0/24)"),
    v4(192, 52, 193, 0, 24, Special, "AMT (192.52.193.0/24)"),
    v4(
        192,
        88,
        99,
        0,
        24,
        Special,
        "the deprecated 6to4 relay anycast (192.88.99.0/24)",
    ),
    v4(
        192,
        88,
        99,
        2,
        32,
        Special,
        "the 6a44 relay anycast address (192.88.99.2)",
    ),
    v4(
        192,
        168,
        0,
        0,
        16,
        Private,
        "a private address (192.168.0.0/16)",
    ),
    v4(
        192,
        175,
        48,
        0,
        24,
        Special,
        "AS112 direct delegation (192.175.48.0/24)",
    ),
    v4(198, 18, 0, 0, 15, Special, "benchmarking (198.18.0.0/15)"),
    v4(
        198,
        51,
        100,
        0,
        24,
        Special,
        "documentation (TEST-NET-2, 198.51.100.0/24)",
    ),
    v4(
        203,
        0,
        113,
        0,
        24,
        Special,
        "documentation (TEST-NET-3, 203.0.113.0/24)",
    ),
    v4(224, 0, 0, 0, 4, Special, "multicast (224.0.0.0/4)"),
    v4(240, 0, 0, 0, 4, Special, "reserved (240.0.0.0/4)"),
    v4(
        255,
        255,
        255,
        255,
        32,
        Special,
        "broadcast (255.255.255.255)",
    ),
];

/// The IANA IPv6 Special-Purpose Address Registry (less the forms [`translated_ipv4`] unwraps),
/// plus site-local and multicast.
const IPV6: &[Range<u128>] = &[
    v6([0, 0, 0, 0, 0, 0, 0, 0], 128, Special, "unspecified (::)"),
    v6([0, 0, 0, 0, 0, 0, 0, 1], 128, Loopback, "loopback (::1)"),
    v6(
        [0x64, 0xff9b, 1, 0, 0, 0, 0, 0],
        48,
        Special,
        "the local-use IPv4/IPv6 translation prefix (64:ff9b:1::/48)",
    ),
    v6(
        [0x100, 0, 0, 0, 0, 0, 0, 0],
        64,
        Special,
        "discard-only (100::/64)",
    ),
    v6(
        [0x100, 0, 0, 1, 0, 0, 0, 0],
        64,
        Special,
        "the dummy IPv6 prefix (100:0:0:1::/64)",
    ),
    v6(
        [0x2001, 0, 0, 0, 0, 0, 0, 0],
        23,
        Special,
        "reserved for IETF protocol assignments (2001::/23)",
    ),
    v6(
        [0x2001, 0, 0, 0, 0, 0, 0, 0],
        32,
        Special,
        "Teredo (2001::/32), which carries an IPv4 address",
    ),
    v6(
        [0x2001, 1, 0, 0, 0, 0, 0, 1],
        128,
        Special,
        "the Port Control Protocol anycast address (2001:1::1)",
    ),
    v6(
        [0x2001, 1, 0, 0, 0, 0, 0, 2],
        128,
        Special,
        "the TURN anycast address (2001:1::2)",
    ),
    v6(
        [0x2001, 1, 0, 0, 0, 0, 0, 3],
        128,
        Special,
        "the DNS-SD service registration anycast address (2001:1::3)",
    ),
    v6(
        [0x2001, 2, 0, 0, 0, 0, 0, 0],
        48,
        Special,
        "benchmarking (2001:2::/48)",
    ),
    v6(
        [0x2001, 3, 0, 0, 0, 0, 0, 0],
        32,
        Special,
        "AMT (2001:3::/32)",
    ),
    v6(
        [0x2001, 4, 0x112, 0, 0, 0, 0, 0],
        48,
        Special,
        "AS112 (2001:4:112::/48)",
    ),
    v6(
        [0x2001, 0x10, 0, 0, 0, 0, 0, 0],
        28,
        Special,
        "the deprecated ORCHID prefix (2001:10::/28)",
    ),
    v6(
        [0x2001, 0x20, 0, 0, 0, 0, 0, 0],
        28,
        Special,
        "ORCHIDv2 (2001:20::/28)",
    ),
    v6(
        [0x2001, 0x30, 0, 0, 0, 0, 0, 0],
        28,
        Special,
        "drone remote ID (2001:30::/28)",
    ),
    v6(
        [0x2001, 0xdb8, 0, 0, 0, 0, 0, 0],
        32,
        Special,
        "documentation (2001:db8::/32)",
    ),
    v6(
        [0x2002, 0, 0, 0, 0, 0, 0, 0],
        16,
        Special,
        "6to4 (2002::/16), which carries an IPv4 address",
    ),
    v6(
        [0x2620, 0x4f, 0x8000, 0, 0, 0, 0, 0],
        48,
        Special,
        "AS112 direct delegation (2620:4f:8000::/48)",
    ),
    v6(
        [0x3fff, 0, 0, 0, 0, 0, 0, 0],
        20,
        Special,
        "documentation (3fff::/20)",
    ),
    v6(
        [0x5f00, 0, 0, 0, 0, 0, 0, 0],
        16,
        Special,
        "segment routing SIDs (5f00::/16)",
    ),
    v6(
        [0xfc00, 0, 0, 0, 0, 0, 0, 0],
        7,
        Private,
        "a private address (unique local, fc00::/7)",
    ),
    v6(
        [0xfe80, 0, 0, 0, 0, 0, 0, 0],
        10,
        Special,
        "link-local (fe80::/10)",
    ),
    v6(
        [0xfec0, 0, 0, 0, 0, 0, 0, 0],
        10,
        Private,
        "a private address (deprecated site-local, fec0::/10)",
    ),
    v6(
        [0xff00, 0, 0, 0, 0, 0, 0, 0],
        8,
        Special,
        "multicast (ff00::/8)",
    ),
];

/// Why `ip` is not an ordinary public address, or `None` if it is one.
pub fn classify(ip: IpAddr) -> Option<Refusal> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Refusal> {
    most_specific(IPV4, ip.to_bits(), 32)
}

fn classify_v6(ip: Ipv6Addr) -> Option<Refusal> {
    // `::` and `::1` first: in the IPv4-compatible block they would read as 0.0.0.0 and 0.0.0.1.
    if ip.is_unspecified() || ip.is_loopback() {
        return most_specific(IPV6, ip.to_bits(), 128);
    }
    if let Some(v4) = translated_ipv4(ip) {
        return classify_v4(v4);
    }
    most_specific(IPV6, ip.to_bits(), 128)
}

/// The IPv4 address an IPv6 address is dialled as or translated to: IPv4-mapped
/// (`::ffff:a.b.c.d`, which the OS dials as IPv4), IPv4-compatible (`::a.b.c.d`, deprecated),
/// IPv4-translated (`::ffff:0:a.b.c.d`, SIIT) and the NAT64 well-known prefix
/// (`64:ff9b::a.b.c.d`, which a NAT64 gateway forwards). `::` and `::1` are not IPv4 addresses.
pub fn translated_ipv4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let [a, b, c, d, e, f, _, _] = ip.segments();
    let translated = matches!(
        [a, b, c, d, e, f],
        [0, 0, 0, 0, 0, 0xffff]
            | [0, 0, 0, 0, 0, 0]
            | [0, 0, 0, 0, 0xffff, 0]
            | [0x64, 0xff9b, 0, 0, 0, 0]
    );
    if !translated || ip.is_unspecified() || ip.is_loopback() {
        return None;
    }
    let [.., w, x, y, z] = ip.octets();
    Some(Ipv4Addr::new(w, x, y, z))
}

/// The refusal of the longest-prefix block of `table` holding `bits`.
fn most_specific<T>(table: &[Range<T>], bits: T, width: u32) -> Option<Refusal>
where
    T: Copy + std::ops::BitXor<Output = T> + std::ops::Shr<u32, Output = T> + PartialEq + Default,
{
    table
        .iter()
        .filter(|range| {
            let shift = width - range.prefix;
            shift >= width || (bits ^ range.bits) >> shift == T::default()
        })
        .max_by_key(|range| range.prefix)
        .map(|range| range.refusal)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block as the registries write it, and whether it is refused whole (`true`) or unwrapped
    /// to the IPv4 address it embeds (`false`).
    fn block(text: &str) -> (IpAddr, IpAddr) {
        let (addr, prefix) = text.split_once('/').unwrap_or((text, ""));
        let Ok(addr) = addr.parse::<IpAddr>() else {
            panic!("{text}")
        };
        match addr {
            IpAddr::V4(v4) => {
                let prefix: u32 = prefix.parse().unwrap_or(32);
                let host = u32::MAX.checked_shr(prefix).unwrap_or(0);
                let first = v4.to_bits() & !host;
                (
                    IpAddr::V4(Ipv4Addr::from_bits(first)),
                    IpAddr::V4(Ipv4Addr::from_bits(first | host)),
                )
            }
            IpAddr::V6(v6) => {
                let prefix: u32 = prefix.parse().unwrap_or(128);
                let host = u128::MAX.checked_shr(prefix).unwrap_or(0);
                let first = v6.to_bits() & !host;
                (
                    IpAddr::V6(Ipv6Addr::from_bits(first)),
                    IpAddr::V6(Ipv6Addr::from_bits(first | host)),
                )
            }
        }
    }

    fn ip(text: &str) -> IpAddr {
        match text.parse() {
            Ok(ip) => ip,
            Err(e) => panic!("{text}: {e}"),
        }
    }

    /// Every entry of the IANA IPv4 and IPv6 Special-Purpose Address Registries (as of 2025),
    /// written here independently of the table above: its first and last address are refused.
    /// The IPv4-embedding blocks `::ffff:0:0/96` and `64:ff9b::/96` are judged by the address
    /// they carry instead (below).
    const REGISTRIES: &[(&str, Class)] = &[
        // IPv4
        ("0.0.0.0/8", Special),
        ("0.0.0.0/32", Special),
        ("10.0.0.0/8", Private),
        ("100.64.0.0/10", Private),
        ("127.0.0.0/8", Loopback),
        ("169.254.0.0/16", Special),
        ("172.16.0.0/12", Private),
        ("192.0.0.0/24", Special),
        ("192.0.0.0/29", Special),
        ("192.0.0.8/32", Special),
        ("192.0.0.9/32", Special),
        ("192.0.0.10/32", Special),
        ("192.0.0.170/32", Special),
        ("192.0.0.171/32", Special),
        ("192.0.2.0/24", Special),
        ("192.31.196.0/24", Special),
        ("192.52.193.0/24", Special),
        ("192.88.99.0/24", Special),
        ("192.88.99.2/32", Special),
        ("192.168.0.0/16", Private),
        ("192.175.48.0/24", Special),
        ("198.18.0.0/15", Special),
        ("198.51.100.0/24", Special),
        ("203.0.113.0/24", Special),
        ("240.0.0.0/4", Special),
        ("255.255.255.255/32", Special),
        // IPv6
        ("::1/128", Loopback),
        ("::/128", Special),
        ("64:ff9b:1::/48", Special),
        ("100::/64", Special),
        ("100:0:0:1::/64", Special),
        ("2001::/23", Special),
        ("2001::/32", Special),
        ("2001:1::1/128", Special),
        ("2001:1::2/128", Special),
        ("2001:1::3/128", Special),
        ("2001:2::/48", Special),
        ("2001:3::/32", Special),
        ("2001:4:112::/48", Special),
        ("2001:10::/28", Special),
        ("2001:20::/28", Special),
        ("2001:30::/28", Special),
        ("2001:db8::/32", Special),
        ("2002::/16", Special),
        ("2620:4f:8000::/48", Special),
        ("3fff::/20", Special),
        ("5f00::/16", Special),
        ("fc00::/7", Private),
        ("fe80::/10", Special),
        // Not in the registries, refused all the same.
        ("224.0.0.0/4", Special),
        ("ff00::/8", Special),
        ("fec0::/10", Private),
    ];

    #[test]
    fn every_registry_block_is_refused_from_its_first_to_its_last_address() {
        for (text, class) in REGISTRIES {
            let (first, last) = block(text);
            for address in [first, last] {
                let refusal = classify(address);
                assert_eq!(refusal.map(|r| r.class), Some(*class), "{text}: {address}");
            }
        }
    }

    #[test]
    fn the_addresses_around_special_blocks_are_public() {
        for address in [
            "1.1.1.1",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "191.255.255.255",
            "192.0.1.0",
            "192.0.3.0",
            "192.88.98.255",
            "192.88.100.0",
            "192.167.255.255",
            "192.169.0.0",
            "198.17.255.255",
            "198.20.0.0",
            "198.51.99.255",
            "198.51.101.0",
            "203.0.112.255",
            "203.0.114.0",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2001:200::1",
            "2001:db7:ffff::1",
            "2001:db9::1",
            "2003::1",
            "2620:4f:7fff::1",
            "3ffe:ffff::1",
            "4000::1",
            "5eff::1",
            "5f01::1",
            "fbff:ffff::1",
            "::ffff:8.8.8.8",
            "::8.8.8.8",
            "::ffff:0:8.8.8.8",
            "64:ff9b::808:808",
            "64:ff9b:2::1",
        ] {
            assert_eq!(classify(ip(address)), None, "{address}");
        }
    }

    /// IPv6 forms of IPv4 addresses are judged by the IPv4 address; tunnel forms are refused.
    #[test]
    fn ipv6_forms_that_embed_ipv4_are_unwrapped() {
        let cases: &[(&str, Option<Class>, &str)] = &[
            ("::ffff:169.254.169.254", Some(Special), "link-local"),
            ("::ffff:a9fe:a9fe", Some(Special), "link-local"),
            ("::169.254.169.254", Some(Special), "link-local"),
            ("::ffff:0:169.254.169.254", Some(Special), "link-local"),
            ("64:ff9b::169.254.169.254", Some(Special), "link-local"),
            ("64:ff9b:1::a9fe:a9fe", Some(Special), "the local-use"),
            ("64:ff9b:1:abcd::808:808", Some(Special), "the local-use"),
            ("2002:a9fe:a9fe::1", Some(Special), "6to4"),
            ("2002:808:808::1", Some(Special), "6to4"),
            (
                "2001:0:4136:e378:8000:63bf:3fff:fdd2",
                Some(Special),
                "Teredo",
            ),
            ("::ffff:127.0.0.1", Some(Loopback), "loopback"),
            ("::127.0.0.1", Some(Loopback), "loopback"),
            ("64:ff9b::7f00:1", Some(Loopback), "loopback"),
            ("::ffff:10.0.0.1", Some(Private), "a private"),
            ("::10.0.0.1", Some(Private), "a private"),
            ("64:ff9b::a00:1", Some(Private), "a private"),
            ("::ffff:198.18.0.1", Some(Special), "benchmarking"),
            ("::192.0.0.9", Some(Special), "the Port Control"),
            ("::ffff:0.0.0.0", Some(Special), "unspecified"),
            ("::2", Some(Special), "unspecified"),
            ("::ffff:255.255.255.255", Some(Special), "broadcast"),
            ("::1", Some(Loopback), "loopback (::1)"),
            ("::", Some(Special), "unspecified (::)"),
        ];
        for (address, class, reason) in cases {
            let refusal = classify(ip(address));
            assert_eq!(refusal.map(|r| r.class), *class, "{address}");
            let text = refusal.map_or("", |r| r.reason);
            assert!(text.starts_with(reason), "{address}: {text}");
        }
        assert_eq!(
            translated_ipv4("::ffff:1.2.3.4".parse().unwrap_or(Ipv6Addr::UNSPECIFIED)),
            Some(Ipv4Addr::new(1, 2, 3, 4))
        );
        assert_eq!(translated_ipv4(Ipv6Addr::LOCALHOST), None);
        assert_eq!(translated_ipv4(Ipv6Addr::UNSPECIFIED), None);
    }

    #[test]
    fn the_most_specific_block_gives_the_reason() {
        let reason = |text: &str| classify(ip(text)).map_or("", |r| r.reason);
        assert!(reason("192.0.0.9").starts_with("the Port Control Protocol"));
        assert!(reason("192.0.0.100").starts_with("reserved for IETF"));
        assert!(reason("192.0.0.1").starts_with("the IPv4 service continuity"));
        assert!(reason("2001:db8::1").starts_with("documentation"));
        assert!(reason("2001:1ff::1").starts_with("reserved for IETF"));
        assert!(reason("198.18.0.1").starts_with("benchmarking"));
    }
}
