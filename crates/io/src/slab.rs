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
}
