//! Fingerprints as rows of little-endian `u64` words, and the kernels that work on them.
//!
//! Bit `i` of a fingerprint lives in word `i / 64` at bit `i % 64`; this is the layout of the
//! store's fingerprint array and of the numpy view `store.fingerprints`.
//!
//! * [`FingerprintLayout`]: how many bits, words and padded bytes one row takes.
//! * [`pack_on_bits`]: build a row from the list of on-bits RDKit returns.
//! * [`unpack_rdkit_bitvect`]: read RDKit's binary `ExplicitBitVect` into a packed byte row;
//!   [`rdkit_on_bits`]: its on-bits.
//! * [`popcount`], [`intersection_count`], [`tanimoto`]: the kernels, dispatched at run time to
//!   the CPU's `popcnt` instruction where present, with a portable fallback; [`is_subset`], the
//!   screen of substructure queries.
//! * [`FingerprintSet`]: a few fingerprints compared with one query at a time, for the best
//!   Tanimoto match or the rows inside the query.
//!
//! ```
//! use molsift_fp::{pack_on_bits, popcount, tanimoto, FingerprintLayout, FingerprintSet};
//! let layout = FingerprintLayout::new(128).unwrap();
//! let mut a = vec![0u64; layout.words_per_row()];
//! let mut b = vec![0u64; layout.words_per_row()];
//! pack_on_bits(&[1, 5, 64, 127], &mut a).unwrap();
//! pack_on_bits(&[1, 64], &mut b).unwrap();
//! assert_eq!(popcount(&a), 4);
//! assert_eq!(tanimoto(&a, &b), 0.5);
//!
//! // the same rows as bytes (bit i in byte i / 8), in a set
//! let bytes = |row: &[u64]| row.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
//! let set = FingerprintSet::from_byte_rows(&[bytes(&a), bytes(&b)]).unwrap();
//! assert_eq!(set.best(&bytes(&b)).unwrap(), Some((1, 1.0)));
//! assert_eq!(set.subsets_of(&bytes(&a)).unwrap(), [0, 1]);
//! ```
#![deny(missing_docs)]

mod kernels;
mod layout;
mod rdkit;
mod set;

pub use kernels::{intersection_count, is_subset, popcount, tanimoto};
pub use layout::{pack_on_bits, FingerprintError, FingerprintLayout, ROW_ALIGN_BYTES};
pub use rdkit::{rdkit_on_bits, unpack_rdkit_bitvect, RdkitBitsError, RDKIT_BITVECT_VERSION};
pub use set::FingerprintSet;
