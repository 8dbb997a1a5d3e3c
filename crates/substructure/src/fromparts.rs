//! Ingest's substructure index written straight from its workers' parts, with no other index
//! in between. A part is what one ingest task wrote beside its part store:
//! `PART.rows.u64` (one screening row of `words_per_row` little-endian words per molecule),
//! `PART.glen.u32` (each graph record's length) and `PART.grec.bin` (the records). [`Parts`]
//! reads the parts in task order, less the molecules `--dedupe` left out (the input ranks);
//! [`planes_from_parts`] transposes their rows into dense planes in that order (a temporary
//! file, block-aligned chunks on several threads, as [`crate::write_part`] writes them); and
//! [`index_from_parts`] writes the compact index of a version-2 store holding those molecules
//! in another order (the whole store, or one shard of a set) from those planes and the parts'
//! records, each read where it lies, as [`crate::carry_index`] carries an older index over.

use std::path::{Path, PathBuf};

use memmap2::Mmap;
use molsift_iostats::CountedFile;
use molsift_store::runs::Places;
use molsift_store::StoreFiles;

use crate::compact::Indexed;
use crate::layout::{planes_bytes, BLOCK};
use crate::SubstructureError;

/// Molecules transposed per task of [`planes_from_parts`] (a multiple of [`BLOCK`]).
const CHUNK: usize = 1 << 16;
const _: () = assert!(CHUNK % BLOCK == 0);

/// Records between two entries of a part's sparse start index (its record offsets are the
/// lengths summed from the entry before).
const STRIDE: usize = 64;

/// The rows and graph records of ingest's parts, by input rank (task order, less the
/// molecules left out). Nothing is held per molecule: the files are mapped, a molecule's part
/// found from the parts' first positions and the molecules left out, a record's offset from a
/// start every [`STRIDE`] records (1/8 byte a molecule) and the mapped lengths.
pub struct Parts {
    rows: Vec<Option<Mmap>>,
    records: Vec<Option<Mmap>>,
    /// per part: its record lengths (`PART.glen.u32`, mapped)
    lengths: Vec<Option<Mmap>>,
    /// per part: where records `0, STRIDE, 2 * STRIDE, ...` start in its records file
    starts: Vec<Vec<u64>>,
    /// where the molecules lie: the parts' first positions, the positions left out
    places: Places,
    words_per_row: usize,
}

fn map(path: &Path) -> Result<Option<Mmap>, SubstructureError> {
    let f = CountedFile::open(path).map_err(|e| SubstructureError::io(path, e))?;
    let len = f
        .metadata()
        .map_err(|e| SubstructureError::io(path, e))?
        .len();
    if len == 0 {
        return Ok(None); // an empty file cannot be mapped
    }
    // SAFETY: the parts are ingest's own files in its work directory, written and closed by
    // tasks that have ended; nothing writes them while they are mapped.
    unsafe { f.map() }
        .map(Some)
        .map_err(|e| SubstructureError::io(path, e))
}

fn with_ext(prefix: &Path, ext: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(ext);
    PathBuf::from(s)
}

fn length_at(lengths: &[u8], i: usize) -> u64 {
    u64::from(u32::from_le_bytes(
        lengths[4 * i..4 * i + 4].try_into().expect("4 bytes"),
    ))
}

impl Parts {
    /// Opens the parts named by `prefixes` (each `PART` of `PART.rows.u64` and its siblings), in
    /// task order, less the molecules at `dropped` (ascending positions in all the parts'
    /// molecules taken in order). Refuses parts whose files do not agree, naming them. With
    /// `total`, the parts are slices of parts holding `total` molecules in all (what a shard's
    /// writer received under MPI: `molsift_store::slices`), each with its positions beside it.
    pub fn open(
        prefixes: &[PathBuf],
        dropped: &[u64],
        words_per_row: usize,
        total: Option<u64>,
    ) -> Result<Parts, SubstructureError> {
        if words_per_row == 0 {
            return Err(SubstructureError::Invalid("rows of no words".into()));
        }
        let mut p = Parts {
            rows: Vec::new(),
            records: Vec::new(),
            lengths: Vec::new(),
            starts: Vec::new(),
            places: Places::default(),
            words_per_row,
        };
        let mut sizes = Vec::with_capacity(prefixes.len());
        for prefix in prefixes {
            let (rows_path, glen_path, grec_path) = (
                with_ext(prefix, ".rows.u64"),
                with_ext(prefix, ".glen.u32"),
                with_ext(prefix, ".grec.bin"),
            );
            let lengths = map(&glen_path)?;
            let rows = map(&rows_path)?;
            let records = map(&grec_path)?;
            let glen = lengths.as_deref().unwrap_or(&[]);
            let count = glen.len() / 4;
            let row_bytes = rows.as_ref().map_or(0, |m| m.len());
            let mut starts = Vec::with_capacity(count / STRIDE + 1);
            let mut at = 0u64;
            for i in 0..count {
                if i % STRIDE == 0 {
                    starts.push(at);
                }
                at += length_at(glen, i);
            }
            if glen.len() % 4 != 0
                || row_bytes != count * words_per_row * 8
                || at != records.as_ref().map_or(0, |m| m.len()) as u64
            {
                return Err(SubstructureError::Corrupted {
                    path: prefix.clone(),
                    reason: "its screening rows and graph records do not agree".into(),
                });
            }
            sizes.push(count as u64);
            p.rows.push(rows);
            p.records.push(records);
            p.lengths.push(lengths);
            p.starts.push(starts);
        }
        let paths: Vec<&Path> = prefixes.iter().map(PathBuf::as_path).collect();
        p.places = Places::for_parts(&paths, &sizes, total).map_err(SubstructureError::Invalid)?;
        p.places
            .leave_out(dropped.to_vec())
            .map_err(SubstructureError::Invalid)?;
        Ok(p)
    }

    /// Input rank `i`'s part and place in it.
    fn place(&self, i: usize) -> (usize, usize) {
        self.places.place(i as u64)
    }

    /// Appends molecule `i`'s row to `out`.
    fn push_row(&self, i: usize, out: &mut Vec<u64>) {
        let (k, local) = self.place(i);
        let w = self.words_per_row;
        let bytes = &self.rows[k]
            .as_ref()
            .expect("a part with molecules has rows")[local * w * 8..(local + 1) * w * 8];
        out.extend(
            bytes
                .chunks_exact(8)
                .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))),
        );
    }

    /// Where record `local` of part `k` starts and its length.
    fn span(&self, k: usize, local: usize) -> (usize, usize) {
        let glen = self.lengths[k].as_deref().unwrap_or(&[]);
        let first = local - local % STRIDE;
        let start = self.starts[k][local / STRIDE]
            + (first..local).map(|j| length_at(glen, j)).sum::<u64>();
        (start as usize, length_at(glen, local) as usize)
    }
}

impl Indexed for Parts {
    /// Molecules (input ranks).
    fn len(&self) -> usize {
        self.places.len() as usize
    }

    fn record_len(&self, i: usize) -> Option<usize> {
        let (k, local) = self.place(i);
        let glen = self.lengths[k].as_deref()?;
        Some(length_at(glen, local) as usize)
    }

    fn record(&self, i: usize) -> Option<&[u8]> {
        let (k, local) = self.place(i);
        let (a, len) = self.span(k, local);
        Some(
            self.records[k]
                .as_deref()
                .map_or(&[][..], |m| &m[a..a + len]),
        )
    }
}

/// Writes the dense planes of `parts`' rows (`bits` bits, input-rank order) at `path` (a new
/// temporary file) on `threads` threads; returns how many molecules have each bit.
pub fn planes_from_parts(
    parts: &Parts,
    path: &Path,
    bits: u32,
    threads: usize,
) -> Result<Vec<u64>, SubstructureError> {
    planes_of(parts, None, path, bits, threads)
}

/// [`planes_from_parts`] of the molecules at input ranks `order` (all of them in input-rank
/// order when `None`), molecule `i` of the planes being `order[i]`.
fn planes_of(
    parts: &Parts,
    order: Option<&[u32]>,
    path: &Path,
    bits: u32,
    threads: usize,
) -> Result<Vec<u64>, SubstructureError> {
    let n = order.map_or(parts.len(), <[u32]>::len);
    if let Some(&bad) = order.and_then(|o| o.iter().find(|&&r| r as usize >= parts.len())) {
        return Err(SubstructureError::Invalid(format!(
            "input rank {bad} of parts holding {} molecules",
            parts.len()
        )));
    }
    crate::create_planes(path, bits, n)?;
    let chunks = n.div_ceil(CHUNK);
    let states = molsift_tasks::try_each(
        threads,
        chunks,
        || {
            let counts = vec![0u64; bits as usize];
            (counts, Vec::with_capacity(CHUNK * parts.words_per_row))
        },
        |(counts, rows), c| {
            let (a, z) = (c * CHUNK, ((c + 1) * CHUNK).min(n));
            rows.clear();
            for i in a..z {
                parts.push_row(order.map_or(i, |o| o[i] as usize), rows);
            }
            let mine = crate::write_part(path, bits, n, a, rows, parts.words_per_row)?;
            counts.iter_mut().zip(mine).for_each(|(t, m)| *t += m);
            Ok::<(), SubstructureError>(())
        },
    )?;
    let mut counts = vec![0u64; bits as usize];
    for (theirs, _) in states {
        counts.iter_mut().zip(theirs).for_each(|(t, m)| *t += m);
    }
    Ok(counts)
}

/// The words of the mapped dense planes at `path` (`m`), checked to be `bits` planes of `n`
/// molecules.
fn planes_words<'m>(
    m: &'m Option<Mmap>,
    path: &Path,
    bits: u32,
    n: usize,
) -> Result<&'m [u64], SubstructureError> {
    let bytes = m.as_deref().unwrap_or(&[]);
    if bytes.len() as u64 != planes_bytes(bits, n) {
        return Err(SubstructureError::Corrupted {
            path: path.to_path_buf(),
            reason: format!("not the planes of {bits} bits for {n} molecules"),
        });
    }
    // SAFETY: mmap is page aligned and its size a multiple of 8 (checked above); the crate
    // refuses big-endian targets (lib.rs).
    let (head, words, tail) = unsafe { bytes.align_to::<u64>() };
    assert!(head.is_empty() && tail.is_empty(), "planes not u64 aligned");
    Ok(words)
}

/// Writes the substructure index of `to`, a version-2 store holding the molecules of `parts`
/// in another order (`source[i]`: the input rank of `to`'s molecule `i`), or a part of
/// them (a shard of a set), from the dense planes at `planes` ([`planes_from_parts`]: a plane
/// per entry of `bit_counts`, its counts) and the parts' graph records; the index means
/// `meaning`; the graph blocks compressed a window of about `window_bytes` of records at a time
/// ([`crate::compact::write_compact`]). Returns the bytes of the screen.
#[allow(clippy::too_many_arguments)]
pub fn index_from_parts(
    parts: &Parts,
    planes: &Path,
    bit_counts: &[u64],
    meaning: serde_json::Value,
    to: &dyn StoreFiles,
    source: &[u32],
    threads: usize,
    window_bytes: usize,
) -> Result<u64, SubstructureError> {
    let n = parts.len();
    let bits = u32::try_from(bit_counts.len())
        .map_err(|_| SubstructureError::Invalid(format!("{} bits", bit_counts.len())))?;
    let m = map(planes)?;
    let words = planes_words(&m, planes, bits, n)?;
    crate::write::carry_planes(
        words,
        n,
        bits,
        bit_counts,
        meaning,
        parts,
        to,
        source,
        threads,
        window_bytes,
    )
}

/// Writes the substructure index of `to`, one shard of a store set whose molecules are the
/// input ranks `source` of `parts`, from the shard's own rows: their dense planes are written at
/// `scratch` (a new temporary file, removed before returning) in the shard's order, then the
/// index as [`index_from_parts`] writes it. What a shard's writer does on its own, so nothing
/// of the whole set's rows is transposed in one place. Returns the bytes of the screen.
#[allow(clippy::too_many_arguments)]
pub fn shard_index_from_parts(
    parts: &Parts,
    scratch: &Path,
    bits: u32,
    meaning: serde_json::Value,
    to: &dyn StoreFiles,
    source: &[u32],
    threads: usize,
    window_bytes: usize,
) -> Result<u64, SubstructureError> {
    let written = (|| {
        let counts = planes_of(parts, Some(source), scratch, bits, threads)?;
        let m = map(scratch)?;
        let words = planes_words(&m, scratch, bits, source.len())?;
        crate::write::index_from_planes(
            words,
            bits,
            counts,
            meaning,
            parts,
            to,
            source,
            threads,
            window_bytes,
        )
    })();
    let _ = std::fs::remove_file(scratch);
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::Indexed;

    /// Writes a part of `rows` (one word per row) and `records` at `prefix`.
    fn part(prefix: &Path, rows: &[u64], records: &[Vec<u8>]) {
        let words: Vec<u8> = rows.iter().flat_map(|w| w.to_le_bytes()).collect();
        std::fs::write(with_ext(prefix, ".rows.u64"), words).unwrap();
        let lens: Vec<u8> = records
            .iter()
            .flat_map(|r| (r.len() as u32).to_le_bytes())
            .collect();
        std::fs::write(with_ext(prefix, ".glen.u32"), lens).unwrap();
        std::fs::write(with_ext(prefix, ".grec.bin"), records.concat()).unwrap();
    }

    #[test]
    fn parts_read_in_task_order_less_the_molecules_left_out() {
        let dir = tempfile::tempdir().unwrap();
        // three parts (one empty), 700 molecules in all, some left out
        let sizes = [300usize, 0, 400];
        let mut prefixes = Vec::new();
        let (mut all_rows, mut all_records) = (Vec::new(), Vec::new());
        for (k, &size) in sizes.iter().enumerate() {
            let rows: Vec<u64> = (0..size)
                .map(|i| ((k * 1000 + i) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) & 0x3ff)
                .collect();
            let records: Vec<Vec<u8>> = (0..size).map(|i| vec![k as u8; i % 7]).collect();
            let prefix = dir.path().join(format!("part{k}"));
            part(&prefix, &rows, &records);
            prefixes.push(prefix);
            all_rows.extend(rows);
            all_records.extend(records);
        }
        let dropped = [0u64, 5, 299, 300, 699];
        let p = Parts::open(&prefixes, &dropped, 1, None).unwrap();
        let keep: Vec<usize> = (0..700)
            .filter(|i| !dropped.contains(&(*i as u64)))
            .collect();
        assert_eq!(Indexed::len(&p), keep.len());
        for (i, &k) in keep.iter().enumerate() {
            assert_eq!(p.record(i).unwrap(), &all_records[k][..]);
            assert_eq!(p.record_len(i), Some(all_records[k].len()));
        }
        // the planes equal those write_part makes of the kept rows at once
        let (ours, theirs) = (dir.path().join("ours"), dir.path().join("theirs"));
        let counts = planes_from_parts(&p, &ours, 10, 3).unwrap();
        let kept_rows: Vec<u64> = keep.iter().map(|&k| all_rows[k]).collect();
        crate::create_planes(&theirs, 10, keep.len()).unwrap();
        let want = crate::write_part(&theirs, 10, keep.len(), 0, &kept_rows, 1).unwrap();
        assert_eq!(counts, want);
        assert_eq!(
            std::fs::read(&ours).unwrap(),
            std::fs::read(&theirs).unwrap()
        );
        // a shard's planes: the molecules at input ranks `order`, in that order
        let order: Vec<u32> = (0..keep.len() as u32).rev().step_by(3).collect();
        let (ours, theirs) = (dir.path().join("ours2"), dir.path().join("theirs2"));
        let counts = planes_of(&p, Some(&order), &ours, 10, 2).unwrap();
        let rows: Vec<u64> = order.iter().map(|&r| all_rows[keep[r as usize]]).collect();
        crate::create_planes(&theirs, 10, order.len()).unwrap();
        let want = crate::write_part(&theirs, 10, order.len(), 0, &rows, 1).unwrap();
        assert_eq!(counts, want);
        assert_eq!(
            std::fs::read(&ours).unwrap(),
            std::fs::read(&theirs).unwrap()
        );
        let past = [keep.len() as u32];
        assert!(planes_of(&p, Some(&past), &dir.path().join("x"), 10, 1).is_err());
        // a molecule left out beyond the parts, or out of order, is refused
        assert!(Parts::open(&prefixes, &[700], 1, None).is_err());
        assert!(Parts::open(&prefixes, &[5, 3], 1, None).is_err());
    }

    #[test]
    fn a_part_whose_files_disagree_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("bad");
        part(&prefix, &[1, 2, 3], &[vec![1], vec![2]]);
        let e = Parts::open(std::slice::from_ref(&prefix), &[], 1, None)
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains("bad"), "{e}");
        part(&prefix, &[1, 2], &[vec![1], vec![2]]);
        std::fs::write(with_ext(&prefix, ".grec.bin"), [1u8]).unwrap();
        assert!(Parts::open(&[prefix], &[], 1, None).is_err());
    }
}
