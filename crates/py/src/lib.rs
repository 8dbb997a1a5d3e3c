//! `molsift._core`: the compiled module behind the `molsift` Python package. Glue only: each
//! file wraps one core crate in thin `Py*` types, and `error.rs` maps core errors to Python
//! exceptions. Rust work runs with the GIL released.

use pyo3::prelude::*;

mod analogs;
mod cancel;
mod cube;
mod error;
mod fp;
mod iostats;
mod le;
mod reader;
mod runs;
mod search;
mod store;
mod store_v2;
mod substructure;
mod tracer;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    error::register(m)?;
    reader::register(m)?;
    store::register(m)?;
    store_v2::register(m)?;
    runs::register(m)?;
    search::register(m)?;
    substructure::register(m)?;
    analogs::register(m)?;
    cancel::register(m)?;
    cube::register(m)?;
    fp::register(m)?;
    iostats::register(m)?;
    tracer::register(m)?;
    Ok(())
}
