//! `rejects.tsv`, the one format of rejected records, written by ingest (into a store) and by
//! screen (beside its results): a header, then one row per record that gave no molecule:
//! source, 1-based line, byte offset, id, reason, separated by tabs.

/// The header row.
pub const HEADER: &str = "source\tline\toffset\tid\treason\n";

/// One row, ending in `\n`. Tabs and line breaks inside a field become spaces, so every reject
/// is exactly one line of five fields.
pub fn row(source: &str, line: u64, offset: u64, id: &str, reason: &str) -> String {
    format!(
        "{}\t{line}\t{offset}\t{}\t{}\n",
        field(source),
        field(id),
        field(reason)
    )
}

fn field(text: &str) -> String {
    text.replace(['\t', '\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_one_line_of_five_fields() {
        let r = row("in\t.smi", 7, 120, "a\r\nb", "bad\tthing");
        assert_eq!(r, "in .smi\t7\t120\ta  b\tbad thing\n");
        assert_eq!(HEADER.matches('\t').count(), 4);
    }
}
