//! Both search paths against the brute-force reference: thresholds, top-k, both together,
//! empty and zero-bit queries, tiny and block-edge store sizes, ties, threads, batches.

mod common;

use common::{brute, family_set, queries_for, Set};
use molsift_search::{
    search, search_batch, ColumnIndex, Hit, Query, RowScan, SearchError, SearchOptions, SearchPath,
};

const THRESHOLDS: [f64; 8] = [0.0, 0.05, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0];

fn index(set: &Set) -> ColumnIndex {
    ColumnIndex::build(&set.rows, set.stride, set.bits, set.n(), &set.pops).unwrap()
}

fn rows(set: &Set) -> RowScan<'_> {
    RowScan::new(&set.rows, set.stride, set.bits, set.n(), &set.pops).unwrap()
}

/// Every option combination for every query, on both paths and 1 and 2 threads.
fn check_all(set: &Set, queries: &[Query], ks: &[usize]) {
    let idx = index(set);
    let rs = rows(set);
    let (_dir, cidx) = common::compressed_index(set);
    // planes without the part masks, or with those of 32 slots only (stores written by older
    // versions), search the same
    let (_dir1, cidx1) = common::compressed_index_of_format(set, 1);
    let (_dir2, cidx2) = common::compressed_index_of_format(set, 2);
    let mut opts = Vec::new();
    for &t in &THRESHOLDS {
        opts.push(SearchOptions::threshold(t));
    }
    for &k in ks {
        opts.push(SearchOptions::top_k(k));
        opts.push(SearchOptions {
            threshold: Some(0.5),
            k: Some(k),
            threads: 1,
            bar: None,
        });
    }
    opts.push(SearchOptions::default());
    for q in queries {
        for o in &opts {
            let want = brute(set, q, o.threshold, o.k);
            for threads in [1, 2] {
                let o = o.with_threads(threads);
                let got = idx.search(q, &o).unwrap();
                assert_eq!(got, want, "columns q={} {o:?}", q.popcount());
                let got = rs.search(q, &o).unwrap();
                assert_eq!(got, want, "rows q={} {o:?}", q.popcount());
                let got = cidx.search(q, &o).unwrap();
                assert_eq!(got, want, "compressed q={} {o:?}", q.popcount());
                let got = cidx1.search(q, &o).unwrap();
                assert_eq!(got, want, "compressed, format 1, q={} {o:?}", q.popcount());
                let got = cidx2.search(q, &o).unwrap();
                assert_eq!(got, want, "compressed, format 2, q={} {o:?}", q.popcount());
            }
        }
    }
}

#[test]
fn realistic_density_2048_bits() {
    let set = family_set(1, 2048, 3000, 40);
    let queries = queries_for(2, &set, 14);
    // the data is not vacuous: high thresholds find hits
    let at = |t: f64| {
        queries
            .iter()
            .map(|q| brute(&set, q, Some(t), None).len())
            .sum::<usize>()
    };
    assert!(at(0.9) > 0 && at(0.7) > at(0.9) && at(0.5) > at(0.7));
    check_all(&set, &queries, &[1, 10, 100, 5000]);
}

#[test]
fn dense_fingerprints_and_queries() {
    // ~600 and ~1200 on-bits: the 12-slice counters; 200 on-bits: the 9-slice counters
    let mut set = family_set(3, 2048, 700, 600);
    let extra = family_set(4, 2048, 300, 1200);
    for i in 0..extra.n() {
        let on: Vec<u32> = (0..2048)
            .filter(|&b| extra.row(i)[b as usize / 64] >> (b % 64) & 1 == 1)
            .collect();
        set.push(&on);
    }
    let mut queries = queries_for(5, &set, 6);
    let mut rng = common::Rng(9);
    queries.push(Query::from_on_bits(2048, &common::random_bits(&mut rng, 2048, 200)).unwrap());
    queries.push(Query::from_on_bits(2048, &(0..2048).collect::<Vec<_>>()).unwrap());
    check_all(&set, &queries, &[1, 10, 2000]);
}

#[test]
fn store_sizes_around_a_block() {
    for n in [0usize, 1, 2, 255, 256, 257, 513] {
        let set = family_set(10 + n as u64, 256, n, 30);
        let queries = queries_for(20 + n as u64, &set, 6);
        check_all(&set, &queries, &[1, 10, n + 1]);
        let idx = index(&set);
        assert_eq!(idx.len(), n);
        assert_eq!(
            idx.blocks(),
            idx.buckets().iter().map(|b| b.blocks).sum::<u64>()
        );
    }
}

#[test]
fn zero_on_bit_query_scores_zero_everywhere() {
    let set = family_set(7, 2048, 600, 40);
    let idx = index(&set);
    let rs = rows(&set);
    let q = Query::from_on_bits(2048, &[]).unwrap();
    for run in [
        &|o: &SearchOptions| idx.search(&q, o).unwrap() as Vec<Hit>,
        &|o: &SearchOptions| rs.search(&q, o).unwrap(),
    ] as [&dyn Fn(&SearchOptions) -> Vec<Hit>; 2]
    {
        assert!(run(&SearchOptions::threshold(0.05)).is_empty());
        let all = run(&SearchOptions::threshold(0.0));
        assert_eq!(all.len(), 600);
        assert!(all
            .iter()
            .enumerate()
            .all(|(i, h)| h.index == i as u64 && h.score == 0.0));
        let top = run(&SearchOptions::top_k(5));
        assert_eq!(
            top.iter().map(|h| h.index).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4]
        );
    }
}

#[test]
fn best_first_top_k_reads_blocks_whose_bound_equals_the_bar() {
    // Compressed planes with part masks answer top-k best bound first: a block must be read
    // when its bound equals the bar, not only above it. Most molecules share no bit with the
    // query (bound 0: when k is larger than the rest, they fill the top-k by index), a few
    // score exactly 1/2 (bound = a threshold of 0.5), one scores 1.
    let mut rng = common::Rng(31);
    let mut set = Set::new(2048);
    let query: Vec<u32> = (0..20).collect();
    for i in 0..3000u32 {
        let on: Vec<u32> = match i % 700 {
            // 10 of the query's 20 bits and nothing else: 10 / 20 = 1/2 exactly
            5 => (0..10).map(|b| (b + i) % 20).collect(),
            // the query itself
            650 => query.clone(),
            _ => (0..15).map(|_| 1000 + rng.below(1048) as u32).collect(),
        };
        set.push(&on);
    }
    let (_dir, cidx) = common::compressed_index(&set);
    let q = Query::from_on_bits(2048, &query).unwrap();
    for o in [
        SearchOptions::top_k(3),
        SearchOptions::top_k(20),
        SearchOptions::top_k(2999),
        SearchOptions {
            threshold: Some(0.5),
            k: Some(4),
            threads: 1,
            bar: None,
        },
        SearchOptions {
            threshold: Some(0.5),
            k: Some(100),
            threads: 1,
            bar: None,
        },
    ] {
        let want = brute(&set, &q, o.threshold, o.k);
        for threads in [1, 2] {
            let o = o.with_threads(threads);
            assert_eq!(cidx.search(&q, &o).unwrap(), want, "{o:?}");
        }
    }
}

#[test]
fn ties_at_the_kth_place_go_to_lower_indices() {
    // 40 copies of one fingerprint scattered among others: the query equals it, so the top-k
    // cuts through a group of 40 molecules scoring exactly 1.0
    let mut set = Set::new(2048);
    let mut rng = common::Rng(11);
    let target: Vec<u32> = (0..40).map(|i| i * 37 % 2048).collect();
    let mut copies = Vec::new();
    for i in 0..1500 {
        if i % 37 == 5 {
            set.push(&target);
            copies.push(i as u64);
        } else {
            set.push(&common::mutate(&mut rng, 2048, &target));
        }
    }
    let idx = index(&set);
    let rs = rows(&set);
    let q = Query::from_on_bits(2048, &target).unwrap();
    for k in [1, 7, 10, 40, 41] {
        for threads in [1, 2] {
            let o = SearchOptions::top_k(k).with_threads(threads);
            let want = brute(&set, &q, None, Some(k));
            let got = idx.search(&q, &o).unwrap();
            assert_eq!(got, want);
            assert_eq!(rs.search(&q, &o).unwrap(), want);
            let n1 = k.min(copies.len());
            assert_eq!(
                got.iter().take(n1).map(|h| h.index).collect::<Vec<_>>(),
                copies[..n1]
            );
        }
    }
}

#[test]
fn exact_tie_with_the_threshold_is_a_hit() {
    // molecule 0: 10 bits, the query's 7 plus 3; score exactly 7/10 = 0.7
    // molecule 1: 17 bits containing the query's 7 plus 10 more; 7/17
    let mut set = Set::new(2048);
    let q_bits: Vec<u32> = vec![3, 70, 140, 600, 1000, 1500, 2040];
    let mut m0 = q_bits.clone();
    m0.extend([5, 6, 7]);
    set.push(&m0);
    let mut m1 = q_bits.clone();
    m1.extend(800..810);
    set.push(&m1);
    for i in 0..300u32 {
        set.push(&[i, i + 1]);
    }
    let idx = index(&set);
    let rs = rows(&set);
    let q = Query::from_on_bits(2048, &q_bits).unwrap();
    for hits in [
        idx.search(&q, &SearchOptions::threshold(0.7)).unwrap(),
        rs.search(&q, &SearchOptions::threshold(0.7)).unwrap(),
    ] {
        assert_eq!(
            hits,
            [Hit {
                index: 0,
                score: 0.7
            }]
        );
    }
    assert!(idx
        .search(&q, &SearchOptions::threshold(0.700_001))
        .unwrap()
        .is_empty());
    // t = 0.9 (9/10), where ceil(0.9 * 19 / 1.9) = 10 in floating point: molecule 10 bits,
    // query its 9
    let mut set9 = Set::new(2048);
    let m9: Vec<u32> = (0..10).map(|i| i * 200).collect();
    set9.push(&m9);
    set9.push(&m9[..8]);
    let q9 = Query::from_on_bits(2048, &m9[..9]).unwrap();
    let want = [Hit {
        index: 0,
        score: 0.9,
    }];
    assert_eq!(
        index(&set9)
            .search(&q9, &SearchOptions::threshold(0.9))
            .unwrap(),
        want
    );
    assert_eq!(
        rows(&set9)
            .search(&q9, &SearchOptions::threshold(0.9))
            .unwrap(),
        want
    );
    let t = 7.0 / 17.0;
    let hits = idx.search(&q, &SearchOptions::threshold(t)).unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[1].score, t);
}

#[test]
fn batch_equals_one_by_one() {
    let set = family_set(12, 2048, 2500, 40);
    let idx = index(&set);
    let rs = rows(&set);
    let queries = queries_for(13, &set, 37); // more than two groups
    for o in [
        SearchOptions::threshold(0.5),
        SearchOptions::threshold(0.0),
        SearchOptions::top_k(10),
        SearchOptions {
            threshold: Some(0.6),
            k: Some(3),
            threads: 1,
            bar: None,
        },
        SearchOptions::top_k(0),
    ] {
        let one: Vec<Vec<Hit>> = queries.iter().map(|q| idx.search(q, &o).unwrap()).collect();
        for threads in [1, 2, 3] {
            let o = o.with_threads(threads);
            assert_eq!(idx.search_batch(&queries, &o).unwrap(), one, "{o:?}");
            let (both, _) = search_batch(&idx, Some(&rs), &queries, &o).unwrap();
            assert_eq!(both, one, "{o:?}");
        }
    }
    assert!(idx
        .search_batch(&[], &SearchOptions::top_k(3))
        .unwrap()
        .is_empty());
}

#[test]
fn chosen_path_gives_the_same_hits() {
    let set = family_set(14, 2048, 2000, 40);
    let idx = index(&set);
    let rs = rows(&set);
    for q in queries_for(15, &set, 8) {
        let o = SearchOptions::threshold(0.3);
        let (h, st) = search(&idx, Some(&rs), &q, &o).unwrap();
        assert_eq!(h, brute(&set, &q, Some(0.3), None));
        assert_eq!(st.path, molsift_search::choose(&idx, q.popcount()));
        let (h2, st2) = search(&idx, None, &q, &o).unwrap();
        assert_eq!(h2, h);
        assert_eq!(st2.path, SearchPath::Columns);
    }
}

#[test]
fn portable_and_simd_kernels_agree() {
    let set = family_set(16, 2048, 1500, 40);
    let idx = index(&set);
    let queries = queries_for(17, &set, 6);
    let o = SearchOptions::top_k(20);
    let simd: Vec<_> = queries.iter().map(|q| idx.search(q, &o).unwrap()).collect();
    molsift_search::set_simd(false);
    let portable: Vec<_> = queries.iter().map(|q| idx.search(q, &o).unwrap()).collect();
    molsift_search::set_simd(true);
    assert_eq!(simd, portable);
    // compressed planes: the part bounds and the counting kernel, both ways, against brute
    // force, with the part masks of 16 slots (format 3) and of 32 only (format 2)
    for format in [3, 2] {
        let (_dir, cidx) = common::compressed_index_of_format(&set, format);
        for o in [SearchOptions::top_k(20), SearchOptions::threshold(0.6)] {
            let want: Vec<_> = queries
                .iter()
                .map(|q| brute(&set, q, o.threshold, o.k))
                .collect();
            let simd: Vec<_> = queries
                .iter()
                .map(|q| cidx.search(q, &o).unwrap())
                .collect();
            molsift_search::set_simd(false);
            let portable: Vec<_> = queries
                .iter()
                .map(|q| cidx.search(q, &o).unwrap())
                .collect();
            molsift_search::set_simd(true);
            assert_eq!(simd, want, "format {format} {o:?}");
            assert_eq!(portable, want, "format {format} {o:?}");
        }
    }
}

#[test]
fn stats_count_what_was_read() {
    let set = family_set(18, 2048, 5000, 40);
    let idx = index(&set);
    let q = queries_for(19, &set, 3).pop().unwrap();
    let (_, full) = idx
        .search_with_stats(&q, &SearchOptions::threshold(0.0))
        .unwrap();
    let (_, pruned) = idx
        .search_with_stats(&q, &SearchOptions::threshold(0.9))
        .unwrap();
    assert_eq!(full.units_visited, idx.blocks());
    assert_eq!(full.buckets_visited as usize, idx.buckets().len());
    assert!(pruned.bytes_touched < full.bytes_touched);
    assert!(full.bytes_touched >= idx.blocks() * 32 * u64::from(q.popcount()));
}

#[test]
fn bad_arguments_are_refused() {
    let set = family_set(20, 2048, 100, 40);
    let idx = index(&set);
    let q128 = Query::from_on_bits(128, &[1]).unwrap();
    assert!(matches!(
        idx.search(&q128, &SearchOptions::top_k(1)),
        Err(SearchError::BitsMismatch {
            index: 2048,
            query: 128
        })
    ));
    let q = Query::from_on_bits(2048, &[1]).unwrap();
    for threads in [1, 2] {
        let o = SearchOptions::top_k(3).with_threads(threads);
        assert!(matches!(
            idx.search_batch(&[q.clone(), q128.clone(), q.clone()], &o),
            Err(SearchError::BitsMismatch { .. })
        ));
    }
    assert!(matches!(
        idx.search(&q, &SearchOptions::threshold(1.5)),
        Err(SearchError::BadThreshold(_))
    ));
    assert!(matches!(
        rows(&set).search(&q, &SearchOptions::threshold(-1.0)),
        Err(SearchError::BadThreshold(_))
    ));
    assert!(matches!(
        idx.search(&q, &SearchOptions::threshold(f64::NAN)),
        Err(SearchError::BadThreshold(_))
    ));
    assert!(Query::from_on_bits(2048, &[2048]).is_err());
    assert!(Query::from_row(64, &[1, 1]).is_err(), "padding bits set");
    assert!(ColumnIndex::build(&set.rows, set.stride, 2048, set.n() + 1, &set.pops).is_err());
    assert!(RowScan::new(&set.rows, 4, 2048, set.n(), &set.pops).is_err());
}

#[test]
fn large_buckets_exercise_runs_survivors_and_rising_bars() {
    // 40,000 molecules with popcounts 40..=42 only: buckets of ~50 blocks and more than one
    // scan run each, families so that many blocks hold near neighbours of the queries
    let mut rng = common::Rng(21);
    let bases: Vec<Vec<u32>> = (0..300)
        .map(|_| {
            let mut v: Vec<u32> = Vec::new();
            while v.len() < 41 {
                let b = if rng.below(3) == 0 {
                    rng.below(64)
                } else {
                    rng.below(2048)
                } as u32;
                if !v.contains(&b) {
                    v.push(b);
                }
            }
            v
        })
        .collect();
    let mut set = Set::new(2048);
    for _ in 0..40_000 {
        let base = &bases[rng.below(bases.len() as u64) as usize];
        let mut on: Vec<u32> = base.clone();
        // swap a few bits, keep the size in 40..=42
        for _ in 0..rng.below(6) {
            let i = rng.below(on.len() as u64) as usize;
            let b = rng.below(2048) as u32;
            if !on.contains(&b) {
                on[i] = b;
            }
        }
        on.truncate(40 + rng.below(3) as usize);
        set.push(&on);
    }
    let idx = index(&set);
    assert!(idx.buckets().iter().any(|b| b.blocks > 64));
    // compressed planes too: families sorted together, so a top-k search's first blocks
    // (`Plan::seeds`) lie inside buckets and the rest is read around them
    let (_dir, cidx) = common::compressed_index(&set);
    let queries = queries_for(22, &set, 8);
    for q in &queries {
        for o in [
            SearchOptions::threshold(0.5),
            SearchOptions::threshold(0.7),
            SearchOptions::threshold(0.9),
            SearchOptions::top_k(1),
            SearchOptions::top_k(10),
            SearchOptions::top_k(300),
            SearchOptions {
                threshold: Some(0.8),
                k: Some(50),
                threads: 1,
                bar: None,
            },
        ] {
            let want = brute(&set, q, o.threshold, o.k);
            for threads in [1, 2] {
                assert_eq!(
                    idx.search(q, &o.with_threads(threads)).unwrap(),
                    want,
                    "{o:?} q={}",
                    q.popcount()
                );
                assert_eq!(
                    cidx.search(q, &o.with_threads(threads)).unwrap(),
                    want,
                    "compressed {o:?} q={}",
                    q.popcount()
                );
            }
        }
    }
}

#[test]
fn path_choice_follows_the_byte_rule() {
    use molsift_search::choose;
    let big = index(&family_set(23, 2048, 20_000, 40));
    assert_eq!(choose(&big, 44), SearchPath::Columns);
    assert_eq!(choose(&big, 0), SearchPath::Columns);
    assert_eq!(
        choose(&big, 2000),
        SearchPath::Rows,
        "dense queries take the row scan"
    );
    let tiny = index(&family_set(24, 2048, 10, 40));
    assert_eq!(
        choose(&tiny, 44),
        SearchPath::Rows,
        "a tiny store is mostly padding"
    );
    let empty = index(&family_set(25, 2048, 0, 40));
    assert_eq!(choose(&empty, 44), SearchPath::Columns);
}

/// The set cut into shards at `cuts` (consecutive ranges), each a set of its own.
fn shards_of(set: &Set, cuts: &[usize]) -> Vec<(usize, Set)> {
    let mut edges = vec![0];
    edges.extend_from_slice(cuts);
    edges.push(set.n());
    edges
        .windows(2)
        .map(|w| {
            let shard = Set {
                bits: set.bits,
                stride: set.stride,
                rows: set.rows[w[0] * set.stride..w[1] * set.stride].to_vec(),
                pops: set.pops[w[0]..w[1]].to_vec(),
            };
            (w[0], shard)
        })
        .collect()
}

/// 1,500 molecules, 41 of them copies of one fingerprint at scattered places (a tie across the
/// shards at the k-th place), the rest mutations of it; and that fingerprint's on-bits.
fn tie_set(seed: u64) -> (Set, Vec<u32>) {
    let mut ties = Set::new(2048);
    let mut rng = common::Rng(seed);
    let target: Vec<u32> = (0..40).map(|i| i * 37 % 2048).collect();
    for i in 0..1500 {
        if i % 37 == 5 {
            ties.push(&target);
        } else {
            ties.push(&common::mutate(&mut rng, 2048, &target));
        }
    }
    (ties, target)
}

/// Shards of one store searched at once, in threads, sharing their k-th best through one cell
/// given from outside (as the ranks of a node share theirs), the query tagged, the cell alone
/// and then with a slot of their molecules' scores (a bar never above the k-th best of all):
/// the k best of their answers together equal the whole store's, ties at the k-th place
/// included; a second query reusing the cell is not misled by the first's bar.
#[test]
fn shards_sharing_a_bar_merge_to_the_whole_top_k() {
    use molsift_search::{BarSlot, SCORES_WORDS};
    use std::sync::atomic::AtomicU64;

    let family = family_set(5, 2048, 2500, 40);
    let (ties, target) = tie_set(11);
    let tie_query = vec![Query::from_on_bits(2048, &target).unwrap()];
    let cell = AtomicU64::new(0);
    let scores: Vec<AtomicU64> = (0..SCORES_WORDS).map(|_| AtomicU64::new(0)).collect();
    let mut tag = 0u32;
    for (set, queries, cuts, scored) in [
        (&family, queries_for(6, &family, 10), vec![700, 1900], false),
        (&ties, tie_query.clone(), vec![400, 401, 1100], false),
        (&family, queries_for(6, &family, 10), vec![700, 1900], true),
        (&ties, tie_query, vec![400, 401, 1100], true),
    ] {
        // SAFETY (both): the cell and the slot outlive the searches (scoped threads below).
        let slot_of = |tag: u32| unsafe {
            if scored {
                BarSlot::with_scores(&cell, scores.as_ptr(), tag)
            } else {
                BarSlot::new(&cell, tag)
            }
        };
        let shards = shards_of(set, &cuts);
        let indexes: Vec<_> = shards
            .iter()
            .map(|(off, s)| (*off as u64, common::compressed_index(s)))
            .collect();
        for q in &queries {
            for k in [1, 7, 10, 40, 41, 100] {
                for threshold in [None, Some(0.5)] {
                    tag += 1;
                    let slot = slot_of(tag);
                    let o = SearchOptions {
                        threshold,
                        k: Some(k),
                        threads: 1,
                        bar: Some(slot),
                    };
                    let mut got: Vec<Hit> = std::thread::scope(|sc| {
                        let runs: Vec<_> = indexes
                            .iter()
                            .map(|(off, (_dir, idx))| {
                                sc.spawn(move || {
                                    let hits = idx.search(q, &o).unwrap();
                                    hits.into_iter()
                                        .map(|h| Hit {
                                            index: h.index + off,
                                            score: h.score,
                                        })
                                        .collect::<Vec<_>>()
                                })
                            })
                            .collect();
                        runs.into_iter().flat_map(|r| r.join().unwrap()).collect()
                    });
                    got.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
                    got.truncate(k);
                    let want = brute(set, q, threshold, Some(k));
                    assert_eq!(got, want, "k={k} t={threshold:?} cuts={cuts:?}");
                    // a bar was shared exactly when some shard alone holds k hits; with the
                    // scores shared, never above the k-th best of all the shards together
                    let full = shards
                        .iter()
                        .any(|(_, s)| brute(s, q, threshold, Some(k)).len() == k);
                    if !scored {
                        assert_eq!(slot.get().is_some(), full, "k={k} t={threshold:?}");
                    } else if let Some((c, u)) = slot.get() {
                        assert_eq!(want.len(), k, "a bar from fewer than k molecules");
                        let kth = want[k - 1].score;
                        assert!(f64::from(c) / f64::from(u) <= kth + 1e-12, "k={k}: {c}/{u}");
                    } else {
                        assert!(!full, "k={k} t={threshold:?}: a shard's own bar not shared");
                    }
                    // one after another, the last shard first: each later search starts from
                    // the bar of the shards after it (molecules that tie it, at lower
                    // positions, must stay in)
                    tag += 1;
                    let o = SearchOptions {
                        bar: Some(slot_of(tag)),
                        ..o
                    };
                    let mut seq: Vec<Hit> = indexes
                        .iter()
                        .rev()
                        .flat_map(|(off, (_dir, idx))| {
                            idx.search(q, &o).unwrap().into_iter().map(move |h| Hit {
                                index: h.index + off,
                                score: h.score,
                            })
                        })
                        .collect();
                    seq.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
                    seq.truncate(k);
                    assert_eq!(seq, want, "one after another: k={k} t={threshold:?}");
                }
            }
        }
    }
}

/// A store's shards each searched as one batch, query `i` of every batch sharing its k-th best
/// through a slot of its own (`search_batch_sharing`, as a set's shards and ranks search a
/// batch of queries): shard after shard, and all shards at once on threads, the k best of the
/// shards' answers together equal the whole store's, ties at the k-th place included; a batch
/// given a slot count other than its query count is refused.
#[test]
fn shard_batches_sharing_a_slot_per_query_merge_to_the_whole_top_k() {
    use molsift_search::{search_batch_sharing, BarSlot, SCORES_WORDS};
    use std::sync::atomic::AtomicU64;

    let family = family_set(6, 2048, 2500, 40);
    let (ties, target) = tie_set(12);
    let mut queries = queries_for(7, &family, 10);
    queries.push(Query::from_on_bits(2048, &target).unwrap());
    let n = queries.len();
    let mut tag = 0u32;
    for (set, cuts) in [(&family, vec![700, 1900]), (&ties, vec![400, 401, 1100])] {
        let shards = shards_of(set, &cuts);
        let indexes: Vec<_> = shards
            .iter()
            .map(|(off, s)| (*off as u64, common::compressed_index(s)))
            .collect();
        for k in [1, 10, 41, 100, 101] {
            for at_once in [false, true] {
                let cells: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
                let scores: Vec<AtomicU64> =
                    (0..n * SCORES_WORDS).map(|_| AtomicU64::new(0)).collect();
                // SAFETY: the cells and slots outlive every search (scoped threads below).
                let slots: Vec<BarSlot> = (0..n)
                    .map(|i| unsafe {
                        tag += 1;
                        BarSlot::with_scores(&cells[i], scores.as_ptr().add(i * SCORES_WORDS), tag)
                    })
                    .collect();
                let o = SearchOptions::top_k(k);
                let shard_hits = |(off, (_dir, idx)): &(u64, (_, ColumnIndex))| {
                    let (all, _) = search_batch_sharing(idx, None, &queries, &o, &slots).unwrap();
                    all.into_iter()
                        .map(|hits| {
                            hits.into_iter()
                                .map(|h| Hit {
                                    index: h.index + off,
                                    score: h.score,
                                })
                                .collect::<Vec<_>>()
                        })
                        .collect::<Vec<_>>()
                };
                let per_shard: Vec<Vec<Vec<Hit>>> = if at_once {
                    std::thread::scope(|sc| {
                        let runs: Vec<_> = indexes
                            .iter()
                            .map(|s| sc.spawn(move || shard_hits(s)))
                            .collect();
                        runs.into_iter().map(|r| r.join().unwrap()).collect()
                    })
                } else {
                    indexes.iter().rev().map(shard_hits).collect()
                };
                for (i, q) in queries.iter().enumerate() {
                    let mut got: Vec<Hit> = per_shard.iter().flat_map(|s| s[i].clone()).collect();
                    got.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
                    got.truncate(k);
                    let want = brute(set, q, None, Some(k));
                    assert_eq!(got, want, "query {i} k={k} at once={at_once} cuts={cuts:?}");
                }
            }
        }
    }
    let (_dir, idx) = common::compressed_index(&family);
    let cell = AtomicU64::new(0);
    // SAFETY: the cell outlives the call.
    let one = unsafe { BarSlot::new(&cell, 1) };
    let refused = search_batch_sharing(&idx, None, &queries, &SearchOptions::top_k(3), &[one]);
    assert!(
        matches!(&refused, Err(SearchError::Invalid(m)) if m.contains("one per query")),
        "{refused:?}"
    );
}

/// Several shards searched at once by one process (`search_shards`): top-k best bound first
/// across every shard's blocks (planes with part masks of 16 or of 32 slots), with a bar of
/// its own or a caller's slot, and one shard after another (planes without part masks,
/// threshold searches, several threads) give the whole store's hits at set positions, ties at
/// the k-th place and an empty shard included; a batch equals its queries one by one.
#[test]
fn shards_searched_at_once_give_the_whole_stores_hits() {
    use molsift_search::{search_shards, search_shards_batch, BarSlot, SCORES_WORDS};
    use std::sync::atomic::AtomicU64;

    let family = family_set(8, 2048, 2500, 40);
    let (ties, target) = tie_set(13);
    let mut queries = queries_for(9, &family, 6);
    queries.push(Query::from_on_bits(2048, &target).unwrap());
    for (set, cuts) in [
        (&family, vec![700, 700, 1900]),
        (&ties, vec![400, 401, 1100]),
    ] {
        let shards = shards_of(set, &cuts);
        for format in [3, 2, 1] {
            let built: Vec<_> = shards
                .iter()
                .map(|(off, s)| (*off as u64, common::compressed_index_of_format(s, format)))
                .collect();
            let together: Vec<(&ColumnIndex, u64)> =
                built.iter().map(|(off, (_dir, idx))| (idx, *off)).collect();
            for q in &queries {
                for (k, threshold) in [
                    (Some(1), None),
                    (Some(10), None),
                    (Some(41), None),
                    (Some(100), None),
                    (Some(10), Some(0.5)),
                    (None, Some(0.45)),
                ] {
                    for threads in [1, 2] {
                        let o = SearchOptions {
                            threshold,
                            k,
                            threads,
                            bar: None,
                        };
                        let (got, _) = search_shards(&together, q, &o).unwrap();
                        let want = brute(set, q, threshold, k);
                        assert_eq!(
                            got, want,
                            "format {format} k={k:?} t={threshold:?} threads {threads}"
                        );
                    }
                }
                // a caller's slot (another process searching the same query shares it)
                let cell = AtomicU64::new(0);
                let scores: Vec<AtomicU64> = (0..SCORES_WORDS).map(|_| AtomicU64::new(0)).collect();
                // SAFETY: the cell and the slot outlive the search.
                let slot = unsafe { BarSlot::with_scores(&cell, scores.as_ptr(), 7) };
                let o = SearchOptions {
                    bar: Some(slot),
                    ..SearchOptions::top_k(10)
                };
                let (got, _) = search_shards(&together, q, &o).unwrap();
                assert_eq!(
                    got,
                    brute(set, q, None, Some(10)),
                    "format {format}, a caller's slot"
                );
            }
            let o = SearchOptions::top_k(10);
            let (batch, _) = search_shards_batch(&together, &queries, &o, &[]).unwrap();
            for (q, got) in queries.iter().zip(&batch) {
                assert_eq!(
                    got,
                    &brute(set, q, None, Some(10)),
                    "format {format}, a batch"
                );
            }
        }
    }
}
