//! The pattern index on disk: file names, the header, and the shape of the planes file.
//!
//! `pattern.planes.u64` holds `bits` bit planes in store order, plane-major: plane `b` is
//! `plane_words = blocks * 4` little-endian `u64` words, and bit `j` of word `w` of plane `b`
//! is set iff molecule `64 * w + j` has screening bit `b`. Molecules are grouped in blocks of
//! [`BLOCK`] (the unit a parallel writer's part starts on); padding slots after the last
//! molecule are zero. `pattern.json` (the header, written last) records the shape, how many
//! molecules have each bit (a screen reads its rarest planes first), one checksum per plane,
//! and what the bits mean (free-form `meaning`: fingerprint kind and size, feature version,
//! RDKit version), which the reader of queries must match.

use serde::{Deserialize, Serialize};

/// The header file (named by the store crate, which lets `--overwrite` replace it).
pub const HEADER_FILE: &str = molsift_store::layout::PATTERN_FILES[0];
/// The planes file.
pub const PLANES_FILE: &str = molsift_store::layout::PATTERN_FILES[1];
/// The `format` of every header.
pub const FORMAT_NAME: &str = "molsift-pattern-index";
/// The header version of the dense planes (a version-1 store).
pub const FORMAT_VERSION: u32 = 1;
/// The header version of the compact form (a version-2 store, [`crate::compact`]): `planes`
/// is the screen file, `kept` its planes, `plane_xxh3` empty, `graphs` the graph blocks.
pub const COMPACT_VERSION: u32 = 2;
/// Molecules per block: a part written by one task starts on a block.
pub const BLOCK: usize = 256;
/// Words of one plane per block.
pub const BLOCK_WORDS: usize = BLOCK / 64;
/// The most screening bits an index may have.
pub const MAX_BITS: u32 = 1 << 16;

/// `u64` words of one plane for `n` molecules (whole blocks).
pub fn plane_words(n: usize) -> usize {
    n.div_ceil(BLOCK) * BLOCK_WORDS
}

/// Bytes of the planes file for `bits` planes of `n` molecules.
pub fn planes_bytes(bits: u32, n: usize) -> u64 {
    bits as u64 * plane_words(n) as u64 * 8
}

/// Size and checksum of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileInfo {
    /// size in bytes
    pub bytes: u64,
    /// XXH3-64 of the content, 16 hex digits
    pub xxh3: String,
}

/// `pattern.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// always [`FORMAT_NAME`]
    pub format: String,
    /// [`FORMAT_VERSION`]
    pub version: u32,
    /// number of screening bits (planes)
    pub bits: u32,
    /// molecules (the store's count)
    pub molecules: u64,
    /// [`BLOCK`]
    pub block: u64,
    /// molecules having each bit
    pub bit_counts: Vec<u64>,
    /// the planes file
    pub planes: FileInfo,
    /// XXH3-64 of each plane
    pub plane_xxh3: Vec<String>,
    /// the graphs file (the exact-match form, [`crate::graph`]); absent in indexes written
    /// before it existed, whose queries are matched by RDKit alone
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graphs: Option<FileInfo>,
    /// what the bits are (set by the writer of the rows; checked by the reader of queries)
    pub meaning: serde_json::Value,
    /// the compact form's kept planes (header version [`COMPACT_VERSION`])
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<crate::compact::KeptPlane>,
}

/// XXH3-64 of `bytes`, 16 hex digits (the store's checksum format).
pub fn checksum(bytes: &[u8]) -> String {
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(bytes))
}
