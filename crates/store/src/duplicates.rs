//! Duplicate molecules: a molecule is a duplicate when its canonical SMILES equals the SMILES
//! of an earlier molecule of the same store (canonical SMILES name a molecule, so two records
//! of one compound are found whatever SMILES they were written with). Ingest finds them in the
//! k-way merge of its parts' sorted runs ([`crate::runs`]: equal SMILES come out side by side,
//! compared byte for byte, the earliest record first); `duplicates.tsv` ([`HEADER`], [`row`])
//! is where an ingest with `--dedupe` lists the records it left out.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_one_line_of_four_fields() {
        assert_eq!(row(7, "a\tb", 3, "k"), "7\ta b\t3\tk\n");
        assert_eq!(HEADER.matches('\t').count(), 3);
    }
}
