//! Owns the I/O counters a reader keeps ([`ReadCounters`]) and the read
//! amplification figure derived from them.

/// What a reader has read and yielded so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadCounters {
    /// Bytes returned by read calls on the file (compressed bytes for a
    /// compressed stream).
    pub bytes_read: u64,
    /// Number of read calls on the file.
    pub read_calls: u64,
    /// Records yielded, oversized ones included.
    pub records: u64,
    /// Oversized records yielded.
    pub oversized: u64,
    /// Bytes of record text produced by the source: equal to `bytes_read` for
    /// plain input, the decompressed size for gzip or zstd.
    pub decompressed_bytes: u64,
}

impl ReadCounters {
    /// Adds another reader's counters to these (e.g. summing slabs).
    pub fn add(&mut self, other: &ReadCounters) {
        self.bytes_read += other.bytes_read;
        self.read_calls += other.read_calls;
        self.records += other.records;
        self.oversized += other.oversized;
        self.decompressed_bytes += other.decompressed_bytes;
    }
}

/// Read amplification: bytes read from the file over its size. 1.0 means
/// every byte was read once; an empty file gives 0.0 (or infinity if
/// anything was read).
pub fn read_amplification(total_bytes_read: u64, file_len: u64) -> f64 {
    if file_len == 0 {
        return if total_bytes_read == 0 {
            0.0
        } else {
            f64::INFINITY
        };
    }
    total_bytes_read as f64 / file_len as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amplification() {
        assert_eq!(read_amplification(100, 100), 1.0);
        assert_eq!(read_amplification(0, 0), 0.0);
        let mut a = ReadCounters {
            bytes_read: 3,
            ..Default::default()
        };
        a.add(&ReadCounters {
            bytes_read: 4,
            records: 1,
            ..Default::default()
        });
        assert_eq!((a.bytes_read, a.records), (7, 1));
    }
}
