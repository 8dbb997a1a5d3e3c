//! The compact form of the substructure index, what a version-2 store holds: the screen's
//! planes compressed in store order (`pattern.screen.u8`) and the molecules' graph records in
//! zstd blocks (`pattern.graphs.zst`). Both are written from the dense forms the build's
//! parallel parts fill ([`crate::layout`], [`crate::graph`]) by [`write_compact`], and read by
//! [`CompactScreen`] and [`GraphBlocks`].
//!
//! **Screen planes.** Only the planes of bits that some molecule has and at most
//! [`MAX_DENSITY`] of the molecules have are kept (a bit nearly every molecule has screens out
//! little; leaving a plane out only lets more molecules through, never fewer, so a molecule
//! that matches is never screened out). A kept plane is one code per block of [`BLOCK`]
//! molecules, then its containers: code 0 an empty block (nothing stored), 1-31 the slots
//! (one byte each, ascending), 32 the block's four u64 words; a code is also its container's
//! size in bytes. Planes follow one another; the header lists each kept plane's bit, start and
//! XXH3 (checked the first time a screen reads it).
//!
//! **Graph blocks.** [`GRAPH_BLOCK`] records per block, in store order, each in a lean form
//! (one byte per atom: its index in the file's table of the 255 most frequent atoms, or 255
//! and its 8 bytes; the bonds as they are): the block's record lengths (u16 each) then the
//! records, as one zstd frame (magicless, with the file's trained
//! dictionary); after the frame, the low 32 bits of the XXH3 of what it decompresses to, so a
//! damaged block is an error naming the file and block, never a wrong graph. File:
//! `b"MSGRAPHZ"`, `n` (u64), records per block (u32), dictionary length (u32), blocks (u64),
//! atom table entries (u32), 4 zero bytes, the table (8 bytes each), the dictionary,
//! `blocks + 1` u64 offsets (from the start of the block area), the blocks.

use std::io::Write;
use std::path::Path;

use molsift_iostats::CountedFile;
use xxhash_rust::xxh3::Xxh3;

use crate::graph::Graphs;
use crate::layout::{checksum, FileInfo, BLOCK, BLOCK_WORDS};
use crate::SubstructureError;

/// The screen file.
pub const SCREEN_FILE: &str = molsift_store::layout::PATTERN_COMPACT_FILES[0];
/// The graph blocks file.
pub const GRAPH_BLOCKS_FILE: &str = molsift_store::layout::PATTERN_COMPACT_FILES[1];
/// Planes of bits more than this fraction of the molecules have are left out of the screen.
pub const MAX_DENSITY: f64 = 0.5;
/// Records per graph block.
pub const GRAPH_BLOCK: usize = 4;
/// First bytes of the graph blocks file.
pub const GRAPH_MAGIC: &[u8; 8] = b"MSGRAPHZ";
/// A dense container's code (and size).
pub const DENSE: u8 = 32;
/// Zero bytes after the last container.
const SLACK: usize = 32;
/// zstd level of the graph blocks: 15, the knee on all of MOSES (25.86 B/molecule against
/// 25.81 at level 19, in half the time; 13 costs 1.1 B/molecule more: BENCHMARKS.md, "zstd
/// level").
const LEVEL: i32 = 15;
/// The most bytes of the graph blocks' dictionary.
const DICT_BYTES: usize = 64 * 1024;

/// One kept plane of the compact screen.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KeptPlane {
    /// the screening bit
    pub bit: u32,
    /// where its codes start in the screen file (its containers follow them)
    pub start: u64,
    /// bytes of codes and containers
    pub bytes: u64,
    /// XXH3-64 of those bytes
    pub xxh3: String,
}

/// What [`write_compact`] wrote.
#[derive(Debug, Clone)]
pub struct Written {
    /// the kept planes
    pub planes: Vec<KeptPlane>,
    /// the screen file
    pub screen: FileInfo,
    /// the graph blocks file
    pub graphs: FileInfo,
}

/// The graph records a compact index is written from, by store position: a graphs file
/// ([`Graphs`]) or one read in another order ([`Reordered`]).
pub trait Records: Sync {
    /// Molecule `i`'s record (`None` when the file's offsets are out of order).
    fn record(&self, i: usize) -> Option<&[u8]>;

    /// The length of molecule `i`'s record (`None` when it cannot be found), without copying it.
    fn record_len(&self, i: usize) -> Option<usize> {
        self.record(i).map(<[u8]>::len)
    }

    /// Calls `f` with each of the first `n` records once, in whatever order reads fastest.
    fn each(&self, n: usize, f: &mut dyn FnMut(Option<&[u8]>)) {
        (0..n).for_each(|i| f(self.record(i)));
    }

    /// Copies the records of `range` into `out` (in position order), reading them in whatever
    /// order reads fastest.
    fn gather(&self, range: std::ops::Range<usize>, out: &mut Window) {
        out.clear(range.start);
        for i in range {
            out.push(self.record(i));
        }
    }
}

impl Records for Graphs<'_> {
    fn record(&self, i: usize) -> Option<&[u8]> {
        Graphs::record(self, i)
    }
}

/// Records by position, with their count and lengths: what [`Reordered`] reads from (the
/// graphs file of a dense index, or the parts of an ingest, [`crate::fromparts::Parts`]).
pub trait Indexed: Sync {
    /// Records.
    fn len(&self) -> usize;
    /// True for none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The length of record `i`, without reading its bytes; `None` when it cannot be found.
    fn record_len(&self, i: usize) -> Option<usize>;
    /// Record `i`; `None` when it cannot be found.
    fn record(&self, i: usize) -> Option<&[u8]>;
}

impl Indexed for Graphs<'_> {
    fn len(&self) -> usize {
        Graphs::len(self)
    }
    fn record_len(&self, i: usize) -> Option<usize> {
        Graphs::record_len(self, i)
    }
    fn record(&self, i: usize) -> Option<&[u8]> {
        Graphs::record(self, i)
    }
}

/// Records read in another order: record `i` is the source's record `source[i]` (how an
/// upgrade carries the records of a store into the order of the store it writes, and ingest
/// the records of its parts into the store's, without writing them again in between). Its
/// windows are read in the source's order.
pub struct Reordered<'g> {
    /// the records in their own order
    pub graphs: &'g dyn Indexed,
    /// the source's position of each record
    pub source: &'g [u32],
}

impl Records for Reordered<'_> {
    fn record(&self, i: usize) -> Option<&[u8]> {
        self.graphs.record(*self.source.get(i)? as usize)
    }

    fn record_len(&self, i: usize) -> Option<usize> {
        // a record's length from the offsets alone (the records' bytes are read in `gather`)
        self.graphs.record_len(*self.source.get(i)? as usize)
    }

    fn each(&self, n: usize, f: &mut dyn FnMut(Option<&[u8]>)) {
        // every record once, in the file's order: all of the file's for a permutation, the
        // chosen ones (a shard of a set) otherwise
        if self.source.len() == self.graphs.len() {
            (0..n.min(self.source.len())).for_each(|s| f(self.graphs.record(s)));
        } else {
            let mut chosen = self.source[..n.min(self.source.len())].to_vec();
            chosen.sort_unstable();
            chosen
                .iter()
                .for_each(|&s| f(self.graphs.record(s as usize)));
        }
    }

    fn gather(&self, range: std::ops::Range<usize>, out: &mut Window) {
        // where each record goes in the window, then the copies in the file's order
        let first = range.start;
        let mut ends = Vec::with_capacity(range.len());
        let mut total = 0usize;
        for i in range.clone() {
            match self.record_len(i) {
                Some(len) => {
                    total += len;
                    ends.push(Some(total));
                }
                None => ends.push(None),
            }
        }
        let mut order: Vec<(u32, u32)> = range
            .clone()
            .map(|i| (self.source[i], (i - first) as u32))
            .collect();
        order.sort_unstable();
        out.clear(first);
        out.bytes.resize(total, 0);
        for (s, k) in order {
            let k = k as usize;
            let (Some(end), Some(rec)) = (ends[k], self.graphs.record(s as usize)) else {
                continue;
            };
            out.bytes[end - rec.len()..end].copy_from_slice(rec);
        }
        out.ends = ends;
    }
}

/// Bytes of graph records per window of [`write_compact`]'s graph blocks (gathered, then
/// compressed, then written) when the caller has no budget of its own.
pub const WINDOW_BYTES: usize = 64 << 20;

/// Encoded screen planes a thread of [`write_compact`] holds before they are written.
pub const PLANES_PER_THREAD: usize = 4;

/// Copies of consecutive records (a window of the graph blocks being written).
#[derive(Default)]
pub struct Window {
    first: usize,
    bytes: Vec<u8>,
    /// where each record ends in `bytes` (`None`: a record whose offsets are out of order)
    ends: Vec<Option<usize>>,
}

impl Window {
    fn clear(&mut self, first: usize) {
        self.first = first;
        self.bytes.clear();
        self.ends.clear();
    }

    fn push(&mut self, rec: Option<&[u8]>) {
        match rec {
            Some(r) => {
                self.bytes.extend_from_slice(r);
                self.ends.push(Some(self.bytes.len()));
            }
            None => self.ends.push(None),
        }
    }
}

impl Records for Window {
    fn record(&self, i: usize) -> Option<&[u8]> {
        let k = i.checked_sub(self.first)?;
        let end = (*self.ends.get(k)?)?;
        let start = match k {
            0 => 0,
            _ => self.ends[..k].iter().rev().find_map(|e| *e).unwrap_or(0),
        };
        Some(&self.bytes[start..end])
    }
}

/// Writes the compact screen of the dense planes `planes` gives (`plane(b, buf)` fills `buf`
/// with plane `b`: `bits` planes of `n` molecules, as [`crate::layout`] lays them out;
/// `bit_counts` molecules per bit) to `screen_out`, and the graph blocks of `graphs` to
/// `graphs_out` (both synced), the kept planes encoded and the graph blocks compressed on
/// `threads` threads (the same bytes for any number). Asks only for the planes it keeps, one
/// at a time on each thread. Both files are written as they are made: memory holds
/// [`PLANES_PER_THREAD`] encoded planes a thread, and a window of about `window_bytes` of graph
/// records (at least one block's) with their compressed blocks, whatever `n`.
#[allow(clippy::too_many_arguments)]
pub fn write_compact(
    plane: &(dyn Fn(usize, &mut Vec<u64>) + Sync),
    bits: u32,
    n: usize,
    bit_counts: &[u64],
    graphs: &dyn Records,
    screen_out: &Path,
    graphs_out: &Path,
    threads: usize,
    window_bytes: usize,
) -> Result<Written, SubstructureError> {
    let blocks = n.div_ceil(BLOCK);
    let pw = blocks * BLOCK_WORDS;
    let limit = (n as f64 * MAX_DENSITY) as u64;
    let kept: Vec<usize> = bit_counts
        .iter()
        .enumerate()
        .take(bits as usize)
        .filter(|&(_, &c)| c != 0 && c <= limit)
        .map(|(b, _)| b)
        .collect();
    // the kept planes encoded on `threads` threads (each asks for one plane at a time) a batch
    // at a time, each batch written in bit order as it ends: the same bytes for any number of
    // threads, and memory holds a batch's planes, never the whole screen
    let file = CountedFile::create(screen_out).map_err(|e| SubstructureError::io(screen_out, e))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, &file);
    let mut hash = Xxh3::new();
    let mut at = 0u64;
    let mut planes = Vec::with_capacity(kept.len());
    let workers = threads.clamp(1, kept.len().max(1));
    for batch in kept.chunks(workers * PLANES_PER_THREAD) {
        let mut encoded: Vec<(usize, Vec<u8>)> = molsift_tasks::each(
            workers,
            batch.len(),
            || (Vec::new(), Vec::with_capacity(pw)),
            |(mine, words), k| {
                plane(batch[k], words);
                mine.push((k, encode_plane(&words[..pw])));
            },
        )
        .into_iter()
        .flat_map(|(mine, _)| mine)
        .collect();
        encoded.sort_unstable_by_key(|e| e.0);
        for (k, bytes) in encoded {
            planes.push(KeptPlane {
                bit: batch[k] as u32,
                start: at,
                bytes: bytes.len() as u64,
                xxh3: checksum(&bytes),
            });
            out.write_all(&bytes)
                .map_err(|e| SubstructureError::io(screen_out, e))?;
            hash.update(&bytes);
            at += bytes.len() as u64;
        }
    }
    out.write_all(&[0u8; SLACK])
        .and_then(|()| out.flush())
        .map_err(|e| SubstructureError::io(screen_out, e))?;
    drop(out);
    file.sync_all()
        .map_err(|e| SubstructureError::io(screen_out, e))?;
    hash.update(&[0u8; SLACK]);
    let screen = FileInfo {
        bytes: at + SLACK as u64,
        xxh3: format!("{:016x}", hash.digest()),
    };
    let graphs = encode_graphs(graphs, n, graphs_out, threads, window_bytes)?;
    Ok(Written {
        planes,
        screen,
        graphs,
    })
}

/// One kept plane's bytes in the compact screen: a code per block (its molecule count, or
/// [`DENSE`]), then the blocks' payloads (a dense block's words, a sparse block's positions).
fn encode_plane(plane: &[u64]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut payload = Vec::new();
    for lane in plane.chunks_exact(BLOCK_WORDS) {
        let count: u32 = lane.iter().map(|w| w.count_ones()).sum();
        if count >= u32::from(DENSE) {
            out.push(DENSE);
            lane.iter()
                .for_each(|w| payload.extend_from_slice(&w.to_le_bytes()));
        } else {
            out.push(count as u8);
            for (k, &w) in lane.iter().enumerate() {
                let mut x = w;
                while x != 0 {
                    payload.push((k * 64 + x.trailing_zeros() as usize) as u8);
                    x &= x - 1;
                }
            }
        }
    }
    out.extend_from_slice(&payload);
    out
}

/// The raw text of graph block `b`: record lengths (u16), then the records.
fn block_text(
    graphs: &dyn Records,
    n: usize,
    b: usize,
    path: &Path,
    table: &AtomTable,
) -> Result<Vec<u8>, SubstructureError> {
    let (a, z) = (b * GRAPH_BLOCK, ((b + 1) * GRAPH_BLOCK).min(n));
    let mut lens = Vec::with_capacity(2 * (z - a));
    let mut body = Vec::new();
    for i in a..z {
        let rec = graphs
            .record(i)
            .ok_or_else(|| SubstructureError::Corrupted {
                path: path.to_path_buf(),
                reason: format!("molecule {i}: offsets out of order"),
            })?;
        let start = body.len();
        table
            .encode(rec, &mut body)
            .map_err(|reason| SubstructureError::Corrupted {
                path: path.to_path_buf(),
                reason: format!("molecule {i}: {reason}"),
            })?;
        let len = u16::try_from(body.len() - start).map_err(|_| {
            SubstructureError::Invalid(format!(
                "molecule {i}: a graph record of {} bytes",
                rec.len()
            ))
        })?;
        lens.extend_from_slice(&len.to_le_bytes());
    }
    lens.extend_from_slice(&body);
    Ok(lens)
}

fn zstd_err(path: &Path, e: std::io::Error) -> SubstructureError {
    SubstructureError::io(path, e)
}

/// A compressed graph block and the check value of its text.
type Frame = (Vec<u8>, u32);

/// Writes the graph blocks file of `graphs`' first `n` records at `path` (synced) and returns
/// its size and XXH3. The blocks are compressed a window at a time (about `window_bytes` of
/// records, gathered first: a reordered file is read in its own order, not at random), each
/// window's blocks on `threads` threads in contiguous ranges, then written with their offsets
/// at their places: each block is its own frame, so the bytes are the same for any window and
/// thread count, and memory holds one window, not the file.
fn encode_graphs(
    graphs: &dyn Records,
    n: usize,
    path: &Path,
    threads: usize,
    window_bytes: usize,
) -> Result<FileInfo, SubstructureError> {
    use zstd::zstd_safe::{CParameter, FrameFormat};
    let io = |e| SubstructureError::io(path, e);
    let blocks = n.div_ceil(GRAPH_BLOCK);
    let table = AtomTable::of(graphs, n);
    // a dictionary trained on blocks spread over the store (the same one every time)
    let take = blocks.min(4000);
    let samples = (0..take)
        .map(|k| block_text(graphs, n, k * blocks / take, path, &table))
        .collect::<Result<Vec<_>, _>>()?;
    let total: usize = samples.iter().map(Vec::len).sum();
    let dict = if total >= 16 * 1024 {
        zstd::dict::from_samples(&samples, DICT_BYTES.min(total / 8)).unwrap_or_default()
    } else {
        Vec::new()
    };
    drop(samples);
    let mut head = Vec::new();
    head.extend_from_slice(GRAPH_MAGIC);
    head.extend_from_slice(&(n as u64).to_le_bytes());
    head.extend_from_slice(&(GRAPH_BLOCK as u32).to_le_bytes());
    head.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    head.extend_from_slice(&(blocks as u64).to_le_bytes());
    head.extend_from_slice(&(table.atoms.len() as u32).to_le_bytes());
    head.extend_from_slice(&0u32.to_le_bytes());
    table.atoms.iter().for_each(|a| head.extend_from_slice(a));
    head.extend_from_slice(&dict);
    // the file: the head, `blocks + 1` offsets, the blocks (each frame and its check value)
    let file = CountedFile::create(path).map_err(io)?;
    file.write_all_at(&head, 0).map_err(io)?;
    let offsets_at = head.len() as u64;
    let body_at = offsets_at + 8 * (blocks as u64 + 1);
    let threads = threads.clamp(1, blocks.max(1));
    let compress_range =
        |window: &Window, range: std::ops::Range<usize>| -> Result<Vec<Frame>, SubstructureError> {
            let mut c = zstd::bulk::Compressor::with_dictionary(LEVEL, &dict)
                .map_err(|e| zstd_err(path, e))?;
            for p in [
                CParameter::Format(FrameFormat::Magicless),
                CParameter::DictIdFlag(false),
                CParameter::ContentSizeFlag(false),
                CParameter::ChecksumFlag(false),
            ] {
                c.set_parameter(p).map_err(|e| zstd_err(path, e))?;
            }
            range
                .map(|b| {
                    let text = block_text(window, n, b, path, &table)?;
                    let frame = c.compress(&text).map_err(|e| zstd_err(path, e))?;
                    Ok((frame, check_value(&text)))
                })
                .collect()
        };
    let mut window = Window::default();
    let (mut body, mut offsets) = (Vec::new(), Vec::new());
    let mut written = 0u64; // bytes of blocks so far
    let mut first = 0;
    while first < blocks {
        // blocks up to about `window_bytes` of records, at least one
        let mut last = first;
        let mut bytes = 0usize;
        while last < blocks && (last == first || bytes < window_bytes) {
            for i in last * GRAPH_BLOCK..((last + 1) * GRAPH_BLOCK).min(n) {
                bytes += graphs.record_len(i).unwrap_or(0);
            }
            last += 1;
        }
        graphs.gather(
            first * GRAPH_BLOCK..(last * GRAPH_BLOCK).min(n),
            &mut window,
        );
        let per = (last - first).div_ceil(threads).max(1);
        let w = &window;
        let frames = molsift_tasks::scoped(threads, |t| {
            compress_range(
                w,
                (first + t * per).min(last)..(first + (t + 1) * per).min(last),
            )
        });
        body.clear();
        offsets.clear();
        for part in frames {
            for (frame, check) in part? {
                offsets.extend_from_slice(&(written + body.len() as u64).to_le_bytes());
                body.extend_from_slice(&frame);
                body.extend_from_slice(&check.to_le_bytes());
            }
        }
        file.write_all_at(&offsets, offsets_at + 8 * first as u64)
            .map_err(io)?;
        file.write_all_at(&body, body_at + written).map_err(io)?;
        written += body.len() as u64;
        first = last;
    }
    file.write_all_at(&written.to_le_bytes(), offsets_at + 8 * blocks as u64)
        .map_err(io)?;
    file.sync_all().map_err(io)?;
    drop(file);
    Ok(FileInfo {
        bytes: body_at + written,
        xxh3: checksum_of_file(path)?,
    })
}

/// The XXH3 of the file at `path` (as [`checksum`] gives for its bytes), read a chunk at a time.
fn checksum_of_file(path: &Path) -> Result<String, SubstructureError> {
    use std::io::Read;
    let mut f = CountedFile::open(path).map_err(|e| SubstructureError::io(path, e))?;
    let mut hash = Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let got = f
            .read(&mut buf)
            .map_err(|e| SubstructureError::io(path, e))?;
        if got == 0 {
            break;
        }
        hash.update(&buf[..got]);
    }
    Ok(format!("{:016x}", hash.digest()))
}

fn check_value(bytes: &[u8]) -> u32 {
    xxhash_rust::xxh3::xxh3_64(bytes) as u32
}

/// Bytes of the graph blocks file before its atom table.
const HEAD: usize = 40;
/// Bytes of an atom in a graph record ([`crate::graph::ATOM_BYTES`]).
const ATOM_BYTES: usize = crate::graph::ATOM_BYTES;
/// The atom code that an atom's own bytes follow (not in the table).
const ESCAPE: u8 = 255;

/// The atom table of a graph blocks file: the (at most 255) most frequent atoms (their 8
/// bytes of a graph record), so that a record holds one byte per atom.
struct AtomTable {
    atoms: Vec<[u8; ATOM_BYTES]>,
}

impl AtomTable {
    /// The table of `graphs`: its most frequent atoms, the most frequent first (ties by bytes).
    fn of(graphs: &dyn Records, n: usize) -> AtomTable {
        let mut seen: std::collections::HashMap<[u8; ATOM_BYTES], u64> = Default::default();
        graphs.each(n, &mut |rec| {
            let Some(rec) = rec.filter(|r| r.len() >= 2) else {
                return;
            };
            let na = rec[0] as usize;
            for a in rec[2..].chunks_exact(ATOM_BYTES).take(na) {
                *seen.entry(a.try_into().expect("8 bytes")).or_default() += 1;
            }
        });
        let mut all: Vec<([u8; ATOM_BYTES], u64)> = seen.into_iter().collect();
        all.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        AtomTable {
            atoms: all
                .into_iter()
                .take(ESCAPE as usize)
                .map(|(a, _)| a)
                .collect(),
        }
    }

    /// `rec` (a graph record) in the lean form: atom and bond counts, an atom code per atom
    /// (its own 8 bytes after [`ESCAPE`] when not in the table), the bonds as they are.
    fn encode(&self, rec: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        if rec.is_empty() {
            return Ok(());
        }
        let (na, nb) = (rec[0] as usize, rec[1] as usize);
        if rec.len() != 2 + na * ATOM_BYTES + nb * crate::graph::BOND_BYTES {
            return Err(format!(
                "a record of {} bytes for {na} atoms, {nb} bonds",
                rec.len()
            ));
        }
        out.extend_from_slice(&rec[..2]);
        for a in rec[2..2 + na * ATOM_BYTES].chunks_exact(ATOM_BYTES) {
            match self.atoms.iter().position(|t| t[..] == *a) {
                Some(code) => out.push(code as u8),
                None => {
                    out.push(ESCAPE);
                    out.extend_from_slice(a);
                }
            }
        }
        out.extend_from_slice(&rec[2 + na * ATOM_BYTES..]);
        Ok(())
    }

    /// The graph record of a lean one, into `out`.
    fn decode(&self, lean: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        out.clear();
        if lean.is_empty() {
            return Ok(());
        }
        if lean.len() < 2 {
            return Err("a record of 1 byte".into());
        }
        let (na, nb) = (lean[0] as usize, lean[1] as usize);
        out.extend_from_slice(&lean[..2]);
        let mut at = 2;
        for _ in 0..na {
            let code = *lean.get(at).ok_or("a record shorter than its atoms")?;
            at += 1;
            if code == ESCAPE {
                let a = lean
                    .get(at..at + ATOM_BYTES)
                    .ok_or("a record shorter than its atoms")?;
                out.extend_from_slice(a);
                at += ATOM_BYTES;
            } else {
                let a = self
                    .atoms
                    .get(code as usize)
                    .ok_or("an atom code outside the table")?;
                out.extend_from_slice(a);
            }
        }
        let bonds = &lean[at..];
        if bonds.len() != nb * crate::graph::BOND_BYTES {
            return Err(format!("{} bytes of bonds for {nb} bonds", bonds.len()));
        }
        out.extend_from_slice(bonds);
        Ok(())
    }
}

/// The compact screen, mapped: the AND of a query's kept planes, rarest first, block by
/// block.
pub struct CompactScreen<'a> {
    data: &'a [u8],
    blocks: usize,
}

impl<'a> CompactScreen<'a> {
    /// Over the screen file's bytes for `n` molecules.
    pub fn new(data: &'a [u8], n: usize) -> Self {
        CompactScreen {
            data,
            blocks: n.div_ceil(BLOCK),
        }
    }

    /// Store positions in `range` having every plane of `planes` (kept planes, rarest first;
    /// checked by the caller), appended to `out`; returns the bytes of containers read.
    pub fn screen(
        &self,
        planes: &[&KeptPlane],
        range: std::ops::Range<usize>,
        out: &mut Vec<u64>,
    ) -> u64 {
        if range.is_empty() {
            return 0;
        }
        let (b0, b1) = (range.start / BLOCK, range.end.div_ceil(BLOCK));
        if planes.is_empty() {
            out.extend(range.start as u64..range.end as u64);
            return 0;
        }
        // per plane: its codes, its payload, the block its offset is at, that offset
        let mut cur: Vec<(&[u8], &[u8], usize, usize)> = planes
            .iter()
            .map(|p| {
                let s = p.start as usize;
                let codes = &self.data[s..s + self.blocks];
                let payload = &self.data[s + self.blocks..];
                let off = codes[..b0].iter().map(|&c| c as usize).sum();
                (codes, payload, b0, off)
            })
            .collect();
        let mut read = 0u64;
        let (first, rest) = cur.split_first_mut().expect("a plane");
        for b in b0..b1 {
            let c = first.0[b];
            if c == 0 {
                continue;
            }
            // the first plane's offset at block b
            first.3 += first.0[first.2..b]
                .iter()
                .map(|&c| c as usize)
                .sum::<usize>();
            first.2 = b;
            let mut lane = container(first.1, first.3, c);
            read += u64::from(c);
            for p in rest.iter_mut() {
                if lane == [0; 4] {
                    break;
                }
                p.3 += p.0[p.2..b].iter().map(|&c| c as usize).sum::<usize>();
                p.2 = b;
                let c = p.0[b];
                if c == 0 {
                    lane = [0; 4];
                    break;
                }
                read += u64::from(c);
                let other = container(p.1, p.3, c);
                for (l, o) in lane.iter_mut().zip(other) {
                    *l &= o;
                }
            }
            let base = b * BLOCK;
            for (k, &w) in lane.iter().enumerate() {
                let mut x = w;
                while x != 0 {
                    let pos = base + k * 64 + x.trailing_zeros() as usize;
                    x &= x - 1;
                    if range.contains(&pos) {
                        out.push(pos as u64);
                    }
                }
            }
        }
        read
    }
}

/// The block's lane of a container of code `c` at `off` in `payload`.
fn container(payload: &[u8], off: usize, c: u8) -> [u64; 4] {
    let mut lane = [0u64; 4];
    if c >= DENSE {
        for (k, w) in lane.iter_mut().enumerate() {
            let at = off + 8 * k;
            *w = u64::from_le_bytes(payload[at..at + 8].try_into().expect("8 bytes"));
        }
    } else {
        for &slot in &payload[off..off + c as usize] {
            lane[(slot >> 6) as usize] |= 1u64 << (slot & 63);
        }
    }
    lane
}

/// The graph blocks file, mapped.
pub struct GraphBlocks<'a> {
    bytes: &'a [u8],
    n: usize,
    per: usize,
    dict: &'a [u8],
    table: AtomTable,
    prepared: Option<&'a zstd::dict::DecoderDictionary<'static>>,
    offsets_at: usize,
    blocks: usize,
    body_at: usize,
}

/// A thread's decoded block: its number and text, and a zstd context with the dictionary.
pub struct BlockCursor<'d> {
    block: usize,
    text: Vec<u8>,
    starts: Vec<usize>,
    /// the last record asked for, in the graphs file's form
    record: Vec<u8>,
    ctx: Option<zstd::bulk::Decompressor<'d>>,
}

impl Default for BlockCursor<'_> {
    fn default() -> Self {
        BlockCursor {
            block: usize::MAX,
            text: Vec::new(),
            starts: Vec::new(),
            record: Vec::new(),
            ctx: None,
        }
    }
}

impl<'a> GraphBlocks<'a> {
    /// Reads the frame of a graph blocks file of `n` molecules (`path` names it in errors).
    pub fn new(bytes: &'a [u8], n: usize, path: &Path) -> Result<Self, SubstructureError> {
        let bad = |reason: String| SubstructureError::Corrupted {
            path: path.to_path_buf(),
            reason,
        };
        if bytes.len() < HEAD || &bytes[..8] != GRAPH_MAGIC {
            return Err(bad(format!(
                "{} bytes, not a graph blocks file",
                bytes.len()
            )));
        }
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8"));
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4"));
        let (stored, per, dict_len, blocks) = (
            u64_at(8) as usize,
            u32_at(16) as usize,
            u32_at(20) as usize,
            u64_at(24) as usize,
        );
        if stored != n || per == 0 || blocks != n.div_ceil(per) {
            return Err(bad(format!(
                "{stored} molecules in {blocks} blocks of {per}, the store has {n}"
            )));
        }
        let table_len = u32_at(32) as usize;
        let dict_at = HEAD + ATOM_BYTES * table_len;
        if table_len > 255 || bytes.len() < dict_at {
            return Err(bad(format!("an atom table of {table_len} entries")));
        }
        let table = AtomTable {
            atoms: bytes[HEAD..dict_at]
                .chunks_exact(ATOM_BYTES)
                .map(|c| c.try_into().expect("8 bytes"))
                .collect(),
        };
        let offsets_at = dict_at + dict_len;
        let body_at = offsets_at + 8 * (blocks + 1);
        if bytes.len() < body_at {
            return Err(bad(format!(
                "{} bytes, shorter than its frame",
                bytes.len()
            )));
        }
        let g = GraphBlocks {
            bytes,
            n,
            per,
            dict: &bytes[dict_at..offsets_at],
            table,
            prepared: None,
            offsets_at,
            blocks,
            body_at,
        };
        if g.offset(blocks) as usize != bytes.len() - body_at || g.offset(0) != 0 {
            return Err(bad("block offsets do not end at the end of the file".into()));
        }
        Ok(g)
    }

    /// The file's dictionary, prepared once (what an open index keeps, so that a match does
    /// not load it again for each thread).
    pub fn prepare(&self) -> zstd::dict::DecoderDictionary<'static> {
        zstd::dict::DecoderDictionary::copy(self.dict)
    }

    /// Reads blocks with `prepared`, the dictionary [`GraphBlocks::prepare`] gave.
    pub fn with_prepared(mut self, prepared: &'a zstd::dict::DecoderDictionary<'static>) -> Self {
        self.prepared = Some(prepared);
        self
    }

    fn offset(&self, b: usize) -> u64 {
        let at = self.offsets_at + 8 * b;
        u64::from_le_bytes(self.bytes[at..at + 8].try_into().expect("8 bytes"))
    }

    /// Molecules.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True for no molecule.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The record of molecule `i` (empty: not described), decoding its block into `cur`
    /// unless it holds it already; `Err` says what is damaged.
    pub fn record<'c>(&self, i: usize, cur: &'c mut BlockCursor<'a>) -> Result<&'c [u8], String> {
        let b = i / self.per;
        if cur.block != b {
            self.decode(b, cur)?;
        }
        let k = i - b * self.per;
        let lean = &cur.text[cur.starts[k]..cur.starts[k + 1]];
        self.table.decode(lean, &mut cur.record)?;
        Ok(&cur.record)
    }

    fn decode(&self, b: usize, cur: &mut BlockCursor<'a>) -> Result<(), String> {
        cur.block = usize::MAX;
        if b >= self.blocks {
            return Err(format!("block {b} of {}", self.blocks));
        }
        let (s, e) = (self.offset(b) as usize, self.offset(b + 1) as usize);
        if s + 4 > e || self.body_at + e > self.bytes.len() {
            return Err(format!("block {b}: offsets {s}..{e} out of order"));
        }
        let frame = &self.bytes[self.body_at + s..self.body_at + e - 4];
        let want = u32::from_le_bytes(
            self.bytes[self.body_at + e - 4..self.body_at + e]
                .try_into()
                .expect("4 bytes"),
        );
        if cur.ctx.is_none() {
            use zstd::zstd_safe::{DParameter, FrameFormat};
            let mut d = match self.prepared {
                Some(p) => zstd::bulk::Decompressor::with_prepared_dictionary(p),
                None => zstd::bulk::Decompressor::with_dictionary(self.dict),
            }
            .map_err(|e| format!("zstd: {e}"))?;
            d.set_parameter(DParameter::Format(FrameFormat::Magicless))
                .map_err(|e| format!("zstd: {e}"))?;
            cur.ctx = Some(d);
        }
        let count = ((b + 1) * self.per).min(self.n) - b * self.per;
        // records are at most 2 + 255 * 8 + 255 * 3 bytes
        let cap = count * (2 + 2 + 255 * 11);
        cur.text.clear();
        cur.text.reserve(cap);
        let ctx = cur.ctx.as_mut().expect("made above");
        ctx.decompress_to_buffer(frame, &mut cur.text)
            .map_err(|e| format!("block {b}: {e}"))?;
        if check_value(&cur.text) != want {
            return Err(format!(
                "block {b}: its check value does not match what it decodes to"
            ));
        }
        if cur.text.len() < 2 * count {
            return Err(format!(
                "block {b}: {} bytes for {count} records",
                cur.text.len()
            ));
        }
        cur.starts.clear();
        let mut at = 2 * count;
        cur.starts.push(at);
        for k in 0..count {
            at += u16::from_le_bytes([cur.text[2 * k], cur.text[2 * k + 1]]) as usize;
            cur.starts.push(at);
        }
        if at != cur.text.len() {
            return Err(format!("block {b}: record lengths do not add up"));
        }
        cur.block = b;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::plane_words;

    /// Dense planes of `n` molecules where molecule `i` has bit `b` by a fixed pseudo-random
    /// rule (bit `b` at density about `b / bits`), and a graphs file of made-up records.
    fn fixture(n: usize, bits: u32) -> (Vec<u64>, Vec<u64>, Vec<u8>) {
        let pw = plane_words(n);
        let mut words = vec![0u64; bits as usize * pw];
        let mut counts = vec![0u64; bits as usize];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for b in 0..bits as usize {
            for i in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if (x % 1000) < (b as u64 * 1000 / bits as u64) {
                    words[b * pw + i / 64] |= 1 << (i % 64);
                    counts[b] += 1;
                }
            }
        }
        let mut g = Vec::new();
        g.extend_from_slice(crate::graph::MAGIC);
        g.extend_from_slice(&(n as u64).to_le_bytes());
        // records of 1-5 atoms (some of them rare: not in the atom table) and 0-2 bonds
        let records: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                if i % 7 == 3 {
                    return Vec::new();
                }
                let (na, nb) = (1 + i % 5, i % 3);
                let mut r = vec![na as u8, nb as u8];
                for a in 0..na {
                    let kind = if i % 11 == 0 { i % 600 } else { (i + a) % 9 };
                    r.extend_from_slice(&[
                        6,
                        0,
                        (kind % 256) as u8,
                        (kind / 256) as u8,
                        0,
                        4,
                        4,
                        0,
                    ]);
                }
                for b in 0..nb {
                    r.extend_from_slice(&[0, (b + 1).min(na - 1) as u8, 1]);
                }
                r
            })
            .collect();
        let mut off = 0u64;
        g.extend_from_slice(&off.to_le_bytes());
        for r in &records {
            off += r.len() as u64;
            g.extend_from_slice(&off.to_le_bytes());
        }
        records.iter().for_each(|r| g.extend_from_slice(r));
        (words, counts, g)
    }

    /// The graphs file of `g`'s records in the order `source` gives (record `i` of the new file
    /// is record `source[i]` of `g`).
    fn permuted(g: &[u8], n: usize, source: &[u32]) -> Vec<u8> {
        let graphs = Graphs::new(g, n, Path::new("g")).unwrap();
        let mut out = Vec::new();
        out.extend_from_slice(crate::graph::MAGIC);
        out.extend_from_slice(&(n as u64).to_le_bytes());
        let mut off = 0u64;
        out.extend_from_slice(&off.to_le_bytes());
        for &s in source {
            off += graphs.record(s as usize).unwrap().len() as u64;
            out.extend_from_slice(&off.to_le_bytes());
        }
        for &s in source {
            out.extend_from_slice(graphs.record(s as usize).unwrap());
        }
        out
    }

    #[test]
    fn reordered_records_in_windows_give_the_bytes_of_the_permuted_file() {
        for n in [0usize, 1, 5, 1000, 3001] {
            let (_, _, g) = fixture(n, 1);
            // a permutation that scatters neighbours
            let mut source: Vec<u32> = (0..n as u32).collect();
            source.sort_by_key(|&i| (i.wrapping_mul(2_654_435_761) % 1009, i));
            let direct = permuted(&g, n, &source);
            let want = Graphs::new(&direct, n, Path::new("p")).unwrap();
            let graphs = Graphs::new(&g, n, Path::new("g")).unwrap();
            let reordered = Reordered {
                graphs: &graphs,
                source: &source,
            };
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("g");
            let info = encode_graphs(&want, n, &p, 1, WINDOW_BYTES).unwrap();
            let expected = std::fs::read(&p).unwrap();
            assert_eq!(info.bytes, expected.len() as u64);
            assert_eq!(info.xxh3, checksum(&expected));
            // windows of one block, of a few, of many, and of the whole file
            for (threads, window) in [(1, 1), (2, 300), (3, 2000), (1, WINDOW_BYTES)] {
                let got = encode_graphs(&reordered, n, &p, threads, window).unwrap();
                assert_eq!(
                    std::fs::read(&p).unwrap(),
                    expected,
                    "n {n}, {threads} threads, windows of {window} bytes"
                );
                assert_eq!(got, info);
                encode_graphs(&want, n, &p, threads, window).unwrap();
                let dense = std::fs::read(&p).unwrap();
                assert_eq!(dense, expected, "n {n}, dense, windows of {window} bytes");
            }
        }
    }

    #[test]
    fn compact_screen_and_graph_blocks_equal_the_dense_forms() {
        let dir = tempfile::tempdir().unwrap();
        for n in [0usize, 1, 255, 256, 1000, 3001] {
            let bits = 40;
            let (words, counts, g) = fixture(n, bits);
            let graphs = Graphs::new(&g, n, Path::new("g")).unwrap();
            let (s, gb) = (dir.path().join("s"), dir.path().join("g"));
            let (s3, gb3) = (dir.path().join("s3"), dir.path().join("g3"));
            let pw = plane_words(n);
            let plane = |b: usize, buf: &mut Vec<u64>| {
                buf.clear();
                buf.extend_from_slice(&words[b * pw..(b + 1) * pw]);
            };
            let w = write_compact(&plane, bits, n, &counts, &graphs, &s, &gb, 1, 1).unwrap();
            let w3 = write_compact(
                &plane,
                bits,
                n,
                &counts,
                &graphs,
                &s3,
                &gb3,
                3,
                WINDOW_BYTES,
            )
            .unwrap();
            assert_eq!(
                std::fs::read(&gb).unwrap(),
                std::fs::read(&gb3).unwrap(),
                "threads"
            );
            assert_eq!(w.graphs, w3.graphs);
            let limit = (n as f64 * MAX_DENSITY) as u64;
            let kept: Vec<u32> = (0..bits)
                .filter(|&b| counts[b as usize] > 0 && counts[b as usize] <= limit)
                .collect();
            assert_eq!(w.planes.iter().map(|p| p.bit).collect::<Vec<_>>(), kept);
            let data = std::fs::read(&s).unwrap();
            let screen = CompactScreen::new(&data, n);
            let pw = plane_words(n);
            let has = |b: u32, i: usize| words[b as usize * pw + i / 64] >> (i % 64) & 1 == 1;
            for pick in [vec![0usize], vec![1, 3], vec![0, 2, 5], vec![4, 1, 2, 6]] {
                let planes: Vec<&KeptPlane> =
                    pick.iter().filter_map(|&k| w.planes.get(k)).collect();
                for range in [0..n, n / 3..n, 0..n / 2, n / 5..n / 5 + 300] {
                    let range = range.start.min(n)..range.end.min(n);
                    let mut got = Vec::new();
                    screen.screen(&planes, range.clone(), &mut got);
                    let want: Vec<u64> = range
                        .clone()
                        .filter(|&i| planes.iter().all(|p| has(p.bit, i)))
                        .map(|i| i as u64)
                        .collect();
                    assert_eq!(got, want, "n {n} planes {pick:?} range {range:?}");
                }
            }
            let bytes = std::fs::read(&gb).unwrap();
            let blocks = GraphBlocks::new(&bytes, n, &gb).unwrap();
            let mut cur = BlockCursor::default();
            for i in (0..n).rev().step_by(3).chain(0..n) {
                assert_eq!(
                    blocks.record(i, &mut cur).unwrap(),
                    graphs.record(i).unwrap()
                );
            }
            // a damaged block is an error, never another record
            if n > 0 {
                let mut bad = bytes.clone();
                let last = bad.len() - 6;
                bad[last] ^= 0x40;
                let blocks = GraphBlocks::new(&bad, n, &gb).unwrap();
                let mut cur = BlockCursor::default();
                assert!(blocks.record(n - 1, &mut cur).is_err());
            }
        }
    }
}
