//! Owns the slab convention: how a file is cut into byte ranges ("slabs")
//! that readers and counters work on independently, and [`RecordKind`].

use std::ops::Range;

/// How records are delimited in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordKind {
    /// One record per line (SMILES files, CSV/TSV). Blank, whitespace-only
    /// and `#` comment lines are not records.
    Line,
    /// SDF: one record per block of lines ending with a `$$$$` line.
    Sdf,
}

/// Byte ranges of `n` slabs covering `[0, len)`: contiguous, in order, sizes
/// differing by at most one byte (the first `len % n` slabs are one byte
/// longer). `n == 0` is taken as 1. When `len < n` some slabs are empty.
///
/// A slab owns the records that *start* inside it; a reader reads a little
/// before it (to find its first record start) and past its end (to finish
/// its last record).
pub fn split_slabs(len: u64, n: usize) -> Vec<Range<u64>> {
    let n = n.max(1) as u64;
    let base = len / n;
    let extra = len % n;
    (0..n)
        .map(|i| {
            let start = i * base + i.min(extra);
            let end = start + base + u64::from(i < extra);
            start..end
        })
        .collect()
}

/// Byte ranges covering `[0, len)` for `workers` workers that take slabs from a shared queue,
/// shrinking towards the end ("guided" scheduling) so that the workers finish together: each
/// slab is `max(remaining / (2 * workers), min_len)` bytes, the last one what is left.
/// `min_len == 0` means `len / (32 * workers)` (at least 1). Contiguous and in order; never
/// empty unless `len == 0` (then one empty slab).
///
/// With equal slabs the last wave leaves up to one slab of idle time per worker; here the last
/// slabs are about 1/32 of a worker's share. Only for dynamic queues: a static round-robin
/// (MPI ranks) would hand the first, larger slab of every wave to the same rank.
pub fn guided_slabs(len: u64, workers: usize, min_len: u64) -> Vec<Range<u64>> {
    let w = workers.max(1) as u64;
    let min_len = if min_len == 0 {
        (len / (32 * w)).max(1)
    } else {
        min_len
    };
    let mut out = Vec::new();
    let mut start = 0;
    while start < len {
        let remaining = len - start;
        let size = (remaining / (2 * w)).max(min_len).min(remaining);
        out.push(start..start + size);
        start += size;
    }
    if out.is_empty() {
        out.push(0..0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_exactly() {
        for len in [0u64, 1, 5, 63, 64, 65, 1000, 12345] {
            for n in [0usize, 1, 2, 3, 7, 64, 100] {
                let s = split_slabs(len, n);
                assert_eq!(s.len(), n.max(1));
                assert_eq!(s[0].start, 0);
                assert_eq!(s.last().unwrap().end, len);
                for w in s.windows(2) {
                    assert_eq!(w[0].end, w[1].start);
                }
                let sizes: Vec<u64> = s.iter().map(|r| r.end - r.start).collect();
                let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
                assert!(hi - lo <= 1);
            }
        }
    }

    #[test]
    fn guided_covers_exactly_and_shrinks() {
        for len in [0u64, 1, 5, 63, 1000, 12345, 58_408_794] {
            for workers in [0usize, 1, 2, 3, 16, 100] {
                for min_len in [0u64, 1, 7, 4096] {
                    let s = guided_slabs(len, workers, min_len);
                    assert_eq!(s[0].start, 0);
                    assert_eq!(s.last().unwrap().end, len);
                    for w in s.windows(2) {
                        assert_eq!(w[0].end, w[1].start);
                        assert!(w[0].end > w[0].start);
                        // sizes never grow, except that the last slab may be a remainder
                        assert!(w[1].end - w[1].start <= w[0].end - w[0].start);
                    }
                }
            }
        }
        // 16 workers over MOSES: the first slab is 1/32 of the file, the last ones 1/512
        let s = guided_slabs(58_408_794, 16, 0);
        assert_eq!(s[0].end, 58_408_794 / 32);
        assert_eq!(s[s.len() - 2].end - s[s.len() - 2].start, 58_408_794 / 512);
        assert!(s.len() > 32 && s.len() < 200, "{}", s.len());
    }
}
