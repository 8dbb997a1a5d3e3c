//! Owns [`StreamReader`]: the same records over input that cannot be split
//! into slabs (gzip, zstd, or standard input), read by one decoder from the
//! start, and [`detect_compression`] by magic bytes.

use crate::counters::ReadCounters;
use crate::error::IoError;
use crate::framing::{Engine, Framer, Start};
use crate::options::ReaderOptions;
use crate::record::Record;
use crate::slab::RecordKind;
use crate::window::{Source, Window};
use molsift_iostats::CountedFile;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How a file is compressed, as told by its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    /// Plain bytes.
    None,
    /// gzip (`1f 8b`), possibly several members back to back (e.g. BGZF).
    Gzip,
    /// zstd (`28 b5 2f fd`), possibly several frames.
    Zstd,
}

impl Compression {
    /// The compression whose magic number starts `head`.
    pub fn from_magic(head: &[u8]) -> Compression {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }
}

/// Reads the first bytes of `path` and tells its compression.
pub fn detect_compression(path: &Path) -> Result<Compression, IoError> {
    let mut file = CountedFile::open(path).map_err(|source| IoError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let head = read_head(&mut file, 4).map_err(|source| IoError::Read {
        path: path.to_path_buf(),
        offset: 0,
        source,
    })?;
    Ok(Compression::from_magic(&head))
}

/// Up to `n` bytes from the start of `r` (fewer only at its end).
fn read_head(r: &mut dyn Read, n: usize) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(n);
    r.take(n as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// Bytes and read calls on the raw input, shared with the decoder's reader.
#[derive(Default)]
struct RawCounts {
    bytes: AtomicU64,
    calls: AtomicU64,
}

/// Counts what is read from the raw input.
struct Counting<R> {
    inner: R,
    counts: Arc<RawCounts>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counts.bytes.fetch_add(n as u64, Ordering::Relaxed);
        self.counts.calls.fetch_add(1, Ordering::Relaxed);
        Ok(n)
    }
}

/// A decoder (or plain pass-through) as a window source.
pub(crate) struct StreamSource {
    decoder: Box<dyn Read + Send + Sync>,
    counts: Arc<RawCounts>,
    path: PathBuf,
    buffer_size: usize,
    out: u64,
    /// `\n` bytes produced so far (kept for whole-stream counting).
    newlines: u64,
}

impl Source for StreamSource {
    fn read(&mut self, dst: &mut [u8], c: &mut ReadCounters) -> Result<usize, IoError> {
        let want = dst.len().min(self.buffer_size);
        let n = loop {
            match self.decoder.read(&mut dst[..want]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(IoError::Decode {
                        path: self.path.clone(),
                        offset: self.out,
                        source,
                    })
                }
            }
        };
        self.out += n as u64;
        self.newlines += memchr::memchr_iter(b'\n', &dst[..n]).count() as u64;
        c.decompressed_bytes += n as u64;
        c.bytes_read = self.counts.bytes.load(Ordering::Relaxed);
        c.read_calls = self.counts.calls.load(Ordering::Relaxed);
        Ok(n)
    }
}

/// Reads all records of a whole stream with one reader: gzip and zstd files
/// (which cannot be cut into byte-range slabs, since a byte offset in the
/// compressed file is no place a decoder can start), plain files read from
/// the start, or standard input (path `-`).
///
/// Records' `offset` and `line` are in the decompressed stream, counted from 0.
pub struct StreamReader {
    engine: Engine<StreamSource>,
    compression: Compression,
}

impl StreamReader {
    /// Opens `path` (`-` for standard input), picking the decoder from the
    /// first bytes: gzip, zstd, else plain.
    pub fn open(
        path: &Path,
        kind: RecordKind,
        opts: ReaderOptions,
    ) -> Result<StreamReader, IoError> {
        if path == Path::new("-") {
            return StreamReader::from_reader(std::io::stdin(), path, kind, opts);
        }
        let file = CountedFile::open(path).map_err(|source| IoError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        StreamReader::from_reader(file, path, kind, opts)
    }

    /// Reads records from any byte source; `name` is used in errors.
    pub fn from_reader<R: Read + Send + Sync + 'static>(
        reader: R,
        name: &Path,
        kind: RecordKind,
        opts: ReaderOptions,
    ) -> Result<StreamReader, IoError> {
        let path = name.to_path_buf();
        opts.check(kind).map_err(|reason| IoError::Options {
            path: path.clone(),
            reason,
        })?;
        let counts = Arc::new(RawCounts::default());
        let mut raw = Counting {
            inner: reader,
            counts: Arc::clone(&counts),
        };
        let head = read_head(&mut raw, 4).map_err(|source| IoError::Read {
            path: path.clone(),
            offset: 0,
            source,
        })?;
        let compression = Compression::from_magic(&head);
        let raw = std::io::Cursor::new(head).chain(raw);
        let raw_buffer = opts.buffer_size.clamp(64 << 10, 4 << 20);
        let decode_err = |source| IoError::Decode {
            path: path.clone(),
            offset: 0,
            source,
        };
        let decoder: Box<dyn Read + Send + Sync> = match compression {
            Compression::None => Box::new(raw),
            Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(
                BufReader::with_capacity(raw_buffer, raw),
            )),
            Compression::Zstd => Box::new(
                zstd::stream::read::Decoder::with_buffer(BufReader::with_capacity(raw_buffer, raw))
                    .map_err(decode_err)?,
            ),
        };
        let src = StreamSource {
            decoder,
            counts,
            path,
            buffer_size: opts.buffer_size,
            out: 0,
            newlines: 0,
        };
        let limit = opts
            .buffer_size
            .max(opts.max_record_bytes.saturating_add(1));
        let window = Window::new(src, 0, opts.buffer_size, limit);
        let start = Start {
            slab_start: 0,
            slab_end: u64::MAX,
        };
        let framer = Framer::new(kind, start, opts.skip_header, opts.max_record_bytes);
        Ok(StreamReader {
            engine: Engine::new(window, framer),
            compression,
        })
    }

    /// The next record, or `None` at the end of the stream.
    pub fn next_record(&mut self) -> Result<Option<Record<'_>>, IoError> {
        self.engine.next_record()
    }

    /// What this reader has read and yielded so far; `bytes_read` and
    /// `read_calls` are on the (compressed) input, `decompressed_bytes` what
    /// the decoder produced.
    pub fn counters(&self) -> &ReadCounters {
        &self.engine.window.counters
    }

    /// Takes back the count of one yielded record (a header read as a record).
    pub(crate) fn uncount_record(&mut self) {
        self.engine.window.counters.records -= 1;
    }

    /// The compression found from the stream's first bytes.
    pub fn compression(&self) -> Compression {
        self.compression
    }
}

/// Counts the records of a whole (compressed) stream by reading it.
pub(crate) fn count_stream(
    path: &Path,
    kind: RecordKind,
    skip_header: bool,
) -> Result<crate::CountReport, IoError> {
    let opts = ReaderOptions {
        skip_header,
        ..ReaderOptions::for_kind(kind)
    };
    let mut reader = StreamReader::open(path, kind, opts)?;
    while reader.next_record()?.is_some() {}
    let c = reader.counters();
    Ok(crate::CountReport {
        records: c.records,
        bytes: c.decompressed_bytes,
        newlines: reader.engine.window.source().newlines,
        bytes_read: c.bytes_read,
        read_calls: c.read_calls,
        ..crate::CountReport::default()
    })
}

/// The first line of a file, decompressed if needed, without its `\n` and
/// trailing `\r` (e.g. a CSV header for
/// [`CsvColumns::from_header`](crate::CsvColumns::from_header)). At most
/// `max_bytes` are kept; an empty file gives an empty line. A plain file is read
/// 4 KiB at a time until the line ends (a header line is short: reading 64 KiB
/// for it showed in every plan's and CSV slab's I/O log).
pub fn read_first_line(path: &Path, max_bytes: usize) -> Result<Vec<u8>, IoError> {
    let opts = ReaderOptions {
        buffer_size: max_bytes.clamp(1, 4096),
        max_record_bytes: max_bytes,
        ..ReaderOptions::default()
    };
    // Every line, blank or comment too, is wanted: read raw through the window.
    let mut reader = StreamReader::open(path, RecordKind::Line, opts)?;
    let w = &mut reader.engine.window;
    let mut scanned = 0;
    loop {
        let d = w.data();
        if let Some(i) = memchr::memchr(b'\n', &d[scanned..]) {
            let line = &d[..scanned + i];
            return Ok(line.strip_suffix(b"\r").unwrap_or(line).to_vec());
        }
        scanned = d.len();
        if d.len() >= max_bytes || w.fill()? == 0 {
            let d = &w.data()[..w.data().len().min(max_bytes)];
            return Ok(d.strip_suffix(b"\r").unwrap_or(d).to_vec());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn magic() {
        assert_eq!(Compression::from_magic(&[0x1f, 0x8b, 8]), Compression::Gzip);
        assert_eq!(
            Compression::from_magic(&[0x28, 0xb5, 0x2f, 0xfd]),
            Compression::Zstd
        );
        assert_eq!(Compression::from_magic(b"CC"), Compression::None);
        assert_eq!(Compression::from_magic(b""), Compression::None);
    }

    #[test]
    fn gzip_members_back_to_back() {
        let mut bytes = Vec::new();
        for part in [&b"C\n# x\n"[..], b"CC\nCCC"] {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(part).unwrap();
            bytes.extend(e.finish().unwrap());
        }
        let opts = ReaderOptions {
            buffer_size: 3,
            ..Default::default()
        };
        let mut r = StreamReader::from_reader(
            std::io::Cursor::new(bytes),
            Path::new("t.gz"),
            RecordKind::Line,
            opts,
        )
        .unwrap();
        assert_eq!(r.compression(), Compression::Gzip);
        let mut got = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            got.push((rec.offset, rec.line, rec.bytes.to_vec()));
        }
        assert_eq!(
            got,
            vec![
                (0, 0, b"C".to_vec()),
                (6, 2, b"CC".to_vec()),
                (9, 3, b"CCC".to_vec())
            ]
        );
        assert_eq!(r.counters().decompressed_bytes, 12);
    }

    #[test]
    fn first_line() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b"smiles,id\r\nC,1\n").unwrap();
        assert_eq!(read_first_line(f.path(), 1000).unwrap(), b"smiles,id");
        assert_eq!(read_first_line(f.path(), 3).unwrap(), b"smi");
    }
}
