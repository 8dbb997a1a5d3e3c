//! `manifest.json`: format name and version, fingerprint spec, counts, and each file's size and
//! checksum. It is the last file written, so its presence marks a complete store.

use std::collections::BTreeMap;
use std::path::Path;

use molsift_fp::FingerprintLayout;
use serde::{Deserialize, Serialize};

use crate::StoreError;

/// The `format` field of every manifest.
pub const FORMAT_NAME: &str = "molsift-store";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// What the fingerprints are: kind (e.g. `morgan`), size in bits, and kind-specific parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FingerprintSpec {
    /// e.g. `"morgan"`
    pub kind: String,
    /// bits per fingerprint, a positive multiple of 64
    pub bits: u32,
    /// `u64` words from one row to the next in `fingerprints.u64`
    pub row_stride_words: usize,
    /// bit order, spelled out for readers in other languages
    pub bit_order: String,
    /// kind-specific parameters (radius, generator, RDKit version, ...)
    pub params: serde_json::Value,
}

impl FingerprintSpec {
    /// A spec for `bits`-bit fingerprints of `kind` with free-form `params`.
    pub fn new(kind: &str, bits: u32, params: serde_json::Value) -> Result<Self, StoreError> {
        let layout = FingerprintLayout::new(bits).map_err(|e| StoreError::Invalid(e.to_string()))?;
        Ok(FingerprintSpec {
            kind: kind.to_string(),
            bits,
            row_stride_words: layout.row_stride_words(),
            bit_order: "bit i is bit i%64 of little-endian u64 word i//64".to_string(),
            params,
        })
    }

    /// The row layout for these fingerprints.
    pub fn layout(&self) -> Result<FingerprintLayout, StoreError> {
        FingerprintLayout::new(self.bits).map_err(|e| StoreError::Invalid(e.to_string()))
    }
}

/// Records in, molecules stored, records rejected: `records_in == molecules + rejected`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// records read from the sources
    pub records_in: u64,
    /// molecules stored
    pub molecules: u64,
    /// records written to `rejects.tsv`
    pub rejected: u64,
}

impl Counts {
    /// Sum of two counts.
    pub fn add(self, other: Counts) -> Counts {
        Counts {
            records_in: self.records_in + other.records_in,
            molecules: self.molecules + other.molecules,
            rejected: self.rejected + other.rejected,
        }
    }
}

/// Size and checksum of one file of the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// size in bytes
    pub bytes: u64,
    /// XXH3-64 of the content, 16 hex digits
    pub xxh3: String,
}

/// The whole manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// always [`FORMAT_NAME`]
    pub format: String,
    /// [`FORMAT_VERSION`] when written by this build
    pub format_version: u32,
    /// program and version that wrote the store
    pub created_by: String,
    /// the fingerprint spec
    pub fingerprint: FingerprintSpec,
    /// records in, molecules, rejected
    pub counts: Counts,
    /// free-form provenance (source files, options, timings), set by the caller
    pub provenance: serde_json::Value,
    /// every data file by name
    pub files: BTreeMap<String, FileEntry>,
}

impl Manifest {
    /// Reads and checks the format name and version of `STORE/manifest.json`.
    pub fn read(store: &Path) -> Result<Manifest, StoreError> {
        let path = store.join(crate::layout::MANIFEST);
        let text = match molsift_io::iostats::read_file(&path) {
            Ok(t) => String::from_utf8(t).map_err(|e| StoreError::BadManifest {
                path: path.clone(),
                reason: e.to_string(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if molsift_io::iostats::metadata(store).is_ok_and(|m| m.is_dir()) {
                    return Err(StoreError::NotAStore(store.to_path_buf()));
                }
                return Err(StoreError::io(store, e));
            }
            Err(e) => return Err(StoreError::io(&path, e)),
        };
        let raw: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| StoreError::BadManifest { path: path.clone(), reason: e.to_string() })?;
        if raw.get("format").and_then(|f| f.as_str()) != Some(FORMAT_NAME) {
            return Err(StoreError::BadManifest {
                path,
                reason: format!("\"format\" is not \"{FORMAT_NAME}\""),
            });
        }
        let version = raw.get("format_version").and_then(|v| v.as_u64()).unwrap_or(0) as u32;
        if version != FORMAT_VERSION {
            return Err(StoreError::UnsupportedVersion {
                path: store.to_path_buf(),
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        serde_json::from_value(raw)
            .map_err(|e| StoreError::BadManifest { path, reason: e.to_string() })
    }

    /// Writes the manifest as pretty JSON and syncs it to disk.
    pub fn write(&self, store: &Path) -> Result<(), StoreError> {
        let path = store.join(crate::layout::MANIFEST);
        let mut text = serde_json::to_string_pretty(self)
            .map_err(|e| StoreError::Invalid(format!("manifest: {e}")))?;
        text.push('\n');
        molsift_io::iostats::write_file(&path, text.as_bytes(), true).map_err(|e| StoreError::io(&path, e))
    }
}
