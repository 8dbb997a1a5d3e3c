//! Searching the [`ColumnIndex`] (one query): which buckets to scan, in which order, with
//! which bar, on how many threads; the sinks that collect hits or keep the k best.
//!
//! * Threshold: buckets in storage order, the bar `m` (least common-bit count that passes, see
//!   `threshold.rs`) fixed per bucket; buckets with no reachable `m` (the Swamidass-Baldi
//!   bound, exactly in integers) are skipped. Threads take contiguous shares of the blocks.
//! * Top-k: buckets by their best possible score `min(p, q) / max(p, q)`, best first, so good
//!   scores arrive early; `m` rises to the current k-th best as the heap fills, and buckets that
//!   cannot reach it are skipped. On compressed planes with part masks (store version 2) the
//!   blocks are visited best bound first instead, across buckets (`compressed::bestfirst`),
//!   and the search ends at the first block whose bound is below the k-th best found. On
//!   planes without them (format 1) the few blocks of the first buckets whose codes promise
//!   the best score are read first (`Plan::seeds`), which raises the bar before the rest is
//!   read once.
//!   Each thread takes a share of every bucket and keeps its own
//!   heap; the threads share their best k-th score and, for k <= `SHARED_K`, the scores of
//!   the molecules they keep, whose k-th best together is the bar (`bar.rs`: with the
//!   searches of the same query over other shards too, when the caller gives a cell); the
//!   heaps are merged at the end.

use std::ops::Range;

use crate::bar::{OwnSlot, SharedBar};
use crate::compressed::SlotOrder;
use crate::layout::{Bucket, ColumnIndex, BLOCK};
use crate::scan::{Plan, Read, Sink};
use crate::threshold::{cmp_ratio, min_common_ratio, need_f64, UNREACHABLE};
use crate::topk::{finish, Scored, TopK};
use crate::{Hit, Query, SearchError, SearchOptions, SearchPath, SearchStats};

/// Collects every molecule at or above a fixed per-bucket bar.
pub(crate) struct ThresholdSink<'a> {
    order: SlotOrder<'a>,
    t: f64,
    q: u32,
    p: u32,
    m: u32,
    pub(crate) out: Vec<Scored>,
}

impl<'a> ThresholdSink<'a> {
    pub(crate) fn new(order: SlotOrder<'a>, t: f64, q: u32) -> Self {
        ThresholdSink {
            order,
            t,
            q,
            p: 0,
            m: UNREACHABLE,
            out: Vec::new(),
        }
    }
}

impl Sink for ThresholdSink<'_> {
    fn enter(&mut self, p: u32) {
        self.p = p;
        self.m = need_f64(self.t, p, self.q);
    }
    fn need(&self) -> u32 {
        self.m
    }
    #[inline]
    fn accept(&mut self, slot: usize, common: u32) {
        self.out.push(Scored::new(
            self.order.position(slot),
            common,
            self.p,
            self.q,
        ));
    }
}

/// Keeps the k best, raising the bar as the heap fills (and as other threads' heaps fill).
pub(crate) struct TopKSink<'a> {
    order: SlotOrder<'a>,
    t: f64,
    q: u32,
    p: u32,
    user_m: u32,
    m: u32,
    /// the bar `m` was computed from, as an exact score
    bar: Option<(u32, u32)>,
    shared: Option<SharedBar<'a>>,
    /// scores of kept molecules not yet added to the shared slot (when it takes scores)
    pending: Vec<(u32, u32)>,
    shares_scores: bool,
    k: usize,
    pub(crate) heap: TopK,
    pub(crate) candidates: u64,
}

impl<'a> TopKSink<'a> {
    pub(crate) fn new(
        order: SlotOrder<'a>,
        t: f64,
        q: u32,
        k: usize,
        shared: Option<SharedBar<'a>>,
    ) -> Self {
        TopKSink {
            order,
            t,
            q,
            p: 0,
            user_m: 0,
            m: 0,
            bar: None,
            shared,
            pending: Vec::new(),
            shares_scores: shared.is_some_and(|b| b.shares_scores(k)),
            k,
            heap: TopK::new(k),
            candidates: 0,
        }
    }

    /// Adds the kept molecules' scores to the shared slot, if it takes them (and its lock is
    /// free now).
    fn share_scores(&mut self) {
        if let Some(shared) = self.shared.filter(|_| !self.pending.is_empty()) {
            shared.add_scores(self.k, &mut self.pending);
        }
    }

    fn refresh(&mut self) {
        let local = self.heap.bar().map(|w| (w.common, w.union));
        if let (Some(shared), Some((c, u))) = (self.shared, local) {
            shared.raise(c, u);
        }
        let other = self.shared.as_ref().and_then(SharedBar::get);
        self.bar = match (local, other) {
            (Some(a), Some(b)) => Some(if cmp_ratio(a.0, a.1, b.0, b.1).is_ge() {
                a
            } else {
                b
            }),
            (a, b) => a.or(b),
        };
        self.m = match self.bar {
            Some((c, u)) => self.user_m.max(min_common_ratio(c, u, self.p, self.q)),
            None => self.user_m,
        };
    }
}

impl Sink for TopKSink<'_> {
    fn enter(&mut self, p: u32) {
        self.share_scores();
        self.p = p;
        self.user_m = need_f64(self.t, p, self.q);
        self.refresh();
    }
    fn poll(&mut self) {
        self.share_scores();
        if let Some((c, u)) = self.shared.as_ref().and_then(SharedBar::get) {
            let better = match self.bar {
                Some((bc, bu)) => cmp_ratio(c, u, bc, bu).is_gt(),
                None => true,
            };
            if better {
                self.refresh();
            }
        }
    }
    fn need(&self) -> u32 {
        self.m
    }
    #[inline]
    fn accept(&mut self, slot: usize, common: u32) {
        self.candidates += 1;
        let scored = Scored::new(self.order.position(slot), common, self.p, self.q);
        // a score at or below the bar can never raise the k-th best of the shared scores above
        // the bar (it could only enter their k best below it): it stays out of the slot
        if self.shares_scores
            && self.bar.map_or(true, |(c, u)| {
                cmp_ratio(scored.common, scored.union, c, u).is_gt()
            })
        {
            self.pending.push((scored.common, scored.union));
        }
        if self.heap.offer(scored) {
            self.refresh();
        }
    }
}

/// Buckets of a top-k search whose most promising blocks are read first (see [`Plan::seeds`]).
const SEED_BUCKETS: usize = 3;
/// Blocks read first.
const SEED_BLOCKS: usize = 8;

/// Buckets in the order a top-k search visits them: best possible score first, then lower
/// popcount.
pub(crate) fn topk_order(buckets: &[Bucket], q: u32) -> Vec<usize> {
    let mut ix: Vec<usize> = (0..buckets.len()).collect();
    let bound = |p: u32| (p.min(q), p.max(q));
    ix.sort_by(|&a, &b| {
        let (pa, pb) = (buckets[a].popcount, buckets[b].popcount);
        let ((ca, ua), (cb, ub)) = (bound(pa), bound(pb));
        cmp_ratio(cb, ub, ca, ua).then(pa.cmp(&pb))
    });
    ix
}

/// Splits `r` into `parts` near-equal consecutive ranges and returns the `i`-th.
pub(crate) fn share(r: Range<u64>, parts: usize, i: usize) -> Range<u64> {
    let len = r.end - r.start;
    let (parts, i) = (parts as u64, i as u64);
    r.start + len * i / parts..r.start + len * (i + 1) / parts
}

impl ColumnIndex {
    /// Searches the index; see [`SearchOptions`] for what is returned.
    pub fn search(&self, query: &Query, opts: &SearchOptions) -> Result<Vec<Hit>, SearchError> {
        self.search_with_stats(query, opts).map(|(h, _)| h)
    }

    /// [`ColumnIndex::search`], also reporting what the search read.
    pub fn search_with_stats(
        &self,
        query: &Query,
        opts: &SearchOptions,
    ) -> Result<(Vec<Hit>, SearchStats), SearchError> {
        let t = opts.checked_threshold()?;
        let plan = Plan::new(self, query)?;
        // a thread per block at most: more would each get an empty share (`-j 100000` started
        // that many threads for one query)
        let blocks: u64 = self.buckets.iter().map(|b| b.blocks).sum();
        let threads = opts.thread_count().min(blocks.max(1) as usize);
        let q = plan.q;
        let mut stats = SearchStats {
            path: SearchPath::Columns,
            ..Default::default()
        };
        let mut read = Read::default();
        let hits = match opts.k {
            Some(0) => Vec::new(),
            Some(k) => {
                let visit = topk_order(&self.buckets, q);
                // the threads' k-th best shared in a cell of this search's, or in the one the
                // caller gave (other shards' searches of this query share it too)
                let own = (opts.bar.is_none() && threads > 1).then(OwnSlot::new);
                let shared = match &opts.bar {
                    Some(slot) => Some(slot.shared()),
                    None => own.as_ref().map(OwnSlot::shared),
                };
                if let Some(bar) = &shared {
                    bar.claim();
                }
                let run = |i: usize| {
                    let mut sink = TopKSink::new(self.slot_order(), t, q, k, shared);
                    // compressed planes with part masks: blocks best bound first
                    let mine = |b: &Bucket| share(b.block_range(), threads, i);
                    if let Some((read, buckets)) = plan.top_k_best_first(&visit, &mine, &mut sink) {
                        let candidates = sink.candidates;
                        return (sink.heap.into_vec(), read, buckets, candidates);
                    }
                    let mut read = Read::default();
                    let mut buckets = 0;
                    // the most promising blocks of the first buckets first (compressed
                    // planes), then everything else once
                    let firsts: Vec<(u32, Range<u64>)> = visit
                        .iter()
                        .take(SEED_BUCKETS)
                        .map(|&b| {
                            let bucket = &self.buckets[b];
                            (bucket.popcount, share(bucket.block_range(), threads, i))
                        })
                        .collect();
                    let seeds = plan.seeds(&firsts, SEED_BLOCKS);
                    for &(s, blk) in &seeds {
                        let bucket = &self.buckets[visit[s]];
                        sink.enter(bucket.popcount);
                        if sink.need() != UNREACHABLE {
                            read.add(plan.scan(bucket, blk..blk + 1, &mut sink));
                        }
                    }
                    let mut seeded: Vec<u64> = seeds.iter().map(|&(_, blk)| blk).collect();
                    seeded.sort_unstable();
                    for &b in &visit {
                        let bucket = &self.buckets[b];
                        sink.enter(bucket.popcount);
                        if sink.need() == UNREACHABLE {
                            continue;
                        }
                        let mine = share(bucket.block_range(), threads, i);
                        plan.advise(mine.clone(), sink.need());
                        let mut r = Read::default();
                        let mut start = mine.start;
                        for &blk in seeded.iter().filter(|&&blk| mine.contains(&blk)) {
                            if start < blk {
                                r.add(plan.scan(bucket, start..blk, &mut sink));
                            }
                            start = blk + 1;
                        }
                        if start < mine.end {
                            r.add(plan.scan(bucket, start..mine.end, &mut sink));
                        }
                        buckets += u32::from(r.blocks > 0);
                        read.add(r);
                    }
                    let candidates = sink.candidates;
                    (sink.heap.into_vec(), read, buckets, candidates)
                };
                let parts = run_threads(threads, run);
                let mut all = Vec::new();
                for (v, r, buckets, candidates) in parts {
                    all.extend(v);
                    read.add(r);
                    stats.candidates += candidates;
                    stats.buckets_visited = stats.buckets_visited.max(buckets);
                }
                finish(all, Some(k))
            }
            None => {
                // the buckets that can pass, and the blocks they hold
                let work: Vec<usize> = (0..self.buckets.len())
                    .filter(|&b| need_f64(t, self.buckets[b].popcount, q) != UNREACHABLE)
                    .collect();
                let total: u64 = work.iter().map(|&b| self.buckets[b].blocks).sum();
                if threads == 1 {
                    let scans: Vec<_> = work
                        .iter()
                        .map(|&b| {
                            (
                                self.buckets[b].block_range(),
                                need_f64(t, self.buckets[b].popcount, q),
                            )
                        })
                        .collect();
                    plan.advise_all(&scans);
                }
                let run = |i: usize| {
                    let mine = share(0..total, threads, i);
                    let mut sink = ThresholdSink::new(self.slot_order(), t, q);
                    let mut read = Read::default();
                    let mut at = 0u64; // blocks of `work` before the current bucket
                    for &b in &work {
                        let bucket = &self.buckets[b];
                        let lo = mine.start.max(at);
                        let hi = mine.end.min(at + bucket.blocks);
                        if lo < hi {
                            sink.enter(bucket.popcount);
                            let r = bucket.first_block + (lo - at)..bucket.first_block + (hi - at);
                            if threads > 1 {
                                plan.advise(r.clone(), sink.need());
                            }
                            read.add(plan.scan(bucket, r, &mut sink));
                        }
                        at += bucket.blocks;
                    }
                    (sink.out, read)
                };
                let parts = run_threads(threads, run);
                let mut all = Vec::new();
                for (v, r) in parts {
                    stats.candidates += v.len() as u64;
                    all.extend(v);
                    read.add(r);
                }
                stats.buckets_visited = work.len() as u32;
                finish(all, None)
            }
        };
        stats.units_visited = read.blocks;
        stats.bytes_touched = read.plane_blocks * (BLOCK / 8) as u64 + stats.candidates * 8;
        Ok((hits, stats))
    }
}

/// Runs `f(0..threads)`, on scoped threads when `threads > 1`, and returns the results in order
/// (a thread the system will not start: its part runs on this thread).
pub(crate) fn run_threads<T: Send>(threads: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    molsift_tasks::scoped(threads.max(1), f)
}
