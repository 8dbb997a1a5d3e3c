//! Owns the read buffer: a fixed-capacity window onto the input that is
//! refilled with its unread tail rolled to the front, and grows only when
//! one unfinished record fills it. Also the [`Source`] trait a window reads from.

use crate::counters::ReadCounters;
use crate::error::IoError;

/// The smallest capacity a window grows to, so that a short partial line
/// (up to an SDF terminator's length) always fits.
pub(crate) const MIN_GROWTH: usize = 64;

/// Where a window's bytes come from.
pub(crate) trait Source {
    /// Reads into `dst` (never empty). Returns 0 only at the end of input.
    /// Decides itself how many bytes to ask for and updates `counters`.
    fn read(&mut self, dst: &mut [u8], counters: &mut ReadCounters) -> Result<usize, IoError>;
}

/// A window of the input: `buf[start..end]` holds unconsumed bytes whose
/// first byte sits at absolute offset `base + start`.
pub(crate) struct Window<S> {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    base: u64,
    eof: bool,
    limit: usize,
    src: S,
    pub(crate) counters: ReadCounters,
    /// Absolute offset up to which buffered bytes were searched for NUL.
    nul_checked: u64,
    /// Absolute offset of the first NUL found at or after the last query,
    /// `u64::MAX` if none up to `nul_checked`.
    next_nul: u64,
}

impl<S: Source> Window<S> {
    /// A window whose first byte will be at absolute offset `base`; it starts
    /// with `capacity` bytes and may grow up to `limit`.
    pub(crate) fn new(src: S, base: u64, capacity: usize, limit: usize) -> Self {
        let limit = limit.max(MIN_GROWTH).max(capacity);
        Window {
            buf: vec![0; capacity.max(1)],
            start: 0,
            end: 0,
            base,
            eof: false,
            limit,
            src,
            counters: ReadCounters::default(),
            nul_checked: base,
            next_nul: u64::MAX,
        }
    }

    /// The unconsumed bytes.
    #[inline]
    pub(crate) fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Absolute offset of `data()[0]`.
    #[inline]
    pub(crate) fn pos(&self) -> u64 {
        self.base + self.start as u64
    }

    /// Whether the source has reported the end of input.
    #[inline]
    pub(crate) fn eof(&self) -> bool {
        self.eof
    }

    /// Index in the buffer of `data()[0]`, for slicing after `consume`.
    #[inline]
    pub(crate) fn data_index(&self) -> usize {
        self.start
    }

    /// Buffer bytes by buffer index; valid until the next `fill`.
    #[inline]
    pub(crate) fn buf_slice(&self, range: std::ops::Range<usize>) -> &[u8] {
        &self.buf[range]
    }

    /// Whether the bytes at absolute offsets `[a, b)` (unconsumed, in the
    /// buffer, queried in increasing order of `a`) hold a NUL. The buffer is
    /// searched once, in bulk, rather than record by record.
    #[inline]
    pub(crate) fn has_nul(&mut self, a: u64, b: u64) -> bool {
        if self.next_nul < a {
            self.next_nul = u64::MAX;
            self.nul_checked = self.nul_checked.max(a);
        }
        if self.next_nul == u64::MAX && self.nul_checked < b {
            let from = self.nul_checked.max(a);
            let at = (from - self.base) as usize;
            self.nul_checked = match memchr::memchr(0, &self.buf[at..self.end]) {
                Some(i) => {
                    self.next_nul = from + i as u64;
                    self.next_nul + 1
                }
                None => self.base + self.end as u64,
            };
        }
        self.next_nul < b
    }

    /// Marks the first `n` unconsumed bytes as used.
    #[inline]
    pub(crate) fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.end - self.start);
        self.start += n;
    }

    /// The source being read.
    pub(crate) fn source(&self) -> &S {
        &self.src
    }

    /// Current capacity of the buffer.
    pub(crate) fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Reads more input after the unconsumed bytes, which are kept (rolled to
    /// the front). The buffer grows only when they fill it. Returns the number
    /// of bytes added; 0 means the end of input.
    pub(crate) fn fill(&mut self) -> Result<usize, IoError> {
        if self.eof {
            return Ok(0);
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.base += self.start as u64;
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            assert!(
                self.buf.len() < self.limit,
                "molsift-io: read window asked to grow past its limit"
            );
            let grown = (self.buf.len() * 2).max(MIN_GROWTH).min(self.limit);
            self.buf.resize(grown, 0);
        }
        let n = self
            .src
            .read(&mut self.buf[self.end..], &mut self.counters)?;
        if n == 0 {
            self.eof = true;
        }
        self.end += n;
        Ok(n)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A source over memory that hands out at most `step` bytes per read.
    pub(crate) struct MemSource {
        pub data: Vec<u8>,
        pub pos: usize,
        pub step: usize,
    }

    impl Source for MemSource {
        fn read(&mut self, dst: &mut [u8], c: &mut ReadCounters) -> Result<usize, IoError> {
            let n = dst.len().min(self.step).min(self.data.len() - self.pos);
            dst[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
            self.pos += n;
            c.bytes_read += n as u64;
            c.read_calls += 1;
            Ok(n)
        }
    }

    #[test]
    fn rolls_and_grows() {
        let src = MemSource {
            data: b"abcdefghij".to_vec(),
            pos: 0,
            step: 3,
        };
        let mut w = Window::new(src, 0, 4, 100);
        assert_eq!(w.fill().unwrap(), 3);
        assert_eq!(w.data(), b"abc");
        w.consume(2);
        assert_eq!(w.pos(), 2);
        assert_eq!(w.fill().unwrap(), 3);
        assert_eq!(w.data(), b"cdef");
        assert_eq!(w.pos(), 2);
        assert_eq!(w.capacity(), 4);
        w.fill().unwrap(); // full with nothing consumed: grows
        assert_eq!(w.data(), b"cdefghi");
        assert!(w.capacity() >= 7);
        w.fill().unwrap();
        assert_eq!(w.fill().unwrap(), 0);
        assert!(w.eof());
        assert_eq!(w.data(), b"cdefghij");
    }

    #[test]
    fn finds_nul_bytes_in_bulk() {
        let src = MemSource {
            data: b"ab\0cd\0\0efgh\0".to_vec(),
            pos: 0,
            step: 4,
        };
        let mut w = Window::new(src, 0, 4, 100);
        w.fill().unwrap();
        assert!(!w.has_nul(0, 2));
        assert!(w.has_nul(1, 3));
        w.consume(3);
        while w.fill().unwrap() > 0 {}
        assert!(!w.has_nul(3, 5));
        assert!(w.has_nul(5, 6));
        assert!(w.has_nul(6, 7));
        assert!(!w.has_nul(7, 11));
        assert!(w.has_nul(8, 12));
    }
}
