//! Owns what a record *is*: the [`Record`] type the readers yield and the
//! byte-level rules (blank, comment, SDF `$$$$` line) that the slab reader,
//! the stream reader and the fast counter must all agree on.

/// The longest run of spaces, tabs or `\r` accepted after `$$$$` on an SDF
/// terminator line. Bounding it bounds how far a slab reader looks back
/// before its slab to find the first record start.
pub const SDF_MAX_TRAILING: usize = 16;

/// Longest SDF terminator line, without its `\n`.
pub(crate) const SDF_TERM_MAX: usize = 4 + SDF_MAX_TRAILING;

/// One record read from a file or stream.
///
/// `bytes` borrows the reader's buffer, so a record lives until the next
/// call to `next_record`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// The record text. Line kind: the line without its `\n` and without one
    /// trailing `\r`. Sdf kind: the whole block up to and including its
    /// `$$$$` line and that line's `\n`, byte for byte. Empty when `oversized`.
    pub bytes: &'a [u8],
    /// Absolute byte offset where the record starts (in the decompressed
    /// stream for a `StreamReader`).
    pub offset: u64,
    /// Newlines before `offset`, counted from the slab's start offset
    /// (`SlabReader`) or from the start of the stream (`StreamReader`).
    pub line: u64,
    /// Length of the record in the file, terminator included.
    pub len: u64,
    /// The record is longer than `max_record_bytes`; `bytes` is empty.
    pub oversized: bool,
    /// The record holds a NUL byte.
    pub has_nul: bool,
    /// Oversized records only: the id read from the part of the record that
    /// was buffered before it was found too long (an SDF block's title, the
    /// word after a line's SMILES), or empty when that part did not hold it.
    pub oversized_id: &'a [u8],
}

/// The longest id kept for an oversized record ([`Record::oversized_id`]).
pub(crate) const OVERSIZED_ID_MAX: usize = 1024;

/// Space, tab or carriage return: the bytes that make a line blank.
#[inline]
pub(crate) fn is_line_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r')
}

/// Whitespace for the "is the final SDF block empty" test.
#[inline]
pub(crate) fn is_sdf_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// A byte that, first on a line, makes the line a record without looking further.
#[inline]
pub(crate) fn is_plain_start(b: u8) -> bool {
    !matches!(b, b'\n' | b'\r' | b' ' | b'\t' | b'#')
}

/// Whether a line (given without its `\n`) is a record for the Line kind:
/// not blank, not whitespace only, and its first non-whitespace byte is not `#`.
#[inline]
pub(crate) fn is_record_line(line: &[u8]) -> bool {
    match line.iter().find(|&&b| !is_line_ws(b)) {
        None => false,
        Some(&b) => b != b'#',
    }
}

/// Whether the line starting at `data[0]` is a record line. `None` when
/// `data` ends while still in the line's leading whitespace: the caller
/// must look further, or, at the end of the file, it is no record.
#[inline]
pub(crate) fn line_at_is_record(data: &[u8]) -> Option<bool> {
    for &b in data {
        if !is_line_ws(b) {
            return Some(b != b'\n' && b != b'#');
        }
    }
    None
}

/// Whether a line (given without its `\n`) ends an SDF block: `$$$$` then at
/// most [`SDF_MAX_TRAILING`] spaces, tabs or `\r`.
#[inline]
pub(crate) fn is_sdf_terminator(line: &[u8]) -> bool {
    line.len() >= 4
        && line.len() <= SDF_TERM_MAX
        && &line[..4] == b"$$$$"
        && line[4..].iter().all(|&b| is_line_ws(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_classes() {
        assert!(is_record_line(b"CCO"));
        assert!(is_record_line(b"  CCO x"));
        assert!(!is_record_line(b""));
        assert!(!is_record_line(b" \t\r"));
        assert!(!is_record_line(b"# comment"));
        assert!(!is_record_line(b"  #c"));
        assert!(is_record_line(b"C#N"));
    }

    #[test]
    fn terminators() {
        assert!(is_sdf_terminator(b"$$$$"));
        assert!(is_sdf_terminator(b"$$$$\r"));
        assert!(is_sdf_terminator(b"$$$$  \t"));
        assert!(!is_sdf_terminator(b"$$$"));
        assert!(!is_sdf_terminator(b" $$$$"));
        assert!(!is_sdf_terminator(b"$$$$x"));
        let mut long = b"$$$$".to_vec();
        long.extend_from_slice(&[b' '; SDF_MAX_TRAILING]);
        assert!(is_sdf_terminator(&long));
        long.push(b' ');
        assert!(!is_sdf_terminator(&long));
    }

    #[test]
    fn line_at() {
        assert_eq!(line_at_is_record(b"  C\n"), Some(true));
        assert_eq!(line_at_is_record(b"  \nC"), Some(false));
        assert_eq!(line_at_is_record(b" #"), Some(false));
        assert_eq!(line_at_is_record(b"  "), None);
    }
}
