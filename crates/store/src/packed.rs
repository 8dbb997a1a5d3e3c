//! Bit-packed unsigned integers: `n` values of `width` bits each (0 to 64), value `i` at bits
//! `i * width ..` of a little-endian stream of `u64` words, plus a `base` added to every value.
//!
//! Used by store version 2 for its permutations (store position -> input rank, sorted slot ->
//! store position: `ceil(log2 n)` bits each) and for source lines (the line of the `r`-th
//! record minus `r`, non-decreasing and usually constant: often 0 bits per value).
//!
//! The encoded form is `[width u8][7 zero bytes][n u64][base u64][words]`, so a reader can check
//! the length (`24 + 8 * ceil(n * width / 64)` bytes) before trusting it.

/// Bytes of the header before the words.
pub const HEADER: usize = 24;

/// Bits needed to write `v` (0 for 0).
pub fn bits_for(v: u64) -> u32 {
    64 - v.leading_zeros()
}

/// Words needed for `n` values of `width` bits (one spare word keeps reads branch-free).
pub fn words_for(n: u64, width: u32) -> usize {
    if width == 0 || n == 0 {
        0
    } else {
        ((n as u128 * width as u128).div_ceil(64)) as usize + 1
    }
}

/// Encodes `values` as the smallest `width` that holds `max - min`, with `base = min`.
pub fn encode(values: &[u64]) -> Vec<u8> {
    encode_by(values.len(), |i| values[i])
}

/// Encodes the `n` values `value(0) .. value(n - 1)` as [`encode`] does, without holding them:
/// one pass finds their range, a second writes them (`value` is called twice per index).
pub fn encode_by(n: usize, value: impl Fn(usize) -> u64) -> Vec<u8> {
    let (mut min, mut max) = (u64::MAX, 0u64);
    for i in 0..n {
        let v = value(i);
        min = min.min(v);
        max = max.max(v);
    }
    let min = if n == 0 { 0 } else { min };
    encode_with(n, value, bits_for(max.saturating_sub(min)), min)
}

/// Encodes `values` (each below `2^width`) at `width` bits with base 0.
pub fn encode_width(values: &[u64], width: u32) -> Vec<u8> {
    encode_with(values.len(), |i| values[i], width, 0)
}

fn encode_with(n: usize, value: impl Fn(usize) -> u64, width: u32, min: u64) -> Vec<u8> {
    let words = words_for(n as u64, width);
    let mut out = vec![0u8; HEADER + 8 * words];
    out[0] = width as u8;
    out[8..16].copy_from_slice(&(n as u64).to_le_bytes());
    out[16..24].copy_from_slice(&min.to_le_bytes());
    if width > 0 {
        let body = &mut out[HEADER..];
        let mut or_word = |w: usize, x: u64| {
            let at = &mut body[8 * w..8 * w + 8];
            let old = u64::from_le_bytes(at.try_into().expect("8 bytes"));
            at.copy_from_slice(&(old | x).to_le_bytes());
        };
        for i in 0..n {
            let x = value(i) - min;
            let bit = i as u128 * width as u128;
            let (w, s) = ((bit / 64) as usize, (bit % 64) as u32);
            or_word(w, x << s);
            if s + width > 64 {
                or_word(w + 1, x >> (64 - s));
            }
        }
    }
    out
}

/// A read-only view of encoded integers (over a memory map, or a `Vec`).
#[derive(Debug, Clone, Copy)]
pub struct Packed<'a> {
    width: u32,
    n: u64,
    base: u64,
    mask: u64,
    words: &'a [u8],
}

impl<'a> Packed<'a> {
    /// Parses the header and checks the length; the reason when it does not add up.
    pub fn parse(bytes: &'a [u8]) -> Result<Packed<'a>, String> {
        if bytes.len() < HEADER {
            return Err(format!(
                "{} bytes, shorter than the {HEADER}-byte header",
                bytes.len()
            ));
        }
        let width = bytes[0] as u32;
        if width > 64 || bytes[1..8].iter().any(|&b| b != 0) {
            return Err(format!("bad header (width {width})"));
        }
        let n = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
        let base = u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes"));
        let want = HEADER as u128 + 8 * words_for(n, width) as u128;
        if bytes.len() as u128 != want {
            return Err(format!(
                "{} bytes, but {n} values of {width} bits take {want}",
                bytes.len()
            ));
        }
        Ok(Packed::from_parts(width, n, base, &bytes[HEADER..]))
    }

    /// A view of `n` values of `width` bits in `words` (whose length the caller checked:
    /// [`words_for`]` * 8` bytes).
    pub fn from_parts(width: u32, n: u64, base: u64, words: &'a [u8]) -> Packed<'a> {
        assert!(width <= 64 && words.len() >= 8 * words_for(n, width));
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        Packed {
            width,
            n,
            base,
            mask,
            words,
        }
    }

    /// Asks the CPU to bring value `i`'s word into cache.
    #[inline]
    pub fn prefetch(&self, i: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            let w = (i as u128 * self.width as u128 / 64) as usize;
            if 8 * w < self.words.len() {
                // SAFETY: the address is inside `words`; prefetching never faults.
                unsafe {
                    std::arch::x86_64::_mm_prefetch(
                        self.words.as_ptr().add(8 * w) as *const i8,
                        std::arch::x86_64::_MM_HINT_T0,
                    )
                };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = i;
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.n as usize
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Bits per value.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Value `i` (panics when `i >= len()`).
    #[inline]
    pub fn get(&self, i: usize) -> u64 {
        assert!((i as u64) < self.n, "packed index {i} out of range");
        if self.width == 0 {
            return self.base;
        }
        let bit = i as u128 * self.width as u128;
        let (w, s) = ((bit / 64) as usize, (bit % 64) as u32);
        let lo = self.word(w) >> s;
        let v = if s + self.width > 64 {
            lo | (self.word(w + 1) << (64 - s))
        } else {
            lo
        };
        self.base + (v & self.mask)
    }

    #[inline]
    fn word(&self, w: usize) -> u64 {
        u64::from_le_bytes(self.words[8 * w..8 * w + 8].try_into().expect("8 bytes"))
    }

    /// Every value, decoded.
    pub fn to_vec(&self) -> Vec<u64> {
        (0..self.len()).map(|i| self.get(i)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_width() {
        for width in 0..=64u32 {
            let max = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            // every value in [0, max], both ends included, then shifted by a base
            let values: Vec<u64> = (0..200u64)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) & max)
                .chain([0, max])
                .collect();
            let bytes = encode(&values);
            assert_eq!(Packed::parse(&bytes).unwrap().width(), width);
            let shifted: Vec<u64> = values.iter().map(|v| v / 2 + 1000).collect();
            assert_eq!(Packed::parse(&encode(&shifted)).unwrap().to_vec(), shifted);
            let bytes = encode(&values);
            let p = Packed::parse(&bytes).unwrap();
            assert_eq!(p.to_vec(), values, "width {width}");
        }
    }

    #[test]
    fn constant_values_take_no_words() {
        let bytes = encode(&[5; 1000]);
        assert_eq!(bytes.len(), HEADER);
        let p = Packed::parse(&bytes).unwrap();
        assert_eq!((p.width(), p.get(999)), (0, 5));
        assert_eq!(Packed::parse(&encode(&[])).unwrap().len(), 0);
    }

    #[test]
    fn refuses_wrong_lengths() {
        let bytes = encode(&[1, 2, 3, 1000]);
        assert!(Packed::parse(&bytes[..bytes.len() - 1]).is_err());
        assert!(Packed::parse(&bytes[..10]).is_err());
        let mut bad = bytes.clone();
        bad[0] = 65;
        assert!(Packed::parse(&bad).is_err());
    }
}
