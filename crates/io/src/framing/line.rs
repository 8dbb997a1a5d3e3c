//! Owns line framing: one record per line, skipping blank, whitespace-only
//! and `#` comment lines and the optional header, stripping `\r\n`, and
//! streaming over lines longer than the record limit.

use super::{Emit, Start};
use crate::error::IoError;
use crate::record::{is_line_ws, is_record_line, OVERSIZED_ID_MAX};
use crate::window::{Source, Window};
use memchr::memchr;

enum Phase {
    /// Skipping the tail of a line that started before the slab.
    SkipPartial,
    /// At a line start; yielding records.
    Records,
    Done,
}

/// Frames lines.
pub(crate) struct LineFramer {
    phase: Phase,
    slab_start: u64,
    slab_end: u64,
    skip_header: bool,
    max: usize,
    /// Newlines seen at offsets >= slab_start before the window's position.
    line: u64,
    /// Leading bytes of `data()` already known to hold no `\n`.
    scanned: usize,
    /// The id of the last oversized line, when its buffered start held it.
    oversized_id: Vec<u8>,
}

impl LineFramer {
    pub(crate) fn new(start: Start, skip_header: bool, max: usize) -> Self {
        LineFramer {
            phase: if start.slab_start == 0 {
                Phase::Records
            } else {
                Phase::SkipPartial
            },
            slab_start: start.slab_start,
            slab_end: start.slab_end,
            skip_header,
            max,
            line: 0,
            scanned: 0,
            oversized_id: Vec::new(),
        }
    }

    /// The id of the oversized record last emitted (see [`Record::oversized_id`](crate::Record)).
    pub(crate) fn oversized_id(&self) -> &[u8] {
        &self.oversized_id
    }

    /// A slab's first record start is decided by the byte before the slab.
    pub(crate) fn read_from(slab_start: u64) -> u64 {
        slab_start.saturating_sub(1)
    }

    #[inline]
    pub(crate) fn next<S: Source>(&mut self, w: &mut Window<S>) -> Result<Option<Emit>, IoError> {
        loop {
            match self.phase {
                Phase::Done => return Ok(None),
                Phase::SkipPartial => {
                    let d = w.data();
                    if let Some(i) = memchr(b'\n', d) {
                        if w.pos() + i as u64 >= self.slab_start {
                            self.line += 1;
                        }
                        w.consume(i + 1);
                        self.phase = Phase::Records;
                    } else {
                        w.consume(d.len());
                        if w.fill()? == 0 {
                            self.phase = Phase::Done;
                        }
                    }
                }
                Phase::Records => {
                    if w.pos() >= self.slab_end {
                        self.phase = Phase::Done;
                        continue;
                    }
                    let d = w.data();
                    let found = memchr(b'\n', &d[self.scanned..]).map(|i| i + self.scanned);
                    match found {
                        Some(i) => {
                            self.scanned = 0;
                            let emit = self.finish(w, i, i + 1);
                            self.line += 1;
                            if emit.is_some() {
                                return Ok(emit);
                            }
                        }
                        None if w.eof() => {
                            if d.is_empty() {
                                self.phase = Phase::Done;
                                continue;
                            }
                            let n = d.len();
                            self.scanned = 0;
                            if let Some(e) = self.finish(w, n, n) {
                                return Ok(Some(e));
                            }
                        }
                        None => {
                            self.scanned = d.len();
                            if d.len() > self.max {
                                self.scanned = 0;
                                if let Some(e) = self.skip_oversized(w)? {
                                    return Ok(Some(e));
                                }
                            } else {
                                w.fill()?;
                            }
                        }
                    }
                }
            }
        }
    }

    /// Keeps the id of an oversized line from `start`, its text or the part of
    /// it buffered. Only the first `max` bytes are looked at, so the id found
    /// does not depend on the read buffer: the rest after the SMILES when the
    /// line ends there, else the word after the SMILES if it ends there.
    fn keep_id(&mut self, start: &[u8]) {
        let id = match start.get(..self.max) {
            Some(prefix) if prefix.len() < start.len() => word_after_smiles(prefix),
            _ => crate::fields::split_smiles_line(start).1,
        };
        self.oversized_id.clear();
        if id.len() <= OVERSIZED_ID_MAX {
            self.oversized_id.extend_from_slice(id);
        }
    }

    /// Whether the line at `offset` is the header to skip.
    #[inline]
    fn is_header(&self, offset: u64) -> bool {
        self.skip_header && offset == 0
    }

    /// The line is `data()[..content]`, `taken` bytes with its `\n`; consume
    /// it and say whether it is a record.
    #[inline(always)]
    fn finish<S: Source>(
        &mut self,
        w: &mut Window<S>,
        content: usize,
        taken: usize,
    ) -> Option<Emit> {
        let offset = w.pos();
        let d = &w.data()[..content];
        let text = d.strip_suffix(b"\r").unwrap_or(d);
        let emit = if self.is_header(offset) || !is_record_line(text) {
            None
        } else {
            let at = w.data_index();
            let text_len = text.len();
            let oversized = taken > self.max;
            if oversized {
                self.keep_id(text);
            }
            Some(Emit {
                range: if oversized { at..at } else { at..at + text_len },
                offset,
                line: self.line,
                len: taken as u64,
                oversized,
                has_nul: w.has_nul(offset, offset + text_len as u64),
            })
        };
        w.consume(taken);
        emit
    }

    /// The line at the window's position is longer than the limit: stream
    /// over it without buffering it whole.
    fn skip_oversized<S: Source>(&mut self, w: &mut Window<S>) -> Result<Option<Emit>, IoError> {
        let offset = w.pos();
        let line = self.line;
        let mut first: Option<u8> = None;
        let mut has_nul = false;
        let mut note = |bytes: &[u8]| {
            if first.is_none() {
                first = bytes.iter().copied().find(|&b| !is_line_ws(b));
            }
            has_nul |= memchr(0, bytes).is_some();
        };
        let d = w.data();
        note(d);
        self.keep_id(d);
        w.consume(d.len());
        while w.fill()? > 0 {
            let d = w.data();
            if let Some(i) = memchr(b'\n', d) {
                note(&d[..i]);
                w.consume(i + 1);
                self.line += 1;
                break;
            }
            note(d);
            w.consume(d.len());
        }
        let len = w.pos() - offset;
        let record = !self.is_header(offset) && matches!(first, Some(b) if b != b'#');
        Ok(record.then(|| {
            let at = w.data_index();
            Emit {
                range: at..at,
                offset,
                line,
                len,
                oversized: true,
                has_nul,
            }
        }))
    }
}

/// The word after the SMILES at the start of a line, when it ends (at a
/// whitespace byte) within `start`, a line's first bytes; else empty.
fn word_after_smiles(start: &[u8]) -> &[u8] {
    let ws = |b: &u8| b.is_ascii_whitespace();
    let word = |from: usize| -> Option<(usize, usize)> {
        let begin = from + start[from..].iter().position(|b| !ws(b))?;
        let len = start[begin..].iter().position(ws)?;
        Some((begin, begin + len))
    };
    word(0)
        .and_then(|(_, smiles_end)| word(smiles_end))
        .map_or(&[], |(a, b)| &start[a..b])
}

#[cfg(test)]
mod tests {
    use crate::framing::tests::frame;
    use crate::slab::RecordKind::Line;

    fn texts(data: &[u8], step: usize) -> Vec<(u64, u64, Vec<u8>)> {
        frame(Line, data, 0..data.len() as u64, step, 1 << 20, false)
            .into_iter()
            .map(|r| (r.0, r.1, r.3))
            .collect()
    }

    #[test]
    fn lines_blanks_comments_crlf() {
        let data = b"C\n\n  \t\n# c\nCC x\r\n \r\nN";
        for step in [1, 2, 3, 100] {
            assert_eq!(
                texts(data, step),
                vec![
                    (0, 0, b"C".to_vec()),
                    (11, 4, b"CC x".to_vec()),
                    (20, 6, b"N".to_vec())
                ]
            );
        }
    }

    #[test]
    fn slabs_split_records_once() {
        let data = b"AA\nBB\nCC\n";
        let all: Vec<u64> = (0..=9u64)
            .flat_map(|cut| {
                let a = frame(Line, data, 0..cut, 2, 100, false);
                let b = frame(Line, data, cut..9, 2, 100, false);
                assert_eq!(a.len() + b.len(), 3, "cut {cut}");
                b.into_iter().map(|r| r.1).collect::<Vec<_>>()
            })
            .collect();
        assert!(!all.is_empty());
    }

    #[test]
    fn header_and_oversized() {
        let data = b"smiles\nCCCCCCCCCC\nC\n";
        let r = frame(Line, data, 0..data.len() as u64, 3, 5, true);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].0, r[0].1, r[0].2, r[0].4), (7, 1, 11, true));
        assert!(r[0].3.is_empty());
        assert_eq!((r[1].0, r[1].1, r[1].3.as_slice()), (18, 2, &b"C"[..]));
    }

    #[test]
    fn oversized_comment_is_no_record() {
        let data = b"#xxxxxxxxxxxxxx\n      \nC";
        let r = frame(Line, data, 0..data.len() as u64, 2, 4, false);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].0, r[0].1), (23, 2));
    }

    #[test]
    fn nul_flag() {
        let r = frame(Line, b"C\0C\nCC\n", 0..7, 4, 100, false);
        assert!(r[0].5);
        assert!(!r[1].5);
    }
}
