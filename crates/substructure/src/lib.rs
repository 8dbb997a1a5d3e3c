//! The substructure screen of a molsift store: RDKit pattern fingerprints (and any other
//! screening bits a caller derives, such as atom-count features) stored as bit planes in store
//! order, so that the screen of a query is the AND of the planes of its bits: a molecule can
//! contain the query only if it has every bit the query has. A query reads only its own planes,
//! rarest first, one chunk of 4,096 molecules at a time, and leaves a chunk as soon as no
//! molecule of it is left; survivors come out in store order, ready for the exact match
//! (RDKit's `HasSubstructMatch`, run by the Python workers).
//!
//! * [`create_planes`], [`write_part`] (any number of processes, one part each, starting on a
//!   block), [`finish_index`]: writing the index into a finished store.
//! * [`fromparts`]: ingest's index written from its workers' rows and graph records.
//! * [`PatternIndex::open_in`] and [`PatternIndex::screen`]: reading it.
//! * [`pickle::screen_from_pickle`]: a molecule's graph record, screen facts and RDKit pattern
//!   fingerprint ([`pattern`]) read from RDKit's binary form of the molecule;
//!   [`features::screen_row`]: a molecule's whole screening row (pattern and feature bits) and
//!   graph record from that form, as ingest's workers write them.
//!
//! The file layout is in [`layout`].
//!
//! ```
//! use molsift_store::{FingerprintSpec, Store, StoreWriter, Verify};
//! use molsift_substructure::{create_planes, finish_index, write_part, PatternIndex};
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("demo.store");
//! let spec = FingerprintSpec::new("morgan", 64, serde_json::json!({})).unwrap();
//! let mut w = StoreWriter::create(&path, spec, false).unwrap();
//! for (i, smi) in ["CCO", "c1ccccc1", "CCN"].iter().enumerate() {
//!     w.add_molecule(&format!("m{i}"), smi, i as u64 + 1, &[]).unwrap();
//! }
//! w.finish().unwrap();
//! let store = Store::open(&path, Verify::Sizes).unwrap();
//! // two screening bits per molecule row (one u64 word per row)
//! let rows = [0b01u64, 0b10, 0b11];
//! let tmp = dir.path().join("planes.tmp");
//! create_planes(&tmp, 2, 3).unwrap();
//! let counts = write_part(&tmp, 2, 3, 0, &rows, 1).unwrap();
//! finish_index(&store, &tmp, None, 2, counts, serde_json::json!({"bits": "demo"}), 1).unwrap();
//! let store = Store::open(&path, Verify::Full).unwrap();
//! let index = PatternIndex::open_in(&store).unwrap();
//! let mut hits = Vec::new();
//! index.screen(&[0], 0..3, &mut hits).unwrap();
//! assert_eq!(hits, [0, 2]);
//! ```
#![deny(missing_docs)]

#[cfg(target_endian = "big")]
compile_error!(
    "molsift-substructure maps little-endian planes directly; big-endian targets are not supported"
);

pub mod compact;
mod error;
pub mod features;
pub mod fromparts;
pub mod graph;
pub mod layout;
pub mod matcher;
pub mod pattern;
pub mod pickle;
pub mod program;
mod screen;
mod write;

pub use error::SubstructureError;
pub use layout::BLOCK;
pub use matcher::{Compiled, GraphMatches};
pub use program::Program;
pub use screen::{use_avx2, PatternIndex, ScreenStats, CHUNK_WORDS};
pub use write::{assemble_graphs, carry_index, create_planes, finish_index, write_part};

#[cfg(test)]
mod tests;
