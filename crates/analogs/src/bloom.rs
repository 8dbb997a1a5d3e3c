//! A blocked Bloom filter of 64-bit hashes ([`Bloom`]): each hash sets 4 bits inside one
//! 512-bit block (one cache line), the block chosen by multiply-shift so any number of blocks
//! works. No false negatives; about 3-4% false positives at 7 bits per entry. The analog index
//! keeps one of the WL hashes of every graph one deletion away from a library skeleton
//! (`analogs.deletions.bloom`): a graph whose hash it lacks is not one insertion away from any
//! library skeleton, so the walk's last distance skips its insertions.

use std::sync::atomic::{AtomicU64, Ordering};

/// Words per block (512 bits).
const BLOCK_WORDS: usize = 8;

/// Bits set per hash.
pub const PROBES: u32 = 4;

/// A blocked Bloom filter over `words` (a whole number of blocks).
#[derive(Debug, Clone)]
pub struct Bloom<W> {
    words: W,
    blocks: u64,
}

#[inline]
fn spread(h: u64) -> u64 {
    // a second, independent-looking hash for the bits inside the block
    let x = h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^ (x >> 29)
}

#[inline]
fn place(h: u64, blocks: u64) -> (usize, [u32; PROBES as usize]) {
    let block = ((u128::from(h) * u128::from(blocks)) >> 64) as usize;
    let s = spread(h);
    let bit = |i: u32| ((s >> (9 * i)) & 511) as u32;
    (block, [bit(0), bit(1), bit(2), bit(3)])
}

impl Bloom<Vec<AtomicU64>> {
    /// An empty filter of about `bits` bits (rounded up to whole blocks, at least one), that
    /// threads add to at once: one filter for a build, not one per thread.
    pub fn with_bits(bits: u64) -> Bloom<Vec<AtomicU64>> {
        let blocks = bits.div_ceil(512).max(1);
        Bloom {
            words: (0..blocks as usize * BLOCK_WORDS)
                .map(|_| AtomicU64::new(0))
                .collect(),
            blocks,
        }
    }

    /// Adds a hash (from any thread).
    pub fn insert(&self, h: u64) {
        let (block, bits) = place(h, self.blocks);
        let w = &self.words[block * BLOCK_WORDS..(block + 1) * BLOCK_WORDS];
        for b in bits {
            w[(b / 64) as usize].fetch_or(1 << (b % 64), Ordering::Relaxed);
        }
    }

    /// The words, little-endian, as stored on disk.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.words
            .iter()
            .flat_map(|w| w.load(Ordering::Relaxed).to_le_bytes())
            .collect()
    }
}

impl<W: AsRef<[u8]>> Bloom<W> {
    /// A filter over stored bytes (a whole number of 64-byte blocks), or None.
    pub fn from_bytes(bytes: W) -> Option<Bloom<W>> {
        let len = bytes.as_ref().len();
        (len > 0 && len % (8 * BLOCK_WORDS) == 0).then_some(Bloom {
            blocks: (len / (8 * BLOCK_WORDS)) as u64,
            words: bytes,
        })
    }

    /// False only when the hash was never inserted.
    #[inline]
    pub fn may_contain(&self, h: u64) -> bool {
        let (block, bits) = place(h, self.blocks);
        let bytes = self.words.as_ref();
        bits.iter().all(|&b| {
            let at = block * 8 * BLOCK_WORDS + (b / 8) as usize;
            bytes[at] & (1 << (b % 8)) != 0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let h = |i: u64| i.wrapping_mul(0xd6e8_feb8_6659_fd93).rotate_left(23) ^ 0x1234;
        // one thread, and four adding to one filter at once: the same bits
        let one = Bloom::with_bits(7 * 10_000);
        (0..10_000).for_each(|i| one.insert(h(i)));
        let shared = Bloom::with_bits(7 * 10_000);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let shared = &shared;
                s.spawn(move || (t..10_000).step_by(4).for_each(|i| shared.insert(h(i))));
            }
        });
        assert_eq!(shared.to_bytes(), one.to_bytes());
        let stored = Bloom::from_bytes(one.to_bytes()).unwrap();
        assert!((0..10_000).all(|i| stored.may_contain(h(i))));
        let fp = (10_000..110_000)
            .filter(|&i| stored.may_contain(h(i)))
            .count();
        assert!(fp < 6_000, "{fp} false positives in 100,000");
        assert!(Bloom::from_bytes(vec![0u8; 63]).is_none());
    }
}
