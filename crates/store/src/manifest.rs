//! `manifest.json`: format name and version, fingerprint spec, counts, and each file's size and
//! checksum. It is the last file written, so its presence marks a complete store.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use molsift_fp::FingerprintLayout;
use molsift_iostats::CountedFile;
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
        let layout =
            FingerprintLayout::new(bits).map_err(|e| StoreError::Invalid(e.to_string()))?;
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

/// Records in, molecules stored, records rejected, duplicates:
/// `records_in == molecules + rejected + dropped`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// records read from the sources
    pub records_in: u64,
    /// molecules stored
    pub molecules: u64,
    /// records written to `rejects.tsv`
    pub rejected: u64,
    /// molecules whose canonical SMILES an earlier molecule of the store already had (stored
    /// or, with `dropped`, left out); `None` where nobody counted them (part stores, and
    /// stores written before duplicates were counted)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicates: Option<u64>,
    /// duplicates left out of the store (ingest `--dedupe`), each listed in `duplicates.tsv`
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Counts {
    /// Whether the counts add up: `records_in == molecules + rejected + dropped`, and no more
    /// dropped than duplicates.
    pub fn add_up(&self) -> bool {
        self.records_in == self.molecules + self.rejected + self.dropped
            && self.dropped <= self.duplicates.unwrap_or(0)
    }
}

impl std::ops::Add for Counts {
    type Output = Counts;

    /// Sum of two counts (duplicates are known only when both are).
    fn add(self, other: Counts) -> Counts {
        Counts {
            records_in: self.records_in + other.records_in,
            molecules: self.molecules + other.molecules,
            rejected: self.rejected + other.rejected,
            duplicates: self.duplicates.zip(other.duplicates).map(|(a, b)| a + b),
            dropped: self.dropped + other.dropped,
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
    /// every other file of the store by name: the data files, and the column index once built
    pub files: BTreeMap<String, FileEntry>,
    /// XXH3-64 of the manifest itself (its JSON with this field empty), so that no byte of a
    /// store goes unchecked; filled by [`Manifest::to_text`]
    #[serde(default)]
    pub checksum: String,
}

impl Manifest {
    /// Reads `manifest.json` through the store's directory handle and checks its format name,
    /// version and own checksum. `store` is the store's path, for messages.
    pub fn read_in(dir: &CountedFile, store: &Path) -> Result<Manifest, StoreError> {
        let path = store.join(crate::layout::MANIFEST);
        let mut bytes = Vec::new();
        let read = CountedFile::open_at(dir, crate::layout::MANIFEST, libc::O_RDONLY, 0)
            .and_then(|mut f| f.read_to_end(&mut bytes));
        match read {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::NotAStore(store.to_path_buf()))
            }
            Err(e) => return Err(StoreError::io(&path, e)),
        }
        Self::parse(&bytes, store)
    }

    /// Parses and checks the bytes of `STORE/manifest.json`.
    pub fn parse(bytes: &[u8], store: &Path) -> Result<Manifest, StoreError> {
        let path = store.join(crate::layout::MANIFEST);
        let bad = |reason: String| StoreError::BadManifest {
            path: path.clone(),
            reason,
        };
        let text = std::str::from_utf8(bytes).map_err(|e| bad(format!("not UTF-8: {e}")))?;
        let raw: serde_json::Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        if raw.get("format").and_then(|f| f.as_str()) != Some(FORMAT_NAME) {
            return Err(bad(format!("\"format\" is not \"{FORMAT_NAME}\"")));
        }
        let version = raw.get("format_version");
        let known = [u64::from(FORMAT_VERSION), u64::from(crate::v2::VERSION)];
        if !version
            .and_then(|v| v.as_u64())
            .is_some_and(|v| known.contains(&v))
        {
            return Err(StoreError::UnsupportedVersion {
                path: store.to_path_buf(),
                found: version.map_or_else(|| "missing".to_string(), |v| v.to_string()),
                supported: crate::v2::VERSION,
            });
        }
        let manifest: Manifest = serde_json::from_value(raw).map_err(|e| bad(e.to_string()))?;
        if manifest.checksum.is_empty() {
            return Err(bad(
                "no \"checksum\" (written by an older molsift, or damaged): \
                            ingest the library again"
                    .into(),
            ));
        }
        let found = manifest.own_checksum();
        if found != manifest.checksum {
            return Err(StoreError::Corrupted {
                path,
                expected: manifest.checksum.clone(),
                found,
            });
        }
        Ok(manifest)
    }

    /// The checksum of this manifest: XXH3-64 of its JSON with `checksum` empty.
    fn own_checksum(&self) -> String {
        let blank = Manifest {
            checksum: String::new(),
            ..self.clone()
        };
        let text = serde_json::to_string_pretty(&blank).expect("manifest serializes");
        crate::checksum::to_hex(xxhash_rust::xxh3::xxh3_64(text.as_bytes()))
    }

    /// The manifest with its own checksum filled in (as it is written).
    pub fn sealed(self) -> Manifest {
        Manifest {
            checksum: self.own_checksum(),
            ..self
        }
    }

    /// The manifest as written: pretty JSON with its own checksum filled in.
    pub fn to_text(&self) -> String {
        let sealed = self.clone().sealed();
        let mut text = serde_json::to_string_pretty(&sealed).expect("manifest serializes");
        text.push('\n');
        text
    }

    /// Writes the manifest into the directory `store` and syncs it (a new store being built).
    pub fn write(&self, store: &Path) -> Result<(), StoreError> {
        let path = store.join(crate::layout::MANIFEST);
        molsift_iostats::write_file(&path, self.to_text().as_bytes(), true)
            .map_err(|e| StoreError::io(&path, e))
    }
}
