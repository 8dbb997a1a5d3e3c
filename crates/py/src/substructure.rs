//! Python wrapper of `molsift-substructure`: writing a store's pattern index in parts
//! (`create_pattern_planes`, `write_pattern_part`, `finish_pattern_index`), ingest's index from
//! its workers' parts (`pattern_planes_from_parts`, `pattern_index_from_parts`) and `PatternIndex`,
//! the screen over an open store (GIL released while screening); `screen_from_pickles` (graph
//! records, screen facts and pattern fingerprints read from RDKit's binary form).

use std::path::PathBuf;
use std::sync::Arc;

use molsift_store::{open_any, StoreFiles};
use molsift_substructure::features::{parse_atom_order, screen_row, FeatureTable, RowLayout};
use molsift_substructure::pattern::{AtomReq, BondReq, Pattern};
use molsift_substructure::pickle::{screen_from_pickle, Facts, Read};
use molsift_substructure::{Compiled, PatternIndex, Program, ScreenStats};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::error::{store_err, substructure_err};
use crate::le::words;

/// Creates the (all-zero) planes file of `bits` planes for `n` molecules at `path`.
#[pyfunction]
fn create_pattern_planes(py: Python<'_>, path: PathBuf, bits: u32, n: usize) -> PyResult<()> {
    py.detach(|| molsift_substructure::create_planes(&path, bits, n))
        .map_err(substructure_err)
}

/// Writes molecules `first ..` into the planes file: `rows` holds `words_per_row` little-endian
/// u64 words per molecule. Returns how many of them have each bit.
#[pyfunction]
fn write_pattern_part(
    py: Python<'_>,
    path: PathBuf,
    bits: u32,
    n: usize,
    first: usize,
    rows: &[u8],
    words_per_row: usize,
) -> PyResult<Vec<u64>> {
    let rows = words(rows, "rows", u64::from_le_bytes)?;
    py.detach(|| molsift_substructure::write_part(&path, bits, n, first, &rows, words_per_row))
        .map_err(substructure_err)
}

/// Finishes the pattern index of the store at `store` from the planes at `planes_tmp` and the
/// graph parts in the directory `graphs_dir` (joined into the graphs file, then removed);
/// returns the bytes of the planes. A version-2 store's graph blocks are compressed on
/// `threads` threads (the same bytes for any number).
#[pyfunction]
#[pyo3(signature = (store, planes_tmp, bits, bit_counts, meaning_json, graphs_dir=None, threads=1))]
#[allow(clippy::too_many_arguments)]
fn finish_pattern_index(
    py: Python<'_>,
    store: PathBuf,
    planes_tmp: PathBuf,
    bits: u32,
    bit_counts: Vec<u64>,
    meaning_json: &str,
    graphs_dir: Option<PathBuf>,
    threads: usize,
) -> PyResult<u64> {
    let meaning = serde_json::from_str(meaning_json).map_err(crate::error::json_err)?;
    py.detach(|| {
        let store = open_any(&store)?;
        let as_store = |e| match e {
            molsift_substructure::SubstructureError::Store(s) => s,
            other => molsift_store::StoreError::Invalid(other.to_string()),
        };
        let graphs_tmp = match &graphs_dir {
            None => None,
            Some(dir) => {
                let name = store.path().join(molsift_substructure::graph::GRAPHS_FILE);
                let tmp = molsift_store::replace::temporary_sibling(&name, "tmp");
                let made = molsift_substructure::assemble_graphs(dir, store.len(), &tmp);
                let _ = std::fs::remove_dir_all(dir);
                if let Err(e) = made {
                    let _ = std::fs::remove_file(&tmp);
                    return Err(as_store(e));
                }
                Some(tmp)
            }
        };
        let done = molsift_substructure::finish_index(
            &*store,
            &planes_tmp,
            graphs_tmp.as_deref(),
            bits,
            bit_counts,
            meaning,
            threads,
        );
        if let (Err(_), Some(tmp)) = (&done, &graphs_tmp) {
            let _ = std::fs::remove_file(tmp);
        }
        done.map_err(as_store)
    })
    .map_err(store_err)
}

/// Writes the substructure index of the version-2 store at `dst`, upgraded from the
/// version-1 store at `src`, by carrying `src`'s index over to the new positions (no molecule
/// parsed again), its graph blocks compressed on `threads` threads; returns the bytes of the
/// new screen. `source` (u32 little-endian, one per molecule of `dst`: its position in `src`)
/// is given for a shard of a set; without it, `dst`'s input order says it.
#[pyfunction]
#[pyo3(signature = (src, dst, threads=1, source=None))]
fn carry_pattern_index(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    threads: usize,
    source: Option<&[u8]>,
) -> PyResult<u64> {
    let given = source.map(crate::store::u32s_of).transpose()?;
    py.detach(|| {
        let from = molsift_store::Store::open(&src, molsift_store::Verify::Sizes)
            .map_err(molsift_substructure::SubstructureError::from)?;
        let index = PatternIndex::open_in(&from)?;
        let to = molsift_store::v2::StoreV2::open(&dst, false)
            .map_err(molsift_substructure::SubstructureError::from)?;
        let source = match given {
            Some(s) => s,
            None => input_ranks(&to)?,
        };
        molsift_substructure::carry_index(&index, &to, &source, threads)
    })
    .map_err(substructure_err)
}

/// Writes the dense planes (`bits` planes, at the new temporary file `planes`) of the
/// screening rows of ingest's parts (`parts`: each `PART` of `PART.rows.u64`, `PART.glen.u32`,
/// `PART.grec.bin`, in task order, less the molecules at `dropped`) on `threads` threads;
/// returns how many molecules have each bit.
#[pyfunction]
#[pyo3(signature = (planes, parts, dropped, bits, words_per_row, threads=1))]
fn pattern_planes_from_parts(
    py: Python<'_>,
    planes: PathBuf,
    parts: Vec<PathBuf>,
    dropped: Vec<u64>,
    bits: u32,
    words_per_row: usize,
    threads: usize,
) -> PyResult<Vec<u64>> {
    py.detach(|| {
        let p =
            molsift_substructure::fromparts::Parts::open(&parts, &dropped, words_per_row, None)?;
        molsift_substructure::fromparts::planes_from_parts(&p, &planes, bits, threads)
    })
    .map_err(substructure_err)
}

/// Writes the substructure index of the version-2 store at `dst`, written from ingest's
/// parts, from the parts' dense planes (`pattern_planes_from_parts`: `planes`,
/// `bit_counts`) and graph records, its graph blocks compressed on `threads` threads; returns
/// the bytes of the screen. `source` (u32 little-endian, one per molecule of `dst`: its
/// input rank) is given for a shard of a set; without it, `dst`'s input order says it. The
/// graph blocks are compressed a window of about `window_bytes` of records at a time (default
/// `PATTERN_WINDOW_BYTES`).
const WINDOW_BYTES: usize = molsift_substructure::compact::WINDOW_BYTES;

#[pyfunction]
#[pyo3(signature = (dst, planes, bit_counts, parts, dropped, words_per_row, meaning_json, threads=1, source=None, window_bytes=WINDOW_BYTES))]
#[allow(clippy::too_many_arguments)]
fn pattern_index_from_parts(
    py: Python<'_>,
    dst: PathBuf,
    planes: PathBuf,
    bit_counts: Vec<u64>,
    parts: Vec<PathBuf>,
    dropped: Vec<u64>,
    words_per_row: usize,
    meaning_json: &str,
    threads: usize,
    source: Option<&[u8]>,
    window_bytes: usize,
) -> PyResult<u64> {
    let meaning = serde_json::from_str(meaning_json).map_err(crate::error::json_err)?;
    let given = source.map(crate::store::u32s_of).transpose()?;
    py.detach(|| {
        let (p, to) = parts_and_store(&parts, &dropped, words_per_row, &dst, None)?;
        let source = match given {
            Some(s) => s,
            None => input_ranks(&to)?,
        };
        molsift_substructure::fromparts::index_from_parts(
            &p,
            &planes,
            &bit_counts,
            meaning,
            &to,
            &source,
            threads,
            window_bytes.max(1),
        )
    })
    .map_err(substructure_err)
}

/// Writes the substructure index of `dst`, one shard of a store set whose molecules are the
/// input ranks `source` (u32 little-endian) of ingest's `parts` (less the molecules at
/// `dropped`), from the shard's own rows: their `bits` dense planes written at `scratch` (a new
/// temporary file, removed before returning), then the index as `pattern_index_from_parts`
/// writes it; returns the bytes of the screen. With `total`, `parts` are the slices the shard's
/// writer received under MPI, of parts holding `total` molecules (`write_part_slices`).
#[pyfunction]
#[pyo3(signature = (dst, scratch, parts, dropped, bits, words_per_row, meaning_json, source, threads=1, window_bytes=WINDOW_BYTES, total=None))]
#[allow(clippy::too_many_arguments)]
fn pattern_shard_index_from_parts(
    py: Python<'_>,
    dst: PathBuf,
    scratch: PathBuf,
    parts: Vec<PathBuf>,
    dropped: Vec<u64>,
    bits: u32,
    words_per_row: usize,
    meaning_json: &str,
    source: &[u8],
    threads: usize,
    window_bytes: usize,
    total: Option<u64>,
) -> PyResult<u64> {
    let meaning = serde_json::from_str(meaning_json).map_err(crate::error::json_err)?;
    let source = crate::store::u32s_of(source)?;
    py.detach(|| {
        let (p, to) = parts_and_store(&parts, &dropped, words_per_row, &dst, total)?;
        molsift_substructure::fromparts::shard_index_from_parts(
            &p,
            &scratch,
            bits,
            meaning,
            &to,
            &source,
            threads,
            window_bytes.max(1),
        )
    })
    .map_err(substructure_err)
}

/// Ingest's parts (less the molecules at `dropped`) and the version-2 store at `dst` their
/// substructure index is written into (`total`: of slices, `Parts::open`).
fn parts_and_store(
    parts: &[PathBuf],
    dropped: &[u64],
    words_per_row: usize,
    dst: &std::path::Path,
    total: Option<u64>,
) -> Result<
    (
        molsift_substructure::fromparts::Parts,
        molsift_store::v2::StoreV2,
    ),
    molsift_substructure::SubstructureError,
> {
    let p = molsift_substructure::fromparts::Parts::open(parts, dropped, words_per_row, total)?;
    let to = molsift_store::v2::StoreV2::open(dst, false)
        .map_err(molsift_substructure::SubstructureError::from)?;
    Ok((p, to))
}

/// Each molecule's input rank in the version-2 store `to` (its position in the store it was
/// written from).
fn input_ranks(
    to: &molsift_store::v2::StoreV2,
) -> Result<Vec<u32>, molsift_substructure::SubstructureError> {
    (0..to.len())
        .map(|i| to.input_rank(i).map(|r| r as u32))
        .collect::<Result<Vec<u32>, _>>()
        .map_err(molsift_substructure::SubstructureError::from)
}

/// A query compiled for the graph matcher (from the JSON program that
/// `molsift.substructure.program` writes).
#[pyclass(name = "GraphQuery", module = "molsift._core", frozen)]
pub struct PyGraphQuery {
    inner: Compiled,
}

#[pymethods]
impl PyGraphQuery {
    #[new]
    fn new(program_json: &str) -> PyResult<Self> {
        let prog = Program::from_json(program_json).map_err(substructure_err)?;
        Ok(PyGraphQuery {
            inner: Compiled::new(prog),
        })
    }
}

/// `v` as little-endian 8-byte words (store positions, screening rows).
fn int64_bytes<'py>(py: Python<'py>, v: &[u64]) -> Bound<'py, PyBytes> {
    let mut bytes = Vec::with_capacity(v.len() * 8);
    for p in v {
        bytes.extend_from_slice(&p.to_le_bytes());
    }
    PyBytes::new(py, &bytes)
}

/// The pattern index of an open store: screens of queries' bits.
#[pyclass(name = "PatternIndex", module = "molsift._core", frozen)]
pub struct PyPatternIndex {
    inner: PatternIndex,
    _store: Arc<dyn StoreFiles + Send>,
}

impl PyPatternIndex {
    pub(crate) fn over(py: Python<'_>, store: Arc<dyn StoreFiles + Send>) -> PyResult<Self> {
        let inner = py
            .detach(|| PatternIndex::open_in(&*store))
            .map_err(substructure_err)?;
        Ok(PyPatternIndex {
            inner,
            _store: store,
        })
    }
}

#[pymethods]
impl PyPatternIndex {
    /// Opens the store at `path` (sizes checked) and its pattern index.
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let store = py.detach(|| open_any(&path)).map_err(store_err)?;
        Self::over(py, Arc::from(store))
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Number of screening bits.
    #[getter]
    fn bits(&self) -> u32 {
        self.inner.bits()
    }

    /// Molecules having each bit.
    fn bit_counts(&self) -> Vec<u64> {
        self.inner.bit_counts().to_vec()
    }

    /// What the bits mean (JSON text), as the writer recorded it.
    fn meaning_json(&self) -> String {
        self.inner.meaning().to_string()
    }

    /// Positions in `start..end` of the molecules having every bit of `bits`, as little-endian
    /// int64 bytes (`numpy.frombuffer(..., "<i8")`), and the plane words read.
    fn screen<'py>(
        &self,
        py: Python<'py>,
        bits: Vec<u32>,
        start: usize,
        end: usize,
    ) -> PyResult<(Bound<'py, PyBytes>, u64)> {
        let mut out = Vec::new();
        let stats: ScreenStats = py
            .detach(|| self.inner.screen(&bits, start..end, &mut out))
            .map_err(substructure_err)?;
        Ok((int64_bytes(py, &out), stats.words_read))
    }

    /// Whether the index holds the molecules' graphs (the exact-match form).
    fn has_graphs(&self) -> bool {
        self.inner.has_graphs()
    }

    /// Bytes of the graphs file (0 without one).
    fn graphs_bytes(&self) -> u64 {
        self.inner.graphs_bytes()
    }

    /// Matches `query` against the molecules at `positions` (ascending little-endian int64
    /// bytes) on `threads` threads, GIL released: (hits, undecided) as int64 bytes, the
    /// undecided being molecules without a graph (for RDKit); `None` without graphs. With
    /// `cancel` (a `CancelFlag`), raises `Cancelled` once it is set, even inside one molecule.
    #[pyo3(signature = (query, positions, threads, cancel=None))]
    fn match_graphs<'py>(
        &self,
        py: Python<'py>,
        query: &PyGraphQuery,
        positions: &[u8],
        threads: usize,
        cancel: Option<PyRef<'py, crate::cancel::PyCancelFlag>>,
    ) -> PyResult<Option<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>> {
        let pos = words(positions, "positions", u64::from_le_bytes)?;
        let stop = crate::cancel::shared(cancel);
        let found = py
            .detach(|| {
                self.inner
                    .match_graphs_until(&query.inner, &pos, threads, stop.as_deref())
            })
            .map_err(substructure_err)?;
        Ok(found.map(|g| (int64_bytes(py, &g.hits), int64_bytes(py, &g.undecided))))
    }
}

/// One molecule's screen facts as Python sees them: ([(invariant, degree)], [(valence
/// contribution, invariant, invariant)], H atoms on N and O).
type PyFacts = (Vec<(u8, u8)>, Vec<(f64, u8, u8)>, u32);

/// What the substructure index stores of molecules given as RDKit's binary form
/// (`Mol.ToBinary()`; None for a molecule RDKit did not parse: an empty record): per molecule
/// its graph record (None where the form holds something the reader does not know: the caller
/// asks RDKit's Python calls then), the screen's facts (`Facts`: None where the reader does
/// not give them; a bond's type given as its valence contribution, as RDKit's adjacency matrix
/// with bond orders holds it) and, with `patterns` (RDKit's pattern fingerprint's patterns, in
/// its order, each as (atoms: 0 any / 1 in a ring, bonds: (begin, end, 0 any / 1 in a ring /
/// 2 single or aromatic))), the pattern fingerprint of `bits` bits, packed (None where not
/// read). GIL released.
#[pyfunction]
#[pyo3(signature = (pickles, patterns=None, bits=2048))]
#[allow(clippy::type_complexity)]
fn screen_from_pickles<'py>(
    py: Python<'py>,
    pickles: Vec<Option<Vec<u8>>>,
    patterns: Option<Vec<(Vec<u8>, Vec<(usize, usize, u8)>)>>,
    bits: u32,
) -> PyResult<PyScreens<'py>> {
    let patterns = patterns.map(|ps| {
        ps.into_iter()
            .map(pattern_of)
            .collect::<Result<Vec<_>, _>>()
    });
    let patterns = patterns
        .transpose()
        .map_err(pyo3::exceptions::PyValueError::new_err)?;
    if bits == 0 {
        return Err(pyo3::exceptions::PyValueError::new_err("bits must be > 0"));
    }
    let read = py.detach(|| {
        let with = patterns.as_deref().map(|p| (p, bits));
        pickles
            .iter()
            .map(
                |p| match p.as_deref().map(|p| screen_from_pickle(p, with)) {
                    None => (Some(Vec::new()), None, None),
                    Some(s) => (record_of(s.record), s.facts.map(py_facts), s.pattern),
                },
            )
            .collect::<Vec<_>>()
    });
    Ok(read
        .into_iter()
        .map(|(r, f, p)| {
            (
                r.map(|rec| PyBytes::new(py, &rec)),
                f,
                p.map(|fp| PyBytes::new(py, &fp)),
            )
        })
        .collect())
}

/// What `screen_from_pickles` gives per molecule: (record, facts, pattern fingerprint).
type PyScreens<'py> = Vec<(
    Option<Bound<'py, PyBytes>>,
    Option<PyFacts>,
    Option<Bound<'py, PyBytes>>,
)>;

fn pattern_of((atoms, bonds): (Vec<u8>, Vec<(usize, usize, u8)>)) -> Result<Pattern, String> {
    let atom = |a: u8| match a {
        0 => Ok(AtomReq::Any),
        1 => Ok(AtomReq::InRing),
        a => Err(format!("pattern atom kind {a}")),
    };
    let bond = |b: u8| match b {
        0 => Ok(BondReq::Any),
        1 => Ok(BondReq::InRing),
        2 => Ok(BondReq::SingleOrAromatic),
        b => Err(format!("pattern bond kind {b}")),
    };
    let atoms = atoms.into_iter().map(atom).collect::<Result<Vec<_>, _>>()?;
    let bonds = bonds
        .into_iter()
        .map(|(a, b, k)| bond(k).map(|k| (a, b, k)))
        .collect::<Result<Vec<_>, _>>()?;
    Pattern::new(atoms, bonds)
}

fn record_of(read: Read) -> Option<Vec<u8>> {
    match read {
        Read::Record(rec) => Some(rec),
        Read::Unknown => None,
    }
}

fn py_facts(f: Facts) -> PyFacts {
    let valence = |t: u8| match t {
        12 => 1.5,
        t => f64::from(t),
    };
    let bonds = f
        .bonds
        .into_iter()
        .map(|(t, a, b)| (valence(t), a, b))
        .collect();
    (f.atoms, bonds, f.nhoh)
}

/// The screening rows of molecules given as RDKit's binary form, made in Rust
/// (`molsift_substructure::features::screen_row`): built once per process from the feature
/// vocabulary's tables, RDKit's patterns (as `screen_from_pickles` takes them) and the row's
/// layout.
#[pyclass(name = "ScreenRows", module = "molsift._core", frozen)]
struct PyScreenRows {
    table: FeatureTable,
    patterns: Vec<Pattern>,
    layout: RowLayout,
    words: usize,
}

#[pymethods]
impl PyScreenRows {
    /// `tables`: (atom_inv, atom_deg, bond_type, end1, end2) as sets of counters (ints), `nhoh`
    /// the counter of H atoms on N and O, `bits` each feature bit's (counter, threshold); the
    /// row: `words` u64 words, the pattern fingerprint's `pattern_bits` from bit 0, the feature
    /// bits from `features`, the "parses" bit at `ok`.
    #[new]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn new(
        tables: (Vec<u128>, Vec<u128>, [u128; 4], Vec<u128>, Vec<u128>),
        nhoh: usize,
        bits: Vec<(u8, u32)>,
        patterns: Vec<(Vec<u8>, Vec<(usize, usize, u8)>)>,
        pattern_bits: u32,
        features: usize,
        ok: usize,
        words: usize,
    ) -> PyResult<Self> {
        let bad = pyo3::exceptions::PyValueError::new_err;
        let (atom_inv, atom_deg, bond_type, end1, end2) = tables;
        let table = FeatureTable {
            atom_inv,
            atom_deg,
            bond_type,
            end1,
            end2,
            nhoh,
            bits,
        };
        let table = table.checked().map_err(bad)?;
        let patterns = patterns
            .into_iter()
            .map(pattern_of)
            .collect::<Result<Vec<_>, _>>()
            .map_err(bad)?;
        let end = features + table.bits.len();
        if pattern_bits == 0 || pattern_bits as usize > features || end > ok || ok >= words * 64 {
            return Err(bad(
                "the row's parts overlap or do not fit its words".to_string()
            ));
        }
        Ok(Self {
            table,
            patterns,
            layout: RowLayout {
                pattern_bits,
                features,
                ok,
            },
            words,
        })
    }

    /// The rows of molecules given as binary forms (None: a molecule RDKit did not parse, an
    /// empty row and an empty record): (rows, `words` little-endian u64 words each; each
    /// molecule's graph record, None where it is not read; the molecules not read, whose rows
    /// are left zero for the caller to compute). `orders`, one per molecule (None: as it is),
    /// puts each molecule's atoms in RDKit's `_smilesAtomOutputOrder` (its text, `[2,0,1,]`)
    /// before its record is made; an order that is not one leaves the molecule not read. GIL
    /// released.
    #[pyo3(signature = (pickles, orders=None))]
    #[allow(clippy::type_complexity)]
    fn rows<'py>(
        &self,
        py: Python<'py>,
        pickles: Vec<Option<Vec<u8>>>,
        orders: Option<Vec<Option<String>>>,
    ) -> PyResult<(
        Bound<'py, PyBytes>,
        Vec<Option<Bound<'py, PyBytes>>>,
        Vec<usize>,
    )> {
        if orders.as_ref().is_some_and(|o| o.len() != pickles.len()) {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "one order per molecule, or none",
            ));
        }
        let words = self.words;
        let (rows, records) = py.detach(|| {
            let mut rows = vec![0u64; pickles.len() * words];
            let records: Vec<Option<Vec<u8>>> = pickles
                .iter()
                .enumerate()
                .zip(rows.chunks_exact_mut(words.max(1)))
                .map(|((i, p), row)| {
                    let Some(p) = p.as_deref() else {
                        return Some(Vec::new()); // not parsed: an empty row and record
                    };
                    let order = match orders.as_ref().and_then(|o| o[i].as_deref()) {
                        None => None,
                        Some(text) => Some(parse_atom_order(text)?),
                    };
                    let (t, l) = (&self.table, self.layout);
                    screen_row(p, order.as_deref(), &self.patterns, t, l, row)
                })
                .collect();
            (rows, records)
        });
        let missing = (0..records.len())
            .filter(|&i| records[i].is_none())
            .collect();
        let records = records
            .into_iter()
            .map(|r| r.map(|rec| PyBytes::new(py, &rec)))
            .collect();
        Ok((int64_bytes(py, &rows), records, missing))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    use molsift_substructure::layout as l;
    m.add_class::<PyPatternIndex>()?;
    m.add_class::<PyScreenRows>()?;
    m.add_class::<PyGraphQuery>()?;
    m.add_function(wrap_pyfunction!(create_pattern_planes, m)?)?;
    m.add_function(wrap_pyfunction!(write_pattern_part, m)?)?;
    m.add_function(wrap_pyfunction!(finish_pattern_index, m)?)?;
    m.add_function(wrap_pyfunction!(carry_pattern_index, m)?)?;
    m.add_function(wrap_pyfunction!(pattern_planes_from_parts, m)?)?;
    m.add_function(wrap_pyfunction!(pattern_index_from_parts, m)?)?;
    m.add_function(wrap_pyfunction!(pattern_shard_index_from_parts, m)?)?;
    m.add_function(wrap_pyfunction!(screen_from_pickles, m)?)?;
    m.add(
        "PATTERN_FILES",
        (
            l::HEADER_FILE,
            l::PLANES_FILE,
            molsift_substructure::graph::GRAPHS_FILE,
        ),
    )?;
    m.add(
        "PATTERN_COMPACT_FILES",
        molsift_store::layout::PATTERN_COMPACT_FILES,
    )?;
    m.add("PATTERN_BLOCK", l::BLOCK)?;
    m.add(
        "PATTERN_WINDOW_BYTES",
        molsift_substructure::compact::WINDOW_BYTES,
    )?;
    Ok(())
}
