//! Tests of the pattern index: screens equal a brute-force check of every row, on both AND
//! paths, for random stores written in random parts; damaged or missing files are refused.

use std::path::Path;

use molsift_store::{FingerprintSpec, Store, StoreWriter, Verify};
use proptest::prelude::*;

use crate::layout::{plane_words, PLANES_FILE};
use crate::screen::screen_planes;
use crate::{create_planes, finish_index, write_part, PatternIndex, SubstructureError, BLOCK};

fn store_of(dir: &Path, n: usize) -> Store {
    let path = dir.join("s.store");
    let spec = FingerprintSpec::new("morgan", 64, serde_json::json!({})).unwrap();
    let mut w = StoreWriter::create(&path, spec, false).unwrap();
    for i in 0..n {
        w.add_molecule(&format!("m{i}"), "C", i as u64 + 1, &[])
            .unwrap();
    }
    w.finish().unwrap();
    Store::open(&path, Verify::Sizes).unwrap()
}

/// Writes `rows` (`wpr` words each) as an index of `bits` bits in parts of `part` molecules.
fn index_of(dir: &Path, rows: &[u64], wpr: usize, bits: u32, part: usize) -> PatternIndex {
    let n = rows.len() / wpr;
    let store = store_of(dir, n);
    let tmp = dir.join("planes.tmp");
    create_planes(&tmp, bits, n).unwrap();
    let mut counts = vec![0u64; bits as usize];
    for first in (0..n).step_by(part) {
        let last = (first + part).min(n);
        let c = write_part(&tmp, bits, n, first, &rows[first * wpr..last * wpr], wpr).unwrap();
        counts.iter_mut().zip(c).for_each(|(a, b)| *a += b);
    }
    finish_index(&store, &tmp, None, bits, counts, serde_json::json!(null), 1).unwrap();
    let store = Store::open(&dir.join("s.store"), Verify::Full).unwrap();
    PatternIndex::open_in(&store).unwrap()
}

fn brute(rows: &[u64], wpr: usize, bits: &[u32], range: std::ops::Range<usize>) -> Vec<u64> {
    range
        .filter(|&i| {
            let row = &rows[i * wpr..(i + 1) * wpr];
            bits.iter()
                .all(|&b| row[b as usize / 64] >> (b % 64) & 1 == 1)
        })
        .map(|i| i as u64)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn screens_equal_brute_force(
        n in 0usize..5000,
        density in 0.05f64..0.95,
        seed in any::<u64>(),
        parts in 1usize..5,
        queries in prop::collection::vec(prop::collection::vec(0u32..130, 0..6), 1..6),
        cut in (0.0f64..1.0, 0.0f64..1.0),
    ) {
        let (bits, wpr) = (130u32, 3usize);
        let mut state = seed | 1;
        let mut rows = vec![0u64; n * wpr];
        for (i, w) in rows.iter_mut().enumerate() {
            let mut x = 0u64;
            for b in 0..64 {
                state ^= state << 13; state ^= state >> 7; state ^= state << 17;
                let bit = (i % wpr) * 64 + b;
                if bit < bits as usize && (state % 1000) as f64 / 1000.0 < density {
                    x |= 1 << b;
                }
            }
            *w = x;
        }
        let part = (n / parts).div_ceil(BLOCK).max(1) * BLOCK;
        let dir = tempfile::tempdir().unwrap();
        let index = index_of(dir.path(), &rows, wpr, bits, part);
        let (a, b) = ((cut.0 * n as f64) as usize, (cut.1 * n as f64) as usize);
        let range = a.min(b)..a.max(b);
        for q in &queries {
            let mut got = Vec::new();
            index.screen(q, 0..n, &mut got).unwrap();
            prop_assert_eq!(&got, &brute(&rows, wpr, q, 0..n));
            let mut part_hits = Vec::new();
            index.screen(q, range.clone(), &mut part_hits).unwrap();
            prop_assert_eq!(&part_hits, &brute(&rows, wpr, q, range.clone()));
            // the portable path gives the same
            if let Some(order) = index.plan(q).unwrap() {
                let mut portable = Vec::new();
                screen_planes(index.words(), plane_words(n), &order, 0..n, &mut portable, false);
                prop_assert_eq!(&portable, &got);
            }
        }
    }
}

#[test]
fn a_store_without_an_index_says_how_to_build_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_of(dir.path(), 3);
    let err = PatternIndex::open_in(&store).err().unwrap();
    assert!(matches!(err, SubstructureError::NoIndex(_)));
    assert!(err.to_string().contains("--pattern"), "{err}");
}

#[test]
fn a_damaged_plane_is_refused_when_read() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<u64> = (0..600u64).map(|i| i % 4).collect();
    drop(index_of(dir.path(), &rows, 1, 2, 512));
    let planes = dir.path().join("s.store").join(PLANES_FILE);
    let mut bytes = std::fs::read(&planes).unwrap();
    let pw = plane_words(600) * 8;
    bytes[pw + 3] ^= 0x10; // plane 1
    std::fs::write(&planes, &bytes).unwrap();
    let store = Store::open(&dir.path().join("s.store"), Verify::Sizes).unwrap();
    let index = PatternIndex::open_in(&store).unwrap();
    let mut out = Vec::new();
    index.screen(&[0], 0..600, &mut out).unwrap(); // plane 0 is intact
    let err = index.screen(&[1], 0..600, &mut out).unwrap_err();
    assert!(err.to_string().contains("plane 1"), "{err}");
    assert!(Store::open(&dir.path().join("s.store"), Verify::Full).is_err());
}

#[test]
fn parts_must_start_on_a_block_and_fit() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("p");
    create_planes(&tmp, 8, 1000).unwrap();
    assert!(write_part(&tmp, 8, 1000, 100, &[0; 10], 1).is_err());
    assert!(write_part(&tmp, 8, 1000, 768, &[0; 300], 1).is_err());
    assert!(write_part(&tmp, 8, 1000, 0, &[1 << 9], 1).is_err()); // bit 9 of 8
    assert!(write_part(&tmp, 8, 1000, 0, &[1; 10], 1).is_ok());
}

#[test]
fn bits_no_molecule_has_pass_nothing_and_bits_all_have_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let rows = [0b011u64, 0b001, 0b011];
    let index = index_of(dir.path(), &rows, 1, 3, 256);
    assert_eq!(index.plan(&[2]).unwrap(), None);
    assert_eq!(index.plan(&[0, 1, 1]).unwrap(), Some(vec![1]));
    let mut out = Vec::new();
    index.screen(&[], 0..3, &mut out).unwrap();
    assert_eq!(out, [0, 1, 2]);
    assert!(index.screen(&[3], 0..3, &mut out).is_err());
}
