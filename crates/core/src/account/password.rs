//! Account passwords: the length rule, and hashing with Argon2id.
//!
//! The stored form is a PHC string carrying its parameters
//! (`$argon2id$v=19$m=19456,t=2,p=1${salt}${hash}`), so the cost can be
//! raised later: [`verify`] reads the parameters from the string, and
//! [`needs_rehash`] says when a hash is weaker than [`COST`], so a login can
//! store it anew. Why Argon2id over PBKDF2 (measured in BENCHMARKS.md,
//! "Password hashing"): it is memory-hard (19 MiB per guess) and, at OWASP's
//! parameters, a quarter of the CPU time of PBKDF2-HMAC-SHA256 at 600,000
//! rounds on the same machine. The comparison inside [`verify`] is
//! constant-time (the `password-hash` crate compares outputs with `subtle`).
//! The salt is passed in: this crate draws no randomness.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

/// Shortest password accepted, in characters.
pub const MIN_PASSWORD_CHARS: usize = 10;
/// Longest password accepted, in bytes (bounds the work of one guess).
pub const MAX_PASSWORD_BYTES: usize = 1_024;

/// The cost of a hash: Argon2id's memory (KiB), passes and lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cost {
    /// Memory in KiB.
    pub memory_kib: u32,
    /// Passes over the memory.
    pub passes: u32,
    /// Lanes.
    pub lanes: u32,
}

/// The cost of new hashes: OWASP's Argon2id minimum (m = 19 MiB, t = 2, p = 1).
pub const COST: Cost = Cost {
    memory_kib: 19 * 1024,
    passes: 2,
    lanes: 1,
};

/// The most a stored hash may ask for: a corrupt or hostile item cannot make
/// one check take gigabytes.
const MAX_COST: Cost = Cost {
    memory_kib: 256 * 1024,
    passes: 16,
    lanes: 4,
};

/// Why a password cannot be set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PasswordError {
    /// Shorter than [`MIN_PASSWORD_CHARS`].
    #[error("a password must have at least {MIN_PASSWORD_CHARS} characters")]
    TooShort,
    /// Longer than [`MAX_PASSWORD_BYTES`].
    #[error("a password may have at most {MAX_PASSWORD_BYTES} bytes")]
    TooLong,
    /// The hasher refused its parameters (a bug).
    #[error("the password could not be hashed")]
    Hash,
}

impl PasswordError {
    /// The machine-readable code.
    pub fn code(self) -> &'static str {
        match self {
            Self::TooShort | Self::TooLong => "weak_password",
            Self::Hash => "internal_error",
        }
    }
}

/// Checks a new password against the length rules.
pub fn validate(password: &str) -> Result<(), PasswordError> {
    if password.len() > MAX_PASSWORD_BYTES {
        Err(PasswordError::TooLong)
    } else if password.chars().count() < MIN_PASSWORD_CHARS {
        Err(PasswordError::TooShort)
    } else {
        Ok(())
    }
}

fn hasher(cost: Cost) -> Result<Argon2<'static>, PasswordError> {
    let params = Params::new(cost.memory_kib, cost.passes, cost.lanes, None)
        .map_err(|_| PasswordError::Hash)?;
    Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
}

/// Hashes a new password (checked by [`validate`]) with a random salt at
/// [`COST`]: the PHC string to store.
pub fn hash(password: &str, salt: &[u8; 16]) -> Result<String, PasswordError> {
    hash_with(password, salt, COST)
}

/// [`hash`] at a given cost.
pub fn hash_with(password: &str, salt: &[u8; 16], cost: Cost) -> Result<String, PasswordError> {
    validate(password)?;
    let salt = SaltString::encode_b64(salt).map_err(|_| PasswordError::Hash)?;
    hasher(cost)?
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|_| PasswordError::Hash)
}

/// The cost a stored hash was made with, if it is an Argon2id PHC string.
pub fn cost_of(phc: &str) -> Option<Cost> {
    let parsed = PasswordHash::new(phc).ok()?;
    if parsed.algorithm != argon2::ARGON2ID_IDENT {
        return None;
    }
    let params = Params::try_from(&parsed).ok()?;
    Some(Cost {
        memory_kib: params.m_cost(),
        passes: params.t_cost(),
        lanes: params.p_cost(),
    })
}

/// Whether `password` is the one `phc` was made from. The outputs are
/// compared in constant time; a malformed, foreign or too costly stored
/// string never matches.
pub fn verify(password: &str, phc: &str) -> bool {
    let Some(cost) = cost_of(phc) else {
        return false;
    };
    if password.len() > MAX_PASSWORD_BYTES
        || cost.memory_kib > MAX_COST.memory_kib
        || cost.passes > MAX_COST.passes
        || cost.lanes > MAX_COST.lanes
    {
        return false;
    }
    let Ok(parsed) = PasswordHash::new(phc) else {
        return false;
    };
    // The verifier hashes with the parameters of the stored string.
    Argon2::default()
        .verify_password(password.as_bytes(), &parsed)
        .is_ok()
}

/// A hash no password matches, made at [`COST`]: verified against when no
/// account has the email given, so a login for an unknown email takes as
/// long as one for a known email.
pub const DECOY: &str = "$argon2id$v=19$m=19456,t=2,p=1$dGFsbHktZGVjb3ktc2FsdA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

/// Verifies against [`DECOY`] (always false), spending a real check's time.
pub fn verify_decoy(password: &str) -> bool {
    verify(password, DECOY)
}

/// Whether a stored hash was made at less than [`COST`] (or is not
/// Argon2id), so it should be made anew at the next successful login.
pub fn needs_rehash(phc: &str) -> bool {
    cost_of(phc).is_none_or(|c| {
        c.memory_kib < COST.memory_kib || c.passes < COST.passes || c.lanes < COST.lanes
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A cheap cost for tests that hash many times.
    const TEST_COST: Cost = Cost {
        memory_kib: 64,
        passes: 1,
        lanes: 1,
    };

    #[test]
    fn hashes_carry_their_parameters() {
        let phc = hash("correct horse battery", &[1; 16]).unwrap();
        assert!(phc.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{phc}");
        assert_eq!(cost_of(&phc), Some(COST));
        assert!(verify("correct horse battery", &phc));
        assert!(!verify("correct horse batterY", &phc));
        assert!(!needs_rehash(&phc));
    }

    #[test]
    fn a_cheaper_hash_still_verifies_and_asks_to_be_rehashed() {
        let phc = hash_with("correct horse battery", &[2; 16], TEST_COST).unwrap();
        assert!(phc.contains("m=64,t=1,p=1"), "{phc}");
        assert!(verify("correct horse battery", &phc));
        assert!(needs_rehash(&phc));
    }

    #[test]
    fn salts_make_hashes_differ() {
        let a = hash_with("correct horse battery", &[3; 16], TEST_COST).unwrap();
        let b = hash_with("correct horse battery", &[4; 16], TEST_COST).unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn the_length_rules() {
        for (password, result) in [
            ("", Err(PasswordError::TooShort)),
            ("123456789", Err(PasswordError::TooShort)),
            ("1234567890", Ok(())),
            // Ten characters, more bytes.
            ("ééééééééé", Err(PasswordError::TooShort)),
            ("éééééééééé", Ok(())),
        ] {
            assert_eq!(validate(password), result, "{password:?}");
        }
        let long = "x".repeat(MAX_PASSWORD_BYTES + 1);
        assert_eq!(validate(&long), Err(PasswordError::TooLong));
        assert_eq!(
            hash_with("short", &[0; 16], TEST_COST),
            Err(PasswordError::TooShort)
        );
    }

    #[test]
    fn malformed_or_hostile_strings_never_match() {
        for phc in [
            "",
            "plain text",
            "$argon2i$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "$argon2id$v=19$m=4194304,t=1,p=1$c2FsdHNhbHQ$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "$pbkdf2-sha256$i=1000$c2FsdA$AAAA",
        ] {
            assert!(!verify("correct horse battery", phc), "{phc}");
            assert!(needs_rehash(phc), "{phc}");
        }
    }

    #[test]
    fn the_decoy_is_well_formed_and_matches_nothing() {
        assert_eq!(cost_of(DECOY), Some(COST));
        assert!(!verify_decoy("correct horse battery"));
    }
}
