//! Owns field extraction from one record: SMILES and ID from a SMILES line,
//! named columns from a CSV/TSV line, and the title and molecule count of an
//! SDF block.

use crate::error::FieldError;
use std::borrow::Cow;

/// Splits a SMILES line into (SMILES, ID): the SMILES is the first token
/// after leading whitespace, the ID the rest of the line with surrounding
/// whitespace trimmed (empty if none).
///
/// ```
/// let (smiles, id) = molsift_io::split_smiles_line(b"  CCO  ethanol 1 \r");
/// assert_eq!((smiles, id), (&b"CCO"[..], &b"ethanol 1"[..]));
/// ```
pub fn split_smiles_line(line: &[u8]) -> (&[u8], &[u8]) {
    let line = trim(line);
    let end = line
        .iter()
        .position(|b| b.is_ascii_whitespace())
        .unwrap_or(line.len());
    (&line[..end], trim(&line[end..]))
}

/// `bytes` without leading and trailing ASCII whitespace.
fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    &bytes[start..end]
}

/// (SMILES, ID) of one CSV line, borrowed from the line unless a quoted
/// field held `""` escapes.
pub type SmilesAndId<'a> = (Cow<'a, [u8]>, Cow<'a, [u8]>);

/// Where the SMILES and ID columns sit in a CSV or TSV file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvColumns {
    delimiter: u8,
    smiles: usize,
    id: Option<usize>,
}

impl CsvColumns {
    /// Finds the columns from the header line: `smiles_col` by name
    /// (ASCII case-insensitive), or when `None` the first column named
    /// `smiles`; `id_col` likewise if given. `delimiter` is `b','` or
    /// `b'\t'`; `None` picks tab if the header holds one, else comma. Names
    /// may be double-quoted; a UTF-8 byte order mark is ignored.
    pub fn from_header(
        header: &[u8],
        smiles_col: Option<&str>,
        id_col: Option<&str>,
        delimiter: Option<u8>,
    ) -> Result<CsvColumns, FieldError> {
        let header = header.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(header);
        let header = header.strip_suffix(b"\n").unwrap_or(header);
        let header = header.strip_suffix(b"\r").unwrap_or(header);
        let delimiter = delimiter.unwrap_or(if header.contains(&b'\t') { b'\t' } else { b',' });
        let names: Vec<String> = split_fields(header, delimiter)?
            .iter()
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect();
        let find = |wanted: &str| {
            names
                .iter()
                .position(|n| n.eq_ignore_ascii_case(wanted))
                .ok_or_else(|| FieldError::MissingColumn {
                    wanted: wanted.to_string(),
                    columns: names.clone(),
                })
        };
        let smiles = find(smiles_col.unwrap_or("smiles"))?;
        let id = id_col.map(find).transpose()?;
        Ok(CsvColumns {
            delimiter,
            smiles,
            id,
        })
    }

    /// The delimiter in use.
    pub fn delimiter(&self) -> u8 {
        self.delimiter
    }

    /// 0-based indices of the SMILES and (if any) ID columns.
    pub fn indices(&self) -> (usize, Option<usize>) {
        (self.smiles, self.id)
    }

    /// (SMILES, ID) of one data line; the ID is empty when no ID column was
    /// asked for. Fields may be double-quoted on one line (`""` is a quote);
    /// unquoted fields are trimmed of surrounding whitespace.
    pub fn extract<'a>(&self, line: &'a [u8]) -> Result<SmilesAndId<'a>, FieldError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let need = self.smiles.max(self.id.unwrap_or(0));
        let mut smiles = None;
        let mut id = Cow::Borrowed(&b""[..]);
        let mut fields = Fields {
            rest: Some(line),
            delimiter: self.delimiter,
            index: 0,
        };
        for i in 0..=need {
            let Some(field) = fields.next() else {
                return Err(FieldError::TooFewFields {
                    needed: need + 1,
                    found: i,
                });
            };
            let field = field?;
            if i == self.smiles {
                smiles = Some(field.clone());
            }
            if Some(i) == self.id {
                id = field;
            }
        }
        Ok((smiles.expect("the SMILES column is within `need`"), id))
    }
}

/// All fields of a line.
fn split_fields(line: &[u8], delimiter: u8) -> Result<Vec<Cow<'_, [u8]>>, FieldError> {
    Fields {
        rest: Some(line),
        delimiter,
        index: 0,
    }
    .collect()
}

/// Iterates the fields of one CSV line.
struct Fields<'a> {
    rest: Option<&'a [u8]>,
    delimiter: u8,
    index: usize,
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<Cow<'a, [u8]>, FieldError>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.rest.take()?;
        self.index += 1;
        let lead = rest
            .iter()
            .position(|&b| b != b' ' && b != b'\t' || b == self.delimiter);
        let body = &rest[lead.unwrap_or(rest.len())..];
        if body.first() != Some(&b'"') {
            let end = memchr::memchr(self.delimiter, rest);
            let (field, next) = match end {
                Some(i) => (&rest[..i], Some(&rest[i + 1..])),
                None => (rest, None),
            };
            self.rest = next;
            return Some(Ok(Cow::Borrowed(trim(field))));
        }
        Some(self.quoted(&body[1..]))
    }
}

impl<'a> Fields<'a> {
    /// A quoted field whose opening quote has been passed.
    fn quoted(&mut self, s: &'a [u8]) -> Result<Cow<'a, [u8]>, FieldError> {
        let field = self.index;
        let bad = |reason| FieldError::BadQuote { field, reason };
        let mut owned: Option<Vec<u8>> = None;
        let mut from = 0;
        loop {
            let Some(q) = memchr::memchr(b'"', &s[from..]).map(|i| from + i) else {
                return Err(bad("no closing quote on this line"));
            };
            if s.get(q + 1) == Some(&b'"') {
                owned
                    .get_or_insert_with(Vec::new)
                    .extend_from_slice(&s[from..=q]);
                from = q + 2;
                continue;
            }
            let after = &s[q + 1..];
            let gap = after
                .iter()
                .position(|&b| b != b' ' && b != b'\t' || b == self.delimiter);
            match gap.map(|i| after[i]) {
                None => self.rest = None,
                Some(d) if d == self.delimiter => self.rest = Some(&after[gap.unwrap_or(0) + 1..]),
                Some(_) => return Err(bad("text after the closing quote")),
            }
            return Ok(match owned {
                None => Cow::Borrowed(&s[..q]),
                Some(mut v) => {
                    v.extend_from_slice(&s[from..q]);
                    Cow::Owned(v)
                }
            });
        }
    }
}

/// The title of an SDF block: its first line, trimmed of whitespace.
pub fn sdf_title(block: &[u8]) -> &[u8] {
    let end = memchr::memchr(b'\n', block).unwrap_or(block.len());
    trim(&block[..end])
}

/// Number of `M  END` lines in an SDF block (trailing whitespace allowed).
/// More than one means a `$$$$` line is missing between molecules.
pub fn sdf_molecule_count(block: &[u8]) -> usize {
    memchr::memmem::find_iter(block, b"M  END")
        .filter(|&x| {
            let at_line_start = x == 0 || block[x - 1] == b'\n';
            let rest = &block[x + 6..];
            let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
            at_line_start && rest[..end].iter().all(|b| b.is_ascii_whitespace())
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smiles_lines() {
        assert_eq!(split_smiles_line(b"CCO"), (&b"CCO"[..], &b""[..]));
        assert_eq!(
            split_smiles_line(b"CCO\tid 7\r"),
            (&b"CCO"[..], &b"id 7"[..])
        );
        assert_eq!(split_smiles_line(b"   "), (&b""[..], &b""[..]));
    }

    #[test]
    fn header_detection() {
        let c =
            CsvColumns::from_header(b"\xEF\xBB\xBFid,SMILES,x\r", None, Some("ID"), None).unwrap();
        assert_eq!((c.delimiter(), c.indices()), (b',', (1, Some(0))));
        let t = CsvColumns::from_header(b"name\tsmi", Some("SMI"), None, None).unwrap();
        assert_eq!((t.delimiter(), t.indices()), (b'\t', (1, None)));
        let q = CsvColumns::from_header(b"\"a\",\"Smiles\"", None, None, Some(b',')).unwrap();
        assert_eq!(q.indices(), (1, None));
    }

    #[test]
    fn missing_column_lists_the_header() {
        let e = CsvColumns::from_header(b"name,mol", None, None, None).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("\"smiles\"") && msg.contains("name, mol"),
            "{msg}"
        );
        let e = CsvColumns::from_header(b"smiles,a", None, Some("zid"), None).unwrap_err();
        assert!(e.to_string().contains("zid"));
    }

    #[test]
    fn quoted_fields() {
        let c = CsvColumns::from_header(b"smiles,id", None, Some("id"), None).unwrap();
        let (s, i) = c.extract(b"\"C(=O)O\" , \"acid, \"\"x\"\"\"").unwrap();
        assert_eq!((&*s, &*i), (&b"C(=O)O"[..], &b"acid, \"x\""[..]));
        assert!(matches!(s, Cow::Borrowed(_)));
        assert!(matches!(i, Cow::Owned(_)));
        let (s, i) = c.extract(b" CCO ,7,extra\r").unwrap();
        assert_eq!((&*s, &*i), (&b"CCO"[..], &b"7"[..]));
        let (s, i) = c.extract(b",").unwrap();
        assert_eq!((&*s, &*i), (&b""[..], &b""[..]));
        assert!(matches!(
            c.extract(b"\"CC,1"),
            Err(FieldError::BadQuote { field: 1, .. })
        ));
        assert!(matches!(
            c.extract(b"\"CC\"x,1"),
            Err(FieldError::BadQuote { .. })
        ));
    }

    #[test]
    fn too_few_fields() {
        let c = CsvColumns::from_header(b"a,b,smiles", None, None, None).unwrap();
        assert_eq!(
            c.extract(b"1,2"),
            Err(FieldError::TooFewFields {
                needed: 3,
                found: 2
            })
        );
        assert!(c.extract(b"1,2,").is_ok());
        let msg = c.extract(b"x").unwrap_err().to_string();
        assert!(
            msg.contains("1 fields") && msg.contains("column 3"),
            "{msg}"
        );
    }

    #[test]
    fn sdf_fields() {
        let block = b"  aspirin \r\n  RDKit\n\nM  END\n> <id>\n1\n\n$$$$\n";
        assert_eq!(sdf_title(block), b"aspirin");
        assert_eq!(sdf_molecule_count(block), 1);
        assert_eq!(sdf_title(b"\nx\n"), b"");
        assert_eq!(
            sdf_molecule_count(b"a\nM  END\nb\nM  END \r\nxM  END\nM  ENDx\n$$$$\n"),
            2
        );
    }
}
