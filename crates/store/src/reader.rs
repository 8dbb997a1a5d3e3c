//! [`Store`]: opens a store read-only, checks it, and maps its files into memory.
//!
//! A store is opened once: one handle on its directory, and every file (manifest, data files,
//! the column index of `crates/search` through [`Store::file`]) opened relative to that
//! handle, so a reader sees one generation of the store even while `ingest --overwrite`
//! swaps a new one into place (an open that races with the swap starts again on the new one).
//!
//! What is checked when:
//! * at open, always: the manifest (format, version, its own checksum), every file's size
//!   against the manifest and the counts, the first and last offsets;
//! * at each access: the offsets of the record read (in order, inside the file, ending at a
//!   line end) and that its text is UTF-8;
//! * once per process, at first use ([`Store::verify_file`]): a file's checksum; with
//!   [`Verify::Full`] (what `molsift info` does) every file, the column index's included.
//!
//! mmap is a visible choice: a file truncated *after* opening would fault on access, so open
//! checks every size against the manifest first.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use memmap2::Mmap;
use molsift_fp::FingerprintLayout;
use molsift_iostats::CountedFile;

use crate::checksum::to_hex;
use crate::layout::{self, expected_size, DATA_FILES};
use crate::manifest::FileEntry;
use crate::{replace, Manifest, StoreError};

/// How much checking [`Store::open`] does before trusting the files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// manifest, file sizes, offsets and counts (reads a few bytes per file); checksums are
    /// checked later, file by file, when [`Store::verify_file`] is called
    Sizes,
    /// all of `Sizes`, plus the checksum of every file listed in the manifest (reads the whole
    /// store once)
    Full,
}

/// An open, checked, memory-mapped store.
pub struct Store {
    path: PathBuf,
    dir: CountedFile,
    manifest: Manifest,
    layout: FingerprintLayout,
    maps: Vec<Option<Mmap>>,
    /// the open data files, in the order of `DATA_FILES`
    files: Vec<CountedFile>,
    /// the other files the manifest lists (the column index), opened with the store
    extras: Vec<(String, CountedFile)>,
    /// per data file: its checksum checked (once per process): Ok, or the checksum found
    checked: Vec<OnceLock<Result<(), String>>>,
}

impl Store {
    /// Opens the store at `path`, refusing anything incomplete, truncated or (with
    /// [`Verify::Full`]) corrupted, with an error naming the file.
    pub fn open(path: &Path, verify: Verify) -> Result<Store, StoreError> {
        let store = open_retrying(|| Self::open_once(path))?;
        if verify == Verify::Full {
            store.verify_all()?;
        }
        Ok(store)
    }

    fn open_once(path: &Path) -> Result<Store, StoreError> {
        let dir = CountedFile::open_dir(path).map_err(|e| match e.raw_os_error() {
            Some(libc::ENOTDIR) => StoreError::NotAStore(path.to_path_buf()),
            _ => StoreError::io(path, e),
        })?;
        let manifest = Manifest::read_in(&dir, path).map_err(|e| replaced_or(path, &dir, e))?;
        if manifest.format_version != crate::FORMAT_VERSION {
            return Err(StoreError::OtherVersion {
                path: path.to_path_buf(),
                found: manifest.format_version,
            });
        }
        let layout = manifest.fingerprint.layout()?;
        let n = manifest.counts.molecules;
        let c = manifest.counts;
        if !c.add_up() {
            return Err(inconsistent(
                path,
                format!(
                    "records in ({}) != molecules ({}) + rejected ({}) + duplicates left out ({})",
                    c.records_in, c.molecules, c.rejected, c.dropped
                ),
            ));
        }
        if manifest.fingerprint.row_stride_words != layout.row_stride_words() {
            return Err(inconsistent(
                path,
                "fingerprint row stride does not match its bit count".into(),
            ));
        }
        for name in DATA_FILES {
            if !manifest.files.contains_key(name) {
                return Err(StoreError::BadManifest {
                    path: path.join(layout::MANIFEST),
                    reason: format!("no entry for {name}"),
                });
            }
        }
        let mut store = Store {
            path: path.to_path_buf(),
            dir,
            manifest,
            layout,
            maps: Vec::new(),
            files: Vec::new(),
            extras: Vec::new(),
            checked: Vec::new(),
        };
        for name in DATA_FILES {
            let file = store.open_file(name)?;
            let found = store.manifest.files[name].bytes;
            let expected = expected_size(name, n, &layout).unwrap_or(found);
            if found != expected {
                return Err(StoreError::WrongSize {
                    path: path.join(name),
                    expected,
                    found,
                });
            }
            store.maps.push(map(&file, found)?);
            store.files.push(file);
            store.checked.push(OnceLock::new());
        }
        let extra: Vec<String> = store
            .manifest
            .files
            .keys()
            .filter(|k| !DATA_FILES.contains(&k.as_str()))
            .cloned()
            .collect();
        for name in extra {
            let file = store.open_file(&name)?; // present, with its size: a deleted index file shows at once
            store.extras.push((name, file));
        }
        store.check_offsets()?;
        Ok(store)
    }

    /// A file the manifest lists (a data file, or one added later such as the column index),
    /// as opened with the store: the same generation as everything else read from it.
    pub fn file(&self, name: &str) -> Result<&CountedFile, StoreError> {
        if let Some(f) = self.data_file(name) {
            return Ok(f);
        }
        self.extras
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, f)| f)
            .ok_or_else(|| StoreError::Inconsistent {
                path: self.path.join(name),
                reason: "not listed in the store's manifest".into(),
            })
    }

    /// Opens `name` inside the store's directory (the one generation opened), checking its
    /// size against the manifest when the manifest lists it.
    fn open_file(&self, name: &str) -> Result<CountedFile, StoreError> {
        let file_path = self.path.join(name);
        let file = CountedFile::open_at(&self.dir, name, libc::O_RDONLY, 0)
            .map_err(|e| replaced_or(&self.path, &self.dir, StoreError::io(&file_path, e)))?;
        if let Some(entry) = self.manifest.files.get(name) {
            let found = file
                .metadata()
                .map_err(|e| StoreError::io(&file_path, e))?
                .len();
            if found != entry.bytes {
                return Err(StoreError::WrongSize {
                    path: file_path,
                    expected: entry.bytes,
                    found,
                });
            }
        }
        Ok(file)
    }

    /// Checks the checksum of `name` against the manifest, reading it once per process for a
    /// data file (later calls return the first answer at once). Files not in the manifest
    /// are an error.
    pub fn verify_file(&self, name: &str) -> Result<(), StoreError> {
        let path = self.path.join(name);
        let entry = self
            .manifest
            .files
            .get(name)
            .ok_or_else(|| StoreError::Inconsistent {
                path: path.clone(),
                reason: "not listed in the store's manifest".into(),
            })?;
        let Some(i) = DATA_FILES.iter().position(|f| *f == name) else {
            let sum = checksum_of(self.file(name)?, &path, entry.bytes)?;
            return compare(&path, entry, sum);
        };
        let found = self.checked[i].get_or_init(|| {
            let sum = to_hex(xxhash_rust::xxh3::xxh3_64(
                self.maps[i].as_deref().unwrap_or(&[]),
            ));
            if sum == entry.xxh3 {
                Ok(())
            } else {
                Err(sum)
            }
        });
        match found {
            Ok(()) => Ok(()),
            Err(sum) => compare(&path, entry, sum.clone()),
        }
    }

    /// Checks every file the manifest lists (what `molsift info` does).
    pub fn verify_all(&self) -> Result<(), StoreError> {
        for name in self.manifest.files.keys() {
            self.verify_file(name)?;
        }
        Ok(())
    }

    /// Adds (or replaces) entries of files written into the store after it was finished (the
    /// column index) to its manifest, atomically (a new manifest under a temporary name,
    /// renamed over the old one), and returns the new manifest (this `Store` keeps the one it
    /// opened). Hold [`Store::lock`] while writing such files. Refused if the store's path no
    /// longer names the directory this `Store` opened (it was replaced meanwhile).
    pub fn register_files(
        &self,
        entries: Vec<(String, FileEntry)>,
    ) -> Result<Manifest, StoreError> {
        register_in(&self.path, &self.dir, &self.manifest, entries, &[])
    }

    /// [`Store::register_files`], the files `retired` (an earlier format's) no longer listed.
    pub fn replace_files(
        &self,
        entries: Vec<(String, FileEntry)>,
        retired: &[&str],
    ) -> Result<Manifest, StoreError> {
        register_in(&self.path, &self.dir, &self.manifest, entries, retired)
    }

    /// An exclusive lock on the store directory (`flock`), held until the guard is dropped:
    /// writers of files added to a finished store (the column index) take it, so concurrent
    /// `molsift index` runs take turns.
    pub fn lock(&self) -> Result<StoreLock<'_>, StoreError> {
        lock_dir(&self.path, &self.dir)
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
        assert!(
            head.is_empty() && tail.is_empty(),
            "mapped popcounts not u16 aligned"
        );
        counts
    }

    /// Popcount of fingerprint `i`.
    pub fn popcount(&self, i: usize) -> u16 {
        let b = &self.bytes(layout::POPCOUNTS)[2 * i..2 * i + 2];
        u16::from_le_bytes([b[0], b[1]])
    }

    /// Canonical SMILES of molecule `i`, or an error if the store is damaged there.
    pub fn smiles(&self, i: usize) -> Result<&str, StoreError> {
        self.text(layout::SMILES_OFFSETS, layout::SMILES, i)
    }

    /// Id of molecule `i`, or an error if the store is damaged there.
    pub fn id(&self, i: usize) -> Result<&str, StoreError> {
        self.text(layout::ID_OFFSETS, layout::IDS, i)
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

    /// The open data file `name` (one of `layout::DATA_FILES`), e.g. to map it again from
    /// another language: the same generation as everything else this `Store` reads.
    pub fn data_file(&self, name: &str) -> Option<&CountedFile> {
        DATA_FILES
            .iter()
            .position(|f| *f == name)
            .map(|i| &self.files[i])
    }

    fn bytes(&self, name: &str) -> &[u8] {
        let i = DATA_FILES
            .iter()
            .position(|f| *f == name)
            .expect("known store file");
        self.maps[i].as_deref().unwrap_or(&[])
    }

    fn words(&self, name: &str) -> &[u64] {
        let b = self.bytes(name);
        // SAFETY: mmap is page aligned and the fixed-width files are multiples of 8 bytes.
        let (head, words, tail) = unsafe { b.align_to::<u64>() };
        assert!(
            head.is_empty() && tail.is_empty(),
            "mapped file not u64 aligned"
        );
        words
    }

    fn u64_at(&self, name: &str, i: usize) -> u64 {
        let b = &self.bytes(name)[8 * i..8 * i + 8];
        u64::from_le_bytes(b.try_into().expect("8 bytes"))
    }

    /// Entry `i` of a text column: offsets in order and inside the file, one line ending in
    /// `\n`, UTF-8; anything else is damage, named with the file and the entry.
    fn text(&self, offsets: &str, data: &str, i: usize) -> Result<&str, StoreError> {
        if i >= self.len() {
            return Err(StoreError::Invalid(format!(
                "molecule {i} out of range: the store holds {}",
                self.len()
            )));
        }
        let (start, end) = (self.u64_at(offsets, i), self.u64_at(offsets, i + 1));
        let bytes = self.bytes(data);
        let line = (start < end && end <= bytes.len() as u64)
            .then(|| &bytes[start as usize..end as usize])
            .filter(|b| b.last() == Some(&b'\n') && !b[..b.len() - 1].contains(&b'\n'));
        let Some(line) = line else {
            return Err(inconsistent(
                &self.path.join(offsets),
                format!(
                    "entry {i} runs from byte {start} to {end}, not one line of {data} ({} bytes)",
                    bytes.len()
                ),
            ));
        };
        std::str::from_utf8(&line[..line.len() - 1]).map_err(|_| {
            inconsistent(
                &self.path.join(data),
                format!("entry {i} (bytes {start}..{end}) is not UTF-8"),
            )
        })
    }

    fn check_offsets(&self) -> Result<(), StoreError> {
        let n = self.len();
        for (offsets, data) in [
            (layout::SMILES_OFFSETS, layout::SMILES),
            (layout::ID_OFFSETS, layout::IDS),
        ] {
            let first = self.u64_at(offsets, 0);
            let last = self.u64_at(offsets, n);
            if first != 0 || last != self.bytes(data).len() as u64 {
                return Err(inconsistent(
                    &self.path.join(offsets),
                    format!(
                        "offsets run {first}..{last} but {data} holds {} bytes",
                        self.bytes(data).len()
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The guard of [`Store::lock`] (and of the version-2 store's): unlocks when dropped.
pub struct StoreLock<'a> {
    dir: &'a CountedFile,
}

impl Drop for StoreLock<'_> {
    fn drop(&mut self) {
        use std::os::unix::io::AsRawFd;
        // SAFETY: flock on a descriptor the store owns.
        unsafe { libc::flock(self.dir.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// An exclusive `flock` on the store directory open as `dir`.
pub(crate) fn lock_dir<'a>(path: &Path, dir: &'a CountedFile) -> Result<StoreLock<'a>, StoreError> {
    use std::os::unix::io::AsRawFd;
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(StoreLock { dir });
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(StoreError::io(path, e));
        }
    }
}

/// `manifest` with `entries` added (or replaced), written atomically into the store open as
/// `dir` (a new manifest under a temporary name, renamed over the old one); refused when
/// `path` no longer names that directory.
pub(crate) fn register_in(
    path: &Path,
    dir: &CountedFile,
    manifest: &Manifest,
    entries: Vec<(String, FileEntry)>,
    retired: &[&str],
) -> Result<Manifest, StoreError> {
    if was_replaced(path, dir) {
        return Err(StoreError::Replaced(path.to_path_buf()));
    }
    let mut manifest = manifest.clone();
    for name in retired {
        manifest.files.remove(*name);
    }
    for (name, entry) in entries {
        manifest.files.insert(name, entry);
    }
    let manifest = manifest.sealed();
    let target = path.join(layout::MANIFEST);
    let tmp = replace::temporary_sibling(&target, "tmp");
    let tmp_name = tmp
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("manifest.tmp")
        .to_string();
    let write = || -> std::io::Result<()> {
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
        let f = CountedFile::open_at(dir, &tmp_name, flags, 0o644)?;
        f.write_all_at(manifest.to_text().as_bytes(), 0)?;
        f.sync_all()?;
        rename_in(dir, &tmp_name, layout::MANIFEST)?;
        dir.sync_all()
    };
    write().map_err(|e| StoreError::io(&target, e))?;
    Ok(manifest)
}

fn map(file: &CountedFile, len: u64) -> Result<Option<Mmap>, StoreError> {
    if len == 0 {
        return Ok(None);
    }
    // SAFETY: the store is read-only once written; sizes were checked against the manifest.
    // Counted as one MMAPS: what is read through the map is not counted.
    let m = unsafe { file.map() }.map_err(|e| StoreError::io(file.path(), e))?;
    Ok(Some(m))
}

/// `error`, or [`StoreError::Replaced`] when `path` no longer names the directory open as
/// `dir` (a swap happened while opening: the caller opens again).
/// `open()`, started again (a few times at most) while it fails because the store was swapped
/// for a new generation during the open ([`StoreError::Replaced`]).
pub(crate) fn open_retrying<T>(open: impl Fn() -> Result<T, StoreError>) -> Result<T, StoreError> {
    let mut tries = 0;
    loop {
        match open() {
            Err(StoreError::Replaced(_)) if tries < 5 => tries += 1,
            other => return other,
        }
    }
}

pub(crate) fn replaced_or(path: &Path, dir: &CountedFile, error: StoreError) -> StoreError {
    if was_replaced(path, dir) {
        StoreError::Replaced(path.to_path_buf())
    } else {
        error
    }
}

/// Whether `path` no longer names the directory open as `dir` (gone, or another one there).
fn was_replaced(path: &Path, dir: &CountedFile) -> bool {
    match (dir.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() != b.dev() || a.ino() != b.ino(),
        (Ok(_), Err(_)) => true,
        _ => false,
    }
}

fn rename_in(dir: &CountedFile, from: &str, to: &str) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd;
    let c = |s: &str| {
        std::ffi::CString::new(s)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
    };
    let (a, b) = (c(from)?, c(to)?);
    let fd = dir.as_raw_fd();
    // SAFETY: two valid C strings relative to a directory descriptor we own.
    if unsafe { libc::renameat(fd, a.as_ptr(), fd, b.as_ptr()) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// XXH3-64 of the `len` bytes of `file` (its size in the manifest), read with positioned reads
/// of 1 MiB (the handle's offset is not moved) and one more read that must find the end of the
/// file; a file that is no longer `len` bytes long is `WrongSize`.
pub(crate) fn checksum_of(file: &CountedFile, path: &Path, len: u64) -> Result<String, StoreError> {
    const CHUNK: u64 = 1 << 20;
    let wrong_size = || StoreError::WrongSize {
        path: path.to_path_buf(),
        expected: len,
        found: file.metadata().map_or(0, |m| m.len()),
    };
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; len.min(CHUNK) as usize];
    let mut at = 0u64;
    while at < len {
        let chunk = &mut buf[..(len - at).min(CHUNK) as usize];
        file.read_exact_at(chunk, at).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => wrong_size(),
            _ => StoreError::io(path, e),
        })?;
        hasher.update(chunk);
        at += chunk.len() as u64;
    }
    match file.read_at(&mut [0u8; 1], len) {
        Ok(0) => Ok(to_hex(hasher.digest())),
        Ok(_) => Err(wrong_size()),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

pub(crate) fn compare(path: &Path, entry: &FileEntry, found: String) -> Result<(), StoreError> {
    if found == entry.xxh3 {
        Ok(())
    } else {
        Err(StoreError::Corrupted {
            path: path.to_path_buf(),
            expected: entry.xxh3.clone(),
            found,
        })
    }
}

fn inconsistent(path: &Path, reason: String) -> StoreError {
    StoreError::Inconsistent {
        path: path.to_path_buf(),
        reason,
    }
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
            w.add_molecule(
                &format!("m{i}"),
                "c1ccccc1",
                u64::from(i) + 1,
                &[i, 2047 - i],
            )
            .unwrap();
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
            a.add_molecule(&format!("m{i}"), "C", i as u64 + 1, bits)
                .unwrap();
            let mut packed = [0u8; 16];
            for &bit in *bits {
                packed[(bit / 8) as usize] |= 1 << (bit % 8);
            }
            b.add_packed(&format!("m{i}"), "C", i as u64 + 1, &packed)
                .unwrap();
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
        assert!(matches!(
            Store::open(&tmp, Verify::Sizes),
            Err(StoreError::NotAStore(_))
        ));
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
        let text = std::fs::read_to_string(&m)
            .unwrap()
            .replace("\"format_version\": 1", "\"format_version\": 99");
        std::fs::write(&m, text).unwrap();
        let err = Store::open(&path, Verify::Sizes).err().unwrap();
        assert!(
            matches!(err, StoreError::UnsupportedVersion { ref found, .. } if found == "99"),
            "{err}"
        );
    }

    #[test]
    fn version_is_reported_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = small_store(dir.path());
        let m = path.join(layout::MANIFEST);
        let good = std::fs::read_to_string(&m).unwrap();
        for v in ["\"1\"", "-1", "1099511627776"] {
            std::fs::write(
                &m,
                good.replace("\"format_version\": 1", &format!("\"format_version\": {v}")),
            )
            .unwrap();
            let err = Store::open(&path, Verify::Sizes).err().unwrap();
            assert!(
                err.to_string()
                    .contains(&format!("version {v} is not supported")),
                "{err}"
            );
        }
    }

    #[test]
    fn edited_manifest_is_refused_by_its_own_checksum() {
        let dir = tempfile::tempdir().unwrap();
        let path = small_store(dir.path());
        let m = path.join(layout::MANIFEST);
        let text = std::fs::read_to_string(&m)
            .unwrap()
            .replace("\"molecules\": 10", "\"molecules\": 9");
        std::fs::write(&m, text).unwrap();
        let err = Store::open(&path, Verify::Sizes).err().unwrap();
        assert!(
            matches!(err, StoreError::Corrupted { .. })
                && err.to_string().contains("manifest.json"),
            "{err}"
        );
    }

    #[test]
    fn registered_files_are_verified_and_listed() {
        let dir = tempfile::tempdir().unwrap();
        let path = small_store(dir.path());
        std::fs::write(path.join("columns.json"), b"{}").unwrap();
        let store = Store::open(&path, Verify::Full).unwrap();
        let entry = FileEntry {
            bytes: 2,
            xxh3: to_hex(xxhash_rust::xxh3::xxh3_64(b"{}")),
        };
        let m = store
            .register_files(vec![("columns.json".into(), entry)])
            .unwrap();
        assert!(m.files.contains_key("columns.json"));
        let again = Store::open(&path, Verify::Full).unwrap();
        assert_eq!(again.manifest(), &m);
        std::fs::write(path.join("columns.json"), b"[]").unwrap();
        let err = Store::open(&path, Verify::Full).err().unwrap();
        assert!(err.to_string().contains("columns.json"), "{err}");
    }

    #[test]
    fn damaged_offsets_are_errors_at_access() {
        let dir = tempfile::tempdir().unwrap();
        let path = small_store(dir.path());
        let off = path.join(layout::ID_OFFSETS);
        let mut bytes = std::fs::read(&off).unwrap();
        bytes[8 * 3] += 1; // id 2 ends one byte late, id 3 starts one late
        std::fs::write(&off, bytes).unwrap();
        let s = Store::open(&path, Verify::Sizes).unwrap();
        assert_eq!(s.id(0).unwrap(), "m0");
        let err = s.id(2).unwrap_err().to_string();
        assert!(
            err.contains("ids.offsets.u64") && err.contains("entry 2"),
            "{err}"
        );
        assert!(s.verify_file(layout::ID_OFFSETS).is_err());
    }

    #[test]
    fn records_are_fetched_by_position() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&small_store(dir.path()), Verify::Full).unwrap();
        assert_eq!(s.len(), 10);
        assert_eq!(s.id(7).unwrap(), "m7");
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
        assert!(matches!(
            StoreWriter::create(&path, spec.clone(), false),
            Err(StoreError::Exists(_))
        ));
        let w = StoreWriter::create(&path, spec, true).unwrap();
        w.finish().unwrap();
        assert_eq!(Store::open(&path, Verify::Full).unwrap().len(), 0);
    }
}
