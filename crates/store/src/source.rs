//! [`Molecules`]: what the one store's writer ([`crate::v2`]) reads its molecules from, by
//! input rank (the order the records came in, less any `--dedupe` left out). Two sources have
//! them: a version-1 [`Store`] (an old store, what `molsift upgrade` converts) and ingest's
//! part stores merged as sorted runs ([`crate::runs::PartRuns`]), read where they lie, with no
//! staging copy between the workers and the one store.

use crate::{Counts, FingerprintSpec, Store, StoreError};

/// Molecules by input rank, with what the one store's manifest and side files say of them.
pub trait Molecules: Sync {
    /// Molecules (input ranks `0..len()`).
    fn len(&self) -> usize;

    /// True when there is no molecule.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The fingerprint spec of every molecule.
    fn spec(&self) -> &FingerprintSpec;

    /// Canonical SMILES of input rank `r`.
    fn smiles(&self, r: usize) -> Result<&str, StoreError>;

    /// Id of input rank `r`.
    fn id(&self, r: usize) -> Result<&str, StoreError>;

    /// The 1-based source line of input rank `r`'s record.
    fn source_line(&self, r: usize) -> u64;

    /// The popcount of input rank `r`'s fingerprint.
    fn popcount(&self, r: usize) -> u16;

    /// The fingerprint of input rank `r` (its meaningful words).
    fn fingerprint(&self, r: usize) -> &[u64];

    /// The counts of the whole (records in, molecules, rejected, duplicates, dropped).
    fn counts(&self) -> Counts;

    /// The provenance the one store records (an upgraded store says from what).
    fn provenance(&self) -> serde_json::Value;

    /// Checks the checksums of every file the writer copies from (what is copied is what was
    /// written).
    fn check_columns(&self) -> Result<(), StoreError>;

    /// `rejects.tsv`: its header and every rejected record.
    fn rejects(&self) -> Result<Vec<u8>, StoreError>;

    /// `duplicates.tsv` (after `--dedupe`) with kept positions in the one store's `order`
    /// (store position -> input rank); None when no molecule was left out.
    fn duplicates(&self, order: &[u32]) -> Result<Option<Vec<u8>>, StoreError>;
}

impl Molecules for Store {
    fn len(&self) -> usize {
        Store::len(self)
    }

    fn spec(&self) -> &FingerprintSpec {
        &self.manifest().fingerprint
    }

    fn smiles(&self, r: usize) -> Result<&str, StoreError> {
        Store::smiles(self, r)
    }

    fn id(&self, r: usize) -> Result<&str, StoreError> {
        Store::id(self, r)
    }

    fn source_line(&self, r: usize) -> u64 {
        Store::source_line(self, r)
    }

    fn popcount(&self, r: usize) -> u16 {
        Store::popcount(self, r)
    }

    fn fingerprint(&self, r: usize) -> &[u64] {
        Store::fingerprint(self, r)
    }

    fn counts(&self) -> Counts {
        self.manifest().counts
    }

    fn provenance(&self) -> serde_json::Value {
        let mut provenance = self.manifest().provenance.clone();
        if let Some(p) = provenance.as_object_mut() {
            // a staging store of an older ingest says so ("staging": true): the one store
            // written from it was not upgraded from anything
            if p.remove("staging").is_none() {
                p.insert("upgraded_from_version".into(), 1.into());
            }
        }
        provenance
    }

    fn check_columns(&self) -> Result<(), StoreError> {
        for name in [
            crate::layout::SMILES,
            crate::layout::SMILES_OFFSETS,
            crate::layout::IDS,
            crate::layout::ID_OFFSETS,
            crate::layout::FINGERPRINTS,
            crate::layout::POPCOUNTS,
            crate::layout::SOURCE_LINES,
            crate::layout::REJECTS,
        ] {
            self.verify_file(name)?;
        }
        Ok(())
    }

    fn rejects(&self) -> Result<Vec<u8>, StoreError> {
        let path = self.path().join(crate::layout::REJECTS);
        std::fs::read(&path).map_err(|e| StoreError::io(path, e))
    }

    fn duplicates(&self, order: &[u32]) -> Result<Option<Vec<u8>>, StoreError> {
        if self.manifest().files.contains_key(crate::duplicates::FILE) {
            crate::v2::renumber_duplicates(self, order).map(Some)
        } else {
            Ok(None)
        }
    }
}
