//! Typed errors of the store: each names the store path or file and what is wrong.

use std::path::PathBuf;

/// What can go wrong creating, merging or opening a store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// An operating-system error on a file of the store.
    #[error("{path}: {source}")]
    Io {
        /// the file or directory
        path: PathBuf,
        /// the underlying error
        source: std::io::Error,
    },
    /// The directory has no manifest: not a store, or an ingest that did not finish.
    #[error(
        "{0}: not a molsift store (no manifest.json; an ingest that was killed leaves no manifest)"
    )]
    NotAStore(PathBuf),
    /// The manifest is not valid JSON of the expected shape.
    #[error("{path}: unreadable manifest: {reason}")]
    BadManifest {
        /// the manifest file
        path: PathBuf,
        /// what is wrong with it
        reason: String,
    },
    /// The store was written in a format version this build does not read.
    #[error("{path}: store format version {found} is not supported (this molsift reads version {supported}, and version 1 only through `molsift upgrade`)")]
    UnsupportedVersion {
        /// the store
        path: PathBuf,
        /// the version in the manifest, as written there (JSON)
        found: String,
        /// the version this build reads
        supported: u32,
    },
    /// A store of another version than the reader opening it (version 2 is read by
    /// `molsift_store::v2::StoreV2`, which `molsift.open_store` picks by itself).
    #[error("{path}: a version-{found} store, opened with the reader of another version")]
    OtherVersion {
        /// the store
        path: PathBuf,
        /// its version
        found: u32,
    },
    /// A file is shorter or longer than the manifest says.
    #[error("{path}: truncated or damaged store file: expected {expected} bytes, found {found}")]
    WrongSize {
        /// the file
        path: PathBuf,
        /// size the manifest and counts require
        expected: u64,
        /// size on disk
        found: u64,
    },
    /// A file's content does not match its checksum.
    #[error(
        "{path}: corrupted store file: checksum {found} does not match the manifest's {expected}"
    )]
    Corrupted {
        /// the file
        path: PathBuf,
        /// checksum recorded in the manifest
        expected: String,
        /// checksum of the bytes on disk
        found: String,
    },
    /// Internal structure is inconsistent (offsets, counts).
    #[error("{path}: inconsistent store: {reason}")]
    Inconsistent {
        /// the store or file
        path: PathBuf,
        /// what does not add up
        reason: String,
    },
    /// The output already exists and overwriting was not asked for.
    #[error("{0}: already exists (choose another output or pass --overwrite)")]
    Exists(PathBuf),
    /// `--overwrite` was asked for a path that is not a molsift store: nothing is replaced.
    #[error("{path}: {what}; --overwrite replaces only a molsift store (remove it yourself, or choose another output)")]
    NotReplaceable {
        /// the output path
        path: PathBuf,
        /// what is there instead
        what: String,
    },
    /// The store directory was replaced (e.g. by `ingest --overwrite`) while it was being opened.
    #[error("{0}: the store was replaced while it was being opened; open it again")]
    Replaced(PathBuf),
    /// Bad arguments (fingerprint size, on-bits, mismatched parts).
    #[error("{0}")]
    Invalid(String),
}

impl StoreError {
    /// Wraps an `io::Error` with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StoreError::Io {
            path: path.into(),
            source,
        }
    }
}
