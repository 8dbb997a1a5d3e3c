//! Writing a cube: the header in CP2K's and PySCF's formats (`I5,3F12.6` lines, `I5,4F12.6`
//! atoms, `10I5` orbital lines), then every (x, y) row of values as lines of six 13-column
//! numbers. Every row has the same bytes, so each thread formats whole rows and writes them at
//! their offsets into a temporary file beside the target, which is synced and renamed.

use crate::error::CubeError;
use crate::format::{put_row, Style};
use crate::header::Header;
use crate::parse::CubeFloat;
use std::path::Path;

/// How to write.
#[derive(Debug, Clone, Copy)]
pub struct WriteOptions {
    /// Number style.
    pub style: Style,
    /// Worker threads.
    pub threads: usize,
    /// `fsync` the file before the rename (on by default: a crash never leaves a renamed
    /// file with missing bytes).
    pub sync: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            style: Style::Cp2k,
            threads: 1,
            sync: true,
        }
    }
}

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteStats {
    /// Bytes written (the file's size).
    pub bytes: u64,
    /// Bytes of the header.
    pub header_bytes: u64,
}

fn push_line(s: &mut String, n: i64, vals: &[f64]) {
    use std::fmt::Write as _;
    let _ = write!(s, "{n:5}");
    for v in vals {
        let _ = write!(s, "{v:12.6}");
    }
    s.push('\n');
}

/// The header's text as [`write_cube`] writes it.
pub fn header_text(h: &Header) -> Result<String, CubeError> {
    for c in &h.comments {
        if c.contains('\n') || c.contains('\r') {
            return Err(CubeError::Invalid(
                "a comment line holds a line break".into(),
            ));
        }
    }
    let mut s = String::new();
    s.push_str(&h.comments[0]);
    s.push('\n');
    s.push_str(&h.comments[1]);
    s.push('\n');
    push_line(&mut s, h.natoms_field, &h.origin);
    if let Some(v) = h.nval_field {
        s.pop();
        s.push_str(&format!("{v:5}\n"));
    }
    for i in 0..3 {
        push_line(&mut s, h.shape_fields[i], &h.axes[i]);
    }
    for a in &h.atoms {
        push_line(
            &mut s,
            a.number,
            &[a.charge, a.position[0], a.position[1], a.position[2]],
        );
    }
    if h.natoms_field < 0 {
        let all: Vec<i64> = std::iter::once(h.orbitals.len() as i64)
            .chain(h.orbitals.iter().copied())
            .collect();
        for chunk in all.chunks(10) {
            for v in chunk {
                s.push_str(&format!("{v:5}"));
            }
            s.push('\n');
        }
    }
    Ok(s)
}

fn check(h: &Header, n: usize) -> Result<(), CubeError> {
    if h.shape.contains(&0) || h.nval == 0 {
        return Err(CubeError::Invalid(
            "every dimension must be at least 1".into(),
        ));
    }
    if n as u64 != h.value_count() {
        return Err(CubeError::Invalid(format!(
            "{} values given for a {}x{}x{}x{} cube",
            n, h.shape[0], h.shape[1], h.shape[2], h.nval
        )));
    }
    if (h.natoms_field.unsigned_abs() as usize) != h.atoms.len() {
        return Err(CubeError::Invalid(
            "the atom count field does not match the atoms".into(),
        ));
    }
    if h.natoms_field < 0 && h.orbitals.len() != h.nval {
        return Err(CubeError::Invalid(format!(
            "{} orbital indices for {} values per point",
            h.orbitals.len(),
            h.nval
        )));
    }
    for (i, &f) in h.shape_fields.iter().enumerate() {
        if f.unsigned_abs() as usize != h.shape[i] {
            return Err(CubeError::Invalid(
                "shape and point-count fields disagree".into(),
            ));
        }
    }
    Ok(())
}

/// Formats rows `r0..r1` of `values` (row length `rv`) into `buf`.
fn format_rows<T: CubeFloat>(
    values: &[T],
    rv: usize,
    r0: usize,
    r1: usize,
    style: Style,
    buf: &mut Vec<u8>,
) -> Result<(), usize> {
    let row_bytes = rv * 13 + rv.div_ceil(6);
    // every byte is written below: size the buffer without clearing it each time
    let need = (r1 - r0) * row_bytes;
    if buf.len() != need {
        buf.resize(need, 0);
    }
    let mut row64 = vec![0f64; rv];
    for (k, r) in (r0..r1).enumerate() {
        let row = &values[r * rv..(r + 1) * rv];
        for (j, (x, v)) in row64.iter_mut().zip(row).enumerate() {
            *x = v.to_f64();
            if !x.is_finite() {
                return Err(r * rv + j);
            }
        }
        put_row(&row64, style, &mut buf[k * row_bytes..(k + 1) * row_bytes]);
    }
    Ok(())
}

/// Writes `values` (C order, `h.value_count()` of them) with header `h` to `path`.
pub fn write_cube<T: CubeFloat>(
    path: &Path,
    h: &Header,
    values: &[T],
    opts: &WriteOptions,
) -> Result<WriteStats, CubeError> {
    check(h, values.len())?;
    let head = header_text(h)?;
    let rv = h.row_values();
    let rows = h.shape[0] * h.shape[1];
    let row_bytes = rv * 13 + rv.div_ceil(6);
    let total = head.len() as u64 + (rows * row_bytes) as u64;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| CubeError::Invalid(format!("{} is not a file name", path.display())))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let io = |source| CubeError::Io {
        path: path.to_path_buf(),
        source,
    };
    let result = (|| {
        let f = molsift_iostats::CountedFile::create(&tmp).map_err(io)?;
        f.set_len(total).map_err(io)?;
        f.write_all_at(head.as_bytes(), 0).map_err(io)?;
        // about 256 KiB of text per task: formatted and copied to the kernel while in cache
        let per = (256 << 10) / row_bytes.max(1) + 1;
        let tasks: Vec<usize> = (0..rows).step_by(per).collect();
        // the error of the earliest rows that failed (the same for any thread count)
        molsift_tasks::try_each(
            opts.threads,
            tasks.len(),
            || Vec::with_capacity(per * row_bytes),
            |buf, i| {
                let r0 = tasks[i];
                let r1 = (r0 + per).min(rows);
                match format_rows(values, rv, r0, r1, opts.style, buf) {
                    Err(k) => Err(CubeError::Invalid(format!(
                        "value {k} (flat C-order index) is not finite: cube values must be finite"
                    ))),
                    Ok(()) => f
                        .write_all_at(buf, head.len() as u64 + (r0 * row_bytes) as u64)
                        .map_err(|source| CubeError::Io {
                            path: path.to_path_buf(),
                            source,
                        }),
                }
            },
        )?;
        if opts.sync {
            f.sync_all().map_err(io)?;
        }
        drop(f);
        std::fs::rename(&tmp, path).map_err(io)?;
        Ok(WriteStats {
            bytes: total,
            header_bytes: head.len() as u64,
        })
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
