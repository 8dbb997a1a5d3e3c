//! Python wrappers of `molsift_cube`: a cube's header as a dict, its values read into (or
//! written from) a numpy array's memory, a block of value text parsed (the MPI path reads the
//! bytes itself), and one value formatted (tests).
//!
//! Arrays cross as `(address, bytes)` of a C-contiguous numpy array that the Python caller
//! (`molsift/cube/io.py`) allocates, checks and keeps alive for the call: no copy of grids
//! that may be gigabytes (the stable ABI has no buffer protocol before Python 3.11).

use std::path::PathBuf;

use molsift_cube::{
    detect_layout, first_row, format_value, parse_block, Atom, CubeFile, CubeFloat, Header,
    ReadOptions, Style, Units, WriteOptions,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::error::cube_err;

/// The numpy array memory at `addr` as a slice of `T`.
///
/// # Safety
/// `addr` must point at `nbytes` bytes of memory that stay valid and unaliased for `'a`
/// (the Python caller holds the array for the call).
unsafe fn slice_at<'a, T: CubeFloat>(addr: usize, nbytes: usize) -> PyResult<&'a mut [T]> {
    if addr == 0 || addr % std::mem::align_of::<T>() != 0 || nbytes % T::SIZE != 0 {
        return Err(PyValueError::new_err(
            "array memory is not an aligned array of the dtype",
        ));
    }
    // SAFETY: as promised by the caller.
    Ok(unsafe { std::slice::from_raw_parts_mut(addr as *mut T, nbytes / T::SIZE) })
}

/// `nbytes` read-only bytes at `addr` (empty for 0 bytes).
///
/// # Safety
/// `addr` must point at `nbytes` bytes that stay valid and unwritten for `'a`.
unsafe fn bytes_at<'a>(addr: usize, nbytes: usize) -> PyResult<&'a [u8]> {
    if nbytes == 0 {
        return Ok(&[]);
    }
    if addr == 0 {
        return Err(PyValueError::new_err("no data"));
    }
    // SAFETY: as promised by the caller.
    Ok(unsafe { std::slice::from_raw_parts(addr as *const u8, nbytes) })
}

/// Evaluates `$body` with `$v` the array memory at (`$addr`, `$nbytes`) as a slice of the
/// numpy dtype named `$dtype` ("float64" or "float32"); any other name is a `ValueError`.
macro_rules! with_values {
    ($dtype:expr, $addr:expr, $nbytes:expr, |$v:ident| $body:expr) => {
        match $dtype {
            "float64" => {
                // SAFETY: the Python caller holds the array of `nbytes` bytes through the call.
                let $v = unsafe { slice_at::<f64>($addr, $nbytes)? };
                $body
            }
            "float32" => {
                // SAFETY: as above.
                let $v = unsafe { slice_at::<f32>($addr, $nbytes)? };
                $body
            }
            other => {
                return Err(PyValueError::new_err(format!(
                    "dtype must be float64 or float32, not {other:?}"
                )))
            }
        }
    };
}

fn header_dict<'py>(py: Python<'py>, h: &Header) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("comments", h.comments.to_vec())?;
    d.set_item("natoms_field", h.natoms_field)?;
    d.set_item("origin", h.origin.to_vec())?;
    d.set_item("nval_field", h.nval_field)?;
    d.set_item("shape", h.shape.to_vec())?;
    d.set_item("shape_fields", h.shape_fields.to_vec())?;
    d.set_item(
        "axes",
        h.axes.iter().map(|a| a.to_vec()).collect::<Vec<_>>(),
    )?;
    d.set_item("units", h.units.name())?;
    let atoms = PyList::empty(py);
    for a in &h.atoms {
        atoms.append((
            a.number,
            a.charge,
            a.position[0],
            a.position[1],
            a.position[2],
        ))?;
    }
    d.set_item("atoms", atoms)?;
    d.set_item("orbitals", h.orbitals.clone())?;
    d.set_item("nval", h.nval)?;
    d.set_item("values_offset", h.values_offset)?;
    d.set_item("header_lines", h.header_lines)?;
    d.set_item("value_count", h.value_count())?;
    Ok(d)
}

fn header_from(d: &Bound<'_, PyDict>) -> PyResult<Header> {
    fn get<'py, T: for<'a> FromPyObject<'a, 'py>>(d: &Bound<'py, PyDict>, k: &str) -> PyResult<T>
    where
        for<'a> <T as FromPyObject<'a, 'py>>::Error: Into<PyErr>,
    {
        let v = d
            .get_item(k)?
            .ok_or_else(|| PyValueError::new_err(format!("cube header lacks {k:?}")))?;
        v.extract::<T>().map_err(Into::into)
    }
    let comments: Vec<String> = get(d, "comments")?;
    if comments.len() != 2 {
        return Err(PyValueError::new_err(
            "a cube has exactly two comment lines",
        ));
    }
    let shape_fields: [i64; 3] = get(d, "shape_fields")?;
    let atoms: Vec<(i64, f64, f64, f64, f64)> = get(d, "atoms")?;
    let units: String = get(d, "units")?;
    Ok(Header {
        comments: [comments[0].clone(), comments[1].clone()],
        natoms_field: get(d, "natoms_field")?,
        origin: get(d, "origin")?,
        nval_field: get(d, "nval_field")?,
        shape: shape_fields.map(|n| n.unsigned_abs() as usize),
        shape_fields,
        axes: get(d, "axes")?,
        units: if units == "angstrom" {
            Units::Angstrom
        } else {
            Units::Bohr
        },
        atoms: atoms
            .into_iter()
            .map(|(number, charge, x, y, z)| Atom {
                number,
                charge,
                position: [x, y, z],
            })
            .collect(),
        orbitals: get(d, "orbitals")?,
        nval: get(d, "nval")?,
        values_offset: 0,
        header_lines: 0,
    })
}

/// The header of the cube file at `path` as a dict, with `file_bytes`, `row_bytes` (the
/// bytes of one row in the fixed layout, or None) and the first row as the layout test found
/// it (`first_row_values`, `first_row_bytes`: None when the value area holds no value).
#[pyfunction]
fn cube_header<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let (h, len, lay, first) = py
        .detach(|| {
            let f = CubeFile::open(&path)?;
            let lay = detect_layout(f.bytes(), &f.header);
            let first = first_row(f.bytes(), &f.header);
            Ok((f.header.clone(), f.bytes().len() as u64, lay, first))
        })
        .map_err(cube_err)?;
    let d = header_dict(py, &h)?;
    d.set_item("file_bytes", len)?;
    d.set_item("row_bytes", lay.map(|l| l.row_bytes))?;
    d.set_item("lines_per_row", lay.map(|l| l.lines_per_row))?;
    d.set_item("first_row_values", first.map(|r| r.values))?;
    d.set_item("first_row_bytes", first.map(|r| r.row_bytes))?;
    Ok(d)
}

/// Reads every value of the cube at `path` into the array memory at `addr` (`nbytes` bytes of
/// `dtype` "float64" or "float32"). Returns what the read did (fixed layout, row bytes,
/// slabs, threads, file bytes).
#[pyfunction]
#[pyo3(signature = (path, addr, nbytes, dtype, threads=1, slabs=0, fixed=true))]
#[allow(clippy::too_many_arguments)]
fn cube_read<'py>(
    py: Python<'py>,
    path: PathBuf,
    addr: usize,
    nbytes: usize,
    dtype: &str,
    threads: usize,
    slabs: usize,
    fixed: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = ReadOptions {
        threads: threads.max(1),
        slabs,
        fixed,
    };
    let stats = with_values!(dtype, addr, nbytes, |out| py
        .detach(|| CubeFile::open(&path)?.read_into(out, &opts)))
    .map_err(cube_err)?;
    let d = PyDict::new(py);
    d.set_item("fixed", stats.fixed.is_some())?;
    d.set_item("row_bytes", stats.fixed.map(|l| l.row_bytes))?;
    d.set_item("slabs", stats.slabs)?;
    d.set_item("threads", stats.threads)?;
    d.set_item("file_bytes", stats.file_bytes)?;
    Ok(d)
}

/// Parses exactly `nbytes / itemsize` values from `data_nbytes` bytes of value text at
/// `data_addr` (`base`: their offset in `path`, `first_line`: the line they start on, both
/// named in errors; 0 when unknown) into the array at `addr`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn cube_parse_block(
    py: Python<'_>,
    path: PathBuf,
    data_addr: usize,
    data_nbytes: usize,
    base: u64,
    first_line: u64,
    addr: usize,
    nbytes: usize,
    dtype: &str,
) -> PyResult<()> {
    // SAFETY: the caller's byte buffer lives through this call and is not written.
    let data = unsafe { bytes_at(data_addr, data_nbytes)? };
    let res = with_values!(dtype, addr, nbytes, |out| py
        .detach(|| parse_block(data, base, out)));
    res.map_err(|e| cube_err(e.located_in(&path, Some(data), base, first_line)))
}

/// Number of whitespace-separated tokens in `nbytes` bytes at `addr`.
#[pyfunction]
fn cube_count_tokens(py: Python<'_>, addr: usize, nbytes: usize) -> PyResult<u64> {
    // SAFETY: the caller's byte buffer lives through this call and is not written.
    let data = unsafe { bytes_at(addr, nbytes)? };
    Ok(py.detach(|| molsift_cube::count_tokens(data)))
}

/// Number of `\n` bytes in `nbytes` bytes at `addr`.
#[pyfunction]
fn cube_count_newlines(py: Python<'_>, addr: usize, nbytes: usize) -> PyResult<u64> {
    // SAFETY: the caller's byte buffer lives through this call and is not written.
    let data = unsafe { bytes_at(addr, nbytes)? };
    Ok(py.detach(|| molsift_cube::count_newlines(data)))
}

fn style_of(layout: &str) -> PyResult<Style> {
    match layout {
        "cp2k" => Ok(Style::Cp2k),
        "gaussian" | "pyscf" => Ok(Style::Gaussian),
        other => Err(PyValueError::new_err(format!(
            "layout must be 'cp2k' (0.12345E-01) or 'gaussian' (1.23456E-01), not {other:?}"
        ))),
    }
}

/// Writes a cube: `header` (the dict shape of `cube_header`), the values at `addr`.
/// Returns (file bytes, header bytes).
#[pyfunction]
#[pyo3(signature = (path, header, addr, nbytes, dtype, layout="cp2k", threads=1, sync=true))]
#[allow(clippy::too_many_arguments)]
fn cube_write(
    py: Python<'_>,
    path: PathBuf,
    header: &Bound<'_, PyDict>,
    addr: usize,
    nbytes: usize,
    dtype: &str,
    layout: &str,
    threads: usize,
    sync: bool,
) -> PyResult<(u64, u64)> {
    let h = header_from(header)?;
    let opts = WriteOptions {
        style: style_of(layout)?,
        threads: threads.max(1),
        sync,
    };
    let stats = with_values!(dtype, addr, nbytes, |v| py
        .detach(|| molsift_cube::write_cube(&path, &h, v, &opts)))
    .map_err(cube_err)?;
    Ok((stats.bytes, stats.header_bytes))
}

/// One value in 13 columns, as the writer formats it in `layout`.
#[pyfunction]
#[pyo3(signature = (value, layout="cp2k"))]
fn cube_format_value(value: f64, layout: &str) -> PyResult<String> {
    let mut out = [0u8; 13];
    format_value(value, style_of(layout)?, &mut out);
    Ok(String::from_utf8_lossy(&out).into_owned())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cube_header, m)?)?;
    m.add_function(wrap_pyfunction!(cube_read, m)?)?;
    m.add_function(wrap_pyfunction!(cube_parse_block, m)?)?;
    m.add_function(wrap_pyfunction!(cube_count_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(cube_count_newlines, m)?)?;
    m.add_function(wrap_pyfunction!(cube_write, m)?)?;
    m.add_function(wrap_pyfunction!(cube_format_value, m)?)?;
    Ok(())
}
