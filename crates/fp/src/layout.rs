//! The shape of one fingerprint row: bit count, words, and the 64-byte-aligned row stride.

use std::fmt;

/// Rows of the store's fingerprint array start on multiples of this many bytes (a cache line).
pub const ROW_ALIGN_BYTES: usize = 64;

/// Errors about fingerprint shapes, row lengths and bit indices.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FingerprintError {
    /// The bit count is zero or not a multiple of 64.
    BadBitCount(u32),
    /// An on-bit index is outside the row.
    BitOutOfRange {
        /// the offending bit index
        bit: u32,
        /// the number of bits in the row
        bits: u32,
    },
    /// A byte row whose length is zero or not a multiple of 8 bytes (64 bits).
    BadRowBytes(usize),
    /// A row of a set whose length is not the first row's.
    RowBytesDiffer {
        /// the row's position
        row: usize,
        /// its length in bytes
        bytes: usize,
        /// the first row's length in bytes
        first: usize,
    },
    /// A query whose length is not the rows'.
    QueryBytes {
        /// the query's length in bytes
        bytes: usize,
        /// the rows' length in bytes
        expected: usize,
    },
}

impl fmt::Display for FingerprintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FingerprintError::BadBitCount(b) => {
                write!(
                    f,
                    "fingerprint size must be a positive multiple of 64 bits, got {b}"
                )
            }
            FingerprintError::BitOutOfRange { bit, bits } => {
                write!(f, "on-bit {bit} is outside a fingerprint of {bits} bits")
            }
            FingerprintError::BadRowBytes(n) => {
                write!(
                    f,
                    "fingerprints must be a multiple of 64 bits long, got {n} bytes"
                )
            }
            FingerprintError::RowBytesDiffer { row, bytes, first } => {
                write!(
                    f,
                    "fingerprint {row} has {bytes} bytes, the first has {first}"
                )
            }
            FingerprintError::QueryBytes { bytes, expected } => {
                write!(
                    f,
                    "query has {bytes} bytes, the set's fingerprints {expected}"
                )
            }
        }
    }
}

impl std::error::Error for FingerprintError {}

/// How one fingerprint row is laid out on disk and in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FingerprintLayout {
    bits: u32,
}

impl FingerprintLayout {
    /// A layout for `bits`-bit fingerprints; `bits` must be a positive multiple of 64.
    pub fn new(bits: u32) -> Result<Self, FingerprintError> {
        if bits == 0 || bits % 64 != 0 {
            return Err(FingerprintError::BadBitCount(bits));
        }
        Ok(FingerprintLayout { bits })
    }

    /// Number of bits per fingerprint.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// Number of meaningful `u64` words per fingerprint.
    pub fn words_per_row(&self) -> usize {
        self.bits as usize / 64
    }

    /// Bytes from one row to the next: the row rounded up to [`ROW_ALIGN_BYTES`].
    pub fn row_stride_bytes(&self) -> usize {
        (self.words_per_row() * 8).div_ceil(ROW_ALIGN_BYTES) * ROW_ALIGN_BYTES
    }

    /// `u64` words from one row to the next (meaningful words plus zero padding).
    pub fn row_stride_words(&self) -> usize {
        self.row_stride_bytes() / 8
    }
}

/// Clears `row` and sets the given on-bits; errors if a bit is outside the row.
pub fn pack_on_bits(on_bits: &[u32], row: &mut [u64]) -> Result<(), FingerprintError> {
    row.fill(0);
    let bits = (row.len() * 64) as u32;
    for &bit in on_bits {
        if bit >= bits {
            return Err(FingerprintError::BitOutOfRange { bit, bits });
        }
        row[(bit / 64) as usize] |= 1u64 << (bit % 64);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stride_is_cache_line_aligned() {
        assert_eq!(
            FingerprintLayout::new(2048).unwrap().row_stride_bytes(),
            256
        );
        assert_eq!(FingerprintLayout::new(64).unwrap().row_stride_bytes(), 64);
        assert_eq!(FingerprintLayout::new(576).unwrap().row_stride_bytes(), 128);
        assert_eq!(FingerprintLayout::new(576).unwrap().words_per_row(), 9);
    }

    #[test]
    fn bad_sizes_are_refused() {
        assert!(FingerprintLayout::new(0).is_err());
        assert!(FingerprintLayout::new(100).is_err());
    }

    #[test]
    fn bit_out_of_range_is_an_error() {
        let mut row = [0u64; 2];
        assert_eq!(
            pack_on_bits(&[128], &mut row),
            Err(FingerprintError::BitOutOfRange {
                bit: 128,
                bits: 128
            })
        );
    }
}
