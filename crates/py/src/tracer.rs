//! Python wrapper of `molsift-tracer`: the LD_PRELOAD library of `molsift profile` as bytes
//! (`tracer_library`) and its file name (`TRACER_LIBRARY_NAME`), for the profiler to write
//! next to its per-process logs.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The tracer library (an ELF shared object built with this extension).
#[pyfunction]
fn tracer_library(py: Python<'_>) -> Bound<'_, PyBytes> {
    PyBytes::new(py, molsift_tracer::LIBRARY)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tracer_library, m)?)?;
    m.add("TRACER_LIBRARY_NAME", molsift_tracer::LIBRARY_NAME)?;
    Ok(())
}
