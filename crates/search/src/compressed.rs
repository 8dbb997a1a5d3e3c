//! Search over the compressed bit planes of store version 2 (`molsift_store::planes`): the
//! same buckets, bars, gate and adders as the dense column index, with two differences.
//!
//! 1. **Bounds first.** Each run of 64 blocks starts from what the query planes say without a
//!    payload byte. Their one-byte codes (a container's size: 0 when no molecule of the block
//!    has the bit): a molecule can share at most as many bits with the query as the query has
//!    non-empty planes in its block, so blocks with fewer non-empty planes than the bar are
//!    settled. Planes of format 2 and 3 also have part masks (a bit per 32 slots: any of them
//!    has the bit), counted for the whole run as bit-sliced counters (`part_bound`): a block
//!    none of whose parts has as many non-empty query planes as the bar needs is settled. That
//!    test is the sharper, so it comes first, and a run where no block passes it (most runs of
//!    a t = 0.7 search) is settled without reading its codes; the next run read finds its
//!    offsets from the checkpoints. (Format 3's masks of 16 slots serve top-k: `bestfirst`.)
//! 2. **Counting.** Queries of fewer than 256 on-bits (all of MOSES's) add each non-empty
//!    container of the surviving blocks, plane by plane (a plane's containers for a run are
//!    contiguous), to per-slot byte counters (`scan_counts`). Denser queries decode the
//!    containers into dense words in a scratch buffer, which the adders then read exactly as
//!    they read the dense planes: phase 1 the rarest planes up to the gate for every surviving
//!    block, phase 2 the rest for the blocks still alive (`scan_runs`).

mod bestfirst;

pub(crate) use bestfirst::{
    same_parts, top_k as top_k_best_first, top_k_many, usable as best_first_usable, Work,
};

use std::cell::RefCell;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use memmap2::Mmap;
use molsift_iostats::CountedFile;
use molsift_store::planes::{self, Planes, PlanesHeader, BLOCK, CHECKPOINT_BLOCKS, DENSE};

use crate::adders::{
    add_planes, count_at, csa8, ge_mask, mask_and, prefix_mask, ripple, Gate, Lane, ZERO,
};
use crate::layout::{Bucket, ColumnIndex, Words};
use crate::scan::{phase1_planes, Read, Sink};
use crate::threshold::UNREACHABLE;
use crate::SearchError;

/// Blocks per run.
const RUN: usize = 64;
/// Planes ahead whose run payload is prefetched.
const AHEAD: usize = 4;
/// Runs ahead whose codes and part masks are prefetched.
const RUNS_AHEAD: usize = 2;

/// The mapped files of compressed planes and what this process has checked of them.
#[derive(Debug)]
pub(crate) struct Compressed {
    pub(crate) dir: PathBuf,
    pub(crate) header: PlanesHeader,
    codes: Option<Mmap>,
    checkpoints: Option<Mmap>,
    data: Option<Mmap>,
    order: Option<Mmap>,
    plane_checked: Vec<AtomicBool>,
    order_checked: OnceLock<Result<(), String>>,
    parts: Option<Mmap>,
}

/// The part bound's switch (on unless `MOLSIFT_NO_PARTS` is set: for measurements).
pub(crate) fn parts_enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("MOLSIFT_NO_PARTS").is_none())
}

/// The switch of the part masks of 16 slots (on unless `MOLSIFT_NO_PARTS16` is set: for
/// measurements; best-first top-k then orders blocks by the masks of 32 slots, as on planes of
/// format 2).
pub(crate) fn parts16_enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("MOLSIFT_NO_PARTS16").is_none())
}

/// The best-first top-k's switch (on unless `MOLSIFT_NO_BEST_FIRST` is set: for
/// measurements; top-k then scans buckets in order as on planes without part masks).
pub(crate) fn best_first_enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("MOLSIFT_NO_BEST_FIRST").is_none())
}

fn bytes(m: &Option<Mmap>) -> &[u8] {
    m.as_deref().unwrap_or(&[])
}

impl Compressed {
    /// The planes (their structure was checked at open).
    pub(crate) fn planes(&self) -> Planes<'_> {
        // checked once, at open (`open_planes`): taken per query, per shard, at no cost
        Planes::checked_before(
            &self.header,
            bytes(&self.codes),
            bytes(&self.checkpoints),
            bytes(&self.data),
            bytes(&self.order),
            bytes(&self.parts),
        )
    }
}

fn map(file: &CountedFile, path: &Path) -> Result<Option<Mmap>, SearchError> {
    let len = file.metadata().map_err(|e| SearchError::io(path, e))?.len();
    if len == 0 {
        return Ok(None);
    }
    // SAFETY: store files are read-only once written; the sizes are checked against the
    // header before any byte is trusted.
    unsafe { file.map() }
        .map(Some)
        .map_err(|e| SearchError::io(path, e))
}

impl ColumnIndex {
    /// Opens compressed planes from their files, given by `file(name)` (the store's own
    /// descriptors, one generation), in the directory `dir` (for messages).
    pub fn open_planes<'f>(
        dir: &Path,
        file: impl Fn(&str) -> Result<&'f CountedFile, SearchError>,
    ) -> Result<ColumnIndex, SearchError> {
        let header_path = dir.join(planes::HEADER_FILE);
        let text = {
            let f = file(planes::HEADER_FILE)?;
            let len = f
                .metadata()
                .map_err(|e| SearchError::io(&header_path, e))?
                .len();
            let mut t = vec![0u8; len as usize];
            f.read_exact_at(&mut t, 0)
                .map_err(|e| SearchError::io(&header_path, e))?;
            t
        };
        let header: PlanesHeader =
            serde_json::from_slice(&text).map_err(|e| SearchError::BadHeader {
                path: header_path.clone(),
                reason: e.to_string(),
            })?;
        let m = |name: &str| map(file(name)?, &dir.join(name));
        let c = Compressed {
            dir: dir.to_path_buf(),
            plane_checked: (0..header.bits).map(|_| AtomicBool::new(false)).collect(),
            // planes of format version 1 have no part masks
            parts: if header.format_version >= 2 {
                m(planes::PARTS_FILE)?
            } else {
                None
            },
            order_checked: OnceLock::new(),
            codes: m(planes::CODES_FILE)?,
            checkpoints: m(planes::CHECKPOINTS_FILE)?,
            data: m(planes::DATA_FILE)?,
            order: m(planes::ORDER_FILE)?,
            header,
        };
        // the structure and every size, once
        Planes::new(
            &c.dir,
            &c.header,
            bytes(&c.codes),
            bytes(&c.checkpoints),
            bytes(&c.data),
            bytes(&c.order),
            bytes(&c.parts),
        )?;
        crate::layout::check_bits(c.header.bits)?;
        let h = &c.header;
        Ok(ColumnIndex {
            bits: h.bits,
            n: h.molecules,
            blocks: h.blocks,
            buckets: h
                .buckets
                .iter()
                .map(|b| Bucket {
                    popcount: b.popcount,
                    first_block: b.first_block,
                    blocks: b.blocks,
                    count: b.count,
                })
                .collect(),
            planes: Words::Empty,
            order: Words::Empty,
            bit_counts: h.bit_counts.clone(),
            origin: None,
            advise: false,
            compressed: Some(Box::new(c)),
        })
    }

    /// Checks, once per process, the planes in `bits` and the order of compressed planes.
    pub(crate) fn check_compressed(&self, c: &Compressed, bits: &[u32]) -> Result<(), SearchError> {
        let planes = c.planes();
        for &b in bits {
            let b = b as usize;
            if !c.plane_checked[b].load(Ordering::Relaxed) {
                planes.verify_plane(b, &c.dir)?;
                c.plane_checked[b].store(true, Ordering::Relaxed);
            }
        }
        c.order_checked
            .get_or_init(|| {
                let want = &c.header.files[planes::ORDER_FILE].xxh3;
                let found = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(bytes(&c.order)));
                (&found == want)
                    .then_some(())
                    .ok_or_else(|| format!("checksum {found} does not match the header's {want}"))
            })
            .clone()
            .map_err(|reason| SearchError::Corrupted {
                path: c.dir.join(planes::ORDER_FILE),
                reason,
            })
    }
}

/// Store position of sorted slots, for dense or compressed indexes.
#[derive(Clone, Copy)]
pub(crate) enum SlotOrder<'a> {
    /// the dense index's order (`u64::MAX` for padding)
    Dense(&'a [u64]),
    /// compressed planes: bucket by slot, then the packed order by rank
    Packed {
        buckets: &'a [molsift_store::planes::PlaneBucket],
        planes: Planes<'a>,
    },
}

impl SlotOrder<'_> {
    #[inline]
    pub(crate) fn position(&self, slot: usize) -> u64 {
        match self {
            SlotOrder::Dense(o) => o[slot],
            SlotOrder::Packed { buckets, planes } => {
                let at = buckets.partition_point(|b| b.first_block as usize * BLOCK <= slot) - 1;
                let b = &buckets[at];
                let k = slot - b.first_block as usize * BLOCK;
                if k as u64 >= b.count {
                    return u64::MAX; // padding
                }
                planes.position(b.first_rank as usize + k)
            }
        }
    }
}

/// One query plane of compressed planes.
#[derive(Clone, Copy)]
pub(crate) struct CPlane<'a> {
    codes: &'a [u8],
    /// part masks, one byte per block (empty when the part bound is off)
    pub(crate) parts: &'a [u8],
    /// part masks of 16 slots, two bytes per block (empty for planes of format 1 and 2, or
    /// when the part bound is off)
    pub(crate) parts16: &'a [u8],
    data: &'a [u8],
    /// the whole payload (with its slack) and where this plane starts in it
    all: &'a [u8],
    base: usize,
    /// the plane's checkpoints (`Planes::checkpoint_row`)
    cps: &'a [u8],
}

impl<'a> CPlane<'a> {
    pub(crate) fn new(planes: &Planes<'a>, p: usize) -> CPlane<'a> {
        let (all, base) = planes.data_all(p);
        CPlane {
            parts: if parts_enabled() {
                planes.parts(p)
            } else {
                &[]
            },
            parts16: if parts_enabled() && parts16_enabled() {
                planes.parts16(p)
            } else {
                &[]
            },
            codes: planes.codes(p),
            data: planes.data(p),
            all,
            base,
            cps: planes.checkpoint_row(p),
        }
    }

    /// Where block `blk`'s container starts in the plane's payload: its checkpoint plus the
    /// codes since (`AVX2`: inside a kernel compiled with AVX2, the sum vectorized).
    #[inline(always)]
    pub(crate) fn offset<const AVX2: bool>(&self, blk: usize) -> usize {
        planes::offset_in::<AVX2>(self.cps, self.codes, blk)
    }

    /// Asks for what [`CPlane::offset`] of block `blk` reads: the block's checkpoint and the
    /// codes of its checkpoint window (one or two cache lines).
    #[inline(always)]
    pub(crate) fn prefetch_offset(&self, blk: usize) {
        let (c, from) = planes::window(blk);
        if let Some(w) = self.codes.get(from..from + CHECKPOINT_BLOCKS) {
            crate::adders::prefetch(w.as_ptr() as *const u64);
            crate::adders::prefetch(w[CHECKPOINT_BLOCKS - 1..].as_ptr() as *const u64);
        }
        if let Some(x) = self.cps.get(4 * c..) {
            crate::adders::prefetch(x.as_ptr() as *const u64);
        }
    }

    /// The plane's codes, one per block.
    pub(crate) fn codes(&self) -> &'a [u8] {
        self.codes
    }

    /// Asks for the payload of this plane's containers of the blocks in `touched` (bit `k`:
    /// block `blk + k`) of a run whose first container is at payload offset `off`: the lines
    /// from the first such container to the end of the last.
    #[inline(always)]
    fn prefetch_live<const AVX2: bool>(&self, blk: usize, off: u32, touched: u64) {
        if touched == 0 {
            return;
        }
        let first = touched.trailing_zeros() as usize;
        let last = 63 - touched.leading_zeros() as usize;
        let from = off as usize + planes::code_sum::<AVX2>(self.codes, blk, blk + first);
        let to = off as usize + planes::code_sum::<AVX2>(self.codes, blk, blk + last + 1);
        let mut at = (self.base + from) & !63;
        while at < self.base + to {
            crate::adders::prefetch(self.all[at.min(self.all.len() - 1)..].as_ptr() as *const u64);
            at += 64;
        }
    }

    /// Adds this plane's container of block `blk` (at payload offset `off`) to the byte
    /// counters of the block's slots, and returns the largest count of the block after it,
    /// given `max`, the largest before. Sparse containers are added four slots at a time
    /// without a data-dependent branch inside: past the container's end the four increments
    /// add 0 (to whatever slot the next bytes name), which leaves counts and maximum exact.
    #[inline(always)]
    fn add_counts(&self, blk: usize, off: usize, cnt: &mut [u8; CNT], max: u8) -> u8 {
        let code = self.codes[blk];
        let at = self.base + off;
        // the payload has DATA_SLACK readable bytes after its end: 32-byte windows are in bounds
        let win: &[u8; 32] = self.all[at..at + 32].try_into().expect("32 bytes");
        if code == DENSE {
            add_dense(win, cnt);
            return max_count(cnt);
        }
        let c = code as usize;
        let mut m = max;
        // the first eight always (most containers a query reads hold no more), then four at
        // a time: the loop's exit is the branch that mispredicts
        for (j, &k) in win[..8].iter().enumerate() {
            let k = k as usize;
            let v = cnt[k].wrapping_add(u8::from(j < c));
            cnt[k] = v;
            m = m.max(v);
        }
        let mut i = 8;
        while i < c {
            for j in i..i + 4 {
                let k = win[j & 31] as usize;
                let v = cnt[k].wrapping_add(u8::from(j < c));
                cnt[k] = v;
                m = m.max(v);
            }
            i += 4;
        }
        m
    }

    #[inline]
    fn lane(&self, blk: usize, off: usize) -> Lane {
        match self.codes[blk] {
            0 => ZERO,
            DENSE => {
                let d = &self.data[off..off + 32];
                let w = |i: usize| u64::from_le_bytes(d[8 * i..8 * i + 8].try_into().expect("8"));
                [w(0), w(1), w(2), w(3)]
            }
            c => {
                let mut l = ZERO;
                for &k in &self.data[off..off + c as usize] {
                    l[(k >> 6) as usize] |= 1u64 << (k & 63);
                }
                l
            }
        }
    }
}

#[cfg(test)]
impl<'a> CPlane<'a> {
    /// A plane of the given part masks, codes and payload (for kernel tests).
    pub(crate) fn for_test(
        parts: &'a [u8],
        parts16: &'a [u8],
        codes: &'a [u8],
        data: &'a [u8],
    ) -> CPlane<'a> {
        CPlane {
            codes,
            parts,
            parts16,
            data,
            all: data,
            base: 0,
            cps: &[],
        }
    }
}

/// What the codes of one plane say about a run of `len` blocks: which blocks have a
/// non-empty container (bit mask) and the payload bytes of the run; adds 1 to `nonempty[k]`
/// for each non-empty container.
#[inline(always)]
fn run_codes(codes: &[u8], len: usize, nonempty: &mut [u8; RUN]) -> (u64, u32) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        if len == RUN {
            // SAFETY: AVX2 is present and `codes` holds RUN bytes.
            return unsafe {
                run_codes_avx2(codes[..RUN].try_into().expect("RUN codes"), nonempty)
            };
        }
        // a bucket's last run: its codes, then empty ones
        let mut padded = [0u8; RUN];
        padded[..len].copy_from_slice(&codes[..len]);
        // SAFETY: AVX2 is present.
        return unsafe { run_codes_avx2(&padded, nonempty) };
    }
    let (mut full, mut sum) = (0u64, 0u32);
    for (k, &c) in codes[..len].iter().enumerate() {
        full |= u64::from(c != 0) << k;
        sum += u32::from(c);
        nonempty[k] += u8::from(c != 0);
    }
    (full, sum)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn run_codes_avx2(codes: &[u8; RUN], nonempty: &mut [u8; RUN]) -> (u64, u32) {
    use std::arch::x86_64::*;
    let zero = _mm256_setzero_si256();
    let one = _mm256_set1_epi8(1);
    let (mut full, mut sum) = (0u64, 0u32);
    for h in 0..2 {
        // SAFETY: 32 * h + 32 <= RUN for both arrays.
        unsafe {
            let v = _mm256_loadu_si256(codes[32 * h..].as_ptr() as *const __m256i);
            let empty = _mm256_cmpeq_epi8(v, zero);
            full |= u64::from(!(_mm256_movemask_epi8(empty) as u32)) << (32 * h);
            let z = nonempty[32 * h..].as_mut_ptr() as *mut __m256i;
            _mm256_storeu_si256(
                z,
                _mm256_add_epi8(_mm256_loadu_si256(z), _mm256_andnot_si256(empty, one)),
            );
            let sad = _mm256_sad_epu8(v, zero);
            let mut parts = [0u64; 4];
            _mm256_storeu_si256(parts.as_mut_ptr() as *mut __m256i, sad);
            sum += parts.iter().sum::<u64>() as u32;
        }
    }
    (full, sum)
}

/// The blocks (bit `k`: block `blk + k`, `k < len <= RUN`) that have a part of 32 slots in
/// which at least `m` of the query planes `cp` are non-empty (their part masks): a molecule
/// cannot share more bits with the query than its part has non-empty planes. The run's 64 x 8
/// part bits are two lanes, counted with the adders' ripple and compared with their `ge_mask`
/// (256-bit instructions inside [`scan_counts_avx2`], portable otherwise).
#[inline(always)]
fn part_bound(cp: &[CPlane<'_>], blk: usize, len: usize, m: u32) -> u64 {
    if m > 255 || cp.len() < m as usize {
        return 0;
    }
    if cp.len() < 64 {
        part_bound_sliced::<6>(cp, blk, len, m)
    } else {
        part_bound_sliced::<8>(cp, blk, len, m)
    }
}

/// Bit `k` set for each non-zero byte `k` of `x`: the high bit of each byte says whether it is
/// non-zero, and one multiplication gathers the eight high bits.
#[inline(always)]
fn nonzero_bytes(x: u64) -> u64 {
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    let high = (((x & LOW7) + LOW7) | x) & !LOW7;
    (high >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
}

/// [`part_bound`] with `L`-bit counters (`cp.len() < 2^L`).
#[inline(always)]
fn part_bound_sliced<const L: usize>(cp: &[CPlane<'_>], blk: usize, len: usize, m: u32) -> u64 {
    // half h: blocks 32h .. 32h + 32, a byte each (bit r: part r), counted one half at a time
    // so that the L slices stay in registers
    let mut out = 0u64;
    for h in 0..2 {
        let valid = len.saturating_sub(32 * h).min(32);
        if valid == 0 {
            break;
        }
        let s = part_slices::<L>(cp.len(), |j| cp[j].parts, blk + 32 * h, valid);
        for (i, &word) in ge_mask(&s, m).iter().enumerate() {
            out |= nonzero_bytes(word) << (32 * h + 8 * i);
        }
    }
    if len < RUN {
        out &= (1u64 << len) - 1;
    }
    out
}

/// How many of `planes` query planes (part masks `parts(j)`) are non-empty in each part of the
/// 32 blocks from `at`, bit-sliced: bit `8 * i + r` of slice `k` is bit `k` of the count for
/// part `r` of block `at + i`. Only the first `valid` blocks count (the bytes after them, the
/// next bucket's or past the plane's end, are masked off); `planes < 2^L`, `L >= 3`. Eight
/// planes at a time through the adders' carry-save tree.
#[inline(always)]
pub(crate) fn part_slices<'a, const L: usize>(
    planes: usize,
    parts: impl Fn(usize) -> &'a [u8],
    at: usize,
    valid: usize,
) -> [Lane; L] {
    let keep = |i: usize| match valid.saturating_sub(8 * i) {
        n if n >= 8 => !0u64,
        n => (1u64 << (8 * n)) - 1,
    };
    let keep = [keep(0), keep(1), keep(2), keep(3)];
    let lane = |j: usize| -> Lane {
        let p = parts(j);
        if at + 32 <= p.len() {
            let b: &[u8; 32] = p[at..at + 32].try_into().expect("32");
            let w =
                |i: usize| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8")) & keep[i];
            [w(0), w(1), w(2), w(3)]
        } else {
            // the plane's last blocks
            let mut b = [0u8; 32];
            b[..valid].copy_from_slice(&p[at..at + valid]);
            let w = |i: usize| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8"));
            [w(0), w(1), w(2), w(3)]
        }
    };
    let mut s = [ZERO; L];
    let mut low = [ZERO; 3];
    let mut j = 0;
    while j + 8 <= planes {
        let (l, eights) = csa8(low, |i| lane(j + i));
        low = l;
        ripple(&mut s, 3, eights);
        j += 8;
    }
    s[..3].copy_from_slice(&low);
    for j in j..planes {
        ripple(&mut s, 0, lane(j));
    }
    s
}

/// Byte counters per block: one per slot.
const CNT: usize = 256;

/// Adds a dense container (32 bytes of bits) to the byte counters.
#[inline(always)]
fn add_dense(win: &[u8; 32], cnt: &mut [u8; CNT]) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present.
        unsafe { add_dense_avx2(win, cnt) };
        return;
    }
    for (byte, &bits) in win.iter().enumerate() {
        let mut x = bits;
        while x != 0 {
            let k = byte * 8 + x.trailing_zeros() as usize;
            cnt[k] = cnt[k].wrapping_add(1);
            x &= x - 1;
        }
    }
}

/// [`add_dense`] with AVX2: each 32 bits of the container become 32 bytes of 0 or 0xFF
/// (shuffle each byte to 8 places, test one bit in each), subtracted from the counters.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn add_dense_avx2(win: &[u8; 32], cnt: &mut [u8; CNT]) {
    use std::arch::x86_64::*;
    let spread = _mm256_setr_epi8(
        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3,
        3, 3,
    );
    let bit = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
    for c in 0..8 {
        let word = u32::from_le_bytes(win[4 * c..4 * c + 4].try_into().expect("4"));
        let x = _mm256_shuffle_epi8(_mm256_set1_epi32(word as i32), spread);
        let set = _mm256_cmpeq_epi8(_mm256_and_si256(x, bit), bit);
        let p = cnt[32 * c..].as_mut_ptr() as *mut __m256i;
        // SAFETY: 32 * c + 32 <= 256 = CNT.
        unsafe { _mm256_storeu_si256(p, _mm256_sub_epi8(_mm256_loadu_si256(p), set)) };
    }
}

/// Bit `s` set for each slot `s` whose count is at least `m`.
#[inline(always)]
fn ge_mask_counts(cnt: &[u8; CNT], m: u32) -> Lane {
    if m > 255 {
        return ZERO;
    }
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present.
        return unsafe { ge_mask_avx2(cnt, m as u8) };
    }
    let mut out = ZERO;
    for (s, &c) in cnt[..256].iter().enumerate() {
        out[s / 64] |= u64::from(u32::from(c) >= m) << (s % 64);
    }
    out
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn ge_mask_avx2(cnt: &[u8; CNT], m: u8) -> Lane {
    use std::arch::x86_64::*;
    let mv = _mm256_set1_epi8(m as i8);
    let mut out = ZERO;
    for c in 0..8 {
        // SAFETY: 32 * c + 32 <= 256 = CNT.
        let v = unsafe { _mm256_loadu_si256(cnt[32 * c..].as_ptr() as *const __m256i) };
        let ge = _mm256_cmpeq_epi8(_mm256_max_epu8(v, mv), v);
        let bits = _mm256_movemask_epi8(ge) as u32 as u64;
        out[c / 2] |= bits << (32 * (c % 2));
    }
    out
}

/// Hands `sink` the slots of block `blk` (of `bucket`) whose count `cnt` reaches `m`, the
/// padding after the bucket's last molecule left out.
#[inline(always)]
fn report_block<S: Sink>(bucket: &Bucket, blk: usize, cnt: &[u8; CNT], m: u32, sink: &mut S) {
    let mut mask = ge_mask_counts(cnt, m);
    let tail = (bucket.count - (bucket.blocks - 1) * BLOCK as u64) as usize;
    if blk as u64 == bucket.first_block + bucket.blocks - 1 && tail < BLOCK {
        mask = mask_and(mask, prefix_mask(tail));
    }
    for (w, &word) in mask.iter().enumerate() {
        let mut x = word;
        while x != 0 {
            let slot = w * 64 + x.trailing_zeros() as usize;
            sink.accept(blk * BLOCK + slot, u32::from(cnt[slot]));
            x &= x - 1;
        }
    }
}

/// The largest count of a block's 256 slots.
#[inline(always)]
fn max_count(cnt: &[u8; CNT]) -> u8 {
    cnt[..256].iter().copied().fold(0, u8::max)
}

thread_local! {
    /// Per thread: decoded lanes (plane-major, RUN per plane) and payload offsets.
    static SCRATCH: RefCell<(Vec<Lane>, Vec<u32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
    /// Per thread: byte counters of a run's blocks.
    static COUNTS: RefCell<Vec<[u8; CNT]>> = const { RefCell::new(Vec::new()) };
    /// Per thread, per query plane: its non-empty containers in a run, the run's payload bytes.
    static RUN_SUMS: RefCell<(Vec<u64>, Vec<u32>)> = const { RefCell::new((Vec::new(), Vec::new())) };

}

/// Scans `blocks` (inside `bucket`) of compressed planes `cp` (the query's, rarest first),
/// feeding `sink`. `L` is the counter width.
#[inline(always)]
pub(crate) fn scan_compressed<const L: usize, S: Sink>(
    cp: &[CPlane<'_>],
    bucket: &Bucket,
    blocks: Range<u64>,
    sink: &mut S,
) -> Read {
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        let (lanes, offs) = &mut *s;
        let n = cp.len();
        if offs.len() < n * RUN {
            offs.resize(n * RUN, 0);
        }
        if n < 256 {
            // byte counters cannot overflow: count straight from the containers
            return COUNTS.with(|c| {
                let mut c = c.borrow_mut();
                if c.len() < RUN {
                    c.resize(RUN, [0; CNT]);
                }
                RUN_SUMS.with(|r| {
                    let mut r = r.borrow_mut();
                    let (fulls, sums) = &mut *r;
                    if fulls.len() < n {
                        fulls.resize(n, 0);
                        sums.resize(n, 0);
                    }
                    #[cfg(target_arch = "x86_64")]
                    if std::is_x86_feature_detected!("avx2") && crate::scan::simd_enabled() {
                        // SAFETY: AVX2 is present.
                        return unsafe {
                            scan_counts_avx2(cp, bucket, blocks, sink, offs, &mut c, fulls, sums)
                        };
                    }
                    scan_counts::<false, S>(cp, bucket, blocks, sink, offs, &mut c, fulls, sums)
                })
            });
        }
        if lanes.len() < n * RUN {
            lanes.resize(n * RUN, ZERO);
        }
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") && crate::scan::simd_enabled() {
            // SAFETY: AVX2 is present.
            return unsafe { scan_runs_avx2::<L, S>(cp, bucket, blocks, sink, lanes, offs) };
        }
        scan_runs::<false, L, S>(cp, bucket, blocks, sink, lanes, offs)
    })
}

/// [`scan_runs`] compiled with AVX2 (entered inside the thread-local's closure, which does not
/// inherit a caller's target features).
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn scan_runs_avx2<const L: usize, S: Sink>(
    cp: &[CPlane<'_>],
    bucket: &Bucket,
    blocks: Range<u64>,
    sink: &mut S,
    lanes: &mut [Lane],
    offs: &mut [u32],
) -> Read {
    scan_runs::<true, L, S>(cp, bucket, blocks, sink, lanes, offs)
}

/// The codes pass of a run of `len` blocks from `blk`: each container's payload offset into
/// `offs` (plane-major, RUN per plane) and, per block, how many query planes are non-empty.
#[inline(always)]
fn codes_pass<const AVX2: bool>(
    cp: &[CPlane<'_>],
    blk: usize,
    len: usize,
    offs: &mut [u32],
) -> [u16; RUN] {
    let mut nonempty = [0u16; RUN];
    for (j, plane) in cp.iter().enumerate() {
        let mut off = plane.offset::<AVX2>(blk) as u32;
        let codes = &plane.codes[blk..blk + len];
        let o = &mut offs[j * RUN..j * RUN + len];
        for k in 0..len {
            o[k] = off;
            off += u32::from(codes[k]);
            nonempty[k] += u16::from(codes[k] != 0);
        }
    }
    nonempty
}

/// [`scan_counts`] compiled with AVX2 (the thread-local's closure does not inherit the
/// caller's target features, so the kernel is entered again here).
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
unsafe fn scan_counts_avx2<S: Sink>(
    cp: &[CPlane<'_>],
    bucket: &Bucket,
    blocks: Range<u64>,
    sink: &mut S,
    offs: &mut [u32],
    cnt: &mut [[u8; CNT]],
    fulls: &mut [u64],
    sums: &mut [u32],
) -> Read {
    scan_counts::<true, S>(cp, bucket, blocks, sink, offs, cnt, fulls, sums)
}

/// The kernel for queries of fewer than 256 on-bits: per run of blocks, the codes pass, then
/// the query's planes one after another (rarest first), each adding its non-empty containers
/// of the live blocks to per-slot byte counters; a block leaves the run when no slot can
/// still reach the bar with the non-empty planes it has left. `fulls` and `sums` (at least one
/// per query plane: a thread's scratch, as an allocation per call cost a shard's search per
/// query) hold each plane's non-empty containers in a run and the run's payload bytes.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn scan_counts<const AVX2: bool, S: Sink>(
    cp: &[CPlane<'_>],
    bucket: &Bucket,
    blocks: Range<u64>,
    sink: &mut S,
    offs: &mut [u32],
    cnt: &mut [[u8; CNT]],
    fulls: &mut [u64],
    sums: &mut [u32],
) -> Read {
    let n = cp.len();
    let mut read = Read::default();
    let mut blk = blocks.start as usize;
    let end = blocks.end as usize;
    // per plane: the payload offset of block `blk`, found from the checkpoints at the first
    // run read and after skipped runs (all planes at once: their misses overlap), advanced run
    // by run in between
    let run_off = &mut offs[..n];
    let has_parts = cp.first().is_some_and(|p| !p.parts.is_empty());
    // whether `run_off` holds block `blk`'s offsets
    let mut at_blk = false;
    while blk < end {
        let len = RUN.min(end - blk);
        sink.poll();
        let m = sink.need();
        if m == UNREACHABLE {
            return read;
        }
        read.blocks += len as u64;
        // blocks where some part of 32 slots has at least m non-empty query planes: a sharper
        // test than the codes' (a part's planes are non-empty in its block), so a run where no
        // block passes is settled without reading its codes
        let pass = if has_parts {
            part_bound(cp, blk, len, m)
        } else {
            u64::MAX
        };
        if pass == 0 {
            let ahead = blk + RUNS_AHEAD * RUN;
            if ahead < end {
                for plane in cp {
                    crate::adders::prefetch(plane.parts[ahead..].as_ptr() as *const u64);
                }
            }
            at_blk = false;
            blk += len;
            continue;
        }
        if !at_blk {
            for (j, plane) in cp.iter().enumerate() {
                run_off[j] = plane.offset::<AVX2>(blk) as u32;
            }
            at_blk = true;
        }
        // per block, how many query planes are non-empty in it (n < 256: bytes suffice);
        // per plane, its non-empty containers in the run and the run's payload bytes
        let mut nonempty = [0u8; RUN];
        for (j, plane) in cp.iter().enumerate() {
            let (full, sum) = run_codes(&plane.codes[blk..], len, &mut nonempty);
            fulls[j] = full;
            sums[j] = sum;
        }
        // the live blocks as a bit mask; per live block, the query planes still to read that
        // are non-empty in it (a slot can gain at most that many more bits), and its largest
        // count so far
        let mut live = 0u64;
        let mut rem = [0u8; RUN];
        let mut max = [0u8; RUN];
        for (k, &z) in nonempty[..len].iter().enumerate() {
            if u32::from(z) >= m && (pass >> k) & 1 == 1 {
                live |= 1 << k;
                cnt[k] = [0; CNT];
                rem[k] = z;
                max[k] = 0;
            }
        }
        for (j, plane) in cp.iter().enumerate().take(AHEAD) {
            plane.prefetch_live::<AVX2>(blk, run_off[j], fulls[j] & live);
        }
        for (j, plane) in cp.iter().enumerate() {
            if live == 0 {
                break;
            }
            if let Some(next) = cp.get(j + AHEAD) {
                next.prefetch_live::<AVX2>(blk, run_off[j + AHEAD], fulls[j + AHEAD] & live);
            }
            // only the live blocks' non-empty containers are read (no branch per empty one)
            let mut touched = fulls[j] & live;
            if touched == 0 {
                continue;
            }
            let need = sink.need();
            read.plane_blocks += u64::from(touched.count_ones());
            // offsets of the run's containers: a prefix sum of the codes, up to the last
            // container read
            let codes = &plane.codes[blk..blk + len];
            let upto = 64 - touched.leading_zeros() as usize;
            let mut pre = [0u32; RUN];
            let mut sum = run_off[j];
            for (p, &c) in pre[..upto].iter_mut().zip(codes) {
                *p = sum;
                sum += u32::from(c);
            }
            while touched != 0 {
                let k = touched.trailing_zeros() as usize;
                touched &= touched - 1;
                max[k] = plane.add_counts(blk + k, pre[k] as usize, &mut cnt[k], max[k]);
                rem[k] -= 1;
                // dead when no slot can reach the bar with the non-empty planes left
                if u32::from(max[k]) + u32::from(rem[k]) < need {
                    live &= !(1 << k);
                }
            }
        }
        // the next run's offsets; the codes and part masks of the run RUNS_AHEAD on asked
        // for (two streams per query plane: more than the hardware follows)
        let ahead = blk + RUNS_AHEAD * RUN;
        for (j, plane) in cp.iter().enumerate() {
            run_off[j] += sums[j];
            if ahead < end {
                crate::adders::prefetch(plane.codes[ahead..].as_ptr() as *const u64);
                if let Some(parts) = plane.parts.get(ahead..) {
                    crate::adders::prefetch(parts.as_ptr() as *const u64);
                }
            }
        }
        while live != 0 {
            let k = live.trailing_zeros() as usize;
            live &= live - 1;
            let b = blk + k;
            let m = sink.need();
            if m == UNREACHABLE {
                return read;
            }
            report_block(bucket, b, &cnt[k], m, sink);
        }
        blk += len;
    }
    read
}

#[inline(always)]
fn scan_runs<const AVX2: bool, const L: usize, S: Sink>(
    cp: &[CPlane<'_>],
    bucket: &Bucket,
    blocks: Range<u64>,
    sink: &mut S,
    lanes: &mut [Lane],
    offs: &mut [u32],
) -> Read {
    let n = cp.len();
    let last = bucket.first_block + bucket.blocks - 1;
    let tail = (bucket.count - (bucket.blocks - 1) * BLOCK as u64) as usize;
    let mut read = Read::default();
    let mut blk = blocks.start as usize;
    let end = blocks.end as usize;
    let mut live = [0u8; RUN];
    let mut survivors = [(0usize, [ZERO; L]); RUN];
    let ptrs: Vec<*const u64> = (0..n)
        .map(|j| lanes[j * RUN..].as_ptr() as *const u64)
        .collect();
    while blk < end {
        let len = RUN.min(end - blk);
        sink.poll();
        let m = sink.need();
        if m == UNREACHABLE {
            return read;
        }
        let nonempty = codes_pass::<AVX2>(cp, blk, len, offs);
        let mut nlive = 0;
        for (k, &z) in nonempty[..len].iter().enumerate() {
            if u32::from(z) >= m {
                live[nlive] = k as u8;
                nlive += 1;
            }
        }
        read.blocks += len as u64;
        if nlive == 0 {
            blk += len;
            continue;
        }
        // phase 1: the rarest planes up to the gate, for every live block
        let f = phase1_planes(m, n);
        for (j, plane) in cp[..f].iter().enumerate() {
            for &k in &live[..nlive] {
                let k = k as usize;
                lanes[j * RUN + k] = plane.lane(blk + k, offs[j * RUN + k] as usize);
            }
        }
        read.plane_blocks += (f * nlive) as u64;
        let finish = |b: usize, s: &[Lane; L], m: u32, sink: &mut S| {
            let mut mask = ge_mask(s, m);
            if b as u64 == last && tail < BLOCK {
                mask = mask_and(mask, prefix_mask(tail));
            }
            for (j, &w) in mask.iter().enumerate() {
                let mut x = w;
                while x != 0 {
                    let lane = j * 64 + x.trailing_zeros() as usize;
                    sink.accept(b * BLOCK + lane, count_at(s, lane));
                    x &= x - 1;
                }
            }
        };
        let mut kept = 0;
        for &k in &live[..nlive] {
            let k = k as usize;
            let m = sink.need();
            if m == UNREACHABLE {
                return read;
            }
            let gate = Gate::new(m, n);
            let mut s = [ZERO; L];
            // SAFETY: every pointer is a plane's RUN lanes in the scratch buffer, and lane k
            // of planes ..f was just decoded.
            match unsafe { add_planes(&ptrs, 4 * k, &mut s, 0, f, gate) } {
                Err(_) => {}
                Ok(()) if f == n => finish(blk + k, &s, m, sink),
                Ok(()) => {
                    survivors[kept] = (k, s);
                    kept += 1;
                }
            }
        }
        // phase 2: the other planes, for the blocks still alive
        if kept > 0 {
            for (j, plane) in cp.iter().enumerate().skip(f) {
                for &(k, _) in &survivors[..kept] {
                    lanes[j * RUN + k] = plane.lane(blk + k, offs[j * RUN + k] as usize);
                }
            }
            read.plane_blocks += ((n - f) * kept) as u64;
            for &(k, s0) in &survivors[..kept] {
                let m = sink.need();
                if m == UNREACHABLE {
                    return read;
                }
                let gate = Gate::new(m, n);
                let mut s = s0;
                if !gate.alive(&s, f, n) {
                    continue;
                }
                // SAFETY: as above, planes f..n of lane k decoded just now.
                if unsafe { add_planes(&ptrs, 4 * k, &mut s, f, n, gate) }.is_ok() {
                    finish(blk + k, &s, m, sink);
                }
            }
        }
        blk += len;
    }
    read
}

#[cfg(test)]
mod tests {
    use super::nonzero_bytes;

    #[test]
    fn nonzero_bytes_marks_exactly_the_nonzero_bytes() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // zero some bytes, keep others (including bytes with only the high or low bit)
            let word = x & (x >> 8).wrapping_mul(0xFF) | (x >> 60 & 1) << 63;
            let want = (0..8).fold(0u64, |a, k| {
                a | u64::from((word >> (8 * k)) & 0xFF != 0) << k
            });
            assert_eq!(nonzero_bytes(word), want, "{word:#018x}");
        }
        for k in 0..8 {
            for v in [1u64, 0x80, 0x7F, 0xFF] {
                assert_eq!(nonzero_bytes(v << (8 * k)), 1 << k);
            }
        }
        assert_eq!(nonzero_bytes(0), 0);
    }
}
