//! The exact-match index of store version 2: a key (canonical SMILES, or id) -> the block of
//! its text column where it is stored, in a few bytes per key.
//!
//! Each distinct key's 64-bit hash (XXH3-64) maps, through a static function ([`crate::fuse`]),
//! to `check_bits` bits of the hash followed by the block number. A probe computes the hash,
//! XORs three cells and compares the check bits: a mismatch means absent (no block read); a
//! match is a candidate block, which the caller decodes and searches for the key itself, so
//! an absent key that passes the check (one in `2^check_bits`) or two keys sharing a hash never
//! give a wrong answer. Hashes shared by distinct keys are kept apart in a small overflow
//! table (hash, block), searched first, so each of them is still found.
//!
//! File layout (little-endian): `MSLOOK01`, keys (u64), seed (u64), hash bits (u32: 64, or fewer
//! for the collision tests), check bits (u32), block bits (u32), segment length (u32), segment
//! count (u32), reserved (u32), cells (u64), overflow entries (u64); the cells as packed
//! integers of `check_bits + block_bits` bits (`crate::packed`'s words, one spare); the overflow
//! entries sorted by hash, `(hash u64, block u64)` each.

use std::path::Path;

use crate::fuse::{self, Geometry};
use crate::StoreError;

/// The file's magic bytes.
pub const MAGIC: &[u8; 8] = b"MSLOOK01";
const HEADER: usize = 64;
/// Check bits unless told otherwise: an absent key costs a block decode once in 64 probes.
pub const DEFAULT_CHECK_BITS: u32 = 6;

/// The hash of a key, as the index computes it (`hash_bits` below 64 only in tests: forced
/// collisions).
#[inline]
pub fn key_hash(key: &[u8], hash_bits: u32) -> u64 {
    let h = xxhash_rust::xxh3::xxh3_64(key);
    if hash_bits >= 64 {
        h
    } else {
        h & ((1u64 << hash_bits) - 1)
    }
}

/// What to build.
#[derive(Debug, Clone, Copy)]
pub struct LookupOptions {
    /// check bits per key (more: fewer blocks decoded for absent keys, more bytes)
    pub check_bits: u32,
    /// bits of the hash kept (64; fewer only to force collisions in tests)
    pub hash_bits: u32,
}

impl Default for LookupOptions {
    fn default() -> Self {
        LookupOptions {
            check_bits: DEFAULT_CHECK_BITS,
            hash_bits: 64,
        }
    }
}

/// Builds the index bytes from `(hash, block)` of every distinct key (in any order; a hash may
/// repeat only for distinct keys, i.e. collisions) over a column of `blocks` blocks.
pub fn build_index(mut entries: Vec<(u64, u64)>, blocks: u64, opts: &LookupOptions) -> Vec<u8> {
    entries.sort_unstable();
    entries.dedup();
    // hashes held by several blocks (distinct keys colliding) go to the overflow table
    let mut single = Vec::with_capacity(entries.len());
    let mut overflow = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        let mut j = i + 1;
        while j < entries.len() && entries[j].0 == entries[i].0 {
            j += 1;
        }
        if j - i == 1 {
            single.push(entries[i]);
        } else {
            overflow.extend_from_slice(&entries[i..j]);
        }
        i = j;
    }
    let block_bits = crate::packed::bits_for(blocks.saturating_sub(1)).max(1);
    let check_bits = opts.check_bits.min(64 - block_bits);
    let width = check_bits + block_bits;
    let keys: Vec<u64> = single.iter().map(|e| e.0).collect();
    let values: Vec<u64> = single
        .iter()
        .map(|&(h, b)| (check_of(h, check_bits) << block_bits) | b)
        .collect();
    let (g, cells) = fuse::build(&keys, &values, width);
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(keys.len() as u64).to_le_bytes());
    out.extend_from_slice(&g.seed.to_le_bytes());
    for v in [
        opts.hash_bits,
        check_bits,
        block_bits,
        g.segment_length,
        g.segment_count,
        0,
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&g.cells.to_le_bytes());
    out.extend_from_slice(&(overflow.len() as u64).to_le_bytes());
    debug_assert_eq!(out.len(), HEADER);
    let packed = crate::packed::encode_width(&cells, width);
    out.extend_from_slice(&packed[crate::packed::HEADER..]);
    for (h, b) in overflow {
        out.extend_from_slice(&h.to_le_bytes());
        out.extend_from_slice(&b.to_le_bytes());
    }
    out
}

/// The check bits of a hash: its top bits (the cells are chosen from a mix of all of them).
#[inline]
fn check_of(h: u64, check_bits: u32) -> u64 {
    if check_bits == 0 {
        0
    } else {
        fuse::mix(h.rotate_left(17)) >> (64 - check_bits)
    }
}

/// An exact-match index opened over its bytes.
#[derive(Debug, Clone, Copy)]
pub struct LookupIndex<'a> {
    geometry: Geometry,
    hash_bits: u32,
    check_bits: u32,
    block_bits: u32,
    cells: crate::packed::Packed<'a>,
    overflow: &'a [u8],
}

impl<'a> LookupIndex<'a> {
    /// Checks the header against the length; `path` names the file in errors.
    pub fn parse(bytes: &'a [u8], path: &Path) -> Result<LookupIndex<'a>, StoreError> {
        let bad = |reason: String| StoreError::Inconsistent {
            path: path.to_path_buf(),
            reason,
        };
        if bytes.len() < HEADER || &bytes[..8] != MAGIC {
            return Err(bad("not a molsift exact-match index (bad header)".into()));
        }
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4"));
        let seed = u64_at(16);
        let (hash_bits, check_bits, block_bits) = (u32_at(24), u32_at(28), u32_at(32));
        let (segment_length, segment_count) = (u32_at(36), u32_at(40));
        let cells = u64_at(48);
        let overflow = u64_at(56);
        let geometry = Geometry {
            seed,
            segment_length,
            segment_count,
            cells,
        };
        let sane = hash_bits <= 64
            && block_bits >= 1
            && check_bits + block_bits <= 64
            && segment_length.is_power_of_two()
            && cells == (u64::from(segment_count) + 2) * u64::from(segment_length);
        if !sane {
            return Err(bad("bad header fields (damaged)".into()));
        }
        let width = check_bits + block_bits;
        let words = crate::packed::words_for(cells, width);
        let cells_end = HEADER + 8 * words;
        let want = cells_end as u128 + 16 * overflow as u128;
        if bytes.len() as u128 != want {
            return Err(bad(format!(
                "{} bytes, but its header asks for {want} (truncated or damaged)",
                bytes.len()
            )));
        }
        let cells = crate::packed::Packed::from_parts(width, cells, 0, &bytes[HEADER..cells_end]);
        Ok(LookupIndex {
            geometry,
            hash_bits,
            check_bits,
            block_bits,
            cells,
            overflow: &bytes[cells_end..],
        })
    }

    /// Bits of the hash the index was built with.
    pub fn hash_bits(&self) -> u32 {
        self.hash_bits
    }

    /// The candidate blocks of a key hashed by [`key_hash`] with [`LookupIndex::hash_bits`]:
    /// those of the overflow table, then the static function's if its check bits match.
    /// Appends to `out`; a block may be one where the key is not (confirm it).
    #[inline]
    pub fn candidates(&self, h: u64, out: &mut Vec<u64>) {
        if !self.overflow.is_empty() {
            self.overflow_blocks(h, out);
        }
        if let Some(b) = self.probe(h) {
            out.push(b);
        }
    }

    /// The static function's answer for hash `h`: its block when the check bits match.
    #[inline]
    pub fn probe(&self, h: u64) -> Option<u64> {
        if self.cells.is_empty() {
            return None;
        }
        let [a, b, c] = self.geometry.cells_of(h);
        let v =
            self.cells.get(a as usize) ^ self.cells.get(b as usize) ^ self.cells.get(c as usize);
        let block = v & ((1u64 << self.block_bits) - 1);
        (v >> self.block_bits == check_of(h, self.check_bits)).then_some(block)
    }

    /// Probes many hashes, prefetching the cells of those a few places ahead: `out[i]` is the
    /// block of `hashes[i]` or `u64::MAX` (the overflow table is not consulted: see
    /// [`LookupIndex::candidates`]).
    pub fn probe_batch(&self, hashes: &[u64], out: &mut [u64]) {
        const AHEAD: usize = 16;
        for i in 0..hashes.len() {
            if let Some(&h) = hashes.get(i + AHEAD) {
                for c in self.geometry.cells_of(h) {
                    self.cells.prefetch(c as usize);
                }
            }
            out[i] = self.probe(hashes[i]).unwrap_or(u64::MAX);
        }
    }

    fn overflow_blocks(&self, h: u64, out: &mut Vec<u64>) {
        let n = self.overflow.len() / 16;
        let at = |k: usize| {
            let e = &self.overflow[16 * k..16 * k + 16];
            (
                u64::from_le_bytes(e[..8].try_into().expect("8")),
                u64::from_le_bytes(e[8..].try_into().expect("8")),
            )
        };
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if at(mid).0 < h {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        while lo < n && at(lo).0 == h {
            out.push(at(lo).1);
            lo += 1;
        }
    }

    /// Entries in the overflow table (hashes shared by distinct keys).
    pub fn overflow_len(&self) -> usize {
        self.overflow.len() / 16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("C{}N{}", i, i * 7)).collect()
    }

    fn check(keys: &[String], absent: &[String], opts: &LookupOptions) -> usize {
        let block = |i: usize| (i / 128) as u64;
        let blocks = keys.len().div_ceil(128) as u64;
        let entries = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (key_hash(k.as_bytes(), opts.hash_bits), block(i)))
            .collect();
        let bytes = build_index(entries, blocks, opts);
        let idx = LookupIndex::parse(&bytes, Path::new("x.lookup")).unwrap();
        let mut out = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            out.clear();
            idx.candidates(key_hash(k.as_bytes(), idx.hash_bits()), &mut out);
            assert!(out.contains(&block(i)), "key {k} not found in its block");
        }
        let mut false_candidates = 0;
        for k in absent {
            out.clear();
            idx.candidates(key_hash(k.as_bytes(), idx.hash_bits()), &mut out);
            false_candidates += out.len();
        }
        let hashes: Vec<u64> = keys.iter().map(|k| key_hash(k.as_bytes(), 64)).collect();
        if opts.hash_bits == 64 {
            let mut got = vec![0; hashes.len()];
            idx.probe_batch(&hashes, &mut got);
            for (i, g) in got.iter().enumerate() {
                assert_eq!(*g, block(i));
            }
        }
        false_candidates
    }

    #[test]
    fn finds_every_key_and_few_false_candidates() {
        let k = keys(20_000);
        let absent: Vec<String> = (0..20_000).map(|i| format!("O{i}")).collect();
        let f = check(&k, &absent, &LookupOptions::default());
        // one in 64 expected: 312; allow a wide margin
        assert!(f < 600, "{f} false candidates for 20,000 absent keys");
        check(&keys(1), &absent[..10], &LookupOptions::default());
        check(&[], &absent[..10], &LookupOptions::default());
    }

    #[test]
    fn forced_collisions_still_find_every_key() {
        let k = keys(5_000);
        for bits in [4, 10, 14] {
            let opts = LookupOptions {
                hash_bits: bits,
                ..LookupOptions::default()
            };
            check(&k, &[], &opts);
        }
    }

    #[test]
    fn damaged_files_are_refused() {
        let bytes = build_index(vec![(1, 0), (2, 1), (3, 1)], 2, &LookupOptions::default());
        let p = Path::new("smiles.lookup");
        assert!(LookupIndex::parse(&bytes, p).is_ok());
        let e = LookupIndex::parse(&bytes[..bytes.len() - 8], p).unwrap_err();
        assert!(e.to_string().contains("smiles.lookup"), "{e}");
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert!(LookupIndex::parse(&bad, p).is_err());
    }
}
