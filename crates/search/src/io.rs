//! The column index on disk: [`ColumnIndex::write`], [`ColumnIndex::open`] (maps the files with
//! mmap after checking the header and every size) and [`ColumnIndex::verify`] (checksums and the
//! permutation, reading everything once).
//!
//! Files, in the directory given (usually the store's own directory):
//!
//! * `columns.json`: format name, version, bit count, molecules, blocks, the buckets
//!   (`popcount`, `first_block`, `blocks`, `count`), the number of molecules with each bit
//!   (`bit_counts`), and each data file's size and xxh3-64.
//!   Written last (and removed first when rewriting), so its presence marks a complete index.
//! * `columns.planes.u64`: the bit planes, `bits * blocks * 4` little-endian `u64`, plane-major.
//! * `columns.order.u64`: `blocks * 256` little-endian `u64`: the store index in each sorted
//!   slot, `u64::MAX` for padding.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use molsift_iostats::{self as iostats, CountedFile};
use molsift_store::replace::temporary_sibling;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

use crate::layout::{check_bits, Bucket, ColumnIndex, Origin, Words, BLOCK, BLOCK_WORDS, PAD};
use crate::SearchError;

/// The header file.
pub const HEADER_FILE: &str = "columns.json";
/// The bit planes.
pub const PLANES_FILE: &str = "columns.planes.u64";
/// The sorted-slot to store-index permutation.
pub const ORDER_FILE: &str = "columns.order.u64";
/// The `format` field of the header.
pub const FORMAT_NAME: &str = "molsift-columns";
/// The format version this build writes and reads (2: per-plane checksums in the header).
pub const FORMAT_VERSION: u32 = 2;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FileInfo {
    pub(crate) bytes: u64,
    pub(crate) xxh3: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Header {
    format: String,
    version: u32,
    bits: u32,
    molecules: u64,
    block: u64,
    blocks: u64,
    buckets: Vec<Bucket>,
    bit_counts: Vec<u64>,
    planes: FileInfo,
    order: FileInfo,
    /// XXH3-64 of each bit plane, so a search checks only the planes it reads
    plane_xxh3: Vec<String>,
}

impl ColumnIndex {
    /// Writes the index into `dir` (created if missing), replacing an index already there. The
    /// header is written last, so an interrupted write leaves no index that opens.
    pub fn write(&self, dir: &Path) -> Result<(), SearchError> {
        start_index(dir)?;
        let planes = write_words(&dir.join(PLANES_FILE), self.planes.as_slice())?;
        let order = write_words(&dir.join(ORDER_FILE), self.order.as_slice())?;
        let shape = IndexShape {
            bits: self.bits,
            n: self.n,
            blocks: self.blocks,
            buckets: &self.buckets,
        };
        let sums = plane_checksums(self.planes.as_slice(), self.plane_words());
        write_header(dir, &shape, &self.bit_counts, planes, order, sums).map(|_| ())
    }

    /// Opens an index written by [`ColumnIndex::write`]: checks the header (format, version,
    /// buckets) and that every file has exactly the size it implies, then maps the files.
    /// Refuses a missing, truncated or oversized file with an error naming it. Contents are not
    /// read; see [`ColumnIndex::verify`].
    pub fn open(dir: &Path) -> Result<ColumnIndex, SearchError> {
        let header_path = dir.join(HEADER_FILE);
        let text =
            iostats::read_file(&header_path).map_err(|e| SearchError::io(&header_path, e))?;
        let h = parse_header(&text, &header_path)?;
        let planes = CountedFile::open(&dir.join(PLANES_FILE))
            .map_err(|e| SearchError::io(dir.join(PLANES_FILE), e))?;
        let order = CountedFile::open(&dir.join(ORDER_FILE))
            .map_err(|e| SearchError::io(dir.join(ORDER_FILE), e))?;
        Self::from_header(h, dir, &planes, &order)
    }

    /// Opens the column index of an open store, through the store's own directory handle (the
    /// same generation as the store), or `None` when the store's manifest lists no index (a
    /// `columns.json` not listed there, e.g. left by an older molsift, is ignored). The header
    /// is checked against the manifest's checksum; sizes as in [`ColumnIndex::open`].
    pub fn open_in(store: &molsift_store::Store) -> Result<Option<ColumnIndex>, SearchError> {
        if !store.manifest().files.contains_key(HEADER_FILE) {
            return Ok(None);
        }
        let dir = store.path();
        let header_path = dir.join(HEADER_FILE);
        store.verify_file(HEADER_FILE)?;
        let header = store.file(HEADER_FILE)?;
        let mut text = vec![0u8; store.manifest().files[HEADER_FILE].bytes as usize];
        match header.read_exact_at(&mut text, 0) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(SearchError::WrongSize {
                    path: header_path,
                    expected: text.len() as u64,
                    found: header.metadata().map_or(0, |m| m.len()),
                })
            }
            Err(e) => return Err(SearchError::io(&header_path, e)),
        }
        let h = parse_header(&text, &header_path)?;
        let index = Self::from_header(h, dir, store.file(PLANES_FILE)?, store.file(ORDER_FILE)?)?;
        if index.len() != store.len() || index.bits() != store.manifest().fingerprint.bits {
            return Err(SearchError::BadHeader {
                path: header_path,
                reason: format!(
                    "the index holds {} molecules of {} bits, the store {} of {}",
                    index.len(),
                    index.bits(),
                    store.len(),
                    store.manifest().fingerprint.bits
                ),
            });
        }
        Ok(Some(index))
    }

    fn from_header(
        h: Header,
        dir: &Path,
        planes: &CountedFile,
        order: &CountedFile,
    ) -> Result<ColumnIndex, SearchError> {
        let plane_bytes = h.planes.bytes;
        let planes = map_words(planes, plane_bytes)?;
        let order = map_words(order, h.order.bytes)?;
        let origin = Some(Origin {
            dir: dir.to_path_buf(),
            planes_xxh3: h.planes.xxh3,
            order_xxh3: h.order.xxh3,
            plane_xxh3: h.plane_xxh3,
            plane_checked: (0..h.bits)
                .map(|_| std::sync::atomic::AtomicBool::new(false))
                .collect(),
            order_checked: std::sync::OnceLock::new(),
        });
        let mut index = ColumnIndex {
            bits: h.bits,
            n: h.molecules,
            blocks: h.blocks,
            buckets: h.buckets,
            planes,
            order,
            bit_counts: h.bit_counts,
            origin,
            advise: false,
            compressed: None,
        };
        index.set_read_ahead(plane_bytes > cache_memory() / 2);
        Ok(index)
    }

    /// Checks, once per process, the checksum of each plane in `bits` and of the slot order of
    /// an index opened from files (what a search reads before it trusts it); nothing for an
    /// index built in memory.
    pub(crate) fn check_read(&self, bits: &[u32]) -> Result<(), SearchError> {
        use std::sync::atomic::Ordering;
        let Some(origin) = &self.origin else {
            return Ok(());
        };
        let w = self.plane_words();
        let planes = self.planes.as_slice();
        // ask for every unchecked plane (and the order) at once: large reads, not page faults
        for &b in bits {
            if !origin.plane_checked[b as usize].load(Ordering::Relaxed) {
                self.planes.will_need(b as usize * w, w);
            }
        }
        if origin.order_checked.get().is_none() {
            self.order.will_need(0, self.order.as_slice().len());
        }
        for &b in bits {
            let b = b as usize;
            if origin.plane_checked[b].load(Ordering::Relaxed) {
                continue;
            }
            let sum = checksum(&planes[b * w..(b + 1) * w]);
            if sum != origin.plane_xxh3[b] {
                return Err(SearchError::Corrupted {
                    path: origin.dir.join(PLANES_FILE),
                    reason: format!(
                        "bit plane {b}: checksum {sum} does not match the header's {}",
                        origin.plane_xxh3[b]
                    ),
                });
            }
            origin.plane_checked[b].store(true, Ordering::Relaxed);
        }
        origin
            .order_checked
            .get_or_init(|| {
                let sum = checksum(self.order.as_slice());
                (sum == origin.order_xxh3).then_some(()).ok_or_else(|| {
                    format!(
                        "checksum {sum} does not match the header's {}",
                        origin.order_xxh3
                    )
                })
            })
            .clone()
            .map_err(|reason| SearchError::Corrupted {
                path: origin.dir.join(ORDER_FILE),
                reason,
            })
    }

    /// Checks what [`ColumnIndex::open`] trusts, reading everything once: for an index opened
    /// from files, each file's checksum against the header; for any index, that `order` holds
    /// each store index `0..n` exactly once in the real slots, ascending within a bucket, and
    /// padding elsewhere.
    pub fn verify(&self) -> Result<(), SearchError> {
        if let Some(origin) = &self.origin {
            for (name, want, words) in [
                (PLANES_FILE, &origin.planes_xxh3, self.planes.as_slice()),
                (ORDER_FILE, &origin.order_xxh3, self.order.as_slice()),
            ] {
                let sum = checksum(words);
                if &sum != want {
                    return Err(SearchError::Corrupted {
                        path: origin.dir.join(name),
                        reason: format!("checksum {sum} does not match the header's {want}"),
                    });
                }
            }
        }
        let dir = self.origin.as_ref().map(|o| o.dir.as_path());
        let order_path = dir
            .map(|d| d.join(ORDER_FILE))
            .unwrap_or_else(|| PathBuf::from(ORDER_FILE));
        let corrupt = |reason: String| SearchError::Corrupted {
            path: order_path.clone(),
            reason,
        };
        let order = self.order.as_slice();
        let mut seen = vec![0u64; (self.n as usize).div_ceil(64)];
        for b in &self.buckets {
            let start = b.first_block as usize * BLOCK;
            let end = start + b.blocks as usize * BLOCK;
            let real = start + b.count as usize;
            let mut prev = None;
            for (slot, &i) in order.iter().enumerate().take(end).skip(start) {
                if slot >= real {
                    if i != PAD {
                        return Err(corrupt(format!("padding slot {slot} holds {i}")));
                    }
                    continue;
                }
                if i >= self.n || seen[i as usize / 64] >> (i % 64) & 1 == 1 {
                    return Err(corrupt(format!(
                        "slot {slot} holds {i}: out of range or repeated"
                    )));
                }
                if prev.is_some_and(|p| p >= i) {
                    return Err(corrupt(format!(
                        "slot {slot}: store indices not ascending in bucket"
                    )));
                }
                prev = Some(i);
                seen[i as usize / 64] |= 1 << (i % 64);
            }
        }
        Ok(())
    }
}

/// Parses and checks a header: format, version, bits, block, buckets, counts, file sizes.
fn parse_header(text: &[u8], header_path: &Path) -> Result<Header, SearchError> {
    let text = String::from_utf8_lossy(text);
    let bad = |reason: String| SearchError::BadHeader {
        path: header_path.to_path_buf(),
        reason,
    };
    let raw: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if raw.get("format").and_then(|f| f.as_str()) != Some(FORMAT_NAME) {
        return Err(bad(format!("format is not {FORMAT_NAME:?}")));
    }
    let version = raw.get("version").and_then(|v| v.as_u64());
    if version != Some(u64::from(FORMAT_VERSION)) {
        return Err(SearchError::UnsupportedVersion {
            path: header_path.to_path_buf(),
            found: raw
                .get("version")
                .map_or_else(|| "missing".into(), |v| v.to_string()),
            supported: FORMAT_VERSION,
        });
    }
    let h: Header = serde_json::from_value(raw).map_err(|e| bad(e.to_string()))?;
    check_bits(h.bits).map_err(|e| bad(e.to_string()))?;
    if h.block != BLOCK as u64 {
        return Err(bad(format!(
            "block of {} molecules, this build uses {BLOCK}",
            h.block
        )));
    }
    check_buckets(&h).map_err(bad)?;
    if h.bit_counts.len() != h.bits as usize || h.bit_counts.iter().any(|&c| c > h.molecules) {
        return Err(bad(format!(
            "bit_counts must be {} counts of at most {} molecules",
            h.bits, h.molecules
        )));
    }
    if h.plane_xxh3.len() != h.bits as usize {
        return Err(bad(format!("plane_xxh3 must hold {} checksums", h.bits)));
    }
    let plane_bytes = u64::from(h.bits)
        .checked_mul(h.blocks)
        .and_then(|x| x.checked_mul(BLOCK_WORDS as u64 * 8))
        .ok_or_else(|| bad("sizes overflow".into()))?;
    let order_bytes = h
        .blocks
        .checked_mul(BLOCK as u64 * 8)
        .ok_or_else(|| bad("sizes overflow".into()))?;
    if h.planes.bytes != plane_bytes || h.order.bytes != order_bytes {
        return Err(bad(format!(
            "file sizes {} and {} do not match {} bits x {} blocks",
            h.planes.bytes, h.order.bytes, h.bits, h.blocks
        )));
    }
    Ok(h)
}

/// The checksum of each of the `planes.len() / plane_words` planes.
pub(crate) fn plane_checksums(planes: &[u64], plane_words: usize) -> Vec<String> {
    if plane_words == 0 {
        return Vec::new();
    }
    planes.chunks(plane_words).map(checksum).collect()
}

/// Bytes the page cache may hold for this process: the kernel's `MemAvailable`, or this
/// process's memory cgroup limit (v1 or v2) if lower. `u64::MAX` if neither can be read.
pub(crate) fn cache_memory() -> u64 {
    let mut limit = u64::MAX;
    if let Ok(text) = std::fs::read_to_string("/proc/meminfo") {
        if let Some(kb) = text
            .lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            limit = kb * 1024;
        }
    }
    if let Ok(text) = std::fs::read_to_string("/proc/self/cgroup") {
        for line in text.lines() {
            let mut parts = line.splitn(3, ':');
            let (_, ctrl, path) = (
                parts.next(),
                parts.next().unwrap_or(""),
                parts.next().unwrap_or(""),
            );
            let file = if ctrl.split(',').any(|c| c == "memory") {
                format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes")
            } else if ctrl.is_empty() {
                format!("/sys/fs/cgroup{path}/memory.max")
            } else {
                continue;
            };
            if let Some(v) = std::fs::read_to_string(file)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
            {
                limit = limit.min(v);
            }
        }
    }
    limit
}

fn check_buckets(h: &Header) -> Result<(), String> {
    let mut next = 0u64;
    let mut molecules = 0u64;
    let mut prev_p: Option<u32> = None;
    for b in &h.buckets {
        if b.popcount > h.bits || prev_p.is_some_and(|p| p >= b.popcount) {
            return Err(format!(
                "bucket popcount {} out of order or range",
                b.popcount
            ));
        }
        if b.count == 0 || b.first_block != next || b.blocks != b.count.div_ceil(BLOCK as u64) {
            return Err(format!(
                "bucket of popcount {} has an impossible shape",
                b.popcount
            ));
        }
        prev_p = Some(b.popcount);
        next += b.blocks;
        molecules += b.count;
    }
    if next != h.blocks || molecules != h.molecules {
        return Err(format!(
            "buckets hold {molecules} molecules in {next} blocks, header says {} in {}",
            h.molecules, h.blocks
        ));
    }
    Ok(())
}

pub(crate) fn checksum(words: &[u64]) -> String {
    let mut h = Xxh3::new();
    let mut buf = Vec::with_capacity(1 << 16);
    for chunk in words.chunks(1 << 13) {
        buf.clear();
        for w in chunk {
            buf.extend_from_slice(&w.to_le_bytes());
        }
        h.update(&buf);
    }
    format!("{:016x}", h.digest())
}

/// What the header records about an index's shape.
pub(crate) struct IndexShape<'a> {
    pub(crate) bits: u32,
    pub(crate) n: u64,
    pub(crate) blocks: u64,
    pub(crate) buckets: &'a [Bucket],
}

/// Prepares `dir` for a new index: creates it and removes the header of an index already
/// there, so that nothing opens until the new header is written.
pub(crate) fn start_index(dir: &Path) -> Result<(), SearchError> {
    std::fs::create_dir_all(dir).map_err(|e| SearchError::io(dir, e))?;
    let header_path = dir.join(HEADER_FILE);
    match std::fs::remove_file(&header_path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(SearchError::io(&header_path, e)),
        _ => Ok(()),
    }
}

/// Writes the header (under a temporary name, then renamed): the last step of writing an index.
pub(crate) fn write_header(
    dir: &Path,
    shape: &IndexShape<'_>,
    bit_counts: &[u64],
    planes: FileInfo,
    order: FileInfo,
    plane_xxh3: Vec<String>,
) -> Result<FileInfo, SearchError> {
    let plane_xxh3 = if plane_xxh3.is_empty() {
        vec![checksum(&[]); shape.bits as usize]
    } else {
        plane_xxh3
    };
    let header = Header {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        bits: shape.bits,
        molecules: shape.n,
        block: BLOCK as u64,
        blocks: shape.blocks,
        buckets: shape.buckets.to_vec(),
        bit_counts: bit_counts.to_vec(),
        planes,
        order,
        plane_xxh3,
    };
    let header_path = dir.join(HEADER_FILE);
    let text = serde_json::to_string_pretty(&header).expect("header serializes");
    let tmp = temporary_sibling(&header_path, "tmp");
    iostats::write_file(&tmp, text.as_bytes(), true).map_err(|e| SearchError::io(&tmp, e))?;
    std::fs::rename(&tmp, &header_path).map_err(|e| SearchError::io(&header_path, e))?;
    Ok(FileInfo {
        bytes: text.len() as u64,
        xxh3: format!("{:016x}", xxhash_rust::xxh3::xxh3_64(text.as_bytes())),
    })
}

/// A file of little-endian `u64` words written in order under a temporary name, hashed as it
/// goes, synced and renamed by [`WordsFile::finish`].
pub(crate) struct WordsFile {
    path: PathBuf,
    tmp: PathBuf,
    out: BufWriter<CountedFile>,
    hash: Xxh3,
    words: u64,
    buf: Vec<u8>,
}

impl WordsFile {
    pub(crate) fn create(path: &Path) -> Result<WordsFile, SearchError> {
        let tmp = temporary_sibling(path, "tmp");
        let f = CountedFile::create(&tmp).map_err(|e| SearchError::io(&tmp, e))?;
        Ok(WordsFile {
            path: path.to_path_buf(),
            tmp,
            out: BufWriter::with_capacity(1 << 20, f),
            hash: Xxh3::new(),
            words: 0,
            buf: Vec::with_capacity(1 << 16),
        })
    }

    pub(crate) fn push(&mut self, words: &[u64]) -> Result<(), SearchError> {
        for chunk in words.chunks(1 << 13) {
            self.buf.clear();
            for x in chunk {
                self.buf.extend_from_slice(&x.to_le_bytes());
            }
            self.hash.update(&self.buf);
            self.out
                .write_all(&self.buf)
                .map_err(|e| SearchError::io(&self.tmp, e))?;
        }
        self.words += words.len() as u64;
        Ok(())
    }

    pub(crate) fn finish(self) -> Result<FileInfo, SearchError> {
        let tmp = self.tmp;
        let f = self
            .out
            .into_inner()
            .map_err(|e| SearchError::io(&tmp, e.into_error()))?;
        f.sync_all().map_err(|e| SearchError::io(&tmp, e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| SearchError::io(&self.path, e))?;
        Ok(FileInfo {
            bytes: self.words * 8,
            xxh3: format!("{:016x}", self.hash.digest()),
        })
    }
}

pub(crate) fn write_words(path: &Path, words: &[u64]) -> Result<FileInfo, SearchError> {
    let mut f = WordsFile::create(path)?;
    f.push(words)?;
    f.finish()
}

fn map_words(file: &CountedFile, expected: u64) -> Result<Words, SearchError> {
    let path = file.path();
    let found = file.metadata().map_err(|e| SearchError::io(path, e))?.len();
    if found != expected {
        return Err(SearchError::WrongSize {
            path: path.to_path_buf(),
            expected,
            found,
        });
    }
    if expected == 0 {
        return Ok(Words::Empty);
    }
    // SAFETY: index files are written once and then only read; the size was checked just above.
    // A file truncated while mapped would fault, as with the store's own files.
    let m = unsafe { file.map() }.map_err(|e| SearchError::io(path, e))?;
    Ok(Words::Mapped(m))
}
