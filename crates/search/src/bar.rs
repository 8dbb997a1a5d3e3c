//! The k-th best score that several searches of one query share while they run: the threads of
//! one search, or searches of the same query over other shards of a store set (threads of this
//! process, or MPI ranks of this node through memory they share, see [`BarSlot`]).
//!
//! Any search's k-th best is a score that k real molecules reach, so the k-th best of the
//! shards together is at least the best of them: every search may prune with it (keeping the
//! molecules that tie it: the tie rule is decided at the merge). A search that learns a higher
//! bar from the others early counts fewer blocks with a low bar (`BENCHMARKS.md`).
//!
//! A cell is one `u64`: `tag << 36 | common << 18 | union`, the tag (28 bits) naming the query
//! (searches of different queries that reuse a cell never read each other's bar), `common << 18
//! | union` the score as an exact ratio (0: none yet). 18 bits hold every term of the format's
//! largest fingerprints (`common <= 65,536`, `union <= 131,072`).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::threshold::cmp_ratio;

/// Bits of a cell's tag, and of each term of its score.
const TAG_BITS: u32 = 28;
const TERM_BITS: u32 = 18;
const TAG_MASK: u32 = (1 << TAG_BITS) - 1;
const TERM_MASK: u32 = (1 << TERM_BITS) - 1;

/// A shared k-th best: the cell and the tag of the query whose bar it holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SharedBar<'a> {
    cell: &'a AtomicU64,
    tag: u32,
}

impl<'a> SharedBar<'a> {
    /// The cell shared for the query `tag` (its low 28 bits are kept).
    pub(crate) fn new(cell: &'a AtomicU64, tag: u32) -> Self {
        SharedBar {
            cell,
            tag: tag & TAG_MASK,
        }
    }

    /// The bar shared for this query, as `(common, union)`, if any.
    #[inline]
    pub(crate) fn get(&self) -> Option<(u32, u32)> {
        let v = self.cell.load(Ordering::Relaxed);
        let (tag, c, u) = unpack(v);
        (tag == self.tag && (c, u) != (0, 0)).then_some((c, u))
    }

    /// Takes the cell for this query if it holds an older query's bar (a search of a later
    /// query that already took it keeps it): its value is then "none yet".
    pub(crate) fn claim(&self) {
        self.store_if(|cur| older(cur, self.tag), pack(self.tag, 0, 0));
    }

    /// Raises the shared bar to `c / u` if that is better (and the cell is this query's, or an
    /// older query's).
    pub(crate) fn raise(&self, c: u32, u: u32) {
        if c > TERM_MASK || u > TERM_MASK || (c, u) == (0, 0) {
            return;
        }
        let tag = self.tag;
        self.store_if(
            |cur| {
                let (t, cc, cu) = unpack(cur);
                older(cur, tag)
                    || (t == tag && ((cc, cu) == (0, 0) || cmp_ratio(c, u, cc, cu).is_gt()))
            },
            pack(tag, c, u),
        );
    }

    fn store_if(&self, replace: impl Fn(u64) -> bool, new: u64) {
        let mut cur = self.cell.load(Ordering::Relaxed);
        while replace(cur) {
            match self
                .cell
                .compare_exchange_weak(cur, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(v) => cur = v,
            }
        }
    }
}

fn pack(tag: u32, c: u32, u: u32) -> u64 {
    (u64::from(tag) << (2 * TERM_BITS)) | (u64::from(c) << TERM_BITS) | u64::from(u)
}

fn unpack(v: u64) -> (u32, u32, u32) {
    (
        (v >> (2 * TERM_BITS)) as u32,
        (v >> TERM_BITS) as u32 & TERM_MASK,
        v as u32 & TERM_MASK,
    )
}

/// Whether the cell's value belongs to a query before `tag` (tags compared modulo 2^28, so a
/// long-running process may wrap them; cells are reused within far fewer queries).
fn older(cur: u64, tag: u32) -> bool {
    let t = unpack(cur).0;
    let ahead = tag.wrapping_sub(t) & TAG_MASK;
    ahead != 0 && ahead < 1 << (TAG_BITS - 1)
}

/// A cell given to a search from outside ([`crate::SearchOptions::bar`]), with the tag of the
/// query: searches of the same query given cells at the same place share their k-th best.
/// Tags must increase query by query in every process that shares the cell (as they do when
/// every MPI rank counts the same collective queries), and differ from the last tag the cell
/// held within the last 2^27 queries (tags are kept modulo 2^28).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BarSlot {
    cell: *const AtomicU64,
    tag: u32,
}

// SAFETY: the cell is only accessed atomically; `BarSlot::new`'s caller keeps it alive.
unsafe impl Send for BarSlot {}
// SAFETY: as above.
unsafe impl Sync for BarSlot {}

impl BarSlot {
    /// # Safety
    /// `cell` must point to a `u64` aligned to 8 bytes that stays valid (and is accessed only
    /// atomically, by any process that maps it) for as long as any search given this slot runs.
    pub unsafe fn new(cell: *const AtomicU64, tag: u32) -> BarSlot {
        BarSlot { cell, tag }
    }

    /// The bar shared in the cell for this slot's query, as `(common, union)`, if any.
    pub fn get(&self) -> Option<(u32, u32)> {
        self.shared().get()
    }

    pub(crate) fn shared(&self) -> SharedBar<'_> {
        // SAFETY: `new`'s contract.
        SharedBar::new(unsafe { &*self.cell }, self.tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bar_rises_and_is_read_by_its_query_only() {
        let cell = AtomicU64::new(0);
        let a = SharedBar::new(&cell, 7);
        a.claim();
        assert_eq!(a.get(), None, "claimed: none yet");
        a.raise(3, 10);
        a.raise(2, 10); // lower: kept out
        assert_eq!(a.get(), Some((3, 10)));
        a.raise(6, 10);
        assert_eq!(a.get(), Some((6, 10)));
        let old = SharedBar::new(&cell, 6);
        old.raise(9, 10);
        old.claim();
        assert_eq!(
            old.get(),
            None,
            "an older query neither reads nor writes it"
        );
        assert_eq!(a.get(), Some((6, 10)));
        let next = SharedBar::new(&cell, 8);
        assert_eq!(next.get(), None);
        next.raise(1, 10);
        assert_eq!(next.get(), Some((1, 10)), "a later query takes the cell");
        assert_eq!(a.get(), None);
        a.raise(9, 10);
        assert_eq!(next.get(), Some((1, 10)), "and keeps it");
        let big = SharedBar::new(&cell, 9);
        big.raise(65_536, 131_072);
        assert_eq!(
            big.get(),
            Some((65_536, 131_072)),
            "the largest fingerprints' terms"
        );
        big.raise(300_000, 400_000);
        assert_eq!(
            big.get(),
            Some((65_536, 131_072)),
            "terms past 18 bits are not shared"
        );
    }

    #[test]
    fn tags_wrap() {
        let cell = AtomicU64::new(pack(TAG_MASK, 5, 10));
        let wrapped = SharedBar::new(&cell, 2);
        wrapped.claim();
        assert_eq!(wrapped.get(), None);
        wrapped.raise(4, 10);
        assert_eq!(wrapped.get(), Some((4, 10)));
        SharedBar::new(&cell, u32::MAX).raise(9, 10);
        assert_eq!(
            wrapped.get(),
            Some((4, 10)),
            "the query before the wrap is older"
        );
        // a caller's 32-bit tags are kept modulo 2^28: both spellings name one query
        SharedBar::new(&cell, (1 << 28) + 2).raise(6, 10);
        assert_eq!(wrapped.get(), Some((6, 10)));
    }
}
