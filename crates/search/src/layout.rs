//! The column (bit-plane) index: molecules counting-sorted by popcount into buckets, each
//! bucket padded to whole 256-molecule blocks, then transposed into one bit plane per
//! fingerprint bit. This module owns the in-memory shape and [`ColumnIndex::build`].
//!
//! Shape, for `n` molecules of `bits` bits sorted into `blocks` blocks of [`BLOCK`] slots:
//!
//! * `planes`: `bits` planes of `blocks * 4` little-endian `u64` words each, plane-major: bit
//!   `j` of word `w` of plane `b` is set iff the molecule in sorted slot `64 * w + j` has
//!   fingerprint bit `b`. Padding slots are all zero.
//! * `order`: `blocks * 256` `u64`: the store index of the molecule in each sorted slot,
//!   `u64::MAX` for padding. Within a bucket, store indices ascend.
//! * `buckets`: one per popcount value present, ascending, each a run of whole blocks.
//! * `bit_counts`: how many molecules have each bit (a search reads its rarest planes first).

use std::ops::Range;

use memmap2::Mmap;
use molsift_fp::FingerprintLayout;
use serde::{Deserialize, Serialize};

use crate::SearchError;

/// Molecules per block: the unit of padding and of the bit-sliced kernels (4 `u64` words).
pub const BLOCK: usize = 256;
/// `u64` words of one plane per block.
pub(crate) const BLOCK_WORDS: usize = BLOCK / 64;
/// The largest fingerprint the index takes (counts must fit the 17-slice counters).
pub const MAX_BITS: u32 = 65_536;
/// The `order` value of a padding slot.
pub(crate) const PAD: u64 = u64::MAX;

/// The molecules of one popcount value: a run of whole blocks in sorted order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    /// the popcount shared by every molecule of the bucket
    pub popcount: u32,
    /// first block of the bucket
    pub first_block: u64,
    /// number of blocks (`ceil(count / 256)`)
    pub blocks: u64,
    /// number of molecules (the rest of the last block is padding)
    pub count: u64,
}

impl Bucket {
    /// The block numbers of the bucket.
    pub fn block_range(&self) -> Range<u64> {
        self.first_block..self.first_block + self.blocks
    }
}

/// `u64` words owned in memory or mapped from a file.
#[derive(Debug)]
pub(crate) enum Words {
    Owned(Vec<u64>),
    Mapped(Mmap),
    Empty,
}

impl Words {
    pub(crate) fn as_slice(&self) -> &[u64] {
        match self {
            Words::Owned(v) => v,
            Words::Mapped(m) => {
                // SAFETY: mmap is page aligned; `open` checked the length is a multiple of 8 and
                // the crate refuses to build on big-endian targets (see lib.rs).
                let (head, words, tail) = unsafe { m.align_to::<u64>() };
                assert!(
                    head.is_empty() && tail.is_empty(),
                    "mapped file not u64 aligned"
                );
                words
            }
            Words::Empty => &[],
        }
    }

    /// `madvise(MADV_WILLNEED)` on words `from..from + len` of a mapped file (start rounded down
    /// to its page): the kernel starts reading them in. Nothing for words in memory; a failed
    /// hint is ignored (it only changes speed).
    pub(crate) fn will_need(&self, from: usize, len: usize) {
        if let Words::Mapped(m) = self {
            const PAGE: usize = 4096;
            let start = (from * 8) / PAGE * PAGE;
            let end = ((from + len) * 8).min(m.len());
            if start < end {
                let _ = m.advise_range(memmap2::Advice::WillNeed, start, end - start);
            }
        }
    }
}

/// The bit-plane column index over a store's fingerprints; see the module documentation of
/// the crate for how it is searched.
#[derive(Debug)]
pub struct ColumnIndex {
    pub(crate) bits: u32,
    pub(crate) n: u64,
    pub(crate) blocks: u64,
    pub(crate) buckets: Vec<Bucket>,
    pub(crate) planes: Words,
    pub(crate) order: Words,
    /// number of molecules with each bit set (the search reads the rarest planes first)
    pub(crate) bit_counts: Vec<u64>,
    /// where the index was opened from, with the header's checksums
    pub(crate) origin: Option<Origin>,
    /// give the kernel read-ahead hints for what each query scans (mapped planes only)
    pub(crate) advise: bool,
    /// store version 2: the compressed planes (then `planes` and `order` are empty)
    pub(crate) compressed: Option<Box<crate::compressed::Compressed>>,
}

/// The directory an index was opened from and the checksums its header records.
#[derive(Debug)]
pub(crate) struct Origin {
    pub(crate) dir: std::path::PathBuf,
    pub(crate) planes_xxh3: String,
    pub(crate) order_xxh3: String,
    /// XXH3-64 of each plane, and whether this process has checked it yet
    pub(crate) plane_xxh3: Vec<String>,
    pub(crate) plane_checked: Vec<std::sync::atomic::AtomicBool>,
    /// the order's checksum, checked once
    pub(crate) order_checked: std::sync::OnceLock<Result<(), String>>,
}

impl ColumnIndex {
    /// Builds the index from `n` row-major fingerprints of `bits` bits, row `i` at
    /// `rows[i * stride_words ..]`, with their popcounts. Errors if the shapes disagree or a
    /// popcount is wrong.
    pub fn build(
        rows: &[u64],
        stride_words: usize,
        bits: u32,
        n: usize,
        popcounts: &[u16],
    ) -> Result<ColumnIndex, SearchError> {
        let layout = check_shape(rows, stride_words, bits, n, popcounts)?;
        let words = layout.words_per_row();
        let row = |i: usize| &rows[i * stride_words..i * stride_words + words];
        build_with(bits, n, row, |i| u32::from(popcounts[i]))
    }

    /// Builds the index from an open store (reads every fingerprint once).
    pub fn from_store(store: &molsift_store::Store) -> Result<ColumnIndex, SearchError> {
        let bits = store.manifest().fingerprint.bits;
        check_bits(bits)?;
        build_with(
            bits,
            store.len(),
            |i| store.fingerprint(i),
            |i| u32::from(store.popcount(i)),
        )
    }

    /// Bits per fingerprint.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// Number of molecules.
    pub fn len(&self) -> usize {
        self.n as usize
    }

    /// True if the index holds no molecule.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Number of 256-molecule blocks (molecules plus padding, over 256).
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// The popcount buckets, ascending.
    pub fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }

    /// `u64` words per bit plane.
    pub(crate) fn plane_words(&self) -> usize {
        self.blocks as usize * BLOCK_WORDS
    }

    /// Plane `b` (one bit per sorted slot).
    pub fn plane(&self, b: u32) -> &[u64] {
        let w = self.plane_words();
        &self.planes.as_slice()[b as usize * w..(b as usize + 1) * w]
    }

    /// Store index of each sorted slot (`u64::MAX` for padding); empty for compressed planes
    /// (see [`ColumnIndex::position_of_slot`]).
    pub fn order(&self) -> &[u64] {
        self.order.as_slice()
    }

    /// True when the index reads the compressed planes of a version-2 store.
    pub fn is_compressed(&self) -> bool {
        self.compressed.is_some()
    }

    /// The store position of sorted slot `slot` (`u64::MAX` for padding).
    pub fn position_of_slot(&self, slot: usize) -> u64 {
        self.slot_order().position(slot)
    }

    pub(crate) fn slot_order(&self) -> crate::compressed::SlotOrder<'_> {
        match &self.compressed {
            Some(c) => crate::compressed::SlotOrder::Packed {
                buckets: &c.header.buckets,
                planes: c.planes(),
            },
            None => crate::compressed::SlotOrder::Dense(self.order.as_slice()),
        }
    }

    /// Number of molecules with bit `b` set.
    pub fn bit_count(&self, b: u32) -> u64 {
        self.bit_counts[b as usize]
    }

    /// Whether searches give the kernel read-ahead hints (`madvise(MADV_WILLNEED)`) for the
    /// planes each query scans from every block. Only a mapped index takes them;
    /// [`ColumnIndex::open`] turns them on when the planes are larger than half the memory the
    /// page cache may use (see [`ColumnIndex::set_read_ahead`]).
    pub fn read_ahead(&self) -> bool {
        self.advise
    }

    /// Turns the read-ahead hints on or off (results do not change, only how pages come in:
    /// the hints help when the planes are on disk and cost a few microseconds per query when
    /// they are already cached).
    pub fn set_read_ahead(&mut self, on: bool) {
        self.advise = on && matches!(self.planes, Words::Mapped(_));
        if let Words::Mapped(m) = &self.planes {
            // with hints, a page fault (a survivor's sparse plane) reads its page, not the
            // device's whole read-ahead window around it (8 MiB on some disks)
            let advice = if self.advise {
                memmap2::Advice::Random
            } else {
                memmap2::Advice::Normal
            };
            let _ = m.advise(advice);
        }
    }

    /// Bytes the index occupies (planes and order).
    pub fn size_bytes(&self) -> u64 {
        8 * (self.planes.as_slice().len() + self.order.as_slice().len()) as u64
    }
}

pub(crate) fn check_bits(bits: u32) -> Result<FingerprintLayout, SearchError> {
    let layout = FingerprintLayout::new(bits)?;
    if bits > MAX_BITS {
        return Err(SearchError::Invalid(format!(
            "fingerprints of {bits} bits exceed the {MAX_BITS}-bit limit"
        )));
    }
    Ok(layout)
}

/// Checks the row-major input shared by the index builder and the row scan.
pub(crate) fn check_shape(
    rows: &[u64],
    stride_words: usize,
    bits: u32,
    n: usize,
    popcounts: &[u16],
) -> Result<FingerprintLayout, SearchError> {
    let layout = check_bits(bits)?;
    if stride_words < layout.words_per_row() {
        return Err(SearchError::Invalid(format!(
            "row stride of {stride_words} words is shorter than a {bits}-bit fingerprint"
        )));
    }
    let need = n
        .checked_mul(stride_words)
        .ok_or_else(|| SearchError::Invalid("n * stride overflows".into()))?;
    if rows.len() < need {
        return Err(SearchError::Invalid(format!(
            "{n} rows of {stride_words} words need {need} words, got {}",
            rows.len()
        )));
    }
    if popcounts.len() != n {
        return Err(SearchError::Invalid(format!(
            "{n} molecules but {} popcounts",
            popcounts.len()
        )));
    }
    Ok(layout)
}

/// The popcount sort shared by every way of building an index: the buckets (ascending
/// popcount, each padded to whole blocks) and `order` (store index per sorted slot, ascending
/// within a bucket, [`PAD`] for padding).
pub(crate) struct Sorted {
    pub(crate) buckets: Vec<Bucket>,
    pub(crate) blocks: u64,
    pub(crate) order: Vec<u64>,
}

/// Counting sort of `n` molecules by popcount. Errors if a popcount exceeds `bits`.
pub(crate) fn sort_by_popcount(
    bits: u32,
    n: usize,
    pop: impl Fn(usize) -> u32,
) -> Result<Sorted, SearchError> {
    let mut counts = vec![0u64; bits as usize + 1];
    for i in 0..n {
        let p = pop(i);
        if p > bits {
            return Err(SearchError::Invalid(format!(
                "molecule {i}: popcount {p} exceeds {bits} bits"
            )));
        }
        counts[p as usize] += 1;
    }
    let mut buckets = Vec::new();
    let mut next_block = 0u64;
    for (p, &count) in counts.iter().enumerate() {
        if count > 0 {
            let blocks = count.div_ceil(BLOCK as u64);
            buckets.push(Bucket {
                popcount: p as u32,
                first_block: next_block,
                blocks,
                count,
            });
            next_block += blocks;
        }
    }
    let blocks = next_block;
    let mut order = vec![PAD; blocks as usize * BLOCK];
    let mut cursor = vec![0u64; bits as usize + 1];
    for b in &buckets {
        cursor[b.popcount as usize] = b.first_block * BLOCK as u64;
    }
    for i in 0..n {
        let c = &mut cursor[pop(i) as usize];
        order[*c as usize] = i as u64;
        *c += 1;
    }
    Ok(Sorted {
        buckets,
        blocks,
        order,
    })
}

/// The error for a molecule whose given popcount disagrees with its fingerprint.
pub(crate) fn wrong_popcount(idx: u64, given: u32, found: u32) -> SearchError {
    SearchError::Invalid(format!(
        "molecule {idx}: popcount given as {given} but its fingerprint has {found} bits"
    ))
}

/// Counting sort by popcount, then transpose 512 slots (one cache line per plane) at a time.
/// Checks each popcount against the bits met while transposing (a wrong one would put the
/// molecule in the wrong bucket).
fn build_with<'r>(
    bits: u32,
    n: usize,
    row: impl Fn(usize) -> &'r [u64],
    pop: impl Fn(usize) -> u32,
) -> Result<ColumnIndex, SearchError> {
    let Sorted {
        buckets,
        blocks,
        order,
    } = sort_by_popcount(bits, n, &pop)?;
    let plane_words = blocks as usize * BLOCK_WORDS;
    let mut planes = vec![0u64; bits as usize * plane_words];
    const GROUP_WORDS: usize = 8; // 512 slots: one cache line of every plane
    let mut buf = vec![0u64; bits as usize * GROUP_WORDS];
    let mut bit_counts = vec![0u64; bits as usize];
    for g0 in (0..plane_words).step_by(GROUP_WORDS) {
        let gw = GROUP_WORDS.min(plane_words - g0);
        buf.fill(0);
        for (slot, &idx) in order.iter().enumerate().take((g0 + gw) * 64).skip(g0 * 64) {
            if idx == PAD {
                continue;
            }
            let (w_in_group, bit) = ((slot / 64) - g0, slot % 64);
            let mut found = 0;
            for (w, &word) in row(idx as usize).iter().enumerate() {
                let mut x = word;
                while x != 0 {
                    let b = w * 64 + x.trailing_zeros() as usize;
                    buf[b * GROUP_WORDS + w_in_group] |= 1u64 << bit;
                    bit_counts[b] += 1;
                    found += 1;
                    x &= x - 1;
                }
            }
            if found != pop(idx as usize) {
                return Err(wrong_popcount(idx, pop(idx as usize), found));
            }
        }
        for b in 0..bits as usize {
            planes[b * plane_words + g0..b * plane_words + g0 + gw]
                .copy_from_slice(&buf[b * GROUP_WORDS..b * GROUP_WORDS + gw]);
        }
    }
    Ok(ColumnIndex {
        bits,
        n: n as u64,
        blocks,
        buckets,
        planes: if planes.is_empty() {
            Words::Empty
        } else {
            Words::Owned(planes)
        },
        order: if order.is_empty() {
            Words::Empty
        } else {
            Words::Owned(order)
        },
        bit_counts,
        origin: None,
        advise: false,
        compressed: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_padded_and_planes_transposed() {
        // 300 molecules of popcount 1 (bit i % 64) and 2 of popcount 2
        let bits = 64;
        let n = 302;
        let mut rows = vec![0u64; n];
        let mut pops = vec![0u16; n];
        for i in 0..300 {
            rows[i] = 1 << (i % 64);
            pops[i] = 1;
        }
        rows[300] = 0b11;
        rows[301] = 0b101;
        pops[300] = 2;
        pops[301] = 2;
        let idx = ColumnIndex::build(&rows, 1, bits, n, &pops).unwrap();
        assert_eq!(idx.blocks(), 3);
        assert_eq!(
            idx.buckets(),
            &[
                Bucket {
                    popcount: 1,
                    first_block: 0,
                    blocks: 2,
                    count: 300
                },
                Bucket {
                    popcount: 2,
                    first_block: 2,
                    blocks: 1,
                    count: 2
                }
            ]
        );
        assert_eq!(idx.order()[299], 299);
        assert_eq!(idx.order()[300], PAD);
        assert_eq!(idx.order()[512], 300);
        assert_eq!(idx.order()[513], 301);
        // slot 513 (molecule 301) has bits 0 and 2; slot 5 (molecule 5) has bit 5
        assert_eq!(idx.plane(2)[513 / 64] >> (513 % 64) & 1, 1);
        assert_eq!(idx.plane(5)[0] >> 5 & 1, 1);
        assert_eq!(idx.plane(1)[513 / 64] >> (513 % 64) & 1, 0);
        let total: u32 = (0..bits)
            .map(|b| idx.plane(b).iter().map(|w| w.count_ones()).sum::<u32>())
            .sum();
        assert_eq!(total, 300 + 4);
    }

    #[test]
    fn wrong_popcount_is_refused() {
        let err = ColumnIndex::build(&[0b111], 1, 64, 1, &[2]).unwrap_err();
        assert!(err.to_string().contains("molecule 0"), "{err}");
    }
}
