//! The analog index of a store (`molsift index STORE --analogs`): its distinct skeletons,
//! sorted by canonical key, with each one's shape (components, atoms, rings) and molecules
//! (store positions). [`write_index`] builds it on several threads from the stored SMILES and
//! renames it into the store (listed in the manifest with sizes and checksums);
//! [`AnalogIndex::open_in`] maps it, checks every file against its checksum, and is the
//! [`Library`] a [`crate::walk`] searches.
//!
//! | file | content |
//! |---|---|
//! | `analogs.json` | [`IndexHeader`]: format, version, counts, `max_leaves`, each data file's size and XXH3 |
//! | `analogs.keys.u128` | the canonical keys, ascending, 16 bytes little-endian each |
//! | `analogs.shapes.u16` | per skeleton: components, atoms, rings (3 x u16) |
//! | `analogs.offsets.u32` | per skeleton, where its molecules start in `analogs.positions.u32` (skeletons + 1 entries) |
//! | `analogs.positions.u32` | the molecules of each skeleton, ascending store positions |
//! | `analogs.failed.tsv` | molecules without a skeleton: `position<TAB>reason` |
//! | `analogs.wl.u64` | the distinct [`wl_hash`](crate::wl::wl_hash)es of the skeletons, ascending (the walk's filter) |
//! | `analogs.deletions.fuse` | a filter ([`Deletions`]: binary fuse, 8-bit fingerprints, about 9 bits a hash) of the WL hashes of every graph one deletion away from a skeleton: the walk's last distance skips the insertions of a graph it lacks |
//!
//! Counts add up: `molecules = indexed + failed`. Limits of this version: 2^32 - 1 molecules,
//! 65,535 atoms per skeleton; the build holds 34 bytes per molecule in memory (an entry each, in
//! one vector that the threads fill in place), the deletions' distinct keys (4 bytes each, about
//! 5.4 a molecule on MOSES, in the [`Sink`]'s buckets; the filter is built from them once all
//! are read, a piece at a time), the data files' bytes, and each thread the keys of up to 4 Mi
//! skeletons it has edited and a batch of hashes not yet handed to the sink.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use memmap2::Mmap;
use molsift_store::layout::ANALOG_RETIRED_FILES;
use molsift_store::{FileEntry, StoreFiles};
use serde::{Deserialize, Serialize};

use crate::canon::canonical;
use crate::deletions::{Deletions, Sink, BATCH};
use crate::edits::component_count;
use crate::edits::{edit_list, Edit, DELETIONS};
use crate::smiles::skeleton_of_smiles;
use crate::walk::{Graph, Grid, Library};
use crate::wl::ROUNDS;
use crate::AnalogError;

/// Format name in `analogs.json`.
pub const FORMAT_NAME: &str = "molsift-analog-index";
/// Format version written and read (2: the WL-hash filter; 3: the deletions' Bloom filter; 4:
/// the deletions' fuse filter).
pub const FORMAT_VERSION: u32 = 4;
/// The header.
pub const HEADER_FILE: &str = "analogs.json";
/// Canonical keys.
pub const KEYS_FILE: &str = "analogs.keys.u128";
/// Shapes.
pub const SHAPES_FILE: &str = "analogs.shapes.u16";
/// Offsets into the positions.
pub const OFFSETS_FILE: &str = "analogs.offsets.u32";
/// Store positions.
pub const POSITIONS_FILE: &str = "analogs.positions.u32";
/// Molecules without a skeleton.
pub const FAILED_FILE: &str = "analogs.failed.tsv";
/// The skeletons' WL hashes.
pub const WL_FILE: &str = "analogs.wl.u64";
/// log2 of the fewest bits of the in-memory WL bitmap (1 MiB).
const BITMAP_MIN_BITS: u32 = 23;
/// log2 of the most bits of the in-memory WL bitmap (512 MiB).
const BITMAP_MAX_BITS: u32 = 32;

/// log2 of the bits of the WL bitmap for `hashes` hashes: at least 16 bits per hash (about 6% of
/// the bits set: a hash the index lacks is almost always answered by one memory read, not a
/// binary search), between [`BITMAP_MIN_BITS`] and [`BITMAP_MAX_BITS`]. A fixed 2^23 bits
/// were 68% set at 10 M molecules (9.6 M hashes), and the binary searches behind them took
/// most of an analog search's time.
pub(crate) fn bitmap_bits(hashes: u64) -> u32 {
    let want = hashes
        .saturating_mul(16)
        .max(1)
        .checked_next_power_of_two()
        .map_or(64, u64::trailing_zeros);
    want.clamp(BITMAP_MIN_BITS, BITMAP_MAX_BITS)
}

/// The filter of their deletions' WL hashes.
pub const DELETIONS_FILE: &str = "analogs.deletions.fuse";
/// Distinct deletions' hashes a molecule, as the build reserves room for them (all of MOSES:
/// 5.4; a bucket that fills grows).
const DELETIONS_PER_MOLECULE: usize = 6;
/// The data files.
pub const DATA_FILES: [&str; 7] = [
    KEYS_FILE,
    SHAPES_FILE,
    OFFSETS_FILE,
    POSITIONS_FILE,
    FAILED_FILE,
    WL_FILE,
    DELETIONS_FILE,
];

/// `analogs.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexHeader {
    /// [`FORMAT_NAME`]
    pub format: String,
    /// [`FORMAT_VERSION`]
    pub version: u32,
    /// molecules of the store
    pub molecules: u64,
    /// distinct skeletons
    pub skeletons: u64,
    /// molecules with a skeleton (listed in the positions)
    pub indexed: u64,
    /// molecules without one (listed in the failed file)
    pub failed: u64,
    /// the canonical form's leaf limit the keys were computed with
    pub max_leaves: usize,
    /// refinement rounds of the WL hashes
    pub wl_rounds: u32,
    /// distinct WL hashes
    pub wl_hashes: u64,
    /// each data file's size and XXH3-64
    pub files: BTreeMap<String, FileEntry>,
}

fn checksum(bytes: &[u8]) -> String {
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(bytes))
}

/// What [`write_index`] wrote.
#[derive(Debug, Clone)]
pub struct Written {
    /// the header written
    pub header: IndexHeader,
    /// bytes of all files, header included
    pub bytes: u64,
}

/// One molecule's skeleton: key, WL hash, shape, position.
/// Packed: 34 bytes, not the 48 a tuple of these takes (the u128's alignment pads it).
#[derive(Clone, Copy)]
#[repr(C, packed)]
struct Entry {
    key: u128,
    wl: u64,
    shape: [u16; 3],
    pos: u32,
}

/// A molecule without a skeleton (so far): position `u32::MAX`, never a molecule's.
const NONE: Entry = Entry {
    key: 0,
    wl: 0,
    shape: [0; 3],
    pos: u32::MAX,
};

/// Builds the analog index of `store` on `threads` threads and renames it into the store
/// (replacing an earlier one). `progress(done)` is called now and then with the molecules read
/// so far (from any thread).
pub fn write_index(
    store: &dyn StoreFiles,
    threads: usize,
    max_leaves: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Written, AnalogError> {
    let n = store.len();
    if n > u32::MAX as usize {
        return Err(AnalogError::Invalid(format!(
            "{}: {n} molecules; an analog index holds at most {}",
            store.path().display(),
            u32::MAX
        )));
    }
    const CHUNK: usize = 4096;
    // each molecule's entry written in its place (position order) by whichever thread reads
    // its chunk, the molecules without a skeleton marked (position `u32::MAX`, never a
    // molecule's: n < 2^32) and listed by their threads, with the deletions' hashes each made
    let mut entries: Vec<Entry> = vec![NONE; n];
    // one task a chunk, each chunk's slots behind a lock its one task takes once
    let chunks: Vec<std::sync::Mutex<&mut [Entry]>> = entries
        .chunks_mut(CHUNK)
        .map(std::sync::Mutex::new)
        .collect();
    let done = AtomicUsize::new(0);
    let sink = Sink::for_keys(DELETIONS_PER_MOLECULE * n);
    // the task engine's threads (as many as the system starts), each with its own buffers and
    // list of molecules without a skeleton
    let states = molsift_tasks::try_each(
        threads.max(1),
        chunks.len(),
        || (Vec::new(), OneWork::default()),
        |(failed, work): &mut (Vec<(u32, String)>, OneWork), k| {
            let mut slots = chunks[k].lock().expect("a chunk of entries");
            let start = k * CHUNK;
            store.for_each_smiles(start..start + slots.len(), &mut |pos, smiles| {
                match one(smiles, max_leaves, work, &sink) {
                    Ok((key, wl, shape)) => {
                        slots[pos - start] = Entry {
                            key,
                            wl,
                            shape,
                            pos: pos as u32,
                        };
                    }
                    Err(why) => failed.push((pos as u32, why)),
                }
                Ok(())
            })?;
            let read = slots.len();
            progress((done.fetch_add(read, Ordering::Relaxed) + read) as u64);
            Ok::<(), AnalogError>(())
        },
    )?;
    drop(chunks);
    let mut failed = Vec::new();
    for (part, mut work) in states {
        sink.add(&mut work.hashes);
        failed.extend(part);
    }
    failed.sort_unstable();
    // every molecule has its entry or its reason, never both, never neither
    entries.retain(|e| e.pos != u32::MAX);
    if entries.len() + failed.len() != n {
        return Err(AnalogError::Invalid(format!(
            "{}: {} molecules with a skeleton and {} without, for {n} molecules",
            store.path().display(),
            entries.len(),
            failed.len()
        )));
    }
    let dels_bytes = sink.into_bytes(threads);
    entries.sort_unstable_by_key(|e| (e.key, e.pos));
    // the files' bytes
    let (mut keys, mut shapes, mut offsets, mut positions) = (
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::with_capacity(4 * entries.len()),
    );
    let mut last = None;
    let mut wls: Vec<u64> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let Entry {
            key,
            wl,
            shape,
            pos,
        } = *e;
        if last != Some(key) {
            last = Some(key);
            keys.extend_from_slice(&key.to_le_bytes());
            for v in shape {
                shapes.extend_from_slice(&v.to_le_bytes());
            }
            offsets.extend_from_slice(&(i as u32).to_le_bytes());
            wls.push(wl);
        }
        positions.extend_from_slice(&pos.to_le_bytes());
    }
    offsets.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    wls.sort_unstable();
    wls.dedup();
    let wl_bytes: Vec<u8> = wls.iter().flat_map(|h| h.to_le_bytes()).collect();
    let failed_text: String = failed
        .iter()
        .map(|(p, why)| format!("{p}\t{}\n", why.replace(['\t', '\n'], " ")))
        .collect();
    let data: [(&str, &[u8]); 7] = [
        (KEYS_FILE, &keys),
        (SHAPES_FILE, &shapes),
        (OFFSETS_FILE, &offsets),
        (POSITIONS_FILE, &positions),
        (FAILED_FILE, failed_text.as_bytes()),
        (WL_FILE, &wl_bytes),
        (DELETIONS_FILE, &dels_bytes),
    ];
    let files: BTreeMap<String, FileEntry> = data
        .iter()
        .map(|(name, bytes)| {
            (
                name.to_string(),
                FileEntry {
                    bytes: bytes.len() as u64,
                    xxh3: checksum(bytes),
                },
            )
        })
        .collect();
    let header = IndexHeader {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        molecules: n as u64,
        skeletons: (keys.len() / 16) as u64,
        indexed: entries.len() as u64,
        failed: failed.len() as u64,
        max_leaves,
        wl_rounds: ROUNDS,
        wl_hashes: wls.len() as u64,
        files: files.clone(),
    };
    let text = serde_json::to_string_pretty(&header).expect("header serializes") + "\n";
    // temporary names, synced, then renamed into the store and listed in its manifest
    let _lock = store.lock()?;
    let dir = store.path();
    let mut written = Vec::new();
    for (name, bytes) in data.iter().copied().chain([(HEADER_FILE, text.as_bytes())]) {
        let path = dir.join(name);
        let tmp = molsift_store::replace::temporary_sibling(&path, "tmp");
        molsift_iostats::write_file(&tmp, bytes, true).map_err(|e| AnalogError::io(&tmp, e))?;
        written.push((tmp, path, name, bytes));
    }
    let mut entries_out = Vec::new();
    let mut total = 0;
    for (tmp, path, name, bytes) in written {
        std::fs::rename(&tmp, &path).map_err(|e| AnalogError::io(&path, e))?;
        total += bytes.len() as u64;
        // the data files' entries were computed for the header; only the header's is new
        let entry = files.get(name).cloned().unwrap_or_else(|| FileEntry {
            bytes: bytes.len() as u64,
            xxh3: checksum(bytes),
        });
        entries_out.push((name.to_string(), entry));
    }
    // an earlier format's files go: unlisted, then removed (a crash between leaves an unlisted
    // file, never a listed one missing)
    store.replace_files(entries_out, &ANALOG_RETIRED_FILES)?;
    for name in ANALOG_RETIRED_FILES {
        let path = dir.join(name);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(AnalogError::io(&path, e))
            }
            _ => {}
        }
    }
    Ok(Written {
        header,
        bytes: total,
    })
}

/// The most skeleton keys [`OneWork`] remembers (about 150 MiB per thread at most).
const DONE_MAX: usize = 1 << 22;

/// What [`one`] keeps from molecule to molecule on a build thread: the keys of the skeletons
/// whose deletions it has hashed already (a skeleton shared by many molecules, as about half of
/// MOSES's are, is edited once per thread; the sink drops repeats), the deletions' hashes not
/// yet handed to the sink, and the edit list.
#[derive(Default)]
struct OneWork {
    done: HashSet<u128>,
    hashes: Vec<u64>,
    edits: Vec<Edit>,
}

/// The key, WL hash and shape of one SMILES's skeleton, or why it has none; the WL hashes of
/// its deletions' hashes go to `sink` (hashed as the walk hashes its edits,
/// [`Graph::hash_after`]), a batch at a time.
fn one(
    smiles: &str,
    max_leaves: usize,
    work: &mut OneWork,
    sink: &Sink,
) -> Result<(u128, u64, [u16; 3]), String> {
    let g = skeleton_of_smiles(smiles).map_err(|e| e.to_string())?;
    let key = canonical(&g, max_leaves).map_err(|e| e.to_string())?.key();
    let mut hashed = Graph::new(&g);
    let wl = hashed.hash();
    if work.done.len() >= DONE_MAX {
        work.done.clear(); // memory stays bounded; a skeleton met again is edited again
    }
    if work.done.insert(key) {
        edit_list(&g, DELETIONS, &mut work.edits);
        for &e in &work.edits {
            work.hashes.push(hashed.hash_after(e));
        }
        if work.hashes.len() >= BATCH {
            sink.add(&mut work.hashes);
        }
    }
    let comps = component_count(&g);
    let rings = g.bonds() + comps - g.atoms();
    let fit = |v: usize, what: &str| {
        u16::try_from(v).map_err(|_| format!("{v} {what}: an analog index holds at most 65,535"))
    };
    Ok((
        key,
        wl,
        [
            fit(comps, "components")?,
            fit(g.atoms(), "atoms")?,
            fit(rings, "rings")?,
        ],
    ))
}

/// An open analog index (memory-mapped, every file checked against its checksum at open).
#[derive(Debug)]
pub struct AnalogIndex {
    dir: PathBuf,
    header: IndexHeader,
    keys: Option<Mmap>,
    shapes: Option<Mmap>,
    offsets: Option<Mmap>,
    positions: Option<Mmap>,
    wl: Option<Mmap>,
    dels: Deletions<Mmap>,
    /// per top 16 bits of a key, the first skeleton with those bits (65,537 entries)
    prefix: Vec<u32>,
    /// the same for the WL hashes
    wl_prefix: Vec<u32>,
    /// bit `h >> (64 - wl_bitmap_bits)` set for each WL hash `h` (in memory, a first filter
    /// before the binary search)
    wl_bitmap: Vec<u64>,
    /// log2 of the bitmap's bits ([`bitmap_bits`])
    wl_bitmap_bits: u32,
    grids: HashMap<usize, Grid>,
}

impl AnalogIndex {
    /// Opens the analog index of `store`; `NoIndex` when its manifest lists none, `BadIndex`
    /// (naming the file) when a file is missing, of the wrong size, fails its checksum or
    /// does not fit the store.
    pub fn open_in(store: &dyn StoreFiles) -> Result<AnalogIndex, AnalogError> {
        let dir = store.path().to_path_buf();
        let listed = &store.manifest().files;
        if !listed.contains_key(HEADER_FILE) {
            return Err(AnalogError::NoIndex(dir));
        }
        let header_path = dir.join(HEADER_FILE);
        let bad = |path: &Path, reason: String| AnalogError::BadIndex {
            path: path.to_path_buf(),
            reason,
        };
        store.verify_file(HEADER_FILE)?;
        let text = read_all(store, HEADER_FILE)?;
        let header: IndexHeader =
            serde_json::from_slice(&text).map_err(|e| bad(&header_path, e.to_string()))?;
        if header.format != FORMAT_NAME
            || header.version != FORMAT_VERSION
            || header.wl_rounds != ROUNDS
        {
            return Err(bad(
                &header_path,
                format!(
                    "format {:?} version {} (WL rounds {}), this build reads {FORMAT_NAME:?} \
                     version {FORMAT_VERSION} (WL rounds {ROUNDS})",
                    header.format, header.version, header.wl_rounds
                ),
            ));
        }
        let n = store.len() as u64;
        let s = header.skeletons;
        if header.molecules != n
            || header.indexed + header.failed != n
            || s > header.indexed
            || (s == 0) != (header.indexed == 0)
        {
            return Err(bad(
                &header_path,
                format!(
                    "{} molecules ({} indexed + {} failed) in {s} skeletons do not fit a store of \
                     {n} molecules",
                    header.molecules, header.indexed, header.failed
                ),
            ));
        }
        let want = |name: &str| -> u64 {
            match name {
                KEYS_FILE => 16 * s,
                SHAPES_FILE => 6 * s,
                OFFSETS_FILE => 4 * (s + 1),
                POSITIONS_FILE => 4 * header.indexed,
                WL_FILE => 8 * header.wl_hashes,
                _ => u64::MAX,
            }
        };
        let mut maps: HashMap<&str, Option<Mmap>> = HashMap::new();
        for name in DATA_FILES {
            let path = dir.join(name);
            let (Some(h), Some(m)) = (header.files.get(name), listed.get(name)) else {
                return Err(bad(
                    &path,
                    "not listed in the header and the manifest".into(),
                ));
            };
            if h != m || (want(name) != u64::MAX && h.bytes != want(name)) {
                return Err(bad(
                    &path,
                    format!(
                        "{} bytes ({}) in the header, {} ({}) in the manifest, {} expected",
                        h.bytes,
                        h.xxh3,
                        m.bytes,
                        m.xxh3,
                        want(name)
                    ),
                ));
            }
            store.verify_file(name)?;
            if name == FAILED_FILE {
                continue;
            }
            let file = store.file(name)?;
            let map = if h.bytes == 0 {
                None
            } else {
                // SAFETY: index files are written once, renamed into place, then only read;
                // the store checked this file's size and checksum just now.
                Some(unsafe { file.map() }.map_err(|e| AnalogError::io(&path, e))?)
            };
            maps.insert(name, map);
        }
        let mut take = |name| maps.remove(name).flatten();
        let dels_path = dir.join(DELETIONS_FILE);
        let dels = take(DELETIONS_FILE)
            .ok_or_else(|| "empty".to_string())
            .and_then(Deletions::from_bytes)
            .map_err(|why| bad(&dels_path, why))?;
        let index = AnalogIndex {
            keys: take(KEYS_FILE),
            shapes: take(SHAPES_FILE),
            offsets: take(OFFSETS_FILE),
            positions: take(POSITIONS_FILE),
            wl: take(WL_FILE),
            dels,
            prefix: Vec::new(),
            wl_prefix: Vec::new(),
            wl_bitmap: Vec::new(),
            wl_bitmap_bits: BITMAP_MIN_BITS,
            grids: HashMap::new(),
            header,
            dir,
        };
        index.finish_open()
    }

    /// Checks the order and offsets, and builds the prefix table and the distance grids.
    fn finish_open(mut self) -> Result<AnalogIndex, AnalogError> {
        let s = self.len();
        let mut prefix = vec![0u32; (1 << 16) + 1];
        let mut shapes: HashMap<usize, Vec<(usize, usize)>> = HashMap::new();
        let mut prev = None;
        for i in 0..s {
            let key = self.key(i);
            if prev.is_some_and(|p| p >= key) {
                return Err(AnalogError::BadIndex {
                    path: self.dir.join(KEYS_FILE),
                    reason: format!("keys not strictly ascending at skeleton {i}"),
                });
            }
            prev = Some(key);
            prefix[(key >> 112) as usize + 1] += 1;
            let [c, a, r] = self.shape(i);
            shapes
                .entry(c as usize)
                .or_default()
                .push((a as usize, r as usize));
        }
        for t in 1..prefix.len() {
            prefix[t] += prefix[t - 1];
        }
        let mut at = 0;
        for i in 0..=s {
            let o = self.offset(i);
            if o < at || (i == 0 && o != 0) || (i == s && o as u64 != self.header.indexed) {
                return Err(AnalogError::BadIndex {
                    path: self.dir.join(OFFSETS_FILE),
                    reason: format!("offset {o} of skeleton {i} out of order"),
                });
            }
            if i < s && o == self.offset(i + 1) {
                return Err(AnalogError::BadIndex {
                    path: self.dir.join(OFFSETS_FILE),
                    reason: format!("skeleton {i} has no molecule"),
                });
            }
            at = o;
        }
        let mut wl_prefix = vec![0u32; (1 << 16) + 1];
        let mut prev = None;
        for i in 0..self.header.wl_hashes as usize {
            let h = self.wl_at(i);
            if prev.is_some_and(|p| p >= h) {
                return Err(AnalogError::BadIndex {
                    path: self.dir.join(WL_FILE),
                    reason: format!("hashes not strictly ascending at {i}"),
                });
            }
            prev = Some(h);
            wl_prefix[(h >> 48) as usize + 1] += 1;
        }
        let bits = bitmap_bits(self.header.wl_hashes);
        self.wl_bitmap_bits = bits;
        let mut bitmap = vec![0u64; 1 << (bits - 6)];
        for i in 0..self.header.wl_hashes as usize {
            let b = (self.wl_at(i) >> (64 - bits)) as usize;
            bitmap[b / 64] |= 1 << (b % 64);
        }
        self.wl_bitmap = bitmap;
        for t in 1..wl_prefix.len() {
            wl_prefix[t] += wl_prefix[t - 1];
        }
        self.wl_prefix = wl_prefix;
        let n = self.header.molecules;
        if let Some(p) = (0..self.header.indexed as usize)
            .map(|j| self.position_at(j))
            .find(|&p| u64::from(p) >= n)
        {
            return Err(AnalogError::BadIndex {
                path: self.dir.join(POSITIONS_FILE),
                reason: format!("position {p} outside a store of {n} molecules"),
            });
        }
        self.prefix = prefix;
        self.grids = shapes
            .into_iter()
            .map(|(c, points)| (c, Grid::new(&points)))
            .collect();
        Ok(self)
    }

    /// The header.
    pub fn header(&self) -> &IndexHeader {
        &self.header
    }

    /// Number of distinct skeletons.
    pub fn len(&self) -> usize {
        self.header.skeletons as usize
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn bytes(m: &Option<Mmap>) -> &[u8] {
        m.as_deref().unwrap_or(&[])
    }

    /// Skeleton `i`'s canonical key.
    pub fn key(&self, i: usize) -> u128 {
        let k = Self::bytes(&self.keys);
        u128::from_le_bytes(k[16 * i..16 * i + 16].try_into().expect("16 bytes"))
    }

    /// Skeleton `i`'s components, atoms and rings.
    pub fn shape(&self, i: usize) -> [u16; 3] {
        let b = &Self::bytes(&self.shapes)[6 * i..6 * i + 6];
        let v = |j: usize| u16::from_le_bytes([b[2 * j], b[2 * j + 1]]);
        [v(0), v(1), v(2)]
    }

    fn offset(&self, i: usize) -> usize {
        let b = Self::bytes(&self.offsets);
        u32::from_le_bytes(b[4 * i..4 * i + 4].try_into().expect("4 bytes")) as usize
    }

    fn position_at(&self, j: usize) -> u32 {
        let b = Self::bytes(&self.positions);
        u32::from_le_bytes(b[4 * j..4 * j + 4].try_into().expect("4 bytes"))
    }

    fn wl_at(&self, i: usize) -> u64 {
        let b = Self::bytes(&self.wl);
        u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes"))
    }

    /// The skeleton with canonical key `key`, if the index has it.
    pub fn find(&self, key: u128) -> Option<usize> {
        if self.is_empty() {
            return None;
        }
        let t = (key >> 112) as usize;
        let (mut lo, mut hi) = (self.prefix[t] as usize, self.prefix[t + 1] as usize);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.key(mid).cmp(&key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// The store positions of skeleton `i`'s molecules, ascending.
    pub fn positions(&self, i: usize) -> Vec<u32> {
        (self.offset(i)..self.offset(i + 1))
            .map(|j| self.position_at(j))
            .collect()
    }
}

impl crate::union::Summary for AnalogIndex {
    fn wl_count(&self) -> u64 {
        self.header.wl_hashes
    }

    fn each_wl(&self, f: &mut dyn FnMut(u64)) {
        (0..self.header.wl_hashes as usize).for_each(|i| f(self.wl_at(i)));
    }

    fn grids(&self) -> &HashMap<usize, Grid> {
        &self.grids
    }
}

impl Library for AnalogIndex {
    fn contains(&self, key: u128) -> bool {
        self.find(key).is_some()
    }

    fn bound(&self, components: usize, atoms: usize, rings: usize) -> Option<usize> {
        self.grids.get(&components).map(|g| g.get(atoms, rings))
    }

    fn insertion_may_reach(&self, wl: u64) -> bool {
        self.dels.may_contain(wl)
    }

    fn may_contain(&self, wl: u64) -> bool {
        let b = (wl >> (64 - self.wl_bitmap_bits)) as usize;
        if !self
            .wl_bitmap
            .get(b / 64)
            .is_some_and(|w| w & (1 << (b % 64)) != 0)
        {
            return false;
        }
        let t = (wl >> 48) as usize;
        let (mut lo, mut hi) = (self.wl_prefix[t] as usize, self.wl_prefix[t + 1] as usize);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.wl_at(mid).cmp(&wl) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return true,
            }
        }
        false
    }
}

fn read_all(store: &dyn StoreFiles, name: &str) -> Result<Vec<u8>, AnalogError> {
    let f = store.file(name)?;
    let path = store.path().join(name);
    let len = f.metadata().map_err(|e| AnalogError::io(&path, e))?.len();
    let mut out = vec![0u8; len as usize];
    f.read_exact_at(&mut out, 0)
        .map_err(|e| AnalogError::io(&path, e))?;
    Ok(out)
}

#[cfg(test)]
mod file_list_tests {
    use super::{DATA_FILES, HEADER_FILE};

    #[test]
    fn the_store_knows_every_file_of_the_index() {
        // the store's overwrite rule replaces a store holding exactly these files
        let mut ours: Vec<&str> = DATA_FILES.iter().copied().chain([HEADER_FILE]).collect();
        let mut listed = molsift_store::layout::ANALOG_FILES.to_vec();
        ours.sort_unstable();
        listed.sort_unstable();
        assert_eq!(ours, listed);
    }
}

#[cfg(test)]
mod rebuild_tests {
    use super::*;
    use molsift_store::{FingerprintSpec, Store, StoreWriter, Verify};

    #[test]
    fn a_rebuilt_index_retires_the_files_of_an_earlier_format() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        let spec = FingerprintSpec::new("test", 2048, serde_json::json!({})).unwrap();
        let mut w = StoreWriter::create(&path, spec, false).unwrap();
        for (i, smi) in ["CCO", "CC(=O)Nc1ccccc1", "c1ccccc1", "OC1CCCC1"]
            .iter()
            .enumerate()
        {
            w.add_molecule(&format!("m{i}"), smi, i as u64 + 1, &[i as u32])
                .unwrap();
        }
        w.finish().unwrap();
        // an index of format 3 left its Bloom filter, listed in the manifest
        let old = ANALOG_RETIRED_FILES[0];
        std::fs::write(path.join(old), b"format 3").unwrap();
        let store = Store::open(&path, Verify::Full).unwrap();
        let entry = FileEntry {
            bytes: 8,
            xxh3: checksum(b"format 3"),
        };
        store.register_files(vec![(old.into(), entry)]).unwrap();
        let store = Store::open(&path, Verify::Full).unwrap();
        assert!(store.manifest().files.contains_key(old));
        write_index(&store, 2, 100_000, &|_| {}).unwrap();
        let store = Store::open(&path, Verify::Full).unwrap();
        assert!(!store.manifest().files.contains_key(old));
        assert!(!path.join(old).exists());
        assert!(store.manifest().files.contains_key(DELETIONS_FILE));
        let index = AnalogIndex::open_in(&store).unwrap();
        // ethanol less its oxygen (ethane) is one deletion away from a library skeleton
        let ethane = crate::skeleton_of_smiles("CC").unwrap();
        assert!(index.insertion_may_reach(Graph::new(&ethane).hash()));
    }
}
