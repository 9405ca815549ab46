//! Dictionaries: strings numbered in order of first appearance, each
//! stored once in one buffer.

use rustc_hash::{FxBuildHasher, FxHashMap};
use std::hash::BuildHasher;

/// No id: a value that is absent.
pub(crate) const NONE: u32 = u32::MAX;

/// Strings numbered 0, 1, 2, … in order of first appearance. Each is held
/// once, in one buffer (its bytes, 8 bytes of end offset, 12 of hash and
/// chain, about 16 of hash table), so a dictionary of a million values
/// costs its text and ~36 MB.
#[derive(Debug, Default)]
pub(crate) struct Interner {
    text: String,
    /// The end of each string in `text` (its start is the previous end).
    ends: Vec<usize>,
    /// A string's hash to the last id with that hash.
    table: FxHashMap<u64, u32>,
    /// Per id: the previous id with the same hash ([`NONE`] ends the chain).
    chain: Vec<u32>,
    /// Per id: its hash.
    hashes: Vec<u64>,
}

/// The hash dictionaries use for a string.
pub(crate) fn hash(value: &str) -> u64 {
    FxBuildHasher.hash_one(value)
}

impl Interner {
    /// The id of `value`, added when new.
    pub(crate) fn id(&mut self, value: &str) -> u32 {
        self.id_hashed(value, hash(value))
    }

    /// [`Interner::id`] with the value's [`hash`] known.
    pub(crate) fn id_hashed(&mut self, value: &str, hash: u64) -> u32 {
        let head = self.table.get(&hash).copied().unwrap_or(NONE);
        let mut at = head;
        while at != NONE {
            if self.name(at) == value {
                return at;
            }
            at = self.chain[at as usize];
        }
        // Ids stay below NONE: a dictionary of 4 billion values would not
        // fit in memory long before.
        let id = u32::try_from(self.ends.len()).unwrap_or(NONE - 1);
        self.text.push_str(value);
        self.ends.push(self.text.len());
        self.chain.push(head);
        self.hashes.push(hash);
        self.table.insert(hash, id);
        id
    }

    /// The id of `value`, when it is known.
    pub(crate) fn get(&self, value: &str) -> Option<u32> {
        self.get_hashed(value, hash(value))
    }

    /// [`Interner::get`] with the value's [`hash`] known.
    pub(crate) fn get_hashed(&self, value: &str, hash: u64) -> Option<u32> {
        let mut at = *self.table.get(&hash)?;
        while at != NONE {
            if self.name(at) == value {
                return Some(at);
            }
            at = self.chain[at as usize];
        }
        None
    }

    /// The string of an id (empty for an unknown id).
    pub(crate) fn name(&self, id: u32) -> &str {
        let i = id as usize;
        let Some(&end) = self.ends.get(i) else {
            return "";
        };
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..end]
    }

    /// The [`hash`] of an id's string.
    pub(crate) fn hash_of(&self, id: u32) -> u64 {
        self.hashes.get(id as usize).copied().unwrap_or(0)
    }

    /// How many strings it holds.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Forgets every string, keeping the memory for the next ones.
    pub(crate) fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
        self.table.clear();
        self.chain.clear();
        self.hashes.clear();
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.text.capacity()
            + self.ends.capacity() * 8
            + self.chain.capacity() * 4
            + self.table.capacity() * 16
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn numbers_strings_in_order_of_first_appearance() {
        let mut d = Interner::default();
        assert_eq!(d.id("/a"), 0);
        assert_eq!(d.id(""), 1);
        assert_eq!(d.id("/b"), 2);
        assert_eq!(d.id("/a"), 0);
        assert_eq!(d.id(""), 1);
        assert_eq!((d.name(0), d.name(1), d.name(2)), ("/a", "", "/b"));
        assert_eq!(d.get("/b"), Some(2));
        assert_eq!(d.get("/c"), None);
        assert_eq!(d.len(), 3);
        d.clear();
        assert_eq!(d.get("/a"), None);
        assert_eq!(d.id("/c"), 0);
    }
}
