//! Owns the crate's error types: [`IoError`] for reading files and streams,
//! [`FieldError`] for pulling fields (SMILES, ID) out of one record, [`OptionError`] for a
//! format or reader options that cannot be used.

use std::path::PathBuf;

/// An error while opening, mapping, reading or decoding an input file.
///
/// Every variant names the file; the ones raised while reading also name the
/// byte offset (in the file, or in the decompressed stream for
/// [`IoError::Decode`]) where it happened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IoError {
    /// The file could not be opened or its size could not be read.
    #[error("{}: cannot open: {source}", .path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// A read call failed.
    #[error("{}: read failed at byte {offset}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Absolute byte offset in the file where the read started.
        offset: u64,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// A gzip or zstd stream could not be decoded.
    #[error("{}: cannot decode compressed input near decompressed byte {offset}: {source}", .path.display())]
    Decode {
        /// The file.
        path: PathBuf,
        /// Offset in the decompressed stream where decoding stopped.
        offset: u64,
        /// The decoder's reason.
        #[source]
        source: std::io::Error,
    },
    /// The header line does not name the columns asked for.
    #[error("{}: bad header line: {source}", .path.display())]
    Header {
        /// The file.
        path: PathBuf,
        /// What is missing.
        #[source]
        source: FieldError,
    },
    /// The reader options cannot be used for this file.
    #[error("{}: invalid reader options: {reason}", .path.display())]
    Options {
        /// The file.
        path: PathBuf,
        /// What is wrong with the options.
        reason: String,
    },
}

/// An error while extracting fields from one record.
///
/// These carry no path or offset: the caller knows which record it passed in
/// and adds that context.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldError {
    /// A requested column is not in the CSV header.
    #[error("column \"{wanted}\" not found in header; the header's columns are: {}", .columns.join(", "))]
    MissingColumn {
        /// The column asked for (or `smiles` when none was named).
        wanted: String,
        /// The header's column names, in order.
        columns: Vec<String>,
    },
    /// A data line has fewer fields than the columns need.
    #[error("line has {found} fields but column {needed} is needed")]
    TooFewFields {
        /// 1-based number of the column that is missing.
        needed: usize,
        /// Number of fields the line holds.
        found: usize,
    },
    /// A double-quoted field is not closed on its line, or text follows its closing quote.
    #[error("field {field} has a bad double quote: {reason}")]
    BadQuote {
        /// 1-based field number.
        field: usize,
        /// What is wrong.
        reason: &'static str,
    },
}

/// A format name or reader option that cannot be used (given by a caller, before any file is
/// opened).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OptionError {
    /// Not one of the formats molsift reads.
    #[error("unknown format {0:?} (smiles, csv, sdf)")]
    UnknownFormat(String),
    /// A CSV delimiter other than a comma or a tab.
    #[error("delimiter must be ',' or tab, got {0:?}")]
    BadDelimiter(String),
    /// A read buffer of no bytes.
    #[error("read buffer size must be at least 1 byte")]
    EmptyBuffer,
}
