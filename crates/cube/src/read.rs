//! Reading the value area in parallel. A file whose every (x, y) row of `n3 * nval` values
//! takes the same bytes (CP2K, Gaussian and PySCF write such files) is cut into slabs of whole
//! rows whose places are computed from their offsets; every row is checked to end where the
//! layout says. Any other file takes the counting path: slabs cut at line ends, values counted
//! per slab, a prefix sum places each slab, then each slab is parsed into its place.

use crate::error::{CubeError, TokenError};
use crate::header::{parse_header, Header};
use crate::parse::{count_tokens, is_ws, parse_cells, parse_values, token_offset, CubeFloat};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// How to read.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    /// Worker threads (at least 1).
    pub threads: usize,
    /// Slabs to cut the value area into (0: 4 per thread). More slabs than rows is fine.
    pub slabs: usize,
    /// Try the fixed layout first (`false` forces the counting path; tests use it).
    pub fixed: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            threads: 1,
            slabs: 0,
            fixed: true,
        }
    }
}

/// The fixed layout of a file: every row of values spans `row_bytes` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedLayout {
    /// Bytes of one (x, y) row of `n3 * nval` values, line ends included.
    pub row_bytes: u64,
    /// Lines of one row.
    pub lines_per_row: u64,
}

/// What a read did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadStats {
    /// The fixed layout, when it held.
    pub fixed: Option<FixedLayout>,
    /// Slabs the value area was cut into.
    pub slabs: usize,
    /// Threads that read them.
    pub threads: usize,
    /// Bytes of the file (all read once).
    pub file_bytes: u64,
}

/// The first (x, y) row of a value area, as [`detect_layout`] finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FirstRow {
    /// Values of the row the area holds: `n3 * nval`, fewer when the area ends first.
    pub values: u64,
    /// Bytes from the area's start to the end of the line of the row's last value; 0 when the
    /// area ends before that line does, or when that line also holds a value of the next row
    /// (rows do not end lines: free-form).
    pub row_bytes: u64,
}

/// The first row of `b`'s value area (no other value read); None when the area holds none.
pub fn first_row(b: &[u8], h: &Header) -> Option<FirstRow> {
    let start = h.values_offset as usize;
    let rv = h.row_values() as u64;
    let area = &b[start.min(b.len())..];
    token_offset(area, 0)?;
    // the row's last value, then the end of its line
    let Some(last) = token_offset(area, rv - 1) else {
        let values = count_tokens(area);
        return Some(FirstRow {
            values,
            row_bytes: 0,
        });
    };
    let row_bytes = match memchr::memchr(b'\n', &area[last..]) {
        Some(i) if token_offset(&area[..last + i], rv).is_none() => (last + i) as u64 + 1,
        _ => 0,
    };
    Some(FirstRow {
        values: rv,
        row_bytes,
    })
}

/// The fixed layout of `b`'s value area, if the first row and the file's size agree with one.
/// Each row is still checked when it is read.
pub fn detect_layout(b: &[u8], h: &Header) -> Option<FixedLayout> {
    let area = &b[(h.values_offset as usize).min(b.len())..];
    let row_bytes = first_row(b, h)?.row_bytes;
    if row_bytes == 0 {
        return None;
    }
    let rows = (h.shape[0] * h.shape[1]) as u64;
    if row_bytes.checked_mul(rows)? != area.len() as u64 {
        return None;
    }
    let lines_per_row = memchr::memchr_iter(b'\n', &area[..row_bytes as usize]).count() as u64;
    Some(FixedLayout {
        row_bytes,
        lines_per_row,
    })
}

/// Runs `work` on every task with `threads` threads; the error of the earliest task that failed
/// (the one nearest the start of the file) wins.
fn run_tasks<W, E>(
    tasks: Vec<W>,
    threads: usize,
    work: impl Fn(W) -> Result<(), E> + Sync,
) -> Result<(), E>
where
    W: Send,
    E: Send,
{
    let queue: Vec<Mutex<Option<W>>> = tasks.into_iter().map(|t| Mutex::new(Some(t))).collect();
    molsift_tasks::try_each(
        threads,
        queue.len(),
        || (),
        |_, i| {
            let task = queue[i]
                .lock()
                .unwrap()
                .take()
                .expect("each task taken once");
            work(task)
        },
    )
    .map(|_| ())
}

/// Splits `out` into consecutive pieces of the given lengths.
fn split_lengths<'a, T>(mut out: &'a mut [T], lens: &[usize]) -> Vec<&'a mut [T]> {
    let mut parts = Vec::with_capacity(lens.len());
    for &n in lens {
        let (a, b) = out.split_at_mut(n);
        parts.push(a);
        out = b;
    }
    parts
}

enum FixedFail {
    NotFixed,
}

fn read_fixed<T: CubeFloat>(
    b: &[u8],
    h: &Header,
    lay: FixedLayout,
    out: &mut [T],
    opts: &ReadOptions,
    slabs: usize,
) -> Result<(), FixedFail> {
    let rows = h.shape[0] * h.shape[1];
    let rv = h.row_values();
    let rb = lay.row_bytes as usize;
    let start = h.values_offset as usize;
    let slabs = slabs.clamp(1, rows.max(1));
    let bounds: Vec<usize> = (0..=slabs).map(|k| rows * k / slabs).collect();
    let lens: Vec<usize> = bounds.windows(2).map(|w| (w[1] - w[0]) * rv).collect();
    let parts = split_lengths(out, &lens);
    let tasks: Vec<(usize, usize, &mut [T])> = bounds
        .windows(2)
        .zip(parts)
        .map(|(w, p)| (w[0], w[1], p))
        .collect();
    // rows of 13-column cells, six to a line: parsed cell by cell where they are
    let cells = rb == rv * 13 + rv.div_ceil(6);
    run_tasks(tasks, opts.threads, |(r0, r1, part)| {
        for (k, r) in (r0..r1).enumerate() {
            let a = start + r * rb;
            let row = &b[a..a + rb];
            if row[rb - 1] != b'\n' {
                return Err(FixedFail::NotFixed);
            }
            let dst = &mut part[k * rv..(k + 1) * rv];
            if cells && a + rb + 5 <= b.len() && parse_cells(b, a, dst) {
                continue;
            }
            match parse_values(row, a as u64, dst) {
                Ok(p) if p.values == rv && row[p.end..].iter().all(|&c| is_ws(c)) => {}
                _ => return Err(FixedFail::NotFixed),
            }
        }
        Ok(())
    })
}

fn read_counting<T: CubeFloat>(
    b: &[u8],
    h: &Header,
    out: &mut [T],
    opts: &ReadOptions,
    slabs: usize,
) -> Result<(), TokenError> {
    let start = h.values_offset as usize;
    let area = b.len() - start.min(b.len());
    // slab k starts after the first line end at or past its even share
    let mut cuts = vec![start];
    for k in 1..slabs {
        let target = start + area * k / slabs;
        let cut = match memchr::memchr(b'\n', &b[target.max(*cuts.last().unwrap())..]) {
            Some(p) => target.max(*cuts.last().unwrap()) + p + 1,
            None => b.len(),
        };
        cuts.push(cut.max(*cuts.last().unwrap()));
    }
    cuts.push(b.len().max(start));
    let ranges: Vec<(usize, usize)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    let counts: Vec<AtomicUsize> = ranges.iter().map(|_| AtomicUsize::new(0)).collect();
    let idx: Vec<usize> = (0..ranges.len()).collect();
    let _ = run_tasks(idx, opts.threads, |k| -> Result<(), ()> {
        let (a, z) = ranges[k];
        counts[k].store(count_tokens(&b[a..z]) as usize, Ordering::Relaxed);
        Ok(())
    });
    let counts: Vec<usize> = counts.into_iter().map(AtomicUsize::into_inner).collect();
    let total: u64 = counts.iter().map(|&c| c as u64).sum();
    let want = out.len() as u64;
    if total != want {
        // a token that is not a number explains a wrong count best (two numbers run together,
        // a stray word): report the first one, if any, before the count
        first_bad_token::<T>(b, start)?;
    }
    let dims = format!(
        "{}x{}x{}{}",
        h.shape[0],
        h.shape[1],
        h.shape[2],
        if h.nval > 1 {
            format!("x{}", h.nval)
        } else {
            String::new()
        }
    );
    if total < want {
        return Err(TokenError {
            offset: b.len() as u64,
            reason: format!(
                "too few values: the file ends after {total} values, the header declares {want} ({dims}); is it truncated?"
            ),
        });
    }
    if total > want {
        // the first value past the declared count
        let mut seen = 0u64;
        let mut off = b.len();
        for (k, &(a, z)) in ranges.iter().enumerate() {
            if seen + counts[k] as u64 > want {
                off = a + token_offset(&b[a..z], want - seen).unwrap_or(0);
                break;
            }
            seen += counts[k] as u64;
        }
        return Err(TokenError {
            offset: off as u64,
            reason: format!(
                "too many values: the file holds {total}, the header declares {want} ({dims}); this is value {}",
                want + 1
            ),
        });
    }
    let parts = split_lengths(out, &counts);
    let tasks: Vec<((usize, usize), &mut [T])> = ranges.into_iter().zip(parts).collect();
    run_tasks(tasks, opts.threads, |((a, z), part)| {
        let p = parse_values(&b[a..z], a as u64, part)?;
        debug_assert_eq!(p.values, part.len());
        Ok(())
    })
}

/// The first token of `b[start..]` that does not parse, as an error.
fn first_bad_token<T: CubeFloat>(b: &[u8], start: usize) -> Result<(), TokenError> {
    let mut scratch = vec![T::default(); 4096];
    let mut pos = start;
    loop {
        let p = parse_values(&b[pos..], pos as u64, &mut scratch)?;
        if p.values < scratch.len() {
            return Ok(());
        }
        pos += p.end;
    }
}

/// Reads the values of a cube whose bytes are `b` and header `h` into `out`
/// (`h.value_count()` values, C order: x slowest, then y, z, and the values of a point).
pub fn read_values<T: CubeFloat>(
    b: &[u8],
    h: &Header,
    out: &mut [T],
    opts: &ReadOptions,
) -> Result<ReadStats, CubeError> {
    if out.len() as u64 != h.value_count() {
        return Err(CubeError::Invalid(format!(
            "output holds {} values, the cube has {}",
            out.len(),
            h.value_count()
        )));
    }
    let threads = opts.threads.max(1);
    let slabs = if opts.slabs == 0 {
        threads * 4
    } else {
        opts.slabs
    };
    let opts = ReadOptions {
        threads,
        slabs,
        fixed: opts.fixed,
    };
    if opts.fixed {
        if let Some(lay) = detect_layout(b, h) {
            if read_fixed(b, h, lay, out, &opts, slabs).is_ok() {
                let rows = h.shape[0] * h.shape[1];
                return Ok(ReadStats {
                    fixed: Some(lay),
                    slabs: slabs.clamp(1, rows.max(1)),
                    threads,
                    file_bytes: b.len() as u64,
                });
            }
        }
    }
    read_counting(b, h, out, &opts, slabs)?;
    Ok(ReadStats {
        fixed: None,
        slabs,
        threads,
        file_bytes: b.len() as u64,
    })
}

/// A cube file mapped read-only with its header parsed.
pub struct CubeFile {
    map: Option<memmap2::Mmap>,
    path: std::path::PathBuf,
    /// The parsed header.
    pub header: Header,
}

impl CubeFile {
    /// Opens and maps `path` and parses its header.
    pub fn open(path: &Path) -> Result<CubeFile, CubeError> {
        let io = |source| CubeError::Io {
            path: path.to_path_buf(),
            source,
        };
        // opened through molsift's I/O counters: the map counts as one MMAPS
        let f = molsift_iostats::CountedFile::open(path).map_err(io)?;
        let len = f.metadata().map_err(io)?.len();
        // an empty file cannot be mapped; its header error says what is missing
        let map = if len == 0 {
            None
        } else {
            // SAFETY: the map is only read. A file truncated by another process while it is
            // read faults (SIGBUS), the usual contract of reading by mmap (crate README).
            Some(unsafe { f.map() }.map_err(io)?)
        };
        let bytes: &[u8] = map.as_deref().unwrap_or(&[]);
        let header = parse_header(bytes, path)?;
        Ok(CubeFile {
            map,
            path: path.to_path_buf(),
            header,
        })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads all values into `out` (see [`read_values`]); errors name the file and line.
    pub fn read_into<T: CubeFloat>(
        &self,
        out: &mut [T],
        opts: &ReadOptions,
    ) -> Result<ReadStats, CubeError> {
        read_values(self.bytes(), &self.header, out, opts)
            .map_err(|e| e.located(&self.path, Some(self.bytes())))
    }

    /// Reads all values into a new vector.
    pub fn read<T: CubeFloat>(&self, opts: &ReadOptions) -> Result<(Vec<T>, ReadStats), CubeError> {
        let mut out = vec![T::default(); self.header.value_count() as usize];
        let stats = self.read_into(&mut out, opts)?;
        Ok((out, stats))
    }
}

/// Parses exactly `out.len()` values from a piece of a value area (`base`: its offset in the
/// file); only whitespace may follow them. The MPI path reads each rank's bytes itself and
/// parses them with this.
pub fn parse_block<T: CubeFloat>(b: &[u8], base: u64, out: &mut [T]) -> Result<(), CubeError> {
    let p = parse_values(b, base, out)?;
    if p.values < out.len() {
        return Err(TokenError {
            offset: base + b.len() as u64,
            reason: format!(
                "too few values: {} where {} were expected",
                p.values,
                out.len()
            ),
        }
        .into());
    }
    if let Some(extra) = b[p.end..].iter().position(|&c| !is_ws(c)) {
        return Err(TokenError {
            offset: base + (p.end + extra) as u64,
            reason: format!("too many values: more than the {} expected here", out.len()),
        }
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod first_row_tests {
    use super::*;

    /// A 1x2x3 grid with one atom; `values` is the value area as written.
    fn cube(values: &str) -> (Vec<u8>, Header) {
        let text = format!(
            "comment\ncomment\n    1    0.0    0.0    0.0\n    1    1.0    0.0    0.0\n    2    0.0    1.0    0.0\n    3    0.0    0.0    1.0\n    1    1.0    0.0    0.0    0.0\n{values}"
        );
        let b = text.into_bytes();
        let h = parse_header(&b, Path::new("t.cube")).unwrap();
        (b, h)
    }

    #[test]
    fn first_row_as_the_layout_test_finds_it() {
        let row = |v: &str| {
            let (b, h) = cube(v);
            first_row(&b, &h)
        };
        // rows of 3 values ending lines: 12 bytes each, the layout fixed
        let (b, h) = cube("1 2 3\n4 5 6\n");
        assert_eq!(
            first_row(&b, &h),
            Some(FirstRow {
                values: 3,
                row_bytes: 6
            })
        );
        assert!(detect_layout(&b, &h).is_some());
        // the row's last line holds a value of the next row: free-form
        let free = row("1 2 3 4\n5 6\n").unwrap();
        assert_eq!((free.values, free.row_bytes), (3, 0));
        // the file ends within the first row, or before any value
        assert_eq!(row("1 2").map(|r| (r.values, r.row_bytes)), Some((2, 0)));
        assert_eq!(row("  \n"), None);
        // cut short after a whole first row: the row is found, the layout is not fixed
        let (b, h) = cube("1 2 3\n4 5");
        assert_eq!(first_row(&b, &h).map(|r| r.row_bytes), Some(6));
        assert!(detect_layout(&b, &h).is_none());
    }
}
