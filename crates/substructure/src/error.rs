//! Typed errors of the substructure crate: bad arguments, and pattern-index files that cannot
//! be trusted (each error names the file and the reason).

use std::path::PathBuf;

/// What can go wrong writing, opening or screening a pattern index.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubstructureError {
    /// An operating-system error on a file of the pattern index.
    #[error("{path}: {source}")]
    Io {
        /// the file or directory
        path: PathBuf,
        /// the underlying error
        source: std::io::Error,
    },
    /// The store has no pattern index (its manifest lists none).
    #[error(
        "{0}: the store has no substructure index: build it with `molsift index {0} --pattern`"
    )]
    NoIndex(PathBuf),
    /// The header is not valid JSON of the expected shape, or does not fit the store.
    #[error("{path}: bad pattern-index header: {reason}")]
    BadHeader {
        /// the header file
        path: PathBuf,
        /// what is wrong with it
        reason: String,
    },
    /// A plane does not match its checksum.
    #[error("{path}: corrupted pattern-index file: {reason}")]
    Corrupted {
        /// the file
        path: PathBuf,
        /// what does not match
        reason: String,
    },
    /// An argument that cannot be used (a bit out of range, rows of the wrong length, a part
    /// that does not start on a block).
    #[error("{0}")]
    Invalid(String),
    /// The store itself is damaged or changed (its message names the file).
    #[error(transparent)]
    Store(#[from] molsift_store::StoreError),
    /// The caller's stop flag was set while the search ran.
    #[error("the search was cancelled")]
    Cancelled,
}

impl SubstructureError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        SubstructureError::Io {
            path: path.into(),
            source,
        }
    }
}
