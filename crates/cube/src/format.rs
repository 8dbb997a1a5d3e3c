//! Formatting one value in 13 columns, correctly rounded (ties to even, as C's printf and
//! Python's `%` do): CP2K's Fortran `E13.5` (`  0.12345E-01`, five significant digits, the
//! `E` dropped for three-digit exponents as Fortran does) or C's `%13.5E` (` 1.23456E-01`, six
//! significant digits: Gaussian and PySCF). A fast path scales by a power of ten in `f64`;
//! when the result lies within 1e-7 of a rounding tie it is compared with the tie exactly
//! (Dekker's two-product when the power of ten is exact, else in 128-bit integers), and a value
//! very large or small takes Rust's exact decimal expansion. The writer's cells
//! ([`put_cell`]) are composed as two 8-byte words: the digits by packed multiply-shift
//! division, no table and no branch on the sign.

/// The number style of a written cube.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// CP2K's Fortran `6E13.5`: `0.12345E-01`.
    Cp2k,
    /// Gaussian's and PySCF's `%13.5E`: `1.23456E-01`.
    Gaussian,
}

impl Style {
    /// Significant digits written.
    pub fn digits(self) -> u32 {
        match self {
            Style::Cp2k => 5,
            Style::Gaussian => 6,
        }
    }
}

#[inline(always)]
fn pow10(k: i32) -> f64 {
    crate::pow10::POW10[(k + 300) as usize]
}

/// "00" to "99".
static PAIRS: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

const P10: [u64; 8] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];

/// `(d, e)` with `|a|` rounded to `n` significant digits equal to `d * 10^(e - n + 1)` and
/// `10^(n-1) <= d < 10^n`, for finite nonzero `a`.
#[inline(always)]
pub(crate) fn sci_digits(a: f64, n: u32) -> (u64, i32) {
    let a = a.abs();
    if (1e-280..1e280).contains(&a) {
        let e2 = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        // floor(e2 * log10(2)) in integers (exact for |e2| < 1700), then floor(log10(a))
        let mut e = (e2 * 78_913) >> 18;
        e += (a >= pow10(e + 1)) as i32;
        let s = a * pow10(n as i32 - 1 - e);
        // s is positive and below 2^63: truncation is floor (no libm call, signed conversions)
        let fl = s as i64;
        let frac = s - fl as f64;
        if s >= P10[n as usize - 1] as f64 && s < P10[n as usize] as f64 {
            let up = if (frac - 0.5).abs() >= 1e-7 {
                frac > 0.5
            } else {
                // near a decimal tie (values read from one digit more): exactly
                let k = n as i32 - 1 - e;
                let side = if (0..=22).contains(&k) {
                    Some(tie_side(a, pow10(k), s, fl as f64))
                } else {
                    above_tie(a, fl as u64, e - (n as i32 - 1))
                };
                match side {
                    Some(std::cmp::Ordering::Greater) => true,
                    Some(std::cmp::Ordering::Less) => false,
                    Some(std::cmp::Ordering::Equal) => fl % 2 == 1,
                    None => return sci_digits_slow(a, n),
                }
            };
            let mut d = (fl + up as i64) as u64;
            if d == P10[n as usize] {
                d = P10[n as usize - 1];
                e += 1;
            }
            return (d, e);
        }
    }
    sci_digits_slow(a, n)
}

/// The rare cases of [`sci_digits`]: a scale just off by one, a value near a decimal tie
/// (decided exactly in integers), or one very large or small (Rust's exact expansion).
#[cold]
#[inline(never)]
fn sci_digits_slow(a: f64, n: u32) -> (u64, i32) {
    let lo = P10[n as usize - 1] as f64;
    let hi = P10[n as usize] as f64;
    if (1e-280..1e280).contains(&a) {
        let e2 = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        let mut e = (e2 * 78_913) >> 18;
        e += (a >= pow10(e + 1)) as i32;
        for _ in 0..3 {
            let s = a * pow10(n as i32 - 1 - e);
            if s >= hi {
                e += 1;
            } else if s < lo {
                e -= 1;
            } else {
                let fl = s as i64 as u64;
                let frac = s - fl as f64;
                let up = if (frac - 0.5).abs() < 1e-7 {
                    // near a decimal tie: compare with it exactly, in integers
                    match above_tie(a, fl, e - (n as i32 - 1)) {
                        Some(std::cmp::Ordering::Greater) => true,
                        Some(std::cmp::Ordering::Less) => false,
                        Some(std::cmp::Ordering::Equal) => fl % 2 == 1,
                        None => break,
                    }
                } else {
                    frac > 0.5
                };
                let mut d = fl + up as u64;
                if d == P10[n as usize] {
                    d = P10[n as usize - 1];
                    e += 1;
                }
                return (d, e);
            }
        }
    }
    exact_digits(a, n)
}

/// How `a * p` compares with `fl + 1/2`, exactly, where `p` is an exact power of ten (10^0 to
/// 10^22), `s` the rounded product, within 1e-7 of that tie, and `fl` an integer of 5 or 6
/// digits. Dekker's two-product gives the product's rounding error exactly (every partial
/// product is a normal number here); `s - (fl + 1/2)` is exact (Sterbenz), and the rounded
/// sum of two numbers has the sign of their exact sum.
#[inline(never)]
fn tie_side(a: f64, p: f64, s: f64, fl: f64) -> std::cmp::Ordering {
    const SPLIT: f64 = 134_217_729.0; // 2^27 + 1
    let split = |x: f64| {
        let c = SPLIT * x;
        let h = c - (c - x);
        (h, x - h)
    };
    let (ah, al) = split(a);
    let (ph, pl) = split(p);
    let err = ((ah * ph - s) + ah * pl + al * ph) + al * pl;
    let diff = s - (fl + 0.5);
    let t = diff + err;
    if t > 0.0 {
        std::cmp::Ordering::Greater
    } else if t < 0.0 {
        std::cmp::Ordering::Less
    } else {
        std::cmp::Ordering::Equal
    }
}

/// How `a` (finite, positive) compares with the decimal tie `(d + 1/2) * 10^q`, exactly, when
/// both sides fit 127-bit integers (else `None`).
fn above_tie(a: f64, d: u64, q: i32) -> Option<std::cmp::Ordering> {
    let bits = a.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    if exp == 0 {
        return None; // subnormal: the slow path
    }
    let m = ((bits & ((1u64 << 52) - 1)) | (1u64 << 52)) as u128;
    let e2 = exp - 1075; // a = m * 2^e2
    let tie = 2 * d as u128 + 1; // t = tie / 2 * 10^q
    let pow10 = |k: u32| -> Option<u128> { 10u128.checked_pow(k) };
    let shl = |x: u128, k: i32| -> Option<u128> {
        if !(0..=127).contains(&k) || x.leading_zeros() < k as u32 {
            None
        } else {
            Some(x << k)
        }
    };
    // compare 2 * m * 2^e2 with tie * 10^q, both scaled to integers
    let (lhs, rhs) = match (q >= 0, e2 >= 0) {
        (true, true) => (shl(m, e2 + 1)?, tie.checked_mul(pow10(q as u32)?)?),
        (true, false) => (m << 1, shl(tie.checked_mul(pow10(q as u32)?)?, -e2)?),
        (false, true) => (shl(m, e2 + 1)?.checked_mul(pow10((-q) as u32)?)?, tie),
        (false, false) => ((m << 1).checked_mul(pow10((-q) as u32)?)?, shl(tie, -e2)?),
    };
    Some(lhs.cmp(&rhs))
}

/// The slow, exact path: Rust's exact expansion, rounded to `n` digits ties to even.
fn exact_digits(a: f64, n: u32) -> (u64, i32) {
    // 800 digits hold every f64's exact decimal expansion
    let s = format!("{a:.800e}");
    let (mant, exp) = s.split_once('e').unwrap();
    let mut e: i32 = exp.parse().unwrap();
    let ds: Vec<u8> = mant.bytes().filter(u8::is_ascii_digit).collect();
    let mut d: u64 = ds[..n as usize]
        .iter()
        .fold(0, |acc, &c| acc * 10 + (c - b'0') as u64);
    let rest = &ds[n as usize..];
    let up = match rest.first() {
        Some(&c) if c > b'5' => true,
        Some(&b'5') => rest[1..].iter().any(|&c| c != b'0') || d % 2 == 1,
        _ => false,
    };
    if up {
        d += 1;
        if d == P10[n as usize] {
            d = P10[n as usize - 1];
            e += 1;
        }
    }
    (d, e)
}

/// Writes `v` in 13 columns into `out` (right-aligned).
#[inline]
pub fn format_value(v: f64, style: Style, out: &mut [u8; 13]) {
    match style {
        Style::Cp2k => format_style::<true>(v, out),
        Style::Gaussian => format_style::<false>(v, out),
    }
}

/// [`format_value`] for one style, all sizes constant (no copies of run-time length).
#[inline(always)]
fn format_style<const CP2K: bool>(v: f64, out: &mut [u8; 13]) {
    let n: usize = if CP2K { 5 } else { 6 };
    let (d, e) = if v == 0.0 {
        (0, 0)
    } else {
        sci_digits(v, n as u32)
    };
    // written from the right: exponent, digits, point, sign; spaces before
    let exp = if !CP2K {
        e
    } else if d != 0 {
        e + 1
    } else {
        0
    };
    let ea = exp.unsigned_abs();
    let esign = if exp < 0 { b'-' } else { b'+' };
    let mut cell = [b' '; 13];
    let mut j = 13;
    if ea < 100 {
        cell[12] = b'0' + (ea % 10) as u8;
        cell[11] = b'0' + (ea / 10) as u8;
        cell[10] = esign;
        cell[9] = b'E';
        j = 9;
    } else {
        cell[12] = b'0' + (ea % 10) as u8;
        cell[11] = b'0' + (ea / 10 % 10) as u8;
        cell[10] = b'0' + (ea / 100) as u8;
        cell[9] = esign;
        j -= 4;
        if !CP2K {
            cell[8] = b'E';
            j -= 1;
        }
    }
    // the digits as three independent pairs (d < 10^6), no chain of divisions
    let (p0, p1, p2) = (
        (d / 10_000) as usize,
        (d / 100 % 100) as usize,
        (d % 100) as usize,
    );
    let digits: [u8; 6] = [
        PAIRS[2 * p0],
        PAIRS[2 * p0 + 1],
        PAIRS[2 * p1],
        PAIRS[2 * p1 + 1],
        PAIRS[2 * p2],
        PAIRS[2 * p2 + 1],
    ];
    // five digits after the point either way: CP2K's 0.ddddd (d < 10^5, digits[0] is 0) and
    // Gaussian's d.ddddd (digits[0] before the point)
    for k in 0..5 {
        cell[j - 5 + k] = digits[1 + k];
    }
    j -= 5;
    let lead = if CP2K { b'0' } else { digits[0] };
    j -= 1;
    cell[j] = b'.';
    j -= 1;
    cell[j] = lead;
    if v.is_sign_negative() {
        cell[j - 1] = b'-';
    }
    *out = cell;
}

/// The 8 decimal digits of `n < 10^8` as ASCII, the most significant in the low byte (first
/// in memory): `n` split into two 4-digit lanes, each into two 2-digit lanes, each into two
/// digits, by multiply-shift divisions done on all lanes of one 64-bit word at once.
#[inline(always)]
fn ascii8(n: u32) -> u64 {
    // lanes of 32 bits: the high four digits, the low four
    let x = (n / 10_000) as u64 | (((n % 10_000) as u64) << 32);
    // x / 100 per lane (exact below 10^4: 10486 / 2^20 overestimates 1/100 by 2.3e-7)
    let q = ((x * 10_486) >> 20) & 0x0000_007F_0000_007F;
    // lanes of 16 bits: the four 2-digit pairs in order
    let y = q | ((x - 100 * q) << 16);
    // y / 10 per lane (exact below 179)
    let t = ((y * 103) >> 10) & 0x000F_000F_000F_000F;
    // bytes: tens digit, then ones digit, of each pair
    (t | ((y - 10 * t) << 8)) | 0x3030_3030_3030_3030
}

/// Largest magnitude whose exponent still has two digits after rounding (|exp| < 100 in
/// both styles), and the smallest: the fast path's range.
pub(crate) const FAST_MAX: f64 = 1e90;
/// See [`FAST_MAX`].
pub(crate) const FAST_MIN: f64 = 1e-90;

/// The cell of `v` as two little-endian words: bytes 0..8 and bytes 5..13 (they agree where
/// they overlap). `None` for a value the fast path does not take (very large or small, not
/// finite, or a scale found off by one): the caller formats it with [`format_value`].
#[inline(always)]
fn cell_words<const CP2K: bool>(v: f64) -> Option<(u64, u64)> {
    let a = v.abs();
    let n: u32 = if CP2K { 5 } else { 6 };
    let (d, e) = if a == 0.0 {
        // written with exponent 0 in both styles
        (0u64, if CP2K { -1 } else { 0 })
    } else {
        if !(FAST_MIN..=FAST_MAX).contains(&a) {
            return None;
        }
        sci_digits(a, n)
    };
    Some(compose::<CP2K>(d as u32, e, v.to_bits() >> 63))
}

/// The two words of a cell from its digits `d` (`n` significant digits, as [`sci_digits`]
/// gives them), its exponent `e` (of the first digit) and its sign bit.
#[inline(always)]
fn compose<const CP2K: bool>(d: u32, e: i32, neg: u64) -> (u64, u64) {
    // CP2K writes 0.ddddd: one more in the exponent
    let exp = if CP2K { e + 1 } else { e };
    let dw = ascii8(d);
    // ' ', sign, lead, '.', then four digits
    let sign = 0x20 + 0x0D * neg; // ' ' or '-'
    let w0 = if CP2K {
        // "0." then d's five digits (bytes 3..8 of dw)
        0x2E30_0020 | (sign << 8) | ((dw >> 24) << 32)
    } else {
        // d's first digit, ".", then the next four (d has six: bytes 2..8 of dw)
        0x2E00_0020 | (sign << 8) | (((dw >> 16) & 0xFF) << 16) | ((dw >> 24) << 32)
    };
    let ea = exp.unsigned_abs() as usize;
    let esign = 0x2B + 2 * (exp < 0) as u64; // '+' or '-'
    let ea = ea.min(99);
    let pair = u16::from_le_bytes([PAIRS[2 * ea], PAIRS[2 * ea + 1]]);
    let tail = b'E' as u64 | (esign << 8) | ((pair as u64) << 16);
    // the last four digits, then "E+dd"
    let w1 = (dw >> 32) | (tail << 32);
    (w0, w1)
}

/// Stores a cell's two words at `buf[at..at + 13]`.
#[inline(always)]
fn store(buf: &mut [u8], at: usize, (w0, w1): (u64, u64)) {
    buf[at..at + 8].copy_from_slice(&w0.to_le_bytes());
    buf[at + 5..at + 13].copy_from_slice(&w1.to_le_bytes());
}

/// Where cell `k` of a row starts: lines of six 13-byte cells and a `\n` (79 bytes).
#[inline(always)]
pub(crate) fn cell_offset(k: usize) -> usize {
    k / 6 * 79 + k % 6 * 13
}

/// Formats one (x, y) row of finite values as lines of six cells, each line ended by `\n`,
/// into `buf` (exactly `13 * len + ceil(len / 6)` bytes). Four values at a time take the
/// AVX2 scale and round where the CPU has it ([`crate::digits`]); the same bytes as
/// [`format_value`] cell by cell.
pub fn put_row(row: &[f64], style: Style, buf: &mut [u8]) {
    match style {
        Style::Cp2k => put_row_style::<true>(row, buf),
        Style::Gaussian => put_row_style::<false>(row, buf),
    }
}

#[inline(always)]
fn put_row_style<const CP2K: bool>(row: &[f64], buf: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    let simd = crate::cells::have_avx2();
    #[cfg(not(target_arch = "x86_64"))]
    let simd = false;
    if simd {
        // SAFETY: the CPU supports AVX2, checked just above
        #[cfg(target_arch = "x86_64")]
        unsafe {
            crate::digits::avx2::put_row::<CP2K>(row, buf)
        };
    } else {
        let style = if CP2K { Style::Cp2k } else { Style::Gaussian };
        for (k, &v) in row.iter().enumerate() {
            put_cell(v, style, buf, cell_offset(k));
        }
    }
    for l in 0..row.len().div_ceil(6) {
        buf[l * 79 + (row.len() - 6 * l).min(6) * 13] = b'\n';
    }
}

/// Writes `v` as a 13-column cell at `buf[at..at + 13]` (the same bytes as [`format_value`]).
#[inline(always)]
pub fn put_cell(v: f64, style: Style, buf: &mut [u8], at: usize) {
    let words = match style {
        Style::Cp2k => cell_words::<true>(v),
        Style::Gaussian => cell_words::<false>(v),
    };
    match words {
        Some(w) => store(buf, at, w),
        None => {
            let cell: &mut [u8; 13] = (&mut buf[at..at + 13]).try_into().unwrap();
            format_value(v, style, cell);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The next of a xorshift sequence (test values).
    fn next(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    fn f(v: f64, s: Style) -> String {
        let mut o = [0u8; 13];
        format_value(v, s, &mut o);
        String::from_utf8(o.to_vec()).unwrap()
    }

    #[test]
    fn styles() {
        assert_eq!(f(0.012345, Style::Cp2k), "  0.12345E-01");
        assert_eq!(f(-1.0, Style::Cp2k), " -0.10000E+01");
        assert_eq!(f(0.0, Style::Cp2k), "  0.00000E+00");
        assert_eq!(f(1.2345e-101, Style::Cp2k), "  0.12345-100");
        assert_eq!(f(0.123456, Style::Gaussian), "  1.23456E-01");
        assert_eq!(f(-1e-100, Style::Gaussian), "-1.00000E-100");
        assert_eq!(f(0.0, Style::Gaussian), "  0.00000E+00");
        assert_eq!(f(9.999995, Style::Gaussian), "  1.00000E+01");
        // exact ties go to even: 2^-8 = 0.00390625
        assert_eq!(f(0.00390625, Style::Cp2k), "  0.39062E-02");
        assert_eq!(f(0.0078125 * 3.0, Style::Cp2k), "  0.23438E-01");
        assert_eq!(f(f64::MIN_POSITIVE / 8.0, Style::Gaussian), " 2.78134E-309");
    }

    #[test]
    fn near_decimal_ties_match_exact_path() {
        // values one digit longer than written, ending in 5: within 1e-12 of a tie
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..200_000 {
            next(&mut x);
            for n in [5u32, 6] {
                let lo = P10[n as usize - 1];
                let d = lo + x % (9 * lo);
                let k = (x >> 40) as i32 % 60 - 30;
                let v: f64 = format!("{d}5e{k}").parse().unwrap();
                assert_eq!(sci_digits(v, n), exact_digits(v, n), "{v:e} {n}");
            }
        }
        // exact ties, decimal and binary: d + 1/2 at the fifth digit go to the even neighbour
        for (d, want) in [
            (12345u64, (12346, 4)),
            (12346, (12346, 4)),
            (99999, (10000, 5)),
            (10000, (10000, 4)),
        ] {
            let v = d as f64 + 0.5;
            assert_eq!(sci_digits(v, 5), want, "{v:e}");
            assert_eq!(exact_digits(v, 5), want, "{v:e}");
        }
    }

    #[test]
    fn ascii8_all_small_and_sampled() {
        for n in (0..1_000_000u32).chain((0..100_000_000).step_by(9_973)) {
            assert_eq!(
                ascii8(n).to_le_bytes(),
                *format!("{n:08}").as_bytes(),
                "{n}"
            );
        }
    }

    /// The fast cell is the same bytes as the general formatter, for random bit patterns and
    /// for values near decimal ties (read from one digit more than written).
    #[test]
    fn put_cell_matches_format_value() {
        let mut x = 0x1234_5678_9ABC_DEF1u64;
        let check = |v: f64| {
            for style in [Style::Cp2k, Style::Gaussian] {
                let mut want = [0u8; 13];
                format_value(v, style, &mut want);
                let mut buf = [b'#'; 32];
                put_cell(v, style, &mut buf, 3);
                assert_eq!(&buf[3..16], &want, "{v:e} {style:?}");
                assert!(buf[..3].iter().chain(&buf[16..]).all(|&c| c == b'#'));
            }
        };
        for _ in 0..200_000 {
            next(&mut x);
            let r = f64::from_bits(x);
            if r.is_finite() {
                check(r);
            }
            let d = 100_000 + x % 900_000;
            let k = (x >> 40) as i32 % 40 - 25;
            let v: f64 = format!("{}{d}5e{k}", if x & 1 == 1 { "-" } else { "" })
                .parse()
                .unwrap();
            check(v);
            check(v / 7.0);
        }
        for v in [
            0.0,
            -0.0,
            1e90,
            1e-90,
            9.999995e89,
            1.0,
            0.5,
            99999.5,
            999999.5,
        ] {
            check(v);
        }
    }

    /// Whole rows (every length up to 20, four values at a time where AVX2 runs) are the
    /// cells of [`format_value`] with a line end after every sixth and the last.
    #[test]
    fn put_row_matches_format_value() {
        let mut x = 0x5DEE_CE66_D1CE_4E5Bu64;
        for round in 0..20_000 {
            let len = 1 + round % 20;
            let row: Vec<f64> = (0..len)
                .map(|_| {
                    next(&mut x);
                    match x % 8 {
                        0 => 0.0,
                        1 => -(x as f64) * 1e-95,
                        2 => {
                            // read from one digit more: near a tie of five digits
                            let d = 100_000 + x % 900_000;
                            format!("{d}5e{}", (x >> 40) as i32 % 40 - 25)
                                .parse()
                                .unwrap()
                        }
                        _ => {
                            let v = f64::from_bits(x);
                            if v.is_finite() {
                                v
                            } else {
                                1.5
                            }
                        }
                    }
                })
                .collect();
            for style in [Style::Cp2k, Style::Gaussian] {
                let mut want = Vec::new();
                for (i, &v) in row.iter().enumerate() {
                    let mut c = [0u8; 13];
                    format_value(v, style, &mut c);
                    want.extend_from_slice(&c);
                    if i % 6 == 5 || i == len - 1 {
                        want.push(b'\n');
                    }
                }
                let mut got = vec![b'#'; want.len()];
                put_row(&row, style, &mut got);
                assert_eq!(
                    String::from_utf8_lossy(&got),
                    String::from_utf8_lossy(&want),
                    "{row:?}"
                );
            }
        }
        // rows of ordinary cube values (where the four-at-once path runs throughout), then of
        // values at or near a decimal tie of five or six digits (exact powers of ten or not),
        // and exact binary ties
        let mut rows = vec![(0..4000)
            .map(|i| (i as f64 - 1234.5) * 1.37e-5)
            .collect::<Vec<f64>>()];
        for _ in 0..20 {
            rows.push(
                (0..4000)
                    .map(|i| {
                        next(&mut x);
                        let sign = if x & 1 == 1 { "-" } else { "" };
                        let k = (x >> 40) as i32 % 50 - 35;
                        match i % 3 {
                            0 => format!("{sign}{}5e{k}", 10_000 + x % 90_000),
                            1 => format!("{sign}{}5e{k}", 100_000 + x % 900_000),
                            _ => format!("{sign}{}", (x % 2_000_000) as f64 / 256.0 + 1.0 / 512.0),
                        }
                        .parse()
                        .unwrap()
                    })
                    .collect(),
            );
        }
        for (row, style) in rows
            .iter()
            .flat_map(|r| [(r, Style::Cp2k), (r, Style::Gaussian)])
        {
            let mut got = vec![0u8; 4000 * 13 + 667];
            put_row(row, style, &mut got);
            for (i, &v) in row.iter().enumerate() {
                let mut c = [0u8; 13];
                format_value(v, style, &mut c);
                let at = cell_offset(i);
                assert_eq!(&got[at..at + 13], &c, "{v:e}");
            }
        }
    }

    #[test]
    fn matches_exact_path() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            let v = f64::from_bits(next(&mut x));
            if !v.is_finite() || v == 0.0 {
                continue;
            }
            for n in [5, 6] {
                assert_eq!(sci_digits(v, n), exact_digits(v, n), "{v:e} {n}");
            }
        }
    }
}
