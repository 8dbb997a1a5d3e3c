//! The deletions' filter ([`Deletions`]): the WL hashes of every graph one deletion away from a
//! library skeleton, as a binary fuse filter of 8-bit fingerprints (about 9 bits per hash, 1 in
//! 256 false positives, no false negatives). The walk's last distance asks it of each graph it
//! would edit: a graph whose hash it lacks is not one insertion away from any library skeleton,
//! so the walk skips its insertions.
//!
//! Why a fuse filter: the blocked Bloom filter it replaces (64 bits per molecule) let through
//! 0.7% of absent hashes for all of MOSES and 1.4-2.4% for a shard of it, and a walk over a
//! set's shards passes a graph when any shard's filter does: 8 shards walked as one library made
//! twice the one store's edits, every extra one from those false positives. At about the same
//! bytes this filter lets through 0.4% per library (8 shards: about 3%).
//!
//! A hash is filtered by its key ([`key_of`]: the top 44 bits of the hash mixed). A build's
//! threads hand their hashes to one [`Sink`], which keeps each key's low 32 bits in the bucket
//! of its top 12 and drops repeats as a bucket fills (21 M hashes are made for the 8.5 M distinct
//! ones of all of MOSES: skeletons share deletions), so that it holds about 4 bytes a distinct
//! hash. The keys are then cut into pieces of at most [`PIECE_KEYS`] (runs of whole buckets,
//! built apart, on threads, in bounded memory), each piece a fuse filter of its own geometry
//! (`molsift_store::fuse`, the construction the exact-match index uses). File layout,
//! little-endian: the piece count `P` (u64), `P` geometries (seed u64, segment length u32,
//! segment count u32), then each piece's cells, one byte each, in piece order.

use std::sync::Mutex;

use molsift_store::fuse::{build, mix, Geometry};

/// The most keys in one piece (about 16 MiB of build memory per piece), up to [`BUCKETS`]
/// pieces (past 2^30 distinct keys the pieces grow).
pub const PIECE_KEYS: usize = 1 << 18;
/// Bits of a key ([`key_of`]).
const KEY_BITS: u32 = 44;
/// log2 of the buckets of a [`Sink`] (by a key's top bits), the most pieces.
const BUCKET_BITS: u32 = 12;
/// Bits of a key kept in its bucket.
const LOW_BITS: u32 = KEY_BITS - BUCKET_BITS;
/// Buckets of a [`Sink`].
const BUCKETS: usize = 1 << BUCKET_BITS;
/// The least room a full bucket grows by.
const BUCKET_MIN: usize = 64;
/// Hashes a thread gathers before it hands them to the sink.
pub const BATCH: usize = 1 << 15;
/// Mixed into a WL hash for its key.
const KEY_SALT: u64 = 0x6465_6c65_7469_6f6e;
/// Mixed into a key for its fingerprint.
const PRINT_SALT: u64 = 0x0066_696e_6765_7270;
/// Bytes of one piece's geometry in the file.
const GEOMETRY_BYTES: usize = 16;

/// The key a WL hash is filtered by: the top [`KEY_BITS`] bits of the hash mixed (two hashes of
/// one key share their answer: among 100 M distinct hashes, about 6 in a million pass for
/// another, beside the fingerprints' 1 in 256).
#[inline]
fn key_of(wl: u64) -> u64 {
    mix(wl ^ KEY_SALT) >> (64 - KEY_BITS)
}

/// The fingerprint of a key.
#[inline]
fn print(k: u64) -> u8 {
    (mix(k ^ PRINT_SALT) >> 56) as u8
}

/// The bucket a key lies in: its top [`BUCKET_BITS`] bits.
#[inline]
fn bucket_of(k: u64) -> usize {
    (k >> LOW_BITS) as usize
}

/// The piece a key lies in, of `pieces` (at most [`BUCKETS`]): a run of whole buckets, so that a
/// piece is built from its buckets alone.
#[inline]
fn piece_of(k: u64, pieces: u64) -> usize {
    ((bucket_of(k) as u64 * pieces) >> BUCKET_BITS) as usize
}

/// A piece as built: its geometry and its cells.
type Piece = (Geometry, Vec<u8>);

/// The deletions' hashes of a build, from any number of threads ([`Sink::add`], a batch at a
/// time): each key's low bits in the bucket of its top bits, repeats dropped as a bucket fills.
pub struct Sink {
    buckets: Vec<Mutex<Vec<u32>>>,
}

impl Default for Sink {
    fn default() -> Self {
        Sink::for_keys(0)
    }
}

/// Sorts a bucket and drops its repeats.
fn drop_repeats(low: &mut Vec<u32>) {
    low.sort_unstable();
    low.dedup();
}

impl Sink {
    /// A sink with room for about `keys` distinct keys: buckets made once at their size rather
    /// than grown as they fill (the heap's blocks freed by growing buckets cost as much resident
    /// memory again: 250 against 185 MiB for all of MOSES on 2 threads).
    pub fn for_keys(keys: usize) -> Sink {
        let each = keys / BUCKETS + keys / BUCKETS / 4;
        Sink {
            buckets: (0..BUCKETS)
                .map(|_| Mutex::new(Vec::with_capacity(each)))
                .collect(),
        }
    }

    /// Takes a thread's WL hashes (`batch`, emptied; its capacity kept).
    pub fn add(&self, batch: &mut Vec<u64>) {
        for k in batch.iter_mut() {
            *k = key_of(*k);
        }
        batch.sort_unstable();
        batch.dedup();
        let mut rest = &batch[..];
        while let Some(&first) = rest.first() {
            let b = bucket_of(first);
            let n = rest.partition_point(|&k| bucket_of(k) == b);
            let mut low = self.buckets[b].lock().expect("a deletions bucket");
            if low.len() + n > low.capacity() {
                // full: its repeats dropped, then room for a quarter more (at most a quarter of
                // a bucket is spare, not the half a doubling leaves)
                drop_repeats(&mut low);
                let room = (low.len() / 4).max(n).max(BUCKET_MIN);
                low.reserve_exact(room);
            }
            low.extend(rest[..n].iter().map(|&k| k as u32));
            rest = &rest[n..];
        }
        batch.clear();
    }

    /// The file's bytes, the pieces built on `threads` threads (each piece from its own
    /// buckets, which it frees): the same bytes for the same set of hashes, however they came.
    pub fn into_bytes(self, threads: usize) -> Vec<u8> {
        let buckets = self.buckets;
        let mut n = 0;
        for b in &buckets {
            let mut low = b.lock().expect("a deletions bucket");
            drop_repeats(&mut low);
            n += low.len();
        }
        let pieces = n.div_ceil(PIECE_KEYS).min(BUCKETS);
        let first_bucket = |p: usize| (p << BUCKET_BITS).div_ceil(pieces);
        let build_one = |p: usize| -> Piece {
            let mut keys = Vec::new();
            let range = first_bucket(p)..first_bucket(p + 1);
            for (b, bucket) in buckets[range.clone()].iter().enumerate() {
                let b = range.start + b;
                let low = std::mem::take(&mut *bucket.lock().expect("a deletions bucket"));
                keys.extend(low.iter().map(|&l| (b as u64) << LOW_BITS | u64::from(l)));
            }
            let values: Vec<u64> = keys.iter().map(|&k| u64::from(print(k))).collect();
            let (g, cells) = build(&keys, &values, 8);
            (g, cells.into_iter().map(|c| c as u8).collect())
        };
        let built: Vec<Piece> = molsift_tasks::map(threads, pieces, build_one);
        let cells: usize = built.iter().map(|(_, c)| c.len()).sum();
        let mut out = Vec::with_capacity(8 + GEOMETRY_BYTES * pieces + cells);
        out.extend_from_slice(&(pieces as u64).to_le_bytes());
        for (g, _) in &built {
            out.extend_from_slice(&g.seed.to_le_bytes());
            out.extend_from_slice(&g.segment_length.to_le_bytes());
            out.extend_from_slice(&g.segment_count.to_le_bytes());
        }
        for (_, c) in &built {
            out.extend_from_slice(c);
        }
        out
    }
}

/// The file's bytes for `hashes` (WL hashes, any order, repeats allowed).
pub fn build_bytes(hashes: &[u64], threads: usize) -> Vec<u8> {
    let sink = Sink::default();
    for chunk in hashes.chunks(BATCH) {
        sink.add(&mut chunk.to_vec());
    }
    sink.into_bytes(threads)
}

/// A filter read from the file's bytes (held or mapped).
#[derive(Debug, Clone)]
pub struct Deletions<B> {
    bytes: B,
    /// each piece's geometry and where its cells start in `bytes`
    pieces: Vec<(Geometry, usize)>,
}

impl<B: AsRef<[u8]>> Deletions<B> {
    /// The filter in `bytes`, or why they are not one (the reason names the byte offset).
    pub fn from_bytes(bytes: B) -> Result<Deletions<B>, String> {
        let b = bytes.as_ref();
        let word = |at: usize, n: usize| -> Result<u64, String> {
            b.get(at..at + n)
                .map(|s| s.iter().rev().fold(0u64, |a, &x| a << 8 | u64::from(x)))
                .ok_or_else(|| format!("cut short at byte {at} of {}", b.len()))
        };
        let count = word(0, 8)?;
        let head = count
            .checked_mul(GEOMETRY_BYTES as u64)
            .and_then(|h| h.checked_add(8))
            .filter(|&h| h <= b.len() as u64)
            .ok_or_else(|| format!("{count} pieces do not fit {} bytes", b.len()))?
            as usize;
        let mut pieces = Vec::with_capacity(count as usize);
        let mut at = head;
        for p in 0..count as usize {
            let o = 8 + GEOMETRY_BYTES * p;
            let (seed, len, segs) = (word(o, 8)?, word(o + 8, 4)?, word(o + 12, 4)?);
            if !len.is_power_of_two() || len > 1 << 18 || segs == 0 {
                return Err(format!(
                    "piece {p} at byte {o}: segment length {len}, {segs} segments"
                ));
            }
            let g = Geometry {
                seed,
                segment_length: len as u32,
                segment_count: segs as u32,
                cells: (segs + 2) * len,
            };
            pieces.push((g, at));
            at = at
                .checked_add(g.cells as usize)
                .filter(|&e| e <= b.len())
                .ok_or_else(|| format!("piece {p}'s cells run past the end ({} bytes)", b.len()))?;
        }
        if at != b.len() {
            return Err(format!(
                "{} bytes after the last piece's cells",
                b.len() - at
            ));
        }
        Ok(Deletions { bytes, pieces })
    }

    /// False only when `wl` is not the hash of any graph one deletion away from a skeleton.
    #[inline]
    pub fn may_contain(&self, wl: u64) -> bool {
        if self.pieces.is_empty() {
            return false;
        }
        let k = key_of(wl);
        let (g, at) = &self.pieces[piece_of(k, self.pieces.len() as u64)];
        let cells = &self.bytes.as_ref()[*at..*at + g.cells as usize];
        let [a, b, c] = g.cells_of(k);
        cells[a as usize] ^ cells[b as usize] ^ cells[c as usize] == print(k)
    }

    /// The pieces (for tests and statistics).
    pub fn pieces(&self) -> usize {
        self.pieces.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(n: u64, salt: u64) -> Vec<u64> {
        (0..n)
            .map(|i| {
                (i ^ salt)
                    .wrapping_mul(0xd6e8_feb8_6659_fd93)
                    .rotate_left(23)
            })
            .collect()
    }

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        for n in [0u64, 1, 2, 5, 1_000, 100_000, (PIECE_KEYS as u64) * 2 + 17] {
            let mut keys = hashes(n, 0);
            keys.extend(hashes(n / 3, 0)); // repeats
            let bytes = build_bytes(&keys, 3);
            let f = Deletions::from_bytes(&bytes[..]).unwrap();
            assert_eq!(f.pieces(), (n as usize).div_ceil(PIECE_KEYS));
            assert!(hashes(n, 0).iter().all(|&h| f.may_contain(h)), "{n}");
            let absent = hashes(200_000, 0xabc_def0_1234);
            let passed = absent.iter().filter(|&&h| f.may_contain(h)).count();
            let rate = passed as f64 / absent.len() as f64;
            assert!(rate < if n == 0 { 1e-9 } else { 0.006 }, "{n}: {rate}");
            if n >= 100_000 {
                // about 9 bits a hash
                assert!(
                    (bytes.len() as f64) < 1.2 * n as f64,
                    "{n}: {} bytes",
                    bytes.len()
                );
                assert!(
                    rate > 0.002,
                    "{n}: {rate} (8-bit prints pass about 1 in 256)"
                );
            }
        }
    }

    #[test]
    fn the_same_bytes_for_any_order_and_threads() {
        let keys = hashes(300_000, 7);
        let mut backwards = keys.clone();
        backwards.reverse();
        let one = build_bytes(&keys, 1);
        assert_eq!(one, build_bytes(&backwards, 4));
        // handed over by threads in batches of any size, the same bytes
        let sink = Sink::default();
        std::thread::scope(|s| {
            for part in keys.chunks(70_001) {
                let sink = &sink;
                s.spawn(move || {
                    for batch in part.chunks(999) {
                        sink.add(&mut batch.to_vec());
                    }
                });
            }
        });
        assert_eq!(one, sink.into_bytes(2));
    }

    #[test]
    fn damaged_bytes_are_refused_not_read() {
        let bytes = build_bytes(&hashes(5_000, 1), 1);
        assert!(Deletions::from_bytes(&bytes[..bytes.len() - 1]).is_err());
        assert!(Deletions::from_bytes(&bytes[..4]).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Deletions::from_bytes(&longer[..]).is_err());
        let mut many = bytes.clone();
        many[7] = 0x80; // a piece count past any file
        assert!(Deletions::from_bytes(&many[..]).is_err());
        let mut odd = bytes.clone();
        odd[16] = 3; // a segment length that is not a power of two
        assert!(Deletions::from_bytes(&odd[..]).is_err());
        assert!(Deletions::from_bytes(&[][..]).is_err());
    }
}
