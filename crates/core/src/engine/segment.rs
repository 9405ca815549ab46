//! Segments: a site's raw events compacted into a columnar, compressed form.
//!
//! The scheduled job turns every sealed UTC hour of raw events (all shards)
//! into one or more *blocks*: the hour's events in a canonical order (by tab,
//! then time), one column per field, strings dictionary-encoded, times as
//! deltas, visitor ids as 8 bytes, enumerations as small integers, each block
//! deflated on its own (zlib, so a flipped bit fails its checksum). Blocks are
//! packed into *parts* of at most [`MAX_PART_BYTES`], one DynamoDB item each,
//! and a UTC day's parts are listed in its [`Manifest`]. A block is a pure
//! function of its hour's events: the same events give the same bytes and
//! the same [`HourBlocks::hash`], which is how the job tells that a
//! recompaction changed nothing and skips the write.
//!
//! Decoding never panics and never guesses: a wrong magic, an unknown
//! version, a truncated or corrupt part is a [`SegmentError`], and the reader
//! falls back to raw events for the hours that part held.

use crate::ingest::classify::referrer::Channel;
use crate::ingest::classify::ua::DeviceType;
use crate::ingest::event::{Event, Kind};
use crate::{HOUR_MS, Millis};
use flate2::Compression;
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::io::{Read, Write};

/// The first bytes of every part.
pub const MAGIC: &[u8; 3] = b"TSG";
/// The part format this code writes. Version 3 names each block's body
/// format ([`Block::format`]); version 2 parts, written before, hold
/// bodies of format 2 only, and are still read.
pub const VERSION: u8 = 3;
/// The body format this code writes: format 3 adds the browser and system
/// versions after format 2's string columns; a format 2 body reads them as
/// none (events stored before versions were). Format 4 adds each event's
/// Web Vitals after the properties ([`crate::ingest::vitals`]); an older body reads
/// as none.
pub const BLOCK_FORMAT: u8 = 4;
/// Most events in one block: about 200 KB compressed for typical traffic.
pub const BLOCK_EVENTS: usize = 24 * 1024;
/// Largest compressed block; a larger hour is split into several blocks.
pub const MAX_BLOCK_BYTES: usize = 300 * 1024;
/// Largest part (one item's binary attribute), well under DynamoDB's 400 KB
/// item limit.
pub const MAX_PART_BYTES: usize = 350 * 1024;
/// Largest size of a block's decoded events (their structs and strings)
/// the encoder writes; a busier chunk is split.
pub const MAX_BLOCK_DECODED: usize = 64 * 1024 * 1024;
/// Largest decompressed block accepted (a guard against inflation bombs).
pub const MAX_BLOCK_INFLATED: usize = 64 * 1024 * 1024;

/// Why a part cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SegmentError {
    /// The bytes do not start with [`MAGIC`].
    #[error("not a segment part")]
    Magic,
    /// Written by a format this code does not know.
    #[error("unknown segment version {0}")]
    Version(u8),
    /// The bytes end early.
    #[error("truncated segment")]
    Truncated,
    /// The bytes are inconsistent (checksum, index or length out of range).
    #[error("corrupt segment: {0}")]
    Corrupt(&'static str),
}

/// One compressed block: events of one UTC hour (all of them, or a share of
/// a very large hour).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The hour's start, ms.
    pub hour: Millis,
    /// Events in the block.
    pub events: u32,
    /// Its body's format (2 or [`BLOCK_FORMAT`]): a block moved into a
    /// new part keeps the format it was encoded in.
    pub format: u8,
    /// The zlib stream.
    pub bytes: Vec<u8>,
}

/// An hour's events, encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HourBlocks {
    /// The hour's start, ms.
    pub hour: Millis,
    /// Events in the hour.
    pub events: u32,
    /// A hash of the hour's canonical encoding: equal for equal events.
    pub hash: u64,
    /// The blocks, in order.
    pub blocks: Vec<Block>,
}

/// A part: one item's worth of blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// A content hash of the bytes (16 hex digits) with the prefix of the
    /// layout it is stored in ([`crate::keys::day_part_id`]): the part's key
    /// suffix. Parts of the first layout, still listed by older manifests,
    /// have the bare hash.
    pub id: String,
    /// First hour of the UTC day (0-23) it holds blocks of.
    pub first: u8,
    /// Last hour of the UTC day (0-23) it holds blocks of.
    pub last: u8,
    /// The bytes stored.
    pub bytes: Vec<u8>,
}

/// One hour as listed in a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HourEntry {
    /// [`HourBlocks::hash`] as 16 hex digits.
    #[serde(rename = "h")]
    pub hash: String,
    /// Events in the hour.
    #[serde(rename = "e")]
    pub events: u32,
}

/// One part as listed in a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartRef {
    /// The part id (its key suffix; its prefix names the partition it is
    /// stored in, [`crate::keys::part_key`]).
    pub id: String,
    /// First hour of the day it holds.
    #[serde(rename = "f")]
    pub first: u8,
    /// Last hour of the day it holds.
    #[serde(rename = "l")]
    pub last: u8,
    /// Its size in bytes.
    #[serde(rename = "b")]
    pub bytes: u32,
}

/// What is compacted of one UTC day: which hours, in which parts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Compacted hours of the day, by hour (`"00"`–`"23"`).
    pub hours: BTreeMap<String, HourEntry>,
    /// The parts holding them.
    pub parts: Vec<PartRef>,
    /// Whether the parts are the whole, sealed day packed (no more hours will
    /// be added; recompaction replaces them all).
    #[serde(default)]
    pub packed: bool,
    /// Incremented on every write (the write is conditional on the last one).
    #[serde(default)]
    pub version: u64,
    /// When it was written.
    #[serde(default)]
    pub written_at: Millis,
}

impl Manifest {
    /// Whether hour `h` (0-23) is compacted.
    pub fn has_hour(&self, h: u8) -> bool {
        self.hours.contains_key(&hour_label(h))
    }

    /// The parts holding blocks of hour `h`.
    pub fn parts_of(&self, h: u8) -> impl Iterator<Item = &PartRef> {
        self.parts
            .iter()
            .filter(move |p| p.first <= h && h <= p.last)
    }

    /// Events in the compacted hours.
    pub fn events(&self) -> u64 {
        self.hours.values().map(|e| u64::from(e.events)).sum()
    }

    /// Bytes of every part.
    pub fn bytes(&self) -> u64 {
        self.parts.iter().map(|p| u64::from(p.bytes)).sum()
    }
}

/// `"00"`–`"23"`: an hour's key in [`Manifest::hours`].
pub fn hour_label(h: u8) -> String {
    format!("{h:02}")
}

/// An hash's text form in a manifest.
pub fn hash_label(hash: u64) -> String {
    format!("{hash:016x}")
}

// ---------------------------------------------------------------- encoding

/// Encodes one hour's events (those outside `[hour, hour + 1 h)` are not
/// part of the hour and are left out). `hour` is the start of a UTC hour
/// (a non-negative multiple of [`HOUR_MS`]).
pub fn encode_hour(hour: Millis, events: &[Event]) -> HourBlocks {
    let mut refs: Vec<&Event> = events
        .iter()
        .filter(|e| e.ts >= hour && e.ts < hour + HOUR_MS)
        .collect();
    refs.sort_by(|a, b| canonical_cmp(a, b));
    let mut bodies: Vec<(usize, usize, Vec<u8>, Vec<u8>)> = Vec::new();
    // Chunks of at most BLOCK_EVENTS events (so a busy hour is compressed
    // once), halved again if one still compresses beyond the limit.
    let chunks = refs.len().div_ceil(BLOCK_EVENTS).max(1);
    let mut pending: Vec<(usize, usize)> = (0..chunks)
        .rev()
        .map(|i| (i * refs.len() / chunks, (i + 1) * refs.len() / chunks))
        .collect();
    while let Some((from, to)) = pending.pop() {
        let body = encode_body(hour, &refs[from..to]);
        let packed = deflate(&body);
        let decoded: usize = refs[from..to].iter().map(|e| decoded_size(e)).sum();
        let too_big = packed.len() > MAX_BLOCK_BYTES
            || body.len() > MAX_BLOCK_INFLATED
            || decoded > MAX_BLOCK_DECODED;
        if too_big && to - from > 1 {
            let mid = from + (to - from) / 2;
            pending.push((mid, to));
            pending.push((from, mid));
        } else {
            bodies.push((from, to, body, packed));
        }
    }
    let mut hasher = ring::digest::Context::new(&ring::digest::SHA256);
    hasher.update(&hour.to_be_bytes());
    let mut blocks = Vec::with_capacity(bodies.len());
    for (from, to, body, packed) in bodies {
        hasher.update(&(body.len() as u64).to_be_bytes());
        hasher.update(&body);
        blocks.push(Block {
            hour,
            events: u32::try_from(to - from).unwrap_or(u32::MAX),
            format: BLOCK_FORMAT,
            bytes: packed,
        });
    }
    HourBlocks {
        hour,
        events: u32::try_from(refs.len()).unwrap_or(u32::MAX),
        hash: first_u64(hasher.finish().as_ref()),
        blocks,
    }
}

/// Packs a UTC day's hours (in hour order) into parts of at most
/// [`MAX_PART_BYTES`]. `day_start` is the day's first instant. Empty hours
/// take no room.
pub fn pack(day_start: Millis, hours: &[HourBlocks]) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut current: Vec<&Block> = Vec::new();
    let mut size = 0;
    // Hours without events are listed in the manifest but need no block.
    for block in hours
        .iter()
        .flat_map(|h| h.blocks.iter())
        .filter(|b| b.events > 0)
    {
        let framed = block.bytes.len() + 16;
        if !current.is_empty() && size + framed > MAX_PART_BYTES {
            parts.push(write_part(day_start, &current));
            current.clear();
            size = 0;
        }
        current.push(block);
        size += framed;
    }
    if !current.is_empty() {
        parts.push(write_part(day_start, &current));
    }
    parts
}

/// Splits a part back into its blocks without inflating them (for repacking
/// a day's hour parts into day parts).
pub fn blocks_of(bytes: &[u8]) -> Result<Vec<Block>, SegmentError> {
    let mut r = Reader::new(bytes);
    if r.take(MAGIC.len())? != MAGIC {
        return Err(SegmentError::Magic);
    }
    let version = r.byte()?;
    if version != 2 && version != VERSION {
        return Err(SegmentError::Version(version));
    }
    let count = r.len()?;
    let mut out = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        let hour = i64::try_from(r.varint()?)
            .ok()
            .and_then(|h| h.checked_mul(HOUR_MS))
            .ok_or(SegmentError::Corrupt("hour"))?;
        let events = u32::try_from(r.varint()?).map_err(|_| SegmentError::Corrupt("count"))?;
        let format = if version == 2 { 2 } else { r.byte()? };
        if !(2..=BLOCK_FORMAT).contains(&format) {
            return Err(SegmentError::Version(format));
        }
        let len = r.len()?;
        out.push(Block {
            hour,
            events,
            format,
            bytes: r.take(len)?.to_vec(),
        });
    }
    if !r.done() {
        return Err(SegmentError::Corrupt("trailing bytes"));
    }
    Ok(out)
}

/// Decodes a part's blocks of the hours `wanted` keeps: `(hour, events)` per
/// block, events in time order.
pub fn decode_part(
    bytes: &[u8],
    wanted: impl Fn(Millis) -> bool,
) -> Result<Vec<(Millis, Vec<Event>)>, SegmentError> {
    let mut out = Vec::new();
    for block in blocks_of(bytes)? {
        if wanted(block.hour) {
            let events = decode_block(&block)?;
            out.push((block.hour, events));
        }
    }
    Ok(out)
}

/// Decodes one block: its events in time order.
pub fn decode_block(block: &Block) -> Result<Vec<Event>, SegmentError> {
    let body = inflate(&block.bytes)?;
    let mut events = decode_body(block.hour, &body, block.format)?;
    if events.len() != block.events as usize {
        return Err(SegmentError::Corrupt("event count"));
    }
    events.sort_by_key(|e| e.ts);
    Ok(events)
}

fn write_part(day_start: Millis, blocks: &[&Block]) -> Part {
    let mut out = Vec::with_capacity(blocks.iter().map(|b| b.bytes.len() + 16).sum::<usize>() + 8);
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    put_varint(&mut out, blocks.len() as u64);
    for b in blocks {
        put_varint(&mut out, u64::try_from(b.hour / HOUR_MS).unwrap_or(0));
        put_varint(&mut out, u64::from(b.events));
        out.push(b.format);
        put_varint(&mut out, b.bytes.len() as u64);
        out.extend_from_slice(&b.bytes);
    }
    let hour_of_day =
        |b: &Block| u8::try_from(((b.hour - day_start) / HOUR_MS).clamp(0, 23)).unwrap_or(0);
    let first = blocks.iter().map(|b| hour_of_day(b)).min().unwrap_or(0);
    let last = blocks.iter().map(|b| hour_of_day(b)).max().unwrap_or(0);
    let digest = ring::digest::digest(&ring::digest::SHA256, &out);
    Part {
        id: crate::keys::day_part_id(&hash_label(first_u64(digest.as_ref()))),
        first,
        last,
        bytes: out,
    }
}

fn first_u64(bytes: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[..8]);
    u64::from_be_bytes(b)
}

fn deflate(body: &[u8]) -> Vec<u8> {
    let mut enc = ZlibEncoder::new(Vec::with_capacity(body.len() / 3 + 64), Compression::new(3));
    // Writing to a Vec cannot fail.
    let _ = enc.write_all(body);
    enc.finish().unwrap_or_default()
}

fn inflate(bytes: &[u8]) -> Result<Vec<u8>, SegmentError> {
    let mut out = Vec::with_capacity(bytes.len() * 4);
    inflate_into(bytes, &mut out)?;
    Ok(out)
}

/// Inflates into `out` (cleared first; its memory reused).
fn inflate_into(bytes: &[u8], out: &mut Vec<u8>) -> Result<(), SegmentError> {
    out.clear();
    let mut dec = ZlibDecoder::new(bytes).take(MAX_BLOCK_INFLATED as u64 + 1);
    dec.read_to_end(out)
        .map_err(|_| SegmentError::Corrupt("deflate stream or checksum"))?;
    if out.len() > MAX_BLOCK_INFLATED {
        return Err(SegmentError::Corrupt("inflated size"));
    }
    Ok(())
}

/// The memory an event takes once decoded: its struct and its strings.
pub fn decoded_size(e: &Event) -> usize {
    let opt = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    std::mem::size_of::<Event>()
        + e.vid.len()
        + e.sid.len()
        + e.host.len()
        + e.path.len()
        + e.source.len()
        + e.browser.len()
        + e.os.len()
        + opt(&e.browser_version)
        + opt(&e.os_version)
        + opt(&e.referrer)
        + opt(&e.utm_source)
        + opt(&e.utm_medium)
        + opt(&e.utm_campaign)
        + opt(&e.utm_content)
        + opt(&e.utm_term)
        + opt(&e.country)
        + opt(&e.region)
        + opt(&e.city)
        + opt(&e.screen)
        + opt(&e.name)
        + e.revenue
            .as_ref()
            .map_or(0, |r| r.amount.len() + r.currency.len() + 48)
        + e.props
            .iter()
            .map(|(k, v)| k.len() + v.len() + 64)
            .sum::<usize>()
}

/// The order events are encoded in: by tab (session id, else visitor id),
/// then time, then every other field, so the same events always give the
/// same bytes, and a tab's visit-level fields sit in runs that compress well.
pub fn canonical_cmp(a: &Event, b: &Event) -> Ordering {
    tab_key(a)
        .cmp(tab_key(b))
        .then(a.ts.cmp(&b.ts))
        .then(kind_code(a.kind).cmp(&kind_code(b.kind)))
        .then_with(|| a.vid.cmp(&b.vid))
        .then_with(|| a.path.cmp(&b.path))
        .then_with(|| a.name.cmp(&b.name))
        .then_with(|| a.engaged_ms.cmp(&b.engaged_ms))
        .then_with(|| a.scroll.cmp(&b.scroll))
        .then_with(|| a.host.cmp(&b.host))
        .then_with(|| a.referrer.cmp(&b.referrer))
        .then_with(|| a.source.cmp(&b.source))
        .then_with(|| channel_code(a.channel).cmp(&channel_code(b.channel)))
        .then_with(|| a.utm_source.cmp(&b.utm_source))
        .then_with(|| a.utm_medium.cmp(&b.utm_medium))
        .then_with(|| a.utm_campaign.cmp(&b.utm_campaign))
        .then_with(|| a.utm_content.cmp(&b.utm_content))
        .then_with(|| a.utm_term.cmp(&b.utm_term))
        .then_with(|| a.browser.cmp(&b.browser))
        .then_with(|| a.os.cmp(&b.os))
        .then_with(|| a.browser_version.cmp(&b.browser_version))
        .then_with(|| a.os_version.cmp(&b.os_version))
        .then_with(|| device_code(a.device).cmp(&device_code(b.device)))
        .then_with(|| a.country.cmp(&b.country))
        .then_with(|| a.region.cmp(&b.region))
        .then_with(|| a.city.cmp(&b.city))
        .then_with(|| a.screen.cmp(&b.screen))
        .then_with(|| cmp_value(a.value, b.value))
        .then_with(|| a.props.cmp(&b.props))
        .then_with(|| a.non_interactive.cmp(&b.non_interactive))
        .then_with(|| a.revenue.cmp(&b.revenue))
        .then_with(|| a.sid.cmp(&b.sid))
        .then_with(|| {
            let f = |e: &Event| e.vitals.as_ref().map(vitals_fields);
            f(a).cmp(&f(b))
        })
}

fn tab_key(e: &Event) -> &str {
    if e.sid.is_empty() { &e.vid } else { &e.sid }
}

fn cmp_value(a: Option<f64>, b: Option<f64>) -> Ordering {
    match (a, b) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        (x, y) => x.is_some().cmp(&y.is_some()),
    }
}

fn kind_code(k: Kind) -> u8 {
    match k {
        Kind::PageView => 0,
        Kind::Custom => 1,
        Kind::Engagement => 2,
    }
}

pub(crate) fn kind_of(code: u8) -> Result<Kind, SegmentError> {
    Ok(match code {
        0 => Kind::PageView,
        1 => Kind::Custom,
        2 => Kind::Engagement,
        _ => return Err(SegmentError::Corrupt("kind")),
    })
}

/// A channel's one-byte code in segments. Codes are never reused or
/// renumbered: 0-5 are the channels segments held before GA4's groups (5 is
/// the legacy `Paid`), new channels take the next free codes.
pub(crate) fn channel_code(c: Channel) -> u8 {
    match c {
        Channel::Direct => 0,
        Channel::OrganicSearch => 1,
        Channel::OrganicSocial => 2,
        Channel::Referral => 3,
        Channel::Email => 4,
        Channel::Paid => 5,
        Channel::PaidSearch => 6,
        Channel::PaidSocial => 7,
        Channel::PaidVideo => 8,
        Channel::PaidShopping => 9,
        Channel::PaidOther => 10,
        Channel::Display => 11,
        Channel::CrossNetwork => 12,
        Channel::OrganicShopping => 13,
        Channel::OrganicVideo => 14,
        Channel::Affiliates => 15,
        Channel::Audio => 16,
        Channel::Sms => 17,
        Channel::MobilePushNotifications => 18,
        Channel::AiAssistants => 19,
    }
}

pub(crate) fn channel_of(code: u8) -> Result<Channel, SegmentError> {
    Ok(match code {
        0 => Channel::Direct,
        1 => Channel::OrganicSearch,
        2 => Channel::OrganicSocial,
        3 => Channel::Referral,
        4 => Channel::Email,
        5 => Channel::Paid,
        6 => Channel::PaidSearch,
        7 => Channel::PaidSocial,
        8 => Channel::PaidVideo,
        9 => Channel::PaidShopping,
        10 => Channel::PaidOther,
        11 => Channel::Display,
        12 => Channel::CrossNetwork,
        13 => Channel::OrganicShopping,
        14 => Channel::OrganicVideo,
        15 => Channel::Affiliates,
        16 => Channel::Audio,
        17 => Channel::Sms,
        18 => Channel::MobilePushNotifications,
        19 => Channel::AiAssistants,
        _ => return Err(SegmentError::Corrupt("channel")),
    })
}

pub(crate) fn device_code(d: DeviceType) -> u8 {
    match d {
        DeviceType::Desktop => 0,
        DeviceType::Mobile => 1,
        DeviceType::Tablet => 2,
        DeviceType::Unknown => 3,
    }
}

pub(crate) fn device_of(code: u8) -> Result<DeviceType, SegmentError> {
    Ok(match code {
        0 => DeviceType::Desktop,
        1 => DeviceType::Mobile,
        2 => DeviceType::Tablet,
        3 => DeviceType::Unknown,
        _ => return Err(SegmentError::Corrupt("device")),
    })
}

/// A string column: values numbered in order of first appearance (0 is
/// "none"), the dictionary written once, then one index per event.
struct Dict<'a> {
    ids: FxHashMap<&'a str, u64>,
    values: Vec<&'a str>,
    column: Vec<u64>,
}

impl<'a> Dict<'a> {
    fn new(n: usize) -> Self {
        Self {
            ids: FxHashMap::default(),
            values: Vec::new(),
            column: Vec::with_capacity(n),
        }
    }

    fn id(&mut self, v: &'a str) -> u64 {
        let next = self.values.len() as u64 + 1;
        let id = *self.ids.entry(v).or_insert(next);
        if id == next {
            self.values.push(v);
        }
        id
    }

    fn push(&mut self, v: Option<&'a str>) {
        let id = v.map_or(0, |v| self.id(v));
        self.column.push(id);
    }

    fn write_values(&self, out: &mut Vec<u8>) {
        put_varint(out, self.values.len() as u64);
        for v in &self.values {
            put_varint(out, v.len() as u64);
            out.extend_from_slice(v.as_bytes());
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        self.write_values(out);
        for id in &self.column {
            put_varint(out, *id);
        }
    }
}

/// Visitor ids: 16 lower-case hex digits (as the ingest pipeline makes
/// them) are stored as 8 bytes; anything else as text.
fn write_visitors(out: &mut Vec<u8>, d: &Dict<'_>) {
    let all_hex = d.values.iter().all(|v| is_visitor_hex(v));
    if all_hex {
        out.push(1);
        put_varint(out, d.values.len() as u64);
        for v in &d.values {
            let n = u64::from_str_radix(v, 16).unwrap_or(0);
            out.extend_from_slice(&n.to_be_bytes());
        }
        for id in &d.column {
            put_varint(out, *id);
        }
    } else {
        out.push(0);
        d.write(out);
    }
}

fn is_visitor_hex(v: &str) -> bool {
    v.len() == 16
        && v.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// String columns after the visitor ids.
const COLUMNS: usize = 21;

/// String columns a body of a format holds (format 2 lacks the versions).
fn columns_of(format: u8) -> usize {
    if format >= 3 { COLUMNS } else { 19 }
}

fn encode_body(hour: Millis, events: &[&Event]) -> Vec<u8> {
    encode_body_of(hour, events, BLOCK_FORMAT)
}

/// A body of `format` (only tests write an older one).
fn encode_body_of(hour: Millis, events: &[&Event], format: u8) -> Vec<u8> {
    let n = events.len();
    let mut out = Vec::with_capacity(n * 24 + 256);
    // The hour is repeated inside the checksummed stream, so a damaged
    // part header can never move events to another hour.
    put_varint(&mut out, u64::try_from(hour / HOUR_MS).unwrap_or(0));
    put_varint(&mut out, n as u64);
    let mut prev = hour;
    for e in events {
        put_varint(&mut out, zigzag(e.ts - prev));
        prev = e.ts;
    }
    out.extend(events.iter().map(|e| kind_code(e.kind)));
    out.extend(events.iter().map(|e| channel_code(e.channel)));
    out.extend(events.iter().map(|e| device_code(e.device)));
    out.extend(events.iter().map(|e| u8::from(e.non_interactive)));

    let mut vid = Dict::new(n);
    for e in events {
        vid.push(Some(e.vid.as_str()));
    }
    write_visitors(&mut out, &vid);
    let columns: [fn(&Event) -> Option<&str>; COLUMNS] = [
        |e| (!e.sid.is_empty()).then_some(e.sid.as_str()),
        |e| Some(e.host.as_str()),
        |e| Some(e.path.as_str()),
        |e| e.referrer.as_deref(),
        |e| Some(e.source.as_str()),
        |e| e.utm_source.as_deref(),
        |e| e.utm_medium.as_deref(),
        |e| e.utm_campaign.as_deref(),
        |e| e.utm_content.as_deref(),
        |e| e.utm_term.as_deref(),
        |e| Some(e.browser.as_str()),
        |e| Some(e.os.as_str()),
        |e| e.country.as_deref(),
        |e| e.region.as_deref(),
        |e| e.city.as_deref(),
        |e| e.screen.as_deref(),
        |e| e.name.as_deref(),
        |e| e.revenue.as_ref().map(|r| r.amount.as_str()),
        |e| e.revenue.as_ref().map(|r| r.currency.as_str()),
        |e| e.browser_version.as_deref(),
        |e| e.os_version.as_deref(),
    ];
    for get in columns.into_iter().take(columns_of(format)) {
        let mut d = Dict::new(n);
        for e in events {
            d.push(get(e));
        }
        d.write(&mut out);
    }

    for e in events {
        put_varint(&mut out, e.engaged_ms.map_or(0, |v| v.saturating_add(1)));
    }
    for e in events {
        put_varint(&mut out, e.scroll.map_or(0, |v| u64::from(v) + 1));
    }
    out.extend(events.iter().map(|e| u8::from(e.value.is_some())));
    for v in events.iter().filter_map(|e| e.value) {
        out.extend_from_slice(&v.to_bits().to_le_bytes());
    }
    let mut keys = Dict::new(0);
    let mut values = Dict::new(0);
    for e in events {
        put_varint(&mut out, e.props.len() as u64);
        for (k, v) in &e.props {
            keys.push(Some(k.as_str()));
            values.push(Some(v.as_str()));
        }
    }
    keys.write(&mut out);
    values.write(&mut out);
    if format >= 4 {
        put_vitals(&mut out, events);
    }
    out
}

/// Web Vitals, per event: a mask of the values it has (bit `i` for
/// [`crate::ingest::vitals::ALL`]`[i]`, bit 5 for FID), then each value.
fn put_vitals(out: &mut Vec<u8>, events: &[&Event]) {
    for e in events {
        let v = e.vitals.unwrap_or_default();
        let all = vitals_fields(&v);
        let mask = all
            .iter()
            .enumerate()
            .fold(0_u64, |m, (i, x)| m | u64::from(x.is_some()) << i);
        put_varint(out, mask);
        for x in all.into_iter().flatten() {
            put_varint(out, u64::from(x));
        }
    }
}

/// A vitals record's six values in the stored order.
fn vitals_fields(v: &crate::ingest::vitals::Vitals) -> [Option<u32>; 6] {
    [v.lcp, v.inp, v.cls, v.fcp, v.ttfb, v.fid]
}

/// Reads [`put_vitals`]' section: `None` when no event has a value.
fn read_vitals(
    r: &mut Reader<'_>,
    n: usize,
) -> Result<Option<Vec<crate::ingest::vitals::Vitals>>, SegmentError> {
    let mut out = Vec::new();
    for i in 0..n {
        let mask = r.varint()?;
        if mask >= 1 << 6 {
            return Err(SegmentError::Corrupt("vitals mask"));
        }
        if mask == 0 {
            continue;
        }
        if out.is_empty() {
            out.resize(n, crate::ingest::vitals::Vitals::default());
        }
        let mut f = [None; 6];
        for (bit, slot) in f.iter_mut().enumerate() {
            if mask & (1 << bit) != 0 {
                let x = u32::try_from(r.varint()?).map_err(|_| SegmentError::Corrupt("vital"))?;
                *slot = Some(x);
            }
        }
        let [lcp, inp, cls, fcp, ttfb, fid] = f;
        out[i] = crate::ingest::vitals::Vitals {
            lcp,
            inp,
            cls,
            fcp,
            ttfb,
            fid,
        };
    }
    Ok((!out.is_empty()).then_some(out))
}

/// String columns of a body, in the order [`encode_body`] writes them (the
/// visitor ids come before them, on their own).
pub(crate) mod col {
    /// The tab's session id (none when the tracker sent none).
    pub const SID: usize = 0;
    /// The page's host.
    pub const HOST: usize = 1;
    /// The page's path.
    pub const PATH: usize = 2;
    /// The external referrer.
    pub const REFERRER: usize = 3;
    /// The source name.
    pub const SOURCE: usize = 4;
    /// `utm_source` … `utm_term` are 5 … 9.
    pub const UTM_SOURCE: usize = 5;
    /// The browser.
    pub const BROWSER: usize = 10;
    /// The operating system.
    pub const OS: usize = 11;
    /// The country, region, city and screen are 12 … 15.
    pub const COUNTRY: usize = 12;
    /// The custom event name.
    pub const NAME: usize = 16;
    /// The revenue's amount.
    pub const AMOUNT: usize = 17;
    /// The revenue's currency.
    pub const CURRENCY: usize = 18;
    /// The browser and its version (format 3).
    pub const BROWSER_VERSION: usize = 19;
    /// The system and its version (format 3).
    pub const OS_VERSION: usize = 20;
}

/// The string column holding a visit-level dimension's value (its first
/// event's), for the dimensions read from one column.
pub(crate) fn session_column(d: crate::engine::dimension::Dimension) -> Option<usize> {
    use crate::engine::dimension::Dimension as D;
    Some(match d {
        D::Hostname => col::HOST,
        D::Referrer => col::REFERRER,
        D::Source => col::SOURCE,
        D::UtmSource => col::UTM_SOURCE,
        D::UtmMedium => col::UTM_SOURCE + 1,
        D::UtmCampaign => col::UTM_SOURCE + 2,
        D::UtmContent => col::UTM_SOURCE + 3,
        D::UtmTerm => col::UTM_SOURCE + 4,
        D::Browser => col::BROWSER,
        D::Os => col::OS,
        D::BrowserVersion => col::BROWSER_VERSION,
        D::OsVersion => col::OS_VERSION,
        D::Country => col::COUNTRY,
        D::Region => col::COUNTRY + 1,
        D::City => col::COUNTRY + 2,
        D::Screen => col::COUNTRY + 3,
        _ => return None,
    })
}

/// A block body read column by column, every index checked, nothing
/// materialised: [`decode_body`] makes events of it, the scan rows
/// ([`crate::engine::scan`]). Event `i` is position `i` of every column.
pub(crate) struct Body<'a> {
    /// Events.
    pub n: usize,
    /// Times, each inside the block's hour.
    pub ts: Vec<Millis>,
    /// Kind codes ([`kind_of`]).
    pub kinds: &'a [u8],
    /// Channel codes ([`channel_of`]).
    pub channels: &'a [u8],
    /// Device codes ([`device_of`]).
    pub devices: &'a [u8],
    /// Non-interactive flags (0 or 1, else corrupt).
    pub non_interactive: &'a [u8],
    /// Visitor ids.
    pub visitors: Visitors<'a>,
    /// The string columns ([`col`]).
    pub cols: Vec<Column<'a>>,
    /// Engaged ms + 1 (0: none).
    pub engaged: Vec<u64>,
    /// Deepest scroll + 1 (0: none).
    pub scrolls: Vec<u64>,
    /// Custom event values.
    pub values: Vec<Option<f64>>,
    /// Properties per event; event `i`'s are the next `prop_counts[i]`
    /// positions of `keys` and `prop_values`.
    pub prop_counts: Vec<usize>,
    /// Property keys.
    pub keys: Column<'a>,
    /// Property values.
    pub prop_values: Column<'a>,
    /// Per event, its Web Vitals (format 4; `None` when no event has any).
    pub vitals: Option<Vec<crate::ingest::vitals::Vitals>>,
}

/// Every string column ([`read_body`]'s `wanted`).
const ALL_COLUMNS: u32 = (1 << COLUMNS) - 1;

/// Reads a body of `format`. String columns not in `wanted` (a bit per
/// [`col`]) are stepped over, not checked or kept, and columns the format
/// lacks are none for every event: their [`Column`]s are empty.
fn read_body(hour: Millis, body: &[u8], wanted: u32, format: u8) -> Result<Body<'_>, SegmentError> {
    let mut r = Reader::new(body);
    if i64::try_from(r.varint()?)
        .ok()
        .and_then(|h| h.checked_mul(HOUR_MS))
        != Some(hour)
    {
        return Err(SegmentError::Corrupt("hour"));
    }
    // The last hour an i64 can start has no end: no event fits in it.
    let end = hour
        .checked_add(HOUR_MS)
        .ok_or(SegmentError::Corrupt("hour"))?;
    let n = r.len()?;
    // Every event takes at least one byte in each of the fixed columns, so
    // a count beyond the body's length is corrupt (and no huge allocation).
    if n > body.len() {
        return Err(SegmentError::Corrupt("event count"));
    }
    let mut ts = Vec::with_capacity(n);
    let mut prev = hour;
    for _ in 0..n {
        prev = prev
            .checked_add(unzigzag(r.varint()?))
            .ok_or(SegmentError::Corrupt("time"))?;
        if prev < hour || prev >= end {
            return Err(SegmentError::Corrupt("time outside the hour"));
        }
        ts.push(prev);
    }
    let kinds = r.take(n)?;
    let channels = r.take(n)?;
    let devices = r.take(n)?;
    let non_interactive = r.take(n)?;

    let visitors = read_visitors(&mut r, n)?;
    let mut cols: Vec<Column> = Vec::with_capacity(COLUMNS);
    for c in 0..COLUMNS {
        cols.push(if c >= columns_of(format) {
            Column::empty()
        } else if wanted & (1 << c) != 0 {
            Column::read(&mut r, n)?
        } else {
            Column::skip(&mut r, n)?
        });
    }
    let mut engaged = Vec::with_capacity(n);
    for _ in 0..n {
        engaged.push(r.varint()?);
    }
    let mut scrolls = Vec::with_capacity(n);
    for _ in 0..n {
        scrolls.push(r.varint()?);
    }
    let has_value = r.take(n)?;
    let mut values = Vec::with_capacity(n);
    for &flag in has_value {
        match flag {
            0 => values.push(None),
            1 => {
                let b = r.take(8)?;
                let mut raw = [0u8; 8];
                raw.copy_from_slice(b);
                values.push(Some(f64::from_bits(u64::from_le_bytes(raw))));
            }
            _ => return Err(SegmentError::Corrupt("value flag")),
        }
    }
    let mut prop_counts = Vec::with_capacity(n);
    let mut total_props = 0usize;
    for _ in 0..n {
        let c = r.len()?;
        total_props = total_props
            .checked_add(c)
            .filter(|t| *t <= body.len())
            .ok_or(SegmentError::Corrupt("property count"))?;
        prop_counts.push(c);
    }
    let keys = Column::read(&mut r, total_props)?;
    let prop_values = Column::read(&mut r, total_props)?;
    let vitals = if format >= 4 {
        read_vitals(&mut r, n)?
    } else {
        None
    };
    if !r.done() {
        return Err(SegmentError::Corrupt("trailing bytes"));
    }
    Ok(Body {
        n,
        ts,
        kinds,
        channels,
        devices,
        non_interactive,
        visitors,
        cols,
        engaged,
        scrolls,
        values,
        prop_counts,
        keys,
        prop_values,
        vitals,
    })
}

/// Reads one block's body for the scan ([`crate::engine::scan`]), which turns it
/// into rows itself: the same reading, checks and errors as
/// [`decode_block`] (for the string columns in `wanted`, a bit per [`col`]),
/// without making events. `buf` holds the inflated body (reused).
pub(crate) fn read_block<T>(
    block: &Block,
    wanted: u32,
    buf: &mut Vec<u8>,
    rows: impl FnOnce(&Body<'_>) -> Result<T, SegmentError>,
) -> Result<T, SegmentError> {
    inflate_into(&block.bytes, buf)?;
    let body = read_body(block.hour, buf, wanted, block.format)?;
    if body.n != block.events as usize {
        return Err(SegmentError::Corrupt("event count"));
    }
    rows(&body)
}

fn decode_body(hour: Millis, body: &[u8], format: u8) -> Result<Vec<Event>, SegmentError> {
    let b = read_body(hour, body, ALL_COLUMNS, format)?;
    let (cols, keys, prop_values) = (&b.cols, &b.keys, &b.prop_values);

    // What decoding would allocate, from the dictionaries alone: a small
    // part that points a million events at one long string must not make
    // the reader allocate gigabytes.
    let mut decoded = 0usize;
    let mut p = 0;
    for (i, count) in b.prop_counts.iter().enumerate() {
        decoded += std::mem::size_of::<Event>() + b.visitors.len_of(i);
        decoded += cols.iter().map(|c| c.len_of(i)).sum::<usize>();
        for _ in 0..*count {
            decoded += keys.len_of(p) + prop_values.len_of(p) + 64;
            p += 1;
        }
        if decoded > 2 * MAX_BLOCK_DECODED {
            return Err(SegmentError::Corrupt("decoded size"));
        }
    }

    let mut out = Vec::with_capacity(b.n);
    let mut p = 0;
    for i in 0..b.n {
        let text = |c: usize| cols[c].get(i);
        let required = |c: usize, what: &'static str| {
            cols[c]
                .get(i)
                .map(str::to_owned)
                .ok_or(SegmentError::Corrupt(what))
        };
        let mut props = BTreeMap::new();
        for _ in 0..b.prop_counts[i] {
            let k = keys.get(p).ok_or(SegmentError::Corrupt("property key"))?;
            let v = prop_values
                .get(p)
                .ok_or(SegmentError::Corrupt("property value"))?;
            props.insert(k.to_owned(), v.to_owned());
            p += 1;
        }
        let utm = |k: usize| text(col::UTM_SOURCE + k).map(str::to_owned);
        let place = |k: usize| text(col::COUNTRY + k).map(str::to_owned);
        out.push(Event {
            kind: kind_of(b.kinds[i])?,
            ts: b.ts[i],
            vid: b.visitors.text(i).ok_or(SegmentError::Corrupt("visitor"))?,
            sid: text(col::SID).unwrap_or_default().to_owned(),
            host: required(col::HOST, "host")?,
            path: required(col::PATH, "path")?,
            referrer: text(col::REFERRER).map(str::to_owned),
            source: required(col::SOURCE, "source")?,
            channel: channel_of(b.channels[i])?,
            utm_source: utm(0),
            utm_medium: utm(1),
            utm_campaign: utm(2),
            utm_content: utm(3),
            utm_term: utm(4),
            browser: required(col::BROWSER, "browser")?,
            os: required(col::OS, "os")?,
            browser_version: text(col::BROWSER_VERSION).map(str::to_owned),
            os_version: text(col::OS_VERSION).map(str::to_owned),
            device: device_of(b.devices[i])?,
            country: place(0),
            region: place(1),
            city: place(2),
            screen: place(3),
            name: text(col::NAME).map(str::to_owned),
            value: b.values[i],
            props,
            engaged_ms: match b.engaged[i] {
                0 => None,
                v => Some(v - 1),
            },
            scroll: match b.scrolls[i] {
                0 => None,
                v => Some(scroll_of(v)?),
            },
            live: None,
            vitals: b.vitals.as_ref().map(|v| v[i]).filter(|v| !v.is_empty()),
            non_interactive: flag_of(b.non_interactive[i])?,
            revenue: revenue_of(cols, i)?.map(|(a, c)| crate::ingest::event::Revenue {
                amount: a.to_owned(),
                currency: c.to_owned(),
            }),
        });
    }
    Ok(out)
}

/// A stored deepest scroll (+ 1, not 0) as a percent.
pub(crate) fn scroll_of(stored: u64) -> Result<u8, SegmentError> {
    u8::try_from(stored - 1).map_err(|_| SegmentError::Corrupt("scroll"))
}

/// A stored non-interactive flag.
pub(crate) fn flag_of(stored: u8) -> Result<bool, SegmentError> {
    match stored {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(SegmentError::Corrupt("interactive flag")),
    }
}

/// Event `i`'s revenue: amount and currency, both or neither.
pub(crate) fn revenue_of<'a>(
    cols: &[Column<'a>],
    i: usize,
) -> Result<Option<(&'a str, &'a str)>, SegmentError> {
    match (cols[col::AMOUNT].get(i), cols[col::CURRENCY].get(i)) {
        (Some(a), Some(c)) => Ok(Some((a, c))),
        (None, None) => Ok(None),
        _ => Err(SegmentError::Corrupt("revenue")),
    }
}

/// A string column as read: its dictionary (borrowed from the body) and
/// one index per event (0: none, else 1 + the value's position).
pub(crate) struct Column<'a> {
    /// The block's distinct values, in order of first use.
    pub values: Vec<&'a str>,
    /// Per event.
    pub ids: Vec<u32>,
}

impl<'a> Column<'a> {
    fn read(r: &mut Reader<'a>, n: usize) -> Result<Self, SegmentError> {
        let values = read_strings(r)?;
        let mut ids = Vec::with_capacity(n);
        for _ in 0..n {
            let id = r.varint()?;
            if id > values.len() as u64 {
                return Err(SegmentError::Corrupt("dictionary index"));
            }
            ids.push(u32::try_from(id).map_err(|_| SegmentError::Corrupt("dictionary index"))?);
        }
        Ok(Self { values, ids })
    }

    /// Steps over a column: its values' lengths and `n` indices read, not
    /// checked or kept.
    fn skip(r: &mut Reader<'a>, n: usize) -> Result<Self, SegmentError> {
        let k = r.len()?;
        for _ in 0..k {
            let len = r.len()?;
            r.take(len)?;
        }
        r.skip_varints(n)?;
        Ok(Self::empty())
    }

    /// A column with no value for any event.
    fn empty() -> Self {
        Self {
            values: Vec::new(),
            ids: Vec::new(),
        }
    }

    fn len_of(&self, i: usize) -> usize {
        self.get(i).map_or(0, str::len)
    }

    /// Event `i`'s value.
    pub(crate) fn get(&self, i: usize) -> Option<&'a str> {
        match *self.ids.get(i)? {
            0 => None,
            id => self.values.get(id as usize - 1).copied(),
        }
    }
}

fn read_strings<'a>(r: &mut Reader<'a>) -> Result<Vec<&'a str>, SegmentError> {
    let k = r.len()?;
    let mut values = Vec::with_capacity(k.min(r.remaining()));
    for _ in 0..k {
        let len = r.len()?;
        let bytes = r.take(len)?;
        values.push(
            std::str::from_utf8(bytes).map_err(|_| SegmentError::Corrupt("text is not UTF-8"))?,
        );
    }
    Ok(values)
}

/// Visitor ids as read: numbers (16 hex digits stored as 8 bytes) or text.
pub(crate) struct Visitors<'a> {
    /// The block's distinct visitor ids.
    pub values: VisitorValues<'a>,
    /// Per event: 1 + its visitor's position (never 0).
    pub ids: Vec<u32>,
}

/// A block's distinct visitor ids.
pub(crate) enum VisitorValues<'a> {
    /// Ids of 16 lower-case hex digits, as their numbers.
    Hex(Vec<u64>),
    /// Any other ids, as stored.
    Text(Vec<&'a str>),
}

impl Visitors<'_> {
    fn len_of(&self, i: usize) -> usize {
        match &self.values {
            VisitorValues::Hex(_) => 16,
            VisitorValues::Text(t) => self
                .position(i)
                .and_then(|j| t.get(j))
                .map_or(0, |v| v.len()),
        }
    }

    /// Event `i`'s position in the values.
    pub(crate) fn position(&self, i: usize) -> Option<usize> {
        let id = *self.ids.get(i)?;
        (id as usize).checked_sub(1)
    }

    /// Event `i`'s visitor id as text.
    fn text(&self, i: usize) -> Option<String> {
        let j = self.position(i)?;
        match &self.values {
            VisitorValues::Hex(v) => v.get(j).map(|n| format!("{n:016x}")),
            VisitorValues::Text(t) => t.get(j).map(|v| (*v).to_owned()),
        }
    }
}

fn read_visitors<'a>(r: &mut Reader<'a>, n: usize) -> Result<Visitors<'a>, SegmentError> {
    let values = match r.byte()? {
        1 => {
            let k = r.len()?;
            let mut values = Vec::with_capacity(k.min(r.remaining() / 8 + 1));
            for _ in 0..k {
                let b = r.take(8)?;
                let mut raw = [0u8; 8];
                raw.copy_from_slice(b);
                values.push(u64::from_be_bytes(raw));
            }
            VisitorValues::Hex(values)
        }
        0 => VisitorValues::Text(read_strings(r)?),
        _ => return Err(SegmentError::Corrupt("visitor encoding")),
    };
    let count = match &values {
        VisitorValues::Hex(v) => v.len(),
        VisitorValues::Text(t) => t.len(),
    };
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let id = r.varint()?;
        if id == 0 || id > count as u64 {
            return Err(SegmentError::Corrupt("visitor index"));
        }
        ids.push(u32::try_from(id).map_err(|_| SegmentError::Corrupt("visitor index"))?);
    }
    Ok(Visitors { values, ids })
}

// ---------------------------------------------------------------- bytes

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, at: 0 }
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn done(&self) -> bool {
        self.at == self.bytes.len()
    }

    fn byte(&mut self) -> Result<u8, SegmentError> {
        let b = *self.bytes.get(self.at).ok_or(SegmentError::Truncated)?;
        self.at += 1;
        Ok(b)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], SegmentError> {
        let end = self.at.checked_add(n).ok_or(SegmentError::Truncated)?;
        let out = self
            .bytes
            .get(self.at..end)
            .ok_or(SegmentError::Truncated)?;
        self.at = end;
        Ok(out)
    }

    fn varint(&mut self) -> Result<u64, SegmentError> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                if shift == 63 && b > 1 {
                    return Err(SegmentError::Corrupt("varint overflow"));
                }
                return Ok(v);
            }
        }
        Err(SegmentError::Corrupt("varint too long"))
    }

    /// Steps over `n` varints.
    fn skip_varints(&mut self, mut n: usize) -> Result<(), SegmentError> {
        let rest = &self.bytes[self.at..];
        let mut used = 0;
        // A varint ends at its first byte below 0x80.
        for &b in rest {
            if n == 0 {
                break;
            }
            used += 1;
            if b < 0x80 {
                n -= 1;
            }
        }
        if n > 0 {
            return Err(SegmentError::Truncated);
        }
        self.at += used;
        Ok(())
    }

    /// A varint used as a length or count: at most what is left to read.
    fn len(&mut self) -> Result<usize, SegmentError> {
        let v = self.varint()?;
        usize::try_from(v)
            .ok()
            .filter(|n| *n <= self.remaining())
            .ok_or(SegmentError::Truncated)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HOUR: Millis = 1_764_460_800_000; // 2025-11-30T00:00Z

    fn event(ts: Millis, vid: &str, sid: &str, path: &str) -> Event {
        Event {
            kind: Kind::PageView,
            ts,
            vid: vid.to_owned(),
            sid: sid.to_owned(),
            host: "example.com".into(),
            path: path.to_owned(),
            referrer: None,
            source: "Direct".into(),
            channel: Channel::Direct,
            utm_source: None,
            utm_medium: None,
            utm_campaign: None,
            utm_content: None,
            utm_term: None,
            browser: "Firefox".into(),
            os: "Linux".into(),
            browser_version: None,
            os_version: None,
            device: DeviceType::Desktop,
            country: Some("DE".into()),
            region: None,
            city: None,
            screen: None,
            name: None,
            value: None,
            props: BTreeMap::new(),
            engaged_ms: None,
            scroll: None,
            live: None,
            vitals: None,
            non_interactive: false,
            revenue: None,
        }
    }

    fn text() -> BoxedStrategy<String> {
        prop_oneof![
            Just(String::new()),
            "[a-z/]{1,12}",
            "\\PC{0,20}",
            Just("0123456789abcdef".to_owned()),
        ]
        .boxed()
    }

    fn opt_text() -> BoxedStrategy<Option<String>> {
        proptest::option::of(text()).boxed()
    }

    prop_compose! {
        fn arb_event()(
            kind in 0u8..3,
            ts in HOUR..HOUR + HOUR_MS,
            vid in prop_oneof!["[0-9a-f]{16}", text()],
            sid in prop_oneof![Just(String::new()), "[A-Za-z0-9_-]{1,12}"],
            host in text(), path in text(), referrer in opt_text(), source in text(),
            channel in 0u8..6, device in 0u8..4,
            utm in (opt_text(), opt_text(), opt_text(), opt_text(), opt_text()),
            browser in text(), os in text(),
            versions in (opt_text(), opt_text()),
            place in (opt_text(), opt_text(), opt_text(), opt_text()),
            name in opt_text(),
            value in proptest::option::of(prop_oneof![any::<f64>().prop_filter("not NaN", |v| !v.is_nan()), Just(19.99)]),
            props in proptest::collection::btree_map(text(), text(), 0..4),
            engaged_ms in proptest::option::of(any::<u64>()),
            non_interactive in any::<bool>(),
            revenue in proptest::option::of(("-?[0-9]{1,6}(\\.[0-9]{1,2})?", "[A-Z]{3}")),
            scroll in proptest::option::of(any::<u8>()),
            vitals in proptest::option::of(proptest::array::uniform6(proptest::option::of(any::<u32>()))),
        ) -> Event {
            Event {
                kind: kind_of(kind).unwrap(),
                ts, vid, sid, host, path, referrer, source,
                channel: channel_of(channel).unwrap(),
                utm_source: utm.0, utm_medium: utm.1, utm_campaign: utm.2, utm_content: utm.3, utm_term: utm.4,
                browser, os,
                browser_version: versions.0, os_version: versions.1,
                device: device_of(device).unwrap(),
                country: place.0, region: place.1, city: place.2, screen: place.3,
                name, value, props, engaged_ms, scroll, non_interactive,
                revenue: revenue.map(|(amount, currency)| crate::ingest::event::Revenue { amount, currency }),
                live: None,
                vitals: vitals.map(|v: [Option<u32>; 6]| crate::ingest::vitals::Vitals {
                    lcp: v[0], inp: v[1], cls: v[2], fcp: v[3], ttfb: v[4], fid: v[5],
                }).filter(|v| !v.is_empty()),
            }
        }
    }

    /// Decodes every part of a day and returns its events in time order.
    fn round_trip(day_start: Millis, hours: &[HourBlocks]) -> Vec<Event> {
        let mut out = Vec::new();
        for part in pack(day_start, hours) {
            assert!(part.bytes.len() <= MAX_PART_BYTES);
            for (_, events) in decode_part(&part.bytes, |_| true).unwrap() {
                out.extend(events);
            }
        }
        out
    }

    fn sorted(mut events: Vec<Event>) -> Vec<Event> {
        events.sort_by(canonical_cmp);
        events
    }

    proptest! {
        #[test]
        fn an_hour_decodes_to_the_events_it_was_encoded_from(events in proptest::collection::vec(arb_event(), 0..60)) {
            let hour = encode_hour(HOUR, &events);
            prop_assert_eq!(hour.events as usize, events.len());
            let back = round_trip(HOUR, std::slice::from_ref(&hour));
            // In time order, and the same events.
            prop_assert!(back.is_sorted_by_key(|e| e.ts));
            prop_assert_eq!(sorted(back), sorted(events));
        }

        #[test]
        fn the_hash_ignores_input_order_and_sees_any_change(
            events in proptest::collection::vec(arb_event(), 1..30),
            rotate in 0usize..30,
            bump in 1i64..1000,
        ) {
            let mut shuffled = events.clone();
            let r = rotate % shuffled.len();
            shuffled.rotate_left(r);
            let a = encode_hour(HOUR, &events);
            let b = encode_hour(HOUR, &shuffled);
            prop_assert_eq!(a.hash, b.hash);
            prop_assert_eq!(&a.blocks, &b.blocks);
            let mut changed = events.clone();
            changed[0].ts = HOUR + (changed[0].ts - HOUR + bump) % HOUR_MS;
            changed[0].path.push('x');
            prop_assert_ne!(encode_hour(HOUR, &changed).hash, a.hash);
        }

        #[test]
        fn damaged_parts_are_errors_never_panics_or_other_events(
            events in proptest::collection::vec(arb_event(), 1..40),
            at in any::<usize>(),
            byte in any::<u8>(),
            cut in any::<usize>(),
        ) {
            let hour = encode_hour(HOUR, &events);
            let part = pack(HOUR, &[hour]).remove(0);
            let expected = sorted(events);
            let mut flipped = part.bytes.clone();
            let i = at % flipped.len();
            flipped[i] ^= byte | 1;
            if let Ok(blocks) = decode_part(&flipped, |_| true) {
                // A flip that still decodes (in a byte the checksum does not
                // cover and the format ignores) gives the same events.
                let got: Vec<Event> = blocks.into_iter().flat_map(|(_, e)| e).collect();
                prop_assert_eq!(sorted(got), expected);
            }
            let truncated = &part.bytes[..cut % part.bytes.len()];
            prop_assert!(decode_part(truncated, |_| true).is_err());
        }
    }

    #[test]
    fn events_outside_the_hour_are_not_part_of_it() {
        let inside = event(HOUR + 5, "00000000000000aa", "t", "/a");
        let before = event(HOUR - 1, "00000000000000aa", "t", "/b");
        let after = event(HOUR + HOUR_MS, "00000000000000aa", "t", "/c");
        let hour = encode_hour(HOUR, &[before, inside.clone(), after]);
        assert_eq!(hour.events, 1);
        assert_eq!(round_trip(HOUR, &[hour]), vec![inside]);
    }

    #[test]
    fn a_large_hour_is_split_into_blocks_and_parts_under_the_item_limit() {
        // Paths that do not compress: every block and part must still fit.
        let mut x: u64 = 1;
        let mut events = Vec::new();
        for i in 0..40_000 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let path = format!("/{x:016x}{:016x}", x.rotate_left(17));
            events.push(event(HOUR + i * 90, &format!("{:016x}", x >> 3), "", &path));
        }
        let hour = encode_hour(HOUR, &events);
        assert!(hour.blocks.len() > 1, "{} blocks", hour.blocks.len());
        assert!(hour.blocks.iter().all(|b| b.bytes.len() <= MAX_BLOCK_BYTES));
        let parts = pack(HOUR, std::slice::from_ref(&hour));
        assert!(parts.len() > 1);
        assert!(
            parts
                .iter()
                .all(|p| p.bytes.len() <= MAX_PART_BYTES && p.first == 0 && p.last == 0)
        );
        let back = round_trip(HOUR, &[hour]);
        assert_eq!(back.len(), events.len());
        assert_eq!(sorted(back), sorted(events));
    }

    #[test]
    fn parts_list_the_hours_they_hold_and_repack_without_inflating() {
        let hours: Vec<HourBlocks> = (0..24)
            .map(|h| {
                let start = HOUR + h * HOUR_MS;
                encode_hour(start, &[event(start + 10, "00000000000000aa", "t", "/x")])
            })
            .collect();
        let parts = pack(HOUR, &hours);
        assert_eq!(parts.len(), 1, "a small day is one part");
        assert_eq!((parts[0].first, parts[0].last), (0, 23));
        let blocks = blocks_of(&parts[0].bytes).unwrap();
        assert_eq!(blocks.len(), 24);
        let wanted: Vec<(Millis, usize)> =
            decode_part(&parts[0].bytes, |h| h == HOUR + 5 * HOUR_MS)
                .unwrap()
                .into_iter()
                .map(|(h, e)| (h, e.len()))
                .collect();
        assert_eq!(wanted, vec![(HOUR + 5 * HOUR_MS, 1)]);
    }

    #[test]
    fn a_session_id_equal_to_the_visitor_id_still_orders_the_events() {
        // Found by `cargo fuzz run segment`: with the same visitor id, no
        // session id and a session id equal to it gave the same tab and
        // compared equal, so their order (and the hour's bytes and hash)
        // followed the input order.
        let a = event(HOUR + 5, "00000000000000aa", "", "/");
        let b = event(HOUR + 5, "00000000000000aa", "00000000000000aa", "/");
        assert_ne!(canonical_cmp(&a, &b), Ordering::Equal);
        let ab = encode_hour(HOUR, &[a.clone(), b.clone()]);
        let ba = encode_hour(HOUR, &[b.clone(), a.clone()]);
        assert_eq!(ab.hash, ba.hash);
        assert_eq!(ab.blocks, ba.blocks);
        assert_eq!(sorted(round_trip(HOUR, &[ab])), sorted(vec![a, b]));
    }

    #[test]
    fn an_hour_without_an_end_is_corrupt_not_a_panic() {
        // Found while writing the `segment` fuzz target (input kept in
        // fuzz/regressions/segment/): a block of the last hour an i64 can
        // start, holding an event, overflowed the hour's end in the time
        // check.
        let last = u64::try_from(Millis::MAX / HOUR_MS).unwrap();
        let mut body = Vec::new();
        put_varint(&mut body, last);
        put_varint(&mut body, 1);
        put_varint(&mut body, 0);
        let block = Block {
            hour: Millis::MAX / HOUR_MS * HOUR_MS,
            events: 1,
            format: BLOCK_FORMAT,
            bytes: deflate(&body),
        };
        assert_eq!(decode_block(&block), Err(SegmentError::Corrupt("hour")));
        let part = write_part(0, &[&block]);
        assert_eq!(
            decode_part(&part.bytes, |_| true),
            Err(SegmentError::Corrupt("hour"))
        );
        // The hour before it still holds events.
        let hour = (Millis::MAX / HOUR_MS - 1) * HOUR_MS;
        let e = event(hour + HOUR_MS - 1, "00000000000000aa", "", "/");
        let back = round_trip(hour, &[encode_hour(hour, std::slice::from_ref(&e))]);
        assert_eq!(back, vec![e]);
    }

    /// Parts written before versions were (part version 2, bodies of
    /// format 2) still read, their events without versions, and their
    /// blocks keep that format when moved into a new part.
    #[test]
    fn a_version_2_part_reads_with_no_versions() {
        let mut e = event(HOUR + 5, "00000000000000aa", "", "/");
        e.browser_version = Some("Firefox 120.0".into());
        e.os_version = Some("Linux 6".into());
        let body = encode_body_of(HOUR, &[&e], 2);
        let packed = deflate(&body);
        let mut part = MAGIC.to_vec();
        part.push(2);
        put_varint(&mut part, 1);
        put_varint(&mut part, u64::try_from(HOUR / HOUR_MS).unwrap());
        put_varint(&mut part, 1);
        put_varint(&mut part, packed.len() as u64);
        part.extend_from_slice(&packed);
        let want = Event {
            browser_version: None,
            os_version: None,
            ..e.clone()
        };
        let got = decode_part(&part, |_| true).unwrap();
        assert_eq!(got, vec![(HOUR, vec![want.clone()])]);
        let blocks = blocks_of(&part).unwrap();
        assert_eq!(blocks[0].format, 2);
        let moved = write_part(0, &blocks.iter().collect::<Vec<_>>());
        assert_eq!(moved.bytes[3], VERSION);
        assert_eq!(decode_part(&moved.bytes, |_| true).unwrap(), got);
        // A new part keeps them.
        assert_eq!(
            round_trip(HOUR, &[encode_hour(HOUR, std::slice::from_ref(&e))]),
            vec![e]
        );
    }

    #[test]
    fn a_small_part_cannot_make_the_reader_allocate_gigabytes() {
        // One long host shared by many events: tiny compressed, huge once
        // every event holds its own copy.
        let mut e = event(HOUR + 1, "00000000000000aa", "", "/");
        e.host = "h".repeat(10_000);
        let events = vec![e; 20_000];
        let body = encode_body(HOUR, &events.iter().collect::<Vec<_>>());
        let block = Block {
            hour: HOUR,
            events: 20_000,
            format: BLOCK_FORMAT,
            bytes: deflate(&body),
        };
        assert!(block.bytes.len() < 400 * 1024);
        assert_eq!(
            decode_block(&block),
            Err(SegmentError::Corrupt("decoded size"))
        );
        // The encoder splits such an hour so every block decodes.
        let hour = encode_hour(HOUR, &events);
        assert!(hour.blocks.len() > 1);
        assert_eq!(round_trip(HOUR, &[hour]).len(), 20_000);
    }

    #[test]
    fn unknown_versions_and_foreign_bytes_are_refused() {
        let hour = encode_hour(HOUR, &[event(HOUR, "00000000000000aa", "", "/")]);
        let mut bytes = pack(HOUR, &[hour]).remove(0).bytes;
        bytes[3] = 9;
        assert_eq!(decode_part(&bytes, |_| true), Err(SegmentError::Version(9)));
        assert_eq!(
            decode_part(b"{\"json\":1}", |_| true),
            Err(SegmentError::Magic)
        );
        assert_eq!(decode_part(b"", |_| true), Err(SegmentError::Truncated));
    }

    #[test]
    fn channel_codes_are_stable_and_round_trip() {
        // The codes segments were written with before GA4's channel groups
        // decode to the same channels.
        for (code, channel) in [
            (0, Channel::Direct),
            (1, Channel::OrganicSearch),
            (2, Channel::OrganicSocial),
            (3, Channel::Referral),
            (4, Channel::Email),
            (5, Channel::Paid),
        ] {
            assert_eq!(channel_of(code).ok(), Some(channel));
            assert_eq!(channel_code(channel), code);
        }
        let mut codes: Vec<u8> = Channel::ALL.into_iter().map(channel_code).collect();
        for c in Channel::ALL {
            assert_eq!(channel_of(channel_code(c)).ok(), Some(c));
        }
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), Channel::ALL.len());
        assert!(channel_of(Channel::ALL.len() as u8).is_err());
    }
}
