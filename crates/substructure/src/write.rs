//! Writing a pattern index in parallel parts: [`create_planes`] makes the planes file (under a
//! temporary name) at its final size, each task transposes the rows of its molecules into the
//! planes with [`write_part`] (parts start on a block, so no two tasks share a word and any
//! number of processes write at once with `pwrite`), and [`finish_index`] checksums the planes,
//! writes the header, renames both into the store and lists them in its manifest.

use std::path::Path;

use molsift_iostats::CountedFile;
use molsift_store::{FileEntry, StoreFiles};

use crate::graph::GRAPHS_FILE;
use crate::layout::{
    checksum, plane_words, planes_bytes, FileInfo, Header, BLOCK, FORMAT_NAME, FORMAT_VERSION,
    HEADER_FILE, MAX_BITS, PLANES_FILE,
};
use crate::SubstructureError;

fn check_bits(bits: u32) -> Result<(), SubstructureError> {
    if bits == 0 || bits > MAX_BITS {
        return Err(SubstructureError::Invalid(format!(
            "a pattern index has 1 to {MAX_BITS} bits, not {bits}"
        )));
    }
    Ok(())
}

/// Creates the planes file of `bits` planes for `n` molecules at `path` (a temporary name),
/// all zero, at its final size.
pub fn create_planes(path: &Path, bits: u32, n: usize) -> Result<(), SubstructureError> {
    check_bits(bits)?;
    let f = CountedFile::create(path).map_err(|e| SubstructureError::io(path, e))?;
    f.set_len(planes_bytes(bits, n))
        .map_err(|e| SubstructureError::io(path, e))
}

/// Writes the screening bits of molecules `first .. first + rows.len() / words_per_row` into
/// the planes file at `path` (made by [`create_planes`] for `bits` and `n`). `rows` holds one
/// row of `words_per_row` words per molecule, bit `b` at bit `b % 64` of word `b / 64`; `first`
/// must start a block. Returns how many of these molecules have each bit.
pub fn write_part(
    path: &Path,
    bits: u32,
    n: usize,
    first: usize,
    rows: &[u64],
    words_per_row: usize,
) -> Result<Vec<u64>, SubstructureError> {
    check_bits(bits)?;
    let bad = |m: String| Err(SubstructureError::Invalid(m));
    if words_per_row == 0 || words_per_row * 64 < bits as usize {
        return bad(format!(
            "{words_per_row} words per row cannot hold {bits} bits"
        ));
    }
    if rows.len() % words_per_row != 0 {
        return bad(format!(
            "{} words are not whole rows of {words_per_row}",
            rows.len()
        ));
    }
    let count = rows.len() / words_per_row;
    if first % BLOCK != 0 || first + count > n {
        return bad(format!(
            "a part of {count} molecules from {first} does not start on a block of {BLOCK} \
             inside {n} molecules"
        ));
    }
    let seg_words = count.div_ceil(64);
    let mut seg = vec![0u64; bits as usize * seg_words];
    let mut counts = vec![0u64; bits as usize];
    for (r, row) in rows.chunks_exact(words_per_row).enumerate() {
        let (w, bit) = (r / 64, 1u64 << (r % 64));
        for (wi, &word) in row.iter().enumerate() {
            let mut x = word;
            while x != 0 {
                let b = wi * 64 + x.trailing_zeros() as usize;
                if b >= bits as usize {
                    return bad(format!("molecule {} has bit {b} of {bits}", first + r));
                }
                seg[b * seg_words + w] |= bit;
                counts[b] += 1;
                x &= x - 1;
            }
        }
    }
    if count == 0 {
        return Ok(counts);
    }
    let f = CountedFile::open_flags(path, libc::O_WRONLY, 0)
        .map_err(|e| SubstructureError::io(path, e))?;
    let pw = plane_words(n);
    let mut bytes = Vec::with_capacity(seg_words * 8);
    for (b, plane) in seg.chunks_exact(seg_words).enumerate() {
        bytes.clear();
        for x in plane {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        let offset = ((b * pw + first / 64) * 8) as u64;
        f.write_all_at(&bytes, offset)
            .map_err(|e| SubstructureError::io(path, e))?;
    }
    Ok(counts)
}

/// Joins the graph parts that the tasks of a build wrote into `parts_dir` (one file per task,
/// named by its first molecule, zero-padded: `[count u64][count u32 record lengths][records]`)
/// into the graphs file at `out` (a temporary name) for `n` molecules ([`crate::graph`]). The
/// parts must cover `0..n` without gaps.
pub fn assemble_graphs(parts_dir: &Path, n: usize, out: &Path) -> Result<(), SubstructureError> {
    let bad = |m: String| SubstructureError::Invalid(format!("{}: {m}", parts_dir.display()));
    let mut names: Vec<(usize, std::path::PathBuf)> = Vec::new();
    for e in std::fs::read_dir(parts_dir).map_err(|e| SubstructureError::io(parts_dir, e))? {
        let e = e.map_err(|e| SubstructureError::io(parts_dir, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(first) = name.strip_suffix(".part").and_then(|f| f.parse().ok()) else {
            return Err(bad(format!("{name:?} is not a graph part")));
        };
        names.push((first, e.path()));
    }
    names.sort();
    // one pass: each part's records are copied where they belong (the offsets come last)
    let f = CountedFile::create(out).map_err(|e| SubstructureError::io(out, e))?;
    let mut lengths: Vec<u64> = Vec::with_capacity(n);
    let mut pos = crate::graph::records_start(n) as u64;
    for (first, path) in &names {
        if *first != lengths.len() {
            return Err(bad(format!(
                "the part of molecule {first} follows {} molecules",
                lengths.len()
            )));
        }
        let bytes = std::fs::read(path).map_err(|e| SubstructureError::io(path, e))?;
        if bytes.len() < 8 {
            return Err(bad(format!("{}: {} bytes", path.display(), bytes.len())));
        }
        let count = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
        let head = 8 + 4 * count;
        if bytes.len() < head || lengths.len() + count > n {
            return Err(bad(format!(
                "{}: short of its {count} lengths, or past {n} molecules",
                path.display()
            )));
        }
        let mut total = 0u64;
        for c in bytes[8..head].chunks_exact(4) {
            let l = u64::from(u32::from_le_bytes(c.try_into().expect("4 bytes")));
            lengths.push(l);
            total += l;
        }
        if bytes.len() as u64 != head as u64 + total {
            return Err(bad(format!(
                "{}: {} bytes, {} expected",
                path.display(),
                bytes.len(),
                head as u64 + total
            )));
        }
        f.write_all_at(&bytes[head..], pos)
            .map_err(|e| SubstructureError::io(out, e))?;
        pos += total;
    }
    if lengths.len() != n {
        return Err(bad(format!(
            "parts of {} molecules, {n} expected",
            lengths.len()
        )));
    }
    let mut head = Vec::with_capacity(crate::graph::records_start(n));
    head.extend_from_slice(crate::graph::MAGIC);
    head.extend_from_slice(&(n as u64).to_le_bytes());
    let mut at = 0u64;
    head.extend_from_slice(&at.to_le_bytes());
    for l in &lengths {
        at += l;
        head.extend_from_slice(&at.to_le_bytes());
    }
    f.write_all_at(&head, 0)
        .map_err(|e| SubstructureError::io(out, e))?;
    Ok(())
}

/// Finishes an index whose planes were written to `planes_tmp` (every part written): checks
/// its size, checksums each plane, syncs it, writes the header (with `bit_counts`, the sums of
/// the parts', and `meaning`), renames the planes, the graphs file `graphs_tmp` (when given,
/// made by [`assemble_graphs`]) and the header into `store`'s directory and lists them in its
/// manifest. Holds the store's lock meanwhile. A version-2 store gets the compact form, its
/// graph blocks compressed on `threads` threads. Returns the bytes of the planes.
pub fn finish_index(
    store: &dyn StoreFiles,
    planes_tmp: &Path,
    graphs_tmp: Option<&Path>,
    bits: u32,
    bit_counts: Vec<u64>,
    meaning: serde_json::Value,
    threads: usize,
) -> Result<u64, SubstructureError> {
    let n = store.len();
    check_counts(bits, &bit_counts, n)?;
    if store.manifest().format_version >= 2 {
        return compact_from(
            store, planes_tmp, graphs_tmp, bits, bit_counts, meaning, threads,
        );
    }
    let _lock = store.lock()?;
    // temporary files of index runs that were killed (their names tell their process)
    molsift_store::replace::sweep_leftovers(store.path(), None);
    let (f, size) = open_planes(planes_tmp, bits, n)?;
    let pw = plane_words(n);
    let (whole, plane_xxh3) = if size == 0 {
        (checksum(&[]), vec![checksum(&[]); bits as usize])
    } else {
        // SAFETY: the temporary file is ours and no longer written.
        let m = unsafe { f.map() }.map_err(|e| SubstructureError::io(planes_tmp, e))?;
        let sums = m.chunks_exact(pw * 8).map(checksum).collect();
        (checksum(&m), sums)
    };
    f.sync_all()
        .map_err(|e| SubstructureError::io(planes_tmp, e))?;
    let graphs = match graphs_tmp {
        None => None,
        Some(g) => {
            let gf = CountedFile::open(g).map_err(|e| SubstructureError::io(g, e))?;
            // SAFETY: the temporary file is ours and no longer written.
            let m = unsafe { gf.map() }.map_err(|e| SubstructureError::io(g, e))?;
            crate::graph::Graphs::new(&m, n, g)?;
            gf.sync_all().map_err(|e| SubstructureError::io(g, e))?;
            Some(FileInfo {
                bytes: m.len() as u64,
                xxh3: checksum(&m),
            })
        }
    };
    let planes = FileInfo {
        bytes: size,
        xxh3: whole,
    };
    let h = Header {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        bits,
        molecules: n as u64,
        block: BLOCK as u64,
        bit_counts,
        planes: planes.clone(),
        plane_xxh3,
        graphs: graphs.clone(),
        meaning,
        kept: Vec::new(),
    };
    let mut files = vec![(planes_tmp, PLANES_FILE, planes)];
    if let (Some(g), Some(info)) = (graphs_tmp, graphs) {
        files.push((g, GRAPHS_FILE, info));
    }
    install(store, &h, &files)?;
    Ok(size)
}

/// Puts an index's files into `store`: `header` written under a temporary name, each file
/// `(temporary, name, size and checksum)` renamed to its name, then the header renamed, and
/// all of them listed in the manifest (the caller holds the store's lock).
fn install(
    store: &dyn StoreFiles,
    header: &Header,
    files: &[(&Path, &str, FileInfo)],
) -> Result<(), SubstructureError> {
    let text = serde_json::to_string_pretty(header).expect("header serializes") + "\n";
    let dir = store.path();
    let header_path = dir.join(HEADER_FILE);
    let header_tmp = molsift_store::replace::temporary_sibling(&header_path, "tmp");
    molsift_iostats::write_file(&header_tmp, text.as_bytes(), true)
        .map_err(|e| SubstructureError::io(&header_tmp, e))?;
    let mut entries = Vec::with_capacity(files.len() + 1);
    for (tmp, name, info) in files {
        let path = dir.join(name);
        std::fs::rename(tmp, &path).map_err(|e| SubstructureError::io(&path, e))?;
        entries.push((
            name.to_string(),
            FileEntry {
                bytes: info.bytes,
                xxh3: info.xxh3.clone(),
            },
        ));
    }
    std::fs::rename(&header_tmp, &header_path)
        .map_err(|e| SubstructureError::io(&header_path, e))?;
    entries.push((
        HEADER_FILE.to_string(),
        FileEntry {
            bytes: text.len() as u64,
            xxh3: checksum(text.as_bytes()),
        },
    ));
    store.register_files(entries)?;
    Ok(())
}

/// Checks an index's bit count and its molecules per bit (`bit_counts`, at most `n` each).
fn check_counts(bits: u32, bit_counts: &[u64], n: usize) -> Result<(), SubstructureError> {
    check_bits(bits)?;
    if bit_counts.len() != bits as usize || bit_counts.iter().any(|&c| c > n as u64) {
        return Err(SubstructureError::Invalid(format!(
            "{} bit counts (at most {n} each) for {bits} bits",
            bit_counts.len()
        )));
    }
    Ok(())
}

/// The dense planes file a build wrote, opened, and its size (checked: `bits` planes of `n`
/// molecules).
fn open_planes(
    planes_tmp: &Path,
    bits: u32,
    n: usize,
) -> Result<(CountedFile, u64), SubstructureError> {
    let f = CountedFile::open(planes_tmp).map_err(|e| SubstructureError::io(planes_tmp, e))?;
    let size = f
        .metadata()
        .map_err(|e| SubstructureError::io(planes_tmp, e))?
        .len();
    let expected = planes_bytes(bits, n);
    if size != expected {
        return Err(SubstructureError::Invalid(format!(
            "{}: {size} bytes, {expected} expected for {bits} planes of {n} molecules",
            planes_tmp.display()
        )));
    }
    Ok((f, size))
}

/// Writes the compact index (a version-2 store, [`crate::compact`]) into `store` from the dense
/// planes and graphs file a build wrote (temporary files, removed either way).
fn compact_from(
    store: &dyn StoreFiles,
    planes_tmp: &Path,
    graphs_tmp: Option<&Path>,
    bits: u32,
    bit_counts: Vec<u64>,
    meaning: serde_json::Value,
    threads: usize,
) -> Result<u64, SubstructureError> {
    let n = store.len();
    let written = (|| {
        let Some(graphs_tmp) = graphs_tmp else {
            return Err(SubstructureError::Invalid(
                "the compact substructure index needs the molecules' graphs".into(),
            ));
        };
        let (planes, _) = open_planes(planes_tmp, bits, n)?;
        // SAFETY: the temporary file is ours and no longer written.
        let m = match n {
            0 => None,
            _ => Some(unsafe { planes.map() }.map_err(|e| SubstructureError::io(planes_tmp, e))?),
        };
        // SAFETY: a map is page aligned and the file a whole number of words (checked above);
        // the crate refuses big-endian targets.
        let (head, words, _) = unsafe { m.as_deref().unwrap_or(&[]).align_to::<u64>() };
        assert!(head.is_empty(), "planes not u64 aligned");
        let gf = CountedFile::open(graphs_tmp).map_err(|e| SubstructureError::io(graphs_tmp, e))?;
        // SAFETY: the temporary file is ours and no longer written.
        let gm = unsafe { gf.map() }.map_err(|e| SubstructureError::io(graphs_tmp, e))?;
        let graphs = crate::graph::Graphs::new(&gm, n, graphs_tmp)?;
        let pw = plane_words(n);
        let plane = |b: usize, buf: &mut Vec<u64>| {
            buf.clear();
            buf.extend_from_slice(&words[b * pw..(b + 1) * pw]);
        };
        finish_compact(
            store,
            bits,
            bit_counts,
            meaning,
            &plane,
            &graphs,
            threads,
            crate::compact::WINDOW_BYTES,
        )
    })();
    let _ = std::fs::remove_file(planes_tmp);
    if let Some(g) = graphs_tmp {
        let _ = std::fs::remove_file(g);
    }
    written
}

/// Writes the compact index into `store` (a version-2 store): the screen of the planes
/// `plane(b, buf)` gives and the graph blocks of `graphs`, under temporary names, then the
/// header, all installed and listed in the manifest while holding the store's lock. Returns
/// the bytes of the screen.
#[allow(clippy::too_many_arguments)]
fn finish_compact(
    store: &dyn StoreFiles,
    bits: u32,
    bit_counts: Vec<u64>,
    meaning: serde_json::Value,
    plane: &(dyn Fn(usize, &mut Vec<u64>) + Sync),
    graphs: &dyn crate::compact::Records,
    threads: usize,
    window_bytes: usize,
) -> Result<u64, SubstructureError> {
    use crate::compact::{write_compact, GRAPH_BLOCKS_FILE, SCREEN_FILE};
    let n = store.len();
    check_counts(bits, &bit_counts, n)?;
    let _lock = store.lock()?;
    // temporary files of index runs that were killed (their names tell their process)
    molsift_store::replace::sweep_leftovers(store.path(), None);
    let dir = store.path();
    let screen_tmp = molsift_store::replace::temporary_sibling(&dir.join(SCREEN_FILE), "tmp");
    let blocks_tmp = molsift_store::replace::temporary_sibling(&dir.join(GRAPH_BLOCKS_FILE), "tmp");
    let done = (|| {
        let w = write_compact(
            plane,
            bits,
            n,
            &bit_counts,
            graphs,
            &screen_tmp,
            &blocks_tmp,
            threads,
            window_bytes,
        )?;
        let h = Header {
            format: FORMAT_NAME.into(),
            version: crate::layout::COMPACT_VERSION,
            bits,
            molecules: n as u64,
            block: BLOCK as u64,
            bit_counts: bit_counts.clone(),
            planes: w.screen.clone(),
            plane_xxh3: Vec::new(),
            graphs: Some(w.graphs.clone()),
            meaning: meaning.clone(),
            kept: w.planes,
        };
        let files = [
            (screen_tmp.as_path(), SCREEN_FILE, w.screen.clone()),
            (blocks_tmp.as_path(), GRAPH_BLOCKS_FILE, w.graphs),
        ];
        install(store, &h, &files)?;
        Ok(w.screen.bytes)
    })();
    if done.is_err() {
        let _ = std::fs::remove_file(&screen_tmp);
        let _ = std::fs::remove_file(&blocks_tmp);
    }
    done
}

/// Writes the substructure index of `to`, a version-2 store holding the molecules of `from`'s
/// store in another order (upgraded from it: `source[i]` is the position in `from`'s store of
/// `to`'s molecule `i`), or a part of them (a shard of a set), by carrying the rows and graph
/// records over rather than computing them again; the same `meaning`. `from` must be the dense form with graphs. Each kept plane
/// is permuted in memory as the compact screen asks for it and each graph record read where
/// it lies: nothing is written in between, and memory holds one plane per thread besides what
/// [`crate::compact::write_compact`] keeps; the graph blocks compressed on `threads` threads.
/// Returns what [`finish_index`] returns.
pub fn carry_index(
    from: &crate::PatternIndex,
    to: &dyn StoreFiles,
    source: &[u32],
    threads: usize,
) -> Result<u64, SubstructureError> {
    let (words, graphs) = from.dense_parts()?;
    carry_planes(
        words,
        from.len(),
        from.bits(),
        from.bit_counts(),
        from.meaning().clone(),
        &graphs,
        to,
        source,
        threads,
        crate::compact::WINDOW_BYTES,
    )
}

/// Writes the substructure index of `to` from dense planes already in its order (`words`: a
/// plane of `to.len()` bits per entry of `bit_counts`, their counts) and the records `graphs`
/// holds at positions `source` (one per molecule of `to`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn index_from_planes(
    words: &[u64],
    bits: u32,
    bit_counts: Vec<u64>,
    meaning: serde_json::Value,
    graphs: &dyn crate::compact::Indexed,
    to: &dyn StoreFiles,
    source: &[u32],
    threads: usize,
    window_bytes: usize,
) -> Result<u64, SubstructureError> {
    let n = to.len();
    let pw = plane_words(n);
    if source.len() != n || words.len() != bits as usize * pw {
        return Err(SubstructureError::Invalid(format!(
            "{} source positions and {} plane words for a store of {n} molecules",
            source.len(),
            words.len()
        )));
    }
    if let Some(&bad) = source.iter().find(|&&s| s as usize >= graphs.len()) {
        return Err(SubstructureError::Invalid(format!(
            "source position {bad} of {} graph records",
            graphs.len()
        )));
    }
    let plane = |b: usize, buf: &mut Vec<u64>| {
        buf.clear();
        buf.extend_from_slice(&words[b * pw..(b + 1) * pw]);
    };
    let records = crate::compact::Reordered { graphs, source };
    finish_compact(
        to,
        bits,
        bit_counts,
        meaning,
        &plane,
        &records,
        threads,
        window_bytes,
    )
}

/// [`carry_index`]'s work from dense planes `words` of `from_len` molecules (`bits` planes,
/// `bit_counts` molecules per bit) and their `graphs`: the index of `to`, whose molecule `i` is
/// `source[i]` of theirs (all of them, or a part: a shard), meaning `meaning`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn carry_planes(
    words: &[u64],
    from_len: usize,
    bits: u32,
    bit_counts: &[u64],
    meaning: serde_json::Value,
    graphs: &dyn crate::compact::Indexed,
    to: &dyn StoreFiles,
    source: &[u32],
    threads: usize,
    window_bytes: usize,
) -> Result<u64, SubstructureError> {
    let n = to.len();
    let whole = from_len == n;
    if source.len() != n || source.iter().any(|&s| s as usize >= from_len) {
        return Err(SubstructureError::Invalid(format!(
            "{} source positions for stores of {from_len} and {n} molecules",
            source.len(),
        )));
    }
    if to.manifest().format_version < 2 {
        return Err(SubstructureError::Invalid(
            "the substructure index is carried only into a version-2 store".into(),
        ));
    }
    if graphs.len() != from_len {
        return Err(SubstructureError::Invalid(format!(
            "{} graph records for {from_len} molecules",
            graphs.len()
        )));
    }
    let pw = plane_words(n);
    let from_pw = plane_words(from_len);
    let old_plane = |b: usize| &words[b * from_pw..(b + 1) * from_pw];
    // bit i of the new plane is bit source[i] of the old
    let plane = |b: usize, buf: &mut Vec<u64>| {
        let old = old_plane(b);
        buf.clear();
        buf.resize(pw, 0);
        for (i, &s) in source.iter().enumerate() {
            let s = s as usize;
            buf[i / 64] |= ((old[s / 64] >> (s % 64)) & 1) << (i % 64);
        }
    };
    let records = crate::compact::Reordered { graphs, source };
    // a permutation keeps every bit's count; a shard of a set (a part of `from`) counts its own
    let bit_counts = if whole {
        bit_counts.to_vec()
    } else {
        (0..bits as usize)
            .map(|b| {
                let old = old_plane(b);
                source
                    .iter()
                    .filter(|&&s| (old[s as usize / 64] >> (s % 64)) & 1 == 1)
                    .count() as u64
            })
            .collect()
    };
    finish_compact(
        to,
        bits,
        bit_counts,
        meaning,
        &plane,
        &records,
        threads,
        window_bytes,
    )
}
