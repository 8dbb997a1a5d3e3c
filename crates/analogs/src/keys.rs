//! Maps and sets keyed by canonical keys and WL hashes. The keys are hashes already (XXH3 of a
//! certificate or of WL colours), so a table needs no hash of its own over them: its hasher
//! takes the key's low 64 bits as they are ([`KeyHasher`]), where std's default hashes each
//! 16-byte key again with SipHash (the walk looks keys up several times an edit).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A [`Hasher`] for keys that are hashes already: an integer key's low 64 bits are its hash.
/// Other input (never written by the walk's tables) is folded in byte by byte.
#[derive(Debug, Default, Clone, Copy)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, key: u64) {
        self.0 = key;
    }
    fn write_u128(&mut self, key: u128) {
        self.0 = key as u64;
    }
}

/// The build-hasher of the walk's tables.
pub type Keyed = BuildHasherDefault<KeyHasher>;
/// A map from canonical keys (or WL hashes).
pub type KeyMap<K, V> = HashMap<K, V, Keyed>;
/// A set of canonical keys (or WL hashes).
pub type KeySetOf<K> = HashSet<K, Keyed>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    #[test]
    fn a_key_is_its_own_hash() {
        let b = Keyed::default();
        let key: u128 = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210;
        assert_eq!(b.hash_one(key), 0xfedc_ba98_7654_3210);
        assert_eq!(b.hash_one(42u64), 42);
        let mut h = KeyHasher::default();
        (1u8, 2u8).hash(&mut h);
        assert_ne!(h.finish(), 0);
        let mut m: KeyMap<u128, u32> = KeyMap::default();
        m.insert(key, 1);
        m.insert(key ^ 1, 2);
        assert_eq!((m[&key], m[&(key ^ 1)]), (1, 2));
    }
}
