//! molsift-cube: Gaussian cube files (the volumetric grids of CP2K, Gaussian, PySCF, ORCA)
//! read and written in parallel, exactly.
//!
//! - [`parse_header`] (`header.rs`): comments, origin, axes (units from the sign of the first
//!   point count), atoms, orbital indices, values per point, where the values start.
//! - [`parse_values`] (`parse.rs`): whitespace-separated numbers to `f64`/`f32`, the same
//!   values as `str::parse`, refusing NaN, infinities and anything that is not a number.
//! - [`CubeFile`] and [`read_values`] (`read.rs`): the value area in parallel slabs, by the
//!   fixed layout when every row has the same bytes, else by counting first.
//! - [`write_cube`] (`write.rs`, `format.rs`): CP2K's `6E13.5` (`0.12345E-01`) or Gaussian's
//!   and PySCF's `%13.5E` (`1.23456E-01`), every row a new line, rows formatted by many
//!   threads and written at their offsets into a temporary file that is then renamed.
//!
//! Errors ([`CubeError`]) name the file, the line and the byte offset.

mod cells;
mod digits;
mod error;
mod format;
mod header;
mod parse;
mod pow10;
mod read;
mod write;

pub use error::{CubeError, TokenError};
pub use format::{format_value, put_cell, put_row, Style};
pub use header::{parse_header, Atom, Header, Units, MAX_ATOMS, MAX_POINTS_PER_AXIS};
pub use parse::{
    count_newlines, count_tokens, count_tokens_scalar, parse_cells, parse_cells_scalar,
    parse_values, token_offset, CubeFloat, Parsed,
};
pub use read::{
    detect_layout, first_row, parse_block, read_values, CubeFile, FirstRow, FixedLayout,
    ReadOptions, ReadStats,
};
pub use write::{header_text, write_cube, WriteOptions, WriteStats};
