//! Reader behaviour on bigger inputs: oversized records, NUL bytes, read
//! amplification with many slabs and huge or tiny buffers, and compressed
//! streams giving the same records as the plain file.

use molsift_io::{
    count_newlines, count_records, read_amplification, split_slabs, Compression, ReadCounters,
    ReaderOptions, RecordKind, SlabReader, StreamReader,
};
use std::io::Write;
use std::path::Path;

/// (offset, absolute line, len, bytes, oversized, has_nul)
type Rec = (u64, u64, u64, Vec<u8>, bool, bool);

fn write(data: &[u8]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(data).unwrap();
    f.flush().unwrap();
    f
}

/// All records of all `n` slabs (read in parallel), plus the summed
/// counters and the largest buffer seen.
fn read_all(
    path: &Path,
    kind: RecordKind,
    n: usize,
    opts: &ReaderOptions,
) -> (Vec<Rec>, ReadCounters, usize) {
    let len = std::fs::metadata(path).unwrap().len();
    let per_slab: Vec<(Vec<Rec>, ReadCounters, usize)> = std::thread::scope(|s| {
        let handles: Vec<_> = split_slabs(len, n)
            .into_iter()
            .map(|slab| {
                s.spawn(move || {
                    let first = count_newlines(path, 0..slab.start).unwrap();
                    let mut r = SlabReader::open(path, kind, slab, opts.clone()).unwrap();
                    let mut out = Vec::new();
                    while let Some(rec) = r.next_record().unwrap() {
                        out.push((
                            rec.offset,
                            first + rec.line,
                            rec.len,
                            rec.bytes.to_vec(),
                            rec.oversized,
                            rec.has_nul,
                        ));
                    }
                    (out, r.counters().clone(), r.buffer_capacity())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut out = Vec::new();
    let mut total = ReadCounters::default();
    let mut biggest = 0;
    for (recs, counters, cap) in per_slab {
        out.extend(recs);
        total.add(&counters);
        biggest = biggest.max(cap);
    }
    (out, total, biggest)
}

/// A deterministic file of SMILES-like lines, about `target` bytes.
fn smiles_corpus(target: usize) -> Vec<u8> {
    let atoms: [&[u8]; 8] = [
        b"C",
        b"c1ccccc1",
        b"O",
        b"N",
        b"C(=O)",
        b"Cl",
        b"[nH]",
        b"S",
    ];
    let mut data = Vec::with_capacity(target + 100);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut i = 0u64;
    while data.len() < target {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        for k in 0..(3 + x % 12) {
            data.extend_from_slice(atoms[((x >> (3 * k)) % 8) as usize]);
        }
        data.extend_from_slice(format!(" MOL{i}\n").as_bytes());
        if x % 97 == 5 {
            data.extend_from_slice(b"\n# comment\n");
        }
        i += 1;
    }
    data
}

#[test]
fn oversized_line_is_streamed_over() {
    let mut data = b"CCO a\n\n# note\n".to_vec();
    let big_at = data.len() as u64;
    data.extend_from_slice(&vec![b'C'; 1_000_000]);
    data.extend_from_slice(b" big\r\nc1ccccc1 b\nN");
    let f = write(&data);
    let max = 64 << 10;
    for (n, buffer) in [
        (1, 16 << 10),
        (7, 16 << 10),
        (3, 1),
        (64, 100 << 10),
        (2, 20 << 20),
    ] {
        let opts = ReaderOptions {
            buffer_size: buffer,
            max_record_bytes: max,
            ..ReaderOptions::default()
        };
        let (recs, counters, biggest) = read_all(f.path(), RecordKind::Line, n, &opts);
        assert_eq!(recs.len(), 4, "{n} slabs, buffer {buffer}");
        assert_eq!(recs[0], (0, 0, 6, b"CCO a".to_vec(), false, false));
        assert_eq!(recs[1], (big_at, 3, 1_000_006, Vec::new(), true, false));
        assert_eq!(
            recs[2],
            (
                big_at + 1_000_006,
                4,
                11,
                b"c1ccccc1 b".to_vec(),
                false,
                false
            )
        );
        assert_eq!(recs[3].1, 5);
        assert_eq!(counters.oversized, 1);
        assert_eq!(counters.records, 4);
        assert!(biggest <= buffer.max(max + 1), "buffer grew to {biggest}");
    }
    assert_eq!(
        count_records(f.path(), RecordKind::Line, 5, false)
            .unwrap()
            .records,
        4
    );
}

#[test]
fn oversized_sdf_block_is_streamed_over() {
    let mut data = b"a\n\nM  END\n$$$$\n".to_vec();
    let big_at = data.len() as u64;
    for i in 0..20_000 {
        data.extend_from_slice(format!("line {i} of a very long block\n").as_bytes());
    }
    data.extend_from_slice(b"$$$$\r\n\nM  END\n$$$$\n");
    let big_len = data.len() as u64 - 13 - big_at;
    let f = write(&data);
    let opts = ReaderOptions {
        buffer_size: 4096,
        max_record_bytes: 64 << 10,
        ..ReaderOptions::default()
    };
    for n in [1, 4, 33] {
        let (recs, counters, biggest) = read_all(f.path(), RecordKind::Sdf, n, &opts);
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[1], (big_at, 4, big_len, Vec::new(), true, false));
        assert_eq!(
            recs[2],
            (
                big_at + big_len,
                20_005,
                13,
                b"\nM  END\n$$$$\n".to_vec(),
                false,
                false
            )
        );
        assert_eq!(counters.oversized, 1);
        assert!(biggest <= (64 << 10) + 1);
    }
}

#[test]
fn nul_bytes_are_flagged() {
    let f = write(b"CC\0O x\nCCO\n\0\n");
    let (recs, _, _) = read_all(f.path(), RecordKind::Line, 2, &ReaderOptions::default());
    let flags: Vec<(Vec<u8>, bool)> = recs.into_iter().map(|r| (r.3, r.5)).collect();
    assert_eq!(
        flags,
        vec![
            (b"CC\0O x".to_vec(), true),
            (b"CCO".to_vec(), false),
            (b"\0".to_vec(), true)
        ]
    );
    let s = write(b"t\n\0\n$$$$\nu\n$$$$\n");
    let (recs, _, _) = read_all(
        s.path(),
        RecordKind::Sdf,
        1,
        &ReaderOptions::for_kind(RecordKind::Sdf),
    );
    assert_eq!(
        recs.iter().map(|r| r.5).collect::<Vec<_>>(),
        vec![true, false]
    );
}

#[test]
fn read_amplification_stays_near_one() {
    let data = smiles_corpus(8 << 20);
    let f = write(&data);
    let len = data.len() as u64;
    let expected = count_records(f.path(), RecordKind::Line, 4, false)
        .unwrap()
        .records;
    let opts = ReaderOptions {
        buffer_size: 20 << 20,
        ..ReaderOptions::default()
    };
    let (recs, counters, _) = read_all(f.path(), RecordKind::Line, 64, &opts);
    assert_eq!(recs.len() as u64, expected);
    let amp = read_amplification(counters.bytes_read, len);
    assert!((1.0..=1.01).contains(&amp), "read amplification {amp}");
    // Every record once, in file order.
    assert!(recs.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(
        recs.last().unwrap().1 + 1,
        count_newlines(f.path(), 0..len).unwrap()
    );

    // A one-byte buffer (one byte per read call) still yields every record.
    let tiny = ReaderOptions {
        buffer_size: 1,
        ..ReaderOptions::default()
    };
    let (tiny_recs, tiny_counters, _) = read_all(f.path(), RecordKind::Line, 64, &tiny);
    assert_eq!(tiny_recs, recs);
    assert!(read_amplification(tiny_counters.bytes_read, len) <= 1.01);
    assert_eq!(tiny_counters.read_calls, tiny_counters.bytes_read);
}

/// Records of a whole stream.
fn read_stream(
    path: &Path,
    kind: RecordKind,
    opts: &ReaderOptions,
) -> (Vec<Rec>, Compression, ReadCounters) {
    let mut r = StreamReader::open(path, kind, opts.clone()).unwrap();
    let mut out = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        out.push((
            rec.offset,
            rec.line,
            rec.len,
            rec.bytes.to_vec(),
            rec.oversized,
            rec.has_nul,
        ));
    }
    (out, r.compression(), r.counters().clone())
}

#[test]
fn compressed_streams_match_plain() {
    let mut sdf = Vec::new();
    for i in 0..300 {
        sdf.extend_from_slice(
            format!(
                "{}\n  RDKit\n\nM  END\n> <id>\nX{i}\n\n$$$$\n",
                if i % 3 == 0 { "" } else { "mol" }
            )
            .as_bytes(),
        );
    }
    sdf.extend_from_slice(b"last\nM  END");
    let mut smi = smiles_corpus(200_000);
    smi.extend_from_slice(b"\r\n  \nCCO tail");
    for (kind, data) in [(RecordKind::Line, smi), (RecordKind::Sdf, sdf)] {
        let plain = write(&data);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&data).unwrap();
        let gz = write(&gz.finish().unwrap());
        let zst = write(&zstd::encode_all(&data[..], 3).unwrap());
        let (expected, _, _) = read_all(plain.path(), kind, 1, &ReaderOptions::for_kind(kind));
        assert!(expected.len() > 100);
        for buffer in [1, 7, 4096, 1 << 20] {
            let opts = ReaderOptions {
                buffer_size: buffer,
                ..ReaderOptions::for_kind(kind)
            };
            for (file, want) in [
                (&plain, Compression::None),
                (&gz, Compression::Gzip),
                (&zst, Compression::Zstd),
            ] {
                assert_eq!(molsift_io::detect_compression(file.path()).unwrap(), want);
                let (got, found, counters) = read_stream(file.path(), kind, &opts);
                assert_eq!(found, want);
                assert_eq!(got, expected, "{kind:?} {want:?} buffer {buffer}");
                let file_len = std::fs::metadata(file.path()).unwrap().len();
                assert_eq!(counters.bytes_read, file_len, "{want:?}");
                assert_eq!(counters.decompressed_bytes, data.len() as u64);
                assert_eq!(counters.records, expected.len() as u64);
            }
        }
    }
}

#[test]
fn stream_skips_header_and_reports_truncated_gzip() {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b"smiles,id\nCCO,1\nN,2\n").unwrap();
    let bytes = gz.finish().unwrap();
    let f = write(&bytes);
    let opts = ReaderOptions {
        skip_header: true,
        ..ReaderOptions::default()
    };
    let (recs, _, _) = read_stream(f.path(), RecordKind::Line, &opts);
    assert_eq!(
        recs.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(),
        vec![(10, 1), (16, 2)]
    );

    let cut = write(&bytes[..bytes.len() - 6]);
    let mut r = StreamReader::open(cut.path(), RecordKind::Line, ReaderOptions::default()).unwrap();
    let err = loop {
        match r.next_record() {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("a truncated gzip file must fail"),
            Err(e) => break e,
        }
    };
    assert!(
        err.to_string().contains(&cut.path().display().to_string()),
        "{err}"
    );
}
