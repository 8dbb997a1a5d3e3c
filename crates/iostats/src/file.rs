//! Owns [`CountedFile`]: a `std::fs::File` whose open, read, write, seek, stat, sync, mmap and
//! close are timed and counted on the file's record, and the path-level helpers [`metadata`],
//! [`read_file`] and [`write_file`].
//!
//! The hot path of a request is two clock reads and one uncontended lock; with recording off
//! (`MOLSIFT_IOSTATS=0`) it is a plain system call. Bytes touched through a memory map are not
//! counted as reads (only the map itself, as `MMAPS`), as with Darshan and the tracer.

use std::ffi::CString;
use std::fs::{File, Metadata};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::mem::ManuallyDrop;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::os::unix::io::{AsRawFd, FromRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::clock::now;
use super::record::{FileStats, Op, FDSYNCS, FSYNCS, MMAPS, SEEKS, STATS};
use super::{current_gen, failed_open, failed_stat, file_stats};

/// A file whose every operation is counted on its path's record (see the module docs).
/// Positioned calls (`read_at`, `write_at`) take `&self` and can be shared by threads.
pub struct CountedFile {
    file: ManuallyDrop<File>,
    path: PathBuf,
    rec: Option<Arc<FileStats>>,
    gen: u64,
    /// The descriptor's offset for `read`/`write` (0 at open, the size with `O_APPEND`).
    pos: AtomicU64,
}

impl CountedFile {
    /// Opens `path` read-only.
    pub fn open(path: &Path) -> io::Result<CountedFile> {
        Self::open_flags(path, libc::O_RDONLY, 0)
    }

    /// Creates (or truncates) `path` for writing.
    pub fn create(path: &Path) -> io::Result<CountedFile> {
        Self::open_flags(path, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o666)
    }

    /// Opens `path` with `open(2)` flags and creation mode (`O_CLOEXEC` is always added).
    pub fn open_flags(path: &Path, flags: i32, mode: u32) -> io::Result<CountedFile> {
        Self::open_in(libc::AT_FDCWD, path, path, flags, mode)
    }

    /// Opens `name` inside the directory open as `dir` (`openat(2)`, so a directory renamed or
    /// replaced meanwhile is not followed: every file comes from the one directory opened),
    /// counted under `dir`'s path joined with `name`.
    pub fn open_at(
        dir: &CountedFile,
        name: &str,
        flags: i32,
        mode: u32,
    ) -> io::Result<CountedFile> {
        if name.contains('/') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a plain file name",
            ));
        }
        Self::open_in(
            dir.as_raw_fd(),
            Path::new(name),
            &dir.path.join(name),
            flags,
            mode,
        )
    }

    /// Opens the directory `path` (`O_DIRECTORY`) as a handle for [`open_at`](Self::open_at).
    pub fn open_dir(path: &Path) -> io::Result<CountedFile> {
        Self::open_flags(path, libc::O_RDONLY | libc::O_DIRECTORY, 0)
    }

    /// `openat(at, name)`, counted on the record of `path`.
    fn open_in(
        at: RawFd,
        name: &Path,
        path: &Path,
        flags: i32,
        mode: u32,
    ) -> io::Result<CountedFile> {
        let cpath = CString::new(name.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))?;
        let stats = file_stats(path);
        let t1 = now();
        let fd = loop {
            // SAFETY: a valid C string; the mode is passed as the variadic argument openat expects.
            let fd = unsafe {
                libc::openat(
                    at,
                    cpath.as_ptr(),
                    flags | libc::O_CLOEXEC,
                    mode as libc::c_uint,
                )
            };
            if fd >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                break fd;
            }
        };
        let t2 = now();
        if fd < 0 {
            let err = io::Error::last_os_error();
            if stats.is_some() {
                failed_open();
            }
            return Err(err);
        }
        // SAFETY: `fd` was just opened and is owned by nobody else.
        let file = unsafe { File::from_raw_fd(fd) };
        let (rec, gen) = match stats {
            Some((rec, gen)) => (Some(rec), gen),
            None => (None, 0),
        };
        let size = rec.as_ref().and_then(|_| fd_size_uncounted(fd));
        if let Some(r) = &rec {
            r.open(t1, t2, size);
        }
        let pos = match size {
            Some((s, _)) if flags & libc::O_APPEND != 0 => s as u64,
            _ => 0,
        };
        Ok(CountedFile {
            file: ManuallyDrop::new(file),
            path: path.to_path_buf(),
            rec,
            gen,
            pos: AtomicU64::new(pos),
        })
    }

    /// The path this file was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The record to count on, re-found after a fork (a child counts in its own table).
    #[inline]
    fn record(&self) -> Option<Arc<FileStats>> {
        let rec = self.rec.as_ref()?;
        if self.gen == current_gen() {
            return Some(Arc::clone(rec));
        }
        file_stats(&self.path).map(|(r, _)| r)
    }

    /// Runs one request and counts it: `op` at `offset`, `buf` for the alignment check.
    #[inline]
    fn request(
        &self,
        op: Op,
        offset: u64,
        buf: *const u8,
        call: impl FnOnce() -> io::Result<usize>,
    ) -> io::Result<usize> {
        let Some(rec) = self.rec.as_ref() else {
            return call();
        };
        if self.gen != current_gen() {
            let rec = self.record();
            return Self::timed_io(rec.as_deref(), op, offset, buf, call);
        }
        Self::timed_io(Some(&**rec), op, offset, buf, call)
    }

    #[inline]
    fn timed_io(
        rec: Option<&FileStats>,
        op: Op,
        offset: u64,
        buf: *const u8,
        call: impl FnOnce() -> io::Result<usize>,
    ) -> io::Result<usize> {
        let t1 = now();
        let r = call();
        let t2 = now();
        if let (Some(rec), Ok(n)) = (rec, &r) {
            rec.io(op, *n, offset, buf, t1, t2);
        }
        r
    }

    /// Runs a metadata-like call and bumps `counter` when it succeeds.
    fn event<T>(
        &self,
        counter: usize,
        call: impl FnOnce() -> io::Result<T>,
        size: impl FnOnce(&T) -> Option<i64>,
    ) -> io::Result<T> {
        let Some(rec) = self.record() else {
            return call();
        };
        let t1 = now();
        let r = call();
        let t2 = now();
        if let Ok(v) = &r {
            rec.event(counter, t1, t2, size(v));
        }
        r
    }

    /// Reads at `offset` without moving the file offset (one `pread`).
    #[inline]
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let p = buf.as_ptr();
        self.request(Op::Read, offset, p, || self.file.read_at(buf, offset))
    }

    /// Fills all of `buf` from `offset` on, repeating short reads (each one a counted `pread`);
    /// `UnexpectedEof` when the file ends first.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let eof = (io::ErrorKind::UnexpectedEof, "failed to fill whole buffer");
        repeat_until_done(buf.len(), eof, |done| {
            self.read_at(&mut buf[done..], offset + done as u64)
        })
    }

    /// The counters' clock now, to pass to [`count_read`](Self::count_read) when a read made
    /// another way (an io_uring request on this descriptor) completes.
    #[inline]
    pub fn tick(&self) -> u64 {
        now()
    }

    /// Counts one read this file's descriptor served outside `read_at` (an io_uring request):
    /// `n` bytes at `offset` into `buf`, submitted at `started` (a [`tick`](Self::tick)) and
    /// complete now. Requests in flight together each count their whole wait as read time.
    pub fn count_read(&self, offset: u64, n: usize, buf: *const u8, started: u64) {
        if let Some(rec) = self.record() {
            rec.io(Op::Read, n, offset, buf, started, now());
        }
    }

    /// Writes at `offset` without moving the file offset (one `pwrite`).
    #[inline]
    pub fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        self.request(Op::Write, offset, buf.as_ptr(), || {
            self.file.write_at(buf, offset)
        })
    }

    /// Writes all of `buf` at `offset`, retrying short writes.
    pub fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let zero = (io::ErrorKind::WriteZero, "failed to write whole buffer");
        repeat_until_done(buf.len(), zero, |done| {
            self.write_at(&buf[done..], offset + done as u64)
        })
    }

    /// Stats the open file (`STATS`); the size it tells is kept as the file's size.
    pub fn metadata(&self) -> io::Result<Metadata> {
        self.event(
            STATS,
            || self.file.metadata(),
            |m| m.is_file().then_some(m.len() as i64),
        )
    }

    /// `fsync` (`FSYNCS`, counted as write time).
    pub fn sync_all(&self) -> io::Result<()> {
        self.event(FSYNCS, || self.file.sync_all(), |_| None)
    }

    /// `fdatasync` (`FDSYNCS`, counted as write time).
    pub fn sync_data(&self) -> io::Result<()> {
        self.event(FDSYNCS, || self.file.sync_data(), |_| None)
    }

    /// Truncates or extends the file (not a Darshan counter: not counted).
    pub fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    /// Maps the whole file read-only (`MMAPS`). Bytes read through the map are not counted.
    ///
    /// # Safety
    /// As [`memmap2::Mmap::map`]: the file must not be truncated or changed while mapped (a
    /// truncated file faults on access).
    pub unsafe fn map(&self) -> io::Result<memmap2::Mmap> {
        // The length by an uncounted stat, like the tracer's own (memmap2 would stat otherwise).
        let len = fd_size_uncounted(self.as_raw_fd()).map_or(0, |(s, _)| s as usize);
        // SAFETY: the caller upholds `Mmap::map`'s contract.
        let map = || unsafe { memmap2::MmapOptions::new().len(len).map(&*self.file) };
        self.event(MMAPS, map, |_| None)
    }

    /// Maps the file with another mapping call (e.g. Python's `mmap.mmap` on [`AsRawFd`]) and
    /// counts it as one `MMAPS`, as [`map`](Self::map) does.
    pub fn map_with<T, E>(&self, map: impl FnOnce(RawFd) -> Result<T, E>) -> Result<T, E> {
        let Some(rec) = self.record() else {
            return map(self.as_raw_fd());
        };
        let t1 = now();
        let r = map(self.as_raw_fd());
        let t2 = now();
        if r.is_ok() {
            rec.event(MMAPS, t1, t2, None);
        }
        r
    }

    /// Moves the file offset (`SEEKS`).
    fn seek_counted(&self, to: SeekFrom) -> io::Result<u64> {
        let new = self.event(SEEKS, || (&*self.file).seek(to), |_| None)?;
        self.pos.store(new, Ordering::Relaxed);
        Ok(new)
    }

    fn read_next(&self, buf: &mut [u8]) -> io::Result<usize> {
        let at = self.pos.load(Ordering::Relaxed);
        let n = self.request(Op::Read, at, buf.as_ptr(), || (&*self.file).read(buf))?;
        self.pos.store(at + n as u64, Ordering::Relaxed);
        Ok(n)
    }

    fn write_next(&self, buf: &[u8]) -> io::Result<usize> {
        let at = self.pos.load(Ordering::Relaxed);
        let n = self.request(Op::Write, at, buf.as_ptr(), || (&*self.file).write(buf))?;
        self.pos.store(at + n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Size and block size of an open descriptor, by a raw system call the tracer does not see
/// (as the tracer's own `fstat` at each open, it is not counted as a stat).
fn fd_size_uncounted(fd: RawFd) -> Option<(i64, i64)> {
    let mut st = std::mem::MaybeUninit::<libc::statx>::zeroed();
    let empty = b"\0";
    // SAFETY: statx with AT_EMPTY_PATH on an open descriptor fills `st`.
    let r = unsafe {
        libc::syscall(
            libc::SYS_statx,
            fd,
            empty.as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_SIZE | libc::STATX_TYPE,
            st.as_mut_ptr(),
        )
    };
    if r != 0 {
        return None;
    }
    // SAFETY: filled by the successful call.
    let st = unsafe { st.assume_init() };
    Some((st.stx_size as i64, i64::from(st.stx_blksize)))
}

/// Calls `step(done)` (the bytes done so far) until `len` bytes are done, again after
/// `Interrupted`; a step that moves no byte ends it with the error `zero`.
fn repeat_until_done(
    len: usize,
    zero: (io::ErrorKind, &str),
    mut step: impl FnMut(usize) -> io::Result<usize>,
) -> io::Result<()> {
    let mut done = 0;
    while done < len {
        match step(done) {
            Ok(0) => return Err(io::Error::new(zero.0, zero.1)),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

impl AsRawFd for CountedFile {
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

impl AsFd for CountedFile {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

impl Read for CountedFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_next(buf)
    }
}

impl Read for &CountedFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_next(buf)
    }
}

impl Write for CountedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_next(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Write for &CountedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_next(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for CountedFile {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.seek_counted(to)
    }
}

impl Seek for &CountedFile {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.seek_counted(to)
    }
}

impl Drop for CountedFile {
    fn drop(&mut self) {
        let rec = self.record();
        let t1 = now();
        // SAFETY: the file is dropped exactly once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.file) };
        if let Some(r) = rec {
            r.close(t1, now());
        }
    }
}

impl std::fmt::Debug for CountedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountedFile")
            .field("path", &self.path)
            .field("fd", &self.as_raw_fd())
            .finish()
    }
}

/// Stats `path` (`STATS` on its record; a failed stat is counted per process only).
pub fn metadata(path: &Path) -> io::Result<Metadata> {
    let Some((rec, _)) = file_stats(path) else {
        return std::fs::metadata(path);
    };
    let t1 = now();
    let r = std::fs::metadata(path);
    let t2 = now();
    match &r {
        Ok(m) => rec.event(STATS, t1, t2, m.is_file().then_some(m.len() as i64)),
        Err(_) => failed_stat(),
    }
    r
}

/// The whole file, read with 64 KiB requests until the end (the last read returns 0 bytes).
pub fn read_file(path: &Path) -> io::Result<Vec<u8>> {
    let f = CountedFile::open(path)?;
    let mut out = Vec::new();
    let mut at = 0usize;
    loop {
        out.resize(at + (64 << 10), 0);
        let n = match f.read_next(&mut out[at..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        at += n;
        if n == 0 {
            out.truncate(at);
            return Ok(out);
        }
    }
}

/// Creates (or truncates) `path` and writes `data` into it; `sync`: `fsync` before closing.
pub fn write_file(path: &Path, data: &[u8], sync: bool) -> io::Result<()> {
    let f = CountedFile::create(path)?;
    (&f).write_all(data)?;
    if sync {
        f.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters;

    #[test]
    fn exact_counts_of_known_requests() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("known.dat");
        let f = CountedFile::create(&path).unwrap();
        let buf = vec![1u8; 5000];
        f.write_all_at(&buf[..50], 0).unwrap(); // 0
        (&f).write_all(&buf[..50]).unwrap(); // 0 again: neither
        (&f).write_all(&buf[..2000]).unwrap(); // 50: sequential, consecutive
        f.sync_data().unwrap();
        f.sync_all().unwrap();
        drop(f);
        let mut f = CountedFile::open(&path).unwrap();
        assert_eq!(f.metadata().unwrap().len(), 2050);
        let mut r = vec![0u8; 4096];
        assert_eq!(f.read(&mut r[..100]).unwrap(), 100); // 0
        assert_eq!(f.read(&mut r[..100]).unwrap(), 100); // 100: seq, consec
        assert_eq!(f.read_at(&mut r[..1500], 1000).unwrap(), 1050); // seq
        f.seek(SeekFrom::End(0)).unwrap();
        assert_eq!(f.read(&mut r).unwrap(), 0); // 2050: seq
        let m = unsafe { f.map() }.unwrap();
        assert_eq!(m.len(), 2050);
        drop(m);
        drop(f);
        metadata(&path).unwrap();
        assert!(metadata(&dir.path().join("missing")).is_err());
        let c = counters(&path).unwrap();
        let want = [
            ("OPENS", 2),
            ("WRITES", 3),
            ("BYTES_WRITTEN", 2100),
            ("SEQ_WRITES", 1),
            ("CONSEC_WRITES", 1),
            ("MAX_BYTE_WRITTEN", 2049),
            ("SIZE_WRITE_0_100", 2),
            ("SIZE_WRITE_1K_10K", 1),
            ("FSYNCS", 1),
            ("FDSYNCS", 1),
            ("STATS", 2),
            ("READS", 4),
            ("BYTES_READ", 1250),
            ("SEQ_READS", 3),
            ("CONSEC_READS", 2), // 100 after 0..99, and the 0-byte read at 2050 after 1000..2049
            ("MAX_BYTE_READ", 2049),
            ("SIZE_READ_0_100", 3),
            ("SIZE_READ_1K_10K", 1),
            ("SEEKS", 1),
            ("MMAPS", 1),
            ("RW_SWITCHES", 1),
        ];
        for (k, v) in want {
            assert_eq!(c.get(k).copied().unwrap_or(0), v, "{k}: {c:?}");
        }
    }

    #[test]
    fn append_starts_at_the_end_and_helpers_count() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        write_file(&path, b"0123456789", true).unwrap();
        let f = CountedFile::open_flags(&path, libc::O_WRONLY | libc::O_APPEND, 0).unwrap();
        (&f).write_all(b"abc").unwrap(); // at 10: sequential, consecutive
        drop(f);
        assert_eq!(read_file(&path).unwrap(), b"0123456789abc");
        let c = counters(&path).unwrap();
        assert_eq!(
            (c["WRITES"], c["CONSEC_WRITES"], c["MAX_BYTE_WRITTEN"]),
            (2, 1, 12)
        );
        assert_eq!(
            (c["READS"], c["BYTES_READ"], c["OPENS"], c["FSYNCS"]),
            (2, 13, 3, 1)
        );
        assert!(CountedFile::open(&dir.path().join("nope")).is_err());
    }

    #[test]
    fn read_exact_at_fills_the_buffer_or_says_eof() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("exact.dat");
        write_file(&path, b"0123456789", false).unwrap();
        let f = CountedFile::open(&path).unwrap();
        let mut buf = [0u8; 4];
        f.read_exact_at(&mut buf, 6).unwrap();
        assert_eq!(&buf, b"6789");
        f.read_exact_at(&mut [], 10).unwrap();
        let err = f.read_exact_at(&mut buf, 8).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        drop(f);
        // 4 bytes at 6; 2 bytes at 8 then 0 at 10 (the empty read asks nothing)
        let c = counters(&path).unwrap();
        assert_eq!((c["READS"], c["BYTES_READ"]), (3, 6));
    }
}
