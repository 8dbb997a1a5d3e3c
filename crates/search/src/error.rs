//! Typed errors of the search crate: bad arguments, and column-index files that cannot be
//! trusted (each error names the file and the reason).

use std::path::PathBuf;

/// What can go wrong building, writing, opening or searching an index.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// An operating-system error on a file of the column index.
    #[error("{path}: {source}")]
    Io {
        /// the file or directory
        path: PathBuf,
        /// the underlying error
        source: std::io::Error,
    },
    /// A file is shorter or longer than the header says it must be.
    #[error(
        "{path}: truncated or damaged column-index file: expected {expected} bytes, found {found}"
    )]
    WrongSize {
        /// the file
        path: PathBuf,
        /// size the header requires
        expected: u64,
        /// size on disk
        found: u64,
    },
    /// The header is not valid JSON of the expected shape, or describes an impossible layout.
    #[error("{path}: bad column-index header: {reason}")]
    BadHeader {
        /// the header file
        path: PathBuf,
        /// what is wrong with it
        reason: String,
    },
    /// The index was written in a format version this build does not read.
    #[error(
        "{path}: column-index format version {found} is not supported (this build reads version {supported})"
    )]
    UnsupportedVersion {
        /// the header file
        path: PathBuf,
        /// the version in the header, as written there (JSON)
        found: String,
        /// the version this build reads
        supported: u32,
    },
    /// A file's content does not match its checksum or the structure it must have.
    #[error("{path}: corrupted column-index file: {reason}")]
    Corrupted {
        /// the file
        path: PathBuf,
        /// what does not match
        reason: String,
    },
    /// The store the index belongs to is damaged or changed (its message names the file).
    #[error("{0}")]
    Store(String),
    /// A threshold that is not a number in `[0, 1]`.
    #[error("threshold must be a number in [0, 1], got {0}")]
    BadThreshold(f64),
    /// The query and the index have fingerprints of different sizes.
    #[error("the query has {query} bits but the index holds {index}-bit fingerprints")]
    BitsMismatch {
        /// bits per fingerprint in the index
        index: u32,
        /// bits of the query
        query: u32,
    },
    /// Other bad arguments (shapes of the input arrays, bit indices, popcounts).
    #[error("{0}")]
    Invalid(String),
}

impl SearchError {
    /// Wraps an `io::Error` with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        SearchError::Io {
            path: path.into(),
            source,
        }
    }
}

impl From<molsift_store::StoreError> for SearchError {
    fn from(e: molsift_store::StoreError) -> Self {
        SearchError::Store(e.to_string())
    }
}

impl From<molsift_fp::FingerprintError> for SearchError {
    fn from(e: molsift_fp::FingerprintError) -> Self {
        SearchError::Invalid(e.to_string())
    }
}
