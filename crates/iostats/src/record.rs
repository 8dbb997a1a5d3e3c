//! Owns the counters of one file in one process ([`FileStats`]) and Darshan's rules for
//! updating them: the request-size bins, sequential and consecutive requests, the slowest
//! request, timestamps and the time histogram of bytes. These are the rules of
//! `crates/tracer/tracer.c` (`count_io`, `size_bin`, `heat_add`), written once here for every
//! counted file of molsift; `tests/test_iostats.py` runs the same requests through both and
//! compares the counters.

use std::sync::Mutex;

use super::clock::Clock;

/// Integer counters, Darshan's names without the `POSIX_` prefix, in the order of the log.
#[rustfmt::skip]
pub const COUNTER_NAMES: [&str; NCOUNTERS] = [
    "OPENS", "FDOPENS", "DUPS", "READS", "WRITES", "SEEKS", "STATS", "MMAPS", "FSYNCS", "FDSYNCS",
    "FLUSHES", "BYTES_READ", "BYTES_WRITTEN", "MAX_BYTE_READ", "MAX_BYTE_WRITTEN", "CONSEC_READS",
    "CONSEC_WRITES", "SEQ_READS", "SEQ_WRITES", "RW_SWITCHES", "MEM_NOT_ALIGNED",
    "FILE_NOT_ALIGNED", "MAX_READ_TIME_SIZE", "MAX_WRITE_TIME_SIZE",
    "SIZE_READ_0_100", "SIZE_READ_100_1K", "SIZE_READ_1K_10K", "SIZE_READ_10K_100K",
    "SIZE_READ_100K_1M", "SIZE_READ_1M_4M", "SIZE_READ_4M_10M", "SIZE_READ_10M_100M",
    "SIZE_READ_100M_1G", "SIZE_READ_1G_PLUS",
    "SIZE_WRITE_0_100", "SIZE_WRITE_100_1K", "SIZE_WRITE_1K_10K", "SIZE_WRITE_10K_100K",
    "SIZE_WRITE_100K_1M", "SIZE_WRITE_1M_4M", "SIZE_WRITE_4M_10M", "SIZE_WRITE_10M_100M",
    "SIZE_WRITE_100M_1G", "SIZE_WRITE_1G_PLUS",
];

/// Floating-point counters (seconds), Darshan's names without the prefix.
#[rustfmt::skip]
pub const FCOUNTER_NAMES: [&str; NFCOUNTERS] = [
    "F_OPEN_START_TIMESTAMP", "F_READ_START_TIMESTAMP", "F_WRITE_START_TIMESTAMP",
    "F_CLOSE_START_TIMESTAMP", "F_OPEN_END_TIMESTAMP", "F_READ_END_TIMESTAMP",
    "F_WRITE_END_TIMESTAMP", "F_CLOSE_END_TIMESTAMP", "F_READ_TIME", "F_WRITE_TIME",
    "F_META_TIME", "F_MAX_READ_TIME", "F_MAX_WRITE_TIME",
];

pub(crate) const NCOUNTERS: usize = 44;
pub(crate) const NFCOUNTERS: usize = 13;

// Indexes into `COUNTER_NAMES`.
pub(crate) const OPENS: usize = 0;
pub(crate) const READS: usize = 3;
pub(crate) const WRITES: usize = 4;
pub(crate) const SEEKS: usize = 5;
pub(crate) const STATS: usize = 6;
pub(crate) const MMAPS: usize = 7;
pub(crate) const FSYNCS: usize = 8;
pub(crate) const FDSYNCS: usize = 9;
const BYTES_READ: usize = 11;
const MAX_BYTE_READ: usize = 13;
const CONSEC_READS: usize = 15;
const SEQ_READS: usize = 17;
const RW_SWITCHES: usize = 19;
const MEM_NOT_ALIGNED: usize = 20;
const FILE_NOT_ALIGNED: usize = 21;
const MAX_READ_TIME_SIZE: usize = 22;
const SIZE_READ_0: usize = 24;

// Indexes into `FCOUNTER_NAMES`.
const F_OPEN_START: usize = 0;
const F_READ_START: usize = 1;
const F_CLOSE_START: usize = 3;
const F_OPEN_END: usize = 4;
const F_READ_END: usize = 5;
const F_CLOSE_END: usize = 7;
const F_READ_TIME: usize = 8;
const F_WRITE_TIME: usize = 9;
const F_META_TIME: usize = 10;
const F_MAX_READ_TIME: usize = 11;

/// Buffers whose address is not a multiple of this are "not aligned" (Darshan's default).
pub const MEM_ALIGNMENT: i64 = 8;
/// Bins of the time histogram of bytes per record.
pub const HEAT_BINS: usize = 32;
/// Width of a time-histogram bin at the start; doubled whenever the run outgrows the bins.
pub const HEAT_FIRST_WIDTH: f64 = 0.05;

/// Darshan's request-size bin of a request of `bytes` (inclusive upper bounds 100 B, 1 KiB,
/// 10 KiB, 100 KiB, 1 MiB, 4 MiB, 10 MiB, 100 MiB, 1 GiB; then 1G_PLUS).
pub fn size_bin(bytes: u64) -> usize {
    const EDGES: [u64; 9] = [
        100,
        1 << 10,
        10 << 10,
        100 << 10,
        1 << 20,
        4 << 20,
        10 << 20,
        100 << 20,
        1 << 30,
    ];
    EDGES.iter().take_while(|&&e| bytes > e).count()
}

/// Read or write: selects the counter of each pair (the write counter follows the read one).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Op {
    Read = 0,
    Write = 1,
}

/// The time histogram of one record: bytes per bin, bin `i` covering
/// `[i, i + 1) * width` seconds after the process start.
#[derive(Clone, Debug)]
pub(crate) struct Heatmap {
    pub width: f64,
    pub bins: [[i64; HEAT_BINS]; 2],
}

impl Heatmap {
    fn new() -> Heatmap {
        Heatmap {
            width: HEAT_FIRST_WIDTH,
            bins: [[0; HEAT_BINS]; 2],
        }
    }

    /// Adds `bytes` at time `t`, doubling the bin width (merging pairs) until `t` fits.
    fn add(&mut self, op: Op, t: f64, bytes: i64) {
        while t >= self.width * HEAT_BINS as f64 {
            self.double();
        }
        let b = if t < 0.0 {
            0
        } else {
            (t / self.width) as usize
        };
        self.bins[op as usize][b.min(HEAT_BINS - 1)] += bytes;
    }

    fn double(&mut self) {
        for row in &mut self.bins {
            for b in 0..HEAT_BINS / 2 {
                row[b] = row[2 * b] + row[2 * b + 1];
            }
            row[HEAT_BINS / 2..].fill(0);
        }
        self.width *= 2.0;
    }

    /// Merges bins until the width is at least `width` (the process-wide width of the log).
    pub(crate) fn widen_to(&mut self, width: f64) {
        while self.width < width * 0.999 {
            self.double();
        }
    }
}

/// Everything counted for one file in one process.
#[derive(Clone, Debug)]
pub(crate) struct Counters {
    pub c: [i64; NCOUNTERS],
    pub f: [f64; NFCOUNTERS],
    last_byte: [i64; 2],
    pub file_size: i64,
    pub file_alignment: i64,
    last_op: Option<Op>,
    pub heat: Heatmap,
}

impl Counters {
    fn new() -> Counters {
        Counters {
            c: [0; NCOUNTERS],
            f: [0.0; NFCOUNTERS],
            last_byte: [0; 2],
            file_size: 0,
            file_alignment: 0,
            last_op: None,
            heat: Heatmap::new(),
        }
    }

    /// Whether any counter is set (records with none are left out of the log, as in the tracer).
    pub fn active(&self) -> bool {
        self.c.iter().any(|&x| x != 0)
    }

    fn meta_time(&mut self, t1: f64, t2: f64) {
        self.f[F_META_TIME] += t2 - t1;
    }

    /// One read or write of `bytes` at `offset` (Darshan's POSIX_RECORD_READ/WRITE rules).
    fn io(&mut self, op: Op, bytes: i64, offset: i64, mem_aligned: bool, t1: f64, t2: f64) {
        let k = op as usize;
        let last = self.last_byte[k];
        if offset > last {
            self.c[SEQ_READS + k] += 1;
        }
        if offset == last + 1 {
            self.c[CONSEC_READS + k] += 1;
        }
        let end = offset + bytes - 1;
        self.last_byte[k] = end;
        if self.c[MAX_BYTE_READ + k] < end {
            self.c[MAX_BYTE_READ + k] = end;
        }
        if op == Op::Write && offset + bytes > self.file_size {
            self.file_size = offset + bytes;
        }
        self.c[BYTES_READ + k] += bytes;
        self.c[READS + k] += 1;
        self.c[SIZE_READ_0 + 10 * k + size_bin(bytes as u64)] += 1;
        if self.last_op.is_some_and(|o| o != op) {
            self.c[RW_SWITCHES] += 1;
        }
        self.last_op = Some(op);
        if !mem_aligned {
            self.c[MEM_NOT_ALIGNED] += 1;
        }
        if self.file_alignment > 0 && offset % self.file_alignment != 0 {
            self.c[FILE_NOT_ALIGNED] += 1;
        }
        if self.f[F_READ_START + k] == 0.0 {
            self.f[F_READ_START + k] = t1;
        }
        self.f[F_READ_END + k] = t2;
        let el = t2 - t1;
        self.f[F_READ_TIME + k] += el;
        if self.f[F_MAX_READ_TIME + k] < el {
            self.f[F_MAX_READ_TIME + k] = el;
            self.c[MAX_READ_TIME_SIZE + k] = bytes;
        }
        self.heat.add(op, t1, bytes);
    }
}

/// The counters of one file (by absolute, lexically cleaned path) in this process. Shared by
/// every [`CountedFile`](crate::CountedFile) open on that path; the lock is held for a few
/// dozen nanoseconds per request.
pub struct FileStats {
    pub(crate) path: String,
    clock: Clock,
    pub(crate) inner: Mutex<Counters>,
}

impl FileStats {
    pub(crate) fn new(path: String, clock: Clock) -> FileStats {
        FileStats {
            path,
            clock,
            inner: Mutex::new(Counters::new()),
        }
    }

    /// Seconds from the process start (of the counters) to `t` (ticks of [`clock::now`](super::clock::now)).
    #[inline]
    pub(crate) fn secs(&self, t: u64) -> f64 {
        self.clock.secs(t)
    }

    #[inline]
    fn with<R>(&self, f: impl FnOnce(&mut Counters) -> R) -> R {
        let mut c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut c)
    }

    /// A successful open; `size` and `block` from the descriptor when known.
    pub(crate) fn open(&self, t1: u64, t2: u64, size: Option<(i64, i64)>) {
        let (a, b) = (self.secs(t1), self.secs(t2));
        self.with(|c| {
            if let Some((size, block)) = size {
                if c.file_alignment == 0 {
                    c.file_alignment = block;
                }
                c.file_size = c.file_size.max(size);
            }
            c.c[OPENS] += 1;
            if c.f[F_OPEN_START] == 0.0 {
                c.f[F_OPEN_START] = a;
            }
            c.f[F_OPEN_END] = b;
            c.meta_time(a, b);
        })
    }

    /// A close.
    pub(crate) fn close(&self, t1: u64, t2: u64) {
        let (a, b) = (self.secs(t1), self.secs(t2));
        self.with(|c| {
            if c.f[F_CLOSE_START] == 0.0 {
                c.f[F_CLOSE_START] = a;
            }
            c.f[F_CLOSE_END] = b;
            c.meta_time(a, b);
        })
    }

    /// One read or write request that returned `bytes`.
    #[inline]
    pub(crate) fn io(&self, op: Op, bytes: usize, offset: u64, buf: *const u8, t1: u64, t2: u64) {
        let (a, b) = (self.secs(t1), self.secs(t2));
        let aligned = (buf as usize) & (MEM_ALIGNMENT as usize - 1) == 0; // a power of two
        self.with(|c| c.io(op, bytes as i64, offset as i64, aligned, a, b))
    }

    /// A counter bump: seeks, stats and mmaps are metadata time, fsyncs write time. A stat
    /// may tell the size of a regular file.
    pub(crate) fn event(&self, counter: usize, t1: u64, t2: u64, size: Option<i64>) {
        let (a, b) = (self.secs(t1), self.secs(t2));
        self.with(|c| {
            c.c[counter] += 1;
            if counter == FSYNCS || counter == FDSYNCS {
                c.f[F_WRITE_TIME] += b - a;
            } else {
                c.meta_time(a, b);
            }
            if let Some(s) = size {
                c.file_size = c.file_size.max(s);
            }
        })
    }

    /// A copy of the counters.
    pub(crate) fn snapshot(&self) -> Counters {
        self.with(|c| c.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_line_up_with_indexes() {
        assert_eq!(COUNTER_NAMES[READS], "READS");
        assert_eq!(COUNTER_NAMES[READS + 1], "WRITES");
        assert_eq!(COUNTER_NAMES[SEEKS], "SEEKS");
        assert_eq!(COUNTER_NAMES[STATS], "STATS");
        assert_eq!(COUNTER_NAMES[MMAPS], "MMAPS");
        assert_eq!(COUNTER_NAMES[FSYNCS], "FSYNCS");
        assert_eq!(COUNTER_NAMES[FDSYNCS], "FDSYNCS");
        assert_eq!(COUNTER_NAMES[BYTES_READ + 1], "BYTES_WRITTEN");
        assert_eq!(COUNTER_NAMES[MAX_BYTE_READ + 1], "MAX_BYTE_WRITTEN");
        assert_eq!(COUNTER_NAMES[CONSEC_READS + 1], "CONSEC_WRITES");
        assert_eq!(COUNTER_NAMES[SEQ_READS + 1], "SEQ_WRITES");
        assert_eq!(COUNTER_NAMES[RW_SWITCHES], "RW_SWITCHES");
        assert_eq!(COUNTER_NAMES[MEM_NOT_ALIGNED], "MEM_NOT_ALIGNED");
        assert_eq!(COUNTER_NAMES[FILE_NOT_ALIGNED], "FILE_NOT_ALIGNED");
        assert_eq!(COUNTER_NAMES[MAX_READ_TIME_SIZE + 1], "MAX_WRITE_TIME_SIZE");
        assert_eq!(COUNTER_NAMES[SIZE_READ_0], "SIZE_READ_0_100");
        assert_eq!(COUNTER_NAMES[SIZE_READ_0 + 10], "SIZE_WRITE_0_100");
        assert_eq!(FCOUNTER_NAMES[F_READ_START + 1], "F_WRITE_START_TIMESTAMP");
        assert_eq!(FCOUNTER_NAMES[F_READ_END + 1], "F_WRITE_END_TIMESTAMP");
        assert_eq!(FCOUNTER_NAMES[F_CLOSE_END], "F_CLOSE_END_TIMESTAMP");
        assert_eq!(FCOUNTER_NAMES[F_MAX_READ_TIME + 1], "F_MAX_WRITE_TIME");
    }

    #[test]
    fn size_bins_have_inclusive_upper_bounds() {
        let cases = [
            (0, 0),
            (100, 0),
            (101, 1),
            (1024, 1),
            (1025, 2),
            (10240, 2),
            (102_400, 3),
            (1 << 20, 4),
            ((1 << 20) + 1, 5),
            (4 << 20, 5),
            (10 << 20, 6),
            (100 << 20, 7),
            (1 << 30, 8),
            ((1 << 30) + 1, 9),
        ];
        for (bytes, bin) in cases {
            assert_eq!(size_bin(bytes), bin, "{bytes} bytes");
        }
    }

    #[test]
    fn sequential_and_consecutive_follow_darshan() {
        let mut c = Counters::new();
        // offsets 0 (neither: first), 100 (both), 300 (sequential only), 0 (neither)
        for off in [0, 100, 300, 0] {
            c.io(Op::Read, 100, off, true, 0.0, 0.0);
        }
        assert_eq!((c.c[SEQ_READS], c.c[CONSEC_READS]), (2, 1));
        assert_eq!(c.c[MAX_BYTE_READ], 399);
        c.io(Op::Write, 0, 7, false, 0.0, 0.0);
        assert_eq!(c.c[MAX_BYTE_READ + 1], 6); // offset + 0 - 1
        assert_eq!((c.c[RW_SWITCHES], c.c[MEM_NOT_ALIGNED]), (1, 1));
        assert_eq!(c.file_size, 7);
    }

    #[test]
    fn heatmap_doubles_by_merging_pairs() {
        let mut h = Heatmap::new();
        h.add(Op::Read, 0.01, 5); // bin 0
        h.add(Op::Read, 0.06, 7); // bin 1
        h.add(Op::Write, 1.6, 3); // past 32 * 0.05 = 1.6 s: width 0.1, bin 16
        assert_eq!(h.width, 0.1);
        assert_eq!(h.bins[0][0], 12);
        assert_eq!(h.bins[1][16], 3);
        h.widen_to(0.4);
        assert_eq!((h.width, h.bins[0][0], h.bins[1][4]), (0.4, 12, 3));
    }
}
