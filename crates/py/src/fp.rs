//! Python wrappers of `molsift-fp`: `FingerprintSet` (`molsift_fp::FingerprintSet`: the
//! `similarity` scorer's reference actives, the `filter` scorer's substructure prescreens) and
//! `packed_from_rdkit`, RDKit's `ExplicitBitVect.ToBinary()` read as a packed row, and
//! `on_bits_from_rdkit`, the same read as the indices of its set bits (a query's form). Rows are
//! bytes: bit i in byte i/8 at bit i%8. Both keep the GIL: they take well under a microsecond,
//! less than releasing and taking back the GIL would cost.

use molsift_fp::{rdkit_on_bits, unpack_rdkit_bitvect, FingerprintSet};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::error::{fingerprint_err, rdkit_bits_err};

/// Packed fingerprints of equal length (a multiple of 64 bits).
#[pyclass(name = "FingerprintSet", module = "molsift._core", frozen)]
pub struct PyFingerprintSet {
    inner: FingerprintSet,
}

#[pymethods]
impl PyFingerprintSet {
    #[new]
    fn new(rows: Vec<Vec<u8>>) -> PyResult<Self> {
        let inner = FingerprintSet::from_byte_rows(&rows).map_err(fingerprint_err)?;
        Ok(PyFingerprintSet { inner })
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// (row, score) of the row most similar to `query` (the first row on ties), or (-1, 0.0)
    /// for an empty set. Scores are exact: |a & b| / |a | b|, 0 when both are empty.
    fn best(&self, query: &[u8]) -> PyResult<(i64, f64)> {
        let best = self.inner.best(query).map_err(fingerprint_err)?;
        Ok(best.map_or((-1, 0.0), |(row, score)| (row as i64, score)))
    }

    /// Indices (ascending) of the rows whose bits are all set in `query`: the queries a
    /// pattern-fingerprint screen lets through (an all-zero row always passes).
    fn subsets_of(&self, query: &[u8]) -> PyResult<Vec<usize>> {
        self.inner.subsets_of(query).map_err(fingerprint_err)
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
        Some(e) => Err(rdkit_bits_err(e)),
        None => Ok(row),
    }
}

/// The indices of the set bits, ascending, of RDKit's binary bit vector `binary` of `bits` bits:
/// what `list(fp.GetOnBits())` gives, without RDKit's Python iterator over its vector (about
/// 15 µs of a query's 40 µs fingerprint); ValueError when it is not one.
#[pyfunction]
fn on_bits_from_rdkit(binary: &[u8], bits: u32) -> PyResult<Vec<u32>> {
    rdkit_on_bits(binary, bits).map_err(rdkit_bits_err)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyFingerprintSet>()?;
    m.add_function(wrap_pyfunction!(packed_from_rdkit, m)?)?;
    m.add_function(wrap_pyfunction!(on_bits_from_rdkit, m)?)?;
    Ok(())
}
