//! [`PatternIndex`]: a store's pattern planes, mapped, and the screen of a query: the AND of
//! the planes of its bits, rarest first, a chunk of molecules at a time, leaving a chunk as
//! soon as no molecule of it is left. The AND runs with AVX2 where the CPU has it, else on a
//! portable path (the same results; tests compare them).

use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use memmap2::Mmap;
use molsift_store::StoreFiles;

use crate::compact::{CompactScreen, GraphBlocks, GRAPH_BLOCKS_FILE, SCREEN_FILE};
use crate::graph::{Graphs, GRAPHS_FILE};
use crate::layout::{
    checksum, plane_words, planes_bytes, Header, COMPACT_VERSION, FORMAT_NAME, FORMAT_VERSION,
    HEADER_FILE, MAX_BITS, PLANES_FILE,
};
use crate::matcher::{match_positions, Compiled, GraphMatches};
use crate::SubstructureError;

/// Words of each plane ANDed at a time (4,096 molecules): one chunk of the rarest plane is
/// read, then the same chunk of the next plane while any molecule is left.
pub const CHUNK_WORDS: usize = 64;

/// What one screen read and let through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScreenStats {
    /// plane words read (8 bytes each)
    pub words_read: u64,
    /// molecules that passed (candidates for the exact match)
    pub candidates: u64,
}

/// A store's pattern index, opened through the store's own directory handle.
pub struct PatternIndex {
    path: PathBuf,
    header: Header,
    planes: Option<Mmap>,
    checked: Vec<AtomicBool>,
    graphs: Option<(PathBuf, Mmap)>,
    graphs_checked: AtomicBool,
    /// the compact form (a version-2 store): the screen file's map, the kept plane of each
    /// bit (`u32::MAX`: not kept)
    compact: Option<(Option<Mmap>, Vec<u32>)>,
    /// the graph blocks' dictionary, prepared once (the compact form)
    prepared: Option<zstd::dict::DecoderDictionary<'static>>,
}

impl PatternIndex {
    /// Opens the pattern index of `store` (the same generation of the store), checking the
    /// header against the manifest's checksum and the planes' size; planes are checked against
    /// their checksums when a screen first reads them. `NoIndex` when the store has none.
    pub fn open_in(store: &dyn StoreFiles) -> Result<PatternIndex, SubstructureError> {
        let dir = store.path();
        let files = &store.manifest().files;
        let Some(h_entry) = files.get(HEADER_FILE) else {
            return Err(SubstructureError::NoIndex(dir.to_path_buf()));
        };
        let header_path = dir.join(HEADER_FILE);
        store.verify_file(HEADER_FILE)?;
        let mut text = vec![0u8; h_entry.bytes as usize];
        store
            .file(HEADER_FILE)?
            .read_exact_at(&mut text, 0)
            .map_err(|e| SubstructureError::io(&header_path, e))?;
        let bad = |reason: String| SubstructureError::BadHeader {
            path: header_path.clone(),
            reason,
        };
        let header: Header = serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))?;
        if header.format == FORMAT_NAME && header.version == COMPACT_VERSION {
            return Self::open_compact(store, header, bad);
        }
        if header.format != FORMAT_NAME || header.version != FORMAT_VERSION {
            return Err(bad(format!(
                "format {:?} version {}, this build reads {FORMAT_NAME:?} version {FORMAT_VERSION}",
                header.format, header.version
            )));
        }
        let n = store.len();
        let bits = header.bits;
        if !counts_fit(&header, n) || header.plane_xxh3.len() != bits as usize {
            return Err(bad(format!(
                "{} molecules, {bits} bits, {} bit counts, {} plane checksums do not fit a store \
                 of {n} molecules",
                header.molecules,
                header.bit_counts.len(),
                header.plane_xxh3.len()
            )));
        }
        let Some(p_entry) = files.get(PLANES_FILE) else {
            return Err(SubstructureError::NoIndex(dir.to_path_buf()));
        };
        let expected = planes_bytes(bits, n);
        if header.planes.bytes != expected
            || p_entry.bytes != expected
            || p_entry.xxh3 != header.planes.xxh3
        {
            return Err(bad(format!(
                "planes of {} bytes ({}) in the header, {} ({}) in the manifest, {expected} \
                 expected",
                header.planes.bytes, header.planes.xxh3, p_entry.bytes, p_entry.xxh3
            )));
        }
        let planes = if expected == 0 {
            None
        } else {
            let file = store.file(PLANES_FILE)?;
            // SAFETY: index files are written once, renamed into place, then only read; the
            // store checked the size when it opened the file.
            Some(unsafe { file.map() }.map_err(|e| SubstructureError::io(file.path(), e))?)
        };
        let checked = (0..bits).map(|_| AtomicBool::new(false)).collect();
        let graphs = match (&header.graphs, files.get(GRAPHS_FILE)) {
            (None, _) => None,
            (Some(info), Some(entry)) if info.bytes == entry.bytes && info.xxh3 == entry.xxh3 => {
                let file = store.file(GRAPHS_FILE)?;
                // SAFETY: as for the planes.
                let m = unsafe { file.map() }.map_err(|e| SubstructureError::io(file.path(), e))?;
                Graphs::new(&m, n, file.path())?;
                Some((file.path().to_path_buf(), m))
            }
            (Some(info), entry) => {
                return Err(bad(format!(
                    "graphs of {} bytes ({}) in the header, {:?} in the manifest",
                    info.bytes,
                    info.xxh3,
                    entry.map(|e| (e.bytes, &e.xxh3))
                )))
            }
        };
        Ok(PatternIndex {
            path: dir.join(PLANES_FILE),
            header,
            planes,
            checked,
            graphs,
            graphs_checked: AtomicBool::new(false),
            compact: None,
            prepared: None,
        })
    }

    fn open_compact(
        store: &dyn StoreFiles,
        header: Header,
        bad: impl Fn(String) -> SubstructureError,
    ) -> Result<PatternIndex, SubstructureError> {
        let dir = store.path();
        let files = &store.manifest().files;
        let n = store.len();
        let bits = header.bits;
        if !counts_fit(&header, n) {
            return Err(bad(format!(
                "{} molecules, {bits} bits, {} bit counts do not fit a store of {n} molecules",
                header.molecules,
                header.bit_counts.len()
            )));
        }
        let listed = |name: &str, info: &crate::layout::FileInfo| {
            files
                .get(name)
                .is_some_and(|e| e.bytes == info.bytes && e.xxh3 == info.xxh3)
        };
        let graphs_info = header.graphs.clone();
        let (true, Some(true)) = (
            listed(SCREEN_FILE, &header.planes),
            graphs_info.as_ref().map(|g| listed(GRAPH_BLOCKS_FILE, g)),
        ) else {
            return Err(bad(
                "its screen or graph blocks differ from the store's manifest".into(),
            ));
        };
        let blocks = n.div_ceil(crate::layout::BLOCK);
        let mut of_bit = vec![u32::MAX; bits as usize];
        for (k, p) in header.kept.iter().enumerate() {
            let fits = (p.bit as usize) < of_bit.len()
                && p.bytes >= blocks as u64
                && p.start
                    .checked_add(p.bytes)
                    .is_some_and(|e| e <= header.planes.bytes);
            if !fits || of_bit[p.bit as usize] != u32::MAX {
                return Err(bad(format!("kept plane {k} (bit {}) does not fit", p.bit)));
            }
            of_bit[p.bit as usize] = k as u32;
        }
        let map = |name: &str| -> Result<Option<Mmap>, SubstructureError> {
            let file = store.file(name)?;
            if file
                .metadata()
                .map_err(|e| SubstructureError::io(file.path(), e))?
                .len()
                == 0
            {
                return Ok(None);
            }
            // SAFETY: index files are written once, renamed into place, then only read; the
            // store checked the size when it opened the file.
            Ok(Some(
                unsafe { file.map() }.map_err(|e| SubstructureError::io(file.path(), e))?,
            ))
        };
        let screen = map(SCREEN_FILE)?;
        let graphs =
            map(GRAPH_BLOCKS_FILE)?.ok_or_else(|| bad("an empty graph blocks file".into()))?;
        let prepared = GraphBlocks::new(&graphs, n, &dir.join(GRAPH_BLOCKS_FILE))?.prepare();
        let checked = (0..header.kept.len())
            .map(|_| AtomicBool::new(false))
            .collect();
        Ok(PatternIndex {
            path: dir.join(SCREEN_FILE),
            header,
            planes: None,
            checked,
            graphs: Some((dir.join(GRAPH_BLOCKS_FILE), graphs)),
            graphs_checked: AtomicBool::new(false),
            compact: Some((screen, of_bit)),
            prepared: Some(prepared),
        })
    }

    /// Number of screening bits.
    pub fn bits(&self) -> u32 {
        self.header.bits
    }

    /// Number of molecules.
    pub fn len(&self) -> usize {
        self.header.molecules as usize
    }

    /// True for an index of no molecule.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the index holds the molecules' graphs (the exact-match form of
    /// [`crate::graph`]); without them every candidate goes to RDKit.
    pub fn has_graphs(&self) -> bool {
        self.graphs.is_some()
    }

    /// Bytes of the graphs file (0 without one).
    pub fn graphs_bytes(&self) -> u64 {
        self.graphs.as_ref().map_or(0, |(_, m)| m.len() as u64)
    }

    /// Matches `query` against the molecules at `positions` (ascending) on `threads` threads;
    /// `None` when the index holds no graphs. The graphs file is checked against its checksum
    /// the first time, once per process.
    pub fn match_graphs(
        &self,
        query: &Compiled,
        positions: &[u64],
        threads: usize,
    ) -> Result<Option<GraphMatches>, SubstructureError> {
        self.match_graphs_until(query, positions, threads, None)
    }

    /// As [`PatternIndex::match_graphs`], ended with [`SubstructureError::Cancelled`] once
    /// `stop` is set (by another thread), even inside one molecule's match.
    pub fn match_graphs_until(
        &self,
        query: &Compiled,
        positions: &[u64],
        threads: usize,
        stop: Option<&AtomicBool>,
    ) -> Result<Option<GraphMatches>, SubstructureError> {
        let Some((path, m)) = &self.graphs else {
            return Ok(None);
        };
        self.check_graphs()?;
        if let Some(prepared) = &self.prepared {
            let g = GraphBlocks::new(m, self.len(), path)?.with_prepared(prepared);
            return match_positions(&g, query, positions, threads, path, stop).map(Some);
        }
        let g = Graphs::new(m, self.len(), path)?;
        match_positions(&g, query, positions, threads, path, stop).map(Some)
    }

    /// The dense planes' words and the graphs (every plane and the graphs checked against
    /// their checksums first), for carrying the index over to another order
    /// ([`crate::carry_index`]); an error for the compact form or an index without graphs.
    pub fn dense_parts(&self) -> Result<(&[u64], Graphs<'_>), SubstructureError> {
        let Some((path, m)) = (self.compact.is_none())
            .then_some(self.graphs.as_ref())
            .flatten()
        else {
            return Err(SubstructureError::Invalid(format!(
                "{}: not the dense form with graphs",
                self.path.display()
            )));
        };
        let all: Vec<u32> = (0..self.bits()).collect();
        self.check_planes(&all)?;
        self.check_graphs()?;
        Ok((self.words(), Graphs::new(m, self.len(), path)?))
    }

    /// Checks the graphs file against its checksum, once per process.
    fn check_graphs(&self) -> Result<(), SubstructureError> {
        let Some((path, m)) = &self.graphs else {
            return Ok(());
        };
        if !self.graphs_checked.load(Ordering::Relaxed) {
            let want = &self.header.graphs.as_ref().expect("graphs listed").xxh3;
            let sum = checksum(m);
            if &sum != want {
                return Err(SubstructureError::Corrupted {
                    path: path.clone(),
                    reason: format!("checksum {sum} does not match the header's {want}"),
                });
            }
            self.graphs_checked.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The graphs file's path (for messages).
    pub fn graphs_path(&self) -> PathBuf {
        self.graphs
            .as_ref()
            .map_or_else(|| self.path.clone(), |(p, _)| p.clone())
    }

    /// Molecules having each bit.
    pub fn bit_counts(&self) -> &[u64] {
        &self.header.bit_counts
    }

    /// What the bits mean, as the writer recorded it.
    pub fn meaning(&self) -> &serde_json::Value {
        &self.header.meaning
    }

    pub(crate) fn words(&self) -> &[u64] {
        match &self.planes {
            None => &[],
            Some(m) => {
                // SAFETY: mmap is page aligned and the size a multiple of 8; the crate refuses
                // big-endian targets (lib.rs).
                let (head, words, tail) = unsafe { m.align_to::<u64>() };
                assert!(head.is_empty() && tail.is_empty(), "planes not u64 aligned");
                words
            }
        }
    }

    /// Checks, once per process, each plane of `bits` against its checksum.
    fn check_planes(&self, bits: &[u32]) -> Result<(), SubstructureError> {
        let pw = plane_words(self.len());
        let bytes = self.planes.as_deref().unwrap_or(&[]);
        for &b in bits {
            let b = b as usize;
            if self.checked[b].load(Ordering::Relaxed) {
                continue;
            }
            let sum = checksum(&bytes[b * pw * 8..(b + 1) * pw * 8]);
            if sum != self.header.plane_xxh3[b] {
                return Err(SubstructureError::Corrupted {
                    path: self.path.clone(),
                    reason: format!(
                        "plane {b}: checksum {sum} does not match the header's {}",
                        self.header.plane_xxh3[b]
                    ),
                });
            }
            self.checked[b].store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The planes a screen of `bits` reads, rarest first: duplicates and bits every molecule
    /// has are left out; `None` when some bit no molecule has (nothing can pass).
    pub fn plan(&self, bits: &[u32]) -> Result<Option<Vec<u32>>, SubstructureError> {
        let n = self.len() as u64;
        let mut order: Vec<u32> = Vec::with_capacity(bits.len());
        for &b in bits {
            if b >= self.bits() {
                return Err(SubstructureError::Invalid(format!(
                    "screening bit {b} is out of range for an index of {} bits",
                    self.bits()
                )));
            }
            let c = self.header.bit_counts[b as usize];
            if c == 0 {
                return Ok(None);
            }
            if c < n {
                order.push(b);
            }
        }
        order.sort_unstable_by_key(|&b| (self.header.bit_counts[b as usize], b));
        order.dedup();
        Ok(Some(order))
    }

    /// Store positions in `range` (ascending) of the molecules having every bit of `bits`,
    /// appended to `out`.
    pub fn screen(
        &self,
        bits: &[u32],
        range: Range<usize>,
        out: &mut Vec<u64>,
    ) -> Result<ScreenStats, SubstructureError> {
        let n = self.len();
        if range.start > range.end || range.end > n {
            return Err(SubstructureError::Invalid(format!(
                "molecules {}..{} are not inside 0..{n}",
                range.start, range.end
            )));
        }
        let Some(order) = self.plan(bits)? else {
            return Ok(ScreenStats::default());
        };
        if let Some((screen, of_bit)) = &self.compact {
            let data = screen.as_deref().unwrap_or(&[]);
            let mut kept = Vec::with_capacity(order.len());
            for &b in &order {
                let k = of_bit[b as usize];
                if k == u32::MAX {
                    continue; // a plane left out: it only lets more molecules through
                }
                let p = &self.header.kept[k as usize];
                if !self.checked[k as usize].load(Ordering::Relaxed) {
                    let sum = checksum(&data[p.start as usize..(p.start + p.bytes) as usize]);
                    if sum != p.xxh3 {
                        return Err(SubstructureError::Corrupted {
                            path: self.path.clone(),
                            reason: format!(
                                "plane of bit {b}: checksum {sum} does not match the header's {}",
                                p.xxh3
                            ),
                        });
                    }
                    self.checked[k as usize].store(true, Ordering::Relaxed);
                }
                kept.push(p);
            }
            let before = out.len();
            let read = CompactScreen::new(data, n).screen(&kept, range, out);
            return Ok(ScreenStats {
                words_read: read.div_ceil(8),
                candidates: (out.len() - before) as u64,
            });
        }
        self.check_planes(&order)?;
        let before = out.len();
        let words_read =
            screen_planes(self.words(), plane_words(n), &order, range, out, use_avx2());
        Ok(ScreenStats {
            words_read,
            candidates: (out.len() - before) as u64,
        })
    }
}

/// Whether a header's molecules, bits and per-bit counts fit a store of `n` molecules.
fn counts_fit(header: &Header, n: usize) -> bool {
    let bits = header.bits;
    header.molecules == n as u64
        && bits > 0
        && bits <= MAX_BITS
        && header.bit_counts.len() == bits as usize
        && header.bit_counts.iter().all(|&c| c <= n as u64)
}

/// Whether this CPU runs the AVX2 AND.
pub fn use_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `acc &= plane`; true if any bit of `acc` is left.
#[inline(always)]
fn and_portable(acc: &mut [u64], plane: &[u64]) -> bool {
    let mut any = 0u64;
    for (a, p) in acc.iter_mut().zip(plane) {
        *a &= *p;
        any |= *a;
    }
    any != 0
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
/// [`and_portable`] compiled for AVX2 (256-bit ANDs and ORs).
unsafe fn and_avx2(acc: &mut [u64], plane: &[u64]) -> bool {
    and_portable(acc, plane)
}

fn and_into(acc: &mut [u64], plane: &[u64], avx2: bool) -> bool {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: only called when the CPU has AVX2 (`use_avx2`).
        return unsafe { and_avx2(acc, plane) };
    }
    let _ = avx2;
    and_portable(acc, plane)
}

/// The screen over `planes` (`pw` words per plane): positions in `range` having every plane of
/// `order` (all of them when `order` is empty), appended to `out`. Returns the words read.
pub(crate) fn screen_planes(
    planes: &[u64],
    pw: usize,
    order: &[u32],
    range: Range<usize>,
    out: &mut Vec<u64>,
    avx2: bool,
) -> u64 {
    if range.is_empty() {
        return 0;
    }
    let (w0, w1) = (range.start / 64, range.end.div_ceil(64));
    let mut acc = [0u64; CHUNK_WORDS];
    let mut read = 0u64;
    let mut c0 = w0;
    while c0 < w1 {
        let c1 = (c0 + CHUNK_WORDS).min(w1);
        let acc = &mut acc[..c1 - c0];
        match order.first() {
            None => acc.fill(u64::MAX),
            Some(&p) => {
                let p = p as usize * pw;
                acc.copy_from_slice(&planes[p + c0..p + c1]);
                read += (c1 - c0) as u64;
            }
        }
        if c0 == w0 {
            acc[0] &= u64::MAX << (range.start % 64);
        }
        if c1 == w1 && range.end % 64 != 0 {
            acc[c1 - c0 - 1] &= (1u64 << (range.end % 64)) - 1;
        }
        let mut any = acc.iter().any(|&w| w != 0);
        for &p in order.iter().skip(1) {
            if !any {
                break;
            }
            let p = p as usize * pw;
            any = and_into(acc, &planes[p + c0..p + c1], avx2);
            read += (c1 - c0) as u64;
        }
        if any {
            for (i, &word) in acc.iter().enumerate() {
                let mut x = word;
                while x != 0 {
                    out.push(((c0 + i) * 64) as u64 + u64::from(x.trailing_zeros()));
                    x &= x - 1;
                }
            }
        }
        c0 = c1;
    }
    read
}
