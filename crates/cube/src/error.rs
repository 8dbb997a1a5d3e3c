//! The cube crate's one error type: where in the file (byte offset, line) and why.

use std::path::PathBuf;

/// Why a cube file cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CubeError {
    /// The operating system refused an open, map, read, write or rename.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The header (the lines before the values) is malformed or lies.
    #[error("{path}: header line {line} (byte {offset}): {reason}")]
    Header {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// Byte offset of the line's start.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A value cannot be used, or there are too many or too few values.
    #[error("{path}: {}byte {offset}: {reason}", line_part(*line))]
    Value {
        /// The file.
        path: PathBuf,
        /// 1-based line number of the offending byte (0 when unknown).
        line: u64,
        /// Absolute byte offset of the offending token (or of the end of the file).
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// Arguments that cannot describe a cube (shapes, counts, layout names).
    #[error("{0}")]
    Invalid(String),
}

fn line_part(line: u64) -> String {
    if line == 0 {
        String::new()
    } else {
        format!("line {line}, ")
    }
}

impl CubeError {
    /// The same error with its file named and, for value errors, the line computed from the
    /// file's bytes (counted only on the error path).
    pub(crate) fn located(self, path: &std::path::Path, bytes: Option<&[u8]>) -> CubeError {
        self.located_in(path, bytes, 0, 1)
    }

    /// The same error with its file named and, for value errors, the line computed from
    /// `bytes`, which start at byte `base` of the file on line `first_line` (1-based; 0 when
    /// unknown, and the message then gives the byte offset alone).
    pub fn located_in(
        self,
        path: &std::path::Path,
        bytes: Option<&[u8]>,
        base: u64,
        first_line: u64,
    ) -> CubeError {
        match self {
            CubeError::Value {
                line,
                offset,
                reason,
                ..
            } => {
                let line = match bytes {
                    Some(b) if line == 0 && first_line > 0 && offset >= base => {
                        let end = ((offset - base) as usize).min(b.len());
                        first_line + memchr::memchr_iter(b'\n', &b[..end]).count() as u64
                    }
                    _ => line,
                };
                CubeError::Value {
                    path: path.to_path_buf(),
                    line,
                    offset,
                    reason,
                }
            }
            CubeError::Header {
                line,
                offset,
                reason,
                ..
            } => CubeError::Header {
                path: path.to_path_buf(),
                line,
                offset,
                reason,
            },
            other => other,
        }
    }
}

/// A token error before it has a file: its absolute offset and reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenError {
    /// Absolute byte offset of the token.
    pub offset: u64,
    /// What is wrong.
    pub reason: String,
}

impl From<TokenError> for CubeError {
    fn from(e: TokenError) -> Self {
        CubeError::Value {
            path: PathBuf::new(),
            line: 0,
            offset: e.offset,
            reason: e.reason,
        }
    }
}
