//! Python wrappers of store version 2 (`molsift_store::v2`): `StoreV2` (read, look up) and
//! `upgrade_store` (write one from a version-1 store).

use std::path::PathBuf;
use std::sync::Arc;

use molsift_store::lookup::LookupOptions;
use molsift_store::textblocks::Block;
use molsift_store::v2::{
    plan_set, store_order, upgrade, write_shard, ShardOf, StoreV2, UpgradeOptions,
};
use molsift_store::{Molecules, Store, Verify};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::error::store_err;
use crate::store::{positions_of, text_column, u32_bytes, u32s_of};

/// An open version-2 store.
#[pyclass(name = "StoreV2", module = "molsift._core", frozen)]
pub struct PyStoreV2 {
    inner: Arc<StoreV2>,
}

#[pymethods]
impl PyStoreV2 {
    #[new]
    #[pyo3(signature = (path, verify=false))]
    fn new(py: Python<'_>, path: PathBuf, verify: bool) -> PyResult<Self> {
        let inner = py
            .detach(|| StoreV2::open(&path, verify))
            .map_err(store_err)?;
        Ok(PyStoreV2 {
            inner: Arc::new(inner),
        })
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// The manifest, as written (JSON text).
    fn manifest_json(&self) -> String {
        self.inner.manifest().to_text()
    }

    /// Canonical SMILES of store position `i` (decodes its block).
    fn smiles(&self, i: usize) -> PyResult<String> {
        self.inner.smiles(i).map_err(store_err)
    }

    /// The SMILES of block `b` of the SMILES column (positions `b * block_len ..`).
    fn smiles_block(&self, py: Python<'_>, b: usize) -> PyResult<Vec<String>> {
        let mut buf = Block::default();
        let n = py
            .detach(|| self.inner.smiles_column()?.decode_block(b, &mut buf))
            .map_err(store_err)?;
        Ok((0..n).map(|k| buf.get(k).to_string()).collect())
    }

    /// Strings per block of the SMILES column.
    fn block_len(&self) -> PyResult<usize> {
        Ok(self.inner.smiles_column().map_err(store_err)?.block_len())
    }

    /// Id of store position `i`.
    fn id(&self, i: usize) -> PyResult<String> {
        self.inner.id(i).map_err(store_err)
    }

    /// Ids (`column="ids"`) or SMILES (`"smiles"`) of the molecules at `positions`
    /// (little-endian int64 bytes); one call for a page of hits (each SMILES decodes its block).
    fn texts_at(&self, py: Python<'_>, column: &str, positions: &[u8]) -> PyResult<Vec<String>> {
        let smiles = text_column(column)?;
        let s = &self.inner;
        py.detach(|| {
            let positions = positions_of(positions, s.len())?;
            if smiles {
                s.smiles_many(positions)
            } else {
                s.ids_many(positions)
            }
        })
        .map_err(store_err)
    }

    /// Input rank of store position `i`.
    fn input_rank(&self, i: usize) -> PyResult<usize> {
        self.inner.input_rank(i).map_err(store_err)
    }

    /// 1-based source line of store position `i`.
    fn source_line(&self, i: usize) -> PyResult<u64> {
        self.inner.source_line(i).map_err(store_err)
    }

    /// Store positions of each (already canonical) SMILES, ascending; empty when absent.
    fn lookup(&self, py: Python<'_>, smiles: Vec<String>) -> PyResult<Vec<Vec<u64>>> {
        let s = &self.inner;
        py.detach(|| {
            let mut buf = Block::default();
            smiles
                .iter()
                .map(|q| s.lookup(q, &mut buf))
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(store_err)
    }

    /// Store positions of each id, ascending; empty when absent.
    fn lookup_ids(&self, py: Python<'_>, ids: Vec<String>) -> PyResult<Vec<Vec<u64>>> {
        let s = &self.inner;
        py.detach(|| {
            let mut buf = Block::default();
            ids.iter()
                .map(|q| s.lookup_id(q, &mut buf))
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(store_err)
    }

    /// Every fingerprint in store order: `len * bits / 64` little-endian `u64` words.
    fn fingerprint_rows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let rows = py
            .detach(|| self.inner.fingerprint_rows())
            .map_err(store_err)?;
        let bytes: Vec<u8> = rows.iter().flat_map(|w| w.to_le_bytes()).collect();
        Ok(PyBytes::new(py, &bytes))
    }

    /// The fingerprints of the molecules at store positions `positions` (in that order),
    /// decoded for those alone: `len(positions) * bits / 64` little-endian `u64` words.
    fn fingerprint_rows_at<'py>(
        &self,
        py: Python<'py>,
        positions: Vec<u64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let rows = py
            .detach(|| self.inner.fingerprint_rows_at(&positions))
            .map_err(store_err)?;
        let bytes: Vec<u8> = rows.iter().flat_map(|w| w.to_le_bytes()).collect();
        Ok(PyBytes::new(py, &bytes))
    }

    /// The Tanimoto of a query (its on-bits) to the molecules at `positions`, in the order
    /// given (little-endian `f64` each), from the query's planes alone.
    fn tanimoto_at<'py>(
        &self,
        py: Python<'py>,
        positions: Vec<u64>,
        on_bits: Vec<u32>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let scores = py
            .detach(|| self.inner.tanimoto_at(&positions, &on_bits))
            .map_err(store_err)?;
        let bytes: Vec<u8> = scores.iter().flat_map(|t| t.to_le_bytes()).collect();
        Ok(PyBytes::new(py, &bytes))
    }

    /// Store position of each input rank (`len` little-endian `u32`).
    fn positions_by_input<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let pos = py
            .detach(|| self.inner.positions_by_input().map(<[u32]>::to_vec))
            .map_err(store_err)?;
        let bytes: Vec<u8> = pos.iter().flat_map(|w| w.to_le_bytes()).collect();
        Ok(PyBytes::new(py, &bytes))
    }

    /// The searcher over this store's compressed planes, opened through the files the store
    /// opened (the same generation as its ids and SMILES), the planes' header checked first.
    fn searcher(&self, py: Python<'_>) -> PyResult<crate::search::PySearcher> {
        crate::search::PySearcher::from_store_v2(py, &self.inner)
    }

    /// The substructure index (pattern planes and graphs) of this very store, or an error
    /// saying how to build one.
    fn pattern_index(&self, py: Python<'_>) -> PyResult<crate::substructure::PyPatternIndex> {
        crate::substructure::PyPatternIndex::over(py, Arc::clone(&self.inner) as _)
    }

    /// The analog index of this very store, or an error saying how to build one.
    fn analog_index(&self, py: Python<'_>) -> PyResult<crate::analogs::PyAnalogIndex> {
        crate::analogs::PyAnalogIndex::over(py, Arc::clone(&self.inner) as _)
    }

    /// Bytes of each file of the store.
    fn file_sizes(&self) -> std::collections::BTreeMap<String, u64> {
        self.inner.file_sizes()
    }

    /// Checks one file's checksum (once per process).
    fn verify_file(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        py.detach(|| self.inner.verify_file(name))
            .map_err(store_err)
    }

    /// Checks every file's checksum.
    fn verify_all(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.inner.verify_all()).map_err(store_err)
    }
}

/// Writes the version-2 form of the version-1 store at `src` to `dst`; returns its manifest
/// (JSON text).
#[pyfunction]
#[pyo3(signature = (src, dst, overwrite=false, threads=1, level=15, check_bits=6, hash_bits=64))]
#[allow(clippy::too_many_arguments)]
fn upgrade_store(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    overwrite: bool,
    threads: usize,
    level: i32,
    check_bits: u32,
    hash_bits: u32,
) -> PyResult<String> {
    let opts = UpgradeOptions {
        overwrite,
        threads,
        level,
        lookup: LookupOptions {
            check_bits,
            hash_bits,
        },
        ..UpgradeOptions::default()
    };
    py.detach(|| {
        let v1 = Store::open(&src, Verify::Sizes)?;
        upgrade(&v1, &dst, &opts).map(|m| m.to_text())
    })
    .map_err(store_err)
}

/// A store set's plan from the version-1 store at `src`: the store order (u32 little-endian:
/// set position -> position in `src`) cut into `shards` ranges at `shard_bounds` (returned as
/// `shards + 1` set positions), and the set's `duplicates.tsv` in set positions written into
/// the directory `dir` (which exists) when `src` has one. Each shard is then written by
/// [`write_set_shard`], on whichever worker or rank takes it.
#[pyfunction]
fn set_plan<'py>(
    py: Python<'py>,
    src: PathBuf,
    dir: PathBuf,
    shards: usize,
) -> PyResult<(Vec<usize>, Bound<'py, PyBytes>)> {
    let (bounds, order) = py
        .detach(|| {
            let v1 = Store::open(&src, Verify::Sizes)?;
            let order = store_order(&v1)?;
            plan_set(&v1, &order, shards, &dir).map(|bounds| (bounds, order))
        })
        .map_err(store_err)?;
    Ok((bounds, u32_bytes(py, &order)))
}

/// Writes shard `index` of `shards` of a store set at `out` (a new directory): the one store
/// of the molecules of the version-1 store `src` at `source` (u32 little-endian positions in
/// `src`, the shard's range of the plan's order), whose first molecule is set position
/// `offset` (`molsift_store::v2::write_shard`), text compressed on `threads` threads.
#[pyfunction]
#[pyo3(signature = (src, out, index, shards, offset, source, threads=1))]
#[allow(clippy::too_many_arguments)]
fn write_set_shard(
    py: Python<'_>,
    src: PathBuf,
    out: PathBuf,
    index: usize,
    shards: usize,
    offset: u64,
    source: &[u8],
    threads: usize,
) -> PyResult<()> {
    let order = u32s_of(source)?;
    let shard = ShardOf {
        index,
        shards,
        offset,
    };
    py.detach(|| {
        let v1 = Store::open(&src, Verify::Sizes)?;
        shard_of(&v1, &order, shard, &out, threads, None)
    })
    .map_err(store_err)
}

/// Writes `shard` of a set at `out`: the one store of `src`'s molecules at input ranks `order`,
/// text compressed on `threads` threads.
pub(crate) fn shard_of<M: Molecules + ?Sized>(
    src: &M,
    order: &[u32],
    shard: ShardOf,
    out: &std::path::Path,
    threads: usize,
    plane_budget: Option<usize>,
) -> Result<(), molsift_store::StoreError> {
    let default = UpgradeOptions::default();
    let opts = UpgradeOptions {
        threads,
        plane_budget: plane_budget.unwrap_or(default.plane_budget),
        ..default
    };
    write_shard(src, order, 0..order.len(), shard, out, &opts).map(|_| ())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyStoreV2>()?;
    m.add_function(wrap_pyfunction!(upgrade_store, m)?)?;
    m.add_function(wrap_pyfunction!(set_plan, m)?)?;
    m.add_function(wrap_pyfunction!(write_set_shard, m)?)?;
    Ok(())
}
