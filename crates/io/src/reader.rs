//! Owns [`SlabReader`]: reading the records that start inside one slab of a
//! plain file with positioned reads (`pread`), asking for at most the read
//! buffer's size inside the slab and for small steps past its end.

use crate::counters::ReadCounters;
use crate::error::IoError;
use crate::framing::{Engine, Framer, Start};
use crate::options::ReaderOptions;
use crate::record::Record;
use crate::slab::RecordKind;
use crate::window::{Source, Window};
use molsift_iostats::CountedFile;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// First read size past the slab's end, to finish its last record.
const TAIL_FIRST: usize = 256;
/// Largest read size past the slab's end.
const TAIL_MAX: usize = 4096;

/// Positioned reads of one file for one slab.
pub(crate) struct PreadSource {
    file: CountedFile,
    path: PathBuf,
    pos: u64,
    slab_end: u64,
    buffer_size: usize,
    tail: usize,
}

impl Source for PreadSource {
    fn read(&mut self, dst: &mut [u8], c: &mut ReadCounters) -> Result<usize, IoError> {
        let want = if self.pos < self.slab_end {
            (self.slab_end - self.pos).min(self.buffer_size as u64) as usize
        } else {
            let t = self.tail.min(self.buffer_size);
            self.tail = (self.tail * 2).min(TAIL_MAX);
            t
        };
        let want = want.min(dst.len());
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

/// Reads the records that *start* inside `slab`, a byte range of a plain
/// (uncompressed) file; it reads one byte before the slab (a few more for
/// SDF) to find its first record and past its end only to finish its last.
///
/// Records' `line` numbers count from the slab's start; add
/// [`count_newlines`](crate::count_newlines)`(path, 0..slab.start)` to make
/// them absolute.
pub struct SlabReader {
    engine: Engine<PreadSource>,
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
        let file = CountedFile::open(path).map_err(|source| IoError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let from = Framer::read_from(kind, slab.start);
        let src = PreadSource {
            file,
            path: path.to_path_buf(),
            pos: from,
            slab_end: slab.end,
            buffer_size: opts.buffer_size,
            tail: TAIL_FIRST,
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
        })
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
