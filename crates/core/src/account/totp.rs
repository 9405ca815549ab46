//! Time-based one-time passwords (RFC 6238): HMAC-SHA-1, 6 digits, 30 s
//! steps, a code of the step before or after accepted for clock drift, and
//! no step accepted twice (the last accepted step is stored with the
//! user and passed in).
//!
//! Built on ring's HMAC (already Tally's), not a TOTP crate: the ones
//! looked at bring a second digest stack (RustCrypto's `digest` 0.10,
//! `sha1`, `sha2`, `hmac`) for forty lines of arithmetic. The secret is 20
//! random bytes (passed in), shown to authenticator apps as unpadded
//! base32 in an `otpauth://` URL.

use crate::Millis;
use ring::hmac;

/// Seconds per step.
pub const STEP_SECONDS: i64 = 30;
/// Digits of a code.
pub const DIGITS: u32 = 6;
/// Steps accepted before and after the current one.
pub const DRIFT_STEPS: i64 = 1;
/// Bytes of a new secret (160 bits, RFC 4226's recommendation).
pub const SECRET_BYTES: usize = 20;

const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// Encodes bytes as RFC 4648 base32 without padding.
pub fn base32_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &b in bytes {
        buffer = (buffer << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(BASE32[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(BASE32[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

/// Decodes base32 (either case, spaces and padding ignored); `None` for
/// other characters.
pub fn base32_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 5 / 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        if c == b' ' || c == b'=' {
            continue;
        }
        let value = BASE32.iter().position(|&d| d == c.to_ascii_uppercase())? as u32;
        buffer = (buffer << 5) | value;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
        buffer &= (1 << bits) - 1;
    }
    Some(out)
}

/// The HOTP value (RFC 4226) of `secret` at `counter`, `digits` long.
pub fn hotp(secret: &[u8], counter: u64, digits: u32) -> u32 {
    let key = hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, secret);
    let tag = hmac::sign(&key, &counter.to_be_bytes());
    let mac = tag.as_ref();
    let offset = usize::from(mac[mac.len() - 1] & 0x0f);
    let binary = u32::from_be_bytes([
        mac[offset] & 0x7f,
        mac[offset + 1],
        mac[offset + 2],
        mac[offset + 3],
    ]);
    binary % 10u32.pow(digits)
}

/// The step an instant falls in.
pub fn step_at(now: Millis) -> i64 {
    now.div_euclid(1000).div_euclid(STEP_SECONDS)
}

/// The code of `secret` at an instant, zero-padded to [`DIGITS`].
pub fn code_at(secret: &[u8], now: Millis) -> String {
    format_code(hotp(secret, step_at(now).max(0) as u64, DIGITS))
}

fn format_code(value: u32) -> String {
    format!("{value:0width$}", width = DIGITS as usize)
}

/// Checks a code typed by the user at `now`: the step it belongs to (store
/// it as the new last accepted step), or `None` when it matches no step of
/// `now ± DRIFT_STEPS` later than `last_step`. Every candidate is compared
/// in constant time.
pub fn verify(secret: &[u8], code: &str, now: Millis, last_step: Option<i64>) -> Option<i64> {
    let code = code.trim();
    if code.len() != DIGITS as usize || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let current = step_at(now);
    let mut accepted = None;
    for step in current - DRIFT_STEPS..=current + DRIFT_STEPS {
        if step < 0 || last_step.is_some_and(|last| step <= last) {
            continue;
        }
        let expected = format_code(hotp(secret, step as u64, DIGITS));
        if crate::ingest::salt::constant_time_eq(expected.as_bytes(), code.as_bytes())
            && accepted.is_none()
        {
            accepted = Some(step);
        }
    }
    accepted
}

/// The `otpauth://` URL an authenticator app reads from a QR code.
pub fn otpauth_url(secret: &[u8], issuer: &str, account: &str) -> String {
    let label = format!("{}:{}", encode(issuer), encode(account));
    format!(
        "otpauth://totp/{label}?secret={}&issuer={}&algorithm=SHA1&digits={DIGITS}&period={STEP_SECONDS}",
        base32_encode(secret),
        encode(issuer)
    )
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// RFC 6238's SHA-1 seed: "12345678901234567890".
    const SEED: &[u8] = b"12345678901234567890";

    /// RFC 6238 appendix B, the SHA-1 column (8 digits), and the 6-digit
    /// code Tally shows for each (the last six).
    #[test]
    fn rfc_6238_vectors() {
        for (seconds, eight) in [
            (59_i64, 94_287_082_u32),
            (1_111_111_109, 7_081_804),
            (1_111_111_111, 14_050_471),
            (1_234_567_890, 89_005_924),
            (2_000_000_000, 69_279_037),
            (20_000_000_000, 65_353_130),
        ] {
            let now = seconds * 1000;
            assert_eq!(hotp(SEED, step_at(now) as u64, 8), eight, "{seconds}");
            let six = format!("{:06}", eight % 1_000_000);
            assert_eq!(code_at(SEED, now), six, "{seconds}");
            assert_eq!(verify(SEED, &six, now, None), Some(step_at(now)));
        }
    }

    /// RFC 4226 appendix D: HOTP of the same seed, counters 0-9.
    #[test]
    fn rfc_4226_vectors() {
        let expected = [
            755_224, 287_082, 359_152, 969_429, 338_314, 254_676, 287_922, 162_583, 399_871,
            520_489,
        ];
        for (counter, code) in expected.into_iter().enumerate() {
            assert_eq!(hotp(SEED, counter as u64, 6), code);
        }
    }

    #[test]
    fn one_step_of_drift_either_way_and_no_more() {
        let now = 1_234_567_890_000;
        let step = step_at(now);
        for (offset, accepted) in [(-2, false), (-1, true), (0, true), (1, true), (2, false)] {
            let code = format!("{:06}", hotp(SEED, (step + offset) as u64, 6));
            assert_eq!(
                verify(SEED, &code, now, None).is_some(),
                accepted,
                "{offset}"
            );
        }
    }

    #[test]
    fn a_step_is_accepted_once() {
        let now = 1_234_567_890_000;
        let code = code_at(SEED, now);
        let step = verify(SEED, &code, now, None).unwrap();
        assert_eq!(verify(SEED, &code, now, Some(step)), None, "replayed");
        assert_eq!(verify(SEED, &code, now + 20_000, Some(step)), None);
        // The next step's code is still good.
        let next = now + 30_000;
        assert_eq!(
            verify(SEED, &code_at(SEED, next), next, Some(step)),
            Some(step + 1)
        );
    }

    #[test]
    fn malformed_codes_never_match() {
        let now = 1_234_567_890_000;
        let code = code_at(SEED, now);
        for bad in ["", "12345", "1234567", "abcdef", &format!("{code}0")] {
            assert_eq!(verify(SEED, bad, now, None), None, "{bad:?}");
        }
        assert!(verify(SEED, &format!(" {code} "), now, None).is_some());
    }

    #[test]
    fn base32_known_values() {
        // RFC 4648 section 10, without padding.
        for (plain, encoded) in [
            ("", ""),
            ("f", "MY"),
            ("fo", "MZXQ"),
            ("foo", "MZXW6"),
            ("foob", "MZXW6YQ"),
            ("fooba", "MZXW6YTB"),
            ("foobar", "MZXW6YTBOI"),
        ] {
            assert_eq!(base32_encode(plain.as_bytes()), encoded);
            assert_eq!(base32_decode(encoded).unwrap(), plain.as_bytes());
        }
        assert_eq!(base32_decode("mzxw 6ytb oi======").unwrap(), b"foobar");
        assert_eq!(base32_decode("MZ1"), None);
    }

    #[test]
    fn otpauth_urls_are_encoded() {
        let url = otpauth_url(SEED, "Tally", "a b@example.com");
        assert_eq!(
            url,
            "otpauth://totp/Tally:a%20b%40example.com?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=Tally&algorithm=SHA1&digits=6&period=30"
        );
    }

    proptest! {
        #[test]
        fn base32_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            prop_assert_eq!(base32_decode(&base32_encode(&bytes)).unwrap(), bytes);
        }

        #[test]
        fn the_current_code_is_accepted_once(secret in any::<[u8; 20]>(), seconds in 0i64..4_000_000_000) {
            let now = seconds * 1000;
            let code = code_at(&secret, now);
            let step = verify(&secret, &code, now, None);
            prop_assert!(step.is_some());
            prop_assert_eq!(verify(&secret, &code, now, step), None);
        }
    }
}
