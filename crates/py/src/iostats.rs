//! Python wrappers of `molsift_iostats`: `CountedFile` (a counted file descriptor for the
//! Python writers and readers: pread, pwrite, read, write, seek, fsync, fdatasync, mmap),
//! `read_file`, `write_file`, `file_size`, `iostats_process` (this process's record as JSON) and
//! `iostats_counters`.

use std::path::PathBuf;

use molsift_iostats::{self as iostats, CountedFile};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyBytes, PyDict};

use crate::error::os_err;

/// A file opened with `os.open`-style flags whose calls are counted by molsift's I/O
/// counters. Every method releases the GIL for the system call.
#[pyclass(name = "CountedFile", module = "molsift._core")]
pub struct PyCountedFile {
    inner: Option<CountedFile>,
    path: PathBuf,
}

impl PyCountedFile {
    fn file(&self) -> PyResult<&CountedFile> {
        self.inner
            .as_ref()
            .ok_or_else(|| PyValueError::new_err("I/O operation on closed file"))
    }

    fn io<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&CountedFile) -> std::io::Result<T> + Send,
    ) -> PyResult<T> {
        let file = self.file()?;
        py.detach(|| f(file)).map_err(|e| os_err(e, &self.path))
    }
}

#[pymethods]
impl PyCountedFile {
    /// Opens `path` with `os.open` flags (`os.O_WRONLY | os.O_APPEND`, ...) and mode.
    #[new]
    #[pyo3(signature = (path, flags=0, mode=0o644))]
    fn new(py: Python<'_>, path: PathBuf, flags: i32, mode: u32) -> PyResult<Self> {
        let inner = py
            .detach(|| CountedFile::open_flags(&path, flags, mode))
            .map_err(|e| os_err(e, &path))?;
        Ok(PyCountedFile {
            inner: Some(inner),
            path,
        })
    }

    /// Up to `n` bytes at `offset` (one pread).
    fn pread<'py>(&self, py: Python<'py>, n: usize, offset: u64) -> PyResult<Bound<'py, PyBytes>> {
        let data = self.io(py, |f| {
            let mut buf = vec![0u8; n];
            let got = f.read_at(&mut buf, offset)?;
            buf.truncate(got);
            Ok(buf)
        })?;
        Ok(PyBytes::new(py, &data))
    }

    /// Writes all of `data` at `offset` (pwrite, repeated on short writes); returns its length.
    fn pwrite(&self, py: Python<'_>, data: &[u8], offset: u64) -> PyResult<usize> {
        self.io(py, |f| f.write_all_at(data, offset).map(|_| data.len()))
    }

    /// Up to `n` bytes from the file offset (one read).
    fn read<'py>(&self, py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyBytes>> {
        let data = self.io(py, |f| {
            let mut buf = vec![0u8; n];
            let got = std::io::Read::read(&mut &*f, &mut buf)?;
            buf.truncate(got);
            Ok(buf)
        })?;
        Ok(PyBytes::new(py, &data))
    }

    /// Writes all of `data` at the file offset (the end with `O_APPEND`); returns its length.
    fn write(&self, py: Python<'_>, data: &[u8]) -> PyResult<usize> {
        self.io(py, |f| {
            std::io::Write::write_all(&mut &*f, data).map(|_| data.len())
        })
    }

    /// Moves the file offset like `os.lseek`; returns the new offset.
    #[pyo3(signature = (offset, whence=0))]
    fn seek(&self, py: Python<'_>, offset: i64, whence: i32) -> PyResult<u64> {
        let to = match whence {
            0 => std::io::SeekFrom::Start(offset.max(0) as u64),
            1 => std::io::SeekFrom::Current(offset),
            2 => std::io::SeekFrom::End(offset),
            _ => {
                return Err(PyValueError::new_err(format!(
                    "whence must be 0, 1 or 2, got {whence}"
                )))
            }
        };
        self.io(py, |f| std::io::Seek::seek(&mut &*f, to))
    }

    /// The file's size, by `fstat` (counted as a stat).
    fn size(&self, py: Python<'_>) -> PyResult<u64> {
        self.io(py, |f| f.metadata().map(|m| m.len()))
    }

    /// `fsync`.
    fn fsync(&self, py: Python<'_>) -> PyResult<()> {
        self.io(py, |f| f.sync_all())
    }

    /// `fdatasync`.
    fn fdatasync(&self, py: Python<'_>) -> PyResult<()> {
        self.io(py, |f| f.sync_data())
    }

    /// Truncates (or extends) the file to `length` bytes.
    fn truncate(&self, py: Python<'_>, length: u64) -> PyResult<()> {
        self.io(py, |f| f.set_len(length))
    }

    /// The whole file mapped read-only: a Python `mmap.mmap` (numpy.frombuffer views it),
    /// counted as one mmap. Bytes read through the map are not counted.
    fn mmap<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mmap = py.import("mmap")?;
        let access = mmap.getattr("ACCESS_READ")?;
        self.file()?.map_with(|fd| {
            mmap.getattr("mmap")?
                .call((fd, 0), Some(&[("access", access)].into_py_dict(py)?))
        })
    }

    /// The file descriptor.
    fn fileno(&self) -> PyResult<i32> {
        use std::os::unix::io::AsRawFd;
        Ok(self.file()?.as_raw_fd())
    }

    /// Closes the file (again: nothing happens).
    fn close(&mut self, py: Python<'_>) {
        if let Some(f) = self.inner.take() {
            py.detach(|| drop(f));
        }
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_none()
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(&mut self, py: Python<'_>, _t: Py<PyAny>, _v: Py<PyAny>, _tb: Py<PyAny>) {
        self.close(py);
    }
}

/// The whole file (counted: one open, 64 KiB reads).
#[pyfunction]
fn read_file<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyBytes>> {
    let data = py
        .detach(|| iostats::read_file(&path))
        .map_err(|e| os_err(e, &path))?;
    Ok(PyBytes::new(py, &data))
}

/// Creates or truncates `path` and writes `data` (counted); `sync`: fsync before closing.
#[pyfunction]
#[pyo3(signature = (path, data, sync=false))]
fn write_file(py: Python<'_>, path: PathBuf, data: &[u8], sync: bool) -> PyResult<()> {
    py.detach(|| iostats::write_file(&path, data, sync))
        .map_err(|e| os_err(e, &path))
}

/// The size of `path` by `stat` (counted as a stat of it).
#[pyfunction]
fn file_size(py: Python<'_>, path: PathBuf) -> PyResult<u64> {
    py.detach(|| iostats::metadata(&path))
        .map(|m| m.len())
        .map_err(|e| os_err(e, &path))
}

/// This process's I/O counters as one "process" object of the I/O log (JSON text).
#[pyfunction]
#[pyo3(signature = (ended_by="exit"))]
fn iostats_process(py: Python<'_>, ended_by: &str) -> String {
    py.detach(|| iostats::process_json(ended_by))
}

/// The non-zero integer counters of `path` in this process, or None.
#[pyfunction]
fn iostats_counters<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Some(c) = iostats::counters(&path) else {
        return Ok(None);
    };
    let d = PyDict::new(py);
    for (k, v) in c {
        d.set_item(k, v)?;
    }
    Ok(Some(d))
}

/// Whether this process records I/O (MOLSIFT_IOSTATS is not 0).
#[pyfunction]
fn iostats_enabled() -> bool {
    iostats::enabled()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    iostats::enabled(); // starts the process clock: times count from the import of molsift
    m.add_class::<PyCountedFile>()?;
    m.add_function(wrap_pyfunction!(read_file, m)?)?;
    m.add_function(wrap_pyfunction!(write_file, m)?)?;
    m.add_function(wrap_pyfunction!(file_size, m)?)?;
    m.add_function(wrap_pyfunction!(iostats_process, m)?)?;
    m.add_function(wrap_pyfunction!(iostats_counters, m)?)?;
    m.add_function(wrap_pyfunction!(iostats_enabled, m)?)?;
    Ok(())
}
