//! Owns record framing: turning the bytes of a [`Window`] into records of
//! one kind. [`Engine`] pairs a window with the framer for its kind and is
//! what both [`SlabReader`](crate::SlabReader) and
//! [`StreamReader`](crate::StreamReader) run on.

mod line;
mod sdf;

use crate::error::IoError;
use crate::record::Record;
use crate::slab::RecordKind;
use crate::window::{Source, Window};
use std::ops::Range;

pub(crate) use line::LineFramer;
pub(crate) use sdf::SdfFramer;

/// A record found by a framer, described without borrowing the window.
#[derive(Debug)]
pub(crate) struct Emit {
    /// Buffer indices of the record's bytes (empty when oversized).
    pub range: Range<usize>,
    pub offset: u64,
    pub line: u64,
    pub len: u64,
    pub oversized: bool,
    pub has_nul: bool,
}

/// The framer of one record kind.
pub(crate) enum Framer {
    Line(LineFramer),
    Sdf(SdfFramer),
}

/// Where the framer begins relative to the window's first byte.
pub(crate) struct Start {
    /// Absolute offset of the slab's first byte.
    pub slab_start: u64,
    /// Absolute offset past which no record may start (`u64::MAX` for streams).
    pub slab_end: u64,
}

impl Framer {
    /// A framer for `kind` over a slab; the window must begin at
    /// [`Framer::read_from`] of the same arguments.
    pub(crate) fn new(kind: RecordKind, start: Start, skip_header: bool, max: usize) -> Framer {
        match kind {
            RecordKind::Line => Framer::Line(LineFramer::new(start, skip_header, max)),
            RecordKind::Sdf => Framer::Sdf(SdfFramer::new(start, max)),
        }
    }

    /// The offset a window must start reading at for a slab starting at `slab_start`.
    pub(crate) fn read_from(kind: RecordKind, slab_start: u64) -> u64 {
        match kind {
            RecordKind::Line => LineFramer::read_from(slab_start),
            RecordKind::Sdf => SdfFramer::read_from(slab_start),
        }
    }
}

/// A window plus its framer: yields records.
pub(crate) struct Engine<S> {
    pub(crate) window: Window<S>,
    framer: Framer,
}

impl<S: Source> Engine<S> {
    pub(crate) fn new(window: Window<S>, framer: Framer) -> Self {
        Engine { window, framer }
    }

    /// The next record, or `None` when the slab or stream has no more.
    pub(crate) fn next_record(&mut self) -> Result<Option<Record<'_>>, IoError> {
        let emit = match &mut self.framer {
            Framer::Line(f) => f.next(&mut self.window)?,
            Framer::Sdf(f) => f.next(&mut self.window)?,
        };
        Ok(emit.map(|e| {
            let c = &mut self.window.counters;
            c.records += 1;
            c.oversized += u64::from(e.oversized);
            let oversized_id = match (&self.framer, e.oversized) {
                (Framer::Line(f), true) => f.oversized_id(),
                (Framer::Sdf(f), true) => f.oversized_id(),
                (_, false) => &[],
            };
            Record {
                bytes: self.window.buf_slice(e.range),
                offset: e.offset,
                line: e.line,
                len: e.len,
                oversized: e.oversized,
                has_nul: e.has_nul,
                oversized_id,
            }
        }))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::window::tests::MemSource;

    /// (offset, line, len, bytes, oversized, has_nul) of every record of a slab
    /// of an in-memory file, read `step` bytes at a time.
    pub(crate) fn frame(
        kind: RecordKind,
        data: &[u8],
        slab: Range<u64>,
        step: usize,
        max: usize,
        skip_header: bool,
    ) -> Vec<(u64, u64, u64, Vec<u8>, bool, bool)> {
        let from = Framer::read_from(kind, slab.start);
        let src = MemSource {
            data: data.to_vec(),
            pos: from as usize,
            step,
        };
        let window = Window::new(src, from, step, step.max(max + 1));
        let framer = Framer::new(
            kind,
            Start {
                slab_start: slab.start,
                slab_end: slab.end,
            },
            skip_header,
            max,
        );
        let mut engine = Engine::new(window, framer);
        let mut out = Vec::new();
        while let Some(r) = engine.next_record().unwrap() {
            out.push((
                r.offset,
                r.line,
                r.len,
                r.bytes.to_vec(),
                r.oversized,
                r.has_nul,
            ));
        }
        out
    }
}
