//! [`StoreFiles`]: what an index kept inside a store (the substructure index of
//! `crates/substructure`, the analog index of `crates/analogs`) needs of the store, whatever
//! reader opened it: its directory and manifest, its files as opened with it (one generation),
//! their checksums once per process, the canonical SMILES at a store position, and a way to
//! list files written into it afterwards ([`StoreFiles::register_files`], under
//! [`StoreFiles::lock`]). Both readers ([`crate::Store`] and [`crate::v2::StoreV2`]) implement
//! it, so every index is built and opened the same way on either.

use std::borrow::Cow;
use std::path::Path;

use molsift_iostats::CountedFile;

use crate::{FileEntry, Manifest, StoreError};

/// A store as the indexes inside it see it.
pub trait StoreFiles: Sync {
    /// The store directory.
    fn path(&self) -> &Path;
    /// The manifest the store was opened with.
    fn manifest(&self) -> &Manifest;
    /// Number of molecules.
    fn len(&self) -> usize {
        self.manifest().counts.molecules as usize
    }
    /// True when the store holds no molecule.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A file the manifest lists, as opened with the store.
    fn file(&self, name: &str) -> Result<&CountedFile, StoreError>;
    /// Checks `name`'s checksum against the manifest (once per process).
    fn verify_file(&self, name: &str) -> Result<(), StoreError>;
    /// The canonical SMILES at store position `i`.
    fn smiles_at(&self, i: usize) -> Result<Cow<'_, str>, StoreError>;
    /// Calls `f(i, smiles)` for every store position `i` of `range` in order (a reader that
    /// keeps the SMILES in compressed blocks decodes each block once, not once per molecule).
    fn for_each_smiles(
        &self,
        range: std::ops::Range<usize>,
        f: &mut dyn FnMut(usize, &str) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        for i in range {
            f(i, &self.smiles_at(i)?)?;
        }
        Ok(())
    }
    /// Lists files written into the store after it was finished in its manifest, atomically;
    /// returns the new manifest. Hold [`StoreFiles::lock`] meanwhile.
    fn register_files(&self, entries: Vec<(String, FileEntry)>) -> Result<Manifest, StoreError> {
        self.replace_files(entries, &[])
    }
    /// [`StoreFiles::register_files`], the files `retired` (an earlier format's, which the
    /// caller removes afterwards) no longer listed.
    fn replace_files(
        &self,
        entries: Vec<(String, FileEntry)>,
        retired: &[&str],
    ) -> Result<Manifest, StoreError>;
    /// An exclusive lock on the store directory, held until the guard is dropped.
    fn lock(&self) -> Result<crate::StoreLock<'_>, StoreError>;
}

impl StoreFiles for crate::Store {
    fn path(&self) -> &Path {
        crate::Store::path(self)
    }
    fn manifest(&self) -> &Manifest {
        crate::Store::manifest(self)
    }
    fn file(&self, name: &str) -> Result<&CountedFile, StoreError> {
        crate::Store::file(self, name)
    }
    fn verify_file(&self, name: &str) -> Result<(), StoreError> {
        crate::Store::verify_file(self, name)
    }
    fn smiles_at(&self, i: usize) -> Result<Cow<'_, str>, StoreError> {
        self.smiles(i).map(Cow::Borrowed)
    }
    fn replace_files(
        &self,
        entries: Vec<(String, FileEntry)>,
        retired: &[&str],
    ) -> Result<Manifest, StoreError> {
        crate::Store::replace_files(self, entries, retired)
    }
    fn lock(&self) -> Result<crate::StoreLock<'_>, StoreError> {
        crate::Store::lock(self)
    }
}

impl StoreFiles for crate::v2::StoreV2 {
    fn path(&self) -> &Path {
        crate::v2::StoreV2::path(self)
    }
    fn manifest(&self) -> &Manifest {
        crate::v2::StoreV2::manifest(self)
    }
    fn file(&self, name: &str) -> Result<&CountedFile, StoreError> {
        crate::v2::StoreV2::file(self, name)
    }
    fn verify_file(&self, name: &str) -> Result<(), StoreError> {
        crate::v2::StoreV2::verify_file(self, name)
    }
    fn smiles_at(&self, i: usize) -> Result<Cow<'_, str>, StoreError> {
        self.smiles(i).map(Cow::Owned)
    }
    fn for_each_smiles(
        &self,
        range: std::ops::Range<usize>,
        f: &mut dyn FnMut(usize, &str) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        if range.is_empty() {
            return Ok(());
        }
        let column = self.smiles_column()?;
        let block = column.block_len().max(1);
        let blocks = range.start / block..(range.end - 1) / block + 1;
        column.for_each_in_blocks(
            blocks,
            |i, s| {
                if range.contains(&i) {
                    f(i, s)
                } else {
                    Ok(())
                }
            },
        )
    }
    fn replace_files(
        &self,
        entries: Vec<(String, FileEntry)>,
        retired: &[&str],
    ) -> Result<Manifest, StoreError> {
        crate::v2::StoreV2::replace_files(self, entries, retired)
    }
    fn lock(&self) -> Result<crate::StoreLock<'_>, StoreError> {
        crate::v2::StoreV2::lock(self)
    }
}

/// Opens the store at `path` with the reader its manifest's version calls for (sizes checked;
/// checksums at first use), as the indexes see it.
pub fn open_any(path: &Path) -> Result<Box<dyn StoreFiles + Send>, StoreError> {
    match crate::Store::open(path, crate::Verify::Sizes) {
        Ok(s) => Ok(Box::new(s)),
        Err(StoreError::OtherVersion { found, .. }) if found == crate::v2::VERSION => {
            Ok(Box::new(crate::v2::StoreV2::open(path, false)?))
        }
        Err(e) => Err(e),
    }
}
