//! A store set's cuts found without merging the runs on one process, and each shard's merge of
//! its own key range of every run (the sort of `molsift ingest --shards K`).
//!
//! Ingest's workers leave their parts each with its run (positions sorted by canonical SMILES,
//! [`crate::runs`]). [`set_cuts`] picks the shards' boundaries by exact selection over the runs:
//! the SMILES at all-records rank `r` is found by binary searches in every run (a pivot, the
//! weighted median of the runs' window middles; each round drops at least a quarter of what is
//! left), never by merging, so the root holds nothing per molecule. Shard `s` holds the
//! molecules whose SMILES lie after cut `s` and up to cut `s + 1`: the cut of boundary `s` is
//! the SMILES at rank `floor(N s / K) - 1` (`N` records of every part), so equal SMILES never
//! straddle two shards, and without `--dedupe` the cuts fall where the one store's order cut
//! into K equal ranges, moved forward past equal SMILES, falls. The cuts depend on the records
//! alone, not on how the input was split into parts: the same set for any worker or rank count.
//!
//! Each shard's writer then merges only its slice of every run ([`PartRuns::merge_shard`]: two
//! binary searches a run, the slices' edges checked against the cuts), with `--dedupe` there:
//! equal SMILES are in one shard. What it holds is its own shard's order.

use std::ops::Range;

use crate::runs::{Merged, PartRuns, Run};
use crate::StoreError;

/// One end of a shard's range of SMILES.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key<'a> {
    /// before every SMILES
    Min,
    /// this SMILES (a range ending here holds it; one starting here does not)
    At(&'a [u8]),
    /// after every SMILES
    Max,
}

/// Shard `s`'s range (after, up to) of a set with `cuts` (the `K - 1` inner cuts of
/// [`set_cuts`]; `None` is before every SMILES).
pub fn shard_range(cuts: &[Option<Vec<u8>>], s: usize) -> (Key<'_>, Key<'_>) {
    fn key(c: &Option<Vec<u8>>) -> Key<'_> {
        c.as_deref().map_or(Key::Min, Key::At)
    }
    let after = if s == 0 { Key::Min } else { key(&cuts[s - 1]) };
    let upto = cuts.get(s).map_or(Key::Max, key);
    (after, upto)
}

/// The first position in `lo..hi` of part `p`'s run whose SMILES is above `x` (`upper`) or at
/// least `x` (the run sorted).
fn bound(
    runs: &PartRuns,
    files: &[Run],
    p: usize,
    (mut lo, mut hi): (usize, usize),
    x: &[u8],
    upper: bool,
) -> Result<usize, StoreError> {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let s = runs.run_smiles(files, p, mid)?;
        if s < x || (upper && s == x) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// The SMILES at rank `r` (from 0, `r` below the runs' total) of all the runs merged: rounds
/// of [`PartRuns::window_middles`], [`weighted_median`] and [`PartRuns::split_windows`] (what
/// MPI ranks holding the runs between them run together, each on its own runs, the middles
/// gathered and the counts summed: the same SMILES).
fn select(runs: &PartRuns, files: &[Run], r: u64) -> Result<Vec<u8>, StoreError> {
    let mut lo = vec![0usize; files.len()];
    let mut hi: Vec<usize> = files.iter().map(Run::len).collect();
    loop {
        let mut mids = runs.window_middles(files, &lo, &hi)?;
        let Some(pivot) = weighted_median(&mut mids) else {
            return Err(StoreError::Invalid(format!(
                "rank {r} is past the runs' molecules, or a run is not in SMILES order"
            )));
        };
        let (below, upto) = runs.split_windows(files, &lo, &hi, pivot)?;
        let less = below.iter().map(|&b| b as u64).sum::<u64>();
        let at_most = upto.iter().map(|&b| b as u64).sum::<u64>();
        if r < less {
            hi = below;
        } else if r >= at_most {
            lo = upto;
        } else {
            return Ok(pivot.to_vec());
        }
    }
}

/// A selection round's pivot: the weighted median of the windows' middles (from every run,
/// of every rank), None when no window is left. The same SMILES whatever their order.
pub fn weighted_median(mids: &mut [(Vec<u8>, u64)]) -> Option<&[u8]> {
    mids.sort_unstable();
    let half = mids.iter().map(|m| m.1).sum::<u64>().div_ceil(2);
    let mut acc = 0;
    mids.iter()
        .find(|m| {
            acc += m.1;
            acc >= half
        })
        .map(|m| m.0.as_slice())
}

impl PartRuns {
    /// A selection round's candidates: for each run whose window `lo[p]..hi[p]` is not empty,
    /// the SMILES at its middle and the window's size.
    pub(crate) fn window_middles(
        &self,
        files: &[Run],
        lo: &[usize],
        hi: &[usize],
    ) -> Result<Vec<(Vec<u8>, u64)>, StoreError> {
        let mut mids = Vec::new();
        for p in 0..files.len() {
            if lo[p] < hi[p] {
                let mid = lo[p] + (hi[p] - lo[p]) / 2;
                mids.push((
                    self.run_smiles(files, p, mid)?.to_vec(),
                    (hi[p] - lo[p]) as u64,
                ));
            }
        }
        Ok(mids)
    }

    /// Each run's window cut by `pivot`: (the first position at least `pivot`, the first
    /// above it), per run.
    pub(crate) fn split_windows(
        &self,
        files: &[Run],
        lo: &[usize],
        hi: &[usize],
        pivot: &[u8],
    ) -> Result<(Vec<usize>, Vec<usize>), StoreError> {
        let (mut below, mut upto) = (vec![0; files.len()], vec![0; files.len()]);
        for p in 0..files.len() {
            below[p] = bound(self, files, p, (lo[p], hi[p]), pivot, false)?;
            upto[p] = bound(self, files, p, (below[p], hi[p]), pivot, true)?;
        }
        Ok((below, upto))
    }

    /// [`PartRuns::window_middles`] of these runs (each mapped for the call): one rank's share
    /// of a selection round run by MPI ranks together.
    pub fn middles(&self, lo: &[usize], hi: &[usize]) -> Result<Vec<(Vec<u8>, u64)>, StoreError> {
        let files = self.read_runs(false)?;
        self.check_windows(&files, lo, hi)?;
        self.window_middles(&files, lo, hi)
    }

    /// [`PartRuns::split_windows`] of these runs (each mapped for the call).
    pub fn split(
        &self,
        lo: &[usize],
        hi: &[usize],
        pivot: &[u8],
    ) -> Result<(Vec<usize>, Vec<usize>), StoreError> {
        let files = self.read_runs(false)?;
        self.check_windows(&files, lo, hi)?;
        self.split_windows(&files, lo, hi, pivot)
    }

    /// Each run checked to be a permutation of its part's positions; returns their lengths.
    pub fn check_runs(&self) -> Result<Vec<usize>, StoreError> {
        Ok(self.read_runs(true)?.iter().map(Run::len).collect())
    }

    fn check_windows(&self, files: &[Run], lo: &[usize], hi: &[usize]) -> Result<(), StoreError> {
        let fits = lo.len() == files.len()
            && hi.len() == files.len()
            && (0..files.len()).all(|p| lo[p] <= hi[p] && hi[p] <= files[p].len());
        if !fits {
            return Err(StoreError::Invalid(format!(
                "windows {lo:?}..{hi:?} do not fit the {} runs",
                files.len()
            )));
        }
        Ok(())
    }
}

/// The inner cuts of a set of `shards` shards of ingest's parts `runs` (every run checked to
/// be a permutation of its part's positions): for boundary `s = 1 .. shards`, the SMILES at
/// all-records rank `floor(N s / shards) - 1`, or `None` when that rank is 0 (the shards before
/// it are empty).
pub fn set_cuts(runs: &PartRuns, shards: usize) -> Result<Vec<Option<Vec<u8>>>, StoreError> {
    if shards == 0 {
        return Err(StoreError::Invalid("a set needs at least one shard".into()));
    }
    let files = runs.read_runs(true)?;
    let total: u64 = files.iter().map(|f| f.len() as u64).sum();
    if total > u64::from(u32::MAX) {
        return Err(StoreError::Invalid(format!(
            "{total} molecules: ingest writes sets of at most {} today",
            u32::MAX
        )));
    }
    (1..shards)
        .map(|s| {
            let r = (u128::from(total) * s as u128 / shards as u128) as u64;
            (r > 0).then(|| select(runs, &files, r - 1)).transpose()
        })
        .collect()
}

/// Shard `s`'s merge: its positions (among all the parts' molecules) in the set's order, and
/// what the merge found (duplicates; with `dedupe`, the molecules left out).
pub struct ShardMerge {
    /// the shard's molecules kept, by position among all the parts' molecules, in set order
    pub positions: Vec<u64>,
    /// its duplicates and molecules left out (each first's index is its place in the shard)
    pub merged: Merged,
}

impl PartRuns {
    /// The positions of run `p` (of `files`) whose SMILES lie in shard `s`'s range of a set
    /// with `cuts`: two binary searches, the slice's edges checked (the SMILES before it at
    /// most the range's start, the one after it above the range's end).
    pub(crate) fn shard_slice(
        &self,
        files: &[Run],
        p: usize,
        cuts: &[Option<Vec<u8>>],
        s: usize,
    ) -> Result<Range<usize>, StoreError> {
        let (after, upto) = shard_range(cuts, s);
        let n = files[p].len();
        let edge = |key: Key<'_>| -> Result<usize, StoreError> {
            let k = match key {
                Key::Min => return Ok(0),
                Key::Max => return Ok(n),
                Key::At(x) => x,
            };
            let k_at = bound(self, files, p, (0, n), k, true)?;
            let sorted = (k_at == 0 || self.run_smiles(files, p, k_at - 1)? <= k)
                && (k_at == n || self.run_smiles(files, p, k_at)? > k);
            if !sorted {
                return Err(self.unsorted(p));
            }
            Ok(k_at)
        };
        let (a, b) = (edge(after)?, edge(upto)?);
        Ok(a..b.max(a))
    }

    /// Merges shard `s`'s slice of every run (the set's `cuts`, [`set_cuts`]): per run, the
    /// positions whose SMILES lie in the shard's range (two binary searches, the slice's edges
    /// checked: the SMILES before it at most the range's start, the one after it above the
    /// range's end), then k-way as [`PartRuns::merge`] merges whole runs. The runs are not
    /// checked again to be permutations ([`set_cuts`] did, on the root).
    pub fn merge_shard(
        &self,
        cuts: &[Option<Vec<u8>>],
        s: usize,
        dedupe: bool,
    ) -> Result<ShardMerge, StoreError> {
        if s > cuts.len() {
            return Err(StoreError::Invalid(format!(
                "shard {s} of a set of {} shards",
                cuts.len() + 1
            )));
        }
        let files = self.read_runs(false)?;
        let slices = (0..files.len())
            .map(|p| self.shard_slice(&files, p, cuts, s))
            .collect::<Result<Vec<_>, _>>()?;
        let mut positions = Vec::new();
        let merged = self.merge_slices(&files, &slices, dedupe, |g| positions.push(g))?;
        Ok(ShardMerge { positions, merged })
    }
}

/// A set's `duplicates.tsv` (its header, then a row per molecule left out) from the shards'
/// merges: `rows` are (position left out, position of the first of its SMILES, the first's set
/// position), ascending by position (input order).
pub fn set_duplicates(runs: &PartRuns, rows: &[(u64, u64, u64)]) -> Result<Vec<u8>, StoreError> {
    let mut out = crate::duplicates::HEADER.as_bytes().to_vec();
    for &(g, first, at) in rows {
        let ((store, i), (kept, k)) = (runs.at(g), runs.at(first));
        let row = crate::duplicates::row(store.source_line(i), store.id(i)?, at, kept.id(k)?);
        out.extend_from_slice(row.as_bytes());
    }
    Ok(out)
}
