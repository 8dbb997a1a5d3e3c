//! `CancelFlag`: a flag one Python thread sets to stop a search another runs in Rust (the
//! graph matcher, the analog walk), read by the kernels without the GIL. A search that sees it
//! set raises `molsift._core.Cancelled`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pyo3::prelude::*;

/// A cancel flag: `set()` from any thread; searches given it stop once it is set.
#[pyclass(name = "CancelFlag", module = "molsift._core", frozen)]
pub struct PyCancelFlag {
    flag: Arc<AtomicBool>,
}

impl PyCancelFlag {
    /// The flag itself, for a search that runs without the GIL.
    pub(crate) fn shared(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.flag)
    }
}

#[pymethods]
impl PyCancelFlag {
    #[new]
    fn new() -> Self {
        PyCancelFlag {
            flag: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Tells every search holding this flag to stop.
    fn set(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    /// Whether `set()` was called.
    fn is_set(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    fn __repr__(&self) -> String {
        format!("<molsift._core.CancelFlag set={}>", self.is_set())
    }
}

/// The flag of an optional Python argument, cloned so that a search can read it without the
/// GIL.
pub(crate) fn shared(flag: Option<PyRef<'_, PyCancelFlag>>) -> Option<Arc<AtomicBool>> {
    flag.map(|f| f.shared())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyCancelFlag>()
}
