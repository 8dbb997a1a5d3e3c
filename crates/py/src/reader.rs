//! Python wrappers of `molsift-io`: `RecordSource` (records of a slab or a stream, in batches),
//! `count_records`, `split_slabs`, `detect_format`, `file_compression`.

use std::path::{Path, PathBuf};

use molsift_io::{
    Compression, CountOptions, InputFormat, ReadCounters, ReadMethod, ReaderOptions, RecordSource,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::error::{input_err, option_err};

/// (text, id, line, offset, problem) as handed to Python.
type PyRecord = (String, String, u64, u64, Option<String>);

fn counters_dict<'py>(py: Python<'py>, c: &ReadCounters) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("bytes_read", c.bytes_read)?;
    d.set_item("read_calls", c.read_calls)?;
    d.set_item("records", c.records)?;
    d.set_item("oversized", c.oversized)?;
    d.set_item("decompressed_bytes", c.decompressed_bytes)?;
    Ok(d)
}

/// Records of one slab of a plain file, or of a whole (possibly compressed) file as a stream.
#[pyclass(name = "RecordSource", module = "molsift._core")]
pub struct PyRecordSource {
    inner: RecordSource,
}

#[pymethods]
impl PyRecordSource {
    /// Opens `path`. With `slab=(start, end)` reads the records starting in that byte range of a
    /// plain file; without it, reads the whole file as one stream (gzip and zstd included).
    /// `first_line`: newlines before the slab, when known (`slab_first_lines` gives every slab's
    /// in one pass); by default they are counted, which reads the file up to the slab.
    #[new]
    #[pyo3(signature = (path, format, slab=None, header=false, smiles_col=None, id_col=None, delimiter=None, buffer_size=None, max_record_bytes=None, first_line=None, io=None))]
    // One Python constructor with keyword arguments: the arguments are Python's signature.
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        format: &str,
        slab: Option<(u64, u64)>,
        header: bool,
        smiles_col: Option<String>,
        id_col: Option<String>,
        delimiter: Option<String>,
        buffer_size: Option<usize>,
        max_record_bytes: Option<usize>,
        first_line: Option<u64>,
        io: Option<&str>,
    ) -> PyResult<Self> {
        let format = InputFormat::named(format, header, smiles_col, id_col, delimiter.as_deref())
            .map_err(option_err)?;
        let mut opts =
            ReaderOptions::with_sizes(format.record_kind(), buffer_size, max_record_bytes)
                .map_err(option_err)?;
        if let Some(io) = io {
            opts.io = read_method(io)?;
        }
        let inner = py
            .detach(|| match slab {
                Some((start, end)) => {
                    RecordSource::open_slab_at_line(&path, format, start..end, opts, first_line)
                }
                None => RecordSource::open_stream(&path, format, opts),
            })
            .map_err(input_err)?;
        Ok(PyRecordSource { inner })
    }

    /// Up to `n` records as (text, id, line, offset, problem) tuples; empty at the end.
    fn next_batch(&mut self, py: Python<'_>, n: usize) -> PyResult<Vec<PyRecord>> {
        let inner = &mut self.inner;
        py.detach(|| {
            let mut out = Vec::with_capacity(n.min(1 << 16));
            while out.len() < n {
                match inner.next_record()? {
                    Some(r) => out.push((r.text, r.id, r.line, r.offset, r.problem)),
                    None => break,
                }
            }
            Ok(out)
        })
        .map_err(input_err)
    }

    /// Bytes read, read calls, records, oversized records and decompressed bytes so far, and
    /// how the input is read (io: pread, mmap, uring, direct or stream; io_reason).
    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = counters_dict(py, self.inner.counters())?;
        let (how, why) = self.inner.read_method();
        d.set_item("io", how)?;
        d.set_item("io_reason", why)?;
        Ok(d)
    }
}

/// Counts the records of a file with `threads` threads (plain files, read as `io` says: auto,
/// mmap, pread, uring or direct) or one streaming decoder (gzip, zstd); returns a dict with
/// records, bytes, bytes_read, read_calls, io (the way the file was read) and io_reason.
#[pyfunction]
#[pyo3(signature = (path, format, threads=1, header=false, io="auto"))]
fn count_records<'py>(
    py: Python<'py>,
    path: PathBuf,
    format: &str,
    threads: usize,
    header: bool,
    io: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let format = InputFormat::named(format, header, None, None, None).map_err(option_err)?;
    let method = read_method(io)?;
    let opts = CountOptions {
        threads: threads.max(1),
        skip_header: format.skips_header(),
        method,
        ..CountOptions::default()
    };
    let report = py
        .detach(|| molsift_io::count_records_with(&path, format.record_kind(), &opts))
        .map_err(input_err)?;
    let d = PyDict::new(py);
    d.set_item("records", report.records)?;
    d.set_item("bytes", report.bytes)?;
    d.set_item("bytes_read", report.bytes_read)?;
    d.set_item("read_calls", report.read_calls)?;
    d.set_item("io", report.io)?;
    d.set_item("io_reason", report.io_reason)?;
    Ok(d)
}

/// The names of the read methods, as `io=` takes them.
fn read_method_names() -> Vec<&'static str> {
    ReadMethod::ALL.iter().map(|m| m.name()).collect()
}

/// The read method called `name`, or a ValueError naming the choices.
fn read_method(name: &str) -> PyResult<ReadMethod> {
    ReadMethod::named(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "io must be one of {}, not {name:?}",
            read_method_names().join(", ")
        ))
    })
}

/// Byte ranges of `n` near-equal slabs covering a file of `len` bytes.
#[pyfunction]
fn split_slabs(len: u64, n: usize) -> PyResult<Vec<(u64, u64)>> {
    if n == 0 {
        return Err(PyValueError::new_err(
            "the number of slabs must be at least 1",
        ));
    }
    Ok(molsift_io::split_slabs(len, n)
        .into_iter()
        .map(|r| (r.start, r.end))
        .collect())
}

/// Byte ranges for `workers` workers taking slabs from a queue, shrinking towards the end
/// (`molsift_io::guided_slabs`; `min_len` 0: a 32nd of a worker's share).
#[pyfunction]
#[pyo3(signature = (len, workers, min_len=0))]
fn guided_slabs(len: u64, workers: usize, min_len: u64) -> Vec<(u64, u64)> {
    molsift_io::guided_slabs(len, workers, min_len)
        .into_iter()
        .map(|r| (r.start, r.end))
        .collect()
}

/// (format, header) guessed from the file name and first line: format is smiles, csv or sdf.
#[pyfunction]
fn detect_format(path: PathBuf) -> PyResult<(String, bool)> {
    let f = InputFormat::detect(&path).map_err(input_err)?;
    Ok(match f {
        InputFormat::Smiles { header } => ("smiles".into(), header),
        InputFormat::Csv { .. } => ("csv".into(), true),
        _ => ("sdf".into(), false),
    })
}

/// Number of newline bytes in `[start, end)` of a plain file (memory speed).
#[pyfunction]
fn count_newlines(py: Python<'_>, path: PathBuf, start: u64, end: u64) -> PyResult<u64> {
    py.detach(|| molsift_io::count_newlines(&path, start..end))
        .map_err(input_err)
}

/// Newline bytes before the start of each slab (`(start, end)` pairs in ascending order) of a
/// plain file, counted in one parallel pass over the file on `threads` threads.
#[pyfunction]
fn slab_first_lines(
    py: Python<'_>,
    path: PathBuf,
    slabs: Vec<(u64, u64)>,
    threads: usize,
) -> PyResult<Vec<u64>> {
    let ranges: Vec<_> = slabs.into_iter().map(|(a, b)| a..b).collect();
    py.detach(|| molsift_io::slab_first_lines(&path, &ranges, threads.max(1)))
        .map_err(input_err)
}

/// "none", "gzip" or "zstd", from the file's first bytes.
#[pyfunction]
fn file_compression(path: PathBuf) -> PyResult<&'static str> {
    Ok(
        match molsift_io::detect_compression(Path::new(&path)).map_err(input_err)? {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            _ => "none",
        },
    )
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRecordSource>()?;
    // The reader's defaults, so that help texts and docs quote the numbers the code uses.
    m.add("DEFAULT_READ_BUFFER", molsift_io::DEFAULT_BUFFER_SIZE)?;
    m.add(
        "DEFAULT_MAX_LINE_RECORD_BYTES",
        molsift_io::DEFAULT_MAX_LINE_RECORD_BYTES,
    )?;
    m.add(
        "DEFAULT_MAX_SDF_RECORD_BYTES",
        molsift_io::DEFAULT_MAX_SDF_RECORD_BYTES,
    )?;
    // How `count` reads (the --io choices and help come from here).
    m.add("IO_METHODS", PyTuple::new(m.py(), read_method_names())?)?;
    m.add("IO_AUTO_CACHED", molsift_io::AUTO_CACHED)?;
    m.add("IO_AUTO_MAP_BELOW", molsift_io::AUTO_MAP_BELOW)?;
    m.add("IO_CHUNK", CountOptions::default().chunk_size)?;
    m.add("IO_DEPTH", CountOptions::default().depth)?;
    m.add_function(wrap_pyfunction!(count_records, m)?)?;
    m.add_function(wrap_pyfunction!(split_slabs, m)?)?;
    m.add_function(wrap_pyfunction!(guided_slabs, m)?)?;
    m.add_function(wrap_pyfunction!(detect_format, m)?)?;
    m.add_function(wrap_pyfunction!(file_compression, m)?)?;
    m.add_function(wrap_pyfunction!(count_newlines, m)?)?;
    m.add_function(wrap_pyfunction!(slab_first_lines, m)?)?;
    Ok(())
}
