//! Owns SDF framing: one record per block of lines ending with a `$$$$`
//! line, finding a slab's first block by a bounded look-back, and streaming
//! over blocks longer than the record limit.

use super::{Emit, Start};
use crate::error::IoError;
use crate::fields::sdf_title;
use crate::record::{is_sdf_terminator, is_sdf_ws, OVERSIZED_ID_MAX, SDF_TERM_MAX};
use crate::window::{Source, Window};
use memchr::memchr;

enum Phase {
    /// Looking for the first block that starts inside the slab.
    Seek {
        /// `data()` begins at a line start.
        line_known: bool,
        /// The current line already ran longer than any terminator.
        line_long: bool,
    },
    /// At a block start; yielding records.
    Records,
    Done,
}

/// Frames SDF blocks.
pub(crate) struct SdfFramer {
    phase: Phase,
    slab_start: u64,
    slab_end: u64,
    max: usize,
    /// Newlines seen at offsets >= slab_start before the current block.
    line: u64,
    /// Offset in `data()` of the first unexamined line of the current block.
    cursor: usize,
    /// Offset in `data()` from which to look for the next `\n`.
    scanned: usize,
    /// Newlines in the current block before `cursor`.
    block_lines: u64,
    /// The title of the last oversized block, when its buffered start held it.
    oversized_id: Vec<u8>,
}

impl SdfFramer {
    pub(crate) fn new(start: Start, max: usize) -> Self {
        let phase = if start.slab_start == 0 {
            Phase::Records
        } else {
            Phase::Seek {
                line_known: Self::read_from(start.slab_start) == 0,
                line_long: false,
            }
        };
        SdfFramer {
            phase,
            slab_start: start.slab_start,
            slab_end: start.slab_end,
            max,
            line: 0,
            cursor: 0,
            scanned: 0,
            block_lines: 0,
            oversized_id: Vec::new(),
        }
    }

    /// The title of the oversized block last emitted (see [`Record::oversized_id`](crate::Record)).
    pub(crate) fn oversized_id(&self) -> &[u8] {
        &self.oversized_id
    }

    /// A block starting at `p >= slab_start` follows a terminator line that
    /// begins at most `SDF_TERM_MAX + 1` bytes before `p - 1`; the byte
    /// before that line must be seen too.
    pub(crate) fn read_from(slab_start: u64) -> u64 {
        if slab_start == 0 {
            0
        } else {
            slab_start.saturating_sub(SDF_TERM_MAX as u64 + 2)
        }
    }

    #[inline]
    pub(crate) fn next<S: Source>(&mut self, w: &mut Window<S>) -> Result<Option<Emit>, IoError> {
        loop {
            match self.phase {
                Phase::Done => return Ok(None),
                Phase::Seek {
                    line_known,
                    line_long,
                } => self.seek(w, line_known, line_long)?,
                Phase::Records => {
                    if w.pos() >= self.slab_end {
                        self.phase = Phase::Done;
                        continue;
                    }
                    if let Some(e) = self.block(w)? {
                        return Ok(Some(e));
                    }
                }
            }
        }
    }

    /// One step of the search for the slab's first block start.
    fn seek<S: Source>(
        &mut self,
        w: &mut Window<S>,
        line_known: bool,
        line_long: bool,
    ) -> Result<(), IoError> {
        let d = w.data();
        match memchr(b'\n', &d[self.scanned..]).map(|i| i + self.scanned) {
            Some(i) => {
                let q = w.pos() + i as u64;
                let term = line_known && !line_long && is_sdf_terminator(&d[..i]);
                if q >= self.slab_start {
                    self.line += 1;
                }
                w.consume(i + 1);
                self.scanned = 0;
                self.phase = if term && q + 1 >= self.slab_start {
                    Phase::Records
                } else {
                    Phase::Seek {
                        line_known: true,
                        line_long: false,
                    }
                };
            }
            None if w.eof() => self.phase = Phase::Done,
            None => {
                let mut line_long = line_long;
                self.scanned = d.len();
                if d.len() > SDF_TERM_MAX {
                    line_long = true;
                    w.consume(d.len());
                    self.scanned = 0;
                }
                self.phase = Phase::Seek {
                    line_known,
                    line_long,
                };
                w.fill()?;
            }
        }
        Ok(())
    }

    /// One step of reading the block at the window's position.
    fn block<S: Source>(&mut self, w: &mut Window<S>) -> Result<Option<Emit>, IoError> {
        let d = w.data();
        match memchr(b'\n', &d[self.scanned..]).map(|i| i + self.scanned) {
            Some(i) => {
                self.block_lines += 1;
                if is_sdf_terminator(&d[self.cursor..i]) {
                    return Ok(Some(self.emit(w, i + 1)));
                }
                self.cursor = i + 1;
                self.scanned = i + 1;
                Ok(None)
            }
            None if w.eof() => {
                if d.iter().any(|&b| !is_sdf_ws(b)) {
                    let n = d.len();
                    return Ok(Some(self.emit(w, n)));
                }
                self.phase = Phase::Done;
                Ok(None)
            }
            None => {
                self.scanned = d.len();
                if d.len() > self.max {
                    return self.skip_oversized(w);
                }
                w.fill()?;
                Ok(None)
            }
        }
    }

    /// The block is `data()[..len]`: consume it and describe it.
    #[inline(always)]
    fn emit<S: Source>(&mut self, w: &mut Window<S>, len: usize) -> Emit {
        let at = w.data_index();
        let offset = w.pos();
        let oversized = len > self.max;
        if oversized {
            self.keep_title(&w.data()[..len]);
        }
        let e = Emit {
            range: if oversized { at..at } else { at..at + len },
            offset,
            line: self.line,
            len: len as u64,
            oversized,
            has_nul: w.has_nul(offset, offset + len as u64),
        };
        w.consume(len);
        self.end_block();
        e
    }

    /// Keeps the title of an oversized block from its buffered `start`, when
    /// the title line ends within the first `max` bytes (so that the title
    /// found does not depend on the read buffer) and is short enough.
    fn keep_title(&mut self, start: &[u8]) {
        self.oversized_id.clear();
        let start = &start[..start.len().min(self.max)];
        if memchr(b'\n', start).is_some() {
            let title = sdf_title(start);
            if title.len() <= OVERSIZED_ID_MAX {
                self.oversized_id.extend_from_slice(title);
            }
        }
    }

    fn end_block(&mut self) {
        self.line += self.block_lines;
        self.block_lines = 0;
        self.cursor = 0;
        self.scanned = 0;
    }

    /// The block at the window's position is longer than the limit: stream
    /// over it, keeping only a partial line short enough to be a terminator.
    fn skip_oversized<S: Source>(&mut self, w: &mut Window<S>) -> Result<Option<Emit>, IoError> {
        let offset = w.pos();
        let d = w.data();
        self.keep_title(d);
        let mut has_nul = memchr(0, d).is_some();
        let mut all_ws = d.iter().all(|&b| is_sdf_ws(b));
        // Complete lines are done with; keep the partial one if it is short.
        w.consume(self.cursor);
        let mut scanned = w.data().len();
        let mut line_long = false;
        if scanned > SDF_TERM_MAX {
            line_long = true;
            w.consume(scanned);
            scanned = 0;
        }
        let terminated = loop {
            if scanned == w.data().len() {
                let before = w.data().len();
                if w.fill()? == 0 {
                    break false;
                }
                let fresh = &w.data()[before..];
                has_nul |= memchr(0, fresh).is_some();
                all_ws = all_ws && fresh.iter().all(|&b| is_sdf_ws(b));
            }
            let d = w.data();
            match memchr(b'\n', &d[scanned..]).map(|i| i + scanned) {
                Some(i) => {
                    self.block_lines += 1;
                    let term = !line_long && is_sdf_terminator(&d[..i]);
                    w.consume(i + 1);
                    scanned = 0;
                    line_long = false;
                    if term {
                        break true;
                    }
                }
                None => {
                    scanned = d.len();
                    if d.len() > SDF_TERM_MAX {
                        line_long = true;
                        w.consume(d.len());
                        scanned = 0;
                    }
                }
            }
        };
        if !terminated {
            let rest = w.data().len();
            w.consume(rest);
        }
        let len = w.pos() - offset;
        let line = self.line;
        self.end_block();
        if !terminated && all_ws {
            self.phase = Phase::Done;
            return Ok(None);
        }
        let at = w.data_index();
        Ok(Some(Emit {
            range: at..at,
            offset,
            line,
            len,
            oversized: true,
            has_nul,
        }))
    }
}

#[cfg(test)]
mod tests {
    use crate::framing::tests::frame;
    use crate::slab::RecordKind::Sdf;

    const TWO: &[u8] = b"\nmol\n\nM  END\n$$$$\nB\r\n\r\nM  END\r\n$$$$\r\n";

    #[test]
    fn blocks_with_blank_titles_and_crlf() {
        for step in [1, 2, 7, 100] {
            let r = frame(Sdf, TWO, 0..TWO.len() as u64, step, 1000, false);
            assert_eq!(r.len(), 2);
            assert_eq!(
                (r[0].0, r[0].1, r[0].3.as_slice()),
                (0, 0, &b"\nmol\n\nM  END\n$$$$\n"[..])
            );
            assert_eq!((r[1].0, r[1].1, r[1].2), (18, 5, 19));
        }
    }

    #[test]
    fn final_block_rules() {
        let ws_tail = b"A\n$$$$\n \n\n";
        assert_eq!(frame(Sdf, ws_tail, 0..10, 3, 100, false).len(), 1);
        let open_tail = b"A\n$$$$\nB\n";
        let r = frame(Sdf, open_tail, 0..9, 3, 100, false);
        assert_eq!(r.len(), 2);
        assert_eq!(r[1].3, b"B\n");
    }

    #[test]
    fn every_cut_yields_each_block_once() {
        let n = TWO.len() as u64;
        for cut in 0..=n {
            for step in [1, 5, 64] {
                let mut a = frame(Sdf, TWO, 0..cut, step, 1000, false);
                let b = frame(Sdf, TWO, cut..n, step, 1000, false);
                let first_b_line =
                    TWO[..cut as usize].iter().filter(|&&c| c == b'\n').count() as u64;
                a.extend(b.into_iter().map(|mut r| {
                    r.1 += first_b_line;
                    r
                }));
                assert_eq!(
                    a,
                    frame(Sdf, TWO, 0..n, 100, 1000, false),
                    "cut {cut} step {step}"
                );
            }
        }
    }

    #[test]
    fn oversized_block_is_skipped() {
        let mut data = b"A\n$$$$\n".to_vec();
        data.extend_from_slice(&[b'x'; 300]);
        data.extend(b"\n$$$$\nC\n$$$$\n");
        for step in [1, 16, 1000] {
            let r = frame(Sdf, &data, 0..data.len() as u64, step, 50, false);
            assert_eq!(r.len(), 3);
            assert_eq!((r[1].0, r[1].1, r[1].2, r[1].4), (7, 2, 306, true));
            assert_eq!(
                (r[2].0, r[2].1, r[2].3.as_slice()),
                (313, 4, &b"C\n$$$$\n"[..])
            );
        }
    }
}
