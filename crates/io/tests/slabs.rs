//! Property tests of the slab convention: for random SMILES and SDF files,
//! any slab count, any read buffer size and every read method, all slabs together yield
//! exactly the records of a plain reference reader, and `count_records` agrees.

use molsift_io::{
    count_newlines, count_records, count_records_with, split_slabs, CountOptions, ReadMethod,
    ReaderOptions, RecordKind, SlabReader,
};
use proptest::prelude::*;
use std::io::Write;
use std::path::Path;

/// (offset, absolute line, len, bytes, oversized, has_nul)
type Rec = (u64, u64, u64, Vec<u8>, bool, bool);

fn newlines_before(data: &[u8], p: usize) -> u64 {
    data[..p].iter().filter(|&&b| b == b'\n').count() as u64
}

/// Lines of `data` as (start, end without the newline, end with it).
fn lines(data: &[u8]) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < data.len() {
        match data[start..].iter().position(|&b| b == b'\n') {
            Some(i) => {
                out.push((start, start + i, start + i + 1));
                start += i + 1;
            }
            None => {
                out.push((start, data.len(), data.len()));
                start = data.len();
            }
        }
    }
    out
}

/// The Line rules written out plainly.
fn reference_lines(data: &[u8], skip_header: bool, max: usize) -> Vec<Rec> {
    let mut out = Vec::new();
    for (start, content_end, end) in lines(data) {
        if skip_header && start == 0 {
            continue;
        }
        let content = &data[start..content_end];
        let first = content
            .iter()
            .find(|&&b| b != b' ' && b != b'\t' && b != b'\r');
        if first.is_none() || first == Some(&b'#') {
            continue;
        }
        let text = if content.ends_with(b"\r") {
            &content[..content.len() - 1]
        } else {
            content
        };
        let len = end - start;
        let oversized = len > max;
        out.push((
            start as u64,
            newlines_before(data, start),
            len as u64,
            if oversized { Vec::new() } else { text.to_vec() },
            oversized,
            text.contains(&0),
        ));
    }
    out
}

/// A `$$$$` line: `$$$$` then at most 16 spaces, tabs or carriage returns.
fn is_terminator(line: &[u8]) -> bool {
    line.starts_with(b"$$$$")
        && line.len() <= 4 + 16
        && line[4..]
            .iter()
            .all(|&b| b == b' ' || b == b'\t' || b == b'\r')
}

/// The SDF rules written out plainly.
fn reference_sdf(data: &[u8], max: usize) -> Vec<Rec> {
    let mut out = Vec::new();
    let mut push = |start: usize, end: usize| {
        let block = &data[start..end];
        let oversized = block.len() > max;
        out.push((
            start as u64,
            newlines_before(data, start),
            block.len() as u64,
            if oversized {
                Vec::new()
            } else {
                block.to_vec()
            },
            oversized,
            block.contains(&0),
        ));
    };
    let mut block_start = 0;
    for (start, content_end, end) in lines(data) {
        if is_terminator(&data[start..content_end]) {
            push(block_start, end);
            block_start = end;
        }
    }
    let rest = &data[block_start..];
    if rest
        .iter()
        .any(|&b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
    {
        push(block_start, data.len());
    }
    out
}

/// Every slab's records, with absolute line numbers.
fn read_slabs(path: &Path, kind: RecordKind, n: usize, opts: &ReaderOptions) -> Vec<Rec> {
    let len = std::fs::metadata(path).unwrap().len();
    let mut out = Vec::new();
    for slab in split_slabs(len, n) {
        let first = count_newlines(path, 0..slab.start).unwrap();
        let mut r = SlabReader::open(path, kind, slab.clone(), opts.clone()).unwrap();
        while let Some(rec) = r.next_record().unwrap() {
            assert!(
                slab.contains(&rec.offset),
                "record at {} outside slab {slab:?}",
                rec.offset
            );
            out.push((
                rec.offset,
                first + rec.line,
                rec.len,
                rec.bytes.to_vec(),
                rec.oversized,
                rec.has_nul,
            ));
        }
        assert!(r.buffer_capacity() <= opts.buffer_size.max(opts.max_record_bytes + 1).max(64));
    }
    out
}

fn write(data: &[u8]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(data).unwrap();
    f
}

fn check(
    data: &[u8],
    kind: RecordKind,
    n: usize,
    buffer: usize,
    max: usize,
    skip_header: bool,
    threads: usize,
) {
    let f = write(data);
    let expected = match kind {
        RecordKind::Line => reference_lines(data, skip_header, max),
        RecordKind::Sdf => reference_sdf(data, max),
    };
    let opts = ReaderOptions {
        buffer_size: buffer,
        max_record_bytes: max,
        skip_header,
        io: ReadMethod::Pread,
    };
    for io in [
        ReadMethod::Pread,
        ReadMethod::Mmap,
        ReadMethod::Uring,
        ReadMethod::Direct,
        ReadMethod::Auto,
    ] {
        let opts = ReaderOptions { io, ..opts.clone() };
        assert_eq!(
            read_slabs(f.path(), kind, n, &opts),
            expected,
            "{n} slabs, buffer {buffer}, {io}"
        );
    }
    let whole = ReaderOptions {
        buffer_size: data.len() + 10,
        ..opts
    };
    assert_eq!(read_slabs(f.path(), kind, 1, &whole), expected, "1 slab");
    let count = count_records(f.path(), kind, threads, skip_header).unwrap();
    assert_eq!(
        count.records,
        expected.len() as u64,
        "count_records, {threads} threads"
    );
    assert_eq!(count.newlines, newlines_before(data, data.len()));
    for method in [ReadMethod::Pread, ReadMethod::Uring, ReadMethod::Direct] {
        let opts = CountOptions {
            threads,
            skip_header,
            method,
            chunk_size: 1 + buffer % 97,
            depth: 1 + buffer % 5,
        };
        let r = count_records_with(f.path(), kind, &opts).unwrap();
        assert_eq!(r.records, expected.len() as u64, "{method}");
        assert_eq!(r.newlines, count.newlines, "{method}");
    }
}

/// One line of a SMILES file, without its ending.
fn smiles_line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => "[A-Za-z0-9()=#@+\\[\\]-]{1,12}( [a-z0-9 ]{0,6})?".prop_map(|s| s.into_bytes()),
        1 => "[ \\t]{1,3}[A-Z#][A-Za-z0-9#]{0,5}".prop_map(|s| s.into_bytes()),
        1 => Just(Vec::new()),
        1 => "[ \\t\\r]{1,4}".prop_map(|s| s.into_bytes()),
        1 => "#[ -~]{0,10}".prop_map(|s| s.into_bytes()),
        1 => "C\\x00[CN]{0,3}".prop_map(|s| s.into_bytes()),
    ]
}

fn smiles_file() -> impl Strategy<Value = (Vec<u8>, bool)> {
    (
        proptest::collection::vec((smiles_line(), any::<bool>()), 0..40),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(lines, final_newline, header)| {
            let mut data = Vec::new();
            if header {
                data.extend_from_slice(b"smiles,id\n");
            }
            let count = lines.len();
            for (i, (line, crlf)) in lines.into_iter().enumerate() {
                data.extend(line);
                if i + 1 < count || final_newline {
                    data.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
                }
            }
            (data, header)
        })
}

/// One line inside an SDF block.
fn sdf_line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => "[ -~]{0,20}".prop_map(|s| s.into_bytes()),
        1 => Just(Vec::new()),
        1 => Just(b"M  END".to_vec()),
        1 => prop::sample::select(vec![&b"$$$"[..], b" $$$$", b"$$$$x", b"$$$$$", b"x$$$$"])
            .prop_map(|s| s.to_vec()),
    ]
}

fn sdf_file() -> impl Strategy<Value = Vec<u8>> {
    let block = (
        proptest::collection::vec((sdf_line(), any::<bool>()), 0..6),
        "[ \\t\\r]{0,3}|[ ]{15,18}",
        any::<bool>(),
    );
    (
        proptest::collection::vec(block, 0..12),
        any::<bool>(),
        any::<bool>(),
        "[ \\t\\r\\n]{0,4}|[A-Z]{1,3}\\n?",
    )
        .prop_map(|(blocks, final_term, final_newline, tail)| {
            let mut data = Vec::new();
            let count = blocks.len();
            for (i, (lines, trail, crlf)) in blocks.into_iter().enumerate() {
                let nl: &[u8] = if crlf { b"\r\n" } else { b"\n" };
                for (line, _) in lines {
                    data.extend(line);
                    data.extend_from_slice(nl);
                }
                let last = i + 1 == count;
                if !last || final_term {
                    data.extend_from_slice(b"$$$$");
                    data.extend_from_slice(trail.as_bytes());
                    if !last || final_newline {
                        data.extend_from_slice(nl);
                    }
                }
            }
            if final_newline {
                data.extend_from_slice(tail.as_bytes());
            }
            data
        })
}

fn buffer_size() -> impl Strategy<Value = usize> {
    prop_oneof![1usize..8, 8usize..64, 64usize..4096]
}

fn max_record() -> impl Strategy<Value = usize> {
    prop_oneof![3 => Just(1usize << 20), 1 => 1usize..40]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn smiles_slabs_match_reference(
        (data, header) in smiles_file(),
        skip in any::<bool>(),
        n in 1usize..=64,
        buffer in buffer_size(),
        max in max_record(),
        threads in 1usize..=64,
    ) {
        check(&data, RecordKind::Line, n, buffer, max, header && skip, threads);
    }

    #[test]
    fn sdf_slabs_match_reference(
        data in sdf_file(),
        n in 1usize..=64,
        buffer in buffer_size(),
        max in max_record(),
        threads in 1usize..=64,
    ) {
        check(&data, RecordKind::Sdf, n, buffer, max, false, threads);
    }
}

#[test]
fn reference_sanity() {
    let r = reference_lines(b"h\nC\n\n #\n N\r\n", true, 100);
    assert_eq!(
        r.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(),
        vec![(2, 1), (8, 4)]
    );
    let s = reference_sdf(b"\nA\n$$$$\r\nB\n$$$$  \n \n", 100);
    assert_eq!(
        s.iter().map(|r| (r.0, r.1, r.2)).collect::<Vec<_>>(),
        vec![(0, 0, 9), (9, 3, 9)]
    );
}
