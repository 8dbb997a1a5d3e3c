//! Python wrappers of `molsift_analogs`: the canonical form of a skeleton, its edits, the exact
//! walk over an in-memory library or a store's analog index, and the index build.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use molsift_analogs::walk::{Limits, WalkStats};
use molsift_analogs::{
    canonical, edits, skeleton_of_smiles, walk, write_index, AnalogIndex, Event, Skeleton,
    SkeletonGroups, WalkOptions,
};
use molsift_store::{Store, Verify};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::error::{analog_err, store_err};

/// The canonical form of the skeleton of `n` atoms and `bonds`: (the canonical label of each
/// atom, the certificate as little-endian u32 bytes: equal exactly when the graphs are
/// isomorphic). ValueError for a bad graph or one needing more than `max_leaves` search leaves.
#[pyfunction]
#[pyo3(signature = (n, bonds, max_leaves=100_000))]
fn canonical_skeleton<'py>(
    py: Python<'py>,
    n: usize,
    bonds: Vec<(u32, u32)>,
    max_leaves: usize,
) -> PyResult<(Vec<u32>, Bound<'py, PyBytes>)> {
    let canon = py
        .detach(|| Skeleton::new(n, &bonds).and_then(|g| canonical(&g, max_leaves)))
        .map_err(analog_err)?;
    let bytes = canon.certificate_bytes();
    Ok((canon.labels, PyBytes::new(py, &bytes)))
}

/// The skeleton of a SMILES read from its topology alone: (heavy atoms, bonds as (i, j) with
/// i < j). ValueError naming the byte offset for text that is not SMILES.
#[pyfunction]
fn smiles_skeleton(py: Python<'_>, smiles: &str) -> PyResult<(usize, Vec<(u32, u32)>)> {
    let g = py
        .detach(|| skeleton_of_smiles(smiles))
        .map_err(analog_err)?;
    Ok((g.atoms(), g.bond_list().collect()))
}

/// Every single edit of the skeleton of `n` atoms and `bonds`: (kind name, certificate of the
/// result), one per edit (isomorphic results repeat).
#[pyfunction]
#[pyo3(signature = (n, bonds, max_leaves=100_000))]
fn skeleton_edits<'py>(
    py: Python<'py>,
    n: usize,
    bonds: Vec<(u32, u32)>,
    max_leaves: usize,
) -> PyResult<Vec<(&'static str, Bound<'py, PyBytes>)>> {
    let found = py
        .detach(|| {
            let g = Skeleton::new(n, &bonds)?;
            let mut out = Vec::new();
            let mut err = None;
            edits(&g, |kind, atoms, list| {
                match Skeleton::new(atoms, list).and_then(|r| canonical(&r, max_leaves)) {
                    Ok(c) => out.push((kind.name(), c.certificate_bytes())),
                    Err(e) => err = Some(e),
                }
            });
            err.map_or(Ok(out), Err)
        })
        .map_err(analog_err)?;
    Ok(found
        .into_iter()
        .map(|(kind, bytes)| (kind, PyBytes::new(py, &bytes)))
        .collect())
}

/// The skeletons of a library's SMILES (by position), searched by the exact walk.
#[pyclass(name = "SkeletonLibrary", module = "molsift._core", frozen)]
pub struct PySkeletonLibrary {
    inner: SkeletonGroups,
}

#[pymethods]
impl PySkeletonLibrary {
    /// Reads and canonicalizes `smiles` (position i is smiles[i]) on `threads` threads.
    #[new]
    #[pyo3(signature = (smiles, threads=1, max_leaves=100_000))]
    fn new(py: Python<'_>, smiles: Vec<String>, threads: usize, max_leaves: usize) -> Self {
        let inner = py.detach(|| {
            let refs: Vec<&str> = smiles.iter().map(String::as_str).collect();
            SkeletonGroups::build(&refs, threads, max_leaves)
        });
        PySkeletonLibrary { inner }
    }

    /// Number of distinct skeletons.
    fn __len__(&self) -> usize {
        self.inner.keys.len()
    }

    /// Positions whose SMILES could not be read, with the reason.
    fn failed(&self) -> Vec<(u32, String)> {
        self.inner.failed.clone()
    }

    /// Every library molecule within `max_dist` edits of the skeleton of `n` atoms and `bonds`,
    /// nearest skeletons first: ([(distance, positions)], [("edges", n), ("pruned", n),
    /// ("nodes", n), ("first_hit_ns", n), ("ns", n)]). `limits`: the most edits of each kind
    /// (tdn tup rdn rup ldn lup; 255: none). `stop_after`: end the walk with the distance at
    /// which that many molecules have been found (all of that distance still come).
    #[pyo3(signature = (n, bonds, max_dist, limits=[255; 6], max_leaves=100_000, stop_after=usize::MAX))]
    #[allow(clippy::type_complexity, clippy::too_many_arguments)] // the Python signature
    fn walk(
        &self,
        py: Python<'_>,
        n: usize,
        bonds: Vec<(u32, u32)>,
        max_dist: usize,
        limits: [u8; 6],
        max_leaves: usize,
        stop_after: usize,
    ) -> PyResult<(Vec<(usize, Vec<u32>)>, Vec<(&'static str, u64)>)> {
        let lib = &self.inner;
        let opts = WalkOptions {
            max_dist,
            limits,
            max_leaves,
            deadline: None,
            probe: stop_after != usize::MAX,
        };
        let molecules = |key| lib.groups[&key].clone();
        let (hits, stats) =
            timed_walk(py, n, &bonds, &opts, &lib.keys, stop_after, molecules, None)?;
        let hits = hits.into_iter().map(|(d, _, p)| (d, p)).collect();
        Ok((hits, stats))
    }
}

type Hits = Vec<(usize, [u8; 6], Vec<u32>)>;

/// Runs a walk without the GIL: the hits (distance, edits by kind, molecules from
/// `molecules(key)`) nearest first, ending with the distance at which `stop_after` molecules
/// are found, and the stats as (name, value) pairs. With `on_level`, each distance's hits are
/// handed to `on_level(distance, hits)` (with the GIL) as soon as that distance is complete,
/// and only those of an unfinished distance (after a timeout) are returned; an exception in
/// `on_level` ends the walk and is raised.
#[allow(clippy::too_many_arguments)] // the walk's knobs, passed through
fn timed_walk<L: molsift_analogs::Library + Sync>(
    py: Python<'_>,
    n: usize,
    bonds: &[(u32, u32)],
    opts: &WalkOptions,
    library: &L,
    stop_after: usize,
    molecules: impl Fn(u128) -> Vec<u32> + Send + Sync,
    on_level: Option<&Py<PyAny>>,
) -> PyResult<(Hits, Vec<(&'static str, u64)>)> {
    let (rest, stats, first, total) = py.detach(|| {
        let began = Instant::now();
        let mut first = None;
        let q = Skeleton::new(n, bonds).map_err(analog_err)?;
        let mut hits: Hits = Vec::new();
        let mut found = 0usize;
        let mut failed = None;
        let stats = walk(&q, opts, library, |event| match (event, on_level) {
            (
                Event::Hit {
                    distance,
                    key,
                    counts,
                },
                _,
            ) => {
                first.get_or_insert_with(|| began.elapsed().as_nanos() as u64);
                let group = molecules(key);
                found += group.len();
                hits.push((distance, *counts, group));
                found >= stop_after
            }
            (Event::Done(_), None) => false,
            (Event::Done(d), Some(callback)) => {
                let level = std::mem::take(&mut hits);
                Python::attach(|py| match callback.call1(py, (d, level)) {
                    Ok(_) => false,
                    Err(e) => {
                        failed = Some(e);
                        true
                    }
                })
            }
        })
        .map_err(analog_err)?;
        if let Some(e) = failed {
            return Err(e);
        }
        let total = began.elapsed().as_nanos() as u64;
        Ok::<_, PyErr>((hits, stats, first, total))
    })?;
    Ok((rest, stats_list(&stats, first.unwrap_or(total), total)))
}

fn stats_list(stats: &WalkStats, first: u64, total: u64) -> Vec<(&'static str, u64)> {
    vec![
        ("edges", stats.edges),
        ("pruned", stats.pruned),
        ("filtered", stats.filtered),
        ("insertions_skipped", stats.insertions_skipped),
        ("nodes", stats.nodes),
        ("complete_to", stats.complete_to as u64),
        ("timed_out", u64::from(stats.timed_out)),
        ("first_hit_ns", first),
        ("ns", total),
    ]
}

/// The analog index of an open store (`molsift index STORE --analogs`): its distinct skeletons
/// and their molecules, searched by the exact walk.
#[pyclass(name = "AnalogIndex", module = "molsift._core", frozen)]
pub struct PyAnalogIndex {
    inner: AnalogIndex,
    _store: Arc<Store>,
}

impl PyAnalogIndex {
    pub(crate) fn over(py: Python<'_>, store: Arc<Store>) -> PyResult<Self> {
        let inner = py
            .detach(|| AnalogIndex::open_in(&store))
            .map_err(analog_err)?;
        Ok(PyAnalogIndex {
            inner,
            _store: store,
        })
    }
}

#[pymethods]
impl PyAnalogIndex {
    /// Opens the store at `path` (sizes checked) and its analog index.
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let store = py
            .detach(|| Store::open(&path, Verify::Sizes))
            .map_err(store_err)?;
        Self::over(py, Arc::new(store))
    }

    /// Number of distinct skeletons.
    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// The header (`analogs.json`) as JSON text.
    fn header_json(&self) -> String {
        serde_json::to_string(self.inner.header()).expect("header serializes")
    }

    /// Every indexed molecule within `max_dist` edits of the skeleton of `n` atoms and `bonds`,
    /// nearest skeletons first: ([(distance, edits by kind, positions)], [(stat, value)]).
    /// `limits`: the most edits of each kind (tdn tup rdn rup ldn lup; 255: none);
    /// `stop_after`: end with the distance at which that many molecules are found;
    /// `timeout_s`: stop there (stats `timed_out` 1; hits up to `complete_to` are complete);
    /// `on_level(distance, hits)`: called as each distance completes, with its hits (then only
    /// the hits of an unfinished distance are returned).
    #[pyo3(signature = (n, bonds, max_dist, limits=[255; 6], stop_after=usize::MAX, timeout_s=None, on_level=None))]
    #[allow(clippy::type_complexity, clippy::too_many_arguments)] // the Python signature
    fn walk(
        &self,
        py: Python<'_>,
        n: usize,
        bonds: Vec<(u32, u32)>,
        max_dist: usize,
        limits: Limits,
        stop_after: usize,
        timeout_s: Option<f64>,
        on_level: Option<Py<PyAny>>,
    ) -> PyResult<(Hits, Vec<(&'static str, u64)>)> {
        let opts = WalkOptions {
            max_dist,
            limits,
            max_leaves: self.inner.header().max_leaves,
            deadline: deadline(timeout_s)?,
            probe: stop_after != usize::MAX,
        };
        let index = &self.inner;
        let molecules = |key| {
            index
                .find(key)
                .map(|i| index.positions(i))
                .unwrap_or_default()
        };
        timed_walk(
            py,
            n,
            &bonds,
            &opts,
            index,
            stop_after,
            molecules,
            on_level.as_ref(),
        )
    }
}

fn deadline(timeout_s: Option<f64>) -> PyResult<Option<Instant>> {
    match timeout_s {
        Some(t) if !(t.is_finite() && t > 0.0) => Err(pyo3::exceptions::PyValueError::new_err(
            format!("the timeout must be a positive number of seconds, not {t}"),
        )),
        Some(t) => Ok(Some(Instant::now() + Duration::from_secs_f64(t))),
        None => Ok(None),
    }
}

/// Builds the analog index of the store at `path` on `threads` threads and renames it into the
/// store; `progress(done)` (optional) is called now and then with the molecules read. Returns
/// (the header as JSON text, bytes written).
#[pyfunction]
#[pyo3(signature = (path, threads=1, max_leaves=100_000, progress=None))]
fn build_analog_index(
    py: Python<'_>,
    path: PathBuf,
    threads: usize,
    max_leaves: usize,
    progress: Option<Py<PyAny>>,
) -> PyResult<(String, u64)> {
    let written = py
        .detach(|| {
            let store = Store::open(&path, Verify::Sizes)?;
            let report = |done: u64| {
                if let Some(cb) = &progress {
                    Python::attach(|py| {
                        // a failing progress callback must not fail the build
                        let _ = cb.call1(py, (done,));
                    });
                }
            };
            write_index(&store, threads.max(1), max_leaves, &report)
        })
        .map_err(analog_err)?;
    Ok((
        serde_json::to_string(&written.header).expect("header serializes"),
        written.bytes,
    ))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(canonical_skeleton, m)?)?;
    m.add_function(wrap_pyfunction!(smiles_skeleton, m)?)?;
    m.add_function(wrap_pyfunction!(skeleton_edits, m)?)?;
    m.add_class::<PySkeletonLibrary>()?;
    m.add_class::<PyAnalogIndex>()?;
    m.add_function(wrap_pyfunction!(build_analog_index, m)?)?;
    Ok(())
}
