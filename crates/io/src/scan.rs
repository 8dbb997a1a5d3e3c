//! Owns the in-memory block scans behind the fast counter: counting the
//! newlines that are followed by a record line, 64 bytes at a time (AVX2
//! when the CPU has it, a portable loop otherwise).

use crate::record::{is_line_ws, is_plain_start};

/// What a line scan found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineScan {
    /// Newlines followed by the start of a record line.
    pub starts: u64,
    /// Newlines seen.
    pub newlines: u64,
}

/// Scans positions `j` in `[0, s.len() - 1)`: each `s[j] == b'\n'` counts
/// as a newline, and as a record start when `s[j + 1]` begins a record line.
/// Lines beginning with a space, tab or `\r` are rare and decided by
/// `slow(j + 1)`, which may look past the end of `s`.
pub(crate) fn scan_line_starts<E>(
    s: &[u8],
    slow: &mut dyn FnMut(usize) -> Result<bool, E>,
) -> Result<LineScan, E> {
    let mut acc = LineScan::default();
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            done = unsafe { avx2::scan(s, &mut acc, slow)? };
        }
    }
    scan_scalar(s, done, &mut acc, slow)?;
    Ok(acc)
}

/// The portable scan of positions `[from, s.len() - 1)`.
fn scan_scalar<E>(
    s: &[u8],
    from: usize,
    acc: &mut LineScan,
    slow: &mut dyn FnMut(usize) -> Result<bool, E>,
) -> Result<(), E> {
    if s.len() < 2 || from >= s.len() - 1 {
        return Ok(());
    }
    let last = s.len() - 1;
    for j in memchr::memchr_iter(b'\n', &s[from..last]) {
        let j = from + j;
        acc.newlines += 1;
        let c = s[j + 1];
        if is_plain_start(c) || (is_line_ws(c) && slow(j + 1)?) {
            acc.starts += 1;
        }
    }
    Ok(())
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::LineScan;
    use std::arch::x86_64::*;

    /// Lookup table indexed by a byte's low nibble, holding the one byte of
    /// the "special" set with that low nibble (0xFF where none). A byte `b`
    /// is special iff `shuffle(table, b) == b` (bytes >= 0x80 shuffle to 0).
    /// Special bytes cannot plainly start a record line: `\n \r space \t #`.
    const SPECIAL: [u8; 16] = [
        0x20, 0xFF, 0xFF, 0x23, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x09, 0x0A, 0xFF, 0xFF, 0x0D, 0xFF,
        0xFF,
    ];

    /// Bytes per group: 64 steps of 32 bytes, so per-lane newline counts
    /// (at most 64) fit in a byte.
    const GROUP: usize = 64 * 32;
    /// Bytes ahead of the scan asked into the cache (`prefetch`, every 64 bytes): the hardware
    /// prefetcher alone left a cached 2 GB file counted at 11 GB/s on 2 cores, this at 16-19
    /// (BENCHMARKS.md). A prefetch past the end of the data is a hint, never a fault.
    const PREFETCH: usize = 4096;

    /// The constant vectors: the special table and `\n` in every lane.
    ///
    /// # Safety
    /// The CPU supports AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn constants() -> (__m256i, __m256i) {
        // SAFETY: the table is 16 readable bytes; the caller guarantees AVX2.
        unsafe {
            let t = _mm_loadu_si128(SPECIAL.as_ptr() as *const __m128i);
            (
                _mm256_broadcastsi128_si256(t),
                _mm256_set1_epi8(b'\n' as i8),
            )
        }
    }

    /// Lanes of the 32 bytes at `p` that are `\n` and lanes where the byte
    /// after them (at `p + 1`) is special and follows a `\n`.
    ///
    /// # Safety
    /// The CPU supports AVX2 and `p..p+33` is readable.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn step(p: *const u8, special: __m256i, nl: __m256i) -> (__m256i, __m256i) {
        // SAFETY: the caller guarantees AVX2 and 33 readable bytes.
        unsafe {
            let here = _mm256_loadu_si256(p as *const __m256i);
            let next = _mm256_loadu_si256(p.add(1) as *const __m256i);
            let is_nl = _mm256_cmpeq_epi8(here, nl);
            let next_special = _mm256_cmpeq_epi8(_mm256_shuffle_epi8(special, next), next);
            (is_nl, _mm256_and_si256(is_nl, next_special))
        }
    }

    /// Scans whole groups of bytes while a group plus one byte fits; returns
    /// the first position not scanned. Counts every newline as a record
    /// start, then takes back those whose next line is blank, a comment, or
    /// (decided by `slow`) whitespace only.
    ///
    /// # Safety
    /// The CPU supports AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn scan<E>(
        s: &[u8],
        acc: &mut LineScan,
        slow: &mut dyn FnMut(usize) -> Result<bool, E>,
    ) -> Result<usize, E> {
        let p = s.as_ptr();
        // SAFETY: the caller guarantees AVX2.
        let (special, nl) = unsafe { constants() };
        let mut g = 0;
        while g + GROUP < s.len() {
            // SAFETY: bytes [g, g + GROUP + 1) are in bounds.
            let (count, odd) = unsafe {
                let mut count = _mm256_setzero_si256();
                let mut odd = _mm256_setzero_si256();
                for i in 0..GROUP / 32 {
                    if i % 2 == 0 {
                        _mm_prefetch(
                            p.wrapping_add(g + 32 * i + PREFETCH) as *const i8,
                            _MM_HINT_T0,
                        );
                    }
                    let (is_nl, nl_special) = step(p.add(g + 32 * i), special, nl);
                    count = _mm256_sub_epi8(count, is_nl);
                    odd = _mm256_or_si256(odd, nl_special);
                }
                let sums = _mm256_sad_epu8(count, _mm256_setzero_si256());
                let lanes: [u64; 4] = std::mem::transmute(sums);
                (lanes.iter().sum::<u64>(), _mm256_testz_si256(odd, odd) == 0)
            };
            acc.newlines += count;
            acc.starts += count;
            if odd {
                // SAFETY: as above.
                acc.starts -= unsafe { not_starts(s, g, slow)? };
            }
            g += GROUP;
        }
        Ok(g)
    }

    /// Newlines in group `[g, g + GROUP)` whose next line is not a record.
    ///
    /// # Safety
    /// The CPU supports AVX2 and bytes `[g, g + GROUP + 1)` are in bounds.
    #[cold]
    #[inline(never)]
    #[target_feature(enable = "avx2")]
    unsafe fn not_starts<E>(
        s: &[u8],
        g: usize,
        slow: &mut dyn FnMut(usize) -> Result<bool, E>,
    ) -> Result<u64, E> {
        let mut not = 0;
        for i in 0..GROUP / 32 {
            let at = g + 32 * i;
            // SAFETY: the caller guarantees AVX2 and the bytes.
            let mut m = unsafe {
                let (special, nl) = constants();
                let (_, nl_special) = step(s.as_ptr().add(at), special, nl);
                _mm256_movemask_epi8(nl_special) as u32
            };
            while m != 0 {
                let j = at + m.trailing_zeros() as usize + 1;
                if matches!(s[j], b'\n' | b'#') || !slow(j)? {
                    not += 1;
                }
                m &= m - 1;
            }
        }
        Ok(not)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::line_at_is_record;

    fn reference(s: &[u8]) -> LineScan {
        let mut acc = LineScan::default();
        for j in 0..s.len().saturating_sub(1) {
            if s[j] == b'\n' {
                acc.newlines += 1;
                if line_at_is_record(&s[j + 1..]).unwrap_or(false) {
                    acc.starts += 1;
                }
            }
        }
        acc
    }

    /// Bytes from a small alphabet rich in line starts of every kind.
    fn noise(len: usize, seed: u64, alphabet: &[u8]) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                alphabet[(x % alphabet.len() as u64) as usize]
            })
            .collect()
    }

    #[test]
    fn matches_reference_on_long_inputs() {
        let alphabets: [&[u8]; 3] = [
            b"\n \t\r#CO",
            b"CCCCCCCCCO(=)\n",
            b"CCCCCCCCCCCCCCCCCCCC\n\n #",
        ];
        for (seed, alphabet) in alphabets.iter().enumerate() {
            let text = noise(20_000, seed as u64 + 7, alphabet);
            for len in (0..text.len())
                .step_by(997)
                .chain([2047, 2048, 2049, 4096, 4097, 6145])
            {
                for from in [0, 1, 31, 64] {
                    let s = &text[from.min(len)..len];
                    let mut slow =
                        |j: usize| Ok::<_, ()>(line_at_is_record(&s[j..]).unwrap_or(false));
                    let got = scan_line_starts(s, &mut slow).unwrap();
                    assert_eq!(got, reference(s), "alphabet {seed} len {len} from {from}");
                }
            }
        }
    }

    #[test]
    fn matches_reference_at_every_length() {
        let unit: &[u8] = b"CCO\n\n  \n# c\n \tN x\r\n\r\n#\nC\n  #\nO=C\n";
        let text: Vec<u8> = unit.iter().cycle().take(unit.len() * 9).copied().collect();
        for len in 0..text.len() {
            for from in [0, 1, 5] {
                let s = &text[from.min(len)..len];
                let mut slow = |j: usize| Ok::<_, ()>(line_at_is_record(&s[j..]).unwrap_or(false));
                let got = scan_line_starts(s, &mut slow).unwrap();
                assert_eq!(got, reference(s), "len {len} from {from}");
            }
        }
    }
}
