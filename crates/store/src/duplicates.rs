//! Duplicate molecules: a molecule is a duplicate when its canonical SMILES equals the SMILES
//! of an earlier molecule of the same store (canonical SMILES name a molecule, so two records
//! of one compound are found whatever SMILES they were written with). [`find`] pairs each
//! duplicate with the first molecule of its SMILES; `duplicates.tsv` ([`HEADER`], [`row`]) is
//! where an ingest with `--dedupe` lists the records it left out.
//!
//! [`find`] hashes every SMILES (XXH3-64), sorts the (hash, position) pairs and compares the
//! SMILES of equal hashes byte for byte, so a hash collision never makes two molecules one.
//! It holds 16 bytes per molecule while it runs.

use std::collections::HashMap;

use xxhash_rust::xxh3::xxh3_64;

/// The name of the file, in a store written with `--dedupe`.
pub const FILE: &str = crate::layout::DUPLICATES;

/// The header row of `duplicates.tsv`.
pub const HEADER: &str = "line\tid\tkept_position\tkept_id\n";

/// One row of `duplicates.tsv`: the left-out record's 1-based source line and id, and the
/// store position and id of the molecule kept in its place. Tabs and line breaks inside an id
/// become spaces.
pub fn row(line: u64, id: &str, kept_position: u64, kept_id: &str) -> String {
    let field = |t: &str| t.replace(['\t', '\n', '\r'], " ");
    format!(
        "{line}\t{}\t{kept_position}\t{}\n",
        field(id),
        field(kept_id)
    )
}

/// Every duplicate among `n` molecules, as `(position, first)`: `first` is the earliest
/// position with the same SMILES. Sorted by position. `hash_of(i)` is the XXH3-64 of
/// SMILES `i` ([`hash`]); `smiles_of` is asked only for positions whose hashes are shared,
/// so a caller can hash in one pass over its data and fetch the few SMILES it needs later.
pub fn find<H, S>(n: u64, hash_of: H, mut smiles_of: S) -> Vec<(u64, u64)>
where
    H: Fn(u64) -> u64,
    S: FnMut(&[u64]) -> Vec<Vec<u8>>,
{
    let mut pairs: Vec<(u64, u64)> = (0..n).map(|i| (hash_of(i), i)).collect();
    pairs.sort_unstable();
    // positions that share their hash with another: duplicates, or (rarely) collisions
    let mut shared: Vec<u64> = Vec::new();
    for run in pairs.chunk_by(|a, b| a.0 == b.0) {
        if run.len() > 1 {
            shared.extend(run.iter().map(|p| p.1));
        }
    }
    drop(pairs);
    if shared.is_empty() {
        return Vec::new();
    }
    let mut wanted = shared.clone();
    wanted.sort_unstable();
    let texts = smiles_of(&wanted);
    assert_eq!(
        texts.len(),
        wanted.len(),
        "smiles_of returns one SMILES per position"
    );
    // by text, then position: the first of each group of equal texts is the kept one
    let mut first: HashMap<&[u8], u64> = HashMap::with_capacity(wanted.len());
    let mut found = Vec::new();
    for (&pos, text) in wanted.iter().zip(&texts) {
        match first.get(text.as_slice()) {
            Some(&kept) => found.push((pos, kept)),
            None => {
                first.insert(text.as_slice(), pos);
            }
        }
    }
    found
}

/// The hash [`find`] groups SMILES by.
pub fn hash(smiles: &[u8]) -> u64 {
    xxh3_64(smiles)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(smiles: &[&str], hash_of: impl Fn(u64) -> u64) -> Vec<(u64, u64)> {
        find(smiles.len() as u64, hash_of, |pos| {
            pos.iter()
                .map(|&p| smiles[p as usize].as_bytes().to_vec())
                .collect()
        })
    }

    #[test]
    fn each_duplicate_points_at_the_first_of_its_smiles() {
        let smiles = ["CCO", "c1ccccc1", "CCO", "CCN", "CCO", "c1ccccc1"];
        let got = run(&smiles, |i| hash(smiles[i as usize].as_bytes()));
        assert_eq!(got, [(2, 0), (4, 0), (5, 1)]);
    }

    #[test]
    fn colliding_hashes_never_join_different_smiles() {
        let smiles = ["CCO", "CCN", "CCO", "CCC", "CCN"];
        // every SMILES gets the same hash: only the byte comparison separates them
        let got = run(&smiles, |_| 7);
        assert_eq!(got, [(2, 0), (4, 1)]);
        // and with no repeats at all, a full collision finds nothing
        assert!(run(&["C", "N", "O"], |_| 1).is_empty());
    }

    #[test]
    fn rows_are_one_line_of_four_fields() {
        assert_eq!(row(7, "a\tb", 3, "k"), "7\ta b\t3\tk\n");
        assert_eq!(HEADER.matches('\t').count(), 3);
    }
}
