//! The one place core errors become Python exceptions: `MolsiftError` and its subclasses
//! `InputError` (reading input files) and `StoreError` (creating or opening stores).

use pyo3::create_exception;
use pyo3::exceptions::PyException;
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

/// Converts an input-reading error.
pub fn input_err(e: molsift_io::IoError) -> PyErr {
    InputError::new_err(e.to_string())
}

/// Converts a store error.
pub fn store_err(e: molsift_store::StoreError) -> PyErr {
    StoreError::new_err(e.to_string())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("MolsiftError", py.get_type::<MolsiftError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("StoreError", py.get_type::<StoreError>())?;
    Ok(())
}
