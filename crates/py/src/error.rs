//! The one place core errors become Python exceptions: `MolsiftError` and its subclasses
//! `InputError` (reading input files), `StoreError` (creating or opening stores) and
//! `Cancelled` (a search stopped by its `CancelFlag`), and the built-in `ValueError` /
//! `OSError` where Python code expects those.

use std::path::Path;

use molsift_search::SearchError;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyOSError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    _core,
    MolsiftError,
    PyException,
    "Base class of every molsift error."
);
create_exception!(
    _core,
    InputError,
    MolsiftError,
    "An input file cannot be read as records."
);
create_exception!(
    _core,
    StoreError,
    MolsiftError,
    "A store cannot be written, merged or opened."
);
create_exception!(
    _core,
    Cancelled,
    MolsiftError,
    "A search stopped because its cancel flag was set."
);

/// The error of a search whose cancel flag was set.
pub fn cancelled() -> PyErr {
    Cancelled::new_err("the search was cancelled")
}

/// Converts an input-reading error.
pub fn input_err(e: molsift_io::IoError) -> PyErr {
    InputError::new_err(e.to_string())
}

/// Converts a format name or reader option that cannot be used to `ValueError`.
pub fn option_err(e: molsift_io::OptionError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Converts a store error.
pub fn store_err(e: molsift_store::StoreError) -> PyErr {
    StoreError::new_err(e.to_string())
}

/// Converts a search error: bad arguments are `ValueError`, a damaged index or store is
/// `StoreError`.
pub fn search_err(e: SearchError) -> PyErr {
    match e {
        SearchError::BadThreshold(_)
        | SearchError::Invalid(_)
        | SearchError::BitsMismatch { .. } => PyValueError::new_err(e.to_string()),
        other => StoreError::new_err(other.to_string()),
    }
}

/// Converts a substructure-index error: bad arguments are `ValueError`, a missing or damaged
/// index (or store) is `StoreError`.
pub fn substructure_err(e: molsift_substructure::SubstructureError) -> PyErr {
    use molsift_substructure::SubstructureError as E;
    match e {
        E::Invalid(_) => PyValueError::new_err(e.to_string()),
        E::Cancelled => cancelled(),
        other => StoreError::new_err(other.to_string()),
    }
}

/// Converts a fingerprint shape error (row or query lengths, bit indices) to `ValueError`.
pub fn fingerprint_err(e: molsift_fp::FingerprintError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Converts an error reading RDKit's binary bit vector to `ValueError`.
pub fn rdkit_bits_err(e: molsift_fp::RdkitBitsError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Converts an analog-search error: a graph that is not a skeleton, or one too symmetric to
/// canonicalize within the limit, is `ValueError`; a missing or damaged analog index (or
/// store) is `StoreError`.
pub fn analog_err(e: molsift_analogs::AnalogError) -> PyErr {
    use molsift_analogs::AnalogError as E;
    match e {
        E::Invalid(_) | E::TooSymmetric(_) => PyValueError::new_err(e.to_string()),
        other => StoreError::new_err(other.to_string()),
    }
}

/// Converts a cube-file error: a malformed or lying file is `InputError` (its message names
/// the file, line and byte offset), arguments that cannot describe a cube are `ValueError`,
/// and the operating system's refusals are `OSError`.
pub fn cube_err(e: molsift_cube::CubeError) -> PyErr {
    use molsift_cube::CubeError as E;
    match e {
        E::Io { path, source } => os_err(source, &path),
        E::Invalid(_) => PyValueError::new_err(e.to_string()),
        other => InputError::new_err(other.to_string()),
    }
}

/// An `OSError` with errno, message and file name, as Python's own `open` raises.
pub fn os_err(e: std::io::Error, path: &Path) -> PyErr {
    match e.raw_os_error() {
        Some(errno) => PyOSError::new_err((errno, e.to_string(), path.display().to_string())),
        None => PyOSError::new_err(format!("{}: {e}", path.display())),
    }
}

/// A JSON text argument that does not parse, as `ValueError`.
pub fn json_err(e: serde_json::Error) -> PyErr {
    PyValueError::new_err(format!("bad JSON: {e}"))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("MolsiftError", py.get_type::<MolsiftError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("StoreError", py.get_type::<StoreError>())?;
    m.add("Cancelled", py.get_type::<Cancelled>())?;
    Ok(())
}
