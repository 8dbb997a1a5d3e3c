//! Arrays to and from Python as bytes of little-endian 8-byte numbers (positions, scores,
//! fingerprint words), read and written without a numpy dependency.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// Little-endian 8-byte numbers of a bytes object, or an error naming `what`.
pub(crate) fn words<T>(data: &[u8], what: &str, from: fn([u8; 8]) -> T) -> PyResult<Vec<T>> {
    if data.len() % 8 != 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{what}: {} bytes is not a whole number of 8-byte values",
            data.len()
        )));
    }
    Ok(data
        .chunks_exact(8)
        .map(|c| from(c.try_into().expect("8 bytes")))
        .collect())
}

/// `values` as a bytes object of little-endian 8-byte numbers.
pub(crate) fn le_bytes<'py, T: Copy>(
    py: Python<'py>,
    values: &[T],
    to: fn(T) -> [u8; 8],
) -> Bound<'py, PyBytes> {
    PyBytes::new_with(py, values.len() * 8, |out| {
        for (c, &v) in out.chunks_exact_mut(8).zip(values) {
            c.copy_from_slice(&to(v));
        }
        Ok(())
    })
    .expect("writing bytes")
}
