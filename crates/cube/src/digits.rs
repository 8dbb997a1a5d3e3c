//! The writer's scale and round, four values per AVX2 register: each value's decimal exponent
//! from its binary one, a scale by a power of ten (loads from the table, not gathers), the
//! digits rounded, a value within 1e-7 of a rounding tie decided exactly (Dekker's
//! two-product where the power is exact, else alone by [`crate::format`]'s scalar path); then
//! the digits, signs and exponents of the four cells by exact `f64` divisions into pairs and
//! byte shuffles into 16-byte stores. The same bytes as [`crate::format_value`].

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2 {
    use crate::format::{cell_offset, put_cell, sci_digits, Style, FAST_MAX, FAST_MIN};
    use crate::pow10::POW10;
    use std::arch::x86_64::*;

    /// `(d, e)` of the four values `x` (those of `v`) rounded to `N` (5 or 6) significant digits, as
    /// `sci_digits` gives them, as `f64` lanes (exact integers). `None` when a value is zero,
    /// not finite or outside `FAST_MIN..=FAST_MAX`, or a scale falls out of range: the caller
    /// then formats the four one by one.
    ///
    /// # Safety
    /// The CPU supports AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn sci4<const N: u32>(x: __m256d, v: &[f64]) -> Option<(__m256d, __m256d)> {
        let n = N;
        let a = _mm256_andnot_pd(_mm256_set1_pd(-0.0), x);
        let inside = _mm256_and_pd(
            _mm256_cmp_pd::<_CMP_GE_OQ>(a, _mm256_set1_pd(FAST_MIN)),
            _mm256_cmp_pd::<_CMP_LE_OQ>(a, _mm256_set1_pd(FAST_MAX)),
        );
        if _mm256_movemask_pd(inside) != 0xF {
            return None;
        }
        // the biased binary exponent as f64: 2^52 + field, less 2^52 + 1023
        let field = _mm256_srli_epi64::<52>(_mm256_castpd_si256(a));
        let two52 = _mm256_castsi256_pd(_mm256_or_si256(
            field,
            _mm256_set1_epi64x(0x4330_0000_0000_0000),
        ));
        let e2 = _mm256_sub_pd(two52, _mm256_set1_pd(4_503_599_627_370_496.0 + 1023.0));
        // floor(log10(a)) is this or one more (|e2| < 300: never within 1e-10 of an integer)
        let est = _mm256_floor_pd(_mm256_mul_pd(e2, _mm256_set1_pd(std::f64::consts::LOG10_2)));
        // POW10[k + 300] = 10^k, k = n - 1 - est (within the table: |est| <= 91)
        let idx = _mm256_cvtpd_epi32(_mm256_sub_pd(_mm256_set1_pd((n + 299) as f64), est));
        let mut i = [0i32; 4];
        // SAFETY: 16 writable bytes
        unsafe { _mm_storeu_si128(i.as_mut_ptr() as *mut __m128i, idx) };
        // four loads, not a gather: gathers are slow on CPUs with the GDS mitigation
        let t = |j: usize| POW10[i[j] as usize];
        let p1 = _mm256_setr_pd(t(0), t(1), t(2), t(3));
        let u = |j: usize| POW10[i[j] as usize - 1];
        let p2 = _mm256_setr_pd(u(0), u(1), u(2), u(3));
        let hi = _mm256_set1_pd(POW10[(n + 300) as usize]);
        let lo = _mm256_set1_pd(POW10[(n + 299) as usize]);
        let one = _mm256_set1_pd(1.0);
        let s1 = _mm256_mul_pd(a, p1);
        let big = _mm256_cmp_pd::<_CMP_GE_OQ>(s1, hi);
        // the estimate one short: one power less
        let p = _mm256_blendv_pd(p1, p2, big);
        let s = _mm256_blendv_pd(s1, _mm256_mul_pd(a, p2), big);
        let ee = _mm256_add_pd(est, _mm256_and_pd(big, one));
        let ok = _mm256_and_pd(
            _mm256_cmp_pd::<_CMP_GE_OQ>(s, lo),
            _mm256_cmp_pd::<_CMP_LT_OQ>(s, hi),
        );
        if _mm256_movemask_pd(ok) != 0xF {
            return None;
        }
        let fl = _mm256_floor_pd(s);
        let frac = _mm256_sub_pd(s, fl);
        let off = _mm256_andnot_pd(
            _mm256_set1_pd(-0.0),
            _mm256_sub_pd(frac, _mm256_set1_pd(0.5)),
        );
        let near = _mm256_cmp_pd::<_CMP_LT_OQ>(off, _mm256_set1_pd(1e-7));
        // near a tie, and the power 10^(n-1-e) exact (0..=22): decided exactly here, by
        // Dekker's two-product (as `tie_side`): s - (fl + 1/2) is exact (Sterbenz), err the
        // product's rounding error, and their rounded sum has the sign of the exact one
        let k = _mm256_sub_pd(_mm256_set1_pd((n - 1) as f64), ee);
        let exact = _mm256_and_pd(
            _mm256_cmp_pd::<_CMP_GE_OQ>(k, _mm256_setzero_pd()),
            _mm256_cmp_pd::<_CMP_LE_OQ>(k, _mm256_set1_pd(22.0)),
        );
        let split = |x: __m256d| {
            let c = _mm256_mul_pd(_mm256_set1_pd(134_217_729.0), x);
            let h = _mm256_sub_pd(c, _mm256_sub_pd(c, x));
            (h, _mm256_sub_pd(x, h))
        };
        let (ah, al) = split(a);
        let (ph, pl) = split(p);
        let err = _mm256_add_pd(
            _mm256_add_pd(
                _mm256_add_pd(
                    _mm256_sub_pd(_mm256_mul_pd(ah, ph), s),
                    _mm256_mul_pd(ah, pl),
                ),
                _mm256_mul_pd(al, ph),
            ),
            _mm256_mul_pd(al, pl),
        );
        let side = _mm256_add_pd(
            _mm256_sub_pd(s, _mm256_add_pd(fl, _mm256_set1_pd(0.5))),
            err,
        );
        let half = _mm256_mul_pd(fl, _mm256_set1_pd(0.5));
        let odd = _mm256_cmp_pd::<_CMP_NEQ_OQ>(half, _mm256_floor_pd(half));
        let zero = _mm256_setzero_pd();
        let up_tie = _mm256_or_pd(
            _mm256_cmp_pd::<_CMP_GT_OQ>(side, zero),
            _mm256_and_pd(_mm256_cmp_pd::<_CMP_EQ_OQ>(side, zero), odd),
        );
        let up_far = _mm256_cmp_pd::<_CMP_GT_OQ>(frac, _mm256_set1_pd(0.5));
        let up = _mm256_and_pd(_mm256_blendv_pd(up_far, up_tie, near), one);
        let dd = _mm256_add_pd(fl, up);
        // 10^n after rounding up: 10^(n-1), one more in the exponent
        let carry = _mm256_cmp_pd::<_CMP_EQ_OQ>(dd, hi);
        let dd = _mm256_blendv_pd(dd, lo, carry);
        let ee = _mm256_add_pd(ee, _mm256_and_pd(carry, one));
        // near a tie with an inexact power: one by one, below
        let near = _mm256_movemask_pd(_mm256_andnot_pd(exact, near));
        if near == 0 {
            return Some((dd, ee));
        }
        // within 1e-7 of a tie, the power inexact: those values exactly, one by one
        let (mut d, mut e) = ([0f64; 4], [0f64; 4]);
        // SAFETY: 32 writable bytes each
        unsafe {
            _mm256_storeu_pd(d.as_mut_ptr(), dd);
            _mm256_storeu_pd(e.as_mut_ptr(), ee);
        }
        for j in 0..4 {
            if near & (1 << j) != 0 {
                let (dj, ej) = sci_digits(v[j].abs(), n);
                d[j] = dj as f64;
                e[j] = ej as f64;
            }
        }
        // SAFETY: 32 readable bytes each
        unsafe { Some((_mm256_loadu_pd(d.as_ptr()), _mm256_loadu_pd(e.as_ptr()))) }
    }

    /// Per place of a cell, where its byte comes from: the template (`-128` in every
    /// selector), the digits `X` (`D0 D1 D2 D3` of the four values, four bytes each), `Y`
    /// (`D4 D5 E1 E2`) or the signs `Z` (mantissa's, then exponent's). Cell `j` adds `j` to
    /// every selector that is not `-128`.
    const NO: i8 = -128;
    /// Gaussian: `␣s D0 . D1 D2 D3 D4 D5 E e E1 E2`.
    const GX: [i8; 16] = [NO, NO, 0, NO, 4, 8, 12, NO, NO, NO, NO, NO, NO, NO, NO, NO];
    /// CP2K: `␣s 0 . D1 D2 D3 D4 D5 E e E1 E2` (five digits: `D0` is 0, not written).
    const CX: [i8; 16] = [NO, NO, NO, NO, 4, 8, 12, NO, NO, NO, NO, NO, NO, NO, NO, NO];
    const SY: [i8; 16] = [NO, NO, NO, NO, NO, NO, NO, 0, 4, NO, NO, 8, 12, NO, NO, NO];
    const SZ: [i8; 16] = [NO, 0, NO, NO, NO, NO, NO, NO, NO, NO, 4, NO, NO, NO, NO, NO];
    const GT: [u8; 16] = *b" \0\0.\0\0\0\0\0E\0\0\0\0\0\0";
    const CT: [u8; 16] = *b" \0\x30.\0\0\0\0\0E\0\0\0\0\0\0";

    /// `sel` with `j` added to every selector that picks a byte.
    fn shifted(sel: [i8; 16], j: i8) -> [i8; 16] {
        sel.map(|x| if x == NO { NO } else { x + j })
    }

    /// The four cells of `x` (the values), `dd` and `ee` (their digits and exponents from
    /// [`sci4`]) as 16-byte registers, each cell in bytes 0..13.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn cells4<const CP2K: bool>(
        x: __m256d,
        dd: __m256d,
        ee: __m256d,
        sel: &Selectors,
    ) -> [__m128i; 4] {
        let ee = if CP2K {
            _mm256_add_pd(ee, _mm256_set1_pd(1.0))
        } else {
            ee
        };
        let f = |v: f64| _mm256_set1_pd(v);
        // the digit pairs, exactly (every product and difference is an exact integer; the
        // constants 1e-4, 0.01 and 0.1 lie just above their values, so floor is right)
        let p0 = _mm256_floor_pd(_mm256_mul_pd(dd, f(1e-4)));
        let r = _mm256_sub_pd(dd, _mm256_mul_pd(p0, f(1e4)));
        let p1 = _mm256_floor_pd(_mm256_mul_pd(r, f(0.01)));
        let p2 = _mm256_sub_pd(r, _mm256_mul_pd(p1, f(100.0)));
        let zero = _mm256_setzero_pd();
        let eneg = _mm256_cmp_pd::<_CMP_LT_OQ>(ee, zero);
        let p3 = _mm256_andnot_pd(f(-0.0), ee);
        let split = |p: __m256d| {
            let t = _mm256_floor_pd(_mm256_mul_pd(p, f(0.1)));
            (t, _mm256_sub_pd(p, _mm256_mul_pd(t, f(10.0))))
        };
        let (t0, o0) = split(p0);
        let (t1, o1) = split(p1);
        let (t2, o2) = split(p2);
        let (t3, o3) = split(p3);
        // ' ' or '-', '+' or '-'
        let neg = _mm256_cmp_pd::<_CMP_LT_OQ>(x, zero);
        let sc = _mm256_add_pd(f(32.0), _mm256_and_pd(neg, f(13.0)));
        let ec = _mm256_add_pd(f(43.0), _mm256_and_pd(eneg, f(2.0)));
        let i = |v: __m256d| _mm256_cvttpd_epi32(v);
        let ascii = _mm_set1_epi8(b'0' as i8);
        let xm = _mm_add_epi8(
            _mm_packus_epi16(_mm_packs_epi32(i(t0), i(o0)), _mm_packs_epi32(i(t1), i(o1))),
            ascii,
        );
        let ym = _mm_add_epi8(
            _mm_packus_epi16(_mm_packs_epi32(i(t2), i(o2)), _mm_packs_epi32(i(t3), i(o3))),
            ascii,
        );
        let zm = _mm_packus_epi16(_mm_packs_epi32(i(sc), i(ec)), _mm_setzero_si128());
        std::array::from_fn(|j| {
            _mm_or_si128(
                _mm_or_si128(sel.t, _mm_shuffle_epi8(xm, sel.x[j])),
                _mm_or_si128(
                    _mm_shuffle_epi8(ym, sel.y[j]),
                    _mm_shuffle_epi8(zm, sel.z[j]),
                ),
            )
        })
    }

    /// The shuffle selectors of one style, for cells 0..4.
    struct Selectors {
        t: __m128i,
        x: [__m128i; 4],
        y: [__m128i; 4],
        z: [__m128i; 4],
    }

    impl Selectors {
        #[inline]
        #[target_feature(enable = "avx2")]
        fn new(cp2k: bool) -> Selectors {
            let load = |a: [i8; 16]| {
                // SAFETY: 16 readable bytes
                unsafe { _mm_loadu_si128(a.as_ptr() as *const __m128i) }
            };
            let x = if cp2k { CX } else { GX };
            let t = if cp2k { CT } else { GT };
            Selectors {
                t: load(t.map(|b| b as i8)),
                x: std::array::from_fn(|j| load(shifted(x, j as i8))),
                y: std::array::from_fn(|j| load(shifted(SY, j as i8))),
                z: std::array::from_fn(|j| load(shifted(SZ, j as i8))),
            }
        }
    }

    /// [`crate::format::put_row`] with the scale and round four values at a time.
    ///
    /// # Safety
    /// The CPU supports AVX2.
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn put_row<const CP2K: bool>(row: &[f64], buf: &mut [u8]) {
        let at = cell_offset;
        let style = if CP2K { Style::Cp2k } else { Style::Gaussian };
        let sel = Selectors::new(CP2K);
        let mut k = 0;
        while k < row.len() {
            let quad = &row[k..(k + 4).min(row.len())];
            // SAFETY (the load): four readable values
            let x = (quad.len() == 4).then(|| unsafe { _mm256_loadu_pd(quad.as_ptr()) });
            let fast = match x {
                None => None,
                // SAFETY: AVX2 (this function's feature)
                Some(x) if CP2K => unsafe { sci4::<5>(x, quad) }.map(|de| (x, de)),
                // SAFETY: as above
                Some(x) => unsafe { sci4::<6>(x, quad) }.map(|de| (x, de)),
            };
            match fast {
                // the last cell's 16-byte store may not pass the buffer's end
                Some((x, (dd, ee))) if at(k + 3) + 16 <= buf.len() => {
                    let cells = cells4::<CP2K>(x, dd, ee, &sel);
                    for (j, c) in cells.into_iter().enumerate() {
                        let p = at(k + j);
                        assert!(p + 16 <= buf.len());
                        // SAFETY: 16 writable bytes, just checked; cells are stored in order,
                        // so bytes 13..16 of one are overwritten by the next cell or the line's
                        // end (written after every cell)
                        unsafe { _mm_storeu_si128(buf.as_mut_ptr().add(p) as *mut __m128i, c) };
                    }
                }
                _ => {
                    for (j, &v) in quad.iter().enumerate() {
                        put_cell(v, style, buf, at(k + j));
                    }
                }
            }
            k += quad.len();
        }
    }
}
