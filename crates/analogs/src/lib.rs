//! Analog search by graph edit distance (issue 19; `docs/analogs.md`): the anonymous graphs of
//! molecules and their canonical form, the edits between them, a store's analog index and the
//! exact walk.
//!
//! * [`Skeleton`]: a molecule's heavy atoms and bonds with every label removed.
//! * [`canonical`]: a canonical labeling; [`Canon::certificate`] is equal for two skeletons
//!   exactly when they are isomorphic.
//! * [`skeleton_of_smiles`]: a skeleton read from a SMILES's topology, without a toolkit.
//! * [`element_changes`]: the atoms of a hit whose element differs from the query atom they
//!   come from, under the best isomorphism.
//! * [`edits`]: every single edit of a skeleton, by [`Kind`].
//! * [`walk`]: the exact search, breadth first from the query over every edit; [`divide`]:
//!   each distance of it divided among threads and processes ([`walk_with`]).
//! * [`AnalogIndex`]: a store's distinct skeletons and their molecules, on disk
//!   ([`write_index`]), the library a walk searches; [`Union`]: several searched by one walk.
//!
//! ```
//! use molsift_analogs::{canonical, Skeleton};
//! // benzene's ring, numbered two ways
//! let a = Skeleton::new(6, &[(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0)]).unwrap();
//! let b = Skeleton::new(6, &[(0, 2), (2, 4), (4, 1), (1, 3), (3, 5), (5, 0)]).unwrap();
//! assert_eq!(canonical(&a, 1000).unwrap().certificate, canonical(&b, 1000).unwrap().certificate);
//! ```

pub mod canon;
pub mod deletions;
pub mod divide;
pub mod edits;
pub mod index;
pub mod keys;
pub mod mapping;
pub mod skeleton;
pub mod smiles;
#[cfg(test)]
mod tests;
pub mod union;
pub mod walk;
pub mod wl;

pub use canon::{canonical, Canon};
pub use divide::Peers;
pub use edits::{edits, Kind};
pub use index::{write_index, AnalogIndex};
pub use mapping::element_changes;
pub use skeleton::Skeleton;
pub use smiles::{element_code, skeleton_and_elements, skeleton_of_smiles};
pub use union::{Union, UnionFilter};
pub use walk::{
    walk, walk_with, Event, KeySet, Library, SkeletonGroups, WalkOptions, WalkStats, UNLIMITED,
};

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnalogError {
    /// A graph that is not a valid skeleton.
    #[error("invalid skeleton: {0}")]
    Invalid(String),
    /// A graph whose canonical form needs more search than allowed.
    #[error("the skeleton is too symmetric: its canonical form needs more than {0} search leaves")]
    TooSymmetric(usize),
    /// An operating-system error on a file of the analog index.
    #[error("{path}: {source}")]
    Io {
        /// the file
        path: std::path::PathBuf,
        /// the underlying error
        source: std::io::Error,
    },
    /// The store has no analog index (its manifest lists none).
    #[error("{0}: the store has no analog index: build it with `molsift index {0} --analogs`")]
    NoIndex(std::path::PathBuf),
    /// A file of the analog index that cannot be trusted (or does not fit the store).
    #[error("{path}: bad analog index: {reason}; rebuild it with `molsift index STORE --analogs`")]
    BadIndex {
        /// the file
        path: std::path::PathBuf,
        /// what is wrong with it
        reason: String,
    },
    /// The store itself is damaged or changed (its message names the file).
    #[error(transparent)]
    Store(#[from] molsift_store::StoreError),
}

impl AnalogError {
    pub(crate) fn io(path: impl Into<std::path::PathBuf>, source: std::io::Error) -> Self {
        AnalogError::Io {
            path: path.into(),
            source,
        }
    }
}
