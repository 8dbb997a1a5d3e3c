//! [`merge_parts`]: joins finished part stores (one per task: a slab or a chunk), in the order
//! given, into one store. Store order is therefore input order, whatever the number of workers
//! or ranks. Parts hold absolute source lines and ids (every task knows its first line), so
//! merging is copying.

use std::path::Path;

use crate::{Manifest, Store, StoreError, StoreWriter, Verify};

/// Concatenates `parts` (finished stores with the same fingerprint spec) into a new store at
/// `out`, recording `provenance` in its manifest. Parts are checked by size, not re-hashed: the
/// merged files are hashed as they are written.
pub fn merge_parts(
    parts: &[&Path],
    out: &Path,
    overwrite: bool,
    provenance: serde_json::Value,
) -> Result<Manifest, StoreError> {
    let first = parts
        .first()
        .ok_or_else(|| StoreError::Invalid("no parts to merge".into()))?;
    let spec = Store::open(first, Verify::Sizes)?
        .manifest()
        .fingerprint
        .clone();
    let mut writer = StoreWriter::create(out, spec, overwrite)?;
    for part in parts {
        writer.append_store(&Store::open(part, Verify::Sizes)?)?;
    }
    writer.set_provenance(provenance);
    writer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FingerprintSpec;

    fn part(dir: &Path, name: &str, first: u64, n: u64) -> std::path::PathBuf {
        let spec = FingerprintSpec::new("test", 64, serde_json::json!({})).unwrap();
        let path = dir.join(name);
        let mut w = StoreWriter::create(&path, spec, false).unwrap();
        for i in first..first + n {
            w.add_molecule(
                &format!("id{i}"),
                &"C".repeat(i as usize + 1),
                i,
                &[i as u32 % 64],
            )
            .unwrap();
        }
        w.add_reject("f.smi", first + n, 0, "bad", "unparsable")
            .unwrap();
        w.finish().unwrap();
        path
    }

    #[test]
    fn merged_store_is_parts_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let a = part(dir.path(), "a", 0, 3);
        let b = part(dir.path(), "b", 3, 0);
        let c = part(dir.path(), "c", 3, 4);
        let out = dir.path().join("all");
        let parts = [a.as_path(), b.as_path(), c.as_path()];
        let m = merge_parts(&parts, &out, false, serde_json::json!({"k": 1})).unwrap();
        assert_eq!(m.counts.molecules, 7);
        assert_eq!(m.counts.rejected, 3);
        assert_eq!(m.counts.records_in, 10);
        let s = Store::open(&out, Verify::Full).unwrap();
        for i in 0..7 {
            assert_eq!(s.id(i).unwrap(), format!("id{i}"));
            assert_eq!(s.smiles(i).unwrap(), "C".repeat(i + 1));
            assert_eq!(s.fingerprint(i)[0], 1u64 << (i % 64));
            assert_eq!(s.source_line(i), i as u64);
        }
        let rejects = std::fs::read_to_string(out.join("rejects.tsv")).unwrap();
        let lines: Vec<&str> = rejects
            .lines()
            .map(|r| r.split('\t').nth(1).unwrap())
            .collect();
        assert_eq!(lines, ["line", "3", "3", "7"], "{rejects}");
    }
}
