//! Writing a pattern index in parallel parts: [`create_planes`] makes the planes file (under a
//! temporary name) at its final size, each task transposes the rows of its molecules into the
//! planes with [`write_part`] (parts start on a block, so no two tasks share a word and any
//! number of processes write at once with `pwrite`), and [`finish_index`] checksums the planes,
//! writes the header, renames both into the store and lists them in its manifest.

use std::path::Path;

use molsift_iostats::CountedFile;
use molsift_store::{FileEntry, Store};

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

/// Finishes an index whose planes were written to `planes_tmp` (every part written): checks
/// its size, checksums each plane, syncs it, writes the header (with `bit_counts`, the sums of
/// the parts', and `meaning`), renames both into `store`'s directory and lists them in its
/// manifest. Holds the store's lock meanwhile. Returns the bytes of the planes.
pub fn finish_index(
    store: &Store,
    planes_tmp: &Path,
    bits: u32,
    bit_counts: Vec<u64>,
    meaning: serde_json::Value,
) -> Result<u64, SubstructureError> {
    check_bits(bits)?;
    let n = store.len();
    if bit_counts.len() != bits as usize || bit_counts.iter().any(|&c| c > n as u64) {
        return Err(SubstructureError::Invalid(format!(
            "{} bit counts (at most {n} each) for {bits} bits",
            bit_counts.len()
        )));
    }
    let _lock = store.lock()?;
    // temporary files of index runs that were killed (their names tell their process)
    molsift_store::replace::sweep_leftovers(store.path(), None);
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
    let header = Header {
        format: FORMAT_NAME.into(),
        version: FORMAT_VERSION,
        bits,
        molecules: n as u64,
        block: BLOCK as u64,
        bit_counts,
        planes: FileInfo {
            bytes: size,
            xxh3: whole.clone(),
        },
        plane_xxh3,
        meaning,
    };
    let text = serde_json::to_string_pretty(&header).expect("header serializes") + "\n";
    let dir = store.path();
    let header_path = dir.join(HEADER_FILE);
    let header_tmp = molsift_store::replace::temporary_sibling(&header_path, "tmp");
    molsift_iostats::write_file(&header_tmp, text.as_bytes(), true)
        .map_err(|e| SubstructureError::io(&header_tmp, e))?;
    let planes_path = dir.join(PLANES_FILE);
    std::fs::rename(planes_tmp, &planes_path)
        .map_err(|e| SubstructureError::io(&planes_path, e))?;
    std::fs::rename(&header_tmp, &header_path)
        .map_err(|e| SubstructureError::io(&header_path, e))?;
    store.register_files(vec![
        (
            PLANES_FILE.to_string(),
            FileEntry {
                bytes: size,
                xxh3: whole,
            },
        ),
        (
            HEADER_FILE.to_string(),
            FileEntry {
                bytes: text.len() as u64,
                xxh3: checksum(text.as_bytes()),
            },
        ),
    ])?;
    Ok(size)
}
