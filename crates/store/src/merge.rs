//! [`merge_parts`]: joins finished part stores (one per task: a slab or a chunk), in the order
//! given, into one store. Store order is therefore input order, whatever the number of workers
//! or ranks. Parts hold absolute source lines and ids (every task knows its first line), so
//! merging is copying. On the way it counts the duplicate molecules ([`crate::duplicates`])
//! and, when asked to dedupe, leaves them out and lists them in `duplicates.tsv`.

use std::collections::HashMap;
use std::path::Path;

use crate::{duplicates, Manifest, Store, StoreError, StoreWriter, Verify};

/// Concatenates `parts` (finished stores with the same fingerprint spec) into a new store at
/// `out`, recording `provenance` in its manifest and the number of duplicate molecules in its
/// counts. With `dedupe`, only the first molecule of each canonical SMILES is stored; the
/// others are listed in `duplicates.tsv` against it. Parts are checked by size, not re-hashed:
/// the merged files are hashed as they are written.
pub fn merge_parts(
    parts: &[&Path],
    out: &Path,
    overwrite: bool,
    provenance: serde_json::Value,
    dedupe: bool,
) -> Result<Manifest, StoreError> {
    merge_parts_dropped(parts, out, overwrite, provenance, dedupe).map(|(m, _)| m)
}

/// As [`merge_parts`], also returning the molecules `dedupe` left out, as ascending positions
/// among all the parts' molecules taken in order (what else the parts hold for each molecule,
/// such as ingest's substructure rows, is merged by leaving out the same ones).
pub fn merge_parts_dropped(
    parts: &[&Path],
    out: &Path,
    overwrite: bool,
    provenance: serde_json::Value,
    dedupe: bool,
) -> Result<(Manifest, Vec<u64>), StoreError> {
    let first = parts
        .first()
        .ok_or_else(|| StoreError::Invalid("no parts to merge".into()))?;
    let spec = Store::open(first, Verify::Sizes)?
        .manifest()
        .fingerprint
        .clone();
    let mut writer = StoreWriter::create(out, spec, overwrite)?;
    let dups = find_duplicates(parts)?;
    let dropped: Vec<u64> = if dedupe {
        dups.iter().map(|&(d, _)| d).collect()
    } else {
        Vec::new()
    };
    if !dedupe || dups.is_empty() {
        for part in parts {
            writer.append_store(&Store::open(part, Verify::Sizes)?)?;
        }
    } else {
        let first_of: HashMap<u64, u64> = dups.iter().copied().collect();
        // ids of the kept molecules that have duplicates, by their position among all parts
        let mut kept_ids: HashMap<u64, String> = HashMap::new();
        for &(_, kept) in &dups {
            kept_ids.insert(kept, String::new());
        }
        let dropped_before = |pos: u64| dups.partition_point(|&(d, _)| d < pos) as u64;
        let mut base = 0u64;
        for part in parts {
            let store = Store::open(part, Verify::Sizes)?;
            let mut dropped = Vec::new();
            writer.append_store_where(&store, |i| {
                let pos = base + i as u64;
                if let Some(id) = kept_ids.get_mut(&pos) {
                    *id = store.id(i).unwrap_or_default().to_string();
                }
                let keep = !first_of.contains_key(&pos);
                if !keep {
                    dropped.push(i);
                }
                keep
            })?;
            for i in dropped {
                let kept = first_of[&(base + i as u64)];
                let kept_position = kept - dropped_before(kept);
                let (line, id) = (store.source_line(i), store.id(i)?);
                writer.add_duplicate(line, id, kept_position, &kept_ids[&kept])?;
            }
            base += store.len() as u64;
        }
    }
    writer.set_duplicates(dups.len() as u64); // after the parts' counts, which have none
    writer.set_provenance(provenance);
    writer.finish().map(|m| (m, dropped))
}

/// The duplicates among the molecules of `parts` taken in order ([`duplicates::find`]): one
/// pass hashes every SMILES, a second fetches the SMILES of shared hashes.
fn find_duplicates(parts: &[&Path]) -> Result<Vec<(u64, u64)>, StoreError> {
    let mut hashes = Vec::new();
    let mut starts = Vec::with_capacity(parts.len() + 1);
    for part in parts {
        let store = Store::open(part, Verify::Sizes)?;
        starts.push(hashes.len() as u64);
        for i in 0..store.len() {
            hashes.push(duplicates::hash(store.smiles(i)?.as_bytes()));
        }
    }
    starts.push(hashes.len() as u64);
    let mut failed = None;
    let found = duplicates::find(
        hashes.len() as u64,
        |i| hashes[i as usize],
        |wanted| {
            let mut texts = Vec::with_capacity(wanted.len());
            let mut open: Option<(usize, Store)> = None;
            for &pos in wanted {
                let p = starts.partition_point(|&s| s <= pos) - 1;
                if open.as_ref().map(|o| o.0) != Some(p) {
                    match Store::open(parts[p], Verify::Sizes) {
                        Ok(s) => open = Some((p, s)),
                        Err(e) => {
                            failed.get_or_insert(e);
                            texts.push(Vec::new());
                            continue;
                        }
                    }
                }
                let (_, store) = open.as_ref().expect("opened above");
                match store.smiles((pos - starts[p]) as usize) {
                    Ok(t) => texts.push(t.as_bytes().to_vec()),
                    Err(e) => {
                        failed.get_or_insert(e);
                        texts.push(Vec::new());
                    }
                }
            }
            texts
        },
    );
    match failed {
        Some(e) => Err(e),
        None => Ok(found),
    }
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
        let m = merge_parts(&parts, &out, false, serde_json::json!({"k": 1}), false).unwrap();
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

    fn part_of(dir: &Path, name: &str, rows: &[(&str, &str, u64)]) -> std::path::PathBuf {
        let spec = FingerprintSpec::new("test", 64, serde_json::json!({})).unwrap();
        let path = dir.join(name);
        let mut w = StoreWriter::create(&path, spec, false).unwrap();
        for &(id, smiles, line) in rows {
            w.add_molecule(id, smiles, line, &[line as u32 % 64])
                .unwrap();
        }
        w.add_reject("f.smi", 100 + rows.len() as u64, 0, "bad", "unparsable")
            .unwrap();
        w.finish().unwrap();
        path
    }

    #[test]
    fn duplicates_are_counted_and_with_dedupe_left_out_and_listed() {
        let dir = tempfile::tempdir().unwrap();
        let a = part_of(
            dir.path(),
            "a",
            &[("a1", "CCO", 1), ("a2", "CCN", 2), ("a3", "CCO", 3)],
        );
        let b = part_of(
            dir.path(),
            "b",
            &[("b1", "CCC", 4), ("b2", "CCN", 5), ("b3", "CCO", 6)],
        );
        let parts = [a.as_path(), b.as_path()];
        let kept = dir.path().join("kept");
        let m = merge_parts(&parts, &kept, false, serde_json::Value::Null, false).unwrap();
        let c = m.counts;
        assert_eq!((c.records_in, c.molecules, c.rejected), (8, 6, 2));
        assert_eq!((c.duplicates, c.dropped), (Some(3), 0));
        assert!(!kept.join(duplicates::FILE).exists());

        let out = dir.path().join("deduped");
        let m = merge_parts(&parts, &out, false, serde_json::Value::Null, true).unwrap();
        let c = m.counts;
        assert_eq!((c.records_in, c.molecules, c.rejected), (8, 3, 2));
        assert_eq!((c.duplicates, c.dropped), (Some(3), 3));
        let s = Store::open(&out, Verify::Full).unwrap();
        let ids: Vec<&str> = (0..s.len()).map(|i| s.id(i).unwrap()).collect();
        assert_eq!(ids, ["a1", "a2", "b1"]);
        assert_eq!((s.source_line(2), s.fingerprint(2)[0]), (4, 1 << 4));
        let listed = std::fs::read_to_string(out.join(duplicates::FILE)).unwrap();
        assert_eq!(
            listed,
            format!(
                "{}3\ta3\t0\ta1\n5\tb2\t1\ta2\n6\tb3\t0\ta1\n",
                duplicates::HEADER
            )
        );
        let rejects = std::fs::read_to_string(out.join(crate::layout::REJECTS)).unwrap();
        assert_eq!(rejects.lines().count(), 3, "{rejects}");
    }
}
