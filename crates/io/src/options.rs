//! Owns [`ReaderOptions`]: read buffer size, the record size limit, the
//! header flag shared by the slab and stream readers, and how slabs are read.

use crate::access::ReadMethod;
use crate::error::OptionError;
use crate::slab::RecordKind;

/// One MiB.
const MIB: usize = 1 << 20;

/// Default bytes per read call ([`ReaderOptions::buffer_size`]): 1 MiB.
pub const DEFAULT_BUFFER_SIZE: usize = MIB;

/// Default record size limit for line records (SMILES, CSV): 64 KiB. A SMILES
/// line that long is not a drug-like molecule and would take RDKit minutes.
pub const DEFAULT_MAX_LINE_RECORD_BYTES: usize = 64 << 10;

/// Default record size limit for SDF blocks: 64 MiB.
pub const DEFAULT_MAX_SDF_RECORD_BYTES: usize = 64 * MIB;

/// Options for [`SlabReader`](crate::SlabReader) and [`StreamReader`](crate::StreamReader).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaderOptions {
    /// Bytes asked for per read call (the read buffer's size). Any value
    /// from 1 works. Default 1 MiB.
    pub buffer_size: usize,
    /// A record longer than this (terminator included) is not buffered: it is
    /// streamed over and yielded with `oversized = true` and empty `bytes`.
    /// Default [`DEFAULT_MAX_LINE_RECORD_BYTES`] (64 KiB) for Line,
    /// [`DEFAULT_MAX_SDF_RECORD_BYTES`] (64 MiB) for Sdf.
    pub max_record_bytes: usize,
    /// The line at offset 0 of the file is a header, not a record. Line kind only.
    pub skip_header: bool,
    /// How a slab of a plain file is read. Default `Auto`: by `pread` when the slab is cached
    /// or under 8 MiB, and cold or partly cached slabs too (never direct).
    pub io: ReadMethod,
}

impl ReaderOptions {
    /// Defaults for a record kind.
    pub fn for_kind(kind: RecordKind) -> ReaderOptions {
        ReaderOptions {
            buffer_size: DEFAULT_BUFFER_SIZE,
            max_record_bytes: match kind {
                RecordKind::Line => DEFAULT_MAX_LINE_RECORD_BYTES,
                RecordKind::Sdf => DEFAULT_MAX_SDF_RECORD_BYTES,
            },
            skip_header: false,
            io: ReadMethod::Auto,
        }
    }

    /// The defaults for `kind`, with the read buffer size and record size limit a caller gave
    /// (`None`: the default).
    pub fn with_sizes(
        kind: RecordKind,
        buffer_size: Option<usize>,
        max_record_bytes: Option<usize>,
    ) -> Result<ReaderOptions, OptionError> {
        let mut opts = ReaderOptions::for_kind(kind);
        if let Some(b) = buffer_size {
            if b == 0 {
                return Err(OptionError::EmptyBuffer);
            }
            opts.buffer_size = b;
        }
        if let Some(m) = max_record_bytes {
            opts.max_record_bytes = m;
        }
        Ok(opts)
    }

    /// Checks the options against the record kind; `Err` holds the reason.
    pub(crate) fn check(&self, kind: RecordKind) -> Result<(), String> {
        if self.buffer_size == 0 {
            return Err("buffer_size must be at least 1".into());
        }
        if self.skip_header && kind == RecordKind::Sdf {
            return Err("skip_header applies to line files only, not SDF".into());
        }
        Ok(())
    }
}

impl Default for ReaderOptions {
    /// The Line kind's defaults.
    fn default() -> Self {
        ReaderOptions::for_kind(RecordKind::Line)
    }
}
