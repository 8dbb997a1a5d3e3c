//! Scored candidates, the result order (score descending, then store index ascending) and the
//! buffer that keeps the `k` best by that order.
//!
//! Scores are compared as exact ratios `common / union` of integers, never as floats, so ties
//! are real ties and the tie rule (lower store index first) decides them, including which
//! molecules take the last places of a top-k.

use std::cmp::Ordering;

use crate::threshold::{cmp_ratio, rdkit_score};
use crate::Hit;

/// A molecule with its exact score `common / union`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scored {
    /// store index
    pub index: u64,
    /// bits in common with the query
    pub common: u32,
    /// `p + q - common` (0 only for two empty fingerprints, score 0)
    pub union: u32,
}

impl Scored {
    pub(crate) fn new(index: u64, common: u32, p: u32, q: u32) -> Scored {
        Scored {
            index,
            common,
            union: p + q - common,
        }
    }

    /// `Less` means `self` comes first in results: higher score, then lower index.
    #[inline]
    pub(crate) fn rank_cmp(&self, other: &Scored) -> Ordering {
        cmp_ratio(other.common, other.union, self.common, self.union)
            .then(self.index.cmp(&other.index))
    }

    pub(crate) fn hit(&self) -> Hit {
        // rdkit_score(c, p, q) with p + q = union + common
        Hit {
            index: self.index,
            score: rdkit_score(self.common, self.union + self.common, 0),
        }
    }
}

/// The `k` best candidates seen so far. For `k <= SORTED_K` they are kept sorted, best first
/// (a candidate that enters is put in its place and the k-th dropped): the bar is the exact
/// k-th best after every candidate, so it rises as early as it can and a search counts fewer
/// blocks (all of MOSES, the unlike queries, one thread: top-10 221 blocks a query against
/// 264 with the buffer below, 8% less time; top-100 986 against 1,145; top-250 1,624 against
/// 1,924). Larger `k` are kept as a buffer cut back to the `k` best (a linear-time selection)
/// whenever it holds `2k`: amortized O(1) per candidate; its bar (the k-th best at the last
/// cut) rises at each cut, lower between cuts, which only lets more candidates in, never keeps
/// a better one out (a binary heap's exact bar saved top-1000 11% of its blocks, 2.5% of its
/// time: not kept).
#[derive(Debug, Clone)]
pub(crate) struct TopK {
    k: usize,
    buf: Vec<Scored>,
    /// the k-th best at the last cut
    worst: Option<Scored>,
}

/// The largest `k` kept sorted (exact bar after every candidate).
const SORTED_K: usize = 256;

impl TopK {
    pub(crate) fn new(k: usize) -> TopK {
        TopK {
            k,
            buf: Vec::with_capacity(2 * k.min(1 << 16) + 2),
            worst: None,
        }
    }

    /// Offers a candidate; returns true if the bar rose (it entered a full sorted list, or the
    /// buffer was cut back).
    #[inline]
    pub(crate) fn offer(&mut self, s: Scored) -> bool {
        if self.k == 0 || self.worst.is_some_and(|w| s.rank_cmp(&w) != Ordering::Less) {
            return false;
        }
        if self.k <= SORTED_K {
            let at = self
                .buf
                .partition_point(|x| x.rank_cmp(&s) == Ordering::Less);
            self.buf.insert(at, s);
            self.buf.truncate(self.k);
            if self.buf.len() == self.k {
                self.worst = self.buf.last().copied();
                return true;
            }
            return false;
        }
        self.buf.push(s);
        // the first cut as soon as k are in, then every k more
        let cut_at = if self.worst.is_none() {
            self.k
        } else {
            2 * self.k
        };
        if self.buf.len() >= cut_at {
            self.cut();
            return true;
        }
        false
    }

    fn cut(&mut self) {
        if self.buf.len() > self.k {
            self.buf
                .select_nth_unstable_by(self.k - 1, Scored::rank_cmp);
            self.buf.truncate(self.k);
        }
        if self.buf.len() == self.k {
            // after the selection the k-th best is the worst of the k kept
            self.worst = self.buf.iter().copied().max_by(Scored::rank_cmp);
        }
    }

    /// The k-th best at the last cut, once `k` candidates have been seen.
    #[inline]
    pub(crate) fn bar(&self) -> Option<Scored> {
        self.worst
    }

    pub(crate) fn into_vec(mut self) -> Vec<Scored> {
        self.cut();
        self.buf
    }
}

/// Sorts candidates into result order and keeps the first `k` (all if `None`).
pub(crate) fn finish(mut all: Vec<Scored>, k: Option<usize>) -> Vec<Hit> {
    all.sort_unstable_by(Scored::rank_cmp);
    if let Some(k) = k {
        all.truncate(k);
    }
    all.iter().map(Scored::hit).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scored(index: u64, common: u32, union: u32) -> Scored {
        Scored {
            index,
            common,
            union,
        }
    }

    #[test]
    fn ties_go_to_the_lower_index() {
        // k = 2, kept sorted: the bar is the exact 2nd best after every candidate
        let mut t = TopK::new(2);
        // three molecules with score 1/2, one with 1/3
        assert!(!t.offer(scored(9, 1, 2)), "one in: no bar yet");
        assert!(t.offer(scored(5, 2, 4)), "k in: the bar is set");
        assert_eq!(t.bar().map(|w| w.index), Some(9));
        assert!(
            t.offer(scored(3, 3, 6)),
            "better than the bar: in, the bar rises"
        );
        assert_eq!(
            t.bar().map(|w| w.index),
            Some(5),
            "the 2nd best of 9, 5 and 3"
        );
        assert!(!t.offer(scored(1, 1, 3)), "below the bar");
        assert!(
            !t.offer(scored(7, 1, 2)),
            "ties the bar with a higher index: out"
        );
        let hits = finish(t.into_vec(), None);
        assert_eq!(hits.iter().map(|h| h.index).collect::<Vec<_>>(), vec![3, 5]);
        assert_eq!(hits[0].score, 0.5);
    }

    #[test]
    fn a_large_k_is_cut_back_every_k() {
        // k past SORTED_K: a buffer cut back to the k best whenever it holds 2k
        let k = SORTED_K + 1;
        let mut t = TopK::new(k);
        for i in 0..k as u64 - 1 {
            assert!(!t.offer(scored(1000 + i, 1, 2)));
        }
        assert!(
            t.offer(scored(999, 1, 4)),
            "k in: the first cut sets the bar"
        );
        assert_eq!(t.bar().map(|w| w.index), Some(999));
        for i in 0..k as u64 - 1 {
            assert!(!t.offer(scored(i, 1, 2)), "better: kept, no cut before 2k");
            assert_eq!(
                t.bar().map(|w| w.index),
                Some(999),
                "the bar waits for the cut"
            );
        }
        assert!(t.offer(scored(998, 1, 2)), "2k in: cut back to k");
        assert_eq!(
            t.bar().map(|w| w.index),
            Some(998),
            "the k-th best of 0 .. k - 2, 998 and 1000 .. (score 1/2, then index)"
        );
    }

    /// `n` candidates of pseudo-random scores (popcounts 40 and 40), indices 0 .. n.
    fn random_scored(n: u64, seed: u64) -> Vec<Scored> {
        let mut x = seed;
        (0..n)
            .map(|i| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                Scored::new(i, (x >> 59) as u32, 40, 40)
            })
            .collect()
    }

    #[test]
    fn the_sorted_bar_is_the_kth_best_after_every_candidate() {
        for k in [1usize, 2, 10, SORTED_K] {
            let mut t = TopK::new(k);
            let mut all = Vec::new();
            for (i, s) in random_scored(500, 777).into_iter().enumerate() {
                all.push(s);
                t.offer(s);
                let mut best = all.clone();
                best.sort_unstable_by(Scored::rank_cmp);
                let want = (best.len() >= k).then(|| best[k - 1].index);
                assert_eq!(t.bar().map(|w| w.index), want, "k = {k}, after {i}");
            }
        }
    }

    #[test]
    fn keeps_the_k_best_of_many() {
        for k in [1usize, 2, 3, 10, 64, 256, 257, 600] {
            let mut t = TopK::new(k);
            let all = random_scored(1000, 12345);
            for &s in &all {
                t.offer(s);
            }
            let got: Vec<u64> = finish(t.into_vec(), Some(k))
                .iter()
                .map(|h| h.index)
                .collect();
            let want: Vec<u64> = finish(all, Some(k)).iter().map(|h| h.index).collect();
            assert_eq!(got, want, "k = {k}");
        }
    }

    #[test]
    fn zero_union_scores_zero() {
        let s = Scored::new(0, 0, 0, 0);
        assert_eq!(s.hit().score, 0.0);
        let z = Scored::new(1, 0, 5, 3);
        assert_eq!(
            s.rank_cmp(&z),
            Ordering::Less,
            "equal score 0, lower index first"
        );
    }
}
