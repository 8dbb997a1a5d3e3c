//! Python wrappers of ingest's sorted runs (`molsift_store::runs`, `molsift_store::cuts`):
//! `write_part_run` (a worker, after writing its part), `PartRuns` (the root: the parts merged
//! k-way into the one store's order and the one store written from them; or, for a store set,
//! the parts opened unmerged and the set's cuts found), `merge_set_shard` and
//! `write_set_shard_from_parts` (one shard of a set, on whichever worker or rank takes it),
//! `write_set_duplicates` (the set's list of molecules left out) and, for sets written by MPI
//! ranks, `write_part_slices` (a rank's part cut into the slices it sends) and `cut_pivot` (a
//! round of the cuts' selection over every rank's runs).

use std::path::{Path, PathBuf};
use std::sync::RwLock;

use molsift_store::cuts::{set_cuts, set_duplicates, weighted_median};
use molsift_store::runs::{write_run, PartRuns};
use molsift_store::v2::{write_store, ShardOf, UpgradeOptions};
use molsift_store::{FingerprintSpec, Molecules, StoreError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::error::store_err;
use crate::store::{parse_json, u32s_of};
use crate::store_v2::shard_of;

/// Writes the run of the finished part store at `part` (`PART.run.u32`: its positions sorted
/// by canonical SMILES).
#[pyfunction]
fn write_part_run(py: Python<'_>, part: PathBuf) -> PyResult<()> {
    py.detach(|| write_run(&part)).map_err(store_err)
}

fn spec_of(json: &str) -> PyResult<FingerprintSpec> {
    serde_json::from_str(json)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("fingerprint spec: {e}")))
}

fn paths(parts: &[PathBuf]) -> Vec<&Path> {
    parts.iter().map(PathBuf::as_path).collect()
}

/// Ingest's part stores (in task order, each with its run) merged k-way: the one store's
/// order, the duplicates counted and, with `dedupe`, left out. `kind`, `bits` and
/// `params_json` are the ingest's fingerprint spec (as for `StoreWriter`), `provenance_json`
/// what the store records. With `merge=False` (a store set's root) the parts are only opened:
/// `set_cuts` then cuts them into shards, each of which merges its own range
/// (`merge_set_shard`); the counts have no duplicates yet and writing a store is an error.
#[pyclass(name = "PartRuns", module = "molsift._core", frozen)]
pub struct PyPartRuns {
    /// the merged runs and the order, until `release`
    merged: RwLock<Option<(PartRuns, Vec<u32>)>>,
    /// whether the runs were merged (else the order is empty and nothing is written from it)
    is_merged: bool,
    dedupe: bool,
    parts: Vec<PathBuf>,
    len: usize,
    counts: String,
    fingerprint: String,
    provenance: String,
    dropped: Vec<u64>,
}

impl PyPartRuns {
    /// `f` of the merged runs and the order; an error once they were released.
    fn with<R>(
        &self,
        f: impl FnOnce(&PartRuns, &[u32]) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        let guard = self.merged.read().unwrap_or_else(|e| e.into_inner());
        let (runs, order) = guard.as_ref().ok_or_else(|| {
            StoreError::Invalid("the parts' runs were released (PartRuns.release)".into())
        })?;
        f(runs, order)
    }

    /// [`PyPartRuns::with`] for what needs the merged order.
    fn with_order<R>(
        &self,
        f: impl FnOnce(&PartRuns, &[u32]) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        if !self.is_merged {
            return Err(StoreError::Invalid(
                "the parts' runs were opened without a merge (PartRuns(merge=False))".into(),
            ));
        }
        self.with(f)
    }
}

#[pymethods]
impl PyPartRuns {
    #[new]
    #[pyo3(signature = (parts, kind, bits, params_json, dedupe=false, provenance_json="null", merge=true))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        parts: Vec<PathBuf>,
        kind: &str,
        bits: u32,
        params_json: &str,
        dedupe: bool,
        provenance_json: &str,
        merge: bool,
    ) -> PyResult<Self> {
        let spec = FingerprintSpec::new(kind, bits, parse_json(params_json)?).map_err(store_err)?;
        let provenance = parse_json(provenance_json)?;
        let (runs, order) = py
            .detach(|| {
                if merge {
                    PartRuns::merge(&paths(&parts), spec, dedupe, provenance)
                } else {
                    PartRuns::open(&paths(&parts), spec, &[], provenance, None)
                        .map(|r| (r, Vec::new()))
                }
            })
            .map_err(store_err)?;
        Ok(PyPartRuns {
            len: runs.len(),
            counts: serde_json::to_string(&runs.counts()).expect("counts serialize"),
            fingerprint: serde_json::to_string(runs.spec()).expect("spec serializes"),
            provenance: runs.provenance().to_string(),
            dropped: runs.dropped(),
            merged: RwLock::new(Some((runs, order))),
            is_merged: merge,
            dedupe,
            parts,
        })
    }

    /// Whether molecules whose SMILES an earlier one had are left out.
    #[getter]
    fn dedupe(&self) -> bool {
        self.dedupe
    }

    /// A store set's inner cuts into `shards` shards (`shards - 1` SMILES as bytes, `None`
    /// where the shards before it are empty), found by exact selection over the runs (each
    /// checked to be a permutation of its part's positions), without a merge: shard `s` holds
    /// the SMILES after cut `s` up to cut `s + 1` (`molsift_store::cuts`).
    fn set_cuts<'py>(
        &self,
        py: Python<'py>,
        shards: usize,
    ) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
        let cuts = py
            .detach(|| self.with(|runs, _| set_cuts(runs, shards)))
            .map_err(store_err)?;
        Ok(cuts
            .iter()
            .map(|c| c.as_ref().map(|k| PyBytes::new(py, k)))
            .collect())
    }

    /// Each run checked to be a permutation of its part's positions; their lengths (what a
    /// rank holding some of an ingest's parts selects the set's cuts over, with the others).
    fn check_runs(&self, py: Python<'_>) -> PyResult<Vec<usize>> {
        py.detach(|| self.with(|runs, _| runs.check_runs()))
            .map_err(store_err)
    }

    /// One round of the cuts' exact selection, this process's share: for each run whose window
    /// `lo[p]..hi[p]` is not empty, (the SMILES at its middle, the window's size).
    fn cut_middles<'py>(
        &self,
        py: Python<'py>,
        lo: Vec<usize>,
        hi: Vec<usize>,
    ) -> PyResult<Vec<(Bound<'py, PyBytes>, u64)>> {
        let mids = py
            .detach(|| self.with(|runs, _| runs.middles(&lo, &hi)))
            .map_err(store_err)?;
        Ok(mids
            .into_iter()
            .map(|(k, w)| (PyBytes::new(py, &k), w))
            .collect())
    }

    /// Each run's window `lo[p]..hi[p]` cut by `pivot` (`cut_pivot`): (the first positions at
    /// least `pivot`, the first above it).
    fn cut_split(
        &self,
        py: Python<'_>,
        lo: Vec<usize>,
        hi: Vec<usize>,
        pivot: Vec<u8>,
    ) -> PyResult<(Vec<usize>, Vec<usize>)> {
        py.detach(|| self.with(|runs, _| runs.split(&lo, &hi, &pivot)))
            .map_err(store_err)
    }

    fn __len__(&self) -> usize {
        self.len
    }

    /// The part stores, in task order.
    fn parts(&self) -> Vec<PathBuf> {
        self.parts.clone()
    }

    /// The counts (records in, molecules, rejected, duplicates, dropped) as JSON text.
    fn counts_json(&self) -> String {
        self.counts.clone()
    }

    /// The fingerprint spec as JSON text (as a manifest writes it; what
    /// `write_set_shard_from_parts` takes).
    fn fingerprint_json(&self) -> String {
        self.fingerprint.clone()
    }

    /// The provenance as JSON text.
    fn provenance_json(&self) -> String {
        self.provenance.clone()
    }

    /// The positions (among all the parts' molecules, ascending) `dedupe` left out.
    fn dropped(&self) -> Vec<u64> {
        self.dropped.clone()
    }

    /// Unmaps the parts and drops the order (what is read of the parts stays in the page
    /// cache, no longer in this process's memory); the counts, spec, provenance and the
    /// molecules left out stay. Writing from the runs afterwards is an error.
    fn release(&self) {
        *self.merged.write().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Writes the one store at `dst` (a new path; moved into place when complete), text
    /// compressed on `threads` threads, the similarity planes built from at most
    /// `plane_budget` bytes of payload a pass (default: `UpgradeOptions`'); returns its
    /// manifest (JSON text).
    #[pyo3(signature = (dst, threads=1, plane_budget=None))]
    fn write_store(
        &self,
        py: Python<'_>,
        dst: PathBuf,
        threads: usize,
        plane_budget: Option<usize>,
    ) -> PyResult<String> {
        let default = UpgradeOptions::default();
        let opts = UpgradeOptions {
            threads,
            plane_budget: plane_budget.unwrap_or(default.plane_budget),
            ..default
        };
        py.detach(|| self.with_order(|runs, order| write_store(runs, order, &dst, &opts)))
            .map(|m| m.to_text())
            .map_err(store_err)
    }

    /// Writes the molecules at `out` as a version-1 store in input order (what `molsift
    /// upgrade` reads: ingest's `version=1`, for tests); returns its manifest (JSON text).
    #[pyo3(signature = (out, overwrite=false))]
    fn write_version_1(&self, py: Python<'_>, out: PathBuf, overwrite: bool) -> PyResult<String> {
        py.detach(|| self.with_order(|runs, _| runs.write_version_1(&out, overwrite)))
            .map(|m| m.to_text())
            .map_err(store_err)
    }

    /// Writes every rejected record (`rejects.tsv`, its header first) at `path`.
    fn write_rejects(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| {
            self.with(|runs, _| {
                let text = runs.rejects()?;
                molsift_iostats::write_file(&path, &text, true)
                    .map_err(|e| StoreError::io(&path, e))
            })
        })
        .map_err(store_err)
    }
}

/// Writes shard `index` of `shards` of a store set at `out` (a new directory): the one store
/// of the molecules at input ranks `source` (u32 little-endian, the shard's range of the
/// plan's order) of ingest's `parts` less the positions `dropped` (`PartRuns.dropped`; the
/// spec is `PartRuns.fingerprint_json`), whose first molecule is set
/// position `offset`, text compressed on `threads` threads, the similarity planes built from
/// at most `plane_budget` bytes of payload a pass (default: `UpgradeOptions`'). With `total`,
/// `parts` are the slices the shard's writer received under MPI, of parts holding `total`
/// molecules (`write_part_slices`): positions and input ranks are the library's.
#[pyfunction]
#[pyo3(signature = (parts, fingerprint_json, dropped, provenance_json, out, index, shards, offset, source, threads=1, plane_budget=None, total=None))]
#[allow(clippy::too_many_arguments)]
fn write_set_shard_from_parts(
    py: Python<'_>,
    parts: Vec<PathBuf>,
    fingerprint_json: &str,
    dropped: Vec<u64>,
    provenance_json: &str,
    out: PathBuf,
    index: usize,
    shards: usize,
    offset: u64,
    source: &[u8],
    threads: usize,
    plane_budget: Option<usize>,
    total: Option<u64>,
) -> PyResult<()> {
    let spec = spec_of(fingerprint_json)?;
    let provenance = parse_json(provenance_json)?;
    let order = u32s_of(source)?;
    let shard = ShardOf {
        index,
        shards,
        offset,
    };
    py.detach(|| {
        let runs = PartRuns::open(&paths(&parts), spec, &dropped, provenance, total)?;
        shard_of(&runs, &order, shard, &out, threads, plane_budget)
    })
    .map_err(store_err)
}

/// Merges shard `index` of a store set of ingest's `parts` (the set's `cuts`,
/// `PartRuns.set_cuts`): its slice of every run, k-way, duplicates counted and with `dedupe`
/// left out. Writes the shard's molecules (positions among all the parts' molecules, u64
/// little-endian, in set order) at `out`; returns (molecules kept, duplicates, the molecules
/// left out as (position, position of the first of its SMILES, the first's index in the
/// shard)). With `total`, `parts` are the shard's slices (`write_part_slices`) of parts holding
/// `total` molecules.
#[pyfunction]
#[pyo3(signature = (parts, fingerprint_json, cuts, index, dedupe, out, total=None))]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn merge_set_shard(
    py: Python<'_>,
    parts: Vec<PathBuf>,
    fingerprint_json: &str,
    cuts: Vec<Option<Vec<u8>>>,
    index: usize,
    dedupe: bool,
    out: PathBuf,
    total: Option<u64>,
) -> PyResult<(u64, u64, Vec<(u64, u64, u64)>)> {
    let spec = spec_of(fingerprint_json)?;
    py.detach(|| {
        let runs = PartRuns::open(&paths(&parts), spec, &[], serde_json::Value::Null, total)?;
        let m = runs.merge_shard(&cuts, index, dedupe)?;
        let bytes: Vec<u8> = m.positions.iter().flat_map(|g| g.to_le_bytes()).collect();
        molsift_iostats::write_file(&out, &bytes, false).map_err(|e| StoreError::io(&out, e))?;
        let dropped = (m.merged.dropped.iter())
            .map(|d| (d.position, d.first, d.first_index))
            .collect();
        Ok((m.positions.len() as u64, m.merged.duplicates, dropped))
    })
    .map_err(store_err)
}

/// Writes a store set's `duplicates.tsv` at `path` from ingest's `parts`: `rows` are (position
/// left out, position of the first of its SMILES, the first's set position), ascending. With
/// `total`, `parts` are one shard's slices (`write_part_slices`) and `rows` that shard's.
#[pyfunction]
#[pyo3(signature = (parts, fingerprint_json, rows, path, total=None))]
fn write_set_duplicates(
    py: Python<'_>,
    parts: Vec<PathBuf>,
    fingerprint_json: &str,
    rows: Vec<(u64, u64, u64)>,
    path: PathBuf,
    total: Option<u64>,
) -> PyResult<()> {
    let spec = spec_of(fingerprint_json)?;
    py.detach(|| {
        let runs = PartRuns::open(&paths(&parts), spec, &[], serde_json::Value::Null, total)?;
        let text = set_duplicates(&runs, &rows)?;
        molsift_iostats::write_file(&path, &text, true).map_err(|e| StoreError::io(&path, e))
    })
    .map_err(store_err)
}

/// Cuts ingest's part store at `part` (with its run; its first molecule at position `base`
/// among all the parts' molecules) into the shards of a set with `cuts`: a slice at `outs[s]`
/// (a new path) for each shard holding molecules of the part (`molsift_store::slices`).
/// Returns each shard's molecules of the part (their places in it, u32 little-endian,
/// ascending; empty where no slice was written).
#[pyfunction]
fn write_part_slices<'py>(
    py: Python<'py>,
    part: PathBuf,
    base: u64,
    cuts: Vec<Option<Vec<u8>>>,
    outs: Vec<PathBuf>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let taken = py
        .detach(|| molsift_store::slices::write_part_slices(&part, base, &cuts, &outs))
        .map_err(store_err)?;
    Ok(taken
        .iter()
        .map(|t| {
            let bytes: Vec<u8> = t.iter().flat_map(|i| i.to_le_bytes()).collect();
            PyBytes::new(py, &bytes)
        })
        .collect())
}

/// A selection round's pivot (`molsift_store::cuts::weighted_median`) of the windows' middles
/// `(SMILES, window size)` gathered from every rank (`PartRuns.cut_middles`); None when no
/// window is left.
#[pyfunction]
fn cut_pivot<'py>(py: Python<'py>, mut mids: Vec<(Vec<u8>, u64)>) -> Option<Bound<'py, PyBytes>> {
    weighted_median(&mut mids).map(|p| PyBytes::new(py, p))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPartRuns>()?;
    m.add("PART_RUN_EXT", molsift_store::runs::RUN_EXT)?;
    m.add("SLICE_HELD_EXT", molsift_store::runs::HELD_EXT)?;
    m.add_function(wrap_pyfunction!(write_part_run, m)?)?;
    m.add_function(wrap_pyfunction!(write_set_shard_from_parts, m)?)?;
    m.add_function(wrap_pyfunction!(merge_set_shard, m)?)?;
    m.add_function(wrap_pyfunction!(write_set_duplicates, m)?)?;
    m.add_function(wrap_pyfunction!(write_part_slices, m)?)?;
    m.add_function(wrap_pyfunction!(cut_pivot, m)?)?;
    Ok(())
}
