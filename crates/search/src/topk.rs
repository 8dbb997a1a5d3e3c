//! Scored candidates, the result order (score descending, then store index ascending) and the
//! bounded heap that keeps the `k` best by that order.
//!
//! Scores are compared as exact ratios `common / union` of integers, never as floats, so ties
//! are real ties and the tie rule (lower store index first) decides them, including which
//! molecules take the last places of a top-k.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

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
        Scored { index, common, union: p + q - common }
    }

    /// `Less` means `self` comes first in results: higher score, then lower index.
    #[inline]
    pub(crate) fn rank_cmp(&self, other: &Scored) -> Ordering {
        cmp_ratio(other.common, other.union, self.common, self.union).then(self.index.cmp(&other.index))
    }

    pub(crate) fn hit(&self) -> Hit {
        // rdkit_score(c, p, q) with p + q = union + common
        Hit { index: self.index, score: rdkit_score(self.common, self.union + self.common, 0) }
    }
}

/// Heap entry ordered so that the *worst* candidate is the heap's maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Worst(Scored);

impl Ord for Worst {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.rank_cmp(&other.0)
    }
}

impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The `k` best candidates seen so far.
#[derive(Debug, Clone)]
pub(crate) struct TopK {
    k: usize,
    heap: BinaryHeap<Worst>,
}

impl TopK {
    pub(crate) fn new(k: usize) -> TopK {
        TopK { k, heap: BinaryHeap::with_capacity(k.min(1 << 16) + 1) }
    }

    /// Offers a candidate; returns true if it entered the `k` best.
    #[inline]
    pub(crate) fn offer(&mut self, s: Scored) -> bool {
        if self.heap.len() < self.k {
            self.heap.push(Worst(s));
            return true;
        }
        match self.heap.peek() {
            Some(w) if s.rank_cmp(&w.0) == Ordering::Less => {
                self.heap.pop();
                self.heap.push(Worst(s));
                true
            }
            _ => false,
        }
    }

    /// The k-th best so far, once `k` candidates have been seen.
    #[inline]
    pub(crate) fn bar(&self) -> Option<Scored> {
        if self.heap.len() == self.k {
            self.heap.peek().map(|w| w.0)
        } else {
            None
        }
    }

    pub(crate) fn into_vec(self) -> Vec<Scored> {
        self.heap.into_iter().map(|w| w.0).collect()
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

    #[test]
    fn ties_go_to_the_lower_index() {
        let mut t = TopK::new(2);
        // three molecules with score 1/2, one with 1/3
        assert!(t.offer(Scored { index: 9, common: 1, union: 2 }));
        assert!(t.offer(Scored { index: 5, common: 2, union: 4 }));
        assert!(t.offer(Scored { index: 3, common: 3, union: 6 }));
        assert!(!t.offer(Scored { index: 1, common: 1, union: 3 }));
        assert!(!t.offer(Scored { index: 7, common: 1, union: 2 }));
        let hits = finish(t.into_vec(), None);
        assert_eq!(hits.iter().map(|h| h.index).collect::<Vec<_>>(), vec![3, 5]);
        assert_eq!(hits[0].score, 0.5);
    }

    #[test]
    fn zero_union_scores_zero() {
        let s = Scored::new(0, 0, 0, 0);
        assert_eq!(s.hit().score, 0.0);
        let z = Scored::new(1, 0, 5, 3);
        assert_eq!(s.rank_cmp(&z), Ordering::Less, "equal score 0, lower index first");
    }
}
