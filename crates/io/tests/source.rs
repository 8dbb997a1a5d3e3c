//! `RecordSource` on the repository's bundled SMILES file: slabs give the
//! same records as one stream, with absolute 1-based lines and ids.

use molsift_io::{
    count_input, split_slabs, InputFormat, ReaderOptions, RecordSource, SourceRecord,
};
use std::path::{Path, PathBuf};

fn bundled() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/nci_first_5k.smi");
    p.exists().then_some(p)
}

fn drain(mut s: RecordSource) -> (Vec<SourceRecord>, u64) {
    let mut out = Vec::new();
    while let Some(r) = s.next_record().unwrap() {
        out.push(r);
    }
    (out, s.counters().bytes_read)
}

#[test]
fn bundled_file_reads_the_same_by_slabs_and_stream() {
    let Some(path) = bundled() else {
        eprintln!("data/nci_first_5k.smi not found; skipped");
        return;
    };
    let format = InputFormat::detect(&path).unwrap();
    assert_eq!(format, InputFormat::Smiles { header: false });
    let opts = ReaderOptions::for_kind(format.record_kind());
    let (whole, _) = drain(RecordSource::open_stream(&path, format.clone(), opts.clone()).unwrap());
    assert_eq!(whole.len(), 4999);
    assert_eq!(count_input(&path, &format, 4).unwrap().records, 4999);
    let first = &whole[0];
    assert_eq!(
        (
            first.text.as_str(),
            first.id.as_str(),
            first.line,
            first.offset,
            first.problem.clone()
        ),
        ("CC1=CC(=O)C=CC1=O", "1", 1, 0, None)
    );
    assert_eq!((whole[1].id.as_str(), whole[1].line), ("2", 2));
    let size = std::fs::metadata(&path).unwrap().len();
    for slabs in [1, 2, 3, 7, 64] {
        for buffer_size in [1, 100, 1 << 20] {
            let mut got = Vec::new();
            let mut bytes_read = 0;
            for slab in split_slabs(size, slabs) {
                let opts = ReaderOptions {
                    buffer_size,
                    ..opts.clone()
                };
                let (recs, read) =
                    drain(RecordSource::open_slab(&path, format.clone(), slab, opts).unwrap());
                got.extend(recs);
                bytes_read += read;
            }
            assert_eq!(got, whole, "{slabs} slabs, buffer {buffer_size}");
            // Each slab reads at most one byte before it and 4 KiB past it.
            let bound = 1.01 + (slabs * 4097) as f64 / size as f64;
            assert!(
                bytes_read as f64 / size as f64 <= bound,
                "{slabs} slabs: read {bytes_read} of {size}"
            );
        }
    }
}
