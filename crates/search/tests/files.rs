//! The column index on disk: write/open round trip, refusal of truncated or missing files,
//! checksum verification, and building from a real store.

mod common;

use common::{brute, family_set, queries_for};
use molsift_search::{
    ColumnIndex, SearchError, SearchOptions, HEADER_FILE, ORDER_FILE, PLANES_FILE,
};

fn built() -> (common::Set, ColumnIndex) {
    let set = family_set(30, 2048, 1200, 40);
    let idx = ColumnIndex::build(&set.rows, set.stride, set.bits, set.n(), &set.pops).unwrap();
    (set, idx)
}

#[test]
fn write_open_round_trip() {
    let (set, idx) = built();
    let dir = tempfile::tempdir().unwrap();
    idx.write(dir.path()).unwrap();
    let back = ColumnIndex::open(dir.path()).unwrap();
    back.verify().unwrap();
    assert_eq!(back.len(), idx.len());
    assert_eq!(back.bits(), 2048);
    assert_eq!(back.buckets(), idx.buckets());
    assert_eq!(back.order(), idx.order());
    assert_eq!(back.plane(17), idx.plane(17));
    for q in queries_for(31, &set, 5) {
        for o in [SearchOptions::threshold(0.4), SearchOptions::top_k(10)] {
            assert_eq!(
                back.search(&q, &o).unwrap(),
                brute(&set, &q, o.threshold, o.k)
            );
        }
    }
    // rewriting in place works and leaves no temporary files
    back.write(&dir.path().join("again")).unwrap();
    idx.write(dir.path()).unwrap();
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
}

#[test]
fn empty_index_round_trips() {
    let idx = ColumnIndex::build(&[], 32, 2048, 0, &[]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    idx.write(dir.path()).unwrap();
    let back = ColumnIndex::open(dir.path()).unwrap();
    back.verify().unwrap();
    assert!(back.is_empty());
    let q = molsift_search::Query::from_on_bits(2048, &[1, 2]).unwrap();
    assert!(back
        .search(&q, &SearchOptions::top_k(5))
        .unwrap()
        .is_empty());
}

#[test]
fn truncated_files_are_refused_by_name() {
    let (_, idx) = built();
    for name in [PLANES_FILE, ORDER_FILE] {
        let dir = tempfile::tempdir().unwrap();
        idx.write(dir.path()).unwrap();
        let path = dir.path().join(name);
        let len = std::fs::metadata(&path).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len - 8)
            .unwrap();
        let err = ColumnIndex::open(dir.path()).unwrap_err();
        assert!(matches!(err, SearchError::WrongSize { .. }), "{err}");
        assert!(err.to_string().contains(name), "{err}");
        assert!(err.to_string().contains("truncated"), "{err}");
    }
}

#[test]
fn missing_or_damaged_header_is_refused() {
    let (_, idx) = built();
    let dir = tempfile::tempdir().unwrap();
    let err = ColumnIndex::open(dir.path()).unwrap_err();
    assert!(err.to_string().contains(HEADER_FILE), "{err}");

    idx.write(dir.path()).unwrap();
    let h = dir.path().join(HEADER_FILE);
    let text = std::fs::read_to_string(&h).unwrap();
    std::fs::write(&h, text.replace("\"version\": 2", "\"version\": 7")).unwrap();
    let err = ColumnIndex::open(dir.path()).unwrap_err();
    assert!(
        matches!(err, SearchError::UnsupportedVersion { ref found, .. } if found == "7"),
        "{err}"
    );

    std::fs::write(
        &h,
        text.replace("\"molecules\": 1200", "\"molecules\": 1201"),
    )
    .unwrap();
    let err = ColumnIndex::open(dir.path()).unwrap_err();
    assert!(matches!(err, SearchError::BadHeader { .. }), "{err}");
    assert!(err.to_string().contains(HEADER_FILE), "{err}");

    std::fs::write(&h, "{ not json").unwrap();
    assert!(matches!(
        ColumnIndex::open(dir.path()),
        Err(SearchError::BadHeader { .. })
    ));
}

#[test]
fn flipped_bit_is_caught_by_verify() {
    let (_, idx) = built();
    let dir = tempfile::tempdir().unwrap();
    idx.write(dir.path()).unwrap();
    let path = dir.path().join(PLANES_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[12345] ^= 4;
    std::fs::write(&path, bytes).unwrap();
    let opened = ColumnIndex::open(dir.path()).unwrap();
    let err = opened.verify().unwrap_err();
    assert!(matches!(err, SearchError::Corrupted { .. }), "{err}");
    assert!(err.to_string().contains(PLANES_FILE), "{err}");
}

#[test]
fn built_from_a_store_equals_built_from_rows() {
    use molsift_store::{FingerprintSpec, Store, StoreWriter, Verify};
    let set = family_set(32, 2048, 700, 40);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.store");
    let spec = FingerprintSpec::new("morgan", 2048, serde_json::json!({"radius": 2})).unwrap();
    let mut w = StoreWriter::create(&path, spec, false).unwrap();
    for i in 0..set.n() {
        let on: Vec<u32> = (0..2048u32)
            .filter(|&b| set.row(i)[b as usize / 64] >> (b % 64) & 1 == 1)
            .collect();
        w.add_molecule(&format!("m{i}"), "C", i as u64 + 1, &on)
            .unwrap();
    }
    w.finish().unwrap();
    let store = Store::open(&path, Verify::Full).unwrap();
    let from_store = ColumnIndex::from_store(&store).unwrap();
    let from_rows =
        ColumnIndex::build(&set.rows, set.stride, set.bits, set.n(), &set.pops).unwrap();
    assert_eq!(from_store.order(), from_rows.order());
    assert_eq!(from_store.buckets(), from_rows.buckets());
    for b in 0..2048 {
        assert_eq!(from_store.plane(b), from_rows.plane(b));
    }
    // the index can live inside the store directory, next to its files
    from_store.write(&path).unwrap();
    assert!(Store::open(&path, Verify::Full).is_ok());
    ColumnIndex::open(&path).unwrap().verify().unwrap();
}

#[test]
fn written_in_passes_equals_built_in_memory_byte_for_byte() {
    use molsift_search::{write_index, HEADER_FILE, ORDER_FILE};
    let set = family_set(33, 2048, 1500, 40);
    let whole = tempfile::tempdir().unwrap();
    ColumnIndex::build(&set.rows, set.stride, set.bits, set.n(), &set.pops)
        .unwrap()
        .write(whole.path())
        .unwrap();
    let words = set.bits as usize / 64;
    let plane_bytes = (ColumnIndex::open(whole.path()).unwrap().blocks() * 32) as usize;
    // one plane per pass, 100 planes (not a multiple of 64 bits), 1000, and all in one pass
    for budget in [1, plane_bytes * 100, plane_bytes * 1000, usize::MAX / 2] {
        let dir = tempfile::tempdir().unwrap();
        let mut calls = 0usize;
        let written = write_index(
            dir.path(),
            set.bits,
            set.n(),
            |i| u32::from(set.pops[i]),
            |i, row| {
                calls += 1;
                row.copy_from_slice(&set.row(i)[..words]);
            },
            budget,
        )
        .unwrap();
        let passes = if budget == 1 {
            2048
        } else {
            2048usize.div_ceil((budget / plane_bytes).min(2048))
        };
        assert_eq!(
            calls,
            passes * set.n(),
            "budget {budget}: one fetch per molecule and pass"
        );
        for f in [PLANES_FILE, ORDER_FILE, HEADER_FILE] {
            let (a, b) = (
                std::fs::read(whole.path().join(f)).unwrap(),
                std::fs::read(dir.path().join(f)).unwrap(),
            );
            assert!(a == b, "budget {budget}: {f} differs");
        }
        assert_eq!(
            written,
            (plane_bytes * 2048 + plane_bytes * 64) as u64,
            "planes plus 8 bytes per slot of order"
        );
        ColumnIndex::open(dir.path()).unwrap().verify().unwrap();
    }
}

#[test]
fn written_in_passes_refuses_a_wrong_popcount_and_leaves_no_index() {
    let set = family_set(34, 2048, 300, 40);
    let dir = tempfile::tempdir().unwrap();
    let err = molsift_search::write_index(
        dir.path(),
        set.bits,
        set.n(),
        |i| u32::from(set.pops[i]) + u32::from(i == 7),
        |i, row| row.copy_from_slice(&set.row(i)[..32]),
        1 << 20,
    )
    .unwrap_err();
    assert!(err.to_string().contains("molecule 7: popcount"), "{err}");
    assert!(
        ColumnIndex::open(dir.path()).is_err(),
        "no header, no index"
    );
}

#[test]
fn read_ahead_hints_do_not_change_results() {
    let (set, idx) = built();
    let dir = tempfile::tempdir().unwrap();
    idx.write(dir.path()).unwrap();
    let mut opened = ColumnIndex::open(dir.path()).unwrap();
    assert!(
        !opened.read_ahead(),
        "a small index fits in memory: no hints by default"
    );
    let queries = queries_for(35, &set, 12);
    let all_opts = [
        SearchOptions::threshold(0.5),
        SearchOptions::threshold(0.8),
        SearchOptions::top_k(7),
    ];
    let plain: Vec<_> = queries
        .iter()
        .flat_map(|q| {
            all_opts
                .iter()
                .map(|o| opened.search(q, &(*o).with_threads(2)).unwrap())
        })
        .collect();
    opened.set_read_ahead(true);
    assert!(opened.read_ahead());
    for threads in [1, 2] {
        let hinted: Vec<_> = queries
            .iter()
            .flat_map(|q| {
                all_opts
                    .iter()
                    .map(|o| opened.search(q, &(*o).with_threads(threads)).unwrap())
            })
            .collect();
        assert_eq!(hinted, plain);
    }
    let mut in_memory =
        ColumnIndex::build(&set.rows, set.stride, set.bits, set.n(), &set.pops).unwrap();
    in_memory.set_read_ahead(true);
    assert!(!in_memory.read_ahead(), "only a mapped index takes hints");
}
