//! Owns fast whole-file counting: [`count_records`] (records at memory
//! speed, one thread per slab, by memory map, positioned reads or reads kept in flight by
//! io_uring, buffered or direct), [`count_newlines`] and [`slab_first_lines`].

use crate::access::{add_reason, Opened, ReadMethod};
use crate::ahead::{AheadOptions, ReadAhead, ALIGN, HEAD};
use crate::error::IoError;
use crate::record::{is_sdf_terminator, is_sdf_ws, line_at_is_record, SDF_TERM_MAX};
use crate::scan::{scan_line_starts, LineScan};
use crate::slab::{split_slabs, RecordKind};
use crate::stream::{count_stream, Compression};
use molsift_iostats::CountedFile;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// What [`count_records`] found and how much it read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CountReport {
    /// Records in the file, counted exactly as the readers yield them.
    pub records: u64,
    /// File size in bytes.
    pub bytes: u64,
    /// `\n` bytes in the file.
    pub newlines: u64,
    /// Bytes read: by read calls (direct reads in whole 4 KiB blocks), or touched through the
    /// memory map.
    pub bytes_read: u64,
    /// Read calls made (0 when the whole file was counted through a memory map).
    pub read_calls: u64,
    /// How the file was read: `mmap`, `pread`, `uring` or `direct`, or `stream` (a gzip or
    /// zstd file, decoded from its start).
    pub io: &'static str,
    /// Why that way (what `auto` saw, a fallback and its cause); empty when as asked.
    pub io_reason: String,
}

/// Options for [`count_records_with`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountOptions {
    /// Threads, one per slab; 0 is taken as 1.
    pub threads: usize,
    /// The line at offset 0 is a header, not a record (Line kind).
    pub skip_header: bool,
    /// How to read the file.
    pub method: ReadMethod,
    /// Bytes per read call (all but `Mmap`).
    pub chunk_size: usize,
    /// Reads in flight per thread (`Uring`, `Direct`), chunks advised ahead (`Pread`).
    pub depth: usize,
}

impl Default for CountOptions {
    fn default() -> Self {
        CountOptions {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            skip_header: false,
            method: ReadMethod::Auto,
            chunk_size: 1 << 20,
            depth: 8,
        }
    }
}

/// Number of records in the whole file, counted with `threads` threads
/// (one slab each), read as [`ReadMethod::Auto`] decides. Gives exactly the
/// number of records that [`SlabReader`](crate::SlabReader)s over any slabs
/// of the file yield together.
///
/// A gzip or zstd file (told by its first bytes) cannot be split: it is
/// decoded once with a [`StreamReader`](crate::StreamReader), and the report's
/// `bytes` and `newlines` are then those of the decompressed stream.
pub fn count_records(
    path: &Path,
    kind: RecordKind,
    threads: usize,
    skip_header: bool,
) -> Result<CountReport, IoError> {
    let opts = CountOptions {
        threads,
        skip_header,
        ..CountOptions::default()
    };
    count_records_with(path, kind, &opts)
}

/// [`count_records`] with a choice of read method, read size and reads in flight.
pub fn count_records_with(
    path: &Path,
    kind: RecordKind,
    opts: &CountOptions,
) -> Result<CountReport, IoError> {
    if opts.skip_header && kind == RecordKind::Sdf {
        let reason = "skip_header applies to line files only, not SDF".to_string();
        return Err(IoError::Options {
            path: path.to_path_buf(),
            reason,
        });
    }
    let input = Input::open(path, opts.method, opts.depth)?;
    let len = input.opened.len;
    if len == 0 {
        return Ok(CountReport {
            io: input.opened.how.name(),
            io_reason: input.opened.reason,
            ..CountReport::default()
        });
    }
    let mut buf = [0u8; 4];
    let mut probe = Tally::default();
    let head = match &input.opened.map {
        Some(m) => &m[..m.len().min(4)],
        None => {
            let n = input.read_at(&mut buf, 0, &mut probe)?;
            &buf[..n]
        }
    };
    if Compression::from_magic(head) != Compression::None {
        let mut report = count_stream(path, kind, opts.skip_header)?;
        report.io = "stream";
        report.io_reason = "compressed: decoded from its start".into();
        return Ok(report);
    }
    // a slab a thread, none empty, and never more than MAX_SLABS (`-j 1000000000` listed a
    // billion slabs: 16 GB)
    let n = opts
        .threads
        .clamp(1, MAX_SLABS.min(usize::try_from(len).unwrap_or(usize::MAX)));
    let slabs = match input.opened.how {
        // Slabs on block boundaries, so that no block is read by two direct readers.
        ReadMethod::Direct => aligned_slabs(len, n),
        _ => split_slabs(len, n),
    };
    let chunk = opts.chunk_size.max(1);
    let tallies: Vec<Tally> = run_parallel(&slabs, |slab| match kind {
        RecordKind::Line => input.line_slab(slab, chunk),
        RecordKind::Sdf => input.sdf_slab(slab, chunk),
    })?;
    let mut report = CountReport {
        bytes: len,
        io: input.opened.how.name(),
        io_reason: input.opened.reason.clone(),
        ..CountReport::default()
    };
    if let Some(why) = tallies.iter().find_map(|t| t.fallback.as_ref()) {
        let n = tallies.iter().filter(|t| t.fallback.is_some()).count();
        let why = format!("{n} of {} slabs: {why}", tallies.len());
        add_reason(&mut report.io_reason, &why);
    }
    for t in &tallies {
        report.records += t.records;
        report.newlines += t.newlines;
        report.bytes_read += t.bytes_read;
        report.read_calls += t.read_calls;
    }
    let mut extra = probe;
    match kind {
        RecordKind::Line => {
            // Slabs count newlines at [start-1, end-1); add the last byte.
            if input.byte_at(len - 1, &mut extra)? == b'\n' {
                report.newlines += 1;
            }
            if !opts.skip_header && input.line_is_record(0, &mut extra)? {
                report.records += 1;
            }
        }
        RecordKind::Sdf => {
            let tail = tallies.iter().filter_map(|t| t.last_end).max().unwrap_or(0);
            if input.has_non_ws(tail, &mut extra)? {
                report.records += 1;
            }
        }
    }
    report.bytes_read += extra.bytes_read;
    report.read_calls += extra.read_calls;
    Ok(report)
}

/// The most slabs a count cuts a file into, whatever its threads (16 MiB of ranges; more
/// threads than this have nothing more to share).
pub const MAX_SLABS: usize = 1 << 20;

/// `n` slabs of a file of `len` bytes as [`split_slabs`] cuts them, each boundary moved down
/// to a multiple of the direct-read block size.
fn aligned_slabs(len: u64, n: usize) -> Vec<Range<u64>> {
    let cut = |x: u64| if x == len { x } else { x - x % ALIGN as u64 };
    split_slabs(len, n)
        .into_iter()
        .map(|r| cut(r.start)..cut(r.end))
        .collect()
}

/// Number of `\n` bytes in `range` of the file (clamped to its size).
pub fn count_newlines(path: &Path, range: Range<u64>) -> Result<u64, IoError> {
    let input = Input::open(path, ReadMethod::Mmap, 1)?;
    input.newlines(range)
}

/// For slabs given in ascending order of start, the number of `\n` bytes
/// before each slab's start: add it to a [`SlabReader`](crate::SlabReader)'s
/// record `line` to get absolute line numbers. Reads the file once, in
/// parallel.
pub fn slab_first_lines(
    path: &Path,
    slabs: &[Range<u64>],
    threads: usize,
) -> Result<Vec<u64>, IoError> {
    let input = Input::open(path, ReadMethod::Mmap, 1)?;
    let mut gaps = Vec::with_capacity(slabs.len());
    let mut prev = 0;
    for s in slabs {
        let start = s.start.max(prev);
        gaps.push(prev..start);
        prev = start;
    }
    let counts = run_parallel_n(&gaps, threads, |g| input.newlines(g))?;
    let mut acc = 0;
    Ok(counts
        .into_iter()
        .map(|c| {
            acc += c;
            acc
        })
        .collect())
}

/// Runs `f` on every slab, one thread each, and collects the results in order.
fn run_parallel<T: Send, F>(slabs: &[Range<u64>], f: F) -> Result<Vec<T>, IoError>
where
    F: Fn(Range<u64>) -> Result<T, IoError> + Sync,
{
    run_parallel_n(slabs, slabs.len(), f)
}

/// Runs `f` on every range with at most `threads` threads, in order: the task engine
/// (`molsift_tasks::map`; threads the system will not start are not an error).
fn run_parallel_n<T: Send, F>(items: &[Range<u64>], threads: usize, f: F) -> Result<Vec<T>, IoError>
where
    F: Fn(Range<u64>) -> Result<T, IoError> + Sync,
{
    molsift_tasks::map(threads, items.len(), |i| f(items[i].clone()))
        .into_iter()
        .collect()
}

/// What one slab's count found.
#[derive(Debug, Default)]
struct Tally {
    records: u64,
    newlines: u64,
    bytes_read: u64,
    read_calls: u64,
    /// Sdf: offset just past the slab's last `$$$$` line.
    last_end: Option<u64>,
    /// Why this slab was read by pread although io_uring was asked, if it was.
    fallback: Option<String>,
}

/// The file being counted: mapped, or read in chunks ([`ReadAhead`]).
struct Input {
    /// The file as opened: its size, its map (`Mmap`), how the slabs are read (`how`, never
    /// `Auto`) and why, and the files for it (`file`: buffered, for small reads).
    opened: Opened,
    path: PathBuf,
    depth: usize,
}

impl Input {
    fn open(path: &Path, method: ReadMethod, depth: usize) -> Result<Input, IoError> {
        Ok(Input {
            opened: Opened::open(path, method, None, ReadMethod::Mmap)?,
            path: path.to_path_buf(),
            depth,
        })
    }

    /// A reader of `range` in chunks of `chunk` bytes, as `how` says.
    fn read_ahead(
        &self,
        range: Range<u64>,
        chunk: usize,
    ) -> Result<ReadAhead<&CountedFile>, IoError> {
        let opts = AheadOptions {
            chunk,
            depth: self.depth,
            uring: self.opened.uring,
            direct: self.opened.how == ReadMethod::Direct,
        };
        ReadAhead::new(
            self.opened.reading_file(),
            &self.path,
            self.opened.len,
            range,
            opts,
        )
    }

    /// Fills `buf` from `offset`, stopping early only at the end of the file.
    fn read_at(&self, buf: &mut [u8], offset: u64, t: &mut Tally) -> Result<usize, IoError> {
        let mut got = 0;
        while got < buf.len() {
            let at = offset + got as u64;
            match self.opened.file.read_at(&mut buf[got..], at) {
                Ok(0) => break,
                Ok(n) => {
                    got += n;
                    t.bytes_read += n as u64;
                    t.read_calls += 1;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(IoError::Read {
                        path: self.path.clone(),
                        offset: at,
                        source,
                    })
                }
            }
        }
        Ok(got)
    }

    fn byte_at(&self, offset: u64, t: &mut Tally) -> Result<u8, IoError> {
        if let Some(m) = &self.opened.map {
            return Ok(m[offset as usize]);
        }
        let mut b = [0u8];
        self.read_at(&mut b, offset, t)?;
        Ok(b[0])
    }

    /// Whether the line starting at `offset` is a record line (Line kind).
    fn line_is_record(&self, offset: u64, t: &mut Tally) -> Result<bool, IoError> {
        if let Some(m) = &self.opened.map {
            return Ok(line_at_is_record(&m[offset as usize..]).unwrap_or(false));
        }
        let mut buf = [0u8; 256];
        let mut at = offset;
        loop {
            let n = self.read_at(&mut buf, at, t)?;
            if let Some(r) = line_at_is_record(&buf[..n]) {
                return Ok(r);
            }
            if n < buf.len() {
                return Ok(false);
            }
            at += n as u64;
        }
    }

    /// Whether `[from, len)` holds a byte other than SDF whitespace.
    fn has_non_ws(&self, from: u64, t: &mut Tally) -> Result<bool, IoError> {
        if let Some(m) = &self.opened.map {
            let rest = &m[from as usize..];
            t.bytes_read += rest
                .iter()
                .position(|&b| !is_sdf_ws(b))
                .unwrap_or(rest.len()) as u64;
            return Ok(rest.iter().any(|&b| !is_sdf_ws(b)));
        }
        let mut buf = vec![0u8; 64 << 10];
        let mut at = from;
        while at < self.opened.len {
            let n = self.read_at(&mut buf, at, t)?;
            if n == 0 {
                break;
            }
            if buf[..n].iter().any(|&b| !is_sdf_ws(b)) {
                return Ok(true);
            }
            at += n as u64;
        }
        Ok(false)
    }

    fn newlines(&self, range: Range<u64>) -> Result<u64, IoError> {
        let (a, b) = (
            range.start.min(self.opened.len),
            range.end.min(self.opened.len),
        );
        if a >= b {
            return Ok(0);
        }
        if let Some(m) = &self.opened.map {
            return Ok(memchr::memchr_iter(b'\n', &m[a as usize..b as usize]).count() as u64);
        }
        let mut buf = vec![0u8; (1 << 20).min((b - a) as usize)];
        let (mut at, mut n_total, mut t) = (a, 0u64, Tally::default());
        while at < b {
            let want = buf.len().min((b - at) as usize);
            let n = self.read_at(&mut buf[..want], at, &mut t)?;
            if n == 0 {
                break;
            }
            n_total += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
            at += n as u64;
        }
        Ok(n_total)
    }

    /// Line kind: record starts at offsets in `[max(start,1), end)` and
    /// newlines at `[start-1, end-1)`. The line at offset 0 is added by the caller.
    fn line_slab(&self, slab: Range<u64>, chunk: usize) -> Result<Tally, IoError> {
        let mut t = Tally::default();
        if slab.start >= slab.end {
            return Ok(t);
        }
        if let Some(m) = &self.opened.map {
            let a = slab.start.saturating_sub(1) as usize;
            let seg = &m[a..slab.end as usize];
            let mut slow =
                |j: usize| Ok::<_, IoError>(line_at_is_record(&m[a + j..]).unwrap_or(false));
            let scan = scan_line_starts(seg, &mut slow)?;
            t.records = scan.starts;
            t.newlines = scan.newlines;
            t.bytes_read = seg.len() as u64;
            return Ok(t);
        }
        self.each_view(slab, chunk, &mut t, |view, a, _, t| {
            let mut extra = Tally::default();
            let mut slow = |j: usize| match line_at_is_record(&view[j..]) {
                Some(r) => Ok(r),
                None => self.line_is_record(a + view.len() as u64, &mut extra),
            };
            let scan: LineScan = scan_line_starts(view, &mut slow)?;
            t.records += scan.starts;
            t.newlines += scan.newlines;
            t.bytes_read += extra.bytes_read;
            t.read_calls += extra.read_calls;
            Ok(())
        })?;
        Ok(t)
    }

    /// Reads `slab` in chunks and calls `scan(view, view_at, c..ce, tally)` on each chunk
    /// `[c, ce)`, where `view` holds the file's bytes `[max(c, 1) - 1, ce)` from `view_at`: the
    /// byte before the chunk, then the chunk. Adds the reads to the tally.
    fn each_view(
        &self,
        slab: Range<u64>,
        chunk: usize,
        t: &mut Tally,
        mut scan: impl FnMut(&[u8], u64, Range<u64>, &mut Tally) -> Result<(), IoError>,
    ) -> Result<(), IoError> {
        let mut prev = match slab.start {
            0 => None,
            s => Some(self.byte_at(s - 1, t)?),
        };
        let mut ahead = self.read_ahead(slab, chunk)?;
        while let Some(c) = ahead.next_chunk()? {
            if c.len == 0 {
                continue;
            }
            let (view, at) = match prev {
                Some(p) => {
                    c.buf[HEAD - 1] = p;
                    (&c.buf[HEAD - 1..HEAD + c.len], c.offset - 1)
                }
                None => (&c.buf[HEAD..HEAD + c.len], c.offset),
            };
            scan(view, at, c.offset..c.offset + c.len as u64, t)?;
            prev = view.last().copied();
        }
        t.bytes_read += ahead.bytes_read;
        t.read_calls += ahead.read_calls;
        t.fallback = ahead.fallback.take();
        Ok(())
    }

    /// Sdf kind: `$$$$` lines starting in the slab, and newlines in it.
    fn sdf_slab(&self, slab: Range<u64>, chunk: usize) -> Result<Tally, IoError> {
        let mut t = Tally::default();
        if slab.start >= slab.end {
            return Ok(t);
        }
        if let Some(m) = &self.opened.map {
            let mut extra = Tally::default();
            sdf_terminators(m, 0, slab.clone(), self.opened.len, &mut t, &mut |x| {
                self.sdf_terminator_at(x, &mut extra)
            })?;
            t.newlines = memchr::memchr_iter(b'\n', &m[slab.start as usize..slab.end as usize])
                .count() as u64;
            t.bytes_read = slab.end - slab.start;
            return Ok(t);
        }
        let mut extra = Tally::default();
        self.each_view(slab, chunk, &mut t, |view, a, range, t| {
            let own = &view[(range.start - a) as usize..];
            sdf_terminators(view, a, range, self.opened.len, t, &mut |x| {
                self.sdf_terminator_at(x, &mut extra)
            })?;
            t.newlines += memchr::memchr_iter(b'\n', own).count() as u64;
            Ok(())
        })?;
        t.bytes_read += extra.bytes_read;
        t.read_calls += extra.read_calls;
        Ok(t)
    }

    /// Whether a `$$$$` terminator line starts at `x` (a line start), by a small read; the
    /// offset just past it (its newline included) if so.
    fn sdf_terminator_at(&self, x: u64, t: &mut Tally) -> Result<Option<u64>, IoError> {
        let mut buf = [0u8; SDF_TERM_MAX + 1];
        let n = self.read_at(&mut buf, x, t)?;
        let line_end = match memchr::memchr(b'\n', &buf[..n]) {
            Some(i) => i,
            None if x + n as u64 == self.opened.len => n,
            None => return Ok(None),
        };
        Ok(is_sdf_terminator(&buf[..line_end])
            .then(|| (x + line_end as u64 + 1).min(self.opened.len)))
    }
}

/// Counts `$$$$` terminator lines starting in `range`, where `view` holds the file's bytes
/// from `view_at`, covering `[range.start-1, range.end)` (clamped to the file) and perhaps
/// more. A candidate line the view ends too early to decide is decided by `resolve(x)` (the
/// offset past the terminator line starting at `x`, or `None` if it is not one).
fn sdf_terminators(
    view: &[u8],
    view_at: u64,
    range: Range<u64>,
    file_len: u64,
    t: &mut Tally,
    resolve: &mut dyn FnMut(u64) -> Result<Option<u64>, IoError>,
) -> Result<(), IoError> {
    let view_end = view_at + view.len() as u64;
    let rel = |x: u64| (x - view_at) as usize;
    let line_start = |x: u64| x == 0 || view[rel(x - 1)] == b'\n';
    let found = |t: &mut Tally, end: u64| {
        t.records += 1;
        t.last_end = Some(end);
    };
    let hay_end = (range.end + 3).min(view_end);
    let hay = &view[rel(range.start)..rel(hay_end)];
    for hit in memchr::memmem::find_iter(hay, b"$$$$") {
        let x = range.start + hit as u64;
        if x >= range.end {
            break;
        }
        if !line_start(x) {
            continue;
        }
        let lim = (x + SDF_TERM_MAX as u64 + 1).min(view_end);
        let line_end = match memchr::memchr(b'\n', &view[rel(x)..rel(lim)]) {
            Some(i) => x + i as u64,
            None if lim == file_len => file_len,
            None if lim == view_end => {
                // The view ends inside the candidate line.
                if let Some(end) = resolve(x)? {
                    found(t, end);
                }
                continue;
            }
            None => continue,
        };
        if is_sdf_terminator(&view[rel(x)..rel(line_end)]) {
            found(t, (line_end + 1).min(file_len));
        }
    }
    // Line starts within 3 bytes of the view's end, which memmem could not see whole.
    if view_end < range.end + 3 && view_end < file_len {
        for x in range.start.max(view_end.saturating_sub(3))..range.end.min(view_end) {
            if line_start(x) && view[rel(x)..].iter().all(|&b| b == b'$') {
                if let Some(end) = resolve(x)? {
                    found(t, end);
                }
            }
        }
    }
    Ok(())
}
#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    /// The records every method counts, checked equal, with every chunk size and depth.
    fn both(path: &Path, kind: RecordKind, threads: usize, skip: bool) -> u64 {
        let mut seen = Vec::new();
        for method in ReadMethod::ALL {
            for chunk in [1, 7, 4096, 1 << 20] {
                for depth in [1, 3] {
                    let opts = CountOptions {
                        threads,
                        skip_header: skip,
                        method,
                        chunk_size: chunk,
                        depth,
                    };
                    let r = count_records_with(path, kind, &opts).unwrap();
                    if method != ReadMethod::Auto && r.io_reason.is_empty() {
                        assert_eq!(r.io, method.name());
                    }
                    seen.push((r.records, r.newlines, method, chunk));
                }
            }
        }
        assert!(
            seen.windows(2)
                .all(|w| (w[0].0, w[0].1) == (w[1].0, w[1].1)),
            "{seen:?}"
        );
        seen[0].0
    }

    #[test]
    fn lines() {
        let f = file(b"smiles\nC\n\n  \n #x\n  N\r\nO");
        for threads in 1..10 {
            assert_eq!(both(f.path(), RecordKind::Line, threads, false), 4);
            assert_eq!(both(f.path(), RecordKind::Line, threads, true), 3);
        }
        let r = count_records(f.path(), RecordKind::Line, 3, false).unwrap();
        assert_eq!((r.newlines, r.bytes), (6, 23));
    }

    #[test]
    fn more_threads_than_bytes() {
        // a slab a byte at most: `-j 1000000000` listed a billion slabs (16 GB) for any file
        let f = file(b"C\nN\nO\n");
        for threads in [7, 1_000_000_000, usize::MAX] {
            let r = count_records(f.path(), RecordKind::Line, threads, false).unwrap();
            assert_eq!((r.records, r.newlines), (3, 3));
        }
    }

    #[test]
    fn sdf() {
        let f = file(b"\nA\n$$$$\n$$$$x\n $$$$\nB\n$$$$\r\n\n \n");
        for threads in 1..12 {
            assert_eq!(both(f.path(), RecordKind::Sdf, threads, false), 2);
        }
        let g = file(b"A\n$$$$\nB");
        assert_eq!(both(g.path(), RecordKind::Sdf, 3, false), 2);
        let h = file(b"A\n$$$$");
        assert_eq!(both(h.path(), RecordKind::Sdf, 3, false), 1);
    }

    #[test]
    fn newlines_and_first_lines() {
        let f = file(b"a\nb\n\nc\n");
        assert_eq!(count_newlines(f.path(), 0..100).unwrap(), 4);
        assert_eq!(count_newlines(f.path(), 2..5).unwrap(), 2);
        let slabs = split_slabs(7, 3);
        assert_eq!(
            slab_first_lines(f.path(), &slabs, 2).unwrap(),
            vec![0, 1, 3]
        );
    }

    #[test]
    fn compressed_files_are_decoded() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"smiles\nC\n\nCC\n").unwrap();
        let f = file(&gz.finish().unwrap());
        let r = count_records(f.path(), RecordKind::Line, 4, true).unwrap();
        assert_eq!((r.records, r.bytes, r.newlines), (2, 13, 4));
        let z = file(&zstd::encode_all(&b"A\n$$$$\nB\n"[..], 1).unwrap());
        assert_eq!(
            count_records(z.path(), RecordKind::Sdf, 2, false)
                .unwrap()
                .records,
            2
        );
    }

    #[test]
    fn empty_file() {
        let f = file(b"");
        assert_eq!(
            count_records(f.path(), RecordKind::Line, 4, false)
                .unwrap()
                .records,
            0
        );
        assert_eq!(count_newlines(f.path(), 0..10).unwrap(), 0);
    }
}
