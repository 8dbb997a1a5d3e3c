//! molsift-io: reading huge molecule files record by record, in parallel.
//!
//! The main types:
//!
//! - [`SlabReader`] reads the records that start inside one *slab* (a byte
//!   range of a plain file, see [`split_slabs`]) with positioned reads, so
//!   many threads can read one file without coordination.
//! - [`StreamReader`] reads the same records from a gzip or zstd file, or
//!   standard input, from start to end with one decoder.
//! - [`Record`] is one *record*: a line ([`RecordKind::Line`], SMILES or
//!   CSV) or an SDF block ([`RecordKind::Sdf`]), with its byte offset and
//!   *line* number.
//! - [`count_records`] counts records at memory speed, exactly as the
//!   readers would yield them; [`count_newlines`] counts lines.
//! - [`split_smiles_line`], [`CsvColumns`], [`sdf_title`] and
//!   [`sdf_molecule_count`] pull fields out of a record.
//! - [`RecordSource`] wraps both readers for an [`InputFormat`] (SMILES,
//!   CSV, SDF) and yields [`SourceRecord`]s: text, id, absolute line, offset
//!   and the reason a record cannot be used.
//! - [`ReadCounters`] and [`read_amplification`] say how much was read.
//!
//! Every file is opened as a `molsift_iostats::CountedFile`, so molsift's I/O counters (the
//! `molsift-iostats` crate) see each read.
//!
//! ```
//! use molsift_io::{count_newlines, count_records, split_slabs, ReaderOptions, RecordKind, SlabReader};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! let path = dir.path().join("mols.smi");
//! std::fs::write(&path, "CCO ethanol\n\n# a comment\nc1ccccc1 benzene\r\nO water")?;
//!
//! let len = std::fs::metadata(&path)?.len();
//! let mut found = Vec::new();
//! for slab in split_slabs(len, 3) {
//!     let first_line = count_newlines(&path, 0..slab.start)?;
//!     let opts = ReaderOptions::for_kind(RecordKind::Line);
//!     let mut reader = SlabReader::open(&path, RecordKind::Line, slab, opts)?;
//!     while let Some(rec) = reader.next_record()? {
//!         let (smiles, _id) = molsift_io::split_smiles_line(rec.bytes);
//!         found.push((first_line + rec.line, String::from_utf8(smiles.to_vec())?));
//!     }
//! }
//! assert_eq!(found, [(0, "CCO".to_string()), (3, "c1ccccc1".into()), (4, "O".into())]);
//! assert_eq!(count_records(&path, RecordKind::Line, 2, false)?.records, 3);
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

mod access;
mod ahead;
mod count;
mod counters;
mod error;
mod fields;
mod framing;
mod options;
mod reader;
mod record;
mod scan;
mod slab;
mod source;
mod stream;
mod window;

pub use access::{auto_choice, resident_fraction, ReadMethod, AUTO_CACHED, AUTO_MAP_BELOW};
pub use count::{
    count_newlines, count_records, count_records_with, slab_first_lines, CountOptions, CountReport,
};
pub use counters::{read_amplification, ReadCounters};
pub use error::{FieldError, IoError, OptionError};
pub use fields::{sdf_molecule_count, sdf_title, split_smiles_line, CsvColumns, SmilesAndId};
pub use options::{
    ReaderOptions, DEFAULT_BUFFER_SIZE, DEFAULT_MAX_LINE_RECORD_BYTES, DEFAULT_MAX_SDF_RECORD_BYTES,
};
pub use reader::SlabReader;
pub use record::{Record, SDF_MAX_TRAILING};
pub use slab::{guided_slabs, split_slabs, RecordKind};
pub use source::{count_input, InputFormat, RecordSource, SourceRecord};
pub use stream::{detect_compression, read_first_line, Compression, StreamReader};

#[cfg(test)]
mod tests {
    /// Readers move between threads and sit inside Python objects.
    #[test]
    fn readers_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<crate::SlabReader>();
        check::<crate::StreamReader>();
        check::<crate::RecordSource>();
        check::<crate::IoError>();
    }
}
