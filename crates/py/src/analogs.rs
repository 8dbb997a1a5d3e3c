//! Python wrappers of `molsift_analogs`: the canonical form of a skeleton, its edits, the exact
//! walk over an in-memory library or a store's analog index, and the index build.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use molsift_analogs::divide::Alone;
use molsift_analogs::mapping::{colours, element_changes_below};
use molsift_analogs::walk::{Limits, WalkStats};
use molsift_analogs::{
    canonical, edits, element_code, skeleton_and_elements, skeleton_of_smiles, walk_with,
    write_index, AnalogError, AnalogIndex, Event, Library, Peers, Skeleton, SkeletonGroups, Union,
    UnionFilter, WalkOptions,
};
use molsift_store::{open_any, StoreFiles};
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
            stop: None,
            probe: stop_after != usize::MAX,
            threads: 1,
        };
        let molecules = |key| lib.groups[&key].clone();
        let (hits, _, stats) = timed_walk(
            py, n, &bonds, &opts, &lib.keys, stop_after, molecules, None, None, &mut Alone,
        )?;
        let hits = hits.into_iter().map(|(d, _, p)| (d, p)).collect();
        Ok((hits, stats))
    }
}

/// Hits as the walk's callers get them: (distance, edits by kind of the first path, positions).
type Hits = Vec<(usize, [u8; 6], Vec<u32>)>;

/// A molecule's skeleton and elements by store position (None: its SMILES cannot be read).
type Target<'a> = dyn Fn(u32) -> Option<(Skeleton, Vec<u16>)> + Sync + 'a;

/// Search nodes allowed per element mapping (`mut` is -1 past it).
const MAPPING_NODES: usize = 10_000;
/// Paths kept per hit for its element changes (the first ones the walk hands out).
const PATHS_PER_HIT: usize = 64;

fn element_codes(elements: Option<&[String]>) -> Option<Vec<u16>> {
    elements.map(|e| e.iter().map(|s| element_code(s)).collect())
}

/// A hit molecule as the mapping reads it: skeleton, elements, stable colours (None: its
/// SMILES cannot be read).
type Molecule = Option<(Skeleton, Vec<u16>, Vec<u64>)>;

/// The paths to each hit, in the order of its hit list.
type Paths = Vec<Vec<HitPath>>;

/// A walk's stats as (name, value) pairs.
type Stats = Vec<(&'static str, u64)>;

/// One path to a hit: its edits by kind, the graph it ends at and where that graph's atoms
/// come from.
struct HitPath {
    counts: [u8; 6],
    graph: Skeleton,
    origin: Vec<u16>,
}

/// The paths a walk found to each of its hits (in the order of its hit list), kept so that
/// the element changes (`mut`) of the rows a caller keeps can be computed afterwards
/// (`AnalogIndex.element_changes`), not those of every hit.
#[pyclass(name = "HitPaths", module = "molsift._core", frozen)]
pub struct PyHitPaths {
    /// the query atoms' element codes
    query: Vec<u16>,
    hits: Vec<Vec<HitPath>>,
}

#[pymethods]
impl PyHitPaths {
    /// No paths (a walk returns the ones it found).
    #[new]
    fn new() -> Self {
        PyHitPaths {
            query: Vec::new(),
            hits: Vec::new(),
        }
    }

    /// Number of hits.
    fn __len__(&self) -> usize {
        self.hits.len()
    }
}

impl PyHitPaths {
    /// For each (hit, position) row: (its element changes, -1 where unknown; the edits by kind
    /// of the path they were counted along): of the hit's paths, the one with the fewest
    /// changes for this molecule, the first on a tie. `target` reads a molecule.
    fn changes(
        &self,
        rows: &[(usize, u32)],
        target: &Target<'_>,
    ) -> PyResult<(Vec<i32>, Vec<[u8; 6]>)> {
        let mut molecules: std::collections::HashMap<u32, Molecule> = Default::default();
        let mut graphs: std::collections::HashMap<(usize, usize), Vec<u64>> = Default::default();
        let (mut muts, mut counts) = (Vec::with_capacity(rows.len()), Vec::new());
        for &(hit, pos) in rows {
            let paths = self.hits.get(hit).ok_or_else(|| {
                pyo3::exceptions::PyIndexError::new_err(format!("hit {hit} of {}", self.hits.len()))
            })?;
            let mol = molecules.entry(pos).or_insert_with(|| {
                target(pos).map(|(t, te)| {
                    let tc = colours(&t);
                    (t, te, tc)
                })
            });
            let mut best: Option<(u32, [u8; 6])> = None;
            if let Some((t, te, tc)) = mol {
                for (k, path) in paths.iter().enumerate() {
                    let gc = graphs
                        .entry((hit, k))
                        .or_insert_with(|| colours(&path.graph));
                    let below = best.map_or(u32::MAX, |b| b.0);
                    if let Some(m) = element_changes_below(
                        (&path.graph, gc),
                        &path.origin,
                        &self.query,
                        (t, tc),
                        te,
                        MAPPING_NODES,
                        below,
                    ) {
                        best = Some((m, path.counts));
                        if m == 0 {
                            break;
                        }
                    }
                }
            }
            let first = paths.first().map_or([0; 6], |p| p.counts);
            match best {
                Some((m, c)) => {
                    muts.push(m as i32);
                    counts.push(c);
                }
                None => {
                    muts.push(-1);
                    counts.push(first);
                }
            }
        }
        Ok((muts, counts))
    }
}

/// Runs a walk without the GIL: the hits (distance, edits by kind, molecules from
/// `molecules(key)`) nearest first, ending with the distance at which `stop_after` molecules
/// are found, the paths to each hit (with `elements`, the query's element codes: the first
/// [`PATHS_PER_HIT`] the walk hands out; none without), and the stats as (name, value) pairs.
/// With `on_level`, each distance's hits and their paths are handed to `on_level(distance,
/// hits, paths)` (with the GIL) as soon as that distance is complete, and only those of an
/// unfinished distance (after a timeout) are returned; an exception in `on_level` ends the
/// walk and is raised.
#[allow(clippy::too_many_arguments)] // the walk's knobs, passed through
fn timed_walk<L: molsift_analogs::Library + Sync>(
    py: Python<'_>,
    n: usize,
    bonds: &[(u32, u32)],
    opts: &WalkOptions<'_>,
    library: &L,
    stop_after: usize,
    molecules: impl Fn(u128) -> Vec<u32> + Send + Sync,
    elements: Option<&[u16]>,
    on_level: Option<&Py<PyAny>>,
    peers: &mut (dyn Peers + Send),
) -> PyResult<(Hits, Paths, Stats)> {
    let (rest, rest_paths, stats, first, total) = py.detach(|| {
        let began = Instant::now();
        let mut first = None;
        let q = Skeleton::new(n, bonds).map_err(analog_err)?;
        if let Some(codes) = elements {
            if codes.len() != n {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "{} elements for a query of {n} atoms",
                    codes.len()
                )));
            }
        }
        let mut hits: Hits = Vec::new();
        let mut paths: Paths = Vec::new();
        // this distance's hits by key
        let mut at: std::collections::HashMap<u128, usize> = Default::default();
        let mut found = 0usize;
        let mut failed = None;
        let stats = walk_with(&q, opts, library, peers, |event| match (event, on_level) {
            (
                Event::Hit {
                    again,
                    key,
                    distance,
                    counts,
                    origin,
                    graph,
                },
                _,
            ) => {
                first.get_or_insert_with(|| began.elapsed().as_nanos() as u64);
                let path = || HitPath {
                    counts: *counts,
                    graph: graph.clone(),
                    origin: origin.to_vec(),
                };
                if !again {
                    let group = molecules(key);
                    found += group.len();
                    at.insert(key, hits.len());
                    hits.push((distance, *counts, group));
                    paths.push(if elements.is_some() {
                        vec![path()]
                    } else {
                        Vec::new()
                    });
                } else if let (Some(_), Some(&i)) = (elements, at.get(&key)) {
                    if paths[i].len() < PATHS_PER_HIT {
                        paths[i].push(path());
                    }
                }
                found >= stop_after
            }
            (Event::Done(_), None) => {
                at.clear();
                false
            }
            (Event::Done(d), Some(callback)) => {
                at.clear();
                let level = std::mem::take(&mut hits);
                let level_paths = PyHitPaths {
                    query: elements.unwrap_or_default().to_vec(),
                    hits: std::mem::take(&mut paths),
                };
                Python::attach(|py| match callback.call1(py, (d, level, level_paths)) {
                    // a true answer ends the walk here, its stats returned
                    Ok(more) => more.bind(py).is_truthy().unwrap_or(false),
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
        Ok::<_, PyErr>((hits, paths, stats, first, total))
    })?;
    Ok((
        rest,
        rest_paths,
        stats_list(&stats, first.unwrap_or(total), total),
    ))
}

/// The processes walking with this one (`molsift_analogs::Peers`), as Python gives them:
/// `exchange(bytes) -> list[bytes]` (every walker's, in rank order) is called with the GIL held,
/// by every walker at the same point of the walk (under MPI: an allgather).
struct PyPeers {
    rank: usize,
    size: usize,
    exchange: Py<PyAny>,
    /// what `exchange` raised (the walk then ends with an error)
    failed: Option<PyErr>,
}

impl Peers for PyPeers {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn exchange(&mut self, mine: Vec<u8>) -> Result<Vec<Vec<u8>>, AnalogError> {
        let got = Python::attach(|py| {
            self.exchange
                .call1(py, (PyBytes::new(py, &mine),))
                .and_then(|all| all.extract::<Vec<Vec<u8>>>(py))
        });
        got.map_err(|e| {
            let why = AnalogError::Invalid(format!("the exchange with the walk's peers: {e}"));
            self.failed = Some(e);
            why
        })
    }
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
    _store: Arc<dyn StoreFiles + Send>,
}

impl PyAnalogIndex {
    pub(crate) fn over(py: Python<'_>, store: Arc<dyn StoreFiles + Send>) -> PyResult<Self> {
        let inner = py
            .detach(|| AnalogIndex::open_in(&*store))
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
        let store = py.detach(|| open_any(&path)).map_err(store_err)?;
        Self::over(py, Arc::from(store))
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
    /// nearest skeletons first: ([(distance, edits by kind, positions)], the paths to each hit
    /// (`HitPaths`, for `element_changes`; empty without `elements`, the query atoms' element
    /// symbols), [(stat, value)]).
    /// `limits`: the most edits of each kind (tdn tup rdn rup ldn lup; 255: none);
    /// `stop_after`: end with the distance at which that many molecules are found;
    /// `timeout_s`: stop there (stats `timed_out` 1; hits up to `complete_to` are complete);
    /// `on_level(distance, hits)`: called as each distance completes, with its hits (then only
    /// the hits of an unfinished distance are returned; a true answer ends the walk there, an
    /// exception it raises ends it with that error);
    /// `cancel` (a `CancelFlag`): the walk stops once it is set (read every 256 edits) and
    /// raises `Cancelled`; `probe` (default: with `stop_after`): each distance's hits found,
    /// and `on_level` called, before its graphs are canonicalized for the next distance;
    /// `threads`: each distance divided among that many threads; `peers` (rank, size,
    /// exchange): other processes walking the same query over the same library with the same
    /// arguments at the same time, each distance divided among all of them too, every
    /// `exchange(bytes) -> list[bytes]` a collective (every walker's bytes in rank order: an
    /// allgather); every walker gets the whole walk's hits, its stats count its own work.
    #[pyo3(signature = (n, bonds, max_dist, limits=[255; 6], stop_after=usize::MAX, timeout_s=None, on_level=None, elements=None, cancel=None, probe=None, threads=1, peers=None))]
    #[allow(clippy::type_complexity, clippy::too_many_arguments)] // the Python signature
    fn walk<'py>(
        &self,
        py: Python<'py>,
        n: usize,
        bonds: Vec<(u32, u32)>,
        max_dist: usize,
        limits: Limits,
        stop_after: usize,
        timeout_s: Option<f64>,
        on_level: Option<Py<PyAny>>,
        elements: Option<Vec<String>>,
        cancel: Option<PyRef<'py, crate::cancel::PyCancelFlag>>,
        probe: Option<bool>,
        threads: usize,
        peers: Option<(usize, usize, Py<PyAny>)>,
    ) -> PyResult<(Hits, PyHitPaths, Vec<(&'static str, u64)>)> {
        let index = &self.inner;
        let molecules = |key| {
            index
                .find(key)
                .map(|i| index.positions(i))
                .unwrap_or_default()
        };
        let args = WalkArgs {
            n,
            bonds,
            max_dist,
            limits,
            stop_after,
            timeout_s,
            on_level,
            elements,
            probe,
            threads,
            peers,
        };
        library_walk(
            py,
            index,
            index.header().max_leaves,
            molecules,
            args,
            cancel,
        )
    }

    /// The element changes of hit rows: for each (hit, position), with `paths` from the walk
    /// that found them, (the atoms whose element differs from the query atom they come from,
    /// under the best isomorphism, over the hit's paths; -1 where unknown) and the edits by
    /// kind of the path that gives it (6 bytes).
    #[allow(clippy::type_complexity)] // the Python signature
    fn element_changes(
        &self,
        py: Python<'_>,
        paths: &PyHitPaths,
        rows: Vec<(usize, u32)>,
    ) -> PyResult<(Vec<i32>, Vec<[u8; 6]>)> {
        let store = &self._store;
        let target = |pos: u32| {
            store
                .smiles_at(pos as usize)
                .ok()
                .and_then(|s| skeleton_and_elements(&s).ok())
        };
        py.detach(|| paths.changes(&rows, &target))
    }
}

/// A walk's hits, their paths and its stats, as Python receives them.
type WalkOutput = (Hits, PyHitPaths, Vec<(&'static str, u64)>);

/// What a walk of a Python caller asks for (`AnalogIndex.walk`, `AnalogIndexUnion.walk`).
struct WalkArgs {
    n: usize,
    bonds: Vec<(u32, u32)>,
    max_dist: usize,
    limits: Limits,
    stop_after: usize,
    timeout_s: Option<f64>,
    on_level: Option<Py<PyAny>>,
    elements: Option<Vec<String>>,
    probe: Option<bool>,
    /// threads each distance is divided among
    threads: usize,
    /// (rank, size, exchange): the processes walking with this one (`PyPeers`)
    peers: Option<(usize, usize, Py<PyAny>)>,
}

/// A walk over `library` (whose skeletons' molecules `molecules(key)` gives), as
/// `AnalogIndex.walk` returns it.
fn library_walk<L: Library + Sync>(
    py: Python<'_>,
    library: &L,
    max_leaves: usize,
    molecules: impl Fn(u128) -> Vec<u32> + Send + Sync,
    args: WalkArgs,
    cancel: Option<PyRef<'_, crate::cancel::PyCancelFlag>>,
) -> PyResult<WalkOutput> {
    let stop = crate::cancel::shared(cancel);
    let opts = WalkOptions {
        max_dist: args.max_dist,
        limits: args.limits,
        max_leaves,
        deadline: deadline(args.timeout_s)?,
        stop: stop.as_deref(),
        probe: args.probe.unwrap_or(args.stop_after != usize::MAX),
        threads: args.threads,
    };
    let codes = element_codes(args.elements.as_deref());
    let mut peers = args.peers.map(|(rank, size, exchange)| PyPeers {
        rank,
        size,
        exchange,
        failed: None,
    });
    let mut alone = Alone;
    let walked = timed_walk(
        py,
        args.n,
        &args.bonds,
        &opts,
        library,
        args.stop_after,
        molecules,
        codes.as_deref(),
        args.on_level.as_ref(),
        match peers.as_mut() {
            Some(p) => p,
            None => &mut alone,
        },
    );
    // an exchange that raised: its exception, not the walk's word for it
    if let Some(e) = peers.and_then(|p| p.failed) {
        return Err(e);
    }
    let (hits, paths, stats) = walked?;
    if stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed)) {
        return Err(crate::error::cancelled());
    }
    let paths = PyHitPaths {
        query: codes.unwrap_or_default(),
        hits: paths,
    };
    Ok((hits, paths, stats))
}

/// The analog indexes of a store set's shards searched by one walk
/// (`molsift_analogs::Union`), positions in the set (each shard's offset added): what a walk
/// of every shard finds, for about the cost of one walk.
#[pyclass(name = "AnalogIndexUnion", module = "molsift._core", frozen)]
pub struct PyAnalogIndexUnion {
    parts: Vec<Py<PyAnalogIndex>>,
    offsets: Vec<u32>,
    filter: UnionFilter,
}

impl PyAnalogIndexUnion {
    fn indexes(&self) -> Vec<&AnalogIndex> {
        inner_indexes(&self.parts)
    }
}

/// The Rust indexes of `parts`.
fn inner_indexes(parts: &[Py<PyAnalogIndex>]) -> Vec<&AnalogIndex> {
    parts.iter().map(|p| &p.get().inner).collect()
}

#[pymethods]
impl PyAnalogIndexUnion {
    /// The shards' indexes (`AnalogIndex`, in set order) and each shard's first set position;
    /// ValueError unless the offsets ascend, the set's positions fit 32 bits and the indexes
    /// were built alike (`max_leaves`). Makes the union's filter
    /// (`molsift_analogs::UnionFilter`: every shard's WL hashes in one bitmap, the bounds'
    /// tables joined), so made once per set and shards.
    #[new]
    fn new(parts: Vec<Py<PyAnalogIndex>>, offsets: Vec<u64>) -> PyResult<Self> {
        let bad = |why: String| Err(pyo3::exceptions::PyValueError::new_err(why));
        if parts.len() != offsets.len() || parts.is_empty() {
            return bad(format!(
                "{} indexes and {} offsets (one each, at least one)",
                parts.len(),
                offsets.len()
            ));
        }
        if offsets.windows(2).any(|w| w[0] >= w[1]) {
            return bad("the shards' offsets must ascend".into());
        }
        let mut out = Vec::with_capacity(offsets.len());
        for (p, &o) in parts.iter().zip(&offsets) {
            let end = o + p.get().inner.header().molecules;
            if end > u64::from(u32::MAX) + 1 {
                return bad(format!("set positions up to {end} do not fit 32 bits"));
            }
            out.push(o as u32);
        }
        let leaves = parts[0].get().inner.header().max_leaves;
        if parts
            .iter()
            .any(|p| p.get().inner.header().max_leaves != leaves)
        {
            return bad("the shards' analog indexes were built with different max_leaves".into());
        }
        let filter = UnionFilter::new(&inner_indexes(&parts));
        Ok(PyAnalogIndexUnion {
            parts,
            offsets: out,
            filter,
        })
    }

    /// As `AnalogIndex.walk`, over every shard at once, positions in the set.
    #[pyo3(signature = (n, bonds, max_dist, limits=[255; 6], stop_after=usize::MAX, timeout_s=None, on_level=None, elements=None, cancel=None, probe=None, threads=1, peers=None))]
    #[allow(clippy::type_complexity, clippy::too_many_arguments)] // the Python signature
    fn walk<'py>(
        &self,
        py: Python<'py>,
        n: usize,
        bonds: Vec<(u32, u32)>,
        max_dist: usize,
        limits: Limits,
        stop_after: usize,
        timeout_s: Option<f64>,
        on_level: Option<Py<PyAny>>,
        elements: Option<Vec<String>>,
        cancel: Option<PyRef<'py, crate::cancel::PyCancelFlag>>,
        probe: Option<bool>,
        threads: usize,
        peers: Option<(usize, usize, Py<PyAny>)>,
    ) -> PyResult<(Hits, PyHitPaths, Vec<(&'static str, u64)>)> {
        let indexes = self.indexes();
        let offsets = &self.offsets;
        let molecules = |key| {
            let mut out = Vec::new();
            for (index, &off) in indexes.iter().zip(offsets) {
                if let Some(i) = index.find(key) {
                    out.extend(index.positions(i).into_iter().map(|p| p + off));
                }
            }
            out
        };
        let leaves = indexes[0].header().max_leaves;
        let args = WalkArgs {
            n,
            bonds,
            max_dist,
            limits,
            stop_after,
            timeout_s,
            on_level,
            elements,
            probe,
            threads,
            peers,
        };
        library_walk(
            py,
            &Union::filtered(&indexes, &self.filter),
            leaves,
            molecules,
            args,
            cancel,
        )
    }

    /// As `AnalogIndex.element_changes`, rows by set position.
    #[allow(clippy::type_complexity)] // the Python signature
    fn element_changes(
        &self,
        py: Python<'_>,
        paths: &PyHitPaths,
        rows: Vec<(usize, u32)>,
    ) -> PyResult<(Vec<i32>, Vec<[u8; 6]>)> {
        let target = |pos: u32| {
            let s = self.offsets.partition_point(|&o| o <= pos).checked_sub(1)?;
            let store = &self.parts[s].get()._store;
            store
                .smiles_at((pos - self.offsets[s]) as usize)
                .ok()
                .and_then(|smi| skeleton_and_elements(&smi).ok())
        };
        py.detach(|| paths.changes(&rows, &target))
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
            let store = open_any(&path)?;
            let report = |done: u64| {
                if let Some(cb) = &progress {
                    Python::attach(|py| {
                        // a failing progress callback must not fail the build
                        let _ = cb.call1(py, (done,));
                    });
                }
            };
            write_index(&*store, threads.max(1), max_leaves, &report)
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
    m.add_class::<PyAnalogIndexUnion>()?;
    m.add_class::<PyHitPaths>()?;
    m.add_function(wrap_pyfunction!(build_analog_index, m)?)?;
    Ok(())
}
