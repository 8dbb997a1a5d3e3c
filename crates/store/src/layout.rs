//! File names inside a store directory and the size each must have for `n` molecules.

use molsift_fp::FingerprintLayout;

/// The manifest: written last, its presence marks a complete store.
pub const MANIFEST: &str = "manifest.json";
/// `n` rows of `row_stride_bytes`, little-endian `u64` words, rows 64-byte aligned.
pub const FINGERPRINTS: &str = "fingerprints.u64";
/// `n` little-endian `u16`: the popcount of each fingerprint.
pub const POPCOUNTS: &str = "popcounts.u16";
/// Canonical SMILES, each followed by `\n`.
pub const SMILES: &str = "smiles.txt";
/// `n + 1` little-endian `u64`: SMILES `i` is `smiles.txt[off[i] .. off[i+1] - 1]`.
pub const SMILES_OFFSETS: &str = "smiles.offsets.u64";
/// Record ids, each followed by `\n`.
pub const IDS: &str = "ids.txt";
/// `n + 1` little-endian `u64`, as for SMILES.
pub const ID_OFFSETS: &str = "ids.offsets.u64";
/// `n` little-endian `u64`: the 1-based line of the source where each molecule's record starts.
pub const SOURCE_LINES: &str = "source_lines.u64";
/// Tab-separated rejected records: source, line, offset, id, reason (with a header row; the
/// format is [`crate::rejects`]).
pub const REJECTS: &str = "rejects.tsv";

/// Records left out as duplicates by ingest's `--dedupe`: line, id, kept position, kept id (with
/// a header row; the format is [`crate::duplicates`]). Present only in stores written so.
pub const DUPLICATES: &str = "duplicates.tsv";

/// Files a store may have besides its data files and indexes.
pub const OPTIONAL_FILES: [&str; 1] = [DUPLICATES];

/// Every data file, in the order the manifest lists them.
pub const DATA_FILES: [&str; 8] = [
    FINGERPRINTS,
    POPCOUNTS,
    SMILES,
    SMILES_OFFSETS,
    IDS,
    ID_OFFSETS,
    SOURCE_LINES,
    REJECTS,
];

/// Files the column index (`crates/search`) adds to a finished store, registered in its
/// manifest when written: header, bit planes, slot order.
pub const INDEX_FILES: [&str; 3] = ["columns.json", "columns.planes.u64", "columns.order.u64"];

/// Files the substructure index (`crates/substructure`) adds to a finished store, registered
/// in its manifest when written: header, pattern planes, the molecules' graphs (the
/// exact-match form).
pub const PATTERN_FILES: [&str; 3] = ["pattern.json", "pattern.planes.u64", "pattern.graphs.bin"];

/// The compact form of the substructure index in a version-2 store (besides its header,
/// `PATTERN_FILES[0]`): the screen's planes compressed, the graph records in zstd blocks.
pub const PATTERN_COMPACT_FILES: [&str; 2] = ["pattern.screen.u8", "pattern.graphs.zst"];

/// Files the analog index (`crates/analogs`, `index.rs`, whose tests check this list) adds to a
/// finished store, registered in its manifest when written.
pub const ANALOG_FILES: [&str; 8] = [
    "analogs.json",
    "analogs.keys.u128",
    "analogs.shapes.u16",
    "analogs.offsets.u32",
    "analogs.positions.u32",
    "analogs.failed.tsv",
    "analogs.wl.u64",
    "analogs.deletions.fuse",
];

/// Files an earlier format of the analog index wrote (format 3's Bloom filter of deletions): a
/// store may still hold them (it is replaceable); rebuilding the index removes them.
pub const ANALOG_RETIRED_FILES: [&str; 1] = ["analogs.deletions.bloom"];

/// The exact size a fixed-width file must have for `n` molecules, or `None` for text files.
pub fn expected_size(file: &str, n: u64, fp: &FingerprintLayout) -> Option<u64> {
    match file {
        FINGERPRINTS => Some(n * fp.row_stride_bytes() as u64),
        POPCOUNTS => Some(n * 2),
        SMILES_OFFSETS | ID_OFFSETS => Some((n + 1) * 8),
        SOURCE_LINES => Some(n * 8),
        _ => None,
    }
}
