//! Top-k over compressed planes with part masks, blocks visited best bound first.
//!
//! A molecule cannot share more bits with the query than the query has non-empty planes in its
//! part of 16 slots (the part masks of planes of format 3; of 32 slots in format 2), nor more
//! than its popcount `p` or the query's `q`. So a block's molecules score at most
//! `c / (p + q - c)` with `c = min(largest part count, p, q)`.
//! The search keeps the blocks in groups of equal bound (one bucket, one `c`) in a heap, best
//! first, and counts blocks group by group; a bucket's groups are computed only when its own
//! bound (`min(p, q) / max(p, q)`) could still beat the best group waiting. The first group
//! whose bound falls below the k-th best score found so far ends the search: nothing left can
//! reach it. The k-th best therefore reaches its final value after the few blocks that hold
//! the nearest molecules, and only the blocks whose bound reaches it are counted, where a scan
//! in bucket order counts every block that passes the bar as it stood while it was rising.
//! Parts of 16 slots cut the blocks counted on MOSES from about 700 per held-out query to
//! about 290 (BENCHMARKS.md): the blocks are read at scattered places, so each one saved counts.
//!
//! A block is counted as a run's block is in `scan_counts` (containers rarest plane first into
//! per-slot byte counters, dropped as soon as no slot can reach the bar with the planes left),
//! with one more cut from the part masks: only parts where enough query planes have a bit can
//! hold a hit ("open" parts), and only the planes with a bit in an open part are read. The
//! slots of open parts get exact counts; the others stay below the bar. Exact: the sink sees
//! every molecule that reaches the bar, with its count.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::ops::Range;

use molsift_store::planes::CHECKPOINT_BLOCKS;

use super::{part_slices, report_block, CPlane, CNT};
use crate::layout::Bucket;
use crate::scan::{Read, Sink};
use crate::threshold::{cmp_ratio, UNREACHABLE};

/// Blocks in a chunk of the bound pass (one 256-bit register of part bytes per plane).
const CHUNK: usize = 32;

/// The blocks of one bucket (the thread's share of it) of one index whose bound is `c` of
/// `u`: `arena[at .. at + len]`, each as its place in the share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Group {
    c: u32,
    u: u32,
    /// the index among those searched together ([`top_k_many`]; 0 alone)
    shard: u32,
    /// the bucket's place in its index's visit order
    visit: u32,
    at: u32,
    len: u32,
}

impl Ord for Group {
    /// Greater is visited first: the better bound, then the bucket visited first, then the
    /// first index.
    fn cmp(&self, o: &Group) -> Ordering {
        cmp_ratio(self.c, self.u, o.c, o.u)
            .then(o.visit.cmp(&self.visit))
            .then(o.shard.cmp(&self.shard))
    }
}

impl PartialOrd for Group {
    fn partial_cmp(&self, o: &Group) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// Whether a top-k search of these query planes can go best first: every plane has part
/// masks (planes of format 2, bound not turned off) and byte counters cannot overflow.
pub(crate) fn usable(cp: &[CPlane<'_>]) -> bool {
    !cp.is_empty() && cp.len() < 256 && cp.iter().all(|p| !p.parts.is_empty())
}

/// What one thread's best-first top-k searches: the query planes `cp` (rarest first, see
/// [`usable`]), the index's `buckets`, the order to expand them in (`visit`: bucket indices,
/// best bound first, as `topk_order` gives them), the thread's `share` of a bucket, and the
/// query's popcount `q`.
pub(crate) struct Work<'a, 'p> {
    pub(crate) cp: &'a [CPlane<'p>],
    pub(crate) buckets: &'a [Bucket],
    pub(crate) visit: &'a [usize],
    pub(crate) share: &'a dyn Fn(&Bucket) -> Range<u64>,
    pub(crate) q: u32,
}

/// The search: returns what it read and how many buckets it counted blocks of.
pub(crate) fn top_k<S: Sink>(w: &Work<'_, '_>, sink: &mut S) -> (Read, u32) {
    debug_assert!(usable(w.cp));
    top_k_many(std::slice::from_ref(w), std::slice::from_mut(sink))
        .pop()
        .expect("one index, one result")
}

/// One search over the blocks of several indexes (a store set's shards, each with its own
/// sink), best bound first across all of them, as one index's search visits its own: the
/// blocks that hold the nearest molecules of any index come first, so the k-th best rises as
/// fast as over one store holding them all. The sinks must share their bar (a `SharedBar`
/// taking their scores: each one's k-th best is then the k-th best of all of them), so that
/// the first group below one sink's bar ends the search of all. Every index must be
/// [`usable`], all with part masks of the same size ([`same_parts`]). Per index: what it read
/// and how many buckets it counted blocks of.
pub(crate) fn top_k_many<S: Sink>(ws: &[Work<'_, '_>], sinks: &mut [S]) -> Vec<(Read, u32)> {
    debug_assert!(ws.iter().all(|w| usable(w.cp)) && same_parts(ws));
    debug_assert_eq!(ws.len(), sinks.len());
    let p16 = ws.first().is_some_and(|w| has_parts16(w.cp));
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && crate::scan::simd_enabled() {
        // SAFETY: AVX2 is present.
        return unsafe { top_k_avx2(ws, sinks, p16) };
    }
    if p16 {
        return top_k_impl::<false, true, S>(ws, sinks);
    }
    top_k_impl::<false, false, S>(ws, sinks)
}

/// Whether the indexes' query planes all have part masks of one size (all of 16 slots, or
/// none), as [`top_k_many`] needs.
pub(crate) fn same_parts(ws: &[Work<'_, '_>]) -> bool {
    let first = ws.first().map(|w| has_parts16(w.cp));
    ws.iter().all(|w| Some(has_parts16(w.cp)) == first)
}

/// Whether every query plane has part masks of 16 slots (planes of format 3).
fn has_parts16(cp: &[CPlane<'_>]) -> bool {
    cp.iter().all(|p| !p.parts16.is_empty())
}

/// [`top_k_impl`] compiled with AVX2 (the bound pass and the counters vectorize).
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn top_k_avx2<S: Sink>(ws: &[Work<'_, '_>], sinks: &mut [S], p16: bool) -> Vec<(Read, u32)> {
    if p16 {
        return top_k_impl::<true, true, S>(ws, sinks);
    }
    top_k_impl::<true, false, S>(ws, sinks)
}

/// The search; `AVX2`: compiled inside [`top_k_avx2`] (the offsets' code sums use it);
/// `P16`: with the part masks of 16 slots (else of 32).
#[inline(always)]
fn top_k_impl<const AVX2: bool, const P16: bool, S: Sink>(
    ws: &[Work<'_, '_>],
    sinks: &mut [S],
) -> Vec<(Read, u32)> {
    let mut reads = vec![Read::default(); ws.len()];
    let mut heap: BinaryHeap<Group> = BinaryHeap::new();
    let mut arena: Vec<u32> = Vec::new();
    let mut bound: Vec<u8> = Vec::new();
    let mut half: Vec<u8> = Vec::new();
    let shares: Vec<Vec<Range<u64>>> = ws
        .iter()
        .map(|w| w.visit.iter().map(|&b| (w.share)(&w.buckets[b])).collect())
        .collect();
    let mut counted: Vec<Vec<bool>> = ws.iter().map(|w| vec![false; w.visit.len()]).collect();
    let mut cnt = [0u8; CNT];
    let mut next = vec![0usize; ws.len()];
    'search: loop {
        // the buckets whose own bound is at least the best group's, of whichever index has the
        // best next one: their groups first
        loop {
            let mut pick: Option<(usize, u32, u32)> = None;
            for (s, w) in ws.iter().enumerate() {
                if let Some(&b) = w.visit.get(next[s]) {
                    let p = w.buckets[b].popcount;
                    let (bc, bu) = (p.min(w.q), p.max(w.q));
                    if pick.map_or(true, |(_, c, u)| cmp_ratio(bc, bu, c, u).is_gt()) {
                        pick = Some((s, bc, bu));
                    }
                }
            }
            let Some((s, bc, bu)) = pick else {
                break;
            };
            if heap
                .peek()
                .is_some_and(|top| cmp_ratio(bc, bu, top.c, top.u).is_lt())
            {
                break;
            }
            let (w, sink) = (&ws[s], &mut sinks[s]);
            let v = next[s];
            next[s] += 1;
            let p = w.buckets[w.visit[v]].popcount;
            sink.enter(p);
            let need = sink.need();
            if need == UNREACHABLE || bc < need || shares[s][v].is_empty() {
                continue;
            }
            if P16 {
                part_max16(w.cp, shares[s][v].clone(), &mut bound, &mut half);
            } else {
                part_max(w.cp, shares[s][v].clone(), &mut bound);
            }
            // the blocks by bound, best first (a counting sort), those that can reach `need`
            let mut hist = [0u32; 256];
            for &x in &bound {
                hist[usize::from(x).min(bc as usize)] += 1;
            }
            let mut start = [0u32; 256];
            let mut at = arena.len() as u32;
            for c in (need..=bc).rev() {
                let len = hist[c as usize];
                if len > 0 {
                    start[c as usize] = at;
                    heap.push(Group {
                        c,
                        u: p + w.q - c,
                        shard: s as u32,
                        visit: v as u32,
                        at,
                        len,
                    });
                    at += len;
                }
            }
            arena.resize(at as usize, 0);
            let mut window = usize::MAX;
            for (k, &x) in bound.iter().enumerate() {
                let c = u32::from(x).min(bc);
                if c >= need {
                    // counting the block will locate its containers from each plane's
                    // checkpoint and codes: asked for now, once per checkpoint window that
                    // holds such a block, they arrive while the groups before it are counted
                    // (scattered misses otherwise, the largest cost of a block on AMD EPYC:
                    // BENCHMARKS.md)
                    let blk = shares[s][v].start as usize + k;
                    if blk / CHECKPOINT_BLOCKS != window {
                        window = blk / CHECKPOINT_BLOCKS;
                        for plane in w.cp {
                            plane.prefetch_offset(blk);
                        }
                    }
                    // the block's place in the share
                    arena[start[c as usize] as usize] = k as u32;
                    start[c as usize] += 1;
                }
            }
        }
        let Some(g) = heap.pop() else {
            break; // every block that could reach the bar is counted
        };
        // every bucket not yet expanded, and every group left, is bounded by `g`'s score
        let (s, v) = (g.shard as usize, g.visit as usize);
        let (w, sink) = (&ws[s], &mut sinks[s]);
        let bucket = &w.buckets[w.visit[v]];
        sink.enter(bucket.popcount);
        let ks = &arena[g.at as usize..(g.at + g.len) as usize];
        for &k in ks {
            sink.poll();
            if g.c < sink.need() {
                // the bar (or the threshold) is above this bound and so above all the rest
                break 'search;
            }
            counted[s][v] = true;
            let blk = shares[s][v].start as usize + k as usize;
            count_block::<AVX2, P16, S>(w.cp, bucket, blk, &mut cnt, sink, &mut reads[s]);
        }
    }
    reads
        .into_iter()
        .zip(&counted)
        .map(|(r, c)| (r, c.iter().filter(|&&c| c).count() as u32))
        .collect()
}

/// Per block of `blocks`, the largest number of query planes non-empty in one of its parts,
/// into `out` (see [`part_max_of`]).
#[inline(always)]
fn part_max(cp: &[CPlane<'_>], blocks: Range<u64>, out: &mut Vec<u8>) {
    part_max_of(cp.len(), |j| cp[j].parts, blocks, out)
}

/// [`part_max`] with the part masks of 16 slots: each block's two bytes of masks (eight
/// parts each) counted as two blocks of [`part_max_of`] into `half`, then the larger of each
/// block's two into `out`.
#[inline(always)]
fn part_max16(cp: &[CPlane<'_>], blocks: Range<u64>, out: &mut Vec<u8>, half: &mut Vec<u8>) {
    part_max_of(
        cp.len(),
        |j| cp[j].parts16,
        2 * blocks.start..2 * blocks.end,
        half,
    );
    out.clear();
    out.extend(half.chunks_exact(2).map(|h| h[0].max(h[1])));
}

/// [`part_max`] of `planes` query planes whose part masks `parts(j)` gives: per chunk of 32
/// blocks, the part counts bit-sliced ([`part_slices`]: the adders' carry-save tree, about six
/// vector operations per plane), and each block's largest part count read from the slices,
/// high bit first.
#[inline(always)]
fn part_max_of<'a>(
    planes: usize,
    parts: impl Fn(usize) -> &'a [u8],
    blocks: Range<u64>,
    out: &mut Vec<u8>,
) {
    out.clear();
    let (mut blk, end) = (blocks.start as usize, blocks.end as usize);
    while blk < end {
        let len = CHUNK.min(end - blk);
        // 40-odd planes are more streams than the hardware follows: asked for 8 chunks ahead,
        // a cache line every other chunk
        if (blk - blocks.start as usize) % (2 * CHUNK) == 0 {
            for j in 0..planes {
                if let Some(ahead) = parts(j).get(blk + 8 * CHUNK..) {
                    crate::adders::prefetch(ahead.as_ptr() as *const u64);
                }
            }
        }
        // bit k of each (block, part) count in slice k (planes < 256: eight slices hold it)
        let slices = part_slices::<8>(planes, &parts, blk, len);
        let slice: [[u8; CHUNK]; 8] = slices.map(|lane| {
            let mut b = [0u8; CHUNK];
            for (w, word) in lane.iter().enumerate() {
                b[8 * w..8 * w + 8].copy_from_slice(&word.to_le_bytes());
            }
            b
        });
        // per block, the largest of its eight part counts: high bit first, keep the parts
        // that have the bit wherever one does
        let mut cand = [0xFFu8; CHUNK];
        let mut m = [0u8; CHUNK];
        for k in (0..8).rev() {
            for i in 0..CHUNK {
                let t = slice[k][i] & cand[i];
                let any = 0u8.wrapping_sub(u8::from(t != 0));
                cand[i] = (t & any) | (cand[i] & !any);
                m[i] |= any & (1 << k);
            }
        }
        out.extend_from_slice(&m[..len]);
        blk += len;
    }
}

/// Containers of a block located (and their payload asked for) ahead of the one counted.
const LOOK: usize = 3;

/// Bit `r` of a byte as byte `r` of a word: per-part counts, eight at once.
const SPREAD: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut r = 0;
        while r < 8 {
            t[b] |= ((b as u64 >> r) & 1) << (8 * r);
            r += 1;
        }
        b += 1;
    }
    t
};

/// The parts of a block that can hold a hit and the query planes to read for them: per part,
/// how many query planes have a bit in it (`B` bytes of masks per plane, `masks(plane)`,
/// eight parts a byte; counted a byte lane per part), and the parts where that reaches `need`
/// ("open", bit `8 i + r` for bit `r` of byte `i`). The planes with a bit in an open part go
/// to `chosen[..n]` (no branch per plane): the others add nothing to any slot of those parts,
/// and the slots of the other parts stay below the bar. Returns `(open, n)`.
#[inline(always)]
fn choose_planes<'a, 'p: 'a, const B: usize>(
    cp: &'a [CPlane<'p>],
    masks: impl Fn(&'a CPlane<'p>) -> &'p [u8],
    need: u32,
    chosen: &mut [u8; 256],
) -> (u32, usize) {
    let mut bytes = [[0u8; B]; 256];
    let mut lanes = [0u64; B];
    for (b, plane) in bytes.iter_mut().zip(cp) {
        b.copy_from_slice(masks(plane));
        for i in 0..B {
            lanes[i] += SPREAD[usize::from(b[i])];
        }
    }
    let mut open = [0u8; B];
    for i in 0..B {
        for r in 0..8 {
            open[i] |= u8::from((lanes[i] >> (8 * r)) & 0xFF >= u64::from(need)) << r;
        }
    }
    let mut n = 0;
    for (j, b) in bytes[..cp.len()].iter().enumerate() {
        chosen[n] = j as u8;
        n += usize::from((0..B).any(|i| b[i] & open[i] != 0));
    }
    let open = (0..B).fold(0u32, |o, i| o | u32::from(open[i]) << (8 * i));
    (open, n)
}

/// Counts block `blk` of `bucket`: the containers of the query planes chosen for it (below),
/// rarest plane first, into byte counters per slot; the block is dropped once no slot can
/// reach the bar with the chosen planes left, else its slots at or above the bar go to `sink`.
#[inline(always)]
fn count_block<const AVX2: bool, const P16: bool, S: Sink>(
    cp: &[CPlane<'_>],
    bucket: &Bucket,
    blk: usize,
    cnt: &mut [u8; CNT],
    sink: &mut S,
    read: &mut Read,
) {
    let need = sink.need();
    read.blocks += 1;
    let mut chosen = [0u8; 256];
    let (open, n) = if P16 {
        choose_planes::<2>(cp, |p| &p.parts16[2 * blk..2 * blk + 2], need, &mut chosen)
    } else {
        choose_planes::<1>(cp, |p| &p.parts[blk..blk + 1], need, &mut chosen)
    };
    let mut rem = n as u32;
    if open == 0 || rem < need {
        return;
    }
    *cnt = [0; CNT];
    let mut max = 0u8;
    // containers located LOOK planes ahead of the one counted, their payload asked for
    let locate = |j: u8| {
        let plane = &cp[usize::from(j)];
        let off = plane.offset::<AVX2>(blk);
        crate::adders::prefetch(plane.all[plane.base + off..].as_ptr() as *const u64);
        off as u32
    };
    let mut offs = [0u32; 256];
    for i in 0..n.min(LOOK) {
        offs[i] = locate(chosen[i]);
    }
    for i in 0..n {
        if i + LOOK < n {
            offs[i + LOOK] = locate(chosen[i + LOOK]);
        }
        let plane = &cp[usize::from(chosen[i])];
        max = plane.add_counts(blk, offs[i] as usize, cnt, max);
        read.plane_blocks += 1;
        rem -= 1;
        if u32::from(max) + rem < need {
            return;
        }
    }
    report_block(bucket, blk, cnt, need, sink);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut x = seed;
        move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        }
    }

    /// Random part masks: `planes` runs of `len` bytes, dense, sparse, empty and all-ones
    /// planes (counts up to the plane count), and in one case of 8 every byte all ones but
    /// perhaps its low bit (counts near the plane count in every part).
    fn random_masks(
        rnd: &mut impl FnMut(u64) -> u64,
        planes: usize,
        len: usize,
        case: usize,
    ) -> Vec<Vec<u8>> {
        (0..planes)
            .map(|j| {
                (0..len)
                    .map(|_| match (j + case) % 5 {
                        _ if case % 8 == 0 => !(rnd(16) as u8 & 1),
                        0 => 0xFF,
                        1 => 0,
                        2 => rnd(256) as u8 & rnd(256) as u8,
                        _ => rnd(256) as u8,
                    })
                    .collect()
            })
            .collect()
    }

    /// The most planes of `masks` (`width` bytes per block) that have a bit in one part of
    /// block `b`, counted part by part.
    fn largest_part_count(masks: &[Vec<u8>], width: usize, b: usize) -> u8 {
        (0..8 * width)
            .map(|r| {
                masks
                    .iter()
                    .filter(|m| m[width * b + r / 8] >> (r % 8) & 1 == 1)
                    .count()
            })
            .max()
            .unwrap() as u8
    }

    /// `got` (a bound per block of `blocks`) against [`largest_part_count`].
    fn check_bound(got: &[u8], masks: &[Vec<u8>], width: usize, blocks: Range<u64>, case: usize) {
        let want: Vec<u8> = (blocks.start as usize..blocks.end as usize)
            .map(|b| largest_part_count(masks, width, b))
            .collect();
        assert_eq!(
            got,
            want,
            "case {case}: {} planes, blocks {blocks:?}",
            masks.len()
        );
    }

    /// The bound of 16-slot parts against a count part by part: random two-byte masks of 1 to
    /// 120 planes, shares starting and ending anywhere.
    #[test]
    fn part_max16_is_the_largest_count_of_16_slot_parts() {
        let mut rnd = rng(0x2545_f491_4f6c_dd1d);
        let (codes, data) = (vec![0u8; 1], vec![0u8; 64]);
        for case in 0..100 {
            let planes = 1 + rnd(120) as usize;
            let blocks = 1 + rnd(150) as usize;
            let masks = random_masks(&mut rnd, planes, 2 * blocks, case);
            let cps: Vec<CPlane<'_>> = masks
                .iter()
                .map(|m| CPlane::for_test(&[], m, &codes, &data))
                .collect();
            let from = rnd(blocks as u64);
            let to = from + rnd(blocks as u64 - from + 1);
            let (mut got, mut half) = (Vec::new(), Vec::new());
            part_max16(&cps, from..to, &mut got, &mut half);
            check_bound(&got, &masks, 2, from..to, case);
        }
    }

    /// The open parts and chosen planes of a block against their definitions, for masks of one
    /// and of two bytes.
    #[test]
    fn choose_planes_opens_the_parts_that_reach_the_bar() {
        let mut rnd = rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..300 {
            let planes = 1 + rnd(100) as usize;
            let masks: Vec<[u8; 2]> = (0..planes)
                .map(|_| [rnd(256) as u8 & rnd(256) as u8, rnd(256) as u8])
                .collect();
            let need = 1 + rnd(planes as u64 / 2 + 2) as u32;
            let check = |width: usize, open: u32, chosen: &[u8]| {
                let count = |r: usize| {
                    masks
                        .iter()
                        .filter(|m| m[r / 8] >> (r % 8) & 1 == 1)
                        .count() as u32
                };
                let want_open = (0..8 * width)
                    .filter(|&r| count(r) >= need)
                    .fold(0u32, |o, r| o | 1 << r);
                assert_eq!(open, want_open, "case {case}, {width} bytes");
                let want: Vec<u8> = (0..planes)
                    .filter(|&j| {
                        (0..8 * width)
                            .any(|r| open >> r & 1 == 1 && masks[j][r / 8] >> (r % 8) & 1 == 1)
                    })
                    .map(|j| j as u8)
                    .collect();
                assert_eq!(chosen, want, "case {case}, {width} bytes");
            };
            let (codes, data) = (vec![0u8; 1], vec![0u8; 64]);
            // planes whose only content is their part masks
            let cps: Vec<CPlane<'_>> = masks
                .iter()
                .map(|m| CPlane::for_test(&m[..1], &m[..], &codes, &data))
                .collect();
            let mut chosen = [0u8; 256];
            let (open, n) = choose_planes::<2>(&cps, |p| &p.parts16[..2], need, &mut chosen);
            check(2, open, &chosen[..n]);
            let (open, n) = choose_planes::<1>(&cps, |p| &p.parts[..1], need, &mut chosen);
            check(1, open, &chosen[..n]);
        }
    }

    /// The bit-sliced part bound against a count part by part, on random masks of 1 to 255
    /// planes, with share edges inside and across chunks.
    #[test]
    fn part_max_is_the_largest_part_count() {
        let mut rnd = rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..200 {
            let planes = if case % 8 == 0 {
                128 + rnd(128) as usize // nearly all ones: counts past 127
            } else {
                1 + rnd(if case % 4 == 0 { 255 } else { 60 }) as usize
            };
            let blocks = 1 + rnd(200) as usize;
            let masks = random_masks(&mut rnd, planes, blocks, case);
            let from = rnd(blocks as u64);
            let to = from + rnd(blocks as u64 - from + 1);
            let mut got = Vec::new();
            part_max_of(planes, |j| &masks[j], from..to, &mut got);
            check_bound(&got, &masks, 1, from..to, case);
        }
    }
}
