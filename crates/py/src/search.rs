//! Python wrapper of `molsift-search`: `Searcher` over one store (its column index, or a row
//! scan), and `build_column_index` to write a store's index.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use molsift_search::{
    BarSlot, ColumnIndex, Hit, Query, SearchOptions, SearchStats, StoreSearcher, SCORES_WORDS,
    SHARED_K,
};
use molsift_store::planes;
use molsift_store::v2::StoreV2;
use molsift_store::Store;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::error::search_err;
use crate::le::{le_bytes, words};

/// Hits of one query as (store indices, scores).
type PyHits = (Vec<u64>, Vec<f64>);

/// Searches one store: opened once, then any number of queries (GIL released while searching).
#[pyclass(name = "Searcher", module = "molsift._core")]
pub struct PySearcher {
    target: Target,
}

/// A store with its index, or a bare column index (`Searcher.from_index`: no row scan then).
enum Target {
    Store(StoreSearcher),
    Bare(ColumnIndex),
}

impl PySearcher {
    fn options(threshold: Option<f64>, k: Option<usize>, threads: usize) -> SearchOptions {
        SearchOptions {
            threshold,
            k,
            threads: threads.max(1),
            bar: None,
        }
    }

    fn columns(&self) -> &ColumnIndex {
        match &self.target {
            Target::Store(s) => s.columns(),
            Target::Bare(c) => c,
        }
    }

    fn query(&self, on_bits: &[u32]) -> PyResult<Query> {
        Query::from_on_bits(self.columns().bits(), on_bits).map_err(search_err)
    }

    /// [`PySearcher::query`] of each of a batch's queries.
    fn queries(&self, batch: &[Vec<u32>]) -> PyResult<Vec<Query>> {
        batch.iter().map(|q| self.query(q)).collect()
    }

    /// A searcher over an open store (the same generation as the caller's other reads).
    pub(crate) fn over(py: Python<'_>, store: Arc<Store>) -> PyResult<Self> {
        let s = py
            .detach(|| StoreSearcher::new(store))
            .map_err(search_err)?;
        Ok(PySearcher {
            target: Target::Store(s),
        })
    }
}

/// The bar slot of each query's tag in `bars`: none without them; both or neither.
fn slots_of(bars: Option<&PySharedBars>, tags: Option<Vec<u32>>) -> PyResult<Vec<BarSlot>> {
    match (bars, tags) {
        (Some(b), Some(tags)) => Ok(tags.iter().map(|&t| b.slot(t)).collect()),
        (None, None) => Ok(Vec::new()),
        _ => Err(pyo3::exceptions::PyValueError::new_err(
            "give bars and tags together (one tag per query)",
        )),
    }
}

/// A batch's answer for Python: (indices, scores) per query, and the stats.
fn batch_answer<'py>(
    py: Python<'py>,
    all: Vec<Vec<Hit>>,
    stats: &SearchStats,
) -> PyResult<(Vec<PyHits>, Bound<'py, PyDict>)> {
    let out = all
        .into_iter()
        .map(|hits| hits.into_iter().map(|h| (h.index, h.score)).unzip())
        .collect();
    Ok((out, stats_dict(py, stats)?))
}

fn stats_dict<'py>(py: Python<'py>, s: &SearchStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("path", s.path.name())?;
    d.set_item("bytes_touched", s.bytes_touched)?;
    d.set_item("buckets_visited", s.buckets_visited)?;
    d.set_item("units_visited", s.units_visited)?;
    d.set_item("candidates", s.candidates)?;
    Ok(d)
}

impl PySearcher {
    /// The searcher over the compressed planes of an open version-2 store (hits are store
    /// positions; every query takes the planes), its files the ones the store opened.
    pub(crate) fn from_store_v2(py: Python<'_>, store: &StoreV2) -> PyResult<Self> {
        let columns = py
            .detach(|| {
                store.verify_file(planes::HEADER_FILE)?;
                ColumnIndex::open_planes(store.path(), |name| Ok(store.file(name)?))
            })
            .map_err(search_err)?;
        Ok(PySearcher {
            target: Target::Bare(columns),
        })
    }
}

#[pymethods]
impl PySearcher {
    /// Opens the store at `path` (sizes checked) and its column index; a store without one gets
    /// an index built in memory (see `index_built_in_memory`).
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let s = py
            .detach(|| StoreSearcher::open(&path))
            .map_err(search_err)?;
        Ok(PySearcher {
            target: Target::Store(s),
        })
    }

    /// Opens a bare column index directory (no store beside it: hits are index positions, and
    /// every query takes the column path). For benchmarks on synthetic indexes.
    #[staticmethod]
    fn from_index(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let columns = py.detach(|| ColumnIndex::open(&path)).map_err(search_err)?;
        Ok(PySearcher {
            target: Target::Bare(columns),
        })
    }

    /// Molecules in the index.
    fn __len__(&self) -> usize {
        self.columns().len()
    }

    /// Whether searches give the kernel read-ahead hints (madvise WILLNEED) for the planes each
    /// query scans; on by default when the index is larger than half the memory the page cache
    /// may use. Settable (results never change, only how pages come in from disk).
    #[getter]
    fn read_ahead(&self) -> bool {
        self.columns().read_ahead()
    }

    #[setter]
    fn set_read_ahead(&mut self, on: bool) {
        match &mut self.target {
            Target::Store(s) => s.columns_mut().set_read_ahead(on),
            Target::Bare(c) => c.set_read_ahead(on),
        }
    }

    /// True when the store had no column index on disk and one was built at open.
    #[getter]
    fn index_built_in_memory(&self) -> bool {
        matches!(&self.target, Target::Store(s) if s.built_in_memory())
    }

    /// One query given by its on-bits: (indices, scores, stats), best first (score descending,
    /// then store index ascending).
    /// With `bars` (top-k): the searches of this query over other shards given the same
    /// `bars` and `tag` share their k-th best with this one as they run (cell `tag % len`).
    #[pyo3(signature = (on_bits, threshold=None, k=None, threads=1, bars=None, tag=0))]
    #[allow(clippy::too_many_arguments)]
    fn search<'py>(
        &self,
        py: Python<'py>,
        on_bits: Vec<u32>,
        threshold: Option<f64>,
        k: Option<usize>,
        threads: usize,
        bars: Option<PyRef<'py, PySharedBars>>,
        tag: u32,
    ) -> PyResult<(Vec<u64>, Vec<f64>, Bound<'py, PyDict>)> {
        let query = self.query(&on_bits)?;
        let mut opts = Self::options(threshold, k, threads);
        opts.bar = bars.as_ref().map(|b| b.slot(tag));
        let (hits, stats) = py
            .detach(|| match &self.target {
                Target::Store(s) => s.search(&query, &opts),
                Target::Bare(c) => molsift_search::search(c, None, &query, &opts),
            })
            .map_err(search_err)?;
        let (idx, scores) = hits.into_iter().map(|h| (h.index, h.score)).unzip();
        Ok((idx, scores, stats_dict(py, &stats)?))
    }

    /// Many queries at once (threads share the queries): a list of (indices, scores), and the
    /// stats summed over the queries. With `bars` (top-k) and `tags` (one per query): query
    /// `i` shares its k-th best with the searches of the same query over other shards given
    /// the same `bars` and tag (cell `tags[i] % len`), as `search` does for one query.
    #[pyo3(signature = (queries, threshold=None, k=None, threads=1, bars=None, tags=None))]
    #[allow(clippy::too_many_arguments)]
    fn search_batch<'py>(
        &self,
        py: Python<'py>,
        queries: Vec<Vec<u32>>,
        threshold: Option<f64>,
        k: Option<usize>,
        threads: usize,
        bars: Option<PyRef<'py, PySharedBars>>,
        tags: Option<Vec<u32>>,
    ) -> PyResult<(Vec<PyHits>, Bound<'py, PyDict>)> {
        let queries = self.queries(&queries)?;
        let slots = slots_of(bars.as_deref(), tags)?;
        let opts = Self::options(threshold, k, threads);
        let (all, stats) = py
            .detach(|| match &self.target {
                Target::Store(s) => s.search_batch_sharing(&queries, &opts, &slots),
                Target::Bare(c) => {
                    molsift_search::search_batch_sharing(c, None, &queries, &opts, &slots)
                }
            })
            .map_err(search_err)?;
        batch_answer(py, all, &stats)
    }

    /// Many queries over several searchers at once (a store set's shards in this process), at
    /// set positions `offsets[i] +` each searcher's own: a list of (positions, scores) per
    /// query, merged best first, and the stats summed. Top-k goes best bound first across
    /// every shard's blocks (`molsift_search::search_shards`); `bars` and `tags` (one per
    /// query) share each query's k-th best with other processes' searches of it.
    #[staticmethod]
    #[pyo3(signature = (searchers, offsets, queries, threshold=None, k=None, threads=1, bars=None, tags=None))]
    #[allow(clippy::too_many_arguments)]
    fn search_shards<'py>(
        py: Python<'py>,
        searchers: Vec<PyRef<'py, PySearcher>>,
        offsets: Vec<u64>,
        queries: Vec<Vec<u32>>,
        threshold: Option<f64>,
        k: Option<usize>,
        threads: usize,
        bars: Option<PyRef<'py, PySharedBars>>,
        tags: Option<Vec<u32>>,
    ) -> PyResult<(Vec<PyHits>, Bound<'py, PyDict>)> {
        if searchers.len() != offsets.len() {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "{} searchers and {} offsets: give one offset per searcher",
                searchers.len(),
                offsets.len()
            )));
        }
        let Some(first) = searchers.first() else {
            return batch_answer(py, vec![Vec::new(); queries.len()], &SearchStats::default());
        };
        let queries = first.queries(&queries)?;
        let slots = slots_of(bars.as_deref(), tags)?;
        let shards: Vec<(&ColumnIndex, u64)> =
            searchers.iter().map(|s| s.columns()).zip(offsets).collect();
        let opts = Self::options(threshold, k, threads);
        let (all, stats) = py
            .detach(|| molsift_search::search_shards_batch(&shards, &queries, &opts, &slots))
            .map_err(search_err)?;
        batch_answer(py, all, &stats)
    }
}

/// Cells where searches of one query over different shards share their k-th best as they
/// run (`molsift_search::BarSlot`): owned (threads of this process), or in memory that another
/// object owns (an MPI window that the ranks of a node share), which this one keeps alive.
#[pyclass(name = "SharedBars", module = "molsift._core", frozen)]
pub struct PySharedBars {
    /// the cells, then each cell's slot of scores (`SCORES_WORDS` words)
    owned: Box<[AtomicU64]>,
    /// address and cells of the foreign memory (laid out as `owned`), and its owner
    foreign: Option<(usize, usize, Py<PyAny>)>,
}

/// Bytes of one cell with its slot of scores.
const CELL_BYTES: usize = 8 * (1 + SCORES_WORDS);

impl PySharedBars {
    fn cells(&self) -> usize {
        match &self.foreign {
            Some((_, n, _)) => *n,
            None => self.owned.len() / (1 + SCORES_WORDS),
        }
    }

    /// The slot of query `tag`: cell `tag % len`, with its scores.
    fn slot(&self, tag: u32) -> BarSlot {
        let n = self.cells();
        let i = tag as usize % n;
        let base: *const AtomicU64 = match &self.foreign {
            Some((addr, _, _)) => *addr as *const AtomicU64,
            None => self.owned.as_ptr(),
        };
        // SAFETY: `over` checked (and `new` made) `n` cells and `n` slots of scores after them,
        // aligned; they live as long as `self` (owned, or its owner kept alive), and the
        // caller holds `self` for the whole search.
        unsafe { BarSlot::with_scores(base.add(i), base.add(n + i * SCORES_WORDS), tag) }
    }
}

#[pymethods]
impl PySharedBars {
    /// `cells` cells of this object's own, none holding a bar.
    #[new]
    #[pyo3(signature = (cells=1))]
    fn new(cells: usize) -> PyResult<Self> {
        if cells == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "SharedBars needs a cell",
            ));
        }
        Ok(PySharedBars {
            owned: (0..cells * (1 + SCORES_WORDS))
                .map(|_| AtomicU64::new(0))
                .collect(),
            foreign: None,
        })
    }

    /// Cells in memory that `owner` keeps: `nbytes` bytes at `address` (`nbytes //
    /// SHARED_BAR_BYTES` cells; aligned to 8 bytes, zeroed by whoever made it, accessed by
    /// every process that maps it only through SharedBars), valid for as long as `owner` lives
    /// (it is kept with this object).
    #[staticmethod]
    fn over(address: usize, nbytes: usize, owner: Py<PyAny>) -> PyResult<Self> {
        if address == 0 || address % 8 != 0 || nbytes < CELL_BYTES {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "SharedBars.over needs at least {CELL_BYTES} bytes aligned to 8"
            )));
        }
        Ok(PySharedBars {
            owned: Box::new([]),
            foreign: Some((address, nbytes / CELL_BYTES, owner)),
        })
    }

    fn __len__(&self) -> usize {
        self.cells()
    }

    /// The bar shared for query `tag` (its score), or None.
    fn get(&self, tag: u32) -> Option<f64> {
        self.slot(tag)
            .get()
            .map(|(c, u)| molsift_search::rdkit_score(c, c + u, 0))
    }
}

/// Builds the column index of the store at `path` and writes it into the store directory
/// (its header last), holding at most `budget` bytes of planes in memory at a time; returns the
/// index size in bytes.
#[pyfunction]
#[pyo3(signature = (path, budget=molsift_search::DEFAULT_BUILD_BUDGET))]
fn build_column_index(py: Python<'_>, path: PathBuf, budget: usize) -> PyResult<u64> {
    py.detach(|| ColumnIndex::index_store_at(&path, budget))
        .map_err(search_err)
}

/// `molsift_search::merge_runs` over bytes (little-endian u64 counts, i64 positions, f64
/// scores): the merged positions and scores as bytes, and where each query's hits end.
#[pyfunction]
fn merge_runs<'py>(
    py: Python<'py>,
    counts: &[u8],
    runs: usize,
    positions: &[u8],
    scores: &[u8],
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, Vec<usize>)> {
    let counts = words(counts, "counts", u64::from_le_bytes)?;
    let positions = words(positions, "positions", i64::from_le_bytes)?;
    let scores = words(scores, "scores", f64::from_le_bytes)?;
    let m = py
        .detach(|| molsift_search::merge_runs(&counts, runs, &positions, &scores))
        .map_err(search_err)?;
    Ok((
        le_bytes(py, &m.positions, i64::to_le_bytes),
        le_bytes(py, &m.scores, f64::to_le_bytes),
        m.ends,
    ))
}

/// `molsift_search::merge_top_k` over bytes of (f64 score, i64 position) records: `into`'s
/// rows merged with `incoming`'s, returned as bytes.
#[pyfunction]
fn merge_top_k<'py>(
    py: Python<'py>,
    incoming: &[u8],
    into: &[u8],
    k: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    if incoming.len() % 16 != 0 || into.len() % 16 != 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "top-k records are 16 bytes each",
        ));
    }
    let records = |data: &[u8], what: &str| -> PyResult<Vec<(f64, i64)>> {
        let w = words(data, what, u64::from_le_bytes)?;
        Ok(w.chunks_exact(2)
            .map(|p| (f64::from_bits(p[0]), p[1] as i64))
            .collect())
    };
    let incoming = records(incoming, "incoming")?;
    let mut into = records(into, "into")?;
    molsift_search::merge_top_k(&incoming, &mut into, k).map_err(search_err)?;
    let flat: Vec<u64> = into
        .iter()
        .flat_map(|&(s, p)| [s.to_bits(), p as u64])
        .collect();
    Ok(le_bytes(py, &flat, u64::to_le_bytes))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySearcher>()?;
    m.add_class::<PySharedBars>()?;
    // bytes a cell of SharedBars takes in the memory given to `over` (its k-th best, and a slot
    // where the searches of a top-k query of k <= SHARED_K share their molecules' scores)
    m.add("SHARED_BAR_BYTES", CELL_BYTES)?;
    // the largest k whose searches share their molecules' scores, not only their k-th bests
    m.add("SHARED_BAR_K", SHARED_K)?;
    m.add_function(wrap_pyfunction!(build_column_index, m)?)?;
    m.add_function(wrap_pyfunction!(merge_runs, m)?)?;
    m.add_function(wrap_pyfunction!(merge_top_k, m)?)?;
    Ok(())
}
