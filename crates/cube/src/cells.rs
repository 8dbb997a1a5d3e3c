//! Rows of 13-column cells (` [ -]d.dddddE+dd`, six to a line: CP2K, Gaussian, PySCF) parsed
//! two cells per AVX2 register: each cell's shape checked against a template, its eight digits
//! gathered and combined by multiply-adds, then one exact multiply or divide per value
//! (Clinger's fast path, as the scalar parser). A cell the fast path cannot take (a decimal
//! exponent beyond +-22, an `f32` midpoint) is parsed alone by the general parser; any other
//! shape makes the row fall back, as the scalar [`crate::parse_cells`] does.

/// Whether this CPU runs the AVX2 path (detected once by `std`, then a cached load).
pub(crate) fn have_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
    use crate::parse::{cell, parse_values, CubeFloat, POW10};
    use std::arch::x86_64::*;

    /// Per byte of a cell: the two accepted templates (digit places hold 0, never compared).
    /// Place 0 a space; 1 a space or minus; 3 the point; 9 `e` (after `| 0x20`); 10 the
    /// exponent's sign; 13 the next cell's space or the line's end.
    const T1: [u8; 16] = *b"  \0.\0\0\0\0\0e+\0\0 \0\0";
    const T2: [u8; 16] = *b" -\0.\0\0\0\0\0e-\0\0\n\0\0";
    /// `0x20` at place 9: `E` and `e` both read as `e`.
    const LOWER: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0];
    /// Places that must equal a template byte, and places that must be digits.
    const FIXED: [u8; 16] = [
        0xFF, 0xFF, 0, 0xFF, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0, 0xFF, 0, 0,
    ];
    const DIGIT: [u8; 16] = [
        0, 0, 0xFF, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0xFF, 0xFF, 0, 0, 0,
    ];
    /// The mantissa's six digits to bytes 2..8 and the exponent's two to bytes 10..12 (the
    /// rest zero), so that pairs of bytes, then pairs of pairs, combine into numbers.
    const GATHER: [i8; 16] = [
        -128, -128, 2, 4, 5, 6, 7, 8, -128, -128, 11, 12, -128, -128, -128, -128,
    ];
    /// The exponent sign's place (10) copied to both bytes of word 5, where the exponent's
    /// two-digit number lands.
    const ESIGN: [i8; 16] = [
        -128, -128, -128, -128, -128, -128, -128, -128, -128, -128, 10, 10, -128, -128, -128, -128,
    ];
    /// Every 14 places (0..14) of both cells of a register were accepted.
    const ALL_OK: u32 = 0x3FFF_3FFF;

    /// Broadcasts a 16-byte table to both lanes.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn both(t: &[u8; 16]) -> __m256i {
        // SAFETY: `t` is 16 readable bytes (an unaligned load).
        unsafe { _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr() as *const __m128i)) }
    }

    /// The constant registers.
    pub(crate) struct Consts {
        t1: __m256i,
        t2: __m256i,
        lower: __m256i,
        fixed: __m256i,
        digit: __m256i,
        gather: __m256i,
        zero: __m256i,
        nine: __m256i,
        minus: __m256i,
        tens: __m256i,
        hundreds: __m256i,
        join: __m256i,
        esign: __m256i,
        one: __m256i,
        order: __m256i,
    }

    impl Consts {
        /// The registers.
        #[inline]
        #[target_feature(enable = "avx2")]
        pub(crate) fn new() -> Consts {
            Consts {
                t1: both(&T1),
                t2: both(&T2),
                lower: both(&LOWER),
                fixed: both(&FIXED),
                digit: both(&DIGIT),
                gather: both(&GATHER.map(|x| x as u8)),
                esign: both(&ESIGN.map(|x| x as u8)),
                one: _mm256_set1_epi16(1),
                // (m0 E0 m2 E2 | m1 E1 m3 E3) to (m0 m1 m2 m3 | E0 E1 E2 E3)
                order: _mm256_setr_epi32(0, 4, 2, 6, 1, 5, 3, 7),
                zero: _mm256_set1_epi8(b'0' as i8),
                nine: _mm256_set1_epi8(9),
                minus: _mm256_set1_epi8(b'-' as i8),
                // (10, 1) byte pairs, (100, 1) word pairs, then (10000, 1, 1, 0): the mantissa
                // and the exponent of each cell as two 32-bit numbers
                tens: _mm256_set1_epi16(0x010A),
                hundreds: _mm256_set1_epi32(0x0001_0064),
                join: _mm256_set1_epi64x(0x0000_0001_0001_2710),
            }
        }
    }

    /// The cells at `p` and `p + 13`: `(ab, cdef, signed exponent, 0)` per lane as 32-bit
    /// numbers, the accepted places (bits 0..14 and 16..30), the places holding `-`.
    ///
    /// # Safety
    /// AVX2, and `p..p + 29` readable.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn pair(p: *const u8, k: &Consts) -> (__m256i, u32, u32) {
        // SAFETY: the caller guarantees 29 readable bytes from `p` (16 from `p + 13`).
        let v = unsafe { _mm256_loadu2_m128i(p.add(13) as *const __m128i, p as *const __m128i) };
        let d = _mm256_sub_epi8(v, k.zero);
        let is_digit = _mm256_cmpeq_epi8(_mm256_min_epu8(d, k.nine), d);
        let w = _mm256_or_si256(v, k.lower);
        let fixed_ok = _mm256_or_si256(_mm256_cmpeq_epi8(w, k.t1), _mm256_cmpeq_epi8(w, k.t2));
        let ok = _mm256_or_si256(
            _mm256_and_si256(fixed_ok, k.fixed),
            _mm256_and_si256(is_digit, k.digit),
        );
        let minus = _mm256_cmpeq_epi8(v, k.minus);
        let neg = _mm256_movemask_epi8(minus) as u32;
        let g = _mm256_shuffle_epi8(d, k.gather);
        let pairs = _mm256_maddubs_epi16(g, k.tens);
        // the exponent negated where its sign is `-` (-1 or 1 in every word)
        let sign = _mm256_or_si256(_mm256_shuffle_epi8(minus, k.esign), k.one);
        let pairs = _mm256_sign_epi16(pairs, sign);
        let quads = _mm256_madd_epi16(pairs, k.hundreds);
        (quads, _mm256_movemask_epi8(ok) as u32, neg)
    }

    /// `m * 10^e10` with the sign, correctly rounded (`m < 10^6`, `|e10| <= 22`).
    #[inline(always)]
    fn value(m: i32, e10: i32, neg: bool) -> f64 {
        let f = m as f64 * POW10[e10.max(0) as usize] / POW10[(-e10).max(0) as usize];
        f64::from_bits(f.to_bits() | ((neg as u64) << 63))
    }

    /// Writes the value of a cell from its mantissa `m`, signed exponent `e`, and sign places
    /// (`neg` bit 1 of its 16); a cell outside the fast path is parsed alone.
    #[inline(always)]
    fn put<T: CubeFloat>(b: &[u8], c: usize, m: i32, e: i32, neg: u32, out: &mut T) -> bool {
        let e = e - 5;
        if (-22..=22).contains(&e) {
            if let Some(v) = T::convert(Some(value(m, e, neg & 2 != 0)), String::new) {
                *out = v;
                return true;
            }
        }
        // the general parser, on this cell only (its shape was checked)
        matches!(parse_values(&b[c..c + 13], c as u64, std::slice::from_mut(out)), Ok(p) if p.values == 1)
    }

    /// The values of four cells from `(m0 m1 m2 m3 | e0 e1 e2 e3)` (mantissas, signed
    /// exponent digits) and their sign bits: `m * 10^(e - 5)`, one exact multiply or divide per
    /// value. `None` when an exponent lies outside Clinger's fast path.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn four(x: __m256i, signs: __m256i) -> Option<__m256d> {
        let e = _mm_sub_epi32(_mm256_extracti128_si256::<1>(x), _mm_set1_epi32(5));
        let out = _mm_or_si128(
            _mm_cmpgt_epi32(e, _mm_set1_epi32(22)),
            _mm_cmplt_epi32(e, _mm_set1_epi32(-22)),
        );
        if _mm_movemask_epi8(out) != 0 {
            return None;
        }
        let zero = _mm_setzero_si128();
        let up = _mm_max_epi32(e, zero);
        let down = _mm_max_epi32(_mm_sub_epi32(zero, e), zero);
        let mut i = [0i32; 8];
        // SAFETY: 32 writable bytes
        unsafe { _mm256_storeu_si256(i.as_mut_ptr() as *mut __m256i, _mm256_set_m128i(down, up)) };
        // loads, not gathers: gathers are slow on CPUs with the GDS mitigation
        let t = |j: usize| POW10[i[j] as usize];
        let pu = _mm256_setr_pd(t(0), t(1), t(2), t(3));
        let pd = _mm256_setr_pd(t(4), t(5), t(6), t(7));
        let m = _mm256_cvtepi32_pd(_mm256_castsi256_si128(x));
        let f = _mm256_div_pd(_mm256_mul_pd(m, pu), pd);
        Some(_mm256_or_pd(f, _mm256_castsi256_pd(signs)))
    }

    /// The sign bit of the cell whose places start at bit `at` of `neg`, as an `f64`'s.
    #[inline(always)]
    fn sign_bit(neg: u32, at: u32) -> i64 {
        (((neg >> (at + 1)) & 1) as i64) << 63
    }

    /// A whole line of six cells at `c` (`c + 81 <= b.len()`), all four-at-once; `None` when a
    /// cell is not of the shape, `Some(false)` when one needs the cell-by-cell path.
    ///
    /// # Safety
    /// AVX2, and `c + 81 <= b.len()`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn line6(b: &[u8], c: usize, k: &Consts, vals: &mut [f64; 8]) -> Option<bool> {
        let p = b.as_ptr();
        // SAFETY: the last pair reads `c + 52 .. c + 81`
        let ((q0, ok0, n0), (q1, ok1, n1), (q2, ok2, n2)) = unsafe {
            (
                pair(p.add(c), k),
                pair(p.add(c + 26), k),
                pair(p.add(c + 52), k),
            )
        };
        if ok0 & ok1 & ok2 & ALL_OK != ALL_OK || b[c + 78] != b'\n' {
            return None;
        }
        let m01 = _mm256_madd_epi16(_mm256_packs_epi32(q0, q1), k.join);
        let m2 = _mm256_madd_epi16(_mm256_packs_epi32(q2, q2), k.join);
        let s01 = _mm256_setr_epi64x(
            sign_bit(n0, 0),
            sign_bit(n0, 16),
            sign_bit(n1, 0),
            sign_bit(n1, 16),
        );
        let s2 = _mm256_setr_epi64x(sign_bit(n2, 0), sign_bit(n2, 16), 0, 0);
        let (Some(f01), Some(f2)) = (
            four(_mm256_permutevar8x32_epi32(m01, k.order), s01),
            four(_mm256_permutevar8x32_epi32(m2, k.order), s2),
        ) else {
            return Some(false);
        };
        // SAFETY: 64 writable bytes
        unsafe {
            _mm256_storeu_pd(vals.as_mut_ptr(), f01);
            _mm256_storeu_pd(vals.as_mut_ptr().add(4), f2);
        }
        Some(true)
    }

    /// The six cells of a line at `c` (its `\n` at `c + 78`) into `out[..6]`, for the general
    /// parser; `false` (nothing written) for any other shape, a cell beyond the fast path, or
    /// fewer than 81 bytes from `c`.
    ///
    /// # Safety
    /// The CPU supports AVX2.
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn line_of_six<T: CubeFloat>(
        b: &[u8],
        c: usize,
        k: &Consts,
        out: &mut [T],
    ) -> bool {
        if c + 81 > b.len() || out.len() < 6 {
            return false;
        }
        let mut vals = [0f64; 8];
        // SAFETY: AVX2 (this function's feature) and `c + 81 <= b.len()`
        if unsafe { line6(b, c, k, &mut vals) } != Some(true) {
            return false;
        }
        let mut got = [T::default(); 6];
        for (g, &f) in got.iter_mut().zip(&vals) {
            match T::convert(Some(f), String::new) {
                Some(x) => *g = x,
                None => return false,
            }
        }
        out[..6].copy_from_slice(&got);
        true
    }

    /// Tokens (maximal runs of bytes that are not whitespace) in `b`, 32 bytes at a time;
    /// `prev_ws` says whether the byte before `b` was whitespace (or `b` starts the text).
    /// Returns the count and whether `b`'s last byte is whitespace.
    ///
    /// # Safety
    /// The CPU supports AVX2.
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn count_tokens(b: &[u8], mut prev_ws: bool) -> (u64, bool) {
        let space = _mm256_set1_epi8(b' ' as i8);
        let tab = _mm256_set1_epi8(9);
        let four = _mm256_set1_epi8(4);
        let mut n = 0u64;
        let mut chunks = b.chunks_exact(32);
        for ch in &mut chunks {
            // SAFETY: 32 readable bytes
            let v = unsafe { _mm256_loadu_si256(ch.as_ptr() as *const __m256i) };
            // space, or 9..=13 (tab, LF, VT, FF, CR): the parser's whitespace
            let d = _mm256_sub_epi8(v, tab);
            let ws = _mm256_or_si256(
                _mm256_cmpeq_epi8(v, space),
                _mm256_cmpeq_epi8(_mm256_min_epu8(d, four), d),
            );
            let ws = _mm256_movemask_epi8(ws) as u32 as u64;
            // a token starts where a byte is not whitespace and the one before it is
            let before = (ws << 1) | prev_ws as u64;
            n += u64::from((!ws & before & 0xFFFF_FFFF).count_ones());
            prev_ws = ws >> 31 != 0;
        }
        for &c in chunks.remainder() {
            let ws = crate::parse::is_ws(c);
            n += (prev_ws & !ws) as u64;
            prev_ws = ws;
        }
        (n, prev_ws)
    }

    /// [`crate::parse_cells`] with AVX2: the same contract and the same values.
    ///
    /// # Safety
    /// The CPU supports AVX2.
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn parse_cells<T: CubeFloat>(b: &[u8], a: usize, out: &mut [T]) -> bool {
        let k = Consts::new();
        let mut c = a;
        let mut ms = [0i32; 8];
        for line in out.chunks_mut(6) {
            let n = line.len();
            let end = c + 13 * n;
            // SAFETY: AVX2 (this function's feature)
            if n == 6 && unsafe { line_of_six(b, c, &k, line) } {
                c = end + 1;
                continue;
            }
            // a short line, or a cell beyond the fast path (any other shape is refused below):
            // the line pair by pair. The last pair reads 29 bytes from its first cell (past the
            // line's end when the line holds an odd number of cells): at the file's end, one
            // cell at a time
            if c + 13 * (2 * ((n - 1) / 2)) + 29 <= b.len() {
                for (j, two) in line.chunks_mut(2).enumerate() {
                    let at = c + 26 * j;
                    // SAFETY: AVX2 (this function's feature); `at + 29 <= b.len()`, checked
                    // above for the line's last pair
                    let (q, ok, neg) = unsafe { pair(b.as_ptr().add(at), &k) };
                    let want = if two.len() == 2 {
                        ALL_OK
                    } else {
                        ALL_OK & 0xFFFF
                    };
                    if ok & want != want {
                        return false;
                    }
                    let m = _mm256_madd_epi16(_mm256_packs_epi32(q, q), k.join);
                    // SAFETY: 32 writable bytes
                    unsafe { _mm256_storeu_si256(ms.as_mut_ptr() as *mut __m256i, m) };
                    // lane 0 holds the first cell, lane 1 the second
                    for (i, v) in two.iter_mut().enumerate() {
                        if !put(b, at + 13 * i, ms[4 * i], ms[4 * i + 1], neg >> (16 * i), v) {
                            return false;
                        }
                    }
                }
            } else {
                for (i, v) in line.iter_mut().enumerate() {
                    if c + 13 * i + 18 > b.len() {
                        return false;
                    }
                    match cell::<T>(b, c + 13 * i) {
                        Some(x) => *v = x,
                        None => return false,
                    }
                }
            }
            if b.get(end) != Some(&b'\n') {
                return false;
            }
            c = end + 1;
        }
        true
    }
}
