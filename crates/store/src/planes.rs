//! The fingerprints of store version 2, kept once, as compressed bit planes: the molecules
//! sorted by popcount into buckets (each padded to whole blocks of 256 slots) and within a
//! bucket for similarity (Gray-code order of their most frequent bits), one plane per
//! fingerprint bit, and each plane cut into one container per block, stored as whatever is
//! smallest:
//!
//! * empty (no molecule of the block has the bit): nothing;
//! * sparse (1 to 31 molecules): their slots in the block, one byte each, ascending;
//! * dense (32 or more): the block's four `u64` words.
//!
//! A container's *code* is its size in bytes (0 to 31, or 32 for dense), one byte per plane
//! and block, so a search learns from the codes alone which blocks can hold a hit (a molecule
//! cannot share more bits with a query than the query has non-empty planes in its block)
//! before it reads a payload byte. Offsets: every 64 blocks a checkpoint (u32, from the
//! plane's start); between checkpoints, the sum of the codes.
//!
//! Files (written into a store directory being built; names in [`FILES`]):
//!
//! | file | content |
//! |---|---|
//! | `planes.json` | [`PlanesHeader`]: format, version, bits, molecules, blocks, buckets, per-bit counts, each plane's first byte in the data file and XXH3 (codes, checkpoints, payload and part masks), each file's size and XXH3 |
//! | `planes.codes.u8` | `bits` runs of `blocks` codes, plane-major |
//! | `planes.checkpoints.u32` | `bits` runs of `ceil(blocks / 64) + 1` checkpoints |
//! | `planes.data.u8` | the planes' containers, plane after plane, block after block, then 32 zero bytes |
//! | `planes.order` | [`crate::packed`]: the store position of each molecule in sorted order (padding slots are not listed: a bucket's slot `k` is rank `first_rank + k`) |
//! | `planes.parts.u8` | the part masks, plane after plane: per block one byte (bit `r`: any of slots `32 r .. 32 r + 32` has the bit), then (format 3) per block two bytes, little-endian (bit `r`: slots `16 r .. 16 r + 16`) |
//!
//! Format versions: 1 had no part masks; 2 the masks of 32 slots; 3 (written) those of 32 and of
//! 16 slots. The masks of 32 slots bound a threshold search's blocks (one byte a block is cheap to
//! count for every block); those of 16 slots, twice as many bytes but a bound about 2.4 times as
//! sharp, order a top-k search's blocks (it counts only the few blocks whose bound beats the k-th
//! best score). Older versions still open and search.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

use crate::checksum::to_hex;
use crate::{FileEntry, StoreError};

/// Slots per block.
pub const BLOCK: usize = 256;
/// Blocks per offset checkpoint.
pub const CHECKPOINT_BLOCKS: usize = 64;
/// The code of a dense container (its size in bytes).
pub const DENSE: u8 = 32;
/// Zero bytes after the last plane's payload, so that a reader may load whole 32-byte
/// chunks from any container's start without a bounds check.
pub const DATA_SLACK: usize = 32;
/// Format name in `planes.json`.
pub const FORMAT_NAME: &str = "molsift-planes";
/// Format version written (2: with the part masks of 32 slots in [`PARTS_FILE`]; 3: also those
/// of 16 slots).
pub const FORMAT_VERSION: u32 = 3;
/// The header.
pub const HEADER_FILE: &str = "planes.json";
/// Codes.
pub const CODES_FILE: &str = "planes.codes.u8";
/// Checkpoints.
pub const CHECKPOINTS_FILE: &str = "planes.checkpoints.u32";
/// Payload.
pub const DATA_FILE: &str = "planes.data.u8";
/// Sorted order.
pub const ORDER_FILE: &str = "planes.order";
/// Part masks, per plane: per block one byte, bit `r` set when any of slots `32 r .. 32 r + 32`
/// has the bit (a bound per 32 slots, sharper than the codes' per block); then, in format 3,
/// per block a little-endian `u16`, bit `r` for slots `16 r .. 16 r + 16`.
pub const PARTS_FILE: &str = "planes.parts.u8";
/// Slots per part of the one-byte masks.
pub const PART: usize = 32;
/// Slots per part of the two-byte masks (format 3).
pub const PART16: usize = 16;

/// Bytes of part masks per plane and block in planes of format `version`.
pub fn part_bytes(version: u32) -> usize {
    match version {
        0 | 1 => 0,
        2 => 1,
        _ => 3,
    }
}
/// Every file, header first.
pub const FILES: [&str; 6] = [
    HEADER_FILE,
    CODES_FILE,
    CHECKPOINTS_FILE,
    DATA_FILE,
    ORDER_FILE,
    PARTS_FILE,
];

/// The molecules of one popcount: a run of whole blocks in sorted order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlaneBucket {
    /// the popcount of every molecule in it
    pub popcount: u32,
    /// its first block
    pub first_block: u64,
    /// its blocks (`ceil(count / 256)`)
    pub blocks: u64,
    /// its molecules (the rest of the last block is padding)
    pub count: u64,
    /// the rank of its first molecule in `planes.order`
    pub first_rank: u64,
}

/// `planes.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanesHeader {
    /// [`FORMAT_NAME`]
    pub format: String,
    /// [`FORMAT_VERSION`]
    pub format_version: u32,
    /// planes (fingerprint bits)
    pub bits: u32,
    /// molecules
    pub molecules: u64,
    /// blocks of [`BLOCK`] slots
    pub blocks: u64,
    /// buckets, ascending popcount
    pub buckets: Vec<PlaneBucket>,
    /// molecules having each bit
    pub bit_counts: Vec<u64>,
    /// where each plane starts in the data file (`bits + 1` entries)
    pub plane_base: Vec<u64>,
    /// XXH3-64 of each plane's codes, checkpoints and payload, in that order
    pub plane_xxh3: Vec<String>,
    /// the data files' sizes and checksums
    pub files: BTreeMap<String, FileEntry>,
}

impl PlanesHeader {
    /// Checkpoints per plane.
    pub fn checkpoints(&self) -> usize {
        (self.blocks as usize).div_ceil(CHECKPOINT_BLOCKS) + 1
    }
}

/// Writes the planes of `n` molecules of `bits` bits into the directory `dir`: `popcount(i)`
/// and `row(i, out)` give molecule `i`'s popcount and fingerprint words (store order). Planes
/// are built a group at a time so that the payload in memory stays under about
/// `budget_bytes`; each group reads every fingerprint once more. Returns the header (also
/// written).
pub fn write_planes<P, R>(
    dir: &Path,
    bits: u32,
    n: usize,
    popcount: P,
    row: R,
    budget_bytes: usize,
) -> Result<PlanesHeader, StoreError>
where
    P: Fn(usize) -> u32,
    R: Fn(usize, &mut [u64]),
{
    let words = (bits as usize).div_ceil(64);
    let bits_us = bits as usize;
    // counting sort by popcount (then each bucket sorted for similarity, below)
    let mut pops = Vec::with_capacity(n);
    let mut per_pop = vec![0u64; bits_us + 1];
    for i in 0..n {
        let p = popcount(i);
        if p > bits {
            return Err(StoreError::Invalid(format!(
                "molecule {i}: popcount {p} of a {bits}-bit fingerprint"
            )));
        }
        per_pop[p as usize] += 1;
        pops.push(p);
    }
    let mut buckets = Vec::new();
    let (mut block, mut rank) = (0u64, 0u64);
    let mut first_rank_of = vec![0u64; bits_us + 1];
    for (p, &count) in per_pop.iter().enumerate() {
        if count == 0 {
            continue;
        }
        let blocks = count.div_ceil(BLOCK as u64);
        buckets.push(PlaneBucket {
            popcount: p as u32,
            first_block: block,
            blocks,
            count,
            first_rank: rank,
        });
        first_rank_of[p] = rank;
        block += blocks;
        rank += count;
    }
    // per-bit counts, and a bound on each plane's payload to form groups
    let mut bit_counts = vec![0u64; bits_us];
    let mut buf = vec![0u64; words];
    for (i, &pop) in pops.iter().enumerate() {
        buf.iter_mut().for_each(|w| *w = 0);
        row(i, &mut buf);
        let mut found = 0u32;
        for (w, &word) in buf.iter().enumerate() {
            let mut x = word;
            while x != 0 {
                let b = w * 64 + x.trailing_zeros() as usize;
                if b < bits_us {
                    bit_counts[b] += 1;
                }
                found += 1;
                x &= x - 1;
            }
        }
        if found != pop {
            return Err(StoreError::Invalid(format!(
                "molecule {i}: popcount {pop} but its fingerprint has {found} bits"
            )));
        }
    }
    let blocks = block as usize;
    let mut order = vec![0u64; n];
    let mut next = first_rank_of.clone();
    for (i, &p) in pops.iter().enumerate() {
        order[next[p as usize] as usize] = i as u64;
        next[p as usize] += 1;
    }
    similarity_order(&mut order, &buckets, &bit_counts, words, &row);
    // slot -> position, u64::MAX for padding
    let mut slots = vec![u64::MAX; blocks * BLOCK];
    for b in &buckets {
        let start = b.first_block as usize * BLOCK;
        for k in 0..b.count as usize {
            slots[start + k] = order[b.first_rank as usize + k];
        }
    }
    let bound = |b: usize| bit_counts[b].min(DENSE as u64 * blocks as u64) as usize;
    let io = |name: &str| {
        let path = dir.join(name);
        move |e| StoreError::io(&path, e)
    };
    let create = |name: &str| std::fs::File::create(dir.join(name)).map_err(io(name));
    let mut codes_f = std::io::BufWriter::new(create(CODES_FILE)?);
    let mut ckpt_f = std::io::BufWriter::new(create(CHECKPOINTS_FILE)?);
    let mut data_f = std::io::BufWriter::new(create(DATA_FILE)?);
    let mut parts_f = std::io::BufWriter::new(create(PARTS_FILE)?);
    let mut plane_base = vec![0u64];
    let mut plane_xxh3 = Vec::with_capacity(bits_us);
    let checkpoints = blocks.div_ceil(CHECKPOINT_BLOCKS) + 1;
    let mut lo = 0usize;
    let mut rowbuf = vec![0u64; words];
    while lo < bits_us {
        // the group: planes lo..hi whose payload fits the budget (at least one plane)
        let mut hi = lo + 1;
        let mut size = bound(lo);
        while hi < bits_us && size + bound(hi) <= budget_bytes {
            size += bound(hi);
            hi += 1;
        }
        let g = hi - lo;
        let mut codes = vec![0u8; g * blocks];
        // per plane: a byte per block (32 slots a bit), then two per block (16 slots a bit)
        let pw = part_bytes(FORMAT_VERSION);
        let mut parts = vec![0u8; g * pw * blocks];
        let mut data: Vec<Vec<u8>> = (0..g).map(|k| Vec::with_capacity(bound(lo + k))).collect();
        let mut lanes = vec![[0u64; 4]; g];
        for blk in 0..blocks {
            lanes.iter_mut().for_each(|l| *l = [0; 4]);
            for k in 0..BLOCK {
                let pos = slots[blk * BLOCK + k];
                if pos == u64::MAX {
                    continue;
                }
                rowbuf.iter_mut().for_each(|w| *w = 0);
                row(pos as usize, &mut rowbuf);
                for (w, &word) in rowbuf
                    .iter()
                    .enumerate()
                    .take(hi.div_ceil(64))
                    .skip(lo / 64)
                {
                    let mut x = word;
                    while x != 0 {
                        let b = w * 64 + x.trailing_zeros() as usize;
                        x &= x - 1;
                        if (lo..hi).contains(&b) {
                            lanes[b - lo][k >> 6] |= 1u64 << (k & 63);
                        }
                    }
                }
            }
            for (j, lane) in lanes.iter().enumerate() {
                let c: u32 = lane.iter().map(|w| w.count_ones()).sum();
                parts[pw * j * blocks + blk] = part_mask(lane);
                let at = pw * j * blocks + blocks + 2 * blk;
                parts[at..at + 2].copy_from_slice(&part_mask16(lane).to_le_bytes());
                let out = &mut data[j];
                if c >= u32::from(DENSE) {
                    codes[j * blocks + blk] = DENSE;
                    for w in lane {
                        out.extend_from_slice(&w.to_le_bytes());
                    }
                } else {
                    codes[j * blocks + blk] = c as u8;
                    for (w, &word) in lane.iter().enumerate() {
                        let mut x = word;
                        while x != 0 {
                            out.push((w * 64 + x.trailing_zeros() as usize) as u8);
                            x &= x - 1;
                        }
                    }
                }
            }
        }
        for j in 0..g {
            let plane_codes = &codes[j * blocks..(j + 1) * blocks];
            let mut ck = Vec::with_capacity(checkpoints);
            let mut sum = 0u64;
            for (blk, &c) in plane_codes.iter().enumerate() {
                if blk % CHECKPOINT_BLOCKS == 0 {
                    ck.push(sum);
                }
                sum += u64::from(c);
            }
            while ck.len() < checkpoints {
                ck.push(sum);
            }
            if sum > u64::from(u32::MAX) {
                return Err(StoreError::Invalid(format!(
                    "plane {} holds {sum} bytes, more than its 32-bit checkpoints address",
                    lo + j
                )));
            }
            let ck_bytes: Vec<u8> = ck.iter().flat_map(|&c| (c as u32).to_le_bytes()).collect();
            let plane_parts = &parts[pw * j * blocks..pw * (j + 1) * blocks];
            plane_xxh3.push(plane_digest(plane_codes, &ck_bytes, &data[j], plane_parts));
            parts_f.write_all(plane_parts).map_err(io(PARTS_FILE))?;
            codes_f.write_all(plane_codes).map_err(io(CODES_FILE))?;
            ckpt_f.write_all(&ck_bytes).map_err(io(CHECKPOINTS_FILE))?;
            data_f.write_all(&data[j]).map_err(io(DATA_FILE))?;
            plane_base.push(plane_base.last().copied().unwrap_or(0) + sum);
        }
        lo = hi;
    }
    data_f
        .write_all(&[0u8; DATA_SLACK])
        .map_err(io(DATA_FILE))?;
    for (f, name) in [
        (codes_f, CODES_FILE),
        (ckpt_f, CHECKPOINTS_FILE),
        (data_f, DATA_FILE),
        (parts_f, PARTS_FILE),
    ] {
        f.into_inner()
            .map_err(|e| StoreError::io(dir.join(name), e.into_error()))?
            .sync_all()
            .map_err(io(name))?;
    }
    let order_bytes = crate::packed::encode(&order);
    molsift_iostats::write_file(&dir.join(ORDER_FILE), &order_bytes, true)
        .map_err(io(ORDER_FILE))?;
    let mut files = BTreeMap::new();
    for name in &FILES[1..] {
        let bytes = std::fs::read(dir.join(name)).map_err(io(name))?;
        files.insert(
            name.to_string(),
            FileEntry {
                bytes: bytes.len() as u64,
                xxh3: to_hex(xxhash_rust::xxh3::xxh3_64(&bytes)),
            },
        );
    }
    let header = PlanesHeader {
        format: FORMAT_NAME.into(),
        format_version: FORMAT_VERSION,
        bits,
        molecules: n as u64,
        blocks: blocks as u64,
        buckets,
        bit_counts,
        plane_base,
        plane_xxh3,
        files,
    };
    let text = serde_json::to_string(&header).expect("header serializes");
    molsift_iostats::write_file(&dir.join(HEADER_FILE), text.as_bytes(), true)
        .map_err(io(HEADER_FILE))?;
    Ok(header)
}

/// Rewrites the planes in `dir` (format 3) as format version `to`: 1 without the part masks
/// (removes [`PARTS_FILE`]), 2 with the masks of 32 slots only; recomputes each plane's
/// checksum and the header. What stores written by older versions hold: for tests of those
/// formats and for measuring the part bounds.
#[doc(hidden)]
pub fn strip_parts(dir: &Path, to: u32) -> Result<PlanesHeader, StoreError> {
    let read =
        |name: &str| std::fs::read(dir.join(name)).map_err(|e| StoreError::io(dir.join(name), e));
    let mut header: PlanesHeader =
        serde_json::from_slice(&read(HEADER_FILE)?).map_err(|e| StoreError::Inconsistent {
            path: dir.join(HEADER_FILE),
            reason: e.to_string(),
        })?;
    if header.format_version != FORMAT_VERSION || !(1..FORMAT_VERSION).contains(&to) {
        return Err(StoreError::Invalid(format!(
            "planes of format {} rewritten as format {to}",
            header.format_version
        )));
    }
    let (codes, ck, data) = (read(CODES_FILE)?, read(CHECKPOINTS_FILE)?, read(DATA_FILE)?);
    let parts = read(PARTS_FILE)?;
    let (bits, blocks, cps) = (
        header.bits as usize,
        header.blocks as usize,
        header.checkpoints(),
    );
    let (from_w, to_w) = (part_bytes(FORMAT_VERSION), part_bytes(to));
    let mut kept = Vec::with_capacity(bits * blocks * to_w);
    for p in 0..bits {
        // the masks of 32 slots come first in each plane's masks
        let plane_parts = &parts[p * from_w * blocks..][..to_w * blocks];
        kept.extend_from_slice(plane_parts);
        header.plane_xxh3[p] = plane_digest(
            &codes[p * blocks..(p + 1) * blocks],
            &ck[4 * p * cps..4 * (p + 1) * cps],
            &data[header.plane_base[p] as usize..header.plane_base[p + 1] as usize],
            plane_parts,
        );
    }
    let parts_path = dir.join(PARTS_FILE);
    if to_w == 0 {
        std::fs::remove_file(&parts_path).map_err(|e| StoreError::io(&parts_path, e))?;
        header.files.remove(PARTS_FILE);
    } else {
        molsift_iostats::write_file(&parts_path, &kept, true)
            .map_err(|e| StoreError::io(&parts_path, e))?;
        header.files.insert(
            PARTS_FILE.to_string(),
            FileEntry {
                bytes: kept.len() as u64,
                xxh3: to_hex(xxhash_rust::xxh3::xxh3_64(&kept)),
            },
        );
    }
    header.format_version = to;
    let text = serde_json::to_string(&header).expect("header serializes");
    molsift_iostats::write_file(&dir.join(HEADER_FILE), text.as_bytes(), true)
        .map_err(|e| StoreError::io(dir.join(HEADER_FILE), e))?;
    Ok(header)
}

/// A plane's checksum in the header: XXH3-64 of its codes, checkpoints, payload and part masks
/// (none in format 1), in that order.
fn plane_digest(codes: &[u8], checkpoints: &[u8], data: &[u8], parts: &[u8]) -> String {
    let mut h = Xxh3::new();
    for bytes in [codes, checkpoints, data, parts] {
        h.update(bytes);
    }
    to_hex(h.digest())
}

/// A block's part mask: bit `r` set when any of slots `32 r .. 32 r + 32` is set in `lane`.
#[inline]
pub fn part_mask(lane: &[u64; 4]) -> u8 {
    let mut m = 0u8;
    for r in 0..BLOCK / PART {
        m |= u8::from((lane[r / 2] >> (PART * (r % 2))) as u32 != 0) << r;
    }
    m
}

/// A block's mask of 16-slot parts: bit `r` set when any of slots `16 r .. 16 r + 16` is set
/// in `lane`.
#[inline]
pub fn part_mask16(lane: &[u64; 4]) -> u16 {
    let mut m = 0u16;
    for r in 0..BLOCK / PART16 {
        m |= u16::from((lane[r / 4] >> (PART16 * (r % 4))) as u16 != 0) << r;
    }
    m
}

/// Checkpoint `c` of a plane's row of checkpoints ([`Planes::checkpoint_row`]): where block
/// `c * CHECKPOINT_BLOCKS`'s container starts in the plane's payload.
#[inline]
pub fn checkpoint_in(row: &[u8], c: usize) -> usize {
    u32::from_le_bytes(row[4 * c..4 * c + 4].try_into().expect("4")) as usize
}

/// Block `blk`'s checkpoint window: `(c, first)`, its checkpoint `c` and the window's first
/// block `c * CHECKPOINT_BLOCKS` (the block whose container the checkpoint locates).
#[inline(always)]
pub fn window(blk: usize) -> (usize, usize) {
    let c = blk / CHECKPOINT_BLOCKS;
    (c, c * CHECKPOINT_BLOCKS)
}

/// Where block `blk`'s container starts in a plane's payload, from the plane's row of
/// checkpoints and its codes: the block's checkpoint plus the sizes of the window's containers
/// before it. The one way every reader locates a container ([`Planes::offset`], the search
/// kernels). `AVX2`: the sum vectorized, for callers compiled with AVX2 (see [`code_sum`]).
#[inline(always)]
pub fn offset_in<const AVX2: bool>(row: &[u8], codes: &[u8], blk: usize) -> usize {
    let (c, first) = window(blk);
    checkpoint_in(row, c) + code_sum::<AVX2>(codes, first, blk)
}

/// The sum of `codes[from..to]` (container sizes), `to - from <= 64`. `AVX2` may be set only
/// where AVX2 is present (inside code compiled with it, or after detecting it): 64 bytes from
/// `from` are then summed with the bytes from `to` on masked off.
#[inline(always)]
pub fn code_sum<const AVX2: bool>(codes: &[u8], from: usize, to: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    if AVX2 {
        if let Some(w) = codes.get(from..from + 64) {
            // SAFETY: AVX2 is present (this function's contract); 64 bytes.
            return unsafe { code_sum_avx2(w.try_into().expect("64"), to - from) };
        }
    }
    codes[from..to].iter().map(|&x| x as usize).sum()
}

/// The sum of `w[..n]`, `n <= 64`: the bytes past `n` masked off, then two sums of absolute
/// differences.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn code_sum_avx2(w: &[u8; 64], n: usize) -> usize {
    use std::arch::x86_64::*;
    const IDX: [i8; 64] = {
        let mut a = [0i8; 64];
        let mut i = 0;
        while i < 64 {
            a[i] = i as i8;
            i += 1;
        }
        a
    };
    let nv = _mm256_set1_epi8(n as i8);
    let zero = _mm256_setzero_si256();
    let mut sum = zero;
    for h in 0..2 {
        // SAFETY: 32 * h + 32 <= 64 for both arrays.
        let (v, i) = unsafe {
            (
                _mm256_loadu_si256(w[32 * h..].as_ptr() as *const __m256i),
                _mm256_loadu_si256(IDX[32 * h..].as_ptr() as *const __m256i),
            )
        };
        // byte i kept when i < n
        let keep = _mm256_cmpgt_epi8(nv, i);
        sum = _mm256_add_epi64(sum, _mm256_sad_epu8(_mm256_and_si256(v, keep), zero));
    }
    let lo = _mm256_castsi256_si128(sum);
    let hi = _mm256_extracti128_si256(sum, 1);
    let s = _mm_add_epi64(lo, hi);
    (_mm_cvtsi128_si64(s) + _mm_extract_epi64(s, 1)) as usize
}

/// One container of a plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container<'a> {
    /// no molecule of the block has the bit
    Empty,
    /// the slots (in the block) that have it, ascending
    Sparse(&'a [u8]),
    /// the block's words
    Dense(&'a [u8]),
}

impl Container<'_> {
    /// The block's four words.
    #[inline]
    pub fn lane(&self) -> [u64; 4] {
        match *self {
            Container::Empty => [0; 4],
            Container::Sparse(s) => {
                let mut l = [0u64; 4];
                for &k in s {
                    l[(k >> 6) as usize] |= 1u64 << (k & 63);
                }
                l
            }
            Container::Dense(d) => {
                let w = |i: usize| u64::from_le_bytes(d[8 * i..8 * i + 8].try_into().expect("8"));
                [w(0), w(1), w(2), w(3)]
            }
        }
    }
}

/// The planes of a store, over its mapped files (checked: header, sizes, bucket structure).
#[derive(Debug, Clone, Copy)]
pub struct Planes<'a> {
    header: &'a PlanesHeader,
    codes: &'a [u8],
    checkpoints: &'a [u8],
    data: &'a [u8],
    order: crate::packed::Packed<'a>,
    parts: &'a [u8],
}

impl<'a> Planes<'a> {
    /// Checks the files' sizes against the header and the header's own structure. `dir`
    /// names the files in errors.
    pub fn new(
        dir: &Path,
        header: &'a PlanesHeader,
        codes: &'a [u8],
        checkpoints: &'a [u8],
        data: &'a [u8],
        order: &'a [u8],
        parts: &'a [u8],
    ) -> Result<Planes<'a>, StoreError> {
        let bad = |name: &str, reason: String| StoreError::Inconsistent {
            path: dir.join(name),
            reason,
        };
        if header.format != FORMAT_NAME || !(1..=FORMAT_VERSION).contains(&header.format_version) {
            return Err(bad(
                HEADER_FILE,
                format!(
                    "format {} version {} (this molsift reads {FORMAT_NAME} 1 to {FORMAT_VERSION})",
                    header.format, header.format_version
                ),
            ));
        }
        let (bits, blocks) = (header.bits as usize, header.blocks as usize);
        let mut expect_block = 0u64;
        let mut expect_rank = 0u64;
        for b in &header.buckets {
            if b.first_block != expect_block
                || b.first_rank != expect_rank
                || b.count == 0
                || b.blocks != b.count.div_ceil(BLOCK as u64)
            {
                return Err(bad(HEADER_FILE, "buckets do not add up".into()));
            }
            expect_block += b.blocks;
            expect_rank += b.count;
        }
        if expect_block != header.blocks
            || expect_rank != header.molecules
            || header.bit_counts.len() != bits
            || header.plane_base.len() != bits + 1
            || header.plane_xxh3.len() != bits
            || header.plane_base.windows(2).any(|w| w[0] > w[1])
        {
            return Err(bad(HEADER_FILE, "sizes do not add up".into()));
        }
        for (name, got, want) in [
            (CODES_FILE, codes.len(), bits * blocks),
            (
                CHECKPOINTS_FILE,
                checkpoints.len(),
                4 * bits * header.checkpoints(),
            ),
            (
                DATA_FILE,
                data.len(),
                header.plane_base[bits] as usize + DATA_SLACK,
            ),
            (
                PARTS_FILE,
                parts.len(),
                // version 1 (before the part masks) has none
                part_bytes(header.format_version) * bits * blocks,
            ),
        ] {
            if got != want {
                return Err(bad(
                    name,
                    format!("{got} bytes, expected {want} (truncated or damaged)"),
                ));
            }
        }
        let parsed = crate::packed::Packed::parse(order).map_err(|r| bad(ORDER_FILE, r))?;
        if parsed.len() as u64 != header.molecules {
            return Err(bad(ORDER_FILE, "does not list every molecule".into()));
        }
        Ok(Planes::checked_before(
            header,
            codes,
            checkpoints,
            data,
            order,
            parts,
        ))
    }

    /// The planes of files that [`Planes::new`] checked already (the same header and maps):
    /// none of its checks again, so that a search may take its view of the planes per query
    /// at no cost. Panics on an order that does not parse (it parsed when checked).
    pub fn checked_before(
        header: &'a PlanesHeader,
        codes: &'a [u8],
        checkpoints: &'a [u8],
        data: &'a [u8],
        order: &'a [u8],
        parts: &'a [u8],
    ) -> Planes<'a> {
        let order = crate::packed::Packed::parse(order).expect("the order parsed when checked");
        Planes {
            header,
            codes,
            checkpoints,
            data,
            order,
            parts,
        }
    }

    /// Plane `p`'s part masks of 32 slots, one byte per block ([`PARTS_FILE`]); empty for
    /// planes of format version 1, which have none.
    #[inline]
    pub fn parts(&self, p: usize) -> &'a [u8] {
        let all = self.plane_parts(p);
        &all[..all.len().min(self.header.blocks as usize)]
    }

    /// Plane `p`'s part masks of 16 slots, two bytes per block (little-endian; bit `r`: slots
    /// `16 r .. 16 r + 16`); empty for planes of format versions 1 and 2, which have none.
    #[inline]
    pub fn parts16(&self, p: usize) -> &'a [u8] {
        if part_bytes(self.header.format_version) < 3 {
            return &[];
        }
        &self.plane_parts(p)[self.header.blocks as usize..]
    }

    /// All of plane `p`'s part masks (what its checksum covers).
    #[inline]
    fn plane_parts(&self, p: usize) -> &'a [u8] {
        let n = part_bytes(self.header.format_version) * self.header.blocks as usize;
        &self.parts[p * n..(p + 1) * n]
    }

    /// The header.
    pub fn header(&self) -> &'a PlanesHeader {
        self.header
    }

    /// Plane `p`'s codes, one per block.
    #[inline]
    pub fn codes(&self, p: usize) -> &'a [u8] {
        let blocks = self.header.blocks as usize;
        &self.codes[p * blocks..(p + 1) * blocks]
    }

    /// Plane `p`'s payload.
    #[inline]
    pub fn data(&self, p: usize) -> &'a [u8] {
        &self.data[self.header.plane_base[p] as usize..self.header.plane_base[p + 1] as usize]
    }

    /// The whole payload (every plane, then [`DATA_SLACK`] zero bytes), and where plane `p`
    /// starts in it.
    #[inline]
    pub fn data_all(&self, p: usize) -> (&'a [u8], usize) {
        (self.data, self.header.plane_base[p] as usize)
    }

    /// Where block `c * CHECKPOINT_BLOCKS`'s container starts in plane `p`'s payload.
    #[inline]
    pub fn checkpoint(&self, p: usize, c: usize) -> usize {
        checkpoint_in(self.checkpoint_row(p), c)
    }

    /// Plane `p`'s checkpoints ([`Planes::checkpoint`]), four little-endian bytes each.
    #[inline]
    pub fn checkpoint_row(&self, p: usize) -> &'a [u8] {
        let n = 4 * self.header.checkpoints();
        &self.checkpoints[p * n..(p + 1) * n]
    }

    /// Where block `b`'s container starts in plane `p`'s payload.
    #[inline]
    pub fn offset(&self, p: usize, b: usize) -> usize {
        offset_in::<false>(self.checkpoint_row(p), self.codes(p), b)
    }

    /// Block `b`'s container of plane `p`, at payload offset `off` (from [`Planes::offset`]).
    #[inline]
    pub fn container_at(&self, p: usize, b: usize, off: usize) -> Container<'a> {
        let code = self.codes(p)[b];
        let data = self.data(p);
        match code {
            0 => Container::Empty,
            DENSE => Container::Dense(&data[off..off + 32]),
            c => Container::Sparse(&data[off..off + c as usize]),
        }
    }

    /// Block `b`'s container of plane `p`.
    pub fn container(&self, p: usize, b: usize) -> Container<'a> {
        self.container_at(p, b, self.offset(p, b))
    }

    /// The store position of sorted rank `r` (ranks skip padding: see [`PlaneBucket`]).
    #[inline]
    pub fn position(&self, rank: usize) -> u64 {
        self.order.get(rank)
    }

    /// Checks plane `p` against its checksum (and that its codes and checkpoints agree).
    pub fn verify_plane(&self, p: usize, dir: &Path) -> Result<(), StoreError> {
        let cps = self.header.checkpoints();
        let ck = &self.checkpoints[4 * p * cps..4 * (p + 1) * cps];
        let found = plane_digest(self.codes(p), ck, self.data(p), self.plane_parts(p));
        if found != self.header.plane_xxh3[p] {
            // the digest covers four files: name the one whose checksum the header refutes
            // (the header itself when none does)
            let name = self.damaged_file().unwrap_or(HEADER_FILE);
            return Err(StoreError::Corrupted {
                path: dir.join(name),
                expected: format!("plane {p}: {}", self.header.plane_xxh3[p]),
                found,
            });
        }
        Ok(())
    }

    /// The first of the files a plane's digest covers whose whole checksum differs from the
    /// header's (read only when a digest failed).
    fn damaged_file(&self) -> Option<&'static str> {
        [
            (CODES_FILE, self.codes),
            (CHECKPOINTS_FILE, self.checkpoints),
            (DATA_FILE, self.data),
            (PARTS_FILE, self.parts),
        ]
        .into_iter()
        .find(|(name, bytes)| {
            self.header.files.get(*name).is_some_and(|e| {
                e.xxh3 != crate::checksum::to_hex(xxhash_rust::xxh3::xxh3_64(bytes))
            })
        })
        .map(|(name, _)| name)
    }

    /// The fingerprints of the molecules in `slots` (places in the planes: block * [`BLOCK`] +
    /// index in the block), `words` per row, in the order given.
    pub fn decode_slots(&self, slots: &[usize], words: usize) -> Vec<u64> {
        let mut out = vec![0u64; slots.len() * words];
        let by_slot = by_block(slots);
        for p in 0..self.header.bits as usize {
            let (w, bit) = (p / 64, 1u64 << (p % 64));
            self.each_set(p, &by_slot, |k| out[k * words + w] |= bit);
        }
        out
    }

    /// Calls `set(k)` for each `(slot, k)` of `by_slot` (sorted by slot: [`by_block`]) whose
    /// bit is set in plane `p`: the molecules of one block share its container's lookup.
    fn each_set(&self, p: usize, by_slot: &[(usize, usize)], mut set: impl FnMut(usize)) {
        let codes = self.codes(p);
        let mut lane: Option<(usize, [u64; 4])> = None;
        for &(slot, k) in by_slot {
            let (blk, j) = (slot / BLOCK, slot % BLOCK);
            if codes.get(blk).copied().unwrap_or(0) == 0 {
                continue;
            }
            let words4 = match lane {
                Some((b, l)) if b == blk => l,
                _ => {
                    let l = self.container(p, blk).lane();
                    lane = Some((blk, l));
                    l
                }
            };
            if words4[j / 64] >> (j % 64) & 1 == 1 {
                set(k);
            }
        }
    }

    /// The Tanimoto of a query (`on`: its on-bits, each below the planes' bits) to the molecules
    /// in `slots`, in the order given: the query's planes alone are read (a slot's popcount is
    /// its bucket's), where [`decode_slots`](Planes::decode_slots) reads every plane. Two
    /// empty fingerprints score 1.
    pub fn tanimoto_slots(&self, slots: &[usize], on: &[u32]) -> Vec<f64> {
        let mut on: Vec<usize> = on.iter().map(|&b| b as usize).collect();
        on.sort_unstable();
        on.dedup();
        let mut common = vec![0u32; slots.len()];
        let by_slot = by_block(slots);
        for &p in on.iter().filter(|&&p| p < self.header.bits as usize) {
            self.each_set(p, &by_slot, |k| common[k] += 1);
        }
        let buckets = &self.header.buckets;
        let query = on.len() as u64;
        slots
            .iter()
            .zip(&common)
            .map(|(&slot, &c)| {
                let blk = (slot / BLOCK) as u64;
                let b = buckets.partition_point(|b| b.first_block + b.blocks <= blk);
                let pop = buckets.get(b).map_or(0, |b| u64::from(b.popcount));
                let union = query + pop - u64::from(c);
                if union == 0 {
                    1.0
                } else {
                    f64::from(c) / union as f64
                }
            })
            .collect()
    }

    /// Decodes every fingerprint into `out` (`molecules * words` words, zeroed by the caller),
    /// row `i` at `i * words`: the fingerprints in store order.
    pub fn decode_rows(&self, out: &mut [u64], words: usize) {
        let blocks = self.header.blocks as usize;
        // slot -> position through the buckets
        let mut slot_pos = vec![u64::MAX; blocks * BLOCK];
        for b in &self.header.buckets {
            for k in 0..b.count as usize {
                slot_pos[b.first_block as usize * BLOCK + k] =
                    self.position(b.first_rank as usize + k);
            }
        }
        for p in 0..self.header.bits as usize {
            let (w, bit) = (p / 64, 1u64 << (p % 64));
            let mut off = 0usize;
            let codes = self.codes(p);
            for (blk, &code) in codes.iter().enumerate() {
                if code != 0 {
                    let lane = self.container_at(p, blk, off).lane();
                    for (j, &word) in lane.iter().enumerate() {
                        let mut x = word;
                        while x != 0 {
                            let slot = blk * BLOCK + j * 64 + x.trailing_zeros() as usize;
                            x &= x - 1;
                            let pos = slot_pos[slot];
                            if pos != u64::MAX {
                                out[pos as usize * words + w] |= bit;
                            }
                        }
                    }
                }
                off += code as usize;
            }
        }
    }
}

/// Bits of the similarity key (the most frequent fingerprint bits of the store).
const KEY_BITS: usize = 128;

/// Sorts the molecules of each bucket (`order`, rank -> store position) for similarity: by the
/// reflected Gray-code rank of their [`KEY_BITS`] most frequent bits (the most frequent
/// first), ties in store order. Gray order puts molecules that differ in one of those bits side
/// by side, so molecules sharing substructures share blocks: a plane's rare bits fall into few
/// containers (smaller planes), and the blocks a query cannot reach hold fewer of its planes
/// (more of them settled by the codes alone). Measured on MOSES: 3 to 4 times fewer containers
/// read at t = 0.7 than in store order (BENCHMARKS.md).
fn similarity_order<R>(
    order: &mut [u64],
    buckets: &[PlaneBucket],
    bit_counts: &[u64],
    words: usize,
    row: &R,
) where
    R: Fn(usize, &mut [u64]),
{
    let mut ranked: Vec<usize> = (0..bit_counts.len()).collect();
    ranked.sort_by_key(|&b| (std::cmp::Reverse(bit_counts[b]), b));
    ranked.truncate(KEY_BITS);
    let mut buf = vec![0u64; words];
    for b in buckets {
        let range = &mut order[b.first_rank as usize..(b.first_rank + b.count) as usize];
        let mut keyed: Vec<(u128, u64)> = range
            .iter()
            .map(|&pos| {
                buf.iter_mut().for_each(|w| *w = 0);
                row(pos as usize, &mut buf);
                let mut key = 0u128;
                for (r, &bit) in ranked.iter().enumerate() {
                    key |= u128::from(buf[bit / 64] >> (bit % 64) & 1) << (KEY_BITS - 1 - r);
                }
                (gray_rank(key), pos)
            })
            .collect();
        keyed.sort_unstable();
        for (slot, (_, pos)) in range.iter_mut().zip(keyed) {
            *slot = pos;
        }
    }
}

/// The rank of `g` in the reflected binary Gray code (each bit the XOR of those above it).
fn gray_rank(g: u128) -> u128 {
    let mut x = g;
    let mut shift = 1;
    while shift < 128 {
        x ^= x >> shift;
        shift <<= 1;
    }
    x
}

/// `(slot, place in slots)` pairs sorted by slot (so by block).
fn by_block(slots: &[usize]) -> Vec<(usize, usize)> {
    let mut by_slot: Vec<(usize, usize)> = slots.iter().copied().zip(0..).collect();
    by_slot.sort_unstable();
    by_slot
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(n: usize, words: usize) -> Vec<u64> {
        let mut x = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        (0..n * words)
            .map(|i| {
                // a few dense words, the rest sparse
                let r = next();
                if i % words == 0 {
                    r
                } else {
                    r & next() & next() & next()
                }
            })
            .collect()
    }

    fn build(n: usize, bits: u32, budget: usize) -> (tempfile::TempDir, PlanesHeader, Vec<u64>) {
        let words = bits.div_ceil(64) as usize;
        let r = rows(n, words);
        let dir = tempfile::tempdir().unwrap();
        let pop = |i: usize| {
            r[i * words..(i + 1) * words]
                .iter()
                .map(|w| w.count_ones())
                .sum()
        };
        let h = write_planes(
            dir.path(),
            bits,
            n,
            pop,
            |i, out| out.copy_from_slice(&r[i * words..(i + 1) * words]),
            budget,
        )
        .unwrap();
        (dir, h, r)
    }

    /// Codes, checkpoints, payload, order, parts.
    type Files = (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>);

    /// The written files of planes in `dir`.
    fn files(dir: &Path) -> Files {
        let read = |n: &str| std::fs::read(dir.join(n)).unwrap();
        (
            read(CODES_FILE),
            read(CHECKPOINTS_FILE),
            read(DATA_FILE),
            read(ORDER_FILE),
            read(PARTS_FILE),
        )
    }

    fn open_and_check(dir: &Path, h: &PlanesHeader, r: &[u64], bits: u32) {
        let words = bits.div_ceil(64) as usize;
        let (c, k, d, o, pm) = files(dir);
        let planes = Planes::new(dir, h, &c, &k, &d, &o, &pm).unwrap();
        let mut out = vec![0u64; h.molecules as usize * words];
        planes.decode_rows(&mut out, words);
        assert_eq!(out, r);
        for p in 0..bits as usize {
            planes.verify_plane(p, dir).unwrap();
        }
        // every container agrees with the rows, through both ways of finding it
        for b in &h.buckets {
            for blk in b.first_block..b.first_block + b.blocks {
                for p in (0..bits as usize).step_by(7) {
                    let lane = planes.container(p, blk as usize).lane();
                    // the part masks are the lane's, 32 and 16 slots per bit
                    assert_eq!(planes.parts(p)[blk as usize], part_mask(&lane));
                    let b16 = &planes.parts16(p)[2 * blk as usize..][..2];
                    assert_eq!(u16::from_le_bytes([b16[0], b16[1]]), part_mask16(&lane));
                    for s in 0..BLOCK {
                        let k = (blk - b.first_block) as usize * BLOCK + s;
                        let has = lane[s / 64] >> (s % 64) & 1 == 1;
                        let want = k < b.count as usize && {
                            let pos = planes.position(b.first_rank as usize + k) as usize;
                            r[pos * words + p / 64] >> (p % 64) & 1 == 1
                        };
                        assert_eq!(has, want);
                    }
                }
            }
        }
        if !c.is_empty() {
            assert!(Planes::new(dir, h, &c[1..], &k, &d, &o, &pm).is_err());
            assert!(Planes::new(dir, h, &c, &k[4..], &d, &o, &pm).is_err());
            assert!(Planes::new(dir, h, &c, &k, &d, &o, &pm[1..]).is_err());
        }
        if !d.is_empty() {
            assert!(Planes::new(dir, h, &c, &k, &d[..d.len() - 1], &o, &pm).is_err());
        }
    }

    #[test]
    fn planes_round_trip_for_any_budget() {
        let (dir, h, r) = build(3000, 256, usize::MAX);
        open_and_check(dir.path(), &h, &r, 256);
        let codes = std::fs::read(dir.path().join(CODES_FILE)).unwrap();
        for budget in [0, 1000] {
            let (d2, h2, _) = build(3000, 256, budget);
            assert_eq!(h2, h);
            assert_eq!(std::fs::read(d2.path().join(CODES_FILE)).unwrap(), codes);
            assert_eq!(
                std::fs::read(d2.path().join(DATA_FILE)).unwrap(),
                std::fs::read(dir.path().join(DATA_FILE)).unwrap()
            );
        }
        let (dir, h, r) = build(1, 64, usize::MAX);
        open_and_check(dir.path(), &h, &r, 64);
        let (dir, h, r) = build(0, 128, usize::MAX);
        open_and_check(dir.path(), &h, &r, 128);
    }

    #[test]
    fn part_masks_cover_their_slots() {
        for s in 0..BLOCK {
            let mut lane = [0u64; 4];
            lane[s / 64] |= 1 << (s % 64);
            assert_eq!(part_mask(&lane), 1 << (s / PART), "slot {s}");
            assert_eq!(part_mask16(&lane), 1 << (s / PART16), "slot {s}");
        }
        assert_eq!(part_mask(&[!0; 4]), 0xFF);
        assert_eq!(part_mask16(&[!0; 4]), 0xFFFF);
    }

    /// Planes rewritten as format 1 (no part masks) and 2 (masks of 32 slots only), as stores
    /// written by older versions hold them, still open, decode and verify; each format's
    /// header refuses the other formats' masks.
    #[test]
    fn planes_of_formats_1_and_2_still_open() {
        let (dir3, h3, r) = build(3000, 256, usize::MAX);
        let (c, k, d, o, pm) = files(dir3.path());
        assert_eq!(pm.len(), 3 * 256 * h3.blocks as usize);
        // the masks are part of each plane's checksum: a flipped mask byte is found, in the
        // masks of 32 slots and in those of 16
        for at in [5, h3.blocks as usize + 5] {
            let mut bad = pm.clone();
            bad[at] ^= 1;
            let planes = Planes::new(dir3.path(), &h3, &c, &k, &d, &o, &bad).unwrap();
            assert!(planes.verify_plane(0, dir3.path()).is_err(), "byte {at}");
        }
        let mut seen = Vec::new();
        for to in [2, 1] {
            let (dir, _, _) = build(3000, 256, usize::MAX);
            let h = strip_parts(dir.path(), to).unwrap();
            assert_eq!(h.format_version, to);
            assert!(
                strip_parts(dir.path(), 1).is_err(),
                "only format 3 is rewritten"
            );
            let pm_old = std::fs::read(dir.path().join(PARTS_FILE)).unwrap_or_default();
            assert_eq!(pm_old.len(), part_bytes(to) * 256 * h.blocks as usize);
            assert_eq!(dir.path().join(PARTS_FILE).exists(), to == 2);
            // another format's masks are refused
            assert!(Planes::new(dir.path(), &h, &c, &k, &d, &o, &pm).is_err());
            assert!(Planes::new(dir.path(), &h3, &c, &k, &d, &o, &pm_old).is_err());
            let planes = Planes::new(dir.path(), &h, &c, &k, &d, &o, &pm_old).unwrap();
            assert!(planes.parts16(0).is_empty());
            assert_eq!(planes.parts(0).is_empty(), to == 1);
            let p3 = Planes::new(dir3.path(), &h3, &c, &k, &d, &o, &pm).unwrap();
            for p in 0..256 {
                planes.verify_plane(p, dir.path()).unwrap();
                if to == 2 {
                    assert_eq!(planes.parts(p), p3.parts(p));
                }
            }
            let words = 4;
            let mut out = vec![0u64; h.molecules as usize * words];
            planes.decode_rows(&mut out, words);
            assert_eq!(out, r);
            seen.push(h);
        }
        assert_ne!(seen[0].plane_xxh3, seen[1].plane_xxh3);
    }

    #[test]
    fn a_containers_offset_is_the_same_summed_with_avx2_or_not() {
        // codes of every size, windows cut anywhere (the last window shorter than 64 codes)
        let codes: Vec<u8> = (0..300u32)
            .map(|i| (i.wrapping_mul(37) % 256) as u8)
            .collect();
        let mut row = Vec::new();
        for c in 0..codes.len().div_ceil(CHECKPOINT_BLOCKS) {
            let at: usize = codes[..c * CHECKPOINT_BLOCKS]
                .iter()
                .map(|&x| x as usize)
                .sum();
            row.extend_from_slice(&(at as u32).to_le_bytes());
        }
        #[cfg(target_arch = "x86_64")]
        let avx2 = std::is_x86_feature_detected!("avx2");
        #[cfg(not(target_arch = "x86_64"))]
        let avx2 = false;
        for blk in 0..codes.len() {
            let want: usize = codes[..blk].iter().map(|&x| x as usize).sum();
            assert_eq!(offset_in::<false>(&row, &codes, blk), want, "block {blk}");
            if avx2 {
                assert_eq!(
                    offset_in::<true>(&row, &codes, blk),
                    want,
                    "block {blk}, AVX2"
                );
            }
        }
    }

    #[test]
    fn gray_rank_inverts_the_gray_code() {
        for r in 0u128..1000 {
            assert_eq!(gray_rank(r ^ (r >> 1)), r);
        }
        let big = u128::MAX / 3;
        assert_eq!(gray_rank(big ^ (big >> 1)), big);
    }

    #[test]
    fn buckets_are_sorted_for_similarity() {
        // two families of the same popcount, interleaved in store order: each fills its own
        // blocks, so each family bit has one dense container and no sparse ones
        let n = 2 * BLOCK;
        let family = |i: usize| -> u64 {
            if i % 2 == 0 {
                0x3ff
            } else {
                0x3ff << 20
            }
        };
        let dir = tempfile::tempdir().unwrap();
        let h = write_planes(dir.path(), 64, n, |_| 10, |i, out| out[0] = family(i), 0).unwrap();
        let (c, k, d, o, pm) = files(dir.path());
        let planes = Planes::new(dir.path(), &h, &c, &k, &d, &o, &pm).unwrap();
        for blk in 0..2 {
            let first = family(planes.position(blk * BLOCK) as usize);
            for s in 0..BLOCK {
                assert_eq!(family(planes.position(blk * BLOCK + s) as usize), first);
            }
        }
        for p in [0, 9, 20, 29] {
            let codes = planes.codes(p);
            assert_eq!(codes.iter().filter(|&&x| x == DENSE).count(), 1);
            assert_eq!(codes.iter().filter(|&&x| x != 0 && x != DENSE).count(), 0);
        }
        let mut positions: Vec<u64> = (0..n).map(|r| planes.position(r)).collect();
        positions.sort_unstable();
        assert_eq!(positions, (0..n as u64).collect::<Vec<_>>());
    }
}
