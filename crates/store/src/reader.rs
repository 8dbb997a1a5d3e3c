//! [`Store`]: opens a store read-only, checks it, and maps its files into memory.
//!
//! mmap is a visible choice: a file truncated *after* opening would fault on access, so open
//! checks every size against the manifest first, and [`Verify::Full`] also checks checksums.

use std::path::{Path, PathBuf};

use memmap2::Mmap;
use molsift_fp::FingerprintLayout;
use molsift_io::iostats::{self, CountedFile};

use crate::checksum::file_checksum;
use crate::layout::{self, expected_size, DATA_FILES};
use crate::{Manifest, StoreError};

/// How much checking [`Store::open`] does before trusting the files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// manifest, file sizes, offsets and counts (reads a few bytes per file)
    Sizes,
    /// all of `Sizes`, plus the checksum of every file (reads the whole store once)
    Full,
}

/// An open, checked, memory-mapped store.
pub struct Store {
    path: PathBuf,
    manifest: Manifest,
    layout: FingerprintLayout,
    maps: Vec<Option<Mmap>>,
}

impl Store {
    /// Opens the store at `path`, refusing anything incomplete, truncated or (with
    /// [`Verify::Full`]) corrupted, with an error naming the file.
    pub fn open(path: &Path, verify: Verify) -> Result<Store, StoreError> {
        let manifest = Manifest::read(path)?;
        let layout = manifest.fingerprint.layout()?;
        let n = manifest.counts.molecules;
        let c = manifest.counts;
        if c.records_in != c.molecules + c.rejected {
            return Err(inconsistent(
                path,
                format!("records in ({}) != molecules ({}) + rejected ({})", c.records_in, c.molecules, c.rejected),
            ));
        }
        if manifest.fingerprint.row_stride_words != layout.row_stride_words() {
            return Err(inconsistent(path, "fingerprint row stride does not match its bit count".into()));
        }
        let mut maps = Vec::with_capacity(DATA_FILES.len());
        for name in DATA_FILES {
            let file_path = path.join(name);
            let entry = manifest.files.get(name).ok_or_else(|| StoreError::BadManifest {
                path: path.join(layout::MANIFEST),
                reason: format!("no entry for {name}"),
            })?;
            let found = iostats::metadata(&file_path).map_err(|e| StoreError::io(&file_path, e))?.len();
            let expected = expected_size(name, n, &layout).unwrap_or(entry.bytes);
            if found != entry.bytes || found != expected {
                return Err(StoreError::WrongSize { path: file_path, expected, found });
            }
            if verify == Verify::Full {
                let sum = file_checksum(&file_path).map_err(|e| StoreError::io(&file_path, e))?;
                if sum != entry.xxh3 {
                    return Err(StoreError::Corrupted { path: file_path, expected: entry.xxh3.clone(), found: sum });
                }
            }
            maps.push(map(&file_path, found)?);
        }
        let store = Store { path: path.to_path_buf(), manifest, layout, maps };
        store.check_offsets()?;
        Ok(store)
    }

    /// The store directory.
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

    /// True if the store holds no molecule.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fingerprint `i` as its meaningful words (without row padding).
    pub fn fingerprint(&self, i: usize) -> &[u64] {
        let stride = self.layout.row_stride_words();
        let words = self.words(layout::FINGERPRINTS);
        &words[i * stride..i * stride + self.layout.words_per_row()]
    }

    /// Every fingerprint row, row `i` at `[i * row_stride_words ..]` (padding words are zero).
    pub fn fingerprint_words(&self) -> &[u64] {
        self.words(layout::FINGERPRINTS)
    }

    /// Every popcount, in store order.
    pub fn popcounts(&self) -> &[u16] {
        let b = self.bytes(layout::POPCOUNTS);
        // SAFETY: mmap is page aligned and the file holds 2n bytes.
        let (head, counts, tail) = unsafe { b.align_to::<u16>() };
        assert!(head.is_empty() && tail.is_empty(), "mapped popcounts not u16 aligned");
        counts
    }

    /// Popcount of fingerprint `i`.
    pub fn popcount(&self, i: usize) -> u16 {
        let b = &self.bytes(layout::POPCOUNTS)[2 * i..2 * i + 2];
        u16::from_le_bytes([b[0], b[1]])
    }

    /// Canonical SMILES of molecule `i`.
    pub fn smiles(&self, i: usize) -> &str {
        self.text(layout::SMILES, self.smiles_offset(i), self.smiles_offset(i + 1))
    }

    /// Id of molecule `i`.
    pub fn id(&self, i: usize) -> &str {
        self.text(layout::IDS, self.id_offset(i), self.id_offset(i + 1))
    }

    /// 1-based source line of molecule `i`.
    pub fn source_line(&self, i: usize) -> u64 {
        self.u64_at(layout::SOURCE_LINES, i)
    }

    /// Byte offset in `smiles.txt` where SMILES `i` starts (`i` may be `len()`).
    pub fn smiles_offset(&self, i: usize) -> u64 {
        self.u64_at(layout::SMILES_OFFSETS, i)
    }

    /// Byte offset in `ids.txt` where id `i` starts (`i` may be `len()`).
    pub fn id_offset(&self, i: usize) -> u64 {
        self.u64_at(layout::ID_OFFSETS, i)
    }

    fn bytes(&self, name: &str) -> &[u8] {
        let i = DATA_FILES.iter().position(|f| *f == name).expect("known store file");
        self.maps[i].as_deref().unwrap_or(&[])
    }

    fn words(&self, name: &str) -> &[u64] {
        let b = self.bytes(name);
        // SAFETY: mmap is page aligned and the fixed-width files are multiples of 8 bytes.
        let (head, words, tail) = unsafe { b.align_to::<u64>() };
        assert!(head.is_empty() && tail.is_empty(), "mapped file not u64 aligned");
        words
    }

    fn u64_at(&self, name: &str, i: usize) -> u64 {
        let b = &self.bytes(name)[8 * i..8 * i + 8];
        u64::from_le_bytes(b.try_into().expect("8 bytes"))
    }

    fn text(&self, name: &str, start: u64, end: u64) -> &str {
        let b = &self.bytes(name)[start as usize..end as usize - 1];
        std::str::from_utf8(b).unwrap_or("")
    }

    fn check_offsets(&self) -> Result<(), StoreError> {
        let n = self.len();
        for (offsets, data) in [(layout::SMILES_OFFSETS, layout::SMILES), (layout::ID_OFFSETS, layout::IDS)] {
            let first = self.u64_at(offsets, 0);
            let last = self.u64_at(offsets, n);
            if first != 0 || last != self.bytes(data).len() as u64 {
                return Err(inconsistent(
                    &self.path.join(offsets),
                    format!("offsets run {first}..{last} but {data} holds {} bytes", self.bytes(data).len()),
                ));
            }
        }
        Ok(())
    }
}

fn map(path: &Path, len: u64) -> Result<Option<Mmap>, StoreError> {
    if len == 0 {
        return Ok(None);
    }
    let f = CountedFile::open(path).map_err(|e| StoreError::io(path, e))?;
    // SAFETY: the store is read-only once written; sizes were checked against the manifest.
    // Counted as one MMAPS: what is read through the map is not counted.
    let m = unsafe { f.map() }.map_err(|e| StoreError::io(path, e))?;
    Ok(Some(m))
}

fn inconsistent(path: &Path, reason: String) -> StoreError {
    StoreError::Inconsistent { path: path.to_path_buf(), reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FingerprintSpec, StoreWriter};

    fn small_store(dir: &Path) -> PathBuf {
        let spec = FingerprintSpec::new("test", 2048, serde_json::json!({})).unwrap();
        let path = dir.join("s");
        let mut w = StoreWriter::create(&path, spec, false).unwrap();
        for i in 0..10u32 {
            w.add_molecule(&format!("m{i}"), "c1ccccc1", u64::from(i) + 1, &[i, 2047 - i]).unwrap();
        }
        w.finish().unwrap();
        path
    }

    #[test]
    fn packed_rows_store_the_same_as_on_bits() {
        let dir = tempfile::tempdir().unwrap();
        let spec = FingerprintSpec::new("test", 128, serde_json::json!({})).unwrap();
        let on: [&[u32]; 3] = [&[0, 7, 8, 63, 64, 127], &[], &[1, 100]];
        let mut a = StoreWriter::create(&dir.path().join("a"), spec.clone(), false).unwrap();
        let mut b = StoreWriter::create(&dir.path().join("b"), spec, false).unwrap();
        for (i, bits) in on.iter().enumerate() {
            a.add_molecule(&format!("m{i}"), "C", i as u64 + 1, bits).unwrap();
            let mut packed = [0u8; 16];
            for &bit in *bits {
                packed[(bit / 8) as usize] |= 1 << (bit % 8);
            }
            b.add_packed(&format!("m{i}"), "C", i as u64 + 1, &packed).unwrap();
        }
        assert!(b.add_packed("short", "C", 9, &[0u8; 15]).is_err());
        a.finish().unwrap();
        b.finish().unwrap();
        let (a, b) = (
            Store::open(&dir.path().join("a"), Verify::Full).unwrap(),
            Store::open(&dir.path().join("b"), Verify::Full).unwrap(),
        );
        assert_eq!(a.fingerprint_words(), b.fingerprint_words());
        assert_eq!(a.popcounts(), b.popcounts());
        assert_eq!(a.popcounts(), &[6, 0, 2]);
    }

    #[test]
    fn killed_ingest_leaves_no_store() {
        let dir = tempfile::tempdir().unwrap();
        let spec = FingerprintSpec::new("test", 64, serde_json::json!({})).unwrap();
        let path = dir.path().join("s");
        let mut w = StoreWriter::create(&path, spec, false).unwrap();
        w.add_molecule("a", "C", 1, &[1]).unwrap();
        let tmp = w.temporary_path().to_path_buf();
        std::mem::forget(w); // as if killed: no finish, no cleanup
        assert!(!path.exists());
        assert!(matches!(Store::open(&tmp, Verify::Sizes), Err(StoreError::NotAStore(_))));
    }

    #[test]
    fn truncated_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = small_store(dir.path());
        let fps = path.join(layout::FINGERPRINTS);
        let f = std::fs::OpenOptions::new().write(true).open(&fps).unwrap();
        f.set_len(256 * 9 + 100).unwrap();
        let err = Store::open(&path, Verify::Sizes).err().unwrap();
        assert!(matches!(err, StoreError::WrongSize { .. }), "{err}");
        assert!(err.to_string().contains("fingerprints.u64"), "{err}");
    }

    #[test]
    fn flipped_byte_is_refused_by_full_verify() {
        let dir = tempfile::tempdir().unwrap();
        let path = small_store(dir.path());
        let fps = path.join(layout::FINGERPRINTS);
        let mut bytes = std::fs::read(&fps).unwrap();
        bytes[1000] ^= 0x10;
        std::fs::write(&fps, bytes).unwrap();
        assert!(Store::open(&path, Verify::Sizes).is_ok());
        let err = Store::open(&path, Verify::Full).err().unwrap();
        assert!(matches!(err, StoreError::Corrupted { .. }), "{err}");
    }

    #[test]
    fn newer_version_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = small_store(dir.path());
        let m = path.join(layout::MANIFEST);
        let text = std::fs::read_to_string(&m).unwrap().replace("\"format_version\": 1", "\"format_version\": 99");
        std::fs::write(&m, text).unwrap();
        let err = Store::open(&path, Verify::Sizes).err().unwrap();
        assert!(matches!(err, StoreError::UnsupportedVersion { found: 99, .. }), "{err}");
    }

    #[test]
    fn records_are_fetched_by_position() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&small_store(dir.path()), Verify::Full).unwrap();
        assert_eq!(s.len(), 10);
        assert_eq!(s.id(7), "m7");
        assert_eq!(s.popcount(3), 2);
        assert_eq!(s.fingerprint(3)[0], 1 << 3);
        assert_eq!(s.fingerprint(3)[31], 1 << (2044 % 64));
        assert_eq!(s.source_line(9), 10);
    }

    #[test]
    fn existing_output_is_not_overwritten_unless_asked() {
        let dir = tempfile::tempdir().unwrap();
        let path = small_store(dir.path());
        let spec = FingerprintSpec::new("test", 2048, serde_json::json!({})).unwrap();
        assert!(matches!(StoreWriter::create(&path, spec.clone(), false), Err(StoreError::Exists(_))));
        let w = StoreWriter::create(&path, spec, true).unwrap();
        w.finish().unwrap();
        assert_eq!(Store::open(&path, Verify::Full).unwrap().len(), 0);
    }
}
