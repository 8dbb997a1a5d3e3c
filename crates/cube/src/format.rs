//! Formatting one value in 13 columns, correctly rounded (ties to even, as C's printf and
//! Python's `%` do): CP2K's Fortran `E13.5` (`  0.12345E-01`, five significant digits, the
//! `E` dropped for three-digit exponents as Fortran does) or C's `%13.5E` (` 1.23456E-01`, six
//! significant digits: Gaussian and PySCF). A fast path scales by a power of ten in `f64`;
//! when the result lies within 1e-7 of a rounding tie, or the value is very large or small,
//! the digits come from Rust's exact decimal expansion instead.

use std::sync::OnceLock;

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

fn pow10_table() -> &'static [f64] {
    static T: OnceLock<Vec<f64>> = OnceLock::new();
    // 10^k for k in -300..=300, each the correctly rounded f64
    T.get_or_init(|| {
        (-300..=300)
            .map(|k| format!("1e{k}").parse::<f64>().unwrap())
            .collect()
    })
}

#[inline(always)]
fn pow10(k: i32) -> f64 {
    pow10_table()[(k + 300) as usize]
}

const P10: [u64; 8] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];

/// `(d, e)` with `|a|` rounded to `n` significant digits equal to `d * 10^(e - n + 1)` and
/// `10^(n-1) <= d < 10^n`, for finite nonzero `a`.
fn sci_digits(a: f64, n: u32) -> (u64, i32) {
    let a = a.abs();
    let lo = P10[n as usize - 1] as f64;
    let hi = P10[n as usize] as f64;
    if (1e-280..1e280).contains(&a) {
        let e2 = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        // floor(e2 * log10(2)) in integers (exact for |e2| < 1700)
        let mut e = (e2 * 78_913) >> 18;
        for _ in 0..3 {
            let s = a * pow10(n as i32 - 1 - e);
            if s >= hi {
                e += 1;
            } else if s < lo {
                e -= 1;
            } else {
                // s is positive: truncation is floor (no libm call)
                let fl = s as u64;
                let frac = s - fl as f64;
                if (frac - 0.5).abs() < 1e-7 {
                    break;
                }
                let mut d = fl + (frac > 0.5) as u64;
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
pub fn format_value(v: f64, style: Style, out: &mut [u8; 13]) {
    let n = style.digits();
    let neg = v.is_sign_negative();
    let (d, e) = if v == 0.0 { (0, 0) } else { sci_digits(v, n) };
    let mut buf = [b' '; 16];
    let mut k = 0;
    if neg {
        buf[k] = b'-';
        k += 1;
    }
    let mut digits = [0u8; 8];
    let mut x = d;
    for i in (0..n as usize).rev() {
        digits[i] = b'0' + (x % 10) as u8;
        x /= 10;
    }
    let exp = match style {
        Style::Cp2k => {
            buf[k] = b'0';
            buf[k + 1] = b'.';
            buf[k + 2..k + 2 + n as usize].copy_from_slice(&digits[..n as usize]);
            k += 2 + n as usize;
            if d == 0 {
                0
            } else {
                e + 1
            }
        }
        Style::Gaussian => {
            buf[k] = digits[0];
            buf[k + 1] = b'.';
            buf[k + 2..k + 1 + n as usize].copy_from_slice(&digits[1..n as usize]);
            k += 1 + n as usize;
            e
        }
    };
    let ea = exp.unsigned_abs();
    let esign = if exp < 0 { b'-' } else { b'+' };
    if ea < 100 {
        buf[k] = b'E';
        buf[k + 1] = esign;
        buf[k + 2] = b'0' + (ea / 10) as u8;
        buf[k + 3] = b'0' + (ea % 10) as u8;
        k += 4;
    } else {
        if style == Style::Gaussian {
            buf[k] = b'E';
            k += 1;
        }
        buf[k] = esign;
        buf[k + 1] = b'0' + (ea / 100) as u8;
        buf[k + 2] = b'0' + (ea / 10 % 10) as u8;
        buf[k + 3] = b'0' + (ea % 10) as u8;
        k += 4;
    }
    // k <= 13 for every finite value in both styles
    let pad = 13 - k;
    out[..pad].fill(b' ');
    out[pad..].copy_from_slice(&buf[..k]);
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn matches_exact_path() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = f64::from_bits(x);
            if !v.is_finite() || v == 0.0 {
                continue;
            }
            for n in [5, 6] {
                assert_eq!(sci_digits(v, n), exact_digits(v, n), "{v:e} {n}");
            }
        }
    }
}
