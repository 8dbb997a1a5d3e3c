//! Analog search by graph edit distance (issue 19, in progress; `docs/analogs.md`): the
//! anonymous graphs of molecules and their canonical form, the pieces the analog index and
//! walk are built on.
//!
//! * [`Skeleton`]: a molecule's heavy atoms and bonds with every label removed.
//! * [`canonical`]: a canonical labeling; [`Canon::certificate`] is equal for two skeletons
//!   exactly when they are isomorphic.
//! * [`skeleton_of_smiles`]: a skeleton read from a SMILES's topology, without a toolkit.
//! * [`edits`]: every single edit of a skeleton, by [`Kind`].
//! * [`walk`]: the exact search, breadth first from the query over every edit.
//!
//! ```
//! use molsift_analogs::{canonical, Skeleton};
//! // benzene's ring, numbered two ways
//! let a = Skeleton::new(6, &[(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0)]).unwrap();
//! let b = Skeleton::new(6, &[(0, 2), (2, 4), (4, 1), (1, 3), (3, 5), (5, 0)]).unwrap();
//! assert_eq!(canonical(&a, 1000).unwrap().certificate, canonical(&b, 1000).unwrap().certificate);
//! ```

pub mod canon;
pub mod edits;
pub mod skeleton;
pub mod smiles;
#[cfg(test)]
mod tests;
pub mod walk;

pub use canon::{canonical, Canon};
pub use edits::{edits, Kind};
pub use skeleton::Skeleton;
pub use smiles::skeleton_of_smiles;
pub use walk::{walk, KeySet, Library, SkeletonGroups, WalkStats, UNLIMITED};

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum AnalogError {
    /// A graph that is not a valid skeleton.
    #[error("invalid skeleton: {0}")]
    Invalid(String),
    /// A graph whose canonical form needs more search than allowed.
    #[error("the skeleton is too symmetric: its canonical form needs more than {0} search leaves")]
    TooSymmetric(usize),
}
