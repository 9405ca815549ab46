//! What each fuzz target checks, shared by the `cargo fuzz` targets and by
//! `tests/tests/tracking/fuzz_corpus.rs`, which replays the committed corpus and
//! regression inputs on every `cargo test --workspace`.

// Each fuzz target uses one of the checks.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::OnceLock;
use tally_core::HOUR_MS;
use tally_core::engine::dimension::Dimension;
use tally_core::engine::filter::Filter;
use tally_core::engine::range::{Compare, Interval, resolve};
use tally_core::engine::segment::{self, HourBlocks};
use tally_core::ingest::classify::referrer::Channel;
use tally_core::ingest::classify::ua::DeviceType;
use tally_core::ingest::event::{self, Client, Event, Kind};
use tally_core::ingest::payload::{self, Limits};
use tally_core::ingest::salt::{DailySalt, Secret, daily_salt};
use tally_core::ingest::site::Site;
use time::macros::date;

fn fixtures() -> &'static (Site, DailySalt) {
    static F: OnceLock<(Site, DailySalt)> = OnceLock::new();
    F.get_or_init(|| {
        let site = Site::new(
            "blog",
            &["example.com".into(), "*.shop.io".into()],
            "Europe/Berlin",
            0,
        )
        .expect("site");
        let salt = daily_salt(&Secret::new(b"fuzz".to_vec()), time::Date::MIN);
        (site, salt)
    })
}

/// The collect path: any body through the payload parser, and every
/// accepted hit through the site checks, the event builder, its key and its
/// stored form. Panics on a broken invariant.
pub fn collect(data: &[u8]) {
    let (site, salt) = fixtures();
    let Ok(Ok(hit)) = payload::parse(data, &Limits::default()) else {
        return;
    };
    let client = Client {
        ip: "203.0.113.1",
        user_agent: "Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0",
        origin: Some("https://example.com"),
        geo: None,
    };
    let _ = event::screen_client(&client);
    if let Ok(Ok(())) = event::check_site(&hit, site, &client) {
        let at = payload::event_time(hit.client_ts, 1_764_460_800_000);
        let stored = event::build(&hit, site, &client, at, salt);
        let sharded = Site {
            shards: 4,
            ..site.clone()
        };
        let key = stored.key(&sharded, hit.eid.as_deref().unwrap_or("x"), false);
        let parsed = tally_core::keys::EventKey::parse(&key.pk(), &key.sk());
        assert_eq!(parsed.as_ref(), Some(&key), "keys round-trip");
        let json = serde_json::to_string(&stored).expect("serialises");
        let back: event::Event = serde_json::from_str(&json).expect("deserialises");
        assert_eq!(back.vid, stored.vid);
    }
}

/// The query parameters: any query string through the range, interval,
/// comparison, dimension and filter parsers, and every parsed filter back
/// through its own printer. Panics on a broken invariant.
pub fn query_params(data: &[u8]) {
    let q: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(data).into_owned().collect();
    let get = |k: &str| q.get(k).map(String::as_str);
    if let Ok((_, range)) = resolve(
        get("period"),
        get("from"),
        get("to"),
        date!(2026 - 11 - 30),
        date!(2020 - 01 - 01),
    ) {
        assert!(range.from <= range.to);
        if let Ok(interval) = Interval::parse(get("interval"), range) {
            let buckets = tally_core::engine::range::day_buckets(range, interval);
            assert!(!buckets.is_empty());
        }
        if let Some(Ok(c)) = get("compare").map(Compare::parse) {
            let other = c.range(range);
            assert!(other.from <= other.to);
        }
    }
    if let Some(d) = get("dimension") {
        let _ = Dimension::parse(d);
    }
    if let Some(f) = get("filters")
        && let Ok(filter) = Filter::parse(f)
    {
        assert_eq!(
            Filter::parse(&filter.to_query()).as_ref(),
            Ok(&filter),
            "filters round-trip"
        );
    }
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(filter) = Filter::parse(text)
    {
        let _ = filter.to_query();
    }
}

/// The segment decoder and encoder. The bytes are read three ways: as a
/// part (any bytes through [`segment::decode_part`]), as a block's
/// inflated body (wrapped in a valid zlib stream and part, so the fuzzer
/// gets past the checksum into the column decoder), and as a recipe for a
/// few events that are encoded, packed and decoded again. Decoding must
/// never panic; a part that decodes must be self-consistent (times inside
/// their hour and in order, the same blocks as [`segment::blocks_of`]
/// lists) and re-encode to the same events; encoded events must come back
/// exactly, whatever order they were given in.
pub fn segment(data: &[u8]) {
    check_part(data);
    check_part(&part_of_body(data));
    let (hour, events) = events_of(data);
    let expected: Vec<Event> = events
        .iter()
        .filter(|e| e.ts >= hour && e.ts < hour + HOUR_MS)
        .cloned()
        .collect();
    let encoded = segment::encode_hour(hour, &events);
    assert_eq!(
        encoded.events as usize,
        expected.len(),
        "events in the hour"
    );
    let mut reversed = events.clone();
    reversed.reverse();
    let again = segment::encode_hour(hour, &reversed);
    assert_eq!(encoded.hash, again.hash, "the hash ignores input order");
    assert_eq!(encoded.blocks, again.blocks, "the bytes ignore input order");
    let back = round_trip(hour, encoded);
    assert!(back.is_sorted_by_key(|e| e.ts), "decoded in time order");
    assert_same(back, expected);
}

/// Decodes `bytes` as a part and, if it decodes, checks what it holds.
fn check_part(bytes: &[u8]) {
    let Ok(hours) = segment::decode_part(bytes, |_| true) else {
        return;
    };
    let blocks = segment::blocks_of(bytes).expect("a part that decodes splits into blocks");
    assert_eq!(blocks.len(), hours.len(), "one decoded hour per block");
    for (block, (hour, events)) in blocks.iter().zip(&hours) {
        assert_eq!(block.hour, *hour);
        assert_eq!(block.events as usize, events.len(), "the block's count");
        assert_eq!(hour.rem_euclid(HOUR_MS), 0, "an hour starts on the hour");
        assert!(
            events
                .iter()
                .all(|e| e.ts >= *hour && e.ts - hour < HOUR_MS),
            "events inside their hour"
        );
        assert!(events.is_sorted_by_key(|e| e.ts), "events in time order");
        let encoded = segment::encode_hour(*hour, events);
        assert_eq!(encoded.events as usize, events.len());
        assert_same(round_trip(*hour, encoded), events.clone());
    }
    // Blocks of unwanted hours are skipped, the rest are the same.
    let odd = |h: i64| (h / HOUR_MS) % 2 == 1;
    let some = segment::decode_part(bytes, odd).expect("a subset decodes");
    let expected: Vec<_> = hours.into_iter().filter(|(h, _)| odd(*h)).collect();
    assert_eq!(some.len(), expected.len());
    for ((h, events), (h2, events2)) in some.into_iter().zip(expected) {
        assert_eq!(h, h2);
        assert_same(events, events2);
    }
}

/// Packs an hour and decodes every part back: its events, in part order.
fn round_trip(hour: i64, encoded: HourBlocks) -> Vec<Event> {
    let mut out = Vec::new();
    for part in segment::pack(hour, std::slice::from_ref(&encoded)) {
        assert!(part.bytes.len() <= segment::MAX_PART_BYTES);
        for (h, events) in
            segment::decode_part(&part.bytes, |_| true).expect("a packed part decodes")
        {
            assert_eq!(h, hour);
            out.extend(events);
        }
    }
    out
}

/// Asserts two lists hold the same events (values compared bit for bit, so
/// a NaN equals itself).
fn assert_same(mut a: Vec<Event>, mut b: Vec<Event>) {
    let order = |x: &Event, y: &Event| segment::canonical_cmp(x, y).then_with(|| x.sid.cmp(&y.sid));
    a.sort_by(order);
    b.sort_by(order);
    let key = |e: Event| {
        let mut e = e;
        let bits = e.value.take().map(f64::to_bits);
        (bits, e)
    };
    let a: Vec<_> = a.into_iter().map(key).collect();
    let b: Vec<_> = b.into_iter().map(key).collect();
    assert!(a == b, "different events:\n{a:?}\n{b:?}");
}

/// A part holding one block whose inflated body is `body`: the block's
/// hour and count are read from the body's first two varints (as the
/// decoder will check them), the zlib stream is made of stored blocks.
fn part_of_body(body: &[u8]) -> Vec<u8> {
    let mut at = 0;
    let hour = read_varint(body, &mut at).unwrap_or(0);
    let count = read_varint(body, &mut at)
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(0);
    let zlib = zlib_stored(body);
    let mut out = Vec::with_capacity(zlib.len() + 32);
    out.extend_from_slice(segment::MAGIC);
    out.push(segment::VERSION);
    put_varint(&mut out, 1);
    put_varint(&mut out, hour);
    put_varint(&mut out, u64::from(count));
    put_varint(&mut out, zlib.len() as u64);
    out.extend_from_slice(&zlib);
    out
}

fn read_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A zlib stream (RFC 1950) of uncompressed deflate blocks.
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / 65_535 * 5 + 16);
    out.extend_from_slice(&[0x78, 0x01]);
    let mut chunks = data.chunks(65_535).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(chunk) = chunks.next() {
        out.push(u8::from(chunks.peek().is_none()));
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    let (mut s1, mut s2) = (1u32, 0u32);
    for &b in data {
        s1 = (s1 + u32::from(b)) % 65_521;
        s2 = (s2 + s1) % 65_521;
    }
    out.extend_from_slice(&((s2 << 16) | s1).to_be_bytes());
    out
}

/// Reads the fuzz input as a recipe for an hour and its events (missing
/// bytes read as zeros).
struct Recipe<'a> {
    data: &'a [u8],
    at: usize,
}

/// Strings the recipe picks from, so that equal strings (and ids that are
/// also session ids) are common.
const WORDS: [&str; 16] = [
    "",
    "/",
    "0123456789abcdef",
    "00000000000000aa",
    "ffffffffffffffff",
    "0123456789ABCDEF",
    "example.com",
    "/pricing?plan=pro",
    "Direct",
    "Firefox",
    "Linux",
    "DE",
    "signup",
    "grüße ✓",
    "t1",
    "1920x1080",
];

impl Recipe<'_> {
    fn done(&self) -> bool {
        self.at >= self.data.len()
    }

    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    fn uint(&mut self, bytes: usize) -> u64 {
        (0..bytes).fold(0, |v, _| (v << 8) | u64::from(self.byte()))
    }

    fn text(&mut self) -> String {
        let b = self.byte();
        if b < 192 {
            WORDS[usize::from(b) % WORDS.len()].to_owned()
        } else {
            // A slice of the input itself, up to 63 bytes.
            let len = usize::from(b - 192);
            let from = self.at.min(self.data.len());
            let to = (from + len).min(self.data.len());
            self.at = from + len;
            String::from_utf8_lossy(&self.data[from..to]).into_owned()
        }
    }

    fn opt_text(&mut self) -> Option<String> {
        (self.byte() & 1 == 1).then(|| self.text())
    }

    fn event(&mut self, hour: i64) -> Event {
        let flags = self.byte();
        // Mostly inside the hour, a few just outside it.
        let offset = (self.uint(3) % (HOUR_MS as u64 + 2_000)) as i64 - 1_000;
        let kind = match self.byte() % 3 {
            0 => Kind::PageView,
            1 => Kind::Custom,
            _ => Kind::Engagement,
        };
        let channel = match self.byte() % 6 {
            0 => Channel::Direct,
            1 => Channel::OrganicSearch,
            2 => Channel::OrganicSocial,
            3 => Channel::Referral,
            4 => Channel::Email,
            _ => Channel::Paid,
        };
        let device = match self.byte() % 4 {
            0 => DeviceType::Desktop,
            1 => DeviceType::Mobile,
            2 => DeviceType::Tablet,
            _ => DeviceType::Unknown,
        };
        let vid = match flags & 3 {
            0 | 1 => format!("{:016x}", self.uint(8)),
            _ => self.text(),
        };
        let sid = if flags & 4 == 0 {
            String::new()
        } else {
            self.text()
        };
        let mut props = BTreeMap::new();
        for _ in 0..self.byte() % 4 {
            props.insert(self.text(), self.text());
        }
        Event {
            kind,
            ts: hour.saturating_add(offset),
            vid,
            sid,
            host: self.text(),
            path: self.text(),
            referrer: self.opt_text(),
            source: self.text(),
            channel,
            utm_source: self.opt_text(),
            utm_medium: self.opt_text(),
            utm_campaign: self.opt_text(),
            utm_content: self.opt_text(),
            utm_term: self.opt_text(),
            browser: self.text(),
            os: self.text(),
            device,
            country: self.opt_text(),
            region: self.opt_text(),
            city: self.opt_text(),
            screen: self.opt_text(),
            name: self.opt_text(),
            value: (flags & 8 != 0).then(|| f64::from_bits(self.uint(8))),
            props,
            // Up to 2^40 ms (ingest caps engagement at a day).
            engaged_ms: (flags & 16 != 0).then(|| self.uint(5)),
            scroll: (flags & 32 != 0).then(|| self.byte()),
            live: None,
            non_interactive: flags & 64 != 0,
            revenue: (flags & 128 != 0).then(|| tally_core::ingest::event::Revenue {
                amount: format!("{}.{:02}", self.uint(3), self.byte() % 100),
                currency: ["EUR", "USD", "JPY"][usize::from(self.byte() % 3)].to_owned(),
            }),
            // Last, so older corpus inputs read the same fields as before.
            browser_version: self.opt_text(),
            os_version: self.opt_text(),
            vitals: match self.byte() {
                0..=127 => None,
                b => {
                    let mut metric = |bit: u8| (b & bit != 0).then(|| self.uint(3) as u32);
                    Some(tally_core::ingest::vitals::Vitals {
                        lcp: metric(1),
                        inp: metric(2),
                        cls: metric(4),
                        fcp: metric(8),
                        ttfb: metric(16),
                        fid: metric(32),
                    })
                    // Stored as none without a value, as ingest does.
                    .filter(|v| !v.is_empty())
                }
            },
        }
    }

    /// A copy of `e` with one field changed (or none): near-duplicates.
    fn variant(&mut self, e: &Event) -> Event {
        let mut e = e.clone();
        match self.byte() % 8 {
            0 => {}
            1 => e.sid = e.vid.clone(),
            2 => e.sid.clear(),
            3 => e.vid = self.text(),
            4 => e.ts += i64::from(self.byte() % 3) - 1,
            5 => e.path = self.text(),
            6 => e.value = Some(f64::from_bits(self.uint(8))),
            _ => e.props.clear(),
        }
        e
    }
}

/// An hour and events (inside it, mostly) read from the bytes.
fn events_of(data: &[u8]) -> (i64, Vec<Event>) {
    let mut r = Recipe { data, at: 0 };
    // 2025-11-30T00:00Z, give or take five days; or an hour at either end
    // of what a part can hold.
    let last = i64::MAX / HOUR_MS - 1;
    let index = match r.byte() {
        0 => 0,
        255 => last,
        b => 490_128 + i64::from(b) - 128,
    };
    let hour = index * HOUR_MS;
    let mut events: Vec<Event> = Vec::new();
    while !r.done() && events.len() < 64 {
        let op = r.byte();
        match (op % 4, events.last()) {
            (0, Some(prev)) => {
                let prev = prev.clone();
                let copy = r.variant(&prev);
                events.push(copy);
            }
            (1, Some(_)) if op >= 200 => {
                // A burst of near-copies (a large, repetitive hour).
                let prev = events[events.len() - 1].clone();
                for _ in 0..usize::from(op - 199) * 4 {
                    let mut copy = prev.clone();
                    copy.ts = (copy.ts + 1).min(hour + HOUR_MS - 1);
                    events.push(copy);
                }
            }
            _ => events.push(r.event(hour)),
        }
    }
    (hour, events)
}
