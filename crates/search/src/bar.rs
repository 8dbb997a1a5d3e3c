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
//!
//! The best of the searches' own k-th bests is lower than the k-th best of their molecules
//! together (two shards' 10th bests are each about the set's 20th). So beside the cell a slot
//! may hold the scores themselves ([`SharedScores`]: for `k <= SHARED_K`): each search adds the
//! score of every molecule it keeps (each molecule is kept by one search, once), the slot keeps
//! the `k` best of all of them, and once it holds `k` their least raises the cell. That is the
//! k-th best of the molecules found so far by every search together: what one search over the
//! whole set would have reached by now. The slot is taken under a lock that a search only
//! tries (a few spins, never waits): scores it could not add wait for its next try, and a
//! score never added only leaves the bar lower (still a bar every search may prune with), so a
//! process that dies holding the lock costs the others their sharing, never their answer.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::threshold::cmp_ratio;

/// Bits of a cell's tag, and of each term of its score.
const TAG_BITS: u32 = 28;
const TERM_BITS: u32 = 18;
const TAG_MASK: u32 = (1 << TAG_BITS) - 1;
const TERM_MASK: u32 = (1 << TERM_BITS) - 1;

/// The largest `k` whose scores a slot shares ([`SharedScores`]); larger top-k searches share
/// their k-th bests only.
pub const SHARED_K: usize = 100;
/// Words of a scores slot: its lock, then `SHARED_K` scores.
pub const SCORES_WORDS: usize = 1 + SHARED_K;
/// Tries at the lock before the scores wait for the next chance.
const LOCK_TRIES: u32 = 32;

/// A shared k-th best: the cell and the tag of the query whose bar it holds, and the slot of
/// scores beside it if any.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SharedBar<'a> {
    cell: &'a AtomicU64,
    scores: Option<SharedScores<'a>>,
    tag: u32,
}

impl<'a> SharedBar<'a> {
    /// The cell shared for the query `tag` (its low 28 bits are kept).
    pub(crate) fn new(cell: &'a AtomicU64, tag: u32) -> Self {
        SharedBar {
            cell,
            scores: None,
            tag: tag & TAG_MASK,
        }
    }

    /// With a slot of `SCORES_WORDS` words where the searches add their molecules' scores.
    pub(crate) fn with_scores(mut self, slot: &'a [AtomicU64]) -> Self {
        debug_assert_eq!(slot.len(), SCORES_WORDS);
        self.scores = Some(SharedScores { slot });
        self
    }

    /// Whether a top-k search of `k` adds its scores to a slot.
    pub(crate) fn shares_scores(&self, k: usize) -> bool {
        self.scores.is_some() && (1..=SHARED_K).contains(&k)
    }

    /// Adds `pending` (scores `(common, union)` of molecules this search keeps, none added
    /// before) to the slot, if its lock can be had now: they are then taken out of `pending`,
    /// and once the slot holds `k` of this query its k-th best raises the cell. Scores the slot
    /// cannot take now stay in `pending` (its `k` best, for the next try).
    pub(crate) fn add_scores(&self, k: usize, pending: &mut Vec<(u32, u32)>) {
        if pending.is_empty() {
            return;
        }
        let Some(scores) = self.scores.filter(|_| self.shares_scores(k)) else {
            pending.clear();
            return;
        };
        match scores.add(self.tag, k, pending) {
            Added::Busy => {
                if pending.len() > 4 * k {
                    pending.sort_unstable_by(|a, b| cmp_ratio(b.0, b.1, a.0, a.1));
                    pending.truncate(k);
                }
            }
            Added::Kth(c, u) => {
                pending.clear();
                self.raise(c, u);
            }
            Added::Done => pending.clear(),
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
        if !fits(c, u) {
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

/// What [`SharedScores::add`] did.
enum Added {
    /// the lock was held by another search: nothing added
    Busy,
    /// added; the slot holds fewer than `k` scores of this query (or a later query owns it)
    Done,
    /// added; the k-th best of the slot's scores
    Kth(u32, u32),
}

/// A slot of scores: word 0 the lock (0: free), then up to `SHARED_K` cells packed as the bar's
/// (`tag`, `common`, `union`); cells of an older query's tag are free.
#[derive(Debug, Clone, Copy)]
struct SharedScores<'a> {
    slot: &'a [AtomicU64],
}

impl SharedScores<'_> {
    fn add(&self, tag: u32, k: usize, pending: &[(u32, u32)]) -> Added {
        let lock = &self.slot[0];
        let mut tries = 0;
        while lock
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            tries += 1;
            if tries >= LOCK_TRIES {
                return Added::Busy;
            }
            std::hint::spin_loop();
        }
        let cells = &self.slot[1..=k];
        let mut out = Added::Done;
        // a later query owns the slot: its scores are not this query's to compare
        let later = cells.iter().any(|c| {
            let v = c.load(Ordering::Relaxed);
            v != 0 && unpack(v).0 != tag && !older(v, tag)
        });
        if !later {
            for &(c, u) in pending.iter().filter(|&&(c, u)| fits(c, u)) {
                let at = match free_or_least(cells, tag) {
                    Place::Free(i) => Some(i),
                    Place::Least(i, lc, lu) => cmp_ratio(c, u, lc, lu).is_gt().then_some(i),
                };
                if let Some(i) = at {
                    cells[i].store(pack(tag, c, u), Ordering::Relaxed);
                }
            }
            if let Place::Least(_, c, u) = free_or_least(cells, tag) {
                out = Added::Kth(c, u);
            }
        }
        lock.store(0, Ordering::Release);
        out
    }
}

/// Where a slot's next score goes: the first cell holding no score of the query (free), or,
/// when every cell holds one, the cell of the least (the slot's k-th best).
enum Place {
    Free(usize),
    Least(usize, u32, u32),
}

fn free_or_least(cells: &[AtomicU64], tag: u32) -> Place {
    let mut least: Option<(usize, u32, u32)> = None;
    for (i, cell) in cells.iter().enumerate() {
        let (t, c, u) = unpack(cell.load(Ordering::Relaxed));
        if t != tag || (c, u) == (0, 0) {
            return Place::Free(i);
        }
        if least.map_or(true, |(_, bc, bu)| cmp_ratio(c, u, bc, bu).is_lt()) {
            least = Some((i, c, u));
        }
    }
    let (i, c, u) = least.expect("a slot of at least one cell");
    Place::Least(i, c, u)
}

/// Whether `c / u` is a score a cell can hold: 18-bit terms, not "none yet".
fn fits(c: u32, u: u32) -> bool {
    c <= TERM_MASK && u <= TERM_MASK && (c, u) != (0, 0)
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
    /// a slot of `SCORES_WORDS` words, or null
    scores: *const AtomicU64,
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
        BarSlot {
            cell,
            scores: std::ptr::null(),
            tag,
        }
    }

    /// A slot whose searches also share the scores of their molecules (top-k of `k <=
    /// SHARED_K`: the bar is then the k-th best of every search's molecules together).
    ///
    /// # Safety
    /// As [`BarSlot::new`], for `cell` and for the `SCORES_WORDS` words at `scores` (aligned to
    /// 8 bytes, zeroed before first use).
    pub unsafe fn with_scores(
        cell: *const AtomicU64,
        scores: *const AtomicU64,
        tag: u32,
    ) -> BarSlot {
        BarSlot { cell, scores, tag }
    }

    /// The bar shared in the cell for this slot's query, as `(common, union)`, if any.
    pub fn get(&self) -> Option<(u32, u32)> {
        self.shared().get()
    }

    pub(crate) fn shared(&self) -> SharedBar<'_> {
        // SAFETY: `new`'s contract.
        let bar = SharedBar::new(unsafe { &*self.cell }, self.tag);
        if self.scores.is_null() {
            return bar;
        }
        // SAFETY: `with_scores`' contract.
        bar.with_scores(unsafe { std::slice::from_raw_parts(self.scores, SCORES_WORDS) })
    }
}

/// A cell and a slot of scores of one search's own, zeroed: where its threads (or its shards)
/// share their k-th best when the caller gave no [`BarSlot`].
pub(crate) struct OwnSlot {
    cell: AtomicU64,
    scores: Vec<AtomicU64>,
}

impl OwnSlot {
    pub(crate) fn new() -> OwnSlot {
        OwnSlot {
            cell: AtomicU64::new(0),
            scores: (0..SCORES_WORDS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// The bar shared in this cell and slot (query tag 1: the only query they serve).
    pub(crate) fn shared(&self) -> SharedBar<'_> {
        SharedBar::new(&self.cell, 1).with_scores(&self.scores)
    }
}

/// `f` given the caller's slot, or else an [`OwnSlot`]'s, alive for the call.
pub(crate) fn with_slot<R>(bar: Option<BarSlot>, f: impl FnOnce(BarSlot) -> R) -> R {
    if let Some(slot) = bar {
        return f(slot);
    }
    let own = OwnSlot::new();
    // SAFETY: the cell and the slot (aligned, zeroed) outlive `f`, the only user of the slot.
    f(unsafe { BarSlot::with_scores(&own.cell, own.scores.as_ptr(), 1) })
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

    fn slot() -> Vec<AtomicU64> {
        (0..SCORES_WORDS).map(|_| AtomicU64::new(0)).collect()
    }

    #[test]
    fn shared_scores_give_the_kth_best_of_every_search_together() {
        let (cell, scores) = (AtomicU64::new(0), slot());
        let a = SharedBar::new(&cell, 5).with_scores(&scores);
        let b = SharedBar::new(&cell, 5).with_scores(&scores);
        a.claim();
        assert!(a.shares_scores(3) && !a.shares_scores(SHARED_K + 1) && !a.shares_scores(0));
        // two shards' molecules: 9/10, 5/10, 1/10 and 8/10, 7/10, 2/10
        let mut pa = vec![(9, 10), (5, 10)];
        a.add_scores(3, &mut pa);
        assert!(pa.is_empty());
        assert_eq!(a.get(), None, "fewer than k scores: no bar yet");
        let mut pb = vec![(8, 10), (2, 10), (7, 10)];
        b.add_scores(3, &mut pb);
        // each search's own 3rd best is at most 2/10; together the 3rd best is 7/10
        assert_eq!(a.get(), Some((7, 10)));
        let mut pa = vec![(1, 10)];
        a.add_scores(3, &mut pa);
        assert_eq!(b.get(), Some((7, 10)), "a lower score changes nothing");
        // a search of k > SHARED_K shares its k-th best only
        let mut big = vec![(10, 10)];
        a.add_scores(SHARED_K + 1, &mut big);
        assert!(big.is_empty());
        assert_eq!(a.get(), Some((7, 10)));
        // a later query takes the slot over; the earlier one can no longer add to it
        let c = SharedBar::new(&cell, 6).with_scores(&scores);
        c.claim();
        let mut pc = vec![(1, 10)];
        c.add_scores(1, &mut pc);
        assert_eq!(
            c.get(),
            Some((1, 10)),
            "the older query's scores are free cells"
        );
        let mut late = vec![(10, 10), (10, 10), (10, 10)];
        a.add_scores(3, &mut late);
        assert_eq!(
            c.get(),
            Some((1, 10)),
            "an older query never writes a later one's"
        );
    }

    #[test]
    fn scores_wait_for_a_free_lock_and_never_block() {
        let (cell, scores) = (AtomicU64::new(0), slot());
        let a = SharedBar::new(&cell, 9).with_scores(&scores);
        a.claim();
        scores[0].store(1, Ordering::Relaxed); // another search holds the lock
        let mut pending: Vec<(u32, u32)> = (1..=9).map(|c| (c, 10)).collect();
        a.add_scores(2, &mut pending);
        assert_eq!(a.get(), None);
        assert_eq!(pending.len(), 2, "the k best kept for the next try past 4k");
        assert_eq!(pending, vec![(9, 10), (8, 10)]);
        scores[0].store(0, Ordering::Relaxed);
        a.add_scores(2, &mut pending);
        assert!(pending.is_empty());
        assert_eq!(a.get(), Some((8, 10)));
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
