//! Python wrappers of `molsift-fp`: `FingerprintSet`, a small set of packed fingerprints
//! compared with one query at a time by the Tanimoto kernel (the `similarity` scorer's reference
//! actives) or the subset test (the `filter` scorer's substructure prescreens); and
//! `packed_from_rdkit`, RDKit's `ExplicitBitVect.ToBinary()` read as a packed row.
//! Rows are bytes: bit i in byte i/8 at bit i%8, which read as little-endian u64 words is
//! molsift's row layout. `packed_from_rdkit` keeps the GIL: it takes well under a microsecond,
//! less than releasing and taking back the GIL would cost.

use molsift_fp::{is_subset, tanimoto, unpack_rdkit_bitvect};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

fn words(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("chunks of 8")))
        .collect()
}

/// Packed fingerprints of equal length (a multiple of 64 bits).
#[pyclass(name = "FingerprintSet", module = "molsift._core", frozen)]
pub struct PyFingerprintSet {
    rows: Vec<u64>,
    words: usize,
}

#[pymethods]
impl PyFingerprintSet {
    #[new]
    fn new(rows: Vec<Vec<u8>>) -> PyResult<Self> {
        let nbytes = rows.first().map_or(8, Vec::len);
        if nbytes == 0 || nbytes % 8 != 0 {
            return Err(PyValueError::new_err(format!(
                "fingerprints must be a multiple of 64 bits long, got {nbytes} bytes"
            )));
        }
        let mut flat = Vec::with_capacity(rows.len() * nbytes / 8);
        for (i, r) in rows.iter().enumerate() {
            if r.len() != nbytes {
                return Err(PyValueError::new_err(format!(
                    "fingerprint {i} has {} bytes, the first has {nbytes}",
                    r.len()
                )));
            }
            flat.extend(words(r));
        }
        Ok(PyFingerprintSet {
            rows: flat,
            words: nbytes / 8,
        })
    }

    fn __len__(&self) -> usize {
        self.rows.len() / self.words
    }

    /// (row, score) of the row most similar to `query` (the first row on ties), or (-1, 0.0)
    /// for an empty set. Scores are exact: |a & b| / |a | b|, 0 when both are empty.
    fn best(&self, query: &[u8]) -> PyResult<(i64, f64)> {
        let q = self.query(query)?;
        let mut best = (-1i64, 0.0f64);
        for (i, row) in self.rows.chunks_exact(self.words).enumerate() {
            let s = tanimoto(&q, row);
            if best.0 < 0 || s > best.1 {
                best = (i as i64, s);
            }
        }
        Ok(best)
    }

    /// Indices (ascending) of the rows whose bits are all set in `query`: the queries a
    /// pattern-fingerprint screen lets through (an all-zero row always passes).
    fn subsets_of(&self, query: &[u8]) -> PyResult<Vec<usize>> {
        let q = self.query(query)?;
        let rows = self.rows.chunks_exact(self.words);
        Ok(rows
            .enumerate()
            .filter(|(_, row)| is_subset(row, &q))
            .map(|(i, _)| i)
            .collect())
    }

    /// Tanimoto of `query` with every row, in row order.
    fn scores(&self, query: &[u8]) -> PyResult<Vec<f64>> {
        let q = self.query(query)?;
        Ok(self
            .rows
            .chunks_exact(self.words)
            .map(|row| tanimoto(&q, row))
            .collect())
    }
}

impl PyFingerprintSet {
    fn query(&self, query: &[u8]) -> PyResult<Vec<u64>> {
        if query.len() != self.words * 8 {
            return Err(PyValueError::new_err(format!(
                "query has {} bytes, the set's fingerprints {}",
                query.len(),
                self.words * 8
            )));
        }
        Ok(words(query))
    }
}

/// The packed row (bit i in byte i/8 at bit i%8) of RDKit's binary bit vector `binary`
/// (`ExplicitBitVect.ToBinary()`) of `bits` bits; ValueError when it is not one.
#[pyfunction]
fn packed_from_rdkit<'py>(
    py: Python<'py>,
    binary: &[u8],
    bits: u32,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut err = None;
    let row = PyBytes::new_with(py, (bits as usize).div_ceil(8), |row| {
        if let Err(e) = unpack_rdkit_bitvect(binary, bits, row) {
            err = Some(e);
        }
        Ok(())
    })?;
    match err {
        Some(e) => Err(PyValueError::new_err(e.to_string())),
        None => Ok(row),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyFingerprintSet>()?;
    m.add_function(wrap_pyfunction!(packed_from_rdkit, m)?)?;
    Ok(())
}
