//! The molsift store: a directory holding molecules (ids, canonical SMILES, fingerprints) in
//! fixed, memory-mappable files described by a versioned `manifest.json`.
//!
//! * [`StoreWriter`] appends molecules and rejects and, on [`StoreWriter::finish`], writes the
//!   manifest last and renames the temporary directory into place: a killed ingest never leaves
//!   a directory that opens as a store.
//! * [`runs::PartRuns`] merges ingest's part stores (one per task), each with its run (its
//!   molecules sorted by canonical SMILES), k-way into the one store's order; the one store
//!   ([`v2`]) is written from any [`Molecules`]: the parts so merged, or a version-1 store
//!   (and [`PartRuns::write_version_1`] writes the old format, for the tests of `upgrade`).
//!   [`cuts`] cuts the runs into a store set's shards without a merge, and [`slices`] cuts a
//!   part into the slices MPI ranks send each other for the shards they write.
//! * [`duplicates`]: molecules whose canonical SMILES an earlier one had (found by the merge of
//!   the runs; left out with `--dedupe` and listed in `duplicates.tsv`).
//! * [`rejects`] is the one format of rejected records (`rejects.tsv`), for ingest and screen.
//! * [`Store::open`] checks the manifest, the file sizes and (with [`Verify::Full`]) the
//!   checksums, then maps the files; [`Store::fingerprint`], [`Store::smiles`], [`Store::id`]
//!   fetch record `i` in O(1).
//!
//! The layout of every file is in [`layout`] and in `docs/store-format.md`.
//!
//! ```
//! use molsift_store::{FingerprintSpec, Store, StoreWriter, Verify};
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("demo.store");
//! let spec = FingerprintSpec::new("morgan", 128, serde_json::json!({"radius": 2})).unwrap();
//! let mut w = StoreWriter::create(&path, spec, false).unwrap();
//! w.add_molecule("mol1", "CCO", 1, &[1, 2]).unwrap();
//! w.add_reject("in.smi", 2, 4, "mol2", "RDKit could not parse the SMILES").unwrap();
//! w.finish().unwrap();
//! let store = Store::open(&path, Verify::Full).unwrap();
//! assert_eq!(store.len(), 1);
//! assert_eq!(store.smiles(0).unwrap(), "CCO");
//! assert_eq!(store.manifest().counts.rejected, 1);
//! ```
#![deny(missing_docs)]

mod checksum;
pub mod cuts;
pub mod duplicates;
mod error;
mod files;
pub mod fuse;
pub mod layout;
pub mod lookup;
mod manifest;
pub mod packed;
pub mod planes;
mod reader;
pub mod rejects;
pub mod replace;
pub mod runs;
pub mod slices;
pub mod source;
pub mod textblocks;
pub mod v2;
mod writer;

pub use error::StoreError;
pub use files::{open_any, StoreFiles};
pub use manifest::{Counts, FileEntry, FingerprintSpec, Manifest, FORMAT_NAME, FORMAT_VERSION};
pub use reader::{Store, StoreLock, Verify};
pub use runs::PartRuns;
pub use source::Molecules;
pub use writer::StoreWriter;
