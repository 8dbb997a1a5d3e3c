//! Exact, fast parsing of the whitespace-separated numbers of a cube's value area.
//!
//! One token is an optional sign, digits with an optional `.`, and an optional exponent
//! (`E`, `e`, `D` or `d`, then a sign and digits; Fortran's `0.12345-100`, where the `E` is
//! dropped for three-digit exponents, is read too). The value is exactly the `f64` (or `f32`)
//! that Rust's `str::parse` gives for the same number: tokens of at most 19 digits whose
//! mantissa is below 2^53 and whose decimal exponent is within +-22 take Clinger's fast path
//! (one exact integer conversion and one correctly rounded multiply or divide); any other token
//! is handed to `str::parse` itself. `f32` values come from the exact `f64` unless it lies
//! exactly halfway between two `f32`s, when `str::parse::<f32>` decides (no double rounding).
//! NaN, infinities and values out of the type's range are refused: a cube's values are finite.

use crate::error::TokenError;

/// Whitespace between tokens: space, tab, LF, CR (CRLF files), VT, FF. Anything else that is
/// not part of a number is an error.
static WS: [bool; 256] = {
    let mut t = [false; 256];
    t[b' ' as usize] = true;
    t[b'\t' as usize] = true;
    t[b'\n' as usize] = true;
    t[b'\r' as usize] = true;
    t[0x0b] = true;
    t[0x0c] = true;
    t
};

/// Whether `c` separates tokens.
#[inline(always)]
pub fn is_ws(c: u8) -> bool {
    WS[c as usize]
}

/// 10^0 to 10^22, every one exact in `f64`.
pub(crate) const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

const POW10_U64: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// An element type the parser can write: `f64` or `f32`.
pub trait CubeFloat: Copy + Default + Send + Sync + 'static {
    /// numpy's name for the type.
    const NAME: &'static str;
    /// Bytes per value.
    const SIZE: usize;
    /// The value of a token that took the fast path (`fast` is its correctly rounded `f64`),
    /// or of any token through `str::parse` (`fast` is `None`). `text` gives the token
    /// normalized for `str::parse`, called only when needed (no fast value, or an `f32` that
    /// the `f64` cannot decide). `None` when the value is not finite in this type, or when it
    /// needs the text and `text` gives none (the fast paths pass an empty text and then take
    /// the general path for that token).
    fn convert(fast: Option<f64>, text: impl FnOnce() -> String) -> Option<Self>;
    /// The value as `f64`.
    fn to_f64(self) -> f64;
    /// Little-endian bytes.
    fn write_le(self, out: &mut [u8]);
}

impl CubeFloat for f64 {
    const NAME: &'static str = "float64";
    const SIZE: usize = 8;
    #[inline(always)]
    fn convert(fast: Option<f64>, text: impl FnOnce() -> String) -> Option<Self> {
        let v = match fast {
            Some(v) => v,
            None => text().parse::<f64>().ok()?,
        };
        v.is_finite().then_some(v)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    fn write_le(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes());
    }
}

impl CubeFloat for f32 {
    const NAME: &'static str = "float32";
    const SIZE: usize = 4;
    #[inline(always)]
    fn convert(fast: Option<f64>, text: impl FnOnce() -> String) -> Option<Self> {
        let v = match fast {
            // 29 low mantissa bits of exactly 1 followed by zeros: an f32 midpoint, where
            // rounding the f64 again could differ from rounding the decimal once.
            Some(v)
                if v == 0.0
                    || ((v.to_bits() & 0x1FFF_FFFF) != 0x1000_0000
                        && v.abs() >= f32::MIN_POSITIVE as f64) =>
            {
                v as f32
            }
            _ => text().parse::<f32>().ok()?,
        };
        v.is_finite().then_some(v)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn write_le(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes());
    }
}

/// Leading decimal digits of the 8 bytes at `b[i..]` (0 to 8) and their value.
#[inline(always)]
fn eight_digits(b: &[u8], i: usize) -> (u32, u64) {
    let w = u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    let sub = w.wrapping_sub(0x3030_3030_3030_3030);
    // a byte's high bit is set unless the byte is within '0'..='9'
    let bad = (w.wrapping_add(0x4646_4646_4646_4646) | sub) & 0x8080_8080_8080_8080;
    let k = bad.trailing_zeros() / 8;
    if k == 0 {
        return (0, 0);
    }
    // the k digits moved to the top bytes; the bytes below them read as leading zeros
    let v = if k == 8 { sub } else { sub << (8 * (8 - k)) };
    let v = v.wrapping_mul(10).wrapping_add(v >> 8);
    let v = ((v & 0x0000_00FF_0000_00FF)
        .wrapping_mul(100 + (1_000_000 << 32))
        .wrapping_add(((v >> 16) & 0x0000_00FF_0000_00FF).wrapping_mul(1 + (10_000 << 32))))
        >> 32;
    (k, v)
}

/// Number of spaces (0 to 8) at the start of the 8 bytes at `b[i..]`.
#[inline(always)]
fn leading_spaces(b: &[u8], i: usize) -> usize {
    let w = u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    let x = w ^ 0x2020_2020_2020_2020;
    // high bit set in every byte of x that is not zero, exactly
    let nz = (((x & 0x7f7f_7f7f_7f7f_7f7f).wrapping_add(0x7f7f_7f7f_7f7f_7f7f)) | x)
        & 0x8080_8080_8080_8080;
    (nz.trailing_zeros() / 8) as usize
}

/// Whether the bytes of `w` selected by `mask` (0xFF per byte) are all ASCII digits. Works
/// per byte (no borrow or carry crosses bytes).
#[inline(always)]
fn all_digits(w: u64, mask: u64) -> bool {
    let hi = w & 0xF0F0_F0F0_F0F0_F0F0 & mask;
    let lo = w & 0x0F0F_0F0F_0F0F_0F0F & mask;
    hi == 0x3030_3030_3030_3030 & mask
        && (lo + (0x0606_0606_0606_0606 & mask)) & 0xF0F0_F0F0_F0F0_F0F0 == 0
}

/// `(mantissa, decimal exponent)` of a token `d.dddddE+dd` (or `e`) at `b[j..j + 11]` followed
/// by whitespace; `None` for any other shape. Needs `b[j..j + 16]`.
#[inline(always)]
fn e13_shape(b: &[u8], j: usize) -> Option<(u64, i32)> {
    let w0 = u64::from_le_bytes(b[j..j + 8].try_into().unwrap());
    let w1 = u64::from_le_bytes(b[j + 8..j + 16].try_into().unwrap());
    let sign = (w1 & 0xFF) as u8;
    // digits: bytes 0 and 2..=6 of w0, bytes 1 and 2 of w1; '.' at 1 and 'E'/'e' at 7 of w0
    if !all_digits(w0, 0x00FF_FFFF_FFFF_00FF)
        || w0 & 0xDF00_0000_0000_FF00 != 0x4500_0000_0000_2E00
        || !all_digits(w1, 0x0000_0000_00FF_FF00)
        || (sign != b'+' && sign != b'-')
        || !is_ws(((w1 >> 24) & 0xFF) as u8)
    {
        return None;
    }
    let d0 = w0 & 0x0F0F_0F0F_0F0F_0F0F;
    // the five fraction digits as an eight-digit number with three leading zeros
    let v = ((d0 >> 16) & 0xFF_FFFF_FFFF) << 24;
    let v = v.wrapping_mul(10).wrapping_add(v >> 8);
    let v = ((v & 0x0000_00FF_0000_00FF)
        .wrapping_mul(100 + (1_000_000 << 32))
        .wrapping_add(((v >> 16) & 0x0000_00FF_0000_00FF).wrapping_mul(1 + (10_000 << 32))))
        >> 32;
    let m = (d0 & 0xFF) * 100_000 + v;
    let e = ((w1 >> 8) & 0x0F) as i32 * 10 + ((w1 >> 16) & 0x0F) as i32;
    let e = if sign == b'-' { -e } else { e };
    Some((m, e - 5))
}

/// `m * 10^e10` with the sign, correctly rounded, by Clinger's fast path: `m` below 2^53
/// (exact as `f64`) and `|e10| <= 22` (10^|e10| exact), so one multiply or divide rounds once.
/// `None` outside the fast path.
#[inline(always)]
fn clinger(m: u64, e10: i32, neg: bool) -> Option<f64> {
    if m > (1u64 << 53) || !(-22..=22).contains(&e10) {
        return None;
    }
    let f = m as f64;
    let f = if e10 < 0 {
        f / POW10[(-e10) as usize]
    } else {
        f * POW10[e10 as usize]
    };
    Some(f64::from_bits(f.to_bits() | ((neg as u64) << 63)))
}

/// The value of the 13-column cell at `b[c..c + 13]` (` [ -]d.dddddE+dd`, CP2K's and
/// Gaussian's shape) followed by whitespace, or `None` for any other cell. Needs
/// `b[c..c + 18]`.
#[inline(always)]
pub(crate) fn cell<T: CubeFloat>(b: &[u8], c: usize) -> Option<T> {
    let neg = b[c + 1] == b'-';
    if b[c] != b' ' || !(neg || b[c + 1] == b' ') {
        return None;
    }
    let (m, e10) = e13_shape(b, c + 2)?;
    T::convert(Some(clinger(m, e10, neg)?), String::new)
}

/// Parses a row written as 13-column cells, six to a line, each line ended by `\n` (CP2K,
/// Gaussian, PySCF): the row starts at `b[a]` and holds `out.len()` values. The cells are at
/// known places, so no search for tokens and no chain from one value to the next. Needs 5
/// readable bytes past the row. `false` (with `out` partly written) when any cell or line end
/// differs: the caller then parses the row the general way.
pub fn parse_cells<T: CubeFloat>(b: &[u8], a: usize, out: &mut [T]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::cells::have_avx2() {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { crate::cells::avx2::parse_cells(b, a, out) };
        }
    }
    parse_cells_scalar(b, a, out)
}

/// [`parse_cells`] one cell at a time, for any CPU.
pub fn parse_cells_scalar<T: CubeFloat>(b: &[u8], a: usize, out: &mut [T]) -> bool {
    let mut c = a;
    for line in out.chunks_mut(6) {
        for v in line.iter_mut() {
            match cell::<T>(b, c) {
                Some(x) => *v = x,
                None => return false,
            }
            c += 13;
        }
        if b[c] != b'\n' {
            return false;
        }
        c += 1;
    }
    true
}

/// Reads a run of digits at `b[*i..]` into `m`; returns how many there were.
#[inline(always)]
fn digits(b: &[u8], i: &mut usize, m: &mut u64) -> usize {
    let start = *i;
    while *i + 8 <= b.len() {
        let (k, v) = eight_digits(b, *i);
        *m = m.wrapping_mul(POW10_U64[k as usize]).wrapping_add(v);
        *i += k as usize;
        if k < 8 {
            return *i - start;
        }
    }
    while let Some(&c) = b.get(*i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        *m = m.wrapping_mul(10).wrapping_add(d as u64);
        *i += 1;
    }
    *i - start
}

/// The token starting at `b[start]` up to the next whitespace, for messages.
fn token_text(b: &[u8], start: usize) -> String {
    let end = b[start..]
        .iter()
        .position(|&c| is_ws(c))
        .map_or(b.len(), |p| start + p);
    let shown = &b[start..end.min(start + 24)];
    let mut s = String::from_utf8_lossy(shown).into_owned();
    if end > start + 24 {
        s.push('…');
    }
    s
}

fn bad_token(b: &[u8], start: usize, base: u64) -> TokenError {
    let text = token_text(b, start);
    let low = text.to_ascii_lowercase();
    let reason = if low.trim_start_matches(['+', '-']).starts_with("nan")
        || low.trim_start_matches(['+', '-']).starts_with("inf")
    {
        format!("non-finite value {text:?}: cube values must be finite numbers")
    } else if b[start] < 0x20 || b[start] == 0x7f {
        format!(
            "unexpected byte 0x{:02x} where a number should start",
            b[start]
        )
    } else {
        format!("not a number: {text:?}")
    };
    TokenError {
        offset: base + start as u64,
        reason,
    }
}

/// `str::parse` text for a token of `b[start..end]` (Fortran exponent forms rewritten).
fn normalized(b: &[u8], start: usize, end: usize, mant_end: usize) -> String {
    let mut s = String::with_capacity(end - start + 2);
    // the token is ASCII: it passed the scanner
    s.push_str(std::str::from_utf8(&b[start..mant_end]).unwrap_or("x"));
    if mant_end < end {
        s.push('e');
        let exp = &b[mant_end..end];
        let exp = if matches!(exp[0] | 0x20, b'e' | b'd') {
            &exp[1..]
        } else {
            exp
        };
        s.push_str(std::str::from_utf8(exp).unwrap_or("x"));
    }
    s
}

/// What one call of [`parse_values`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed {
    /// Values written to the front of `out`.
    pub values: usize,
    /// Position just after the last token read (the start of `b` when none was).
    pub end: usize,
}

/// Parses tokens from `b` into `out` until `out` is full or `b` ends. `base` is `b[0]`'s
/// absolute offset in the file (for errors).
pub fn parse_values<T: CubeFloat>(
    b: &[u8],
    base: u64,
    out: &mut [T],
) -> Result<Parsed, TokenError> {
    let len = b.len();
    let mut i = 0usize;
    let mut n = 0usize;
    let mut end = 0usize;
    #[cfg(target_arch = "x86_64")]
    // SAFETY (the call): AVX2 present, checked first
    let simd = crate::cells::have_avx2().then(|| unsafe { crate::cells::avx2::Consts::new() });
    while n < out.len() {
        // a whole line of six 13-column cells, at once (AVX2), tried where a line starts only
        // (so that a file of other numbers pays one try per line, not per number)
        #[cfg(target_arch = "x86_64")]
        if let Some(k) = simd
            .as_ref()
            .filter(|_| i == 0 || b[i - 1] == b'\n' || b.get(i) == Some(&b'\n'))
        {
            let c = i + (i < len && b[i] == b'\n') as usize;
            // SAFETY: AVX2, checked when `simd` was made
            if unsafe { crate::cells::avx2::line_of_six(b, c, k, &mut out[n..]) } {
                n += 6;
                i = c + 78;
                end = i;
                continue;
            }
        }
        // a 13-column cell ` [ -]d.dddddE+dd` at a fixed place (after one line end at most):
        // CP2K, Gaussian and PySCF rows, without searching for the token
        if i + 19 <= len {
            let c = i + (b[i] == b'\n') as usize;
            if let Some(v) = cell::<T>(b, c) {
                out[n] = v;
                n += 1;
                i = c + 13;
                end = i;
                continue;
            }
        }
        // spaces eight at a time, then any other whitespace one by one
        loop {
            if i + 8 <= len {
                let k = leading_spaces(b, i);
                i += k;
                if k == 8 {
                    continue;
                }
            }
            if i < len && is_ws(b[i]) {
                i += 1;
                continue;
            }
            break;
        }
        if i == len {
            break;
        }
        let start = i;
        // the 13-column cube shapes `d.dddddE+dd` (CP2K's `0.ddddd`, Gaussian's and PySCF's
        // `d.ddddd`), with an optional minus sign, in a few word operations
        if i + 17 <= len {
            let neg = b[i] == b'-';
            let j = i + neg as usize;
            let value = e13_shape(b, j)
                .and_then(|(m, e10)| clinger(m, e10, neg))
                .and_then(|f| T::convert(Some(f), String::new));
            if let Some(v) = value {
                out[n] = v;
                n += 1;
                i = j + 11;
                end = i;
                continue;
            }
        }
        let c = b[i];
        let neg = c == b'-';
        if neg || c == b'+' {
            i += 1;
        }
        let mut m = 0u64;
        let int_digits = digits(b, &mut i, &mut m);
        let mut frac_digits = 0;
        let saw_point = i < len && b[i] == b'.';
        if saw_point {
            i += 1;
            frac_digits = digits(b, &mut i, &mut m);
        }
        let total = int_digits + frac_digits;
        if total == 0 {
            return Err(bad_token(b, start, base));
        }
        let mant_end = i;
        let mut exp: i32 = 0;
        if i < len && !is_ws(b[i]) {
            let c = b[i];
            let lower = c | 0x20;
            if lower == b'e' || lower == b'd' || c == b'+' || c == b'-' {
                if lower == b'e' || lower == b'd' {
                    i += 1;
                }
                let mut eneg = false;
                if i < len && (b[i] == b'+' || b[i] == b'-') {
                    eneg = b[i] == b'-';
                    i += 1;
                }
                let es = i;
                while i < len && b[i].is_ascii_digit() {
                    if exp < 100_000 {
                        exp = exp * 10 + (b[i] - b'0') as i32;
                    }
                    i += 1;
                }
                // Fortran drops the `E` only before a three-digit exponent of a number with a
                // point (`0.12345-100`): `8-9` stays two numbers run together, an error
                let marked = lower == b'e' || lower == b'd';
                if i == es || (!marked && (i - es != 3 || !saw_point)) {
                    return Err(bad_token(b, start, base));
                }
                if eneg {
                    exp = -exp;
                }
            }
            if i < len && !is_ws(b[i]) {
                return Err(bad_token(b, start, base));
            }
        }
        let e10 = exp - frac_digits as i32;
        // more than 19 digits: `m` wrapped, only `str::parse` can tell
        let fast = if total <= 19 {
            clinger(m, e10, neg)
        } else {
            None
        };
        match T::convert(fast, || normalized(b, start, i, mant_end)) {
            Some(v) => out[n] = v,
            None => {
                return Err(TokenError {
                    offset: base + start as u64,
                    reason: format!(
                        "value {:?} is out of the range of {}",
                        token_text(b, start),
                        T::NAME
                    ),
                })
            }
        }
        n += 1;
        end = i;
    }
    Ok(Parsed { values: n, end })
}

/// Number of tokens (maximal runs of non-whitespace bytes) in `b`.
pub fn count_tokens(b: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::cells::have_avx2() {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { crate::cells::avx2::count_tokens(b, true).0 };
        }
    }
    count_tokens_scalar(b)
}

/// [`count_tokens`] a byte at a time, for any CPU.
pub fn count_tokens_scalar(b: &[u8]) -> u64 {
    let mut n = 0u64;
    let mut prev_ws = true;
    for &c in b {
        let ws = is_ws(c);
        n += (prev_ws & !ws) as u64;
        prev_ws = ws;
    }
    n
}

/// Number of `\n` bytes in `b`.
pub fn count_newlines(b: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', b).count() as u64
}

/// Offset within `b` of the token with 0-based index `k`, if `b` has that many.
pub fn token_offset(b: &[u8], k: u64) -> Option<usize> {
    let mut n = 0u64;
    let mut prev_ws = true;
    for (i, &c) in b.iter().enumerate() {
        let ws = is_ws(c);
        if prev_ws && !ws {
            if n == k {
                return Some(i);
            }
            n += 1;
        }
        prev_ws = ws;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn all<T: CubeFloat>(text: &str) -> Result<Vec<T>, TokenError> {
        let mut out = vec![T::default(); text.len()];
        let p = parse_values(text.as_bytes(), 0, &mut out)?;
        out.truncate(p.values);
        Ok(out)
    }

    #[test]
    fn cube_styles() {
        let v = all::<f64>(
            "  0.12345E-01 -0.10000E+01\n 1.23456E-01 -1.5e3 7 .5 5. 0.12345-100 1.0D+02\r\n",
        )
        .unwrap();
        assert_eq!(
            v,
            vec![
                0.012345,
                -1.0,
                0.123456,
                -1500.0,
                7.0,
                0.5,
                5.0,
                0.12345e-100,
                100.0
            ]
        );
    }

    #[test]
    fn refuses() {
        for bad in [
            "nan", "-Inf", "1.2.3", "1e", "abc", "1x", "-", ".", "1e400", "1,5", "\0",
        ] {
            let e = all::<f64>(&format!("1.0 {bad} 2.0")).unwrap_err();
            assert_eq!(e.offset, 4, "{bad}: {e:?}");
        }
        assert!(all::<f64>("nan").unwrap_err().reason.contains("non-finite"));
        assert!(all::<f32>("1e39").unwrap_err().reason.contains("float32"));
    }

    #[test]
    fn cells() {
        let line =
            "  0.12345E-01 -0.99999E+00  1.23456E-01 -9.87654E+02  0.00000E+00  5.00000e-22\n";
        let want = [0.012345, -0.99999, 0.123456, -987.654, 0.0, 5e-22];
        let text = line.repeat(3);
        for k in 1..=text.len() {
            let v = all::<f64>(&text[..k]);
            let ok: Result<Vec<f64>, _> = text[..k]
                .split_ascii_whitespace()
                .map(str::parse::<f64>)
                .collect();
            match ok {
                Ok(ok) => assert_eq!(v.unwrap(), ok, "{k}"),
                Err(_) => assert!(v.is_err(), "{k}"),
            }
        }
        assert_eq!(all::<f64>(&text).unwrap()[..6], want);
        assert_eq!(e13_shape(b"0.12345E-01 xxxxx", 0), Some((12345, -6)));
        assert_eq!(e13_shape(b"1.23456E+03\nxxxxx", 0), Some((123456, -2)));
        assert_eq!(e13_shape(b"1.23456E+03xxxxxx", 0), None);
        assert_eq!(e13_shape(b"1.2345:E+03 xxxxx", 0), None);
        assert_eq!(e13_shape(b"1,23456E+03 xxxxx", 0), None);
    }

    #[test]
    fn cells_equal_general_parse() {
        // rows of 20 values (three lines of six and one of two), both styles, mixed signs and
        // exponents, then damaged copies that must be refused by the cell path
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut text = String::new();
        for _ in 0..50 {
            for line in 0..4 {
                let k = if line == 3 { 2 } else { 6 };
                for _ in 0..k {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let v = ((x >> 11) as f64 / (1u64 << 53) as f64 - 0.3)
                        * 10f64.powi((x % 24) as i32 - 12);
                    let style = if x % 2 == 0 {
                        crate::Style::Gaussian
                    } else {
                        crate::Style::Cp2k
                    };
                    let mut cell = [0u8; 13];
                    crate::format_value(v, style, &mut cell);
                    text.push_str(std::str::from_utf8(&cell).unwrap());
                }
                text.push('\n');
            }
        }
        let b = text.as_bytes();
        let mut want = vec![0f64; 1000];
        let mut got = vec![0f64; 1000];
        parse_values(b, 0, &mut want).unwrap();
        let rb = 20 * 13 + 4;
        let mut taken = 0;
        for r in 0..49 {
            if parse_cells(b, r * rb, &mut got[r * 20..(r + 1) * 20]) {
                assert_eq!(
                    &got[r * 20..(r + 1) * 20],
                    &want[r * 20..(r + 1) * 20],
                    "row {r}"
                );
                taken += 1;
            }
        }
        assert!(taken >= 40, "{taken}");
        // the cell path takes every row of the CP2K writer's own output
        let mut cp2k = String::new();
        for i in 0..20 {
            let v = (i as f64 - 7.3) * 10f64.powi(i - 12);
            let mut cell = [0u8; 13];
            crate::format_value(v, crate::Style::Cp2k, &mut cell);
            cp2k.push_str(std::str::from_utf8(&cell).unwrap());
        }
        let lines: Vec<String> = cp2k
            .as_bytes()
            .chunks(13 * 20)
            .map(|row| {
                row.chunks(13 * 6)
                    .map(|l| format!("{}\n", std::str::from_utf8(l).unwrap()))
                    .collect()
            })
            .collect();
        let rows = lines.concat() + "padding";
        let mut out = [0f64; 20];
        assert!(parse_cells(rows.as_bytes(), 0, &mut out));
        let mut again = [0f64; 20];
        parse_values(rows.as_bytes(), 0, &mut again).unwrap();
        assert_eq!(out, again);
        for (i, bad) in [
            (13 * 2 + 5, b'x'),
            (13 * 6, b' '),
            (13 * 3 + 1, b'+'),
            (13 * 4 + 11, b'-'),
            (13 * 5 + 9, b'D'),
        ] {
            let mut broken = rows.clone().into_bytes();
            broken[i] = bad;
            let mut o = [0f64; 20];
            assert!(!parse_cells(&broken, 0, &mut o), "{i}");
        }
    }

    /// A xorshift sequence (test data).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// Appends a row of `rv` 13-column cells, six to a line, each value and style from `cell`.
    fn push_row(out: &mut Vec<u8>, rv: usize, mut cell: impl FnMut() -> (f64, crate::Style)) {
        for i in 0..rv {
            let (v, style) = cell();
            let mut c = [0u8; 13];
            crate::format_value(v, style, &mut c);
            out.extend_from_slice(&c);
            if i % 6 == 5 || i == rv - 1 {
                out.push(b'\n');
            }
        }
    }

    /// The AVX2 cell path (where the CPU has it) against the scalar one and `str::parse`,
    /// on rows of every line length, exponents beyond Clinger's range, negative zeros, and
    /// copies with one byte changed: it takes every row the scalar path takes, and every row it
    /// takes has exactly the values of `str::parse` on its tokens.
    #[test]
    fn cell_paths_agree() {
        fn check<T: CubeFloat + PartialEq + std::fmt::Debug>(row: &[u8], rv: usize) -> bool {
            let mut simd = vec![T::default(); rv];
            let mut scalar = vec![T::default(); rv];
            let mut general = vec![T::default(); rv];
            let a = parse_cells(row, 0, &mut simd);
            let s = parse_cells_scalar(row, 0, &mut scalar);
            assert!(!s || a, "{:?}", String::from_utf8_lossy(row));
            if a {
                // the reference: the row's tokens through `str::parse`
                let text = std::str::from_utf8(&row[..row.len() - 40]).unwrap();
                let tokens: Vec<&str> = text.split_ascii_whitespace().collect();
                assert_eq!(tokens.len(), rv, "{text:?}");
                for (g, t) in general.iter_mut().zip(&tokens) {
                    *g = T::convert(None, || t.to_string()).unwrap();
                }
                let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
                assert_eq!(
                    bits(&simd),
                    bits(&general),
                    "{:?}",
                    String::from_utf8_lossy(row)
                );
                if s {
                    assert_eq!(bits(&scalar), bits(&general));
                }
            }
            a
        }
        let mut clean = 0;
        let mut rng = Rng(0x0DDB_1A5E_5BAD_5EED);
        for round in 0..3000 {
            let rv = 1 + (rng.next() % 20) as usize;
            let mut row = Vec::new();
            let mut cells = Rng(rng.next() | 1);
            push_row(&mut row, rv, || {
                let r = cells.next();
                let v = match r % 16 {
                    0 => 0.0,
                    1 => -0.0,
                    2 => (r >> 11) as f64 * 1e-40,
                    _ => {
                        ((r >> 11) as f64 / (1u64 << 53) as f64 - 0.4)
                            * 10f64.powi((r % 60) as i32 - 30)
                    }
                };
                let style = if r & 32 == 0 {
                    crate::Style::Gaussian
                } else {
                    crate::Style::Cp2k
                };
                (v, style)
            });
            // the next row's bytes, as in the middle of a file
            row.extend_from_slice(&[b' '; 40]);
            clean += check::<f64>(&row, rv) as usize;
            clean += check::<f32>(&row, rv) as usize;
            if round % 2 == 0 {
                let at = (rng.next() % (row.len() as u64 - 5)) as usize;
                let bytes = b" -+.0123456789eEdD\n\rx";
                row[at] = bytes[(rng.next() % bytes.len() as u64) as usize];
                check::<f64>(&row, rv);
                check::<f32>(&row, rv);
            }
        }
        // every clean row is taken (the CP2K style's three-digit exponents never occur here)
        // by the AVX2 path; the scalar path refuses those with an exponent beyond +-22
        if crate::cells::have_avx2() {
            assert_eq!(clean, 6000);
        }
    }

    /// The general parser (which reads whole lines of six cells at once where AVX2 runs) on
    /// rows of cells, in windows of every size from 1 to 20 values, continued from each call's
    /// end: the values of `str::parse` on the tokens, bit for bit.
    #[test]
    fn general_parser_in_windows_equals_reference() {
        let mut rng = Rng(0xC0FF_EE12_3456_789B);
        for _ in 0..300 {
            let rv = 1 + (rng.next() % 30) as usize;
            let rows = 1 + (rng.next() % 5) as usize;
            let mut bytes = Vec::new();
            let mut cells = Rng(rng.next() | 1);
            for _ in 0..rows {
                push_row(&mut bytes, rv, || {
                    let r = cells.next();
                    let v = ((r >> 11) as f64 / (1u64 << 53) as f64 - 0.4)
                        * 10f64.powi((r % 70) as i32 - 40);
                    let style = if r & 64 == 0 {
                        crate::Style::Gaussian
                    } else {
                        crate::Style::Cp2k
                    };
                    (v, style)
                });
            }
            let text = String::from_utf8(bytes).unwrap();
            let want: Vec<f64> = text
                .split_ascii_whitespace()
                .map(|t| t.parse().unwrap())
                .collect();
            let b = text.as_bytes();
            let mut got = vec![0f64; want.len()];
            let (mut pos, mut n) = (0usize, 0usize);
            while n < want.len() {
                let w = (1 + (rng.next() % 20) as usize).min(want.len() - n);
                let p = parse_values(&b[pos..], pos as u64, &mut got[n..n + w]).unwrap();
                assert_eq!(p.values, w);
                pos += p.end;
                n += w;
            }
            assert!(b[pos..].iter().all(|&c| is_ws(c)));
            let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want));
        }
    }

    #[test]
    fn token_counts_agree() {
        let alphabet = b" \t\n\r\x0b\x0c1.E-x";
        let mut rng = Rng(0x1357_9BDF_2468_ACE0);
        for len in 0..300usize {
            for _ in 0..20 {
                let text: Vec<u8> = (0..len)
                    .map(|_| alphabet[(rng.next() % alphabet.len() as u64) as usize])
                    .collect();
                assert_eq!(count_tokens(&text), count_tokens_scalar(&text), "{text:?}");
                let want = text.split(|&c| is_ws(c)).filter(|t| !t.is_empty()).count();
                assert_eq!(count_tokens(&text) as usize, want);
            }
        }
    }

    #[test]
    fn f32_ties_are_decided_by_the_decimal() {
        // 16786219 is exactly halfway between two f32s: ties to even, on every path
        let v = all::<f32>("16786219 16786219.E+00 1.6786219E+07  0.16786E+08").unwrap();
        assert_eq!(v, vec![16786220.0, 16786220.0, 16786220.0, 16786000.0]);
        // a decimal just above or below a midpoint whose f64 rounds onto it
        let above: f32 = "16786219.000000001".parse().unwrap();
        assert_eq!(all::<f32>("16786219.000000001").unwrap(), vec![above]);
        let mut out = [0f32; 6];
        let line = "  1.67862E+07  1.67862E+07  1.67862E+07  1.67862E+07  1.67862E+07  1.67862E+07\npadding";
        assert!(parse_cells(line.as_bytes(), 0, &mut out));
        assert_eq!(out, [16786200.0; 6]);
    }

    #[test]
    fn stops_when_full() {
        let mut out = [0f64; 2];
        let p = parse_values(b" 1 2 3", 10, &mut out).unwrap();
        assert_eq!(p, Parsed { values: 2, end: 4 });
    }

    #[test]
    fn counts_tokens() {
        assert_eq!(count_tokens(b"  1 2\n3\r\n  "), 3);
        assert_eq!(token_offset(b"  1 2\n3\r\n  ", 2), Some(6));
        assert_eq!(token_offset(b"1", 1), None);
    }

    proptest! {
        #[test]
        fn same_as_std(m in 0u64..10_000_000_000, frac in 0usize..12, exp in -340i32..320, neg: bool, style in 0u8..4) {
            let digits = m.to_string();
            let (int, fr) = if frac >= digits.len() { ("0".to_string(), format!("{digits:0>frac$}")) } else { (digits[..digits.len()-frac].to_string(), digits[digits.len()-frac..].to_string()) };
            let sign = if neg { "-" } else { "" };
            let text = match style {
                0 => format!("{sign}{int}.{fr}E{exp:+03}"),
                1 => format!("{sign}{int}.{fr}e{exp}"),
                2 => format!("{sign}{int}.{fr}"),
                _ => format!("{sign}{int}{fr}E{exp}"),
            };
            let want64: f64 = text.parse().unwrap();
            match all::<f64>(&format!(" {text}\n")) {
                Ok(v) => prop_assert_eq!(v[0].to_bits(), want64.to_bits(), "{}", text),
                Err(_) => prop_assert!(!want64.is_finite(), "{}", text),
            }
            let want32: f32 = text.parse().unwrap();
            match all::<f32>(&format!("{text} ")) {
                Ok(v) => prop_assert_eq!(v[0].to_bits(), want32.to_bits(), "{}", text),
                Err(_) => prop_assert!(!want32.is_finite(), "{}", text),
            }
        }

        #[test]
        fn round_trip_e13(v in proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL) {
            let text = format!("{v:.5e}");
            let want: f64 = text.parse().unwrap();
            let got = all::<f64>(&text).unwrap();
            prop_assert_eq!(got[0].to_bits(), want.to_bits());
        }
    }
}
