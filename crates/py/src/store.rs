//! Python wrappers of `molsift-store`: `StoreWriter`, `open_store_manifest`.

use std::path::PathBuf;
use std::sync::Arc;

use molsift_store::{FingerprintSpec, Store, StoreError, StoreWriter, Verify};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::error::{json_err, os_err, store_err};

pub(crate) fn parse_json(text: &str) -> PyResult<serde_json::Value> {
    serde_json::from_str(text).map_err(json_err)
}

/// Builds one store (see `molsift_store::StoreWriter`).
#[pyclass(name = "StoreWriter", module = "molsift._core")]
pub struct PyStoreWriter {
    inner: Option<StoreWriter>,
}

impl PyStoreWriter {
    fn writer(&mut self) -> PyResult<&mut StoreWriter> {
        self.inner
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("store writer already finished"))
    }
}

#[pymethods]
impl PyStoreWriter {
    #[new]
    #[pyo3(signature = (path, kind, bits, params_json, overwrite=false))]
    fn new(
        path: PathBuf,
        kind: &str,
        bits: u32,
        params_json: &str,
        overwrite: bool,
    ) -> PyResult<Self> {
        let spec = FingerprintSpec::new(kind, bits, parse_json(params_json)?).map_err(store_err)?;
        let inner = StoreWriter::create(&path, spec, overwrite).map_err(store_err)?;
        Ok(PyStoreWriter { inner: Some(inner) })
    }

    /// Appends molecules whose fingerprints come packed: `fps` holds one row of `bits / 8` bytes
    /// per molecule, bit i in byte i/8 at bit i%8 (`numpy.packbits(..., bitorder="little")`).
    fn add_molecules_packed(
        &mut self,
        py: Python<'_>,
        ids: Vec<String>,
        smiles: Vec<String>,
        lines: Vec<u64>,
        fps: &[u8],
    ) -> PyResult<()> {
        let w = self.writer()?;
        py.detach(|| w.add_packed_rows(&ids, &smiles, &lines, fps))
            .map_err(store_err)
    }

    /// Records one rejected record.
    fn add_reject(
        &mut self,
        source: &str,
        line: u64,
        offset: u64,
        id: &str,
        reason: &str,
    ) -> PyResult<()> {
        self.writer()?
            .add_reject(source, line, offset, id, reason)
            .map_err(store_err)
    }

    /// Provenance (a JSON text) to keep in the manifest.
    fn set_provenance(&mut self, provenance_json: &str) -> PyResult<()> {
        let value = parse_json(provenance_json)?;
        self.writer()?.set_provenance(value);
        Ok(())
    }

    /// Sets the number of duplicate molecules the manifest reports (`counts["duplicates"]`).
    fn set_duplicates(&mut self, n: u64) -> PyResult<()> {
        self.writer()?.set_duplicates(n);
        Ok(())
    }

    /// (records_in, molecules, rejected) so far.
    fn counts(&mut self) -> PyResult<(u64, u64, u64)> {
        let c = self.writer()?.counts();
        Ok((c.records_in, c.molecules, c.rejected))
    }

    /// Syncs, writes the manifest, renames into place; returns the manifest as JSON text.
    fn finish(&mut self, py: Python<'_>) -> PyResult<String> {
        let w = self
            .inner
            .take()
            .ok_or_else(|| PyValueError::new_err("store writer already finished"))?;
        let manifest = py.detach(|| w.finish()).map_err(store_err)?;
        Ok(serde_json::to_string(&manifest).expect("manifest serializes"))
    }

    /// Drops the unfinished store (its temporary directory is removed).
    fn abort(&mut self) {
        self.inner = None;
    }
}

/// Whether `column` names the SMILES column (true) or the ids (false); ValueError otherwise.
pub(crate) fn text_column(column: &str) -> PyResult<bool> {
    match column {
        "smiles" => Ok(true),
        "ids" => Ok(false),
        _ => Err(PyValueError::new_err(format!("no text column {column:?}"))),
    }
}

/// u32 values as little-endian bytes (what `u32s_of` reads back).
pub(crate) fn u32_bytes<'py>(py: Python<'py>, values: &[u32]) -> Bound<'py, PyBytes> {
    let bytes: Vec<u8> = values.iter().flat_map(|o| o.to_le_bytes()).collect();
    PyBytes::new(py, &bytes)
}

/// Positions given as little-endian u32 bytes (a store order, or a part of one); a length
/// that is not a multiple of 4 is a ValueError.
pub(crate) fn u32s_of(bytes: &[u8]) -> PyResult<Vec<u32>> {
    if bytes.len() % 4 != 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "positions: u32 values (a multiple of 4 bytes)",
        ));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect())
}

/// Store positions from little-endian int64 bytes, each checked against the store's size.
pub(crate) fn positions_of(
    bytes: &[u8],
    len: usize,
) -> Result<impl Iterator<Item = Result<usize, StoreError>> + '_, StoreError> {
    if bytes.len() % 8 != 0 {
        return Err(StoreError::Invalid(
            "positions are not whole int64 values".to_string(),
        ));
    }
    Ok(bytes.chunks_exact(8).map(move |c| {
        let i = i64::from_le_bytes(c.try_into().expect("8 bytes"));
        match usize::try_from(i) {
            Ok(i) if i < len => Ok(i),
            Ok(_) => Err(StoreError::Invalid(format!(
                "position {i} is out of range for a store of {len} molecules"
            ))),
            Err(_) => Err(StoreError::Invalid(format!("negative position {i}"))),
        }
    }))
}

/// One row of `rejects.tsv` (`molsift_store::rejects::row`): the one format of rejected records,
/// for a store's and for screen's.
#[pyfunction]
fn reject_row(source: &str, line: u64, offset: u64, id: &str, reason: &str) -> String {
    molsift_store::rejects::row(source, line, offset, id, reason)
}

/// An open store (`molsift_store::Store`): opened once, through one directory handle, so that
/// everything read from it (its files mapped from Python, its searcher) is one generation.
#[pyclass(name = "Store", module = "molsift._core", frozen)]
pub struct PyStore {
    pub(crate) inner: Arc<Store>,
}

#[pymethods]
impl PyStore {
    /// Opens and checks the store at `path` (sizes, offsets, counts, the manifest's own
    /// checksum; every file's checksum too if `full`), or raises StoreError naming the file.
    #[new]
    #[pyo3(signature = (path, full=true))]
    fn new(py: Python<'_>, path: PathBuf, full: bool) -> PyResult<Self> {
        let verify = if full { Verify::Full } else { Verify::Sizes };
        let store = py
            .detach(|| Store::open(&path, verify))
            .map_err(store_err)?;
        Ok(PyStore {
            inner: Arc::new(store),
        })
    }

    /// The manifest as JSON text.
    fn manifest_json(&self) -> String {
        serde_json::to_string(self.inner.manifest()).expect("manifest serializes")
    }

    /// A new descriptor (the caller closes it) of the data file `name`, as opened with the
    /// store, for mapping it from Python.
    fn dup_fd(&self, name: &str) -> PyResult<i32> {
        use std::os::fd::{AsFd, IntoRawFd};
        let file = self
            .inner
            .data_file(name)
            .ok_or_else(|| PyValueError::new_err(format!("no store file {name:?}")))?;
        let fd = file.as_fd().try_clone_to_owned();
        let fd = fd.map_err(|e| os_err(e, &self.inner.path().join(name)))?;
        Ok(fd.into_raw_fd())
    }

    /// Checks the checksum of `name` against the manifest (once per process for a data file).
    fn verify_file(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        py.detach(|| self.inner.verify_file(name))
            .map_err(store_err)
    }

    /// Id (`column="ids"`) or SMILES (`"smiles"`) of molecule `i`, checked (offsets in order
    /// and inside the file, one line, UTF-8).
    fn text(&self, column: &str, i: usize) -> PyResult<String> {
        let t = match column {
            "ids" => self.inner.id(i),
            "smiles" => self.inner.smiles(i),
            _ => return Err(PyValueError::new_err(format!("no text column {column:?}"))),
        };
        t.map(str::to_string).map_err(store_err)
    }

    /// Ids (`column="ids"`) or SMILES (`"smiles"`) of the molecules at `positions`
    /// (little-endian int64 bytes), each checked as `text`; one call for a page of hits.
    fn texts_at(&self, py: Python<'_>, column: &str, positions: &[u8]) -> PyResult<Vec<String>> {
        let smiles = text_column(column)?;
        let store = &self.inner;
        py.detach(|| {
            positions_of(positions, store.len())?
                .map(|i| {
                    let t = if smiles {
                        store.smiles(i?)
                    } else {
                        store.id(i?)
                    };
                    t.map(str::to_string)
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(store_err)
    }

    /// The pattern index (substructure screen) of this very store, or StoreError saying how to
    /// build one.
    fn pattern_index(&self, py: Python<'_>) -> PyResult<crate::substructure::PyPatternIndex> {
        crate::substructure::PyPatternIndex::over(py, Arc::clone(&self.inner) as _)
    }

    /// The analog index of this very store, or StoreError saying how to build one.
    fn analog_index(&self, py: Python<'_>) -> PyResult<crate::analogs::PyAnalogIndex> {
        crate::analogs::PyAnalogIndex::over(py, Arc::clone(&self.inner) as _)
    }

    /// A searcher over this very store (its column index opened through the same handle).
    fn searcher(&self, py: Python<'_>) -> PyResult<crate::search::PySearcher> {
        let store = Arc::clone(&self.inner);
        crate::search::PySearcher::over(py, store)
    }
}

/// Checks a store (sizes, offsets, counts; checksums too if `full`) and returns its manifest
/// as JSON text, or raises StoreError naming what is wrong.
#[pyfunction]
#[pyo3(signature = (path, full=true))]
fn open_store_manifest(py: Python<'_>, path: PathBuf, full: bool) -> PyResult<String> {
    let verify = if full { Verify::Full } else { Verify::Sizes };
    let store = py
        .detach(|| Store::open(&path, verify))
        .map_err(store_err)?;
    Ok(serde_json::to_string(store.manifest()).expect("manifest serializes"))
}

/// Removes what killed runs on this host left beside `path` (temporary stores, ingest work
/// directories): see `molsift_store::replace::sweep_leftovers_beside`. Returns the removed
/// paths.
#[pyfunction]
fn sweep_leftovers(path: PathBuf) -> Vec<PathBuf> {
    molsift_store::replace::sweep_leftovers_beside(&path)
}

/// `DIR/.NAME.KIND-PID-NANOS@HOST` beside `path`: molsift's one temporary name.
#[pyfunction]
fn temporary_sibling(path: PathBuf, kind: &str) -> PathBuf {
    molsift_store::replace::temporary_sibling(&path, kind)
}

/// Moves the finished store at `staged` to `path` once every part of it is written: the
/// staged directory synced, then renamed into place, a store already at `path` replaced only
/// with `overwrite` (the overwrite rule) in one atomic exchange.
#[pyfunction]
#[pyo3(signature = (staged, path, overwrite=false))]
fn swap_into_place(
    py: Python<'_>,
    staged: PathBuf,
    path: PathBuf,
    overwrite: bool,
) -> PyResult<()> {
    py.detach(|| {
        molsift_store::replace::sync_dir(&staged)?;
        molsift_store::replace::swap_into_place(&staged, &path, overwrite)
    })
    .map_err(store_err)
}

/// Raises StoreError unless `path` is absent or a molsift store that `--overwrite` may replace.
#[pyfunction]
fn check_replaceable(path: PathBuf) -> PyResult<()> {
    molsift_store::replace::check_replaceable(&path).map_err(store_err)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    use molsift_store::layout as l;
    m.add_class::<PyStoreWriter>()?;
    m.add_function(wrap_pyfunction!(reject_row, m)?)?;
    m.add("REJECTS_HEADER", molsift_store::rejects::HEADER)?;
    m.add_function(wrap_pyfunction!(open_store_manifest, m)?)?;
    m.add_class::<PyStore>()?;
    m.add_function(wrap_pyfunction!(sweep_leftovers, m)?)?;
    m.add_function(wrap_pyfunction!(temporary_sibling, m)?)?;
    m.add_function(wrap_pyfunction!(check_replaceable, m)?)?;
    m.add_function(wrap_pyfunction!(swap_into_place, m)?)?;
    let files = pyo3::types::PyDict::new(m.py());
    for (key, name) in [
        ("fingerprints", l::FINGERPRINTS),
        ("popcounts", l::POPCOUNTS),
        ("smiles", l::SMILES),
        ("smiles_offsets", l::SMILES_OFFSETS),
        ("ids", l::IDS),
        ("id_offsets", l::ID_OFFSETS),
        ("source_lines", l::SOURCE_LINES),
        ("rejects", l::REJECTS),
        ("manifest", l::MANIFEST),
    ] {
        files.set_item(key, name)?;
    }
    m.add("STORE_FILES", files)?;
    m.add("STORE_FORMAT_VERSION", molsift_store::FORMAT_VERSION)?;
    Ok(())
}
