//! Owns the record-with-fields layer: an [`InputFormat`] (SMILES, CSV/TSV
//! or SDF), a [`RecordSource`] that reads a slab or a whole stream and
//! yields each record's text, id, absolute 1-based line and offset, and the
//! reason ([`SourceRecord::problem`]) a record cannot be used.

use crate::count::{count_newlines, count_records, CountReport};
use crate::counters::ReadCounters;
use crate::error::{IoError, OptionError};
use crate::fields::{sdf_molecule_count, sdf_title, split_smiles_line, CsvColumns};
use crate::options::ReaderOptions;
use crate::reader::SlabReader;
use crate::record::Record;
use crate::slab::RecordKind;
use crate::stream::{read_first_line, StreamReader};
use std::ops::Range;
use std::path::Path;

/// What kind of molecule file an input is and how to take its fields out.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InputFormat {
    /// `SMILES[whitespace ID]` per line; `header`: the first line is a header.
    Smiles {
        /// The line at offset 0 is a header, not a record.
        header: bool,
    },
    /// CSV or TSV with a header line naming the columns.
    Csv {
        /// SMILES column name (any case); `None`: the column named `smiles`.
        smiles_col: Option<String>,
        /// ID column name (any case); `None`: ids are line numbers.
        id_col: Option<String>,
        /// `b','` or `b'\t'`; `None`: tab if the header holds one, else comma.
        delimiter: Option<u8>,
    },
    /// SDF blocks ending with `$$$$`; the id is the title line.
    Sdf,
}

impl InputFormat {
    /// The format called `name` (`smiles`, `csv` or `sdf`, as the command line and the Python
    /// API name them) with its options; `delimiter` is `","`, `"\t"` or `"tab"` (CSV only).
    pub fn named(
        name: &str,
        header: bool,
        smiles_col: Option<String>,
        id_col: Option<String>,
        delimiter: Option<&str>,
    ) -> Result<InputFormat, OptionError> {
        let delimiter = match delimiter {
            None => None,
            Some("\t") | Some("tab") => Some(b'\t'),
            Some(",") => Some(b','),
            Some(d) => return Err(OptionError::BadDelimiter(d.to_string())),
        };
        Ok(match name {
            "smiles" => InputFormat::Smiles { header },
            "csv" => InputFormat::Csv {
                smiles_col,
                id_col,
                delimiter,
            },
            "sdf" => InputFormat::Sdf,
            other => return Err(OptionError::UnknownFormat(other.to_string())),
        })
    }

    /// How this format's records are delimited.
    pub fn record_kind(&self) -> RecordKind {
        match self {
            InputFormat::Sdf => RecordKind::Sdf,
            _ => RecordKind::Line,
        }
    }

    /// Whether the line at offset 0 is a header rather than a record.
    pub fn skips_header(&self) -> bool {
        match self {
            InputFormat::Smiles { header } => *header,
            InputFormat::Csv { .. } => true,
            InputFormat::Sdf => false,
        }
    }

    /// Guesses the format from the file name (after removing `.gz`, `.zst`):
    /// `.csv`/`.tsv` are CSV, `.sdf`/`.sd`/`.mol` SDF, anything else SMILES,
    /// whose first line is a header when its first word is `smiles` (any case).
    /// Standard input (`-`) is SMILES without a header: it is not read here.
    pub fn detect(path: &Path) -> Result<InputFormat, IoError> {
        if path == Path::new("-") {
            return Ok(InputFormat::Smiles { header: false });
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        let mut stem = name.as_str();
        for suffix in [".gz", ".gzip", ".zst", ".zstd"] {
            stem = stem.strip_suffix(suffix).unwrap_or(stem);
        }
        let ext = stem.rsplit_once('.').map_or("", |(_, e)| e);
        Ok(match ext {
            "csv" | "tsv" => InputFormat::Csv {
                smiles_col: None,
                id_col: None,
                delimiter: None,
            },
            "sdf" | "sd" | "mol" => InputFormat::Sdf,
            _ => {
                let first = read_first_line(path, 64 << 10)?;
                let (word, _) = split_smiles_line(strip_bom(&first, 0));
                InputFormat::Smiles {
                    header: word.eq_ignore_ascii_case(b"smiles"),
                }
            }
        })
    }
}

/// One record with its fields, ready for a chemistry parser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRecord {
    /// SMILES (SMILES and CSV) or the whole block (SDF). For a record with a
    /// problem whose fields could not be taken, the record's raw text
    /// (lossy UTF-8); empty when oversized.
    pub text: String,
    /// The id field, or the line number when the record has none.
    pub id: String,
    /// 1-based line number, in the file, of the record's first line.
    pub line: u64,
    /// Byte offset of the record (in the decompressed stream for compressed input).
    pub offset: u64,
    /// Why the record cannot be used, or `None`.
    pub problem: Option<String>,
}

enum Inner {
    Slab(SlabReader),
    Stream(StreamReader),
}

/// Records of one slab of a plain file, or of a whole (possibly compressed)
/// file, with their fields taken out.
pub struct RecordSource {
    inner: Inner,
    format: InputFormat,
    csv: Option<CsvColumns>,
    /// Newlines before the slab's start.
    first_line: u64,
    max_record_bytes: usize,
}

impl RecordSource {
    /// Reads the records starting in byte range `slab` of a plain file.
    /// `opts.skip_header` is set from the format. Line numbers are absolute:
    /// the newlines before the slab are counted when it opens (which reads
    /// the file up to the slab; see [`RecordSource::open_slab_at_line`]).
    pub fn open_slab(
        path: &Path,
        format: InputFormat,
        slab: Range<u64>,
        opts: ReaderOptions,
    ) -> Result<RecordSource, IoError> {
        Self::open_slab_at_line(path, format, slab, opts, None)
    }

    /// As [`RecordSource::open_slab`], but with the number of newlines before
    /// the slab given by the caller (from one pre-pass over the whole file,
    /// [`slab_first_lines`](crate::slab_first_lines)), so that opening reads
    /// nothing before the slab. With many slabs of a huge file, counting the
    /// prefix in every slab would read the file about `slabs / 2` times.
    pub fn open_slab_at_line(
        path: &Path,
        format: InputFormat,
        slab: Range<u64>,
        opts: ReaderOptions,
        first_line: Option<u64>,
    ) -> Result<RecordSource, IoError> {
        let opts = ReaderOptions {
            skip_header: format.skips_header(),
            ..opts
        };
        let csv = match &format {
            InputFormat::Csv { .. } => Some(csv_columns(
                path,
                &format,
                &read_first_line(path, opts.max_record_bytes)?,
            )?),
            _ => None,
        };
        let first_line = match first_line {
            Some(n) => n,
            None => count_newlines(path, 0..slab.start)?,
        };
        let max_record_bytes = opts.max_record_bytes;
        let reader = SlabReader::open(path, format.record_kind(), slab, opts)?;
        Ok(RecordSource {
            inner: Inner::Slab(reader),
            format,
            csv,
            first_line,
            max_record_bytes,
        })
    }

    /// Reads every record of a file (`-` for standard input) from the
    /// start with one reader, decoding gzip or zstd.
    pub fn open_stream(
        path: &Path,
        format: InputFormat,
        opts: ReaderOptions,
    ) -> Result<RecordSource, IoError> {
        let is_csv = matches!(format, InputFormat::Csv { .. });
        // A CSV header is taken from the stream itself (standard input cannot be reopened).
        let skip_header = format.skips_header() && !is_csv;
        let opts = ReaderOptions {
            skip_header,
            ..opts
        };
        let max_record_bytes = opts.max_record_bytes;
        let mut reader = StreamReader::open(path, format.record_kind(), opts)?;
        let csv = if is_csv {
            let header = match reader.next_record()? {
                Some(r) if r.offset == 0 => r.bytes.to_vec(),
                // The line at offset 0 is blank or a comment: no header.
                _ => Vec::new(),
            };
            let columns = csv_columns(path, &format, &header)?;
            Some(columns)
        } else {
            None
        };
        let mut source = RecordSource {
            inner: Inner::Stream(reader),
            format,
            csv,
            first_line: 0,
            max_record_bytes,
        };
        if is_csv {
            // The header record was read; counters should not count it as data.
            if let Inner::Stream(r) = &mut source.inner {
                r.uncount_record();
            }
        }
        Ok(source)
    }

    /// The next record, or `None` at the end of the slab or stream.
    pub fn next_record(&mut self) -> Result<Option<SourceRecord>, IoError> {
        let rec = match &mut self.inner {
            Inner::Slab(r) => r.next_record()?,
            Inner::Stream(r) => r.next_record()?,
        };
        Ok(rec.map(|r| {
            let line = self.first_line + r.line + 1;
            fields(
                &self.format,
                self.csv.as_ref(),
                self.max_record_bytes,
                &r,
                line,
            )
        }))
    }

    /// How the input is read: `pread`, `mmap`, `uring` or `direct` for a slab of a plain file
    /// (see [`ReaderOptions::io`]), `stream` for a whole file read from its start; and why,
    /// when `auto` decided or a fallback was taken.
    pub fn read_method(&self) -> (&'static str, &str) {
        match &self.inner {
            Inner::Slab(r) => {
                let (how, why) = r.read_method();
                (how.name(), why)
            }
            Inner::Stream(_) => ("stream", ""),
        }
    }

    /// What the reader has read and yielded so far.
    pub fn counters(&self) -> &ReadCounters {
        match &self.inner {
            Inner::Slab(r) => r.counters(),
            Inner::Stream(r) => r.counters(),
        }
    }
}

/// Counts the records of an input as [`RecordSource`] would yield them:
/// plain files with `threads` threads, compressed files by one decoder.
pub fn count_input(
    path: &Path,
    format: &InputFormat,
    threads: usize,
) -> Result<CountReport, IoError> {
    count_records(path, format.record_kind(), threads, format.skips_header())
}

fn csv_columns(path: &Path, format: &InputFormat, header: &[u8]) -> Result<CsvColumns, IoError> {
    let InputFormat::Csv {
        smiles_col,
        id_col,
        delimiter,
    } = format
    else {
        unreachable!("csv_columns is called for CSV input only");
    };
    CsvColumns::from_header(header, smiles_col.as_deref(), id_col.as_deref(), *delimiter).map_err(
        |source| IoError::Header {
            path: path.to_path_buf(),
            source,
        },
    )
}

/// The UTF-8 byte order mark some editors put at the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A record's bytes without a leading UTF-8 byte order mark when the record
/// starts the file (`offset` 0): every format, so a BOM never ends up in a
/// SMILES, an id or an SDF title.
fn strip_bom(bytes: &[u8], offset: u64) -> &[u8] {
    match offset {
        0 => bytes.strip_prefix(BOM).unwrap_or(bytes),
        _ => bytes,
    }
}

/// The first character of `id` that cannot be stored as an id (ids are
/// kept one per line): a line break or another control character (C0 but
/// tab, DEL, C1, U+2028, U+2029).
fn unstorable_char(id: &str) -> Option<char> {
    id.chars().find(|&c| is_unstorable(c))
}

fn is_unstorable(c: char) -> bool {
    (c.is_control() && c != '\t') || c == '\u{2028}' || c == '\u{2029}'
}

/// Takes the fields out of one record and decides whether it can be used.
fn fields(
    format: &InputFormat,
    csv: Option<&CsvColumns>,
    max: usize,
    r: &Record<'_>,
    line: u64,
) -> SourceRecord {
    let mut out = SourceRecord {
        text: String::new(),
        id: String::new(),
        line,
        offset: r.offset,
        problem: None,
    };
    let bytes = strip_bom(r.bytes, r.offset);
    let problem = if r.oversized {
        // The record was streamed over, not buffered: only its start was seen.
        let seen = std::str::from_utf8(strip_bom(r.oversized_id, r.offset)).unwrap_or("");
        let whose = if seen.is_empty() || unstorable_char(seen).is_some() {
            "its id is unknown (not read), the id given is its line number"
        } else {
            out.id = seen.to_string();
            "its id was read from the record's start"
        };
        Some(format!(
            "record of {} bytes is longer than the limit of {max} bytes (--max-record-bytes); {whose}",
            r.len
        ))
    } else {
        // Fields are taken even from a record that is rejected, so the reject keeps its id.
        let field_problem = take_fields(format, csv, bytes, &mut out);
        if r.has_nul {
            Some("record holds a NUL byte".to_string())
        } else if let Err(e) = std::str::from_utf8(bytes) {
            Some(format!(
                "record is not valid UTF-8 (bad byte at {})",
                e.valid_up_to()
            ))
        } else if field_problem.is_some() {
            field_problem
        } else {
            unstorable_char(&out.id).map(|c| {
                format!(
                    "id holds a line break or control character (U+{:04X}), which cannot be stored",
                    c as u32
                )
            })
        }
    };
    if out.text.is_empty() && !r.oversized && problem.is_some() {
        out.text = String::from_utf8_lossy(bytes).into_owned();
    }
    if out.id.is_empty() {
        out.id = line.to_string();
    }
    if problem.is_some() {
        // A reject's id stays readable on one line of rejects.tsv.
        out.id = out.id.replace(is_unstorable, " ");
    }
    out.problem = problem;
    out
}

/// Fills text and id from valid UTF-8 record bytes; returns a problem if any.
fn take_fields(
    format: &InputFormat,
    csv: Option<&CsvColumns>,
    bytes: &[u8],
    out: &mut SourceRecord,
) -> Option<String> {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    match format {
        InputFormat::Sdf => {
            out.text = text(bytes);
            out.id = text(sdf_title(bytes));
            match sdf_molecule_count(bytes) {
                1 => None,
                0 => Some("block has no \"M  END\" line".to_string()),
                n => Some(format!(
                    "block holds {n} molecules (a \"$$$$\" line is missing)"
                )),
            }
        }
        InputFormat::Csv { .. } => {
            let columns = csv.expect("CSV input has its columns");
            match columns.extract(bytes) {
                Err(e) => Some(e.to_string()),
                Ok((smiles, id)) => {
                    out.text = text(&smiles);
                    out.id = text(&id);
                    out.text
                        .is_empty()
                        .then(|| "empty SMILES field".to_string())
                }
            }
        }
        _ => {
            let (smiles, id) = split_smiles_line(bytes);
            out.text = text(smiles);
            out.id = text(id);
            // Only a line holding nothing but a byte order mark gets here.
            out.text.is_empty().then(|| "empty record".to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_are_named_as_the_command_line_names_them() {
        let tab = InputFormat::named("csv", true, Some("s".into()), None, Some("tab")).unwrap();
        assert_eq!(
            tab,
            InputFormat::Csv {
                smiles_col: Some("s".into()),
                id_col: None,
                delimiter: Some(b'\t')
            }
        );
        assert_eq!(
            InputFormat::named("smiles", true, None, None, None).unwrap(),
            InputFormat::Smiles { header: true }
        );
        assert_eq!(
            InputFormat::named("mol2", false, None, None, None),
            Err(OptionError::UnknownFormat("mol2".into()))
        );
        assert_eq!(
            InputFormat::named("csv", false, None, None, Some(";")),
            Err(OptionError::BadDelimiter(";".into()))
        );
        assert_eq!(
            ReaderOptions::with_sizes(RecordKind::Line, Some(0), None),
            Err(OptionError::EmptyBuffer)
        );
        let opts = ReaderOptions::with_sizes(RecordKind::Sdf, Some(4096), None).unwrap();
        assert_eq!((opts.buffer_size, opts.max_record_bytes), (4096, 64 << 20));
    }

    use super::*;
    use std::io::Write;

    fn file(name: &str, bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::File::create(&path)
            .unwrap()
            .write_all(bytes)
            .unwrap();
        (dir, path)
    }

    fn all(path: &Path, format: InputFormat, slabs: usize) -> Vec<SourceRecord> {
        let len = std::fs::metadata(path).unwrap().len();
        let mut out = Vec::new();
        for slab in crate::split_slabs(len, slabs) {
            let opts = ReaderOptions {
                buffer_size: 3,
                ..ReaderOptions::for_kind(format.record_kind())
            };
            let mut s = RecordSource::open_slab(path, format.clone(), slab, opts).unwrap();
            while let Some(r) = s.next_record().unwrap() {
                out.push(r);
            }
        }
        let mut stream = RecordSource::open_stream(
            path,
            format.clone(),
            ReaderOptions::for_kind(format.record_kind()),
        )
        .unwrap();
        let mut whole = Vec::new();
        while let Some(r) = stream.next_record().unwrap() {
            whole.push(r);
        }
        assert_eq!(out, whole);
        assert_eq!(stream.counters().records, whole.len() as u64);
        assert_eq!(
            count_input(path, &format, 3).unwrap().records,
            whole.len() as u64
        );
        out
    }

    #[test]
    fn smiles_with_header_and_missing_ids() {
        let (_d, p) = file("x.smi", b"SMILES Name\nCCO ethanol\n\nC\x00C\n\xff\nN\n");
        let format = InputFormat::detect(&p).unwrap();
        assert_eq!(format, InputFormat::Smiles { header: true });
        let r = all(&p, format, 3);
        assert_eq!(
            (
                r[0].text.as_str(),
                r[0].id.as_str(),
                r[0].line,
                r[0].problem.as_deref()
            ),
            ("CCO", "ethanol", 2, None)
        );
        assert!(r[1].problem.as_deref().unwrap().contains("NUL"));
        assert!(r[2].problem.as_deref().unwrap().contains("UTF-8"));
        assert_eq!(
            (r[3].text.as_str(), r[3].id.as_str(), r[3].line),
            ("N", "6", 6)
        );
    }

    #[test]
    fn csv_columns_and_problems() {
        let (_d, p) = file(
            "x.csv",
            b"name,smiles,score\n\"a, b\",CCO,1\nc2,c1ccccc1,2\nbad\nz,,3\n",
        );
        let format = InputFormat::Csv {
            smiles_col: None,
            id_col: Some("name".into()),
            delimiter: None,
        };
        assert!(matches!(
            InputFormat::detect(&p).unwrap(),
            InputFormat::Csv { .. }
        ));
        let r = all(&p, format, 4);
        let got: Vec<_> = r
            .iter()
            .map(|r| (r.text.as_str(), r.id.as_str(), r.line, r.problem.is_some()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("CCO", "a, b", 2, false),
                ("c1ccccc1", "c2", 3, false),
                ("bad", "4", 4, true),
                ("z,,3", "z", 5, true)
            ]
        );
    }

    #[test]
    fn csv_missing_column_names_file_and_columns() {
        let (_d, p) = file("x.csv", b"name,structure\na,CCO\n");
        let format = InputFormat::detect(&p).unwrap();
        let e = RecordSource::open_slab(&p, format.clone(), 0..5, ReaderOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("x.csv") && e.contains("smiles") && e.contains("name, structure"),
            "{e}"
        );
        let e = RecordSource::open_stream(&p, format, ReaderOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("name, structure"), "{e}");
    }

    #[test]
    fn sdf_titles_and_missing_terminator() {
        let (_d, p) = file(
            "m.sdf",
            b"aspirin\n\n\nM  END\n$$$$\n\n\n\nM  END\nb\n\nM  END\n$$$$\n",
        );
        let r = all(&p, InputFormat::detect(&p).unwrap(), 2);
        assert_eq!(
            (r[0].id.as_str(), r[0].line, r[0].problem.is_none()),
            ("aspirin", 1, true)
        );
        assert_eq!(r[1].id, "6");
        assert!(r[1].problem.as_deref().unwrap().contains("2 molecules"));
    }

    #[test]
    fn id_with_lone_cr_is_rejected_not_fatal() {
        let (_d, p) = file("x.smi", b"CCO id\rmore\nCC ok\nC a\x0bb\n");
        let r = all(&p, InputFormat::Smiles { header: false }, 2);
        assert_eq!(r.len(), 3);
        let reason = r[0].problem.as_deref().unwrap();
        assert!(
            reason.contains("U+000D") && reason.contains("cannot be stored"),
            "{reason}"
        );
        assert_eq!(r[0].id, "id more");
        assert_eq!((r[1].id.as_str(), r[1].problem.as_deref()), ("ok", None));
        assert!(r[2].problem.as_deref().unwrap().contains("U+000B"));
        assert_eq!(r[2].id, "a b");
        let (_d, p) = file("x.csv", b"smiles,id\nCCO,\"a\rb\"\nCC,\"tab\tok\"\n");
        let format = InputFormat::Csv {
            smiles_col: None,
            id_col: Some("id".into()),
            delimiter: Some(b','),
        };
        let r = all(&p, format, 2);
        assert!(r[0].problem.as_deref().unwrap().contains("U+000D"));
        assert_eq!(
            (r[1].id.as_str(), r[1].problem.as_deref()),
            ("tab\tok", None)
        );
        let (_d, p) = file("m.sdf", b"ti\rtle\n\n\nM  END\n$$$$\n");
        let r = all(&p, InputFormat::Sdf, 1);
        assert!(r[0].problem.as_deref().unwrap().contains("U+000D"));
    }

    #[test]
    fn utf8_bom_is_stripped_for_every_format() {
        let (_d, p) = file("m.sdf", b"\xEF\xBB\xBFaspirin\n\n\nM  END\n$$$$\n");
        let r = all(&p, InputFormat::detect(&p).unwrap(), 1);
        assert_eq!(
            (r[0].id.as_str(), r[0].problem.as_deref()),
            ("aspirin", None)
        );
        assert!(!r[0].text.starts_with('\u{feff}'));
        let (_d, p) = file("x.smi", b"\xEF\xBB\xBFCCO eth\nCC\n");
        let format = InputFormat::detect(&p).unwrap();
        assert_eq!(format, InputFormat::Smiles { header: false });
        let r = all(&p, format, 2);
        assert_eq!((r[0].text.as_str(), r[0].id.as_str()), ("CCO", "eth"));
        let (_d, p) = file("h.smi", b"\xEF\xBB\xBFsmiles name\nCCO eth\n");
        assert_eq!(
            InputFormat::detect(&p).unwrap(),
            InputFormat::Smiles { header: true }
        );
        let (_d, p) = file("x.csv", b"\xEF\xBB\xBFsmiles,id\nCCO,e\n");
        let format = InputFormat::Csv {
            smiles_col: None,
            id_col: Some("id".into()),
            delimiter: None,
        };
        let r = all(&p, format, 1);
        assert_eq!((r[0].text.as_str(), r[0].id.as_str()), ("CCO", "e"));
        let (_d, p) = file("b.smi", b"\xEF\xBB\xBF\nCC\n");
        let r = all(&p, InputFormat::Smiles { header: false }, 1);
        assert_eq!(r[0].problem.as_deref(), Some("empty record"));
    }

    /// The first two records of `path` read with a `max`-byte record limit and
    /// `buffer`-byte reads, by a stream reader and by a slab reader over the whole file.
    fn first_two_limited(
        path: &Path,
        format: InputFormat,
        max: usize,
        buffer: usize,
    ) -> Vec<SourceRecord> {
        let opts = ReaderOptions {
            max_record_bytes: max,
            buffer_size: buffer,
            ..ReaderOptions::for_kind(format.record_kind())
        };
        let len = std::fs::metadata(path).unwrap().len();
        let mut out = Vec::new();
        for mut s in [
            RecordSource::open_stream(path, format.clone(), opts.clone()).unwrap(),
            RecordSource::open_slab(path, format.clone(), 0..len, opts.clone()).unwrap(),
        ] {
            out.push(s.next_record().unwrap().unwrap());
            out.push(s.next_record().unwrap().unwrap());
        }
        assert_eq!(out[..2], out[2..]);
        out.truncate(2);
        out
    }

    #[test]
    fn oversized_record_says_its_id_is_unknown() {
        let mut bytes = b"C".repeat(100);
        bytes.extend_from_slice(b" big\nCC small\n");
        let (_d, p) = file("x.smi", &bytes);
        // Small reads or the record wholly buffered: only its first 50 bytes count.
        for buffer in [16, 1 << 20] {
            let r = first_two_limited(&p, InputFormat::Smiles { header: false }, 50, buffer);
            let reason = r[0].problem.as_deref().unwrap();
            assert!(
                reason.contains("id is unknown") && reason.contains("line number"),
                "{reason}"
            );
            assert_eq!((r[0].id.as_str(), r[1].id.as_str()), ("1", "small"));
        }
    }

    #[test]
    fn oversized_record_keeps_its_id_when_its_start_holds_it() {
        let mut bytes = b"CCO real_id ".to_vec();
        bytes.extend_from_slice(&b"x".repeat(100));
        bytes.extend_from_slice(b"\nCC small\n");
        let (_d, p) = file("x.smi", &bytes);
        let r = first_two_limited(&p, InputFormat::Smiles { header: false }, 50, 64);
        assert_eq!(r[0].id, "real_id");
        assert!(r[0]
            .problem
            .as_deref()
            .unwrap()
            .contains("read from the record's start"));
        let mut sdf = b"\xEF\xBB\xBFbig_title\n".to_vec();
        sdf.extend_from_slice(&b"x\n".repeat(100));
        sdf.extend_from_slice(b"M  END\n$$$$\nsmall\n\n\nM  END\n$$$$\n");
        let (_d, p) = file("m.sdf", &sdf);
        let r = first_two_limited(&p, InputFormat::Sdf, 50, 1 << 20);
        assert_eq!((r[0].id.as_str(), r[0].line), ("big_title", 1));
        assert!(r[0].problem.is_some());
        assert_eq!((r[1].id.as_str(), r[1].problem.as_deref()), ("small", None));
    }
}
