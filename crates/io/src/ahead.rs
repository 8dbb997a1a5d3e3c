//! Owns [`ReadAhead`]: reading one byte range of a file front to back in chunks, with reads
//! kept in flight ahead of the caller. Three engines: io_uring with `depth` reads in flight,
//! buffered or direct (`O_DIRECT`: 4 KiB-aligned offsets, lengths and buffers); and plain
//! `pread`, one chunk at a time, after `posix_fadvise(WILLNEED)` on the chunks ahead (or
//! aligned `O_DIRECT` preads where io_uring is refused). The caller scans each chunk in place
//! while the next ones are read.

use crate::error::IoError;
use io_uring::{opcode, types, IoUring};
use molsift_iostats::CountedFile;
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::VecDeque;
use std::ops::{Deref, Range};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Alignment of direct reads: offsets, lengths and buffer addresses (the page size, which
/// every device's logical block divides).
pub(crate) const ALIGN: usize = 4096;
/// Bytes in front of every chunk's data, free for the caller (e.g. the byte before the chunk).
pub(crate) const HEAD: usize = ALIGN;

/// How a [`ReadAhead`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AheadOptions {
    /// Bytes per read (rounded up to [`ALIGN`] for direct reads).
    pub chunk: usize,
    /// Reads in flight (io_uring) or chunks advised ahead (pread).
    pub depth: usize,
    /// Through io_uring (else pread).
    pub uring: bool,
    /// The file was opened with `O_DIRECT`: aligned reads of whole blocks.
    pub direct: bool,
}

/// A heap buffer aligned to [`ALIGN`], as direct reads need.
struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is owned memory, handed to the kernel only while its read is in flight;
// it is written only through `&mut self` (or by the kernel, before its completion is reaped).
unsafe impl Send for AlignedBuf {}
// SAFETY: as above: shared references only read it.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    fn new(len: usize) -> AlignedBuf {
        let layout = Layout::from_size_align(len, ALIGN).expect("buffer size fits a layout");
        // SAFETY: the layout has a non-zero size (HEAD is part of every buffer).
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, len }
    }

    fn slice_mut(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` owns `len` initialised bytes (zeroed at allocation).
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.len, ALIGN).expect("as allocated");
        // SAFETY: allocated in `new` with this layout; no read is in flight (see ReadAhead's Drop).
        unsafe { dealloc(self.ptr, layout) }
    }
}

/// One read submitted and not yet handed to the caller.
#[derive(Clone, Copy)]
struct Slot {
    buf: usize,
    offset: u64,
    /// Bytes asked for in all.
    want: usize,
    /// Bytes the kernel has given so far.
    got: usize,
    /// No more reads for this slot: all there, or the end of the file.
    done: bool,
    /// When the current request was submitted (the I/O counters' clock).
    started: u64,
}

/// One chunk handed to the caller: its data is `buf[HEAD..HEAD + len]`, at file offset
/// `offset`; `buf[..HEAD]` is the caller's to use.
pub(crate) struct Chunk<'a> {
    pub offset: u64,
    pub len: usize,
    pub buf: &'a mut [u8],
}

/// Reads `range` of a file in order, `depth` chunks ahead of the caller. `F` holds the file:
/// `&CountedFile` or an owner of one.
pub(crate) struct ReadAhead<F: Deref<Target = CountedFile>> {
    file: F,
    path: PathBuf,
    ring: Option<IoUring>,
    opts: AheadOptions,
    /// Bytes handed out end here (reads may go past, to finish a direct block).
    end: u64,
    file_len: u64,
    /// Next offset to submit a read for.
    next: u64,
    /// Bytes to skip at the start of the first chunk (a direct read starts aligned below).
    skip: usize,
    bufs: Vec<AlignedBuf>,
    free: Vec<usize>,
    queue: VecDeque<Slot>,
    /// The buffer the caller holds, free again at the next call, and its data's length.
    held: Option<usize>,
    held_len: usize,
    /// Up to where `posix_fadvise(WILLNEED)` has been asked (pread engine).
    advised: u64,
    /// Why this range is read by pread although io_uring was asked, if it is.
    pub fallback: Option<String>,
    /// Bytes the reads brought in (for direct reads: whole blocks, past the end of file too).
    pub bytes_read: u64,
    /// Read requests made.
    pub read_calls: u64,
}

/// Whether this process may use io_uring (the kernel has it and nothing forbids it), and the
/// reason if not.
pub(crate) fn uring_available() -> Result<(), std::io::Error> {
    IoUring::new(2).map(|_| ())
}

fn round_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

impl<F: Deref<Target = CountedFile>> ReadAhead<F> {
    /// Reads `range` of `file` (of `file_len` bytes) with `opts`. A direct read starts at the
    /// block boundary at or below `range.start`.
    pub(crate) fn new(
        file: F,
        path: &Path,
        file_len: u64,
        range: Range<u64>,
        opts: AheadOptions,
    ) -> Result<ReadAhead<F>, IoError> {
        let mut opts = opts;
        opts.depth = opts.depth.max(1);
        opts.chunk = opts.chunk.max(1);
        let end = range.end.min(file_len);
        let mut start = range.start.min(end);
        let mut skip = 0;
        if opts.direct && start < end {
            opts.chunk = round_up(opts.chunk as u64, ALIGN as u64) as usize;
            let aligned = start - start % ALIGN as u64;
            skip = (start - aligned) as usize;
            start = aligned;
        }
        let mut fallback = None;
        let ring = if opts.uring {
            let entries = (opts.depth as u32).next_power_of_two();
            match IoUring::new(entries) {
                Ok(ring) => Some(ring),
                Err(e) => {
                    // The kernel took io_uring when asked at open, but not here (rings are
                    // per thread: a limit on locked memory or on rings): this range by pread.
                    fallback = Some(format!("an io_uring could not be set up ({e}): pread"));
                    opts.uring = false;
                    None
                }
            }
        } else {
            None
        };
        // The caller holds one buffer while `depth` are read; the pread engine needs one.
        let nbufs = if opts.uring { opts.depth + 1 } else { 1 };
        let chunks = (end - start).div_ceil(opts.chunk as u64).max(1);
        let nbufs = nbufs.min(chunks as usize + 1);
        let bufs = (0..nbufs)
            .map(|_| AlignedBuf::new(HEAD + opts.chunk))
            .collect();
        if !opts.direct && !opts.uring {
            // SAFETY: fadvise on an open descriptor; advice only.
            unsafe {
                libc::posix_fadvise(
                    file.as_raw_fd(),
                    start as i64,
                    (end - start) as i64,
                    libc::POSIX_FADV_SEQUENTIAL,
                )
            };
        }
        Ok(ReadAhead {
            file,
            path: path.to_path_buf(),
            ring,
            opts,
            end,
            file_len,
            next: start,
            skip,
            bufs,
            free: (0..nbufs).rev().collect(),
            queue: VecDeque::new(),
            held: None,
            held_len: 0,
            advised: start,
            fallback,
            bytes_read: 0,
            read_calls: 0,
        })
    }

    /// The next chunk, in file order; `None` after the last. The chunk stays valid until the
    /// next call.
    pub(crate) fn next_chunk(&mut self) -> Result<Option<Chunk<'_>>, IoError> {
        if let Some(b) = self.held.take() {
            self.free.push(b);
        }
        let slot = if self.ring.is_some() {
            self.submit_all()?;
            if self.queue.is_empty() {
                return Ok(None);
            }
            while !self.queue[0].done {
                self.wait()?;
            }
            self.queue.pop_front().expect("a slot is queued")
        } else {
            match self.read_sync()? {
                Some(s) => s,
                None => return Ok(None),
            }
        };
        self.held = Some(slot.buf);
        let skip = std::mem::take(&mut self.skip).min(slot.got);
        let len = (slot.got as u64).min(self.end.saturating_sub(slot.offset)) as usize;
        let data = len.saturating_sub(skip);
        self.held_len = data;
        let buf = self.bufs[slot.buf].slice_mut();
        if skip > 0 && data > 0 {
            // Move the chunk's own bytes to the front, so its data starts at HEAD as always.
            buf.copy_within(HEAD + skip..HEAD + len, HEAD);
        }
        Ok(Some(Chunk {
            offset: slot.offset + skip as u64,
            len: data,
            buf: &mut buf[..HEAD + data],
        }))
    }

    /// The data of the chunk last handed out (empty before the first).
    pub(crate) fn held_data(&self) -> &[u8] {
        match self.held {
            // SAFETY: the held buffer's read is complete; HEAD + held_len is inside it.
            Some(b) => unsafe {
                std::slice::from_raw_parts(self.bufs[b].ptr.add(HEAD), self.held_len)
            },
            None => &[],
        }
    }

    /// Bytes to ask for at `next`: a chunk, or what is left (whole blocks for direct reads).
    fn want_at(&self, at: u64) -> usize {
        let left = self.end - at;
        let want = left.min(self.opts.chunk as u64);
        if self.opts.direct {
            round_up(want, ALIGN as u64) as usize
        } else {
            want as usize
        }
    }

    /// Submits reads while buffers are free and the range is not all asked for.
    fn submit_all(&mut self) -> Result<(), IoError> {
        let mut pushed = false;
        while self.next < self.end && self.queue.len() < self.opts.depth {
            let Some(buf) = self.free.pop() else { break };
            let want = self.want_at(self.next);
            let slot = Slot {
                buf,
                offset: self.next,
                want,
                got: 0,
                done: false,
                started: self.file.tick(),
            };
            self.push_read(&slot)?;
            self.next += want as u64;
            self.queue.push_back(slot);
            pushed = true;
        }
        if pushed {
            let ring = self.ring.as_mut().expect("uring engine");
            ring.submit().map_err(|source| IoError::Read {
                path: self.path.clone(),
                offset: self.next,
                source,
            })?;
        }
        Ok(())
    }

    /// Queues the read of the rest of `slot` (not yet submitted to the kernel).
    fn push_read(&mut self, slot: &Slot) -> Result<(), IoError> {
        let ptr = self.bufs[slot.buf].ptr;
        let fd = types::Fd(self.file.as_raw_fd());
        // SAFETY: HEAD + want never exceeds the buffer, which outlives the request (a buffer
        // is reused or freed only after its completion is reaped).
        let dst = unsafe { ptr.add(HEAD + slot.got) };
        let sqe = opcode::Read::new(fd, dst, (slot.want - slot.got) as u32)
            .offset(slot.offset + slot.got as u64)
            .build()
            .user_data(slot.buf as u64);
        let ring = self.ring.as_mut().expect("uring engine");
        // SAFETY: the entry points at memory valid until its completion (see above).
        while unsafe { ring.submission().push(&sqe) }.is_err() {
            ring.submit().map_err(|source| IoError::Read {
                path: self.path.clone(),
                offset: slot.offset,
                source,
            })?;
        }
        Ok(())
    }

    /// Waits for at least one completion and applies every one there is.
    fn wait(&mut self) -> Result<(), IoError> {
        let ring = self.ring.as_mut().expect("uring engine");
        loop {
            match ring.submit_and_wait(1) {
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(IoError::Read {
                        path: self.path.clone(),
                        offset: self.queue[0].offset,
                        source,
                    })
                }
            }
        }
        let done: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (buf, res) in done {
            let i = self
                .queue
                .iter()
                .position(|s| s.buf as u64 == buf)
                .expect("a completion belongs to a queued read");
            let at = self.queue[i].offset + self.queue[i].got as u64;
            if res < 0 {
                if res == -libc::EINTR || res == -libc::EAGAIN {
                    let slot = self.queue[i];
                    self.push_read(&slot)?;
                    continue;
                }
                return Err(IoError::Read {
                    path: self.path.clone(),
                    offset: at,
                    source: std::io::Error::from_raw_os_error(-res),
                });
            }
            let n = res as usize;
            let slot = &mut self.queue[i];
            // SAFETY: the read just filled these bytes of the buffer.
            let dst = unsafe { self.bufs[slot.buf].ptr.add(HEAD + slot.got) };
            self.file.count_read(at, n, dst, slot.started);
            self.read_calls += 1;
            self.bytes_read += if self.opts.direct && n > 0 {
                round_up(n as u64, ALIGN as u64)
            } else {
                n as u64
            };
            slot.got += n;
            let more = n > 0 && slot.got < slot.want && at + (n as u64) < self.file_len;
            if more {
                slot.started = self.file.tick();
                let slot = *slot;
                self.push_read(&slot)?;
                let ring = self.ring.as_mut().expect("uring engine");
                ring.submit().map_err(|source| IoError::Read {
                    path: self.path.clone(),
                    offset: at,
                    source,
                })?;
            } else {
                slot.done = true;
            }
        }
        Ok(())
    }

    /// The pread engine: advises the chunks ahead, then reads the next chunk whole.
    fn read_sync(&mut self) -> Result<Option<Slot>, IoError> {
        if self.next >= self.end {
            return Ok(None);
        }
        let want = self.want_at(self.next);
        if !self.opts.direct {
            let ahead = self.next + (self.opts.chunk * self.opts.depth) as u64;
            let ahead = ahead.min(self.end);
            // Advise in steps of half the window, not at every chunk.
            if ahead > self.advised && ahead - self.advised >= (ahead - self.next) / 2 {
                // SAFETY: fadvise on an open descriptor; advice only.
                unsafe {
                    libc::posix_fadvise(
                        self.file.as_raw_fd(),
                        self.advised as i64,
                        (ahead - self.advised) as i64,
                        libc::POSIX_FADV_WILLNEED,
                    )
                };
                self.advised = ahead;
            }
        }
        let buf = self.free.pop().expect("the pread engine's buffer is free");
        let offset = self.next;
        let mut got = 0;
        {
            let dst = &mut self.bufs[buf].slice_mut()[HEAD..HEAD + want];
            // Stop at the end of the file: a direct read there would not be aligned.
            while got < want && offset + (got as u64) < self.file_len {
                match self.file.read_at(&mut dst[got..], offset + got as u64) {
                    Ok(0) => break,
                    Ok(n) => {
                        got += n;
                        self.read_calls += 1;
                        self.bytes_read += if self.opts.direct {
                            round_up(n as u64, ALIGN as u64)
                        } else {
                            n as u64
                        };
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(source) => {
                        return Err(IoError::Read {
                            path: self.path.clone(),
                            offset: offset + got as u64,
                            source,
                        })
                    }
                }
            }
        }
        self.next += want as u64;
        Ok(Some(Slot {
            buf,
            offset,
            want,
            got,
            done: true,
            started: 0,
        }))
    }
}

impl<F: Deref<Target = CountedFile>> Drop for ReadAhead<F> {
    fn drop(&mut self) {
        // Reap every read in flight before the buffers go: the kernel still writes into them.
        if let Some(ring) = self.ring.as_mut() {
            let mut left = self.queue.iter().filter(|s| !s.done).count();
            while left > 0 {
                if ring.submit_and_wait(1).is_err() {
                    // The kernel no longer answers: leak the buffers rather than free memory
                    // it may still write.
                    std::mem::forget(std::mem::take(&mut self.bufs));
                    return;
                }
                left = left.saturating_sub(ring.completion().count());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn contents(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 % 251) as u8).collect()
    }

    /// Reads `range` with `opts` and returns the bytes handed out, checking offsets run on.
    fn read_all(
        f: &CountedFile,
        path: &Path,
        len: u64,
        range: Range<u64>,
        opts: AheadOptions,
    ) -> Vec<u8> {
        let mut r = ReadAhead::new(f, path, len, range.clone(), opts).unwrap();
        let mut out = Vec::new();
        let mut at = range.start;
        while let Some(c) = r.next_chunk().unwrap() {
            assert_eq!(c.offset, at);
            out.extend_from_slice(&c.buf[HEAD..HEAD + c.len]);
            at += c.len as u64;
        }
        out
    }

    #[test]
    fn every_engine_reads_the_range_exactly() {
        let len = 3 * ALIGN + 123; // not a multiple of the block size
        let data = contents(len);
        let mut t = tempfile::NamedTempFile::new().unwrap();
        t.write_all(&data).unwrap();
        let path = t.path().to_path_buf();
        let buffered = CountedFile::open(&path).unwrap();
        let direct = CountedFile::open_flags(&path, libc::O_RDONLY | libc::O_DIRECT, 0).ok();
        let uring = uring_available().is_ok();
        for (a, b) in [
            (0, len),
            (1, len),
            (4095, 8193),
            (ALIGN, 2 * ALIGN),
            (len - 1, len),
            (5, 5),
        ] {
            let want = &data[a..b];
            for chunk in [1, 7, 4096, 1 << 20] {
                for depth in [1, 3, 8] {
                    for (use_uring, use_direct) in
                        [(false, false), (true, false), (false, true), (true, true)]
                    {
                        if (use_uring && !uring) || (use_direct && direct.is_none()) {
                            continue;
                        }
                        let f = if use_direct {
                            direct.as_ref().unwrap()
                        } else {
                            &buffered
                        };
                        let opts = AheadOptions {
                            chunk,
                            depth,
                            uring: use_uring,
                            direct: use_direct,
                        };
                        let got = read_all(f, &path, len as u64, a as u64..b as u64, opts);
                        assert_eq!(got, want, "{a}..{b} {opts:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn direct_reads_count_whole_blocks() {
        let len = 2 * ALIGN + 10;
        let mut t = tempfile::NamedTempFile::new().unwrap();
        t.write_all(&contents(len)).unwrap();
        let Ok(f) = CountedFile::open_flags(t.path(), libc::O_RDONLY | libc::O_DIRECT, 0) else {
            return; // this filesystem refuses O_DIRECT: nothing to measure
        };
        let opts = AheadOptions {
            chunk: 1 << 20,
            depth: 4,
            uring: false,
            direct: true,
        };
        let mut r = ReadAhead::new(&f, t.path(), len as u64, 0..len as u64, opts).unwrap();
        while r.next_chunk().unwrap().is_some() {}
        assert_eq!(r.bytes_read, 3 * ALIGN as u64);
    }
}
