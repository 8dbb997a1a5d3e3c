//! Property tests: random small stores, queries and options; both paths, 1 and 2 threads, and
//! the batch must equal the brute-force reference.

mod common;

use common::{brute, Set};
use molsift_search::{ColumnIndex, Query, RowScan, SearchOptions};
use proptest::prelude::*;

/// A molecule as a list of on-bits drawn from a small pool (so duplicates and ties are common).
fn molecule(bits: u32) -> impl Strategy<Value = Vec<u32>> {
    prop_oneof![
        prop::collection::vec(0..bits.min(24), 0..12),
        prop::collection::vec(0..bits, 0..40),
    ]
}

fn options() -> impl Strategy<Value = SearchOptions> {
    let t = prop_oneof![
        Just(None),
        Just(Some(0.0)),
        Just(Some(1.0)),
        (0u32..=20).prop_map(|x| Some(f64::from(x) / 20.0)),
        (0.0f64..=1.0).prop_map(Some),
    ];
    let k = prop_oneof![Just(None), (0usize..12).prop_map(Some), Just(Some(10_000))];
    (t, k, 1usize..=2).prop_map(|(threshold, k, threads)| SearchOptions {
        threshold,
        k,
        threads,
        bar: None,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn both_paths_match_brute_force(
        bits in prop_oneof![Just(64u32), Just(128), Just(256)],
        mols in prop::collection::vec(molecule(256), 0..600),
        qs in prop::collection::vec(molecule(256), 1..5),
        opts in options(),
    ) {
        let mut set = Set::new(bits);
        for m in &mols {
            let on: Vec<u32> = m.iter().map(|b| b % bits).collect();
            set.push(&on);
        }
        let idx = ColumnIndex::build(&set.rows, set.stride, bits, set.n(), &set.pops).unwrap();
        let rs = RowScan::new(&set.rows, set.stride, bits, set.n(), &set.pops).unwrap();
        let queries: Vec<Query> = qs
            .iter()
            .map(|q| Query::from_on_bits(bits, &q.iter().map(|b| b % bits).collect::<Vec<_>>()).unwrap())
            .collect();
        let mut want = Vec::new();
        for q in &queries {
            let w = brute(&set, q, opts.threshold, opts.k);
            prop_assert_eq!(&idx.search(q, &opts).unwrap(), &w);
            prop_assert_eq!(&rs.search(q, &opts).unwrap(), &w);
            want.push(w);
        }
        prop_assert_eq!(idx.search_batch(&queries, &opts).unwrap(), want);
    }
}
