//! The scan kernel's driver: a query's [`Plan`] (its planes, rarest first), the [`Sink`] that
//! receives the molecules passing a block, and the two-phase scan of a range of blocks with
//! the gate and software prefetch, dispatched by counter width and to AVX2 at run time.
//!
//! Reading less than `q` planes: a molecule needs `m` of the query's `q` bits, so it may miss at
//! most `q - m`. The query's planes are read rarest first (by the index's bit counts), and after
//! every eighth plane a block where nobody can still make `m` is abandoned (`Gate`). Each run of
//! 64 blocks is scanned in two phases: all blocks read the planes up to the first such check
//! (plus 8), prefetched as streams; the few survivors then read the rest, each prefetching the
//! rest of the survivors just ahead. At t = 0.7 with about 44 on-bits this reads about 16
//! planes per block instead of 44. Measured on the benchmark (one thread): the prefetches take
//! t = 0.7 from 0.46-0.56 to 0.37-0.42 ms/query and top-10 from 1.6-2.6 to 1.05-1.2 ms.
//!
//! The kernel is generic over the counter width (6, 9, 12 or 17 slices, by the query's on-bit
//! count) and compiled twice: portable, and with AVX2 enabled.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::adders::{
    add_planes, count_at, ge_mask, mask_and, prefetch, prefix_mask, Gate, Lane, ZERO,
};
use crate::layout::{Bucket, ColumnIndex, BLOCK, BLOCK_WORDS};
use crate::threshold::{cmp_ratio, UNREACHABLE};
use crate::{Query, SearchError};

/// Words ahead (per plane) to prefetch: two cache lines.
const PREFETCH_WORDS: usize = 16;

static SIMD_ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns the column index's AVX2 kernels off (`false`) or back on, for benchmarks and tests; results do not
/// change, only speed.
#[doc(hidden)]
pub fn set_simd(enabled: bool) {
    SIMD_ENABLED.store(enabled, Ordering::Relaxed);
}

/// Whether the AVX2 kernels are on (see [`set_simd`]).
pub(crate) fn simd_enabled() -> bool {
    SIMD_ENABLED.load(Ordering::Relaxed)
}

fn use_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        SIMD_ENABLED.load(Ordering::Relaxed) && std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Receives the molecules that pass a block's comparison.
pub(crate) trait Sink {
    /// The scan enters a bucket of popcount `p`.
    fn enter(&mut self, p: u32);
    /// The current bar for the bucket: least common count that may pass, or `UNREACHABLE`.
    fn need(&self) -> u32;
    /// Called between runs of blocks: a chance to pick up a bar raised by another thread.
    fn poll(&mut self) {}
    /// A molecule in sorted slot `slot` has `common` bits in common with the query.
    fn accept(&mut self, slot: usize, common: u32);
}

/// Everything the kernel needs about one query against one index.
pub(crate) struct Plan<'a> {
    pub(crate) index: &'a ColumnIndex,
    pub(crate) q: u32,
    /// the query's bits, rarest first (the order the planes are read)
    pub(crate) bits: Vec<u32>,
    ptrs: Vec<*const u64>,
    /// compressed planes (store version 2): the query's, rarest first
    compressed: Option<Vec<crate::compressed::CPlane<'a>>>,
}

// SAFETY: the pointers only read planes owned by `index`, which is immutable and Sync while
// borrowed; a Plan is shared between search threads for reads only.
unsafe impl Sync for Plan<'_> {}
// SAFETY: as above.
unsafe impl Send for Plan<'_> {}

impl<'a> Plan<'a> {
    pub(crate) fn new(index: &'a ColumnIndex, query: &Query) -> Result<Plan<'a>, SearchError> {
        if query.bits() != index.bits {
            return Err(SearchError::BitsMismatch {
                index: index.bits,
                query: query.bits(),
            });
        }
        // rarest planes first: they settle most blocks early (see `Gate`)
        let mut bits = query.on_bits().to_vec();
        bits.sort_by_key(|&b| (index.bit_counts[b as usize], b));
        if let Some(c) = &index.compressed {
            index.check_compressed(c, query.on_bits())?; // once per process
            let planes = c.planes();
            let cp = bits
                .iter()
                .map(|&b| crate::compressed::CPlane::new(&planes, b as usize))
                .collect();
            return Ok(Plan {
                index,
                q: query.popcount(),
                bits,
                ptrs: Vec::new(),
                compressed: Some(cp),
            });
        }
        index.check_read(query.on_bits())?; // once per process: the planes and order it reads
        let planes = index.planes.as_slice();
        let w = index.plane_words();
        let ptrs = bits
            .iter()
            .map(|&b| planes[b as usize * w..].as_ptr())
            .collect();
        Ok(Plan {
            index,
            q: query.popcount(),
            bits,
            ptrs,
            compressed: None,
        })
    }

    /// Asks the kernel to read ahead what a scan of `blocks` with bar `m` reads from every
    /// block: the first [`phase1_planes`] of the query's planes over those blocks (the rest is
    /// read only for surviving blocks). Only for a mapped index with read-ahead hints on.
    pub(crate) fn advise(&self, blocks: Range<u64>, m: u32) {
        self.advise_all(&[(blocks, m)]);
    }

    /// [`Plan::advise`] for several block ranges at once (ascending): one hint per plane and
    /// run of adjacent ranges that read it in phase 1.
    pub(crate) fn advise_all(&self, scans: &[(Range<u64>, u32)]) {
        if !self.index.advise || self.compressed.is_some() {
            return;
        }
        let w = self.index.plane_words();
        let n = self.bits.len();
        let firsts: Vec<usize> = scans
            .iter()
            .map(|(_, m)| {
                if *m == UNREACHABLE {
                    0
                } else {
                    phase1_planes(*m, n)
                }
            })
            .collect();
        for (j, &b) in self.bits.iter().enumerate() {
            let mut run: Option<Range<u64>> = None;
            for ((blocks, _), &f) in scans.iter().zip(&firsts) {
                let wanted = j < f && !blocks.is_empty();
                match &mut run {
                    Some(r) if wanted && r.end == blocks.start => r.end = blocks.end,
                    _ => {
                        if let Some(r) = run.take() {
                            self.hint(b, w, r);
                        }
                        if wanted {
                            run = Some(blocks.clone());
                        }
                    }
                }
            }
            if let Some(r) = run {
                self.hint(b, w, r);
            }
        }
    }

    fn hint(&self, bit: u32, plane_words: usize, blocks: Range<u64>) {
        let from = bit as usize * plane_words + blocks.start as usize * BLOCK_WORDS;
        self.index
            .planes
            .will_need(from, (blocks.end - blocks.start) as usize * BLOCK_WORDS);
    }

    /// Blocks a top-k search reads first (compressed planes without part masks, or with the
    /// best-first order turned off; none for the dense index):
    /// of `blocks` of each `(bucket, blocks)` given, the `count` whose codes promise the best
    /// score (a molecule of popcount `p` can share with the query at most as many bits as the
    /// query has non-empty planes in its block), best first, as `(index into scans, block)`.
    /// In a store ordered for similarity the query's nearest molecules sit in a few blocks:
    /// read first, they raise the bar before the rest is read.
    pub(crate) fn seeds(&self, scans: &[(u32, Range<u64>)], count: usize) -> Vec<(usize, u64)> {
        let Some(cp) = &self.compressed else {
            return Vec::new();
        };
        let q = self.q;
        let mut found: Vec<(u32, u32, usize, u64)> = Vec::new(); // (common, union, scan, block)
        let mut nonempty = Vec::new();
        for (s, (p, blocks)) in scans.iter().enumerate() {
            let (lo, hi) = (blocks.start as usize, blocks.end as usize);
            nonempty.clear();
            nonempty.resize(hi - lo, 0u32);
            for plane in cp {
                for (z, &c) in nonempty.iter_mut().zip(&plane.codes()[lo..hi]) {
                    *z += u32::from(c != 0);
                }
            }
            for (k, &z) in nonempty.iter().enumerate() {
                let c = z.min(*p).min(q);
                if c > 0 {
                    found.push((c, p + q - c, s, (lo + k) as u64));
                }
            }
        }
        found.sort_by(|a, b| cmp_ratio(b.0, b.1, a.0, a.1).then((a.2, a.3).cmp(&(b.2, b.3))));
        found.truncate(count);
        found.into_iter().map(|(_, _, s, b)| (s, b)).collect()
    }

    /// A thread's top-k search of its `share` of each bucket of `visit` (best bucket bound
    /// first), visiting blocks best part bound first (`compressed::bestfirst`); `None` when
    /// the plan cannot (dense index, planes without part masks, 256 query bits or more).
    /// Returns what it read and how many buckets it counted blocks of.
    pub(crate) fn top_k_best_first<S: Sink>(
        &self,
        visit: &[usize],
        share: &dyn Fn(&Bucket) -> Range<u64>,
        sink: &mut S,
    ) -> Option<(Read, u32)> {
        let work = self.best_first_work(visit, share)?;
        Some(crate::compressed::top_k_best_first(&work, sink))
    }

    /// What a best-first top-k search of this plan reads (`visit`, `share` as
    /// [`Plan::top_k_best_first`] takes them), or `None` when the plan cannot go best first.
    pub(crate) fn best_first_work<'w>(
        &'w self,
        visit: &'w [usize],
        share: &'w dyn Fn(&Bucket) -> Range<u64>,
    ) -> Option<crate::compressed::Work<'w, 'a>> {
        let cp = self.compressed.as_ref()?;
        if !crate::compressed::best_first_enabled() || !crate::compressed::best_first_usable(cp) {
            return None;
        }
        Some(crate::compressed::Work {
            cp,
            buckets: self.index.buckets(),
            visit,
            share,
            q: self.q,
        })
    }

    /// Scans `blocks` (inside `bucket`), feeding `sink`; returns what it read.
    pub(crate) fn scan<S: Sink>(&self, bucket: &Bucket, blocks: Range<u64>, sink: &mut S) -> Read {
        assert!(
            blocks.start >= bucket.first_block && blocks.end <= bucket.first_block + bucket.blocks
        );
        assert!(blocks.end <= self.index.blocks);
        macro_rules! go {
            ($l:literal) => {{
                if let Some(cp) = &self.compressed {
                    // it enters its AVX2 kernels itself (inside its thread-local buffers)
                    return crate::compressed::scan_compressed::<$l, S>(cp, bucket, blocks, sink);
                }
                #[cfg(target_arch = "x86_64")]
                if use_avx2() {
                    // SAFETY: AVX2 is present; every plane pointer covers `plane_words` words
                    // and the blocks were checked to lie inside the planes.
                    return unsafe { scan_avx2::<$l, S>(&self.ptrs, bucket, blocks, sink) };
                }
                // SAFETY: as above.
                unsafe { scan_impl::<$l, S>(&self.ptrs, bucket, blocks, sink) }
            }};
        }
        match self.q {
            0..=63 => go!(6),
            64..=511 => go!(9),
            512..=4095 => go!(12),
            _ => go!(17),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn scan_avx2<const L: usize, S: Sink>(
    ptrs: &[*const u64],
    bucket: &Bucket,
    blocks: Range<u64>,
    sink: &mut S,
) -> Read {
    // SAFETY: forwarded from the caller.
    unsafe { scan_impl::<L, S>(ptrs, bucket, blocks, sink) }
}

/// What a scan read: blocks, and planes times blocks (32 bytes each) loaded or prefetched.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Read {
    pub(crate) blocks: u64,
    pub(crate) plane_blocks: u64,
}

impl Read {
    pub(crate) fn add(&mut self, o: Read) {
        self.blocks += o.blocks;
        self.plane_blocks += o.plane_blocks;
    }
}

/// Blocks per run of the two-phase scan.
const RUN: usize = 64;
/// Survivors ahead whose remaining planes are prefetched in the second phase.
const SURVIVOR_PREFETCH: usize = 2;
/// Planes read by every block beyond the gate's first check.
const EXTRA_PLANES: usize = 8;

/// Planes every block reads in phase 1 of a scan with bar `m` over `n` planes: up to the gate's
/// first check plus [`EXTRA_PLANES`] (all `n` when the gate never closes).
pub(crate) fn phase1_planes(m: u32, n: usize) -> usize {
    let gate = Gate::new(m, n);
    if gate.from >= n {
        n
    } else {
        (gate.from + EXTRA_PLANES).min(n)
    }
}

/// Scans `blocks` in runs of [`RUN`] blocks, in two phases per run:
///
/// 1. every block adds the query's rarest planes up to the gate's first check (prefetched as a
///    stream); blocks where nobody can reach the bar any more are done;
/// 2. the surviving blocks (usually few) add the remaining planes, each prefetching the
///    remaining planes of the survivors just ahead of it, and report their hits.
///
/// # Safety
/// Each pointer must be valid for words `4 * blocks.start .. 4 * blocks.end`.
#[inline(always)]
unsafe fn scan_impl<const L: usize, S: Sink>(
    ptrs: &[*const u64],
    bucket: &Bucket,
    blocks: Range<u64>,
    sink: &mut S,
) -> Read {
    let last = bucket.first_block + bucket.blocks - 1;
    let tail = (bucket.count - (bucket.blocks - 1) * BLOCK as u64) as usize;
    let end_word = blocks.end as usize * BLOCK_WORDS;
    let n = ptrs.len();
    let mut read = Read::default();
    let mut survivors = [(0u64, [ZERO; L]); RUN];
    let finish = |blk: u64, s: &[Lane; L], m: u32, sink: &mut S| {
        let mut mask = ge_mask(s, m);
        if blk == last && tail < BLOCK {
            mask = mask_and(mask, prefix_mask(tail));
        }
        for (j, &w) in mask.iter().enumerate() {
            let mut x = w;
            while x != 0 {
                let lane = j * 64 + x.trailing_zeros() as usize;
                sink.accept(blk as usize * BLOCK + lane, count_at(s, lane));
                x &= x - 1;
            }
        }
    };
    let prefetch_rest = |blk: u64, first: usize| {
        for &p in &ptrs[first..] {
            prefetch(p.wrapping_add(blk as usize * BLOCK_WORDS));
        }
    };
    let mut blk = blocks.start;
    while blk < blocks.end {
        let run_end = (blk + RUN as u64).min(blocks.end);
        sink.poll();
        // phase 1: the planes every block needs
        let mut kept = 0;
        let mut first = n; // planes read in phase 1 by the kept blocks
        while blk < run_end {
            let m = sink.need();
            if m == UNREACHABLE {
                return read;
            }
            let gate = Gate::new(m, n);
            let f = phase1_planes(m, n);
            if kept > 0 && f != first {
                break; // the bar moved: settle the kept blocks first
            }
            let word = blk as usize * BLOCK_WORDS;
            if word % 8 == 0 && word + PREFETCH_WORDS < end_word {
                for &p in &ptrs[..f] {
                    prefetch(p.wrapping_add(word + PREFETCH_WORDS));
                }
            }
            read.blocks += 1;
            let mut s = [ZERO; L];
            // SAFETY: forwarded from the caller.
            read.plane_blocks += f as u64; // prefetched, even if the gate closes before
            match unsafe { add_planes(ptrs, word, &mut s, 0, f, gate) } {
                Err(_) => {}
                Ok(()) if f == n => finish(blk, &s, m, sink),
                Ok(()) => {
                    first = f;
                    survivors[kept] = (blk, s);
                    kept += 1;
                }
            }
            blk += 1;
        }
        // phase 2: the survivors' remaining planes
        for &(b, _) in &survivors[..kept.min(SURVIVOR_PREFETCH)] {
            prefetch_rest(b, first);
        }
        for i in 0..kept {
            if i + SURVIVOR_PREFETCH < kept {
                prefetch_rest(survivors[i + SURVIVOR_PREFETCH].0, first);
            }
            let (b, mut s) = survivors[i];
            read.plane_blocks += (n - first) as u64; // prefetched
            let m = sink.need();
            if m == UNREACHABLE {
                return read;
            }
            let gate = Gate::new(m, n);
            if !gate.alive(&s, first, n) {
                continue;
            }
            // SAFETY: forwarded from the caller.
            if unsafe { add_planes(ptrs, b as usize * BLOCK_WORDS, &mut s, first, n, gate) }.is_ok()
            {
                finish(b, &s, m, sink);
            }
        }
    }
    read
}
