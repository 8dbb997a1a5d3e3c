//! Owns [`SlabReader`]: reading the records that start inside one slab of a plain file,
//! asking for at most the read buffer's size inside the slab and for small steps past its end,
//! by positioned reads (`pread`), from a memory map, or from reads kept in flight (io_uring,
//! buffered or direct), as [`ReaderOptions::io`] says.

use crate::access::{add_reason, Opened, ReadMethod};
use crate::ahead::{AheadOptions, ReadAhead};
use crate::counters::ReadCounters;
use crate::error::IoError;
use crate::framing::{Engine, Framer, Start};
use crate::options::ReaderOptions;
use crate::record::Record;
use crate::slab::RecordKind;
use crate::window::{Source, Window};
use memmap2::Mmap;
use molsift_iostats::CountedFile;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// First read size past the slab's end, to finish its last record.
const TAIL_FIRST: usize = 256;
/// Largest read size past the slab's end.
const TAIL_MAX: usize = 4096;
/// Reads in flight for the io_uring sources.
const AHEAD_DEPTH: usize = 4;

/// Positioned reads of one file for one slab.
pub(crate) struct PreadSource {
    file: Arc<CountedFile>,
    path: PathBuf,
    pos: u64,
    slab_end: u64,
    buffer_size: usize,
    tail: usize,
}

impl PreadSource {
    /// Bytes to ask for next: up to a buffer inside the slab, growing steps past its end.
    fn want(&mut self, room: usize) -> usize {
        let want = if self.pos < self.slab_end {
            (self.slab_end - self.pos).min(self.buffer_size as u64) as usize
        } else {
            let t = self.tail.min(self.buffer_size);
            self.tail = (self.tail * 2).min(TAIL_MAX);
            t
        };
        want.min(room)
    }
}

impl Source for PreadSource {
    fn read(&mut self, dst: &mut [u8], c: &mut ReadCounters) -> Result<usize, IoError> {
        let want = self.want(dst.len());
        loop {
            match self.file.read_at(&mut dst[..want], self.pos) {
                Ok(n) => {
                    self.pos += n as u64;
                    c.bytes_read += n as u64;
                    c.decompressed_bytes += n as u64;
                    c.read_calls += 1;
                    return Ok(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(IoError::Read {
                        path: self.path.clone(),
                        offset: self.pos,
                        source,
                    })
                }
            }
        }
    }
}

/// Where a slab reader's bytes come from.
pub(crate) enum SlabSource {
    /// Positioned reads.
    Pread(PreadSource),
    /// Copies out of the mapped file (no read calls), in the same steps as `Pread`.
    Map { map: Mmap, steps: PreadSource },
    /// The slab read ahead in chunks (io_uring, buffered or direct); past its end, `steps`.
    Ahead {
        ahead: Box<ReadAhead<Arc<CountedFile>>>,
        /// Bytes of the held chunk already handed out.
        used: usize,
        /// Counted reads of `ahead` so far.
        seen: (u64, u64),
        steps: PreadSource,
    },
}

impl Source for SlabSource {
    fn read(&mut self, dst: &mut [u8], c: &mut ReadCounters) -> Result<usize, IoError> {
        match self {
            SlabSource::Pread(p) => p.read(dst, c),
            SlabSource::Map { map, steps } => {
                let want = steps.want(dst.len());
                let at = (steps.pos as usize).min(map.len());
                let n = want.min(map.len() - at);
                dst[..n].copy_from_slice(&map[at..at + n]);
                steps.pos += n as u64;
                c.bytes_read += n as u64;
                c.decompressed_bytes += n as u64;
                Ok(n)
            }
            SlabSource::Ahead {
                ahead,
                used,
                seen,
                steps,
            } => {
                if steps.pos >= steps.slab_end {
                    return steps.read(dst, c);
                }
                if *used == ahead.held_data().len() {
                    if ahead.next_chunk()?.is_none() {
                        // The file ended inside the slab (it shrank): as pread would see.
                        steps.slab_end = steps.pos;
                        return steps.read(dst, c);
                    }
                    *used = 0;
                    c.bytes_read += ahead.bytes_read - seen.0;
                    c.read_calls += ahead.read_calls - seen.1;
                    *seen = (ahead.bytes_read, ahead.read_calls);
                }
                let data = &ahead.held_data()[*used..];
                let n = data.len().min(dst.len());
                dst[..n].copy_from_slice(&data[..n]);
                *used += n;
                steps.pos += n as u64;
                c.decompressed_bytes += n as u64;
                Ok(n)
            }
        }
    }
}

/// Reads the records that *start* inside `slab`, a byte range of a plain
/// (uncompressed) file; it reads one byte before the slab (a few more for
/// SDF) to find its first record and past its end only to finish its last.
///
/// Records' `line` numbers count from the slab's start; add
/// [`count_newlines`](crate::count_newlines)`(path, 0..slab.start)` to make
/// them absolute.
pub struct SlabReader {
    engine: Engine<SlabSource>,
    /// How the slab is read: `Pread`, `Mmap`, `Uring` or `Direct`.
    how: ReadMethod,
    /// Why (what `auto` saw, a fallback and its cause); empty when as asked.
    reason: String,
}

impl SlabReader {
    /// Opens `path` for reading the records of `slab`.
    pub fn open(
        path: &Path,
        kind: RecordKind,
        slab: Range<u64>,
        opts: ReaderOptions,
    ) -> Result<SlabReader, IoError> {
        opts.check(kind).map_err(|reason| IoError::Options {
            path: path.to_path_buf(),
            reason,
        })?;
        let from = Framer::read_from(kind, slab.start);
        // Parsing, not reading, sets a reader's pace: a cached slab is read by pread, whose
        // copy costs nothing next to the parse; a cold one as the counter reads it.
        let mut opened = Opened::open(path, opts.io, Some(from..slab.end), ReadMethod::Pread)?;
        let (how, mut reason) = (opened.how, std::mem::take(&mut opened.reason));
        let direct_file = opened.direct.take();
        let map = opened.map.take();
        let file = Arc::new(opened.file);
        let steps = PreadSource {
            file: Arc::clone(&file),
            path: path.to_path_buf(),
            pos: from,
            slab_end: slab.end,
            buffer_size: opts.buffer_size,
            tail: TAIL_FIRST,
        };
        let src = match (how, map) {
            (ReadMethod::Mmap, Some(map)) => SlabSource::Map { map, steps },
            (ReadMethod::Uring | ReadMethod::Direct, _) => {
                let direct = how == ReadMethod::Direct;
                let ahead_opts = AheadOptions {
                    chunk: opts.buffer_size,
                    depth: AHEAD_DEPTH,
                    uring: opened.uring,
                    direct,
                };
                let reading = match (direct, direct_file) {
                    (true, Some(d)) => Arc::new(d),
                    _ => file,
                };
                let mut ahead =
                    ReadAhead::new(reading, path, opened.len, from..slab.end, ahead_opts)?;
                if let Some(why) = ahead.fallback.take() {
                    add_reason(&mut reason, &why);
                }
                SlabSource::Ahead {
                    ahead: Box::new(ahead),
                    used: 0,
                    seen: (0, 0),
                    steps,
                }
            }
            _ => {
                // SAFETY: advice only, on an open descriptor.
                unsafe {
                    libc::posix_fadvise(
                        std::os::fd::AsRawFd::as_raw_fd(&*file),
                        from as i64,
                        slab.end.saturating_sub(from) as i64,
                        libc::POSIX_FADV_SEQUENTIAL,
                    )
                };
                SlabSource::Pread(steps)
            }
        };
        // No need for a buffer larger than the bytes this slab will read.
        let span = slab
            .end
            .saturating_sub(from)
            .saturating_add(TAIL_MAX as u64);
        let capacity = (opts.buffer_size as u64).min(span) as usize;
        let limit = opts
            .buffer_size
            .max(opts.max_record_bytes.saturating_add(1));
        let window = Window::new(src, from, capacity, limit);
        let start = Start {
            slab_start: slab.start,
            slab_end: slab.end,
        };
        let framer = Framer::new(kind, start, opts.skip_header, opts.max_record_bytes);
        Ok(SlabReader {
            engine: Engine::new(window, framer),
            how,
            reason,
        })
    }

    /// How the slab is read (`pread`, `mmap`, `uring` or `direct`) and why, when `auto`
    /// decided or a fallback was taken.
    pub fn read_method(&self) -> (ReadMethod, &str) {
        (self.how, &self.reason)
    }

    /// The next record of the slab, or `None` when the slab has no more.
    pub fn next_record(&mut self) -> Result<Option<Record<'_>>, IoError> {
        self.engine.next_record()
    }

    /// What this reader has read and yielded so far.
    pub fn counters(&self) -> &ReadCounters {
        &self.engine.window.counters
    }

    /// Current size of the read buffer in bytes. It exceeds
    /// `buffer_size` only while a record longer than the buffer but within
    /// `max_record_bytes` is read, and never exceeds
    /// `max(buffer_size, max_record_bytes + 1, 64)`.
    pub fn buffer_capacity(&self) -> usize {
        self.engine.window.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn reads_a_file_slab_by_slab() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b"C\n#x\nCC\r\n\nCCC").unwrap();
        let len = 15;
        let mut got = Vec::new();
        for slab in crate::split_slabs(len, 4) {
            let opts = ReaderOptions {
                buffer_size: 2,
                ..Default::default()
            };
            let mut r = SlabReader::open(f.path(), RecordKind::Line, slab.clone(), opts).unwrap();
            let first = crate::count_newlines(f.path(), 0..slab.start).unwrap();
            while let Some(rec) = r.next_record().unwrap() {
                got.push((rec.offset, rec.line + first, rec.bytes.to_vec()));
            }
        }
        assert_eq!(
            got,
            vec![
                (0, 0, b"C".to_vec()),
                (5, 2, b"CC".to_vec()),
                (10, 4, b"CCC".to_vec())
            ]
        );
    }

    #[test]
    fn bad_options_name_the_file() {
        let f = tempfile::NamedTempFile::new().unwrap();
        let opts = ReaderOptions {
            buffer_size: 0,
            ..Default::default()
        };
        let err = SlabReader::open(f.path(), RecordKind::Line, 0..1, opts)
            .err()
            .unwrap();
        assert!(err.to_string().contains(&f.path().display().to_string()));
    }
}
