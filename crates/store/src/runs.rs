//! Ingest's parts as sorted runs, merged k-way into the one store's order: no staging store
//! between the workers and the one store.
//!
//! Each worker writes its part (a version-1 part store of its task's molecules, in input
//! order) and beside it the part's run ([`write_run`], `PART.run.u32`: the part's positions
//! sorted by canonical SMILES in byte order, stable). [`PartRuns::merge`] merges the runs with
//! a heap of one cursor per part: the root holds the order (4 bytes a molecule) and the mapped
//! parts, never every SMILES at once. Equal SMILES come out side by side, the earliest record
//! first, so duplicates are counted in the merge and `--dedupe` leaves out all but the first.
//! The one store's writer then reads each molecule where it lies in its part
//! ([`Molecules`]), by input rank.
//!
//! Memory on the root: the order (4 bytes a molecule) and, while merging, the runs mapped (a
//! bit a molecule of a part while its run is checked), with `--dedupe` the pairs of duplicates
//! left out (16 bytes each), and the parts' mapped pages (the kernel's to reclaim). An input
//! rank's place ([`Places`]) is found from the parts' first positions and the molecules left
//! out (two binary searches), so a shard's writer, which opens every part, holds nothing per
//! molecule of the set.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::source::Molecules;
use crate::{
    duplicates, rejects, Counts, FingerprintSpec, Manifest, Store, StoreError, StoreWriter, Verify,
};

/// The run beside a part: `PART` + this.
pub const RUN_EXT: &str = ".run.u32";

/// The run file of the part store at `part`.
pub fn run_path(part: &Path) -> PathBuf {
    let mut s = part.as_os_str().to_owned();
    s.push(RUN_EXT);
    PathBuf::from(s)
}

/// Writes the run of the finished part store at `part` (beside it, [`run_path`]): its
/// positions sorted by canonical SMILES in byte order, stable, as u32 little-endian.
pub fn write_run(part: &Path) -> Result<(), StoreError> {
    let store = Store::open(part, Verify::Sizes)?;
    write_run_order(part, &crate::v2::store_order(&store)?)
}

/// Writes `order` as the run beside the part store at `part` (what [`write_run`] would find
/// for it, known already: a slice's run is its part's, cut to the slice).
pub(crate) fn write_run_order(part: &Path, order: &[u32]) -> Result<(), StoreError> {
    let bytes: Vec<u8> = order.iter().flat_map(|o| o.to_le_bytes()).collect();
    let path = run_path(part);
    molsift_iostats::write_file(&path, &bytes, false).map_err(|e| StoreError::io(&path, e))
}

/// Where ingest's molecules lie among its parts: the parts' first positions (among all the
/// parts' molecules taken in task order) and the positions left out (`--dedupe`), ascending.
/// Input rank `r` is the `r`-th molecule of the parts less those left out. Nothing is held
/// per molecule: a place is found by binary searches. What every reader of ingest's parts by
/// input rank uses ([`PartRuns`] here, the substructure index's parts reader).
///
/// A part may also be a *slice* (`molsift ingest --shards` under MPI: what another rank sent
/// of its part for one shard, [`crate::slices`]): it holds some of a part's molecules, their
/// positions among all the parts' molecules listed beside it (`PART` + [`HELD_EXT`]); places
/// of slices ([`Places::for_parts`] with the parts' total) find a position's slice and its place
/// there by binary searches, and input ranks stay those of the whole library.
#[derive(Debug, Clone, Default)]
pub struct Places {
    /// the first position of each part, then their number
    bases: Vec<u64>,
    /// the positions left out, ascending
    dropped: Vec<u64>,
    /// for parts that are slices, the positions each holds (ascending); `None` for whole parts
    held: Option<Vec<Vec<u64>>>,
}

/// The positions a slice holds, beside it: `PART` + this (u64 little-endian, ascending).
pub const HELD_EXT: &str = ".held.u64";

/// The file of the positions the slice at `part` holds.
pub fn held_path(part: &Path) -> PathBuf {
    let mut s = part.as_os_str().to_owned();
    s.push(HELD_EXT);
    PathBuf::from(s)
}

/// Reads the positions the slice at `part` (of `n` molecules) holds: an error (the reason,
/// naming the file) unless they are `n` ascending positions below `total`.
fn read_held(part: &Path, n: u64, total: u64) -> Result<Vec<u64>, String> {
    let path = held_path(part);
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let bad = |why: &str| format!("{}: {why}", path.display());
    if bytes.len() as u64 != n * 8 {
        return Err(bad(&format!(
            "{} bytes for a slice of {n} molecules (8 each)",
            bytes.len()
        )));
    }
    let held: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect();
    if held.windows(2).any(|w| w[0] >= w[1]) || held.last().is_some_and(|&g| g >= total) {
        return Err(bad(&format!(
            "its positions are not ascending below the parts' {total} molecules"
        )));
    }
    Ok(held)
}

impl Places {
    /// The places of parts of `sizes` molecules, in task order, none left out.
    pub fn new(sizes: impl IntoIterator<Item = u64>) -> Places {
        let mut bases = vec![0u64];
        for n in sizes {
            bases.push(bases[bases.len() - 1] + n);
        }
        Places {
            bases,
            dropped: Vec::new(),
            held: None,
        }
    }

    /// The places of `parts` of `sizes` molecules, in task order: whole parts ([`Places::new`])
    /// when `total` is `None`; else slices of parts holding `total` molecules in all, each
    /// slice's positions read from beside it ([`held_path`]), the slices in task order (their
    /// positions ascending from one slice to the next). An error (the reason) for a list that
    /// is missing, damaged or out of order.
    pub fn for_parts(parts: &[&Path], sizes: &[u64], total: Option<u64>) -> Result<Places, String> {
        let Some(total) = total else {
            return Ok(Places::new(sizes.iter().copied()));
        };
        let mut held = Vec::with_capacity(parts.len());
        for (part, &n) in parts.iter().zip(sizes) {
            held.push(read_held(part, n, total)?);
        }
        // an empty slice shares its first position with the next (as an empty part does)
        let mut bases = vec![total; held.len() + 1];
        for p in (0..held.len()).rev() {
            bases[p] = held[p].first().copied().unwrap_or(bases[p + 1]);
        }
        for p in 1..held.len() {
            if let (Some(&a), Some(&b)) = (held[p - 1].last(), held[p].first()) {
                if a >= b {
                    return Err(format!(
                        "{}: its positions do not follow those of the slice before it",
                        held_path(parts[p]).display()
                    ));
                }
            }
        }
        Ok(Places {
            bases,
            dropped: Vec::new(),
            held: Some(held),
        })
    }

    /// The position (among all the parts' molecules) of molecule `local` of part `p`.
    pub fn global(&self, p: usize, local: usize) -> u64 {
        match &self.held {
            None => self.bases[p] + local as u64,
            Some(h) => h[p][local],
        }
    }

    /// Leaves out the molecules at positions `dropped` (none left out before); an error (the
    /// reason) unless they are ascending positions below [`Places::total`].
    pub fn leave_out(&mut self, dropped: Vec<u64>) -> Result<(), String> {
        let total = self.total();
        if dropped.windows(2).any(|w| w[0] >= w[1]) {
            return Err("the molecules left out are not in ascending order".into());
        }
        if let Some(&d) = dropped.last().filter(|&&d| d >= total) {
            return Err(format!("molecule {d} is left out, the parts hold {total}"));
        }
        self.dropped = dropped;
        Ok(())
    }

    /// The molecules of all the parts, those left out included.
    pub fn total(&self) -> u64 {
        self.bases[self.bases.len() - 1]
    }

    /// The molecules kept (input ranks).
    pub fn len(&self) -> u64 {
        self.total() - self.dropped.len() as u64
    }

    /// Whether no molecule is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The positions left out, ascending.
    pub fn dropped(&self) -> &[u64] {
        &self.dropped
    }

    /// The first position of part `p`.
    pub fn base(&self, p: usize) -> u64 {
        self.bases[p]
    }

    /// The part holding position `g` and its place there (empty parts share their first
    /// position with the next: the last part starting at or before `g`).
    ///
    /// Of slices, `g` must be a position one of them holds (a merge's or a shard's own).
    pub fn at(&self, g: u64) -> (usize, usize) {
        let p = self.bases.partition_point(|&b| b <= g) - 1;
        match &self.held {
            None => (p, (g - self.bases[p]) as usize),
            Some(h) => (
                p,
                h[p].binary_search(&g).unwrap_or_else(|_| {
                    panic!("position {g} is in none of the slices (a shard's own positions only)")
                }),
            ),
        }
    }

    /// The input rank of the kept molecule at position `g`.
    pub fn rank_of(&self, g: u64) -> u64 {
        g - self.dropped.partition_point(|&d| d < g) as u64
    }

    /// The position of input rank `r`: `r` plus the molecules left out before it, those whose
    /// position less the ones left out before them is at most `r` (the inverse of
    /// [`Places::rank_of`]).
    pub fn position_of(&self, r: u64) -> u64 {
        let (mut lo, mut hi) = (0, self.dropped.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.dropped[mid] - mid as u64 <= r {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        r + lo as u64
    }

    /// The part and place of input rank `r`.
    pub fn place(&self, r: u64) -> (usize, usize) {
        self.at(self.position_of(r))
    }
}

/// A molecule `--dedupe` left out: its position (among all the parts' molecules), that of the
/// first molecule of its SMILES, and the first's index among the molecules the merge kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dropped {
    /// its position among all the parts' molecules
    pub position: u64,
    /// the position of the first molecule of its SMILES
    pub first: u64,
    /// the first's index among the molecules the merge kept
    pub first_index: u64,
}

/// What a merge of runs found besides its order.
#[derive(Debug, Default)]
pub struct Merged {
    /// with `dedupe`, the molecules left out, in merge order
    pub dropped: Vec<Dropped>,
    /// molecules whose SMILES an earlier one of the merge had
    pub duplicates: u64,
}

/// A molecule's part and its place there.
type Place<'a> = (&'a Store, usize);

/// Ingest's part stores, in task order, as one source of molecules: input rank `r` is the
/// `r`-th molecule of the parts taken in order, less those `--dedupe` left out.
pub struct PartRuns {
    parts: Vec<Store>,
    /// where the molecules lie: the parts' first positions, the positions left out
    places: Places,
    /// for each position left out, the position of the first molecule of its SMILES (known after
    /// [`PartRuns::merge`]; empty for parts reopened with [`PartRuns::open`])
    first: Vec<u64>,
    spec: FingerprintSpec,
    counts: Counts,
    provenance: Value,
}

impl PartRuns {
    /// Opens the finished part stores `parts` (fingerprints of `spec`), in task order, less
    /// the molecules at the ascending positions `dropped` (what [`PartRuns::merge`] left out);
    /// no merge: what a shard's writer, on any worker or rank, reads its molecules from.
    ///
    /// With `total`, the parts are slices of parts holding `total` molecules in all (what one
    /// shard's writer received from the ranks under MPI, [`crate::slices`]): positions and input
    /// ranks are those of the whole library ([`Places::for_parts`]), the counts' molecules the
    /// library's.
    pub fn open(
        parts: &[&Path],
        spec: FingerprintSpec,
        dropped: &[u64],
        provenance: Value,
        total: Option<u64>,
    ) -> Result<PartRuns, StoreError> {
        let mut runs = PartRuns::open_all(parts, spec, provenance, total)?;
        runs.leave_out(dropped.to_vec())?;
        Ok(runs)
    }

    /// Every molecule of `parts`, none left out.
    fn open_all(
        parts: &[&Path],
        spec: FingerprintSpec,
        provenance: Value,
        total: Option<u64>,
    ) -> Result<PartRuns, StoreError> {
        let stores = parts
            .iter()
            .map(|part| Store::open(part, Verify::Sizes))
            .collect::<Result<Vec<_>, _>>()?;
        PartRuns::of_stores(parts, stores, spec, provenance, total)
    }

    /// The one part store at `part`, already open as `store` (its fingerprints its spec), every
    /// molecule of it: what [`crate::slices::write_part_slices`] cuts, from the store it reads
    /// the rows of, so the part is opened once.
    pub(crate) fn of_part(part: &Path, store: Store) -> Result<PartRuns, StoreError> {
        let spec = store.manifest().fingerprint.clone();
        PartRuns::of_stores(&[part], vec![store], spec, Value::Null, None)
    }

    /// The part `i` as opened.
    pub(crate) fn part(&self, i: usize) -> &Store {
        &self.parts[i]
    }

    /// [`PartRuns::open_all`] of the stores `stores` opened at `parts`.
    fn of_stores(
        parts: &[&Path],
        stores: Vec<Store>,
        spec: FingerprintSpec,
        provenance: Value,
        total: Option<u64>,
    ) -> Result<PartRuns, StoreError> {
        let mut counts = Counts {
            duplicates: Some(0),
            ..Counts::default()
        };
        for (part, store) in parts.iter().zip(&stores) {
            if store.manifest().fingerprint != spec {
                return Err(StoreError::Invalid(format!(
                    "{}: fingerprint spec differs from the ingest's",
                    part.display()
                )));
            }
            let c = store.manifest().counts;
            counts.records_in += c.records_in;
            counts.molecules += c.molecules;
            counts.rejected += c.rejected;
        }
        let sizes: Vec<u64> = stores.iter().map(|s| s.len() as u64).collect();
        let places = Places::for_parts(parts, &sizes, total).map_err(StoreError::Invalid)?;
        if let Some(t) = total {
            counts.molecules = t;
        }
        Ok(PartRuns {
            places,
            parts: stores,
            first: Vec::new(),
            spec,
            counts,
            provenance,
        })
    }

    /// Leaves out the molecules at the ascending positions `dropped` (of a [`PartRuns`] that
    /// has none left out), and the counts.
    fn leave_out(&mut self, dropped: Vec<u64>) -> Result<(), StoreError> {
        let n = dropped.len() as u64;
        self.places
            .leave_out(dropped)
            .map_err(StoreError::Invalid)?;
        self.counts.molecules -= n;
        self.counts.dropped = n;
        Ok(())
    }

    /// Opens `parts` (as [`PartRuns::open`]) and merges their runs k-way: returns them with
    /// the one store's order (store position -> input rank: SMILES ascending, input order
    /// among equal ones). Duplicates (a SMILES an earlier record gave) are counted; with
    /// `dedupe` they are left out. A run that is not its part's positions sorted by SMILES is
    /// an error naming it.
    pub fn merge(
        parts: &[&Path],
        spec: FingerprintSpec,
        dedupe: bool,
        provenance: Value,
    ) -> Result<(PartRuns, Vec<u32>), StoreError> {
        let mut runs = PartRuns::open_all(parts, spec, provenance, None)?;
        let total = runs.places.total();
        if total > u64::from(u32::MAX) {
            return Err(StoreError::Invalid(format!(
                "{total} molecules: one store holds at most {} (write a store set: --shards)",
                u32::MAX
            )));
        }
        let files = runs.read_runs(true)?;
        let slices: Vec<Range<usize>> = files.iter().map(|r| 0..r.len()).collect();
        let mut order: Vec<u32> = Vec::with_capacity(total as usize);
        let merged = runs.merge_slices(&files, &slices, dedupe, |g| order.push(g as u32))?;
        drop(files);
        let mut dropped = merged.dropped;
        dropped.sort_unstable();
        let (positions, firsts): (Vec<u64>, Vec<u64>) =
            dropped.into_iter().map(|d| (d.position, d.first)).unzip();
        runs.leave_out(positions)?;
        runs.first = firsts;
        // positions among all the parts' molecules -> input ranks
        if !runs.places.dropped().is_empty() {
            for o in &mut order {
                *o = runs.places.rank_of(u64::from(*o)) as u32;
            }
        }
        runs.counts.duplicates = Some(merged.duplicates);
        Ok((runs, order))
    }

    /// Each part's run, mapped; with `check`, checked to be a permutation of its positions.
    pub(crate) fn read_runs(&self, check: bool) -> Result<Vec<Run>, StoreError> {
        (self.parts.iter())
            .map(|part| Run::read(part.path(), part.len(), check))
            .collect()
    }

    /// The SMILES of the molecule at position `k` of part `p`'s run (`runs[p]`).
    pub(crate) fn run_smiles(&self, runs: &[Run], p: usize, k: usize) -> Result<&[u8], StoreError> {
        Ok(self.parts[p].smiles(runs[p].at(k))?.as_bytes())
    }

    /// The error for part `p`'s run found out of SMILES order.
    pub(crate) fn unsorted(&self, p: usize) -> StoreError {
        StoreError::Inconsistent {
            path: run_path(self.parts[p].path()),
            reason: "its positions are not in SMILES order".into(),
        }
    }

    /// Merges positions `slices[p]` of each part's run `runs[p]` k-way (SMILES ascending,
    /// input order among equal ones), handing each molecule kept to `keep` (its position among
    /// all the parts' molecules). Duplicates (a SMILES an earlier molecule of the merge gave)
    /// are counted; with `dedupe` they are left out, each listed with the first of its SMILES.
    /// A slice not in SMILES order is an error naming its run.
    pub(crate) fn merge_slices(
        &self,
        runs: &[Run],
        slices: &[Range<usize>],
        dedupe: bool,
        mut keep: impl FnMut(u64),
    ) -> Result<Merged, StoreError> {
        let mut cursors: Vec<Range<usize>> = slices.to_vec();
        let smiles = |p: usize, k: usize| self.run_smiles(runs, p, k);
        let mut heap = BinaryHeap::with_capacity(runs.len());
        for (p, c) in cursors.iter_mut().enumerate() {
            if let Some(k) = c.next() {
                heap.push(Reverse((smiles(p, k)?, p, runs[p].at(k))));
            }
        }
        let mut merged = Merged::default();
        let mut kept = 0u64;
        let mut first: Option<(&[u8], u64, u64)> = None; // the SMILES, its first, its index
        while let Some(Reverse((key, p, local))) = heap.pop() {
            let g = self.places.global(p, local);
            if let Some(k) = cursors[p].next() {
                let next = smiles(p, k)?;
                if next < key {
                    return Err(self.unsorted(p));
                }
                heap.push(Reverse((next, p, runs[p].at(k))));
            }
            match first {
                Some((s, f, index)) if s == key => {
                    merged.duplicates += 1;
                    if dedupe {
                        merged.dropped.push(Dropped {
                            position: g,
                            first: f,
                            first_index: index,
                        });
                        continue;
                    }
                }
                _ => first = Some((key, g, kept)),
            }
            keep(g);
            kept += 1;
        }
        Ok(merged)
    }

    /// Each molecule left out with the first of its SMILES: (its part and place, the first's
    /// part and place, the first's input rank); an error for parts reopened without a merge.
    fn left_out(&self) -> Result<Vec<(Place<'_>, Place<'_>, u64)>, StoreError> {
        if self.first.len() != self.places.dropped().len() {
            return Err(StoreError::Invalid(
                "the duplicates left out are known only to the merge of the runs".into(),
            ));
        }
        Ok((self.places.dropped().iter().zip(&self.first))
            .map(|(&d, &f)| (self.at(d), self.at(f), self.places.rank_of(f)))
            .collect())
    }

    /// Writes the molecules at `out` as a version-1 store, in input order (what `molsift
    /// upgrade` reads; ingest's `version=1`, for the tests of old stores): each part copied,
    /// less those left out, which are listed in `duplicates.tsv` against the first molecule
    /// of their SMILES (its position there).
    pub fn write_version_1(&self, out: &Path, overwrite: bool) -> Result<Manifest, StoreError> {
        let mut w = StoreWriter::create(out, self.spec.clone(), overwrite)?;
        for (p, part) in self.parts.iter().enumerate() {
            if self.places.dropped().is_empty() {
                w.append_store(part)?; // a copy, file by file
            } else {
                let base = self.places.base(p);
                w.append_store_where(part, |i| {
                    let g = base + i as u64;
                    self.places.dropped().binary_search(&g).is_err()
                })?;
            }
        }
        for ((store, i), (kept_store, k), rank) in self.left_out()? {
            w.add_duplicate(store.source_line(i), store.id(i)?, rank, kept_store.id(k)?)?;
        }
        w.set_duplicates(self.counts.duplicates.unwrap_or(0));
        w.set_provenance(self.provenance.clone());
        w.finish()
    }

    /// The positions (among all the parts' molecules, ascending) left out by `--dedupe`.
    pub fn dropped(&self) -> Vec<u64> {
        self.places.dropped().to_vec()
    }

    /// The part store holding position `g` (among all the parts' molecules) and its place.
    pub(crate) fn at(&self, g: u64) -> Place<'_> {
        let (p, i) = self.places.at(g);
        (&self.parts[p], i)
    }

    /// The part store and place of input rank `r`.
    fn rank(&self, r: usize) -> Place<'_> {
        let (p, i) = self.places.place(r as u64);
        (&self.parts[p], i)
    }
}

/// One part's run, mapped (and checked to be a permutation of its positions).
pub(crate) struct Run {
    /// the run's file, mapped (`None` for an empty part)
    order: Option<memmap2::Mmap>,
}

impl Run {
    /// Maps the run of `part` (of `n` molecules); with `check`, checks it is a permutation of
    /// its positions (a bit each while checking): nothing of it is held in this process's
    /// memory.
    pub(crate) fn read(part: &Path, n: usize, check: bool) -> Result<Run, StoreError> {
        let path = run_path(part);
        let file =
            molsift_iostats::CountedFile::open(&path).map_err(|e| StoreError::io(&path, e))?;
        let len = file.metadata().map_err(|e| StoreError::io(&path, e))?.len();
        let bad = |reason: String| StoreError::Inconsistent {
            path: path.clone(),
            reason,
        };
        if len != n as u64 * 4 {
            return Err(bad(format!(
                "{len} bytes for a part of {n} molecules (4 each)"
            )));
        }
        // SAFETY: the run is ingest's own file in its work directory, written and closed by a
        // task that has ended; nothing writes it while it is mapped.
        let order = if n == 0 {
            None
        } else {
            Some(unsafe { file.map() }.map_err(|e| StoreError::io(&path, e))?)
        };
        let run = Run { order };
        if check {
            let mut seen = vec![0u64; n.div_ceil(64)];
            for k in 0..n {
                let o = run.at(k);
                match seen.get_mut(o / 64) {
                    Some(w) if o < n && *w & (1 << (o % 64)) == 0 => *w |= 1 << (o % 64),
                    _ => return Err(bad(format!("position {o} out of range or repeated"))),
                }
            }
        }
        Ok(run)
    }

    /// The run's `k`-th position.
    pub(crate) fn at(&self, k: usize) -> usize {
        let m = self.order.as_deref().unwrap_or(&[]);
        u32::from_le_bytes(m[4 * k..4 * k + 4].try_into().expect("4 bytes")) as usize
    }

    /// The positions in the run.
    pub(crate) fn len(&self) -> usize {
        self.order.as_ref().map_or(0, |m| m.len() / 4)
    }
}

impl Molecules for PartRuns {
    fn len(&self) -> usize {
        self.counts.molecules as usize
    }

    fn spec(&self) -> &FingerprintSpec {
        &self.spec
    }

    fn smiles(&self, r: usize) -> Result<&str, StoreError> {
        let (s, i) = self.rank(r);
        s.smiles(i)
    }

    fn id(&self, r: usize) -> Result<&str, StoreError> {
        let (s, i) = self.rank(r);
        s.id(i)
    }

    fn source_line(&self, r: usize) -> u64 {
        let (s, i) = self.rank(r);
        s.source_line(i)
    }

    fn popcount(&self, r: usize) -> u16 {
        let (s, i) = self.rank(r);
        s.popcount(i)
    }

    fn fingerprint(&self, r: usize) -> &[u64] {
        let (s, i) = self.rank(r);
        s.fingerprint(i)
    }

    fn counts(&self) -> Counts {
        self.counts
    }

    fn provenance(&self) -> Value {
        self.provenance.clone()
    }

    fn check_columns(&self) -> Result<(), StoreError> {
        for part in &self.parts {
            part.check_columns()?;
        }
        Ok(())
    }

    fn rejects(&self) -> Result<Vec<u8>, StoreError> {
        let mut out = rejects::HEADER.as_bytes().to_vec();
        for part in &self.parts {
            let text = Molecules::rejects(part)?;
            let rows = text
                .strip_prefix(rejects::HEADER.as_bytes())
                .ok_or_else(|| StoreError::Inconsistent {
                    path: part.path().join(crate::layout::REJECTS),
                    reason: "it does not start with the rejects header".into(),
                })?;
            out.extend_from_slice(rows);
        }
        Ok(out)
    }

    fn duplicates(&self, order: &[u32]) -> Result<Option<Vec<u8>>, StoreError> {
        if self.places.dropped().is_empty() {
            return Ok(None);
        }
        let position = crate::v2::positions_of(order);
        let mut out = duplicates::HEADER.as_bytes().to_vec();
        for ((store, i), (kept_store, k), rank) in self.left_out()? {
            out.extend_from_slice(
                duplicates::row(
                    store.source_line(i),
                    store.id(i)?,
                    u64::from(position[rank as usize]),
                    kept_store.id(k)?,
                )
                .as_bytes(),
            );
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    use crate::v2::{store_order, upgrade, UpgradeOptions};

    fn spec() -> FingerprintSpec {
        FingerprintSpec::new("test", 64, serde_json::json!({})).unwrap()
    }

    /// A part of `rows` (id, SMILES, line) and one reject, with its run.
    fn part(dir: &Path, name: &str, rows: &[(&str, &str, u64)]) -> PathBuf {
        let path = dir.join(name);
        let mut w = StoreWriter::create(&path, spec(), false).unwrap();
        for &(id, smiles, line) in rows {
            w.add_molecule(id, smiles, line, &[(line * 7) as u32 % 64])
                .unwrap();
        }
        w.add_reject("f.smi", 1000 + rows.len() as u64, 0, "bad", "unparsable")
            .unwrap();
        w.finish().unwrap();
        write_run(&path).unwrap();
        path
    }

    /// Parts of random SMILES from a small alphabet (many duplicates, within and across parts,
    /// and empty parts).
    fn random_parts(dir: &Path, seed: u64) -> Vec<PathBuf> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut line = 1;
        let mut parts = Vec::new();
        for p in 0..7 {
            let n = (next() % 40) as usize * usize::from(p != 3);
            let rows: Vec<(String, String, u64)> = (0..n)
                .map(|_| {
                    let len = 1 + next() % 4;
                    let s: String = (0..len)
                        .map(|_| ['C', 'N', 'O'][next() as usize % 3])
                        .collect();
                    line += 1 + next() % 2;
                    (format!("m{line}"), s, line)
                })
                .collect();
            let rows: Vec<(&str, &str, u64)> = rows
                .iter()
                .map(|(a, b, l)| (a.as_str(), b.as_str(), *l))
                .collect();
            parts.push(part(dir, &format!("part-{p}"), &rows));
        }
        parts
    }

    fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name() != "manifest.json")
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        out.sort();
        out
    }

    /// Every molecule of `parts` in task order: (id, SMILES, line, fingerprint).
    fn all_rows(parts: &[PathBuf]) -> Vec<(String, String, u64, Vec<u64>)> {
        let mut out = Vec::new();
        for p in parts {
            let s = Store::open(p, Verify::Full).unwrap();
            for i in 0..s.len() {
                let (id, smi) = (s.id(i).unwrap().into(), s.smiles(i).unwrap().into());
                out.push((id, smi, s.source_line(i), s.fingerprint(i).to_vec()));
            }
        }
        out
    }

    #[test]
    fn the_merge_of_the_runs_equals_a_brute_force_sort_and_both_writers_agree() {
        for seed in 1..6 {
            for dedupe in [false, true] {
                let dir = tempfile::tempdir().unwrap();
                let parts = random_parts(dir.path(), seed);
                let refs: Vec<&Path> = parts.iter().map(PathBuf::as_path).collect();
                // the reference: the first record of each SMILES kept (all with no dedupe),
                // the kept ones sorted by SMILES then input rank
                let rows = all_rows(&parts);
                let mut first: HashMap<&str, usize> = HashMap::new();
                let mut want_dropped = Vec::new();
                let mut kept = Vec::new();
                for (g, r) in rows.iter().enumerate() {
                    let f = *first.entry(r.1.as_str()).or_insert(g);
                    if dedupe && f != g {
                        want_dropped.push((g as u64, f));
                    } else {
                        kept.push(g);
                    }
                }
                let mut want_order: Vec<u32> = (0..kept.len() as u32).collect();
                want_order
                    .sort_by(|&a, &b| rows[kept[a as usize]].1.cmp(&rows[kept[b as usize]].1));

                let (runs, order) = PartRuns::merge(&refs, spec(), dedupe, Value::Null).unwrap();
                let why = format!("seed {seed} dedupe {dedupe}");
                assert_eq!(order, want_order, "{why}");
                let dropped: Vec<u64> = want_dropped.iter().map(|d| d.0).collect();
                assert_eq!(runs.dropped(), dropped, "{why}");
                let c = runs.counts();
                assert_eq!(
                    c.duplicates,
                    Some((rows.len() - first.len()) as u64),
                    "{why}"
                );
                assert_eq!(
                    (c.molecules, c.dropped),
                    (kept.len() as u64, dropped.len() as u64)
                );
                assert_eq!(c.rejected, parts.len() as u64);
                assert!(c.add_up(), "{why}");

                // the version-1 store in input order, its duplicates listed against the kept
                let staged = dir.path().join("staged");
                runs.write_version_1(&staged, false).unwrap();
                let v1 = Store::open(&staged, Verify::Full).unwrap();
                assert_eq!(v1.manifest().counts, c, "{why}");
                for (r, &g) in kept.iter().enumerate() {
                    let want = &rows[g];
                    assert_eq!(v1.id(r).unwrap(), want.0);
                    assert_eq!(
                        (v1.smiles(r).unwrap(), v1.source_line(r)),
                        (&*want.1, want.2)
                    );
                    assert_eq!(v1.fingerprint(r), &want.3[..]);
                    assert_eq!(runs.smiles(r).unwrap(), want.1);
                }
                let listed = std::fs::read_to_string(staged.join(duplicates::FILE)).ok();
                let want_listed = (!want_dropped.is_empty()).then(|| {
                    let mut t = duplicates::HEADER.to_string();
                    for &(d, f) in &want_dropped {
                        let (r, k) = (&rows[d as usize], kept.binary_search(&f).unwrap());
                        t += &duplicates::row(r.2, &r.0, k as u64, &rows[f].0);
                    }
                    t
                });
                assert_eq!(listed, want_listed, "{why}");

                // the one store from the runs equals the one upgraded from that version-1 store
                let want = dir.path().join("want");
                upgrade(&v1, &want, &UpgradeOptions::default()).unwrap();
                assert_eq!(store_order(&v1).unwrap(), order, "{why}");
                let got = dir.path().join("got");
                std::fs::create_dir(&got).unwrap();
                crate::v2::write_selection(&runs, &order, None, &got, &UpgradeOptions::default())
                    .unwrap();
                assert_eq!(files(&got), files(&want), "{why}");
                // a shard's writer reopens the parts without merging them again
                let again =
                    PartRuns::open(&refs, spec(), &runs.dropped(), Value::Null, None).unwrap();
                assert_eq!(again.len(), runs.len());
                for r in 0..runs.len() {
                    assert_eq!(again.id(r).unwrap(), v1.id(r).unwrap());
                    assert_eq!(again.fingerprint(r), v1.fingerprint(r));
                }
            }
        }
    }

    /// A set's cuts and each shard's merge of its slices against the whole merge: the shards'
    /// positions in turn are the one store's order, their duplicates and molecules left out
    /// together the merge's (each first's index its place in the shard), equal SMILES never
    /// in two shards; without `--dedupe` the shards are the cuts `shard_bounds` makes of the
    /// one store's order; and the cuts are the same when every record is in one part.
    #[test]
    fn each_shard_merging_its_slices_gives_the_one_stores_order() {
        use crate::cuts::{set_cuts, shard_range};
        for seed in 1..6 {
            for dedupe in [false, true] {
                let dir = tempfile::tempdir().unwrap();
                let parts = random_parts(dir.path(), seed);
                let refs: Vec<&Path> = parts.iter().map(PathBuf::as_path).collect();
                let (whole, order) = PartRuns::merge(&refs, spec(), dedupe, Value::Null).unwrap();
                let rows = all_rows(&parts);
                let one: Vec<(&str, &str, u64)> = rows
                    .iter()
                    .map(|r| (r.0.as_str(), r.1.as_str(), r.2))
                    .collect();
                let single = [part(dir.path(), "single", &one)];
                let single: Vec<&Path> = single.iter().map(PathBuf::as_path).collect();
                let runs = PartRuns::open(&refs, spec(), &[], Value::Null, None).unwrap();
                for shards in [1, 2, 3, 5, 40] {
                    let why = format!("seed {seed} dedupe {dedupe} shards {shards}");
                    let cuts = set_cuts(&runs, shards).unwrap();
                    let alone = PartRuns::open(&single, spec(), &[], Value::Null, None).unwrap();
                    assert_eq!(set_cuts(&alone, shards).unwrap(), cuts, "{why}");
                    let (mut got, mut dropped, mut duplicates) = (Vec::new(), Vec::new(), 0);
                    let mut ends = vec![0usize];
                    for s in 0..shards {
                        let m = runs.merge_shard(&cuts, s, dedupe).unwrap();
                        let offset = got.len() as u64;
                        for d in &m.merged.dropped {
                            let at = offset + d.first_index;
                            dropped.push((d.position, d.first, at));
                        }
                        duplicates += m.merged.duplicates;
                        let (after, upto) = shard_range(&cuts, s);
                        for &g in &m.positions {
                            let key = crate::cuts::Key::At(rows[g as usize].1.as_bytes());
                            assert!(after != crate::cuts::Key::Max && key != after, "{why}");
                            let inside = |k: &crate::cuts::Key| match (k, key) {
                                (crate::cuts::Key::At(a), crate::cuts::Key::At(b)) => Some(*a < b),
                                _ => None,
                            };
                            assert_ne!(inside(&after), Some(false), "{why}: before its range");
                            assert_ne!(inside(&upto), Some(true), "{why}: past its range");
                        }
                        got.extend(m.positions);
                        ends.push(got.len());
                    }
                    let ranks: Vec<u32> = got
                        .iter()
                        .map(|&g| whole.places.rank_of(g) as u32)
                        .collect();
                    assert_eq!(ranks, order, "{why}");
                    dropped.sort_unstable();
                    let positions: Vec<u64> = dropped.iter().map(|d| d.0).collect();
                    assert_eq!(positions, whole.dropped(), "{why}");
                    let firsts: Vec<u64> = dropped.iter().map(|d| d.1).collect();
                    assert_eq!(firsts, whole.first, "{why}");
                    for &(_, f, at) in &dropped {
                        assert_eq!(got[at as usize], f, "{why}: the first's place");
                    }
                    assert_eq!(Some(duplicates), whole.counts().duplicates, "{why}");
                    // the set's duplicates.tsv as the whole merge's plan writes it
                    let listed = (!dropped.is_empty())
                        .then(|| crate::cuts::set_duplicates(&runs, &dropped).unwrap());
                    assert_eq!(listed, whole.duplicates(&order).unwrap(), "{why}");
                    if !dedupe {
                        let bounds = crate::v2::shard_bounds(&whole, &order, shards).unwrap();
                        assert_eq!(ends, bounds, "{why}");
                    }
                }
            }
        }
    }

    /// Ranks holding the parts between them (here two groups of parts) select the same cuts
    /// as one process over every run; each part cut into slices, each shard merged and written
    /// from its slices alone (opened with the library's total) equals the shard merged and
    /// written from the whole parts: the same positions, duplicates, molecules left out,
    /// `duplicates.tsv` rows and files.
    #[test]
    fn shards_written_from_the_slices_ranks_send_equal_those_written_from_the_parts() {
        use crate::cuts::{set_cuts, set_duplicates, weighted_median};
        use crate::slices::write_part_slices;
        use crate::v2::{write_shard, ShardOf};
        for seed in 1..5 {
            for dedupe in [false, true] {
                let dir = tempfile::tempdir().unwrap();
                let parts = random_parts(dir.path(), seed);
                let refs: Vec<&Path> = parts.iter().map(PathBuf::as_path).collect();
                let runs = PartRuns::open(&refs, spec(), &[], Value::Null, None).unwrap();
                let total = runs.places.total();
                let groups: Vec<PartRuns> = [&refs[..3], &refs[3..]]
                    .iter()
                    .map(|g| PartRuns::open(g, spec(), &[], Value::Null, None).unwrap())
                    .collect();
                for shards in [1, 2, 3, 5, 40] {
                    let why = format!("seed {seed} dedupe {dedupe} shards {shards}");
                    let cuts = set_cuts(&runs, shards).unwrap();
                    // the rounds of the exact selection, the groups' shares put together
                    let lens: Vec<Vec<usize>> =
                        groups.iter().map(|g| g.check_runs().unwrap()).collect();
                    let selected: Vec<Option<Vec<u8>>> = (1..shards)
                        .map(|s| {
                            let r = (u128::from(total) * s as u128 / shards as u128) as u64;
                            // the cut is the SMILES at rank r - 1
                            let r = r.checked_sub(1)?;
                            let mut lo: Vec<Vec<usize>> =
                                lens.iter().map(|l| vec![0; l.len()]).collect();
                            let mut hi = lens.clone();
                            loop {
                                let mut mids: Vec<(Vec<u8>, u64)> = (groups.iter().enumerate())
                                    .flat_map(|(k, g)| g.middles(&lo[k], &hi[k]).unwrap())
                                    .collect();
                                let pivot = weighted_median(&mut mids).unwrap().to_vec();
                                let (mut less, mut at_most) = (0u64, 0u64);
                                let mut splits = Vec::new();
                                for (k, g) in groups.iter().enumerate() {
                                    let (b, u) = g.split(&lo[k], &hi[k], &pivot).unwrap();
                                    less += b.iter().map(|&x| x as u64).sum::<u64>();
                                    at_most += u.iter().map(|&x| x as u64).sum::<u64>();
                                    splits.push((b, u));
                                }
                                if r < less {
                                    hi = splits.into_iter().map(|s| s.0).collect();
                                } else if r >= at_most {
                                    lo = splits.into_iter().map(|s| s.1).collect();
                                } else {
                                    return Some(pivot);
                                }
                            }
                        })
                        .collect();
                    assert_eq!(selected, cuts, "{why}: the ranks' selection");
                    // every part cut into its slices
                    let mut slices: Vec<Vec<PathBuf>> = vec![Vec::new(); shards];
                    for (p, part) in parts.iter().enumerate() {
                        let outs: Vec<PathBuf> = (0..shards)
                            .map(|s| dir.path().join(format!("slice-{shards}-{p}-{s}")))
                            .collect();
                        let base = runs.places.base(p);
                        let taken = write_part_slices(part, base, &cuts, &outs).unwrap();
                        for (s, t) in taken.iter().enumerate() {
                            if !t.is_empty() {
                                // its run, cut from the part's, is the one a sort finds
                                let run = std::fs::read(run_path(&outs[s])).unwrap();
                                let order = crate::v2::store_order(
                                    &Store::open(&outs[s], Verify::Sizes).unwrap(),
                                )
                                .unwrap();
                                let want: Vec<u8> =
                                    order.iter().flat_map(|o| o.to_le_bytes()).collect();
                                assert_eq!(run, want, "{why}: slice {p} {s}'s run");
                                slices[s].push(outs[s].clone());
                            }
                        }
                    }
                    let mut dropped = Vec::new();
                    let (mut offset, mut merges) = (0u64, Vec::new());
                    for (s, mine) in slices.iter().enumerate() {
                        let m = runs.merge_shard(&cuts, s, dedupe).unwrap();
                        let got: Vec<&Path> = mine.iter().map(PathBuf::as_path).collect();
                        let sl = PartRuns::open(&got, spec(), &[], Value::Null, Some(total));
                        let sl = sl.unwrap();
                        let n = sl.merge_shard(&cuts, s, dedupe).unwrap();
                        assert_eq!(n.positions, m.positions, "{why}: shard {s}'s order");
                        assert_eq!(n.merged.dropped, m.merged.dropped, "{why}: shard {s}");
                        assert_eq!(n.merged.duplicates, m.merged.duplicates, "{why}: {s}");
                        let rows: Vec<(u64, u64, u64)> = (m.merged.dropped.iter())
                            .map(|d| (d.position, d.first, offset + d.first_index))
                            .collect();
                        if !rows.is_empty() {
                            assert_eq!(
                                set_duplicates(&sl, &rows).unwrap(),
                                set_duplicates(&runs, &rows).unwrap(),
                                "{why}: shard {s}'s duplicates"
                            );
                        }
                        dropped.extend(rows.iter().map(|r| r.0));
                        offset += m.positions.len() as u64;
                        merges.push((got.iter().map(|p| p.to_path_buf()).collect::<Vec<_>>(), m));
                    }
                    dropped.sort_unstable();
                    let whole = PartRuns::open(&refs, spec(), &dropped, Value::Null, None);
                    let whole = whole.unwrap();
                    let mut offset = 0u64;
                    for (s, (mine, m)) in merges.iter().enumerate() {
                        let got: Vec<&Path> = mine.iter().map(PathBuf::as_path).collect();
                        let sl = PartRuns::open(&got, spec(), &dropped, Value::Null, Some(total));
                        let sl = sl.unwrap();
                        let order: Vec<u32> = (m.positions.iter())
                            .map(|&g| whole.places.rank_of(g) as u32)
                            .collect();
                        let shard = ShardOf {
                            index: s,
                            shards,
                            offset,
                        };
                        let opts = UpgradeOptions::default();
                        let (a, b) = (
                            dir.path().join(format!("from-parts-{shards}-{s}")),
                            dir.path().join(format!("from-slices-{shards}-{s}")),
                        );
                        write_shard(&whole, &order, 0..order.len(), shard, &a, &opts).unwrap();
                        write_shard(&sl, &order, 0..order.len(), shard, &b, &opts).unwrap();
                        assert_eq!(files(&a), files(&b), "{why}: shard {s}'s files");
                        offset += order.len() as u64;
                    }
                }
            }
        }
    }

    /// A slice's list of positions, damaged, is refused by name.
    #[test]
    fn a_damaged_list_of_a_slices_positions_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let parts = random_parts(dir.path(), 3);
        let outs = [dir.path().join("slice")];
        crate::slices::write_part_slices(&parts[0], 5, &[], &outs).unwrap();
        let open = |total| {
            PartRuns::open(&[outs[0].as_path()], spec(), &[], Value::Null, Some(total))
                .err()
                .map(|e| e.to_string())
        };
        assert_eq!(open(1000), None);
        assert!(open(6).unwrap().contains("not ascending"), "{:?}", open(6));
        let held = held_path(&outs[0]);
        let mut bytes = std::fs::read(&held).unwrap();
        bytes.truncate(bytes.len() - 1);
        std::fs::write(&held, &bytes).unwrap();
        let e = open(1000).unwrap();
        assert!(
            e.contains(".held.u64") && e.contains("bytes for a slice"),
            "{e}"
        );
    }

    /// Places against a list of every kept molecule's (part, place), on parts of random sizes
    /// (empty ones among them) with random molecules left out; and the refusals.
    #[test]
    fn places_find_each_input_rank_and_invert_rank_of() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for case in 0..200 {
            let sizes: Vec<u64> = (0..1 + rnd(6)).map(|_| rnd(4) * rnd(9)).collect();
            let every: Vec<(usize, usize)> = sizes
                .iter()
                .enumerate()
                .flat_map(|(p, &n)| (0..n as usize).map(move |i| (p, i)))
                .collect();
            let dropped: Vec<u64> = (0..every.len() as u64)
                .filter(|_| rnd(4) == 0 || case % 7 == 0)
                .collect();
            let mut places = Places::new(sizes.iter().copied());
            places.leave_out(dropped.clone()).unwrap();
            let kept: Vec<u64> = (0..every.len() as u64)
                .filter(|g| !dropped.contains(g))
                .collect();
            assert_eq!(places.len(), kept.len() as u64, "case {case}");
            for (r, &g) in kept.iter().enumerate() {
                assert_eq!(places.position_of(r as u64), g, "case {case}, rank {r}");
                assert_eq!(places.rank_of(g), r as u64, "case {case}, position {g}");
                assert_eq!(places.place(r as u64), every[g as usize], "case {case}");
            }
        }
        let mut places = Places::new([3, 0, 2]);
        assert!(places
            .leave_out(vec![2, 1])
            .unwrap_err()
            .contains("ascending"));
        assert_eq!(
            places.leave_out(vec![1, 5]).unwrap_err(),
            "molecule 5 is left out, the parts hold 5"
        );
        assert_eq!(
            places.at(3),
            (2, 0),
            "an empty part shares its start with the next"
        );
    }

    #[test]
    fn a_damaged_or_unsorted_run_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let a = part(
            dir.path(),
            "a",
            &[("a1", "CCO", 1), ("a2", "CC", 2), ("a3", "C", 3)],
        );
        let refs = [a.as_path()];
        let run = run_path(&a);
        for (bytes, why) in [
            (vec![0u8; 8], "bytes for a part of 3"),
            (
                [2u32, 1, 1].iter().flat_map(|v| v.to_le_bytes()).collect(),
                "repeated",
            ),
            (
                [2u32, 1, 7].iter().flat_map(|v| v.to_le_bytes()).collect(),
                "out of range",
            ),
            (
                [0u32, 1, 2].iter().flat_map(|v| v.to_le_bytes()).collect(),
                "not in SMILES order",
            ),
        ] {
            std::fs::write(&run, bytes).unwrap();
            let err = PartRuns::merge(&refs, spec(), false, Value::Null)
                .err()
                .unwrap()
                .to_string();
            assert!(err.contains("run.u32") && err.contains(why), "{err}");
        }
        write_run(&a).unwrap();
        let (_, order) = PartRuns::merge(&refs, spec(), false, Value::Null).unwrap();
        assert_eq!(order, [2, 1, 0]);
        let other = FingerprintSpec::new("other", 64, serde_json::json!({})).unwrap();
        let err = PartRuns::merge(&refs, other, false, Value::Null)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("fingerprint spec"), "{err}");
    }
}
