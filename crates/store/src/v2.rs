//! Store format version 2, the one store: the same molecules as version 1 in about a tenth of
//! the bytes, with an exact-match index. Written from any [`Molecules`] in a store order
//! ([`write_store`]: ingest's parts merged as sorted runs, [`crate::runs`]) or from a finished
//! version-1 store ([`upgrade`]: what `molsift upgrade` runs), read by [`StoreV2`].
//!
//! Molecules are reordered: store position `i` is the `i`-th canonical SMILES in byte order,
//! so that neighbouring SMILES share prefixes and compress well (4.2 bytes per MOSES molecule
//! against 36.9 as text) and duplicates sit side by side. Input order is kept by a
//! permutation (`input_order.packed`: store position -> input rank), and ids and source lines
//! are stored in input order, where real ids are sequential and compress to almost nothing.
//!
//! | file | content |
//! |---|---|
//! | `manifest.json` | as version 1, `format_version` 2; every other file's size and XXH3 |
//! | `smiles.blocks` | canonical SMILES in store order ([`crate::textblocks`]) |
//! | `ids.blocks` | ids in input order ([`crate::textblocks`], numbered kinds allowed) |
//! | `input_order.packed` | store position -> input rank ([`crate::packed`]) |
//! | `source_lines.packed` | input rank `r` -> the 1-based line of its record minus `r` |
//! | `smiles.lookup` | canonical SMILES -> block of `smiles.blocks` ([`crate::lookup`]) |
//! | `ids.lookup` | id -> block of `ids.blocks`; absent when the ids are one prefix and ascending numbers (then a binary search over the blocks finds them) |
//! | `planes.*` | the fingerprints as compressed bit planes ([`crate::planes`]) |
//! | `rejects.tsv` | as version 1 |
//! | `duplicates.tsv` | as version 1 (only after `--dedupe`), kept positions in version-2 store order |

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use memmap2::Mmap;
use molsift_iostats::CountedFile;

use crate::checksum::to_hex;
use crate::lookup::{build_index, key_hash, LookupIndex, LookupOptions};
use crate::manifest::FileEntry;
use crate::packed::Packed;
use crate::planes::{self, Planes, PlanesHeader};
use crate::source::Molecules;
use crate::textblocks::{write_text_blocks, Block, TextBlocks, TextOptions};
use crate::{replace, Manifest, Store, StoreError, FORMAT_NAME};

/// The version this module writes and reads.
pub const VERSION: u32 = 2;
/// SMILES column.
pub const SMILES: &str = "smiles.blocks";
/// Ids column (input order).
pub const IDS: &str = "ids.blocks";
/// Store position -> input rank.
pub const INPUT_ORDER: &str = "input_order.packed";
/// Input rank -> source line minus the rank.
pub const SOURCE_LINES: &str = "source_lines.packed";
/// SMILES -> block.
pub const SMILES_LOOKUP: &str = "smiles.lookup";
/// Id -> block (only for ids that are not one prefix and ascending numbers).
pub const IDS_LOOKUP: &str = "ids.lookup";
/// Rejected records, as version 1.
pub const REJECTS: &str = crate::layout::REJECTS;

/// Every file a version-2 store must have (besides its manifest; `ids.lookup` is optional).
pub const REQUIRED: [&str; 11] = [
    SMILES,
    IDS,
    INPUT_ORDER,
    SOURCE_LINES,
    SMILES_LOOKUP,
    REJECTS,
    planes::HEADER_FILE,
    planes::CODES_FILE,
    planes::CHECKPOINTS_FILE,
    planes::DATA_FILE,
    planes::ORDER_FILE,
];

/// What [`upgrade`] does besides its defaults.
#[derive(Debug, Clone)]
pub struct UpgradeOptions {
    /// replace a store already at the output
    pub overwrite: bool,
    /// threads compressing text blocks
    pub threads: usize,
    /// zstd level of the text columns
    pub level: i32,
    /// the exact-match index's options (check bits; hash bits only for tests)
    pub lookup: LookupOptions,
    /// memory for plane building (bytes of payload per pass)
    pub plane_budget: usize,
}

impl Default for UpgradeOptions {
    fn default() -> Self {
        UpgradeOptions {
            overwrite: false,
            threads: 1,
            level: crate::textblocks::DEFAULT_LEVEL,
            lookup: LookupOptions::default(),
            plane_budget: 1 << 30,
        }
    }
}

/// Writes the version-2 form of the version-1 store `v1` at `out` (built under a temporary
/// name and moved into place when complete: a killed upgrade leaves nothing that opens).
pub fn upgrade(v1: &Store, out: &Path, opts: &UpgradeOptions) -> Result<Manifest, StoreError> {
    into_place(out, opts, |dir| {
        let order = store_order(v1)?;
        write_selection(v1, &order, None, dir, opts)
    })
}

/// Writes at `out` the one store of the molecules `src` in the store order `order` (store
/// position -> input rank; from [`crate::runs::PartRuns::merge`] for ingest's parts), built
/// under a temporary name and moved into place when complete.
pub fn write_store<M: Molecules + ?Sized>(
    src: &M,
    order: &[u32],
    out: &Path,
    opts: &UpgradeOptions,
) -> Result<Manifest, StoreError> {
    if order.len() != src.len() {
        return Err(StoreError::Invalid(format!(
            "a store order of {} positions for {} molecules",
            order.len(),
            src.len()
        )));
    }
    into_place(out, opts, |dir| {
        write_selection(src, order, None, dir, opts)
    })
}

/// `write` into a new temporary sibling of `out`, then moved into place (an existing `out`
/// only with `opts.overwrite`); the temporary directory is removed on failure.
fn into_place(
    out: &Path,
    opts: &UpgradeOptions,
    write: impl FnOnce(&Path) -> Result<Manifest, StoreError>,
) -> Result<Manifest, StoreError> {
    if molsift_iostats::metadata(out).is_ok() {
        if !opts.overwrite {
            return Err(StoreError::Exists(out.to_path_buf()));
        }
        replace::check_replaceable(out)?;
    }
    let parent = out.parent().unwrap_or(Path::new(""));
    if !parent.as_os_str().is_empty() && !parent.is_dir() {
        return Err(StoreError::Invalid(format!(
            "{}: output directory does not exist",
            parent.display()
        )));
    }
    replace::sweep_leftovers(parent, out.file_name().and_then(|n| n.to_str()));
    let tmp = replace::temporary_sibling(out, "tmp");
    std::fs::create_dir(&tmp).map_err(|e| StoreError::io(&tmp, e))?;
    let result = write(&tmp).and_then(|m| {
        replace::sync_dir(&tmp)?;
        replace::swap_into_place(&tmp, out, opts.overwrite)?;
        Ok(m)
    });
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result
}

/// The store order of the version-1 store `v1`: its positions (input ranks) sorted by
/// canonical SMILES in byte order, stable (input order among duplicates). Position `i` of the
/// one store written from `v1` holds `v1`'s molecule `order[i]`.
pub fn store_order(v1: &Store) -> Result<Vec<u32>, StoreError> {
    let n = v1.len();
    let mut order: Vec<u32> = (0..n as u32).collect();
    // every entry read (and checked) once, before the sort compares them: 16 bytes a molecule
    // for the slices, against a checked read per comparison (a quarter of an upgrade's time)
    let smiles = (0..n)
        .map(|i| v1.smiles(i).map(str::as_bytes))
        .collect::<Result<Vec<&[u8]>, _>>()?;
    order.sort_by(|&a, &b| smiles[a as usize].cmp(smiles[b as usize]));
    Ok(order)
}

/// Where a set of `shards` shards cuts the store `order` of `v1`: `shards + 1` ascending
/// positions, from 0 to `order.len()`, shard `s` holding positions `bounds[s]..bounds[s + 1]`.
/// The cuts are as even as the molecules allow: a cut never separates equal canonical SMILES
/// (each is moved forward to the next change), so a SMILES lives in one shard and a shard may
/// be empty.
pub fn shard_bounds<M: Molecules + ?Sized>(
    v1: &M,
    order: &[u32],
    shards: usize,
) -> Result<Vec<usize>, StoreError> {
    if shards == 0 {
        return Err(StoreError::Invalid("a set needs at least one shard".into()));
    }
    let n = order.len();
    let mut bounds = vec![0usize];
    for s in 1..shards {
        let mut cut = (n * s / shards).max(*bounds.last().unwrap_or(&0));
        while cut > 0
            && cut < n
            && v1.smiles(order[cut] as usize)? == v1.smiles(order[cut - 1] as usize)?
        {
            cut += 1;
        }
        bounds.push(cut);
    }
    bounds.push(n);
    Ok(bounds)
}

/// Which shard of a set a written store is.
#[derive(Debug, Clone, Copy)]
pub struct ShardOf {
    /// its number, from 0
    pub index: usize,
    /// shards in the set
    pub shards: usize,
    /// the set position of its first molecule (its positions are the set's minus this)
    pub offset: u64,
}

/// Writes at `dir` (a new directory) one shard of a store set: the one store of `v1`'s
/// molecules at store positions `range` of `order` (from [`store_order`]), a complete store of
/// its own. Its input order is the order of those molecules in `v1`; its counts are its own
/// (the set's rejects and `--dedupe` list live beside the shards, see [`plan_set`]).
pub fn write_shard<M: Molecules + ?Sized>(
    v1: &M,
    order: &[u32],
    range: std::ops::Range<usize>,
    shard: ShardOf,
    dir: &Path,
    opts: &UpgradeOptions,
) -> Result<Manifest, StoreError> {
    if range.end > order.len() || range.start > range.end {
        return Err(StoreError::Invalid(format!(
            "shard range {range:?} of a store of {} molecules",
            order.len()
        )));
    }
    std::fs::create_dir(dir).map_err(|e| StoreError::io(dir, e))?;
    write_selection(v1, &order[range], Some(shard), dir, opts)
}

/// A store set's plan from `src` in the store order `order`: where [`shard_bounds`] cuts it
/// into `shards`, and the set's `duplicates.tsv` (after `--dedupe`: as the one store's, kept
/// positions in set positions) written into the directory `dir` when a molecule was left out.
/// Each shard is then written by [`write_shard`], on whichever worker or rank takes it.
pub fn plan_set<M: Molecules + ?Sized>(
    src: &M,
    order: &[u32],
    shards: usize,
    dir: &Path,
) -> Result<Vec<usize>, StoreError> {
    let bounds = shard_bounds(src, order, shards)?;
    if let Some(dups) = src.duplicates(order)? {
        write(dir, crate::duplicates::FILE, &dups)?;
    }
    Ok(bounds)
}

/// Store position by input rank: the inverse of the store order `order`.
pub(crate) fn positions_of(order: &[u32]) -> Vec<u32> {
    let mut position = vec![0u32; order.len()];
    for (p, &r) in order.iter().enumerate() {
        position[r as usize] = p as u32;
    }
    position
}

/// The one store (shard None: `sel` is the whole store order) or one shard of a set (`sel` its
/// part of the store order) written into `dir`.
pub fn write_selection<M: Molecules + ?Sized>(
    v1: &M,
    sel: &[u32],
    shard: Option<ShardOf>,
    dir: &Path,
    opts: &UpgradeOptions,
) -> Result<Manifest, StoreError> {
    let n = sel.len();
    let spec = v1.spec().clone();
    v1.check_columns()?; // what is copied is what was written
    let smiles = |i: u32| v1.smiles(i as usize).map(str::as_bytes);
    // a shard's molecules in input order: `sorted[r]` is the input rank in `v1` of the shard's
    // local input rank `r` (the whole store's are the identity: nothing held)
    let sorted: Option<Vec<u32>> = shard.map(|_| {
        let mut r = sel.to_vec();
        r.sort_unstable();
        r
    });
    let ranks = |r: usize| -> usize { sorted.as_ref().map_or(r, |s| s[r] as usize) };
    let local_rank = |global: u32| -> u64 {
        match &sorted {
            None => u64::from(global),
            Some(s) => s.binary_search(&global).unwrap_or(0) as u64,
        }
    };
    let text = |numbered: bool| TextOptions {
        level: opts.level,
        threads: opts.threads,
        numbered,
        ..TextOptions::default()
    };
    let smiles_opts = text(false);
    // the SMILES column (its dictionary trained on one thread) beside everything else
    let (column, rest) = std::thread::scope(|s| {
        let column = s.spawn(|| {
            write_text_blocks(
                &dir.join(SMILES),
                n,
                |i, out| out.extend_from_slice(smiles(sel[i]).unwrap_or(b"")),
                &smiles_opts,
            )
        });
        let rest = (|| -> Result<u64, StoreError> {
            write_text_blocks(
                &dir.join(IDS),
                n,
                |r, out| out.extend_from_slice(v1.id(ranks(r)).map(str::as_bytes).unwrap_or(b"")),
                &text(true),
            )?;
            write(
                dir,
                INPUT_ORDER,
                &crate::packed::encode_by(n, |i| local_rank(sel[i])),
            )?;
            write(
                dir,
                SOURCE_LINES,
                &crate::packed::encode_by(n, |r| v1.source_line(ranks(r)) - r as u64),
            )?;
            // exact-match index: the first block of each distinct SMILES
            let block = smiles_opts.block;
            let mut entries = Vec::with_capacity(n);
            let mut prev: Option<&[u8]> = None;
            let mut duplicates = 0u64;
            for (i, &r) in sel.iter().enumerate() {
                let s = smiles(r)?;
                if prev != Some(s) {
                    entries.push((key_hash(s, opts.lookup.hash_bits), (i / block) as u64));
                } else {
                    duplicates += 1;
                }
                prev = Some(s);
            }
            let blocks = n.div_ceil(block) as u64;
            write(
                dir,
                SMILES_LOOKUP,
                &build_index(entries, blocks, &opts.lookup),
            )?;
            let ids = (0..n).map(|r| v1.id(ranks(r)));
            if !ids_ascending(ids)? {
                let entries = (0..n)
                    .map(|r| {
                        Ok((
                            key_hash(v1.id(ranks(r))?.as_bytes(), opts.lookup.hash_bits),
                            (r / block) as u64,
                        ))
                    })
                    .collect::<Result<Vec<_>, StoreError>>()?;
                write(dir, IDS_LOOKUP, &build_index(entries, blocks, &opts.lookup))?;
            }
            planes::write_planes(
                dir,
                spec.bits,
                n,
                |i| u32::from(v1.popcount(sel[i] as usize)),
                |i, out| out.copy_from_slice(&v1.fingerprint(sel[i] as usize)[..out.len()]),
                opts.plane_budget,
            )?;
            Ok(duplicates)
        })();
        (column.join().expect("the SMILES column's thread"), rest)
    });
    column?;
    let duplicates = rest?;
    let mut counts = v1.counts();
    if shard.is_none() {
        write(dir, REJECTS, &v1.rejects()?)?;
        if let Some(dups) = v1.duplicates(sel)? {
            write(dir, crate::duplicates::FILE, &dups)?;
        }
    } else {
        // a shard's records are its molecules; the set keeps the rejects and dropped ones
        write(dir, REJECTS, crate::rejects::HEADER.as_bytes())?;
        counts = crate::Counts {
            records_in: n as u64,
            molecules: n as u64,
            rejected: 0,
            duplicates: Some(duplicates),
            dropped: 0,
        };
    }
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(|e| StoreError::io(dir, e))? {
        let entry = entry.map_err(|e| StoreError::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let bytes = std::fs::read(entry.path()).map_err(|e| StoreError::io(entry.path(), e))?;
        files.insert(
            name,
            FileEntry {
                bytes: bytes.len() as u64,
                xxh3: to_hex(xxhash_rust::xxh3::xxh3_64(&bytes)),
            },
        );
    }
    let mut provenance = v1.provenance();
    if let (Some(p), Some(s)) = (provenance.as_object_mut(), shard) {
        p.insert(
            "shard".into(),
            serde_json::json!({"index": s.index, "shards": s.shards, "offset": s.offset}),
        );
    }
    let manifest = Manifest {
        format: FORMAT_NAME.to_string(),
        format_version: VERSION,
        created_by: format!("molsift {}", env!("CARGO_PKG_VERSION")),
        fingerprint: spec,
        counts,
        provenance,
        files,
        checksum: String::new(),
    }
    .sealed();
    manifest.write(dir)?;
    Ok(manifest)
}

/// `duplicates.tsv` of a version-1 store with its kept positions (input ranks there) turned
/// into version-2 store positions.
pub(crate) fn renumber_duplicates(v1: &Store, order: &[u32]) -> Result<Vec<u8>, StoreError> {
    let path = v1.path().join(crate::duplicates::FILE);
    v1.verify_file(crate::duplicates::FILE)?;
    let text = std::fs::read_to_string(&path).map_err(|e| StoreError::io(&path, e))?;
    let position = positions_of(order);
    let mut out = String::with_capacity(text.len());
    for (k, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split('\t').collect();
        if k == 0 {
            out.push_str(crate::duplicates::HEADER);
            continue;
        }
        let kept = fields.get(2).and_then(|f| f.parse::<usize>().ok());
        let Some(&p) = kept.and_then(|r| position.get(r)) else {
            return Err(StoreError::Inconsistent {
                path,
                reason: format!("line {}: no kept position in the store", k + 1),
            });
        };
        let (line_no, id, kept_id) = (fields[0], fields[1], fields.get(3).unwrap_or(&""));
        out.push_str(&format!("{line_no}\t{id}\t{p}\t{kept_id}\n"));
    }
    Ok(out.into_bytes())
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
    let path = dir.join(name);
    molsift_iostats::write_file(&path, bytes, true).map_err(|e| StoreError::io(&path, e))
}

/// An id's prefix and number when it is "prefix + decimal number" (no leading zeros unless
/// every id has the same digit count).
fn numbered(id: &str) -> Option<(&str, u64, usize)> {
    let digits = id.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 19 {
        return None;
    }
    let (prefix, d) = id.split_at(id.len() - digits);
    Some((prefix, d.parse().ok()?, d.len()))
}

/// True when every id is the same prefix and a number, the numbers strictly ascending in input
/// order and written with one width or without leading zeros (then the ids column needs no
/// hash index).
fn ids_ascending<'a>(
    ids: impl Iterator<Item = Result<&'a str, StoreError>>,
) -> Result<bool, StoreError> {
    let mut prev: Option<(String, u64, usize)> = None;
    let mut fixed_width = true;
    let mut no_zeros = true;
    for id in ids {
        let id = id?;
        let Some((prefix, v, width)) = numbered(id) else {
            return Ok(false);
        };
        let digits = &id[prefix.len()..];
        no_zeros &= digits == "0" || !digits.starts_with('0');
        if let Some((p, pv, pw)) = &prev {
            if p != prefix || v <= *pv {
                return Ok(false);
            }
            fixed_width &= *pw == width;
        }
        prev = Some((prefix.to_string(), v, width));
    }
    Ok(fixed_width || no_zeros)
}

/// A file's checksum check: Ok, or the expected and the found checksum.
type Checked = Result<(), (String, String)>;

/// An open version-2 store.
///
/// Every file is opened once, through one handle on the store's directory, and mapped at
/// open: a reader sees one generation of the store while `upgrade --overwrite` swaps a new one
/// into place. Each file's checksum is checked against the manifest at its first use in the
/// process, before any answer that depends on it is given (the permutation, the exact-match
/// indexes, the text columns, the planes' header): a damaged file, or the same file from
/// another store, is an error naming it, never a wrong id or a false "absent".
pub struct StoreV2 {
    path: PathBuf,
    /// the directory's handle (every file was opened through it; index writers lock it)
    dir: CountedFile,
    manifest: Manifest,
    smiles: TextBlocks,
    ids: TextBlocks,
    input_order: Mmap,
    source_lines: Option<Mmap>,
    smiles_lookup: Mmap,
    ids_lookup: Option<Mmap>,
    planes_header: PlanesHeader,
    planes_maps: Vec<Option<Mmap>>,
    /// every file the manifest lists, opened through the directory handle at open
    files: BTreeMap<String, CountedFile>,
    /// input rank -> store position, built on first use
    inverse: OnceLock<Result<Vec<u32>, String>>,
    /// store position -> its slot in the planes, built on first use
    slots: OnceLock<Result<Vec<u32>, String>>,
    /// per file the manifest lists: its checksum checked (once per process): Ok, or why not
    /// (the expected and the found checksum)
    checked: BTreeMap<String, OnceLock<Checked>>,
}

impl std::fmt::Debug for StoreV2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreV2").field("path", &self.path).finish()
    }
}

fn map_file(file: &CountedFile, path: &Path, want: u64) -> Result<Option<Mmap>, StoreError> {
    let found = file.metadata().map_err(|e| StoreError::io(path, e))?.len();
    if found != want {
        return Err(StoreError::WrongSize {
            path: path.to_path_buf(),
            expected: want,
            found,
        });
    }
    if found == 0 {
        return Ok(None);
    }
    // SAFETY: store files are read-only once written; the size was checked just now.
    unsafe { file.map() }
        .map(Some)
        .map_err(|e| StoreError::io(path, e))
}

impl StoreV2 {
    /// Opens the version-2 store at `path`: the manifest and its checksum, every file present
    /// with its size, every header; with `verify` also every file's checksum. An open that
    /// races with a swap of the store (`upgrade --overwrite`) starts again on the new one.
    pub fn open(path: &Path, verify: bool) -> Result<StoreV2, StoreError> {
        let store = crate::reader::open_retrying(|| Self::open_once(path))?;
        if verify {
            store.verify_all()?;
        }
        Ok(store)
    }

    fn open_once(path: &Path) -> Result<StoreV2, StoreError> {
        let dir = CountedFile::open_dir(path).map_err(|e| match e.raw_os_error() {
            Some(libc::ENOTDIR) => StoreError::NotAStore(path.to_path_buf()),
            _ => StoreError::io(path, e),
        })?;
        let replaced = |e: StoreError| crate::reader::replaced_or(path, &dir, e);
        let manifest = Manifest::read_in(&dir, path).map_err(replaced)?;
        if manifest.format_version != VERSION {
            return Err(StoreError::UnsupportedVersion {
                path: path.to_path_buf(),
                found: manifest.format_version.to_string(),
                supported: VERSION,
            });
        }
        let c = manifest.counts;
        if !c.add_up() {
            return Err(StoreError::Inconsistent {
                path: path.join(crate::layout::MANIFEST),
                reason: format!(
                    "records in ({}) != molecules ({}) + rejected ({}) + duplicates left out ({})",
                    c.records_in, c.molecules, c.rejected, c.dropped
                ),
            });
        }
        for name in REQUIRED {
            if !manifest.files.contains_key(name) {
                return Err(StoreError::BadManifest {
                    path: path.join(crate::layout::MANIFEST),
                    reason: format!("no entry for {name}"),
                });
            }
        }
        // every file listed: opened once through the directory, present, with its size (a
        // truncated file shows at once), and mapped
        let mut files = BTreeMap::new();
        let mut maps = BTreeMap::new();
        for (name, entry) in &manifest.files {
            let p = path.join(name);
            let f = CountedFile::open_at(&dir, name, libc::O_RDONLY, 0)
                .map_err(|e| replaced(StoreError::io(&p, e)))?;
            maps.insert(name.clone(), map_file(&f, &p, entry.bytes)?);
            files.insert(name.clone(), f);
        }
        let mut m = |name: &str| -> Option<Mmap> { maps.remove(name).flatten() };
        let need = |map: Option<Mmap>, name: &str| -> Result<Mmap, StoreError> {
            map.ok_or_else(|| StoreError::Inconsistent {
                path: path.join(name),
                reason: "empty".into(),
            })
        };
        let smiles = TextBlocks::open(&path.join(SMILES), m(SMILES))?;
        let ids = TextBlocks::open(&path.join(IDS), m(IDS))?;
        let input_order = need(m(INPUT_ORDER), INPUT_ORDER)?;
        let source_lines = m(SOURCE_LINES);
        let smiles_lookup = need(m(SMILES_LOOKUP), SMILES_LOOKUP)?;
        let ids_lookup = if manifest.files.contains_key(IDS_LOOKUP) {
            Some(need(m(IDS_LOOKUP), IDS_LOOKUP)?)
        } else {
            None
        };
        let header_map = need(m(planes::HEADER_FILE), planes::HEADER_FILE)?;
        let planes_header: PlanesHeader =
            serde_json::from_slice(&header_map).map_err(|e| StoreError::Inconsistent {
                path: path.join(planes::HEADER_FILE),
                reason: e.to_string(),
            })?;
        // stores upgraded before the part masks have none
        let planes_maps = planes::FILES[1..].iter().map(|name| m(name)).collect();
        let checked = manifest
            .files
            .keys()
            .map(|k| (k.clone(), OnceLock::new()))
            .collect();
        let store = StoreV2 {
            path: path.to_path_buf(),
            dir,
            manifest,
            smiles,
            ids,
            input_order,
            source_lines,
            smiles_lookup,
            ids_lookup,
            planes_header,
            planes_maps,
            files,
            inverse: OnceLock::new(),
            slots: OnceLock::new(),
            checked,
        };
        store.check_structure()?;
        Ok(store)
    }

    fn check_structure(&self) -> Result<(), StoreError> {
        let n = self.len();
        let bad = |name: &str, reason: String| StoreError::Inconsistent {
            path: self.path.join(name),
            reason,
        };
        let order = Packed::parse(&self.input_order).map_err(|r| bad(INPUT_ORDER, r))?;
        let lines = Packed::parse(self.source_lines.as_deref().unwrap_or(&[]))
            .map_err(|r| bad(SOURCE_LINES, r))?;
        for (name, got) in [
            (SMILES, self.smiles.len()),
            (IDS, self.ids.len()),
            (INPUT_ORDER, order.len()),
            (SOURCE_LINES, lines.len()),
            (planes::HEADER_FILE, self.planes_header.molecules as usize),
        ] {
            if got != n {
                return Err(bad(name, format!("holds {got} entries, the store {n}")));
            }
        }
        LookupIndex::parse(&self.smiles_lookup, &self.path.join(SMILES_LOOKUP))?;
        if let Some(l) = &self.ids_lookup {
            LookupIndex::parse(l, &self.path.join(IDS_LOOKUP))?;
        }
        self.planes()?;
        Ok(())
    }

    /// The planes (checked structure; each plane is checked against the header's digest
    /// when a search first reads it).
    pub fn planes(&self) -> Result<Planes<'_>, StoreError> {
        let b = |i: usize| self.planes_maps[i].as_deref().unwrap_or(&[]);
        Planes::new(
            &self.path,
            &self.planes_header,
            b(0),
            b(1),
            b(2),
            b(3),
            b(4),
        )
    }

    /// A file the manifest lists, as opened with the store (the same generation as every other
    /// file read from it; the planes' searcher opens its files through this).
    pub fn file(&self, name: &str) -> Result<&CountedFile, StoreError> {
        self.files
            .get(name)
            .ok_or_else(|| StoreError::Inconsistent {
                path: self.path.join(name),
                reason: "not listed in the store's manifest".into(),
            })
    }

    /// Checks `name`'s checksum against the manifest, once per process per file (later calls
    /// give the first answer at once, without allocating: ids and SMILES of every hit pass
    /// here). The bytes are read through the descriptor opened at open: the file the maps show.
    pub fn verify_file(&self, name: &str) -> Result<(), StoreError> {
        let (Some(entry), Some(once)) = (self.manifest.files.get(name), self.checked.get(name))
        else {
            return Err(StoreError::Inconsistent {
                path: self.path.join(name),
                reason: "not listed in the store's manifest".into(),
            });
        };
        let result = match once.get() {
            Some(Ok(())) => return Ok(()),
            Some(r) => r.clone(),
            None => {
                let path = self.path.join(name);
                let sum = crate::reader::checksum_of(self.file(name)?, &path, entry.bytes)?;
                let r = if sum == entry.xxh3 {
                    Ok(())
                } else {
                    Err((entry.xxh3.clone(), sum))
                };
                once.get_or_init(|| r).clone()
            }
        };
        result.map_err(|(expected, found)| StoreError::Corrupted {
            path: self.path.join(name),
            expected,
            found,
        })
    }

    /// Lists files written into the store after it was finished (an index rebuilt by
    /// `molsift index`) in its manifest, atomically; returns the new manifest (this `StoreV2`
    /// keeps the one it opened). Hold [`StoreV2::lock`] meanwhile.
    pub fn register_files(
        &self,
        entries: Vec<(String, crate::FileEntry)>,
    ) -> Result<Manifest, StoreError> {
        crate::reader::register_in(&self.path, &self.dir, &self.manifest, entries, &[])
    }

    /// [`StoreV2::register_files`], the files `retired` (an earlier format's) no longer listed.
    pub fn replace_files(
        &self,
        entries: Vec<(String, crate::FileEntry)>,
        retired: &[&str],
    ) -> Result<Manifest, StoreError> {
        crate::reader::register_in(&self.path, &self.dir, &self.manifest, entries, retired)
    }

    /// An exclusive lock on the store directory, held until the guard is dropped.
    pub fn lock(&self) -> Result<crate::StoreLock<'_>, StoreError> {
        crate::reader::lock_dir(&self.path, &self.dir)
    }

    /// Checks every file's checksum.
    pub fn verify_all(&self) -> Result<(), StoreError> {
        for name in self.manifest.files.keys() {
            self.verify_file(name)?;
        }
        Ok(())
    }

    /// Checks the files `names` (once per process each).
    fn verified(&self, names: &[&str]) -> Result<(), StoreError> {
        names.iter().try_for_each(|n| self.verify_file(n))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Number of molecules.
    pub fn len(&self) -> usize {
        self.manifest.counts.molecules as usize
    }

    /// True when the store holds no molecule.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The SMILES column (its checksum checked first, once per process).
    pub fn smiles_column(&self) -> Result<&TextBlocks, StoreError> {
        self.verify_file(SMILES)?;
        Ok(&self.smiles)
    }

    /// Canonical SMILES of store position `i`.
    pub fn smiles(&self, i: usize) -> Result<String, StoreError> {
        self.smiles_column()?.get(i)
    }

    /// Canonical SMILES of each of store positions `positions`, in the order given (each block
    /// holding several of them decoded once: [`TextBlocks::get_many`]).
    pub fn smiles_many(
        &self,
        positions: impl IntoIterator<Item = Result<usize, StoreError>>,
    ) -> Result<Vec<String>, StoreError> {
        self.smiles_column()?.get_many(positions)
    }

    /// Id of each of store positions `positions`, in the order given (ids lie in input order:
    /// each block holding several of their ids decoded once, [`TextBlocks::get_many`]).
    pub fn ids_many(
        &self,
        positions: impl IntoIterator<Item = Result<usize, StoreError>>,
    ) -> Result<Vec<String>, StoreError> {
        let order = self.input_order()?;
        self.verify_file(IDS)?;
        let ranks = positions.into_iter().map(|i| self.rank_in(&order, i?));
        self.ids.get_many(ranks)
    }

    /// The permutation store position -> input rank (checked first).
    fn input_order(&self) -> Result<Packed<'_>, StoreError> {
        self.verify_file(INPUT_ORDER)?;
        Packed::parse(&self.input_order).map_err(|reason| StoreError::Inconsistent {
            path: self.path.join(INPUT_ORDER),
            reason,
        })
    }

    /// The input rank of store position `i` (its place among the molecules in input order).
    pub fn input_rank(&self, i: usize) -> Result<usize, StoreError> {
        self.rank_in(&self.input_order()?, i)
    }

    /// Store position `i`'s input rank in `order` (the checked [`StoreV2::input_order`]).
    fn rank_in(&self, order: &Packed<'_>, i: usize) -> Result<usize, StoreError> {
        let r = if i < order.len() {
            order.get(i) as usize
        } else {
            usize::MAX
        };
        if r >= self.len() {
            return Err(StoreError::Inconsistent {
                path: self.path.join(INPUT_ORDER),
                reason: format!("no input rank for store position {i}"),
            });
        }
        Ok(r)
    }

    /// Id of store position `i`.
    pub fn id(&self, i: usize) -> Result<String, StoreError> {
        let r = self.input_rank(i)?;
        self.verify_file(IDS)?;
        self.ids.get(r)
    }

    /// The 1-based source line of store position `i`.
    pub fn source_line(&self, i: usize) -> Result<u64, StoreError> {
        let r = self.input_rank(i)?;
        self.verify_file(SOURCE_LINES)?;
        let lines =
            Packed::parse(self.source_lines.as_deref().unwrap_or(&[])).map_err(|reason| {
                StoreError::Inconsistent {
                    path: self.path.join(SOURCE_LINES),
                    reason,
                }
            })?;
        Ok(lines.get(r) + r as u64)
    }

    /// Store position of each input rank (computed once, 4 bytes per molecule). The
    /// permutation is checked: every rank exactly once.
    pub fn positions_by_input(&self) -> Result<&[u32], StoreError> {
        let order = self.input_order()?;
        let n = self.len();
        self.inverse
            .get_or_init(|| {
                let mut inv = vec![u32::MAX; n];
                for i in 0..n {
                    let r = order.get(i) as usize;
                    if r >= n || inv[r] != u32::MAX {
                        return Err(format!("not a permutation at store position {i}"));
                    }
                    inv[r] = i as u32;
                }
                Ok(inv)
            })
            .as_deref()
            .map_err(|reason| StoreError::Inconsistent {
                path: self.path.join(INPUT_ORDER),
                reason: reason.clone(),
            })
    }

    /// The candidate blocks of an exact-match index for `key`.
    fn candidates(
        &self,
        index: &[u8],
        name: &str,
        key: &[u8],
        out: &mut Vec<u64>,
    ) -> Result<(), StoreError> {
        let idx = LookupIndex::parse(index, &self.path.join(name))?;
        idx.candidates(key_hash(key, idx.hash_bits()), out);
        Ok(())
    }

    /// Store positions whose canonical SMILES is exactly `smiles` (ascending; empty when
    /// absent). Every candidate block of the index is decoded and compared: a hash collision
    /// never gives a wrong answer.
    pub fn lookup(&self, smiles: &str, buf: &mut Block) -> Result<Vec<u64>, StoreError> {
        self.verified(&[SMILES_LOOKUP, SMILES])?;
        let mut blocks = Vec::new();
        self.candidates(
            &self.smiles_lookup,
            SMILES_LOOKUP,
            smiles.as_bytes(),
            &mut blocks,
        )?;
        blocks.sort_unstable();
        blocks.dedup();
        let mut found = Vec::new();
        let bl = self.smiles.block_len();
        for b in blocks {
            if b as usize >= self.smiles.blocks() {
                continue; // an absent key's arbitrary value
            }
            // duplicates sit side by side, and may run on into the next blocks
            let mut b = b as usize;
            loop {
                let count = self.smiles.decode_block(b, buf)?;
                let mut last_equal = false;
                for k in 0..count {
                    last_equal = buf.get(k) == smiles;
                    if last_equal {
                        found.push((b * bl + k) as u64);
                    }
                }
                b += 1;
                if !last_equal || b >= self.smiles.blocks() {
                    break;
                }
            }
        }
        found.sort_unstable();
        found.dedup();
        Ok(found)
    }

    /// Store positions of the molecules with id `id` (ascending; empty when absent).
    pub fn lookup_id(&self, id: &str, buf: &mut Block) -> Result<Vec<u64>, StoreError> {
        self.verified(&[IDS, INPUT_ORDER])?;
        if self.ids_lookup.is_some() {
            self.verify_file(IDS_LOOKUP)?;
        }
        let bl = self.ids.block_len();
        let mut ranks = Vec::new();
        match &self.ids_lookup {
            Some(index) => {
                let mut blocks = Vec::new();
                self.candidates(index, IDS_LOOKUP, id.as_bytes(), &mut blocks)?;
                blocks.sort_unstable();
                blocks.dedup();
                for b in blocks {
                    if b as usize >= self.ids.blocks() {
                        continue;
                    }
                    let count = self.ids.decode_block(b as usize, buf)?;
                    for k in 0..count {
                        if buf.get(k) == id {
                            ranks.push(b as usize * bl + k);
                        }
                    }
                }
            }
            None => {
                // one prefix, ascending numbers: binary search over the blocks' first ids
                let Some((prefix, v, _)) = numbered(id) else {
                    return Ok(Vec::new());
                };
                let key = |b: usize, buf: &mut Block| -> Result<Option<u64>, StoreError> {
                    self.ids.decode_block(b, buf)?;
                    Ok(numbered(buf.get(0))
                        .filter(|(p, _, _)| *p == prefix)
                        .map(|(_, v, _)| v))
                };
                let (mut lo, mut hi) = (0usize, self.ids.blocks());
                // the last block whose first number is <= v
                while lo < hi {
                    let mid = (lo + hi) / 2;
                    match key(mid, buf)? {
                        Some(first) if first <= v => lo = mid + 1,
                        Some(_) => hi = mid,
                        None => return Ok(Vec::new()), // another prefix: not here
                    }
                }
                if lo > 0 {
                    let b = lo - 1;
                    let count = self.ids.decode_block(b, buf)?;
                    for k in 0..count {
                        if buf.get(k) == id {
                            ranks.push(b * bl + k);
                        }
                    }
                }
            }
        }
        let pos = self.positions_by_input()?;
        let mut out: Vec<u64> = ranks.iter().map(|&r| u64::from(pos[r])).collect();
        out.sort_unstable();
        Ok(out)
    }

    /// The fingerprint words of every molecule in store order (`words` per row).
    pub fn fingerprint_rows(&self) -> Result<Vec<u64>, StoreError> {
        for name in planes::FILES {
            if self.manifest.files.contains_key(name) {
                self.verify_file(name)?;
            }
        }
        let words = (self.manifest.fingerprint.bits as usize).div_ceil(64);
        let mut out = vec![0u64; self.len() * words];
        self.planes()?.decode_rows(&mut out, words);
        Ok(out)
    }

    /// The fingerprint words of the molecules at store positions `positions` (`words` per row,
    /// in the order given), decoded from the planes for those molecules alone: memory for the
    /// rows asked for and a slot per molecule (built once), never every fingerprint.
    pub fn fingerprint_rows_at(&self, positions: &[u64]) -> Result<Vec<u64>, StoreError> {
        let (planes, slots) = self.slots_of(positions)?;
        let words = (self.manifest.fingerprint.bits as usize).div_ceil(64);
        Ok(planes.decode_slots(&slots, words))
    }

    /// The Tanimoto of a query (its on-bits, each below the fingerprint's bits) to the
    /// molecules at store positions `positions`, in the order given, from the query's planes
    /// alone ([`planes::Planes::tanimoto_slots`]): what ranking a few molecules by similarity
    /// needs, without decoding their fingerprints.
    pub fn tanimoto_at(&self, positions: &[u64], on: &[u32]) -> Result<Vec<f64>, StoreError> {
        let bits = self.manifest.fingerprint.bits;
        if let Some(&b) = on.iter().find(|&&b| b >= bits) {
            return Err(StoreError::Invalid(format!(
                "query bit {b} outside a fingerprint of {bits} bits"
            )));
        }
        let (planes, slots) = self.slots_of(positions)?;
        Ok(planes.tanimoto_slots(&slots, on))
    }

    /// The planes (each file checked as the store's verification asks) and the slot of each of
    /// `positions` in them (a map of every molecule's slot, built once).
    fn slots_of(&self, positions: &[u64]) -> Result<(planes::Planes<'_>, Vec<usize>), StoreError> {
        let n = self.len();
        if let Some(&p) = positions.iter().find(|&&p| p >= n as u64) {
            return Err(StoreError::Invalid(format!(
                "store position {p} outside a store of {n} molecules"
            )));
        }
        for name in planes::FILES {
            if self.manifest.files.contains_key(name) {
                self.verify_file(name)?;
            }
        }
        let planes = self.planes()?;
        let slot_of = self
            .slots
            .get_or_init(|| {
                let mut slot = vec![u32::MAX; n];
                for b in &self.planes_header.buckets {
                    for k in 0..b.count as usize {
                        let pos = planes.position(b.first_rank as usize + k) as usize;
                        let at = b.first_block as usize * planes::BLOCK + k;
                        match (slot.get_mut(pos), u32::try_from(at)) {
                            (Some(s), Ok(at)) if *s == u32::MAX => *s = at,
                            _ => return Err(format!("position {pos} placed twice or outside")),
                        }
                    }
                }
                match slot.iter().position(|&s| s == u32::MAX) {
                    Some(p) => Err(format!("position {p} has no slot")),
                    None => Ok(slot),
                }
            })
            .as_deref()
            .map_err(|reason| StoreError::Inconsistent {
                path: self.path.join(planes::ORDER_FILE),
                reason: reason.clone(),
            })?;
        let slots: Vec<usize> = positions
            .iter()
            .map(|&p| slot_of[p as usize] as usize)
            .collect();
        Ok((planes, slots))
    }

    /// Bytes of each file, by name.
    pub fn file_sizes(&self) -> BTreeMap<String, u64> {
        self.manifest
            .files
            .iter()
            .map(|(k, v)| (k.clone(), v.bytes))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FingerprintSpec, StoreWriter, Verify};

    /// What each molecule was written with: id, SMILES, source line, on-bits.
    type Written = Vec<(String, String, u64, Vec<u32>)>;

    /// A version-1 store of `n` molecules with some duplicate SMILES, then its upgrade.
    fn stores(
        n: usize,
        ids: impl Fn(usize) -> String,
        opts: &UpgradeOptions,
    ) -> (tempfile::TempDir, StoreV2, Written) {
        let dir = tempfile::tempdir().unwrap();
        let p1 = dir.path().join("v1.store");
        let spec = FingerprintSpec::new("morgan", 128, serde_json::json!({"radius": 2})).unwrap();
        let mut w = StoreWriter::create(&p1, spec, false).unwrap();
        let mut want = Vec::new();
        for i in 0..n {
            let smi = format!("C{}N{}", "C".repeat(i % 17), (i * 7919) % (n / 3 + 1));
            let bits: Vec<u32> = (0..128u32)
                .filter(|&b| (b as usize * 31 + i * 17) % 11 < 3)
                .collect();
            let id = ids(i);
            w.add_molecule(&id, &smi, 2 * i as u64 + 3, &bits).unwrap();
            want.push((id, smi, 2 * i as u64 + 3, bits));
        }
        w.add_reject("in.smi", 1, 0, "bad", "RDKit could not parse the SMILES")
            .unwrap();
        w.finish().unwrap();
        let v1 = Store::open(&p1, Verify::Full).unwrap();
        let p2 = dir.path().join("v2.store");
        upgrade(&v1, &p2, opts).unwrap();
        let v2 = StoreV2::open(&p2, true).unwrap();
        (dir, v2, want)
    }

    fn check(v2: &StoreV2, want: &Written) {
        let n = want.len();
        assert_eq!(v2.len(), n);
        let rows = v2.fingerprint_rows().unwrap();
        // the rows of chosen positions (repeats, any order) decoded alone: the same words
        let picked: Vec<u64> = (0..n as u64)
            .rev()
            .step_by(3)
            .chain((0..n as u64).step_by(7))
            .collect();
        let some = v2.fingerprint_rows_at(&picked).unwrap();
        for (k, &p) in picked.iter().enumerate() {
            let p = p as usize;
            assert_eq!(
                some[k * 2..k * 2 + 2],
                rows[p * 2..p * 2 + 2],
                "position {p}"
            );
        }
        assert!(v2.fingerprint_rows_at(&[n as u64]).is_err());
        // Tanimoto from the query's planes alone: as from the decoded rows (empty rows and an
        // empty query score 1 together, a bit given twice counts once)
        for on in [
            vec![],
            vec![3u32],
            vec![0, 5, 64, 65, 127],
            vec![9, 9, 70, 2, 100, 33],
        ] {
            let scores = v2.tanimoto_at(&picked, &on).unwrap();
            let q: std::collections::BTreeSet<u32> = on.iter().copied().collect();
            for (k, &p) in picked.iter().enumerate() {
                let row = &rows[p as usize * 2..p as usize * 2 + 2];
                let has = |b: u32| row[b as usize / 64] >> (b % 64) & 1 == 1;
                let common = q.iter().filter(|&&b| has(b)).count() as u32;
                let pop = row[0].count_ones() + row[1].count_ones();
                let union = q.len() as u32 + pop - common;
                let want = if union == 0 {
                    1.0
                } else {
                    f64::from(common) / f64::from(union)
                };
                assert_eq!(scores[k], want, "position {p}, query {on:?}");
            }
        }
        assert!(v2.tanimoto_at(&[n as u64], &[1]).is_err());
        assert!(v2.tanimoto_at(&[0], &[128]).is_err());
        let mut buf = Block::default();
        let mut seen = vec![false; n];
        for i in 0..n {
            let r = v2.input_rank(i).unwrap();
            assert!(!seen[r]);
            seen[r] = true;
            let (id, smi, line, bits) = &want[r];
            assert_eq!(&v2.smiles(i).unwrap(), smi);
            assert_eq!(&v2.id(i).unwrap(), id);
            assert_eq!(v2.source_line(i).unwrap(), *line);
            let got: Vec<u32> = (0..128)
                .filter(|&b| rows[i * 2 + b / 64] >> (b % 64) & 1 == 1)
                .map(|b| b as u32)
                .collect();
            assert_eq!(&got, bits);
            if i > 0 {
                assert!(
                    v2.smiles(i - 1).unwrap() <= v2.smiles(i).unwrap(),
                    "store order"
                );
            }
        }
        // every SMILES and every id finds exactly its molecules
        for (r, (id, smi, _, _)) in want.iter().enumerate() {
            let pos = v2.positions_by_input().unwrap()[r] as u64;
            let hits = v2.lookup(smi, &mut buf).unwrap();
            let expect: Vec<u64> = (0..n as u64)
                .filter(|&i| &v2.smiles(i as usize).unwrap() == smi)
                .collect();
            assert_eq!(hits, expect, "{smi}");
            assert!(hits.contains(&pos));
            assert_eq!(v2.lookup_id(id, &mut buf).unwrap(), vec![pos], "{id}");
        }
        for absent in ["O", "CCN999999", "", "C\u{e9}"] {
            assert!(v2.lookup(absent, &mut buf).unwrap().is_empty());
        }
        for absent in ["m-1", "zz", "m99999999"] {
            assert!(v2.lookup_id(absent, &mut buf).unwrap().is_empty());
        }
    }

    #[test]
    fn upgrade_keeps_every_molecule_and_finds_each() {
        let (_d, v2, want) = stores(1000, |i| format!("m{i}"), &UpgradeOptions::default());
        assert!(
            !v2.manifest().files.contains_key(IDS_LOOKUP),
            "ascending ids need no index"
        );
        check(&v2, &want);
        // ids in no order: a hash index
        let (_d, v2, want) = stores(
            700,
            |i| format!("id-{}", (i * 3) % 700),
            &UpgradeOptions::default(),
        );
        assert!(v2.manifest().files.contains_key(IDS_LOOKUP));
        check(&v2, &want);
    }

    #[test]
    fn smiles_of_a_range_are_those_of_each_position() {
        use crate::files::StoreFiles;
        let (_d, v2, _) = stores(1000, |i| format!("m{i}"), &UpgradeOptions::default());
        let n = v2.len();
        let block = v2.smiles_column().unwrap().block_len();
        assert!(block > 1 && block < n, "ranges must cross blocks");
        for range in [0..n, 0..0, 1..2, block - 1..block + 1, 3..n - 5, n - 1..n] {
            let mut got = Vec::new();
            v2.for_each_smiles(range.clone(), &mut |i, s| {
                got.push((i, s.to_string()));
                Ok(())
            })
            .unwrap();
            let want: Vec<_> = range.map(|i| (i, v2.smiles(i).unwrap())).collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn a_store_written_before_the_part_masks_of_16_slots_still_opens() {
        for to in [2, 1] {
            let (d, v2, want) = stores(500, |i| format!("m{i}"), &UpgradeOptions::default());
            assert!(!v2.planes().unwrap().parts16(0).is_empty());
            drop(v2);
            // the planes as older versions wrote them (format 2: masks of 32 slots only;
            // format 1: no masks), and a manifest that lists their files
            let p2 = d.path().join("v2.store");
            planes::strip_parts(&p2, to).unwrap();
            assert!(
                StoreV2::open(&p2, false).is_err(),
                "the manifest still lists the format-3 files"
            );
            let text = std::fs::read(p2.join(crate::layout::MANIFEST)).unwrap();
            let mut manifest: Manifest = serde_json::from_slice(&text).unwrap();
            manifest.files.remove(planes::PARTS_FILE);
            let mut relist = vec![planes::HEADER_FILE];
            if to == 2 {
                relist.push(planes::PARTS_FILE);
            }
            for name in relist {
                let bytes = std::fs::read(p2.join(name)).unwrap();
                manifest.files.insert(
                    name.to_string(),
                    FileEntry {
                        bytes: bytes.len() as u64,
                        xxh3: to_hex(xxhash_rust::xxh3::xxh3_64(&bytes)),
                    },
                );
            }
            manifest.sealed().write(&p2).unwrap();
            let v2 = StoreV2::open(&p2, true).unwrap();
            let planes = v2.planes().unwrap();
            assert_eq!(planes.header().format_version, to);
            assert!(planes.parts16(0).is_empty());
            assert_eq!(planes.parts(0).is_empty(), to == 1);
            check(&v2, &want);
        }
    }

    #[test]
    fn forced_hash_collisions_still_answer_exactly() {
        for bits in [3, 8] {
            let opts = UpgradeOptions {
                lookup: LookupOptions {
                    hash_bits: bits,
                    ..LookupOptions::default()
                },
                ..UpgradeOptions::default()
            };
            let (_d, v2, want) = stores(600, |i| format!("q{}", 600 - i), &opts);
            check(&v2, &want);
        }
    }

    #[test]
    fn duplicates_listed_by_a_deduped_store_point_at_version_2_positions() {
        let dir = tempfile::tempdir().unwrap();
        let spec = FingerprintSpec::new("morgan", 64, serde_json::json!({})).unwrap();
        let part = dir.path().join("part");
        let mut w = StoreWriter::create(&part, spec, false).unwrap();
        let rows = [
            ("a", "CCO"),
            ("b", "CC"),
            ("c", "CCO"),
            ("d", "C"),
            ("e", "CC"),
        ];
        for (i, (id, smi)) in rows.iter().enumerate() {
            w.add_molecule(id, smi, i as u64 + 1, &[i as u32]).unwrap();
        }
        w.finish().unwrap();
        crate::runs::write_run(&part).unwrap();
        let p1 = dir.path().join("v1");
        let spec = FingerprintSpec::new("morgan", 64, serde_json::json!({})).unwrap();
        let (runs, _) =
            crate::PartRuns::merge(&[part.as_path()], spec, true, serde_json::Value::Null).unwrap();
        runs.write_version_1(&p1, false).unwrap();
        let v1 = Store::open(&p1, Verify::Full).unwrap();
        let p2 = dir.path().join("v2");
        upgrade(&v1, &p2, &UpgradeOptions::default()).unwrap();
        let v2 = StoreV2::open(&p2, true).unwrap();
        let c = v2.manifest().counts;
        assert_eq!((c.molecules, c.duplicates, c.dropped), (3, Some(2), 2));
        let text = std::fs::read_to_string(p2.join(crate::duplicates::FILE)).unwrap();
        let mut listed = 0;
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split('\t').collect();
            let kept: usize = f[2].parse().unwrap();
            assert_eq!(v2.id(kept).unwrap(), f[3], "{line}");
            let smi = rows.iter().find(|r| r.0 == f[1]).unwrap().1;
            assert_eq!(v2.smiles(kept).unwrap(), smi, "{line}");
            listed += 1;
        }
        assert_eq!(listed, 2);
    }

    #[test]
    fn damaged_or_truncated_files_are_refused_by_name() {
        let (d, v2, _) = stores(500, |i| format!("m{i}"), &UpgradeOptions::default());
        let path = v2.path().to_path_buf();
        drop(v2);
        for name in REQUIRED {
            let p = path.join(name);
            let good = std::fs::read(&p).unwrap();
            // truncated: refused at open, naming the file
            std::fs::write(&p, &good[..good.len().saturating_sub(1)]).unwrap();
            let e = StoreV2::open(&path, false).unwrap_err().to_string();
            assert!(e.contains(name), "{name}: {e}");
            // one flipped byte: refused by the checksum check, naming the file
            let mut bad = good.clone();
            let k = bad.len() / 2;
            bad[k] ^= 0x20;
            std::fs::write(&p, &bad).unwrap();
            let e = StoreV2::open(&path, true).unwrap_err().to_string();
            assert!(e.contains(name), "{name}: {e}");
            std::fs::write(&p, &good).unwrap();
        }
        assert!(StoreV2::open(&path, true).is_ok());
        // the version-1 reader refuses it clearly
        let e = match Store::open(&path, Verify::Sizes) {
            Ok(_) => panic!("the version-1 reader opened a version-2 store"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains("version-2"), "{e}");
        drop(d);
    }
}
