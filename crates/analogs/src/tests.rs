//! Canonical forms against known counts of non-isomorphic graphs, random renumberings and
//! symmetric graphs.

use crate::{canonical, Skeleton};
use proptest::prelude::*;
use std::collections::HashSet;

fn cert(n: usize, bonds: &[(u32, u32)]) -> Vec<u32> {
    canonical(&Skeleton::new(n, bonds).unwrap(), 100_000)
        .unwrap()
        .certificate
}

/// The number of graphs on `n` vertices up to isomorphism, from all 2^(n(n-1)/2) edge sets.
fn classes(n: usize) -> usize {
    let pairs: Vec<(u32, u32)> = (0..n as u32)
        .flat_map(|i| (i + 1..n as u32).map(move |j| (i, j)))
        .collect();
    let mut seen = HashSet::new();
    for mask in 0u64..(1 << pairs.len()) {
        let bonds: Vec<(u32, u32)> = (0..pairs.len())
            .filter(|k| mask >> k & 1 == 1)
            .map(|k| pairs[k])
            .collect();
        seen.insert(cert(n, &bonds));
    }
    seen.len()
}

#[test]
fn counts_the_non_isomorphic_graphs_on_up_to_six_vertices() {
    // OEIS A000088: 1, 1, 2, 4, 11, 34, 156
    let want = [1, 1, 2, 4, 11, 34, 156];
    for (n, &w) in want.iter().enumerate() {
        assert_eq!(classes(n), w, "graphs on {n} vertices");
    }
}

fn renumber(n: usize, bonds: &[(u32, u32)], perm: &[u32]) -> Vec<(u32, u32)> {
    assert_eq!(perm.len(), n);
    bonds
        .iter()
        .map(|&(i, j)| (perm[i as usize], perm[j as usize]))
        .collect()
}

/// The Petersen graph and the 4-cube: vertex-transitive, with 120 and 384 automorphisms.
fn symmetric() -> Vec<(usize, Vec<(u32, u32)>)> {
    let mut petersen = Vec::new();
    for i in 0..5u32 {
        petersen.push((i, (i + 1) % 5));
        petersen.push((i, i + 5));
        petersen.push((i + 5, (i + 2) % 5 + 5));
    }
    let mut cube = Vec::new();
    for v in 0..16u32 {
        for b in 0..4 {
            let w = v ^ (1 << b);
            if v < w {
                cube.push((v, w));
            }
        }
    }
    vec![(10, petersen), (16, cube)]
}

#[test]
fn symmetric_graphs_need_few_leaves_and_keep_their_form() {
    for (n, bonds) in symmetric() {
        let base = canonical(&Skeleton::new(n, &bonds).unwrap(), 1000).unwrap();
        assert!(
            base.leaves <= 64,
            "{} leaves for a graph of {n}",
            base.leaves
        );
        let perm: Vec<u32> = (0..n as u32).map(|v| (v * 7 + 3) % n as u32).collect();
        assert_eq!(cert(n, &renumber(n, &bonds, &perm)), base.certificate);
        // one bond less is another graph
        assert_ne!(cert(n, &bonds[1..]), base.certificate);
    }
}

#[test]
fn too_symmetric_is_an_error_not_a_wrong_answer() {
    let (n, bonds) = symmetric().remove(1);
    let err = canonical(&Skeleton::new(n, &bonds).unwrap(), 1).unwrap_err();
    assert!(err.to_string().contains("too symmetric"));
}

#[test]
fn bad_graphs_are_refused() {
    assert!(Skeleton::new(2, &[(0, 0)]).is_err());
    assert!(Skeleton::new(2, &[(0, 2)]).is_err());
    assert!(Skeleton::new(3, &[(0, 1), (1, 0)]).is_err());
}

/// The bonds of a simple graph on `n` atoms from raw pairs (taken mod n; loops and repeats
/// dropped), sorted.
fn simple_bonds(n: usize, raw: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    let mut bonds: Vec<(u32, u32)> = raw
        .into_iter()
        .map(|(a, b)| (a % n as u32, b % n as u32))
        .filter(|(a, b)| a != b)
        .map(|(a, b)| (a.min(b), a.max(b)))
        .collect();
    bonds.sort_unstable();
    bonds.dedup();
    bonds
}

/// A permutation of `0..n` drawn from `seed` (Fisher-Yates over an LCG).
fn shuffled(n: usize, seed: u64) -> Vec<u32> {
    let mut perm: Vec<u32> = (0..n as u32).collect();
    let mut s = seed;
    for i in (1..n).rev() {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        perm.swap(i, (s >> 33) as usize % (i + 1));
    }
    perm
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn renumbering_keeps_the_certificate(
        n in 1usize..24,
        raw in proptest::collection::vec((0u32..24, 0u32..24), 0..40),
        seed in any::<u64>(),
    ) {
        let bonds = simple_bonds(n, raw);
        let perm = shuffled(n, seed);
        let a = canonical(&Skeleton::new(n, &bonds).unwrap(), 100_000).unwrap();
        let b = canonical(&Skeleton::new(n, &renumber(n, &bonds, &perm)).unwrap(), 100_000).unwrap();
        prop_assert_eq!(&a.certificate, &b.certificate);
        prop_assert_eq!(a.key(), b.key());
        // the labels make the certificate: relabelled bonds sorted are the certificate's
        let mut relabelled: Vec<u32> = vec![n as u32, bonds.len() as u32];
        let mut pairs: Vec<(u32, u32)> = bonds.iter().map(|&(i, j)| {
            let (x, y) = (a.labels[i as usize], a.labels[j as usize]);
            (x.min(y), x.max(y))
        }).collect();
        pairs.sort_unstable();
        relabelled.extend(pairs.into_iter().flat_map(|(x, y)| [x, y]));
        prop_assert_eq!(relabelled, a.certificate);
    }
}

/// Copies of one small graph, joined to a hub through chosen vertices: graphs with large
/// automorphism groups and deep search trees, where wrong pruning would show.
fn copies(base_n: usize, base: &[(u32, u32)], k: usize, hooks: &[u32]) -> (usize, Vec<(u32, u32)>) {
    let n = base_n * k + 1;
    let hub = (n - 1) as u32;
    let mut bonds = Vec::new();
    for c in 0..k as u32 {
        let off = c * base_n as u32;
        bonds.extend(base.iter().map(|&(i, j)| (i + off, j + off)));
        let hook = hooks[c as usize % hooks.len()] % base_n as u32;
        bonds.push((off + hook, hub));
    }
    (n, bonds)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn symmetric_compositions_keep_their_certificate(
        base_n in 1usize..6,
        raw in proptest::collection::vec((0u32..6, 0u32..6), 0..8),
        k in 2usize..5,
        hooks in proptest::collection::vec(0u32..6, 1..3),
        seed in any::<u64>(),
    ) {
        let base = simple_bonds(base_n, raw);
        let (n, bonds) = copies(base_n, &base, k, &hooks);
        let perm = shuffled(n, seed);
        prop_assert_eq!(cert(n, &bonds), cert(n, &renumber(n, &bonds, &perm)));
    }
}

#[test]
fn smiles_topology_gives_the_skeleton() {
    use crate::skeleton_of_smiles;
    let same = |a: &str, b: &str| {
        let (x, y) = (
            skeleton_of_smiles(a).unwrap(),
            skeleton_of_smiles(b).unwrap(),
        );
        canonical(&x, 1000).unwrap().certificate == canonical(&y, 1000).unwrap().certificate
    };
    assert!(same("c1ccccc1", "C1CCCCC1"));
    assert!(same("c1ccncc1", "[nH+]1ccccc1"));
    assert!(same("CC(C)(C)Cl", "BrC(Br)(Br)Br"));
    assert!(same("[2H]C([H])C", "CC"));
    assert!(same("C%10CC%10", "C1CC1"));
    assert!(same("CC.[Na+]", "OO.[K]"));
    assert!(!same("CC.C", "CCC"));
    assert!(!same("C1CC1", "CCC"));
    assert!(same("*CC", "CC")); // a dummy atom is not a heavy atom
    assert!(same("[Hg]C", "CC")); // mercury is not hydrogen
    assert!(same("N->[Fe]<-N", "CCC")); // dative bonds are bonds
    let g = skeleton_of_smiles("c1ccc2ccccc2c1").unwrap();
    assert_eq!((g.atoms(), g.bonds()), (10, 11));
    for bad in ["C1CC", "C(C", "C)C", "[CH3", "C%1C", "Cx"] {
        let err = skeleton_of_smiles(bad).unwrap_err().to_string();
        assert!(err.contains("at byte"), "{bad}: {err}");
    }
}

/// The keys of stored analog indexes: a change to the canonical form or its key makes every
/// index built before it answer nothing, so the keys of a few skeletons are pinned here (the
/// values of the code before 2026-11-27's changes to the canonical form, which built the
/// MOSES index of the benchmarks; a deliberate change must bump the index format instead).
#[test]
fn keys_stay_those_of_the_indexes_already_built() {
    let key = |smiles: &str| {
        let g = crate::skeleton_of_smiles(smiles).unwrap();
        format!("{:032x}", canonical(&g, 100_000).unwrap().key())
    };
    let got: Vec<String> = [
        "Cc1ccccc1",
        "CC(C)(C)c1ccc(O)cc1",
        "O=C1CCN(C1)c1ccc2ccccc2c1",
    ]
    .iter()
    .map(|s| key(s))
    .collect();
    assert_eq!(
        got,
        [
            "fe95783d6c1022ab59867cffb111faec",
            "ff353412826022380555c099a2dd968b",
            "c30f15e74ed7f5b7ae21a8eb1990539b"
        ]
    );
}

#[test]
fn a_stop_flag_ends_the_walk_as_the_deadline_does() {
    use crate::{skeleton_of_smiles, walk, SkeletonGroups, WalkOptions};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};
    let lib = SkeletonGroups::build(
        &[
            "CCO",
            "c1ccccc1",
            "CC(C)Cc1ccc(cc1)C(C)C(=O)O",
            "CC(=O)Nc1ccccc1",
        ],
        1,
        100_000,
    );
    let q = skeleton_of_smiles("CC(=O)Nc1ccc(O)cc1CCN").unwrap();
    // set before the walk: it stops at the first check (as a distance's pass starts)
    let stop = AtomicBool::new(true);
    let mut opts = WalkOptions::new(8);
    opts.stop = Some(&stop);
    let stats = walk(&q, &opts, &lib.keys, |_| false).unwrap();
    assert!(
        stats.timed_out && stats.complete_to == 0 && stats.edges == 0,
        "{stats:?}"
    );
    // unset: the walk runs to its end
    stop.store(false, Ordering::Relaxed);
    let mut opts = WalkOptions::new(2);
    opts.stop = Some(&stop);
    let stats = walk(&q, &opts, &lib.keys, |_| false).unwrap();
    assert!(!stats.timed_out && stats.complete_to == 2 && stats.edges > 256);
    // set by another thread while a long walk (to distance 8) runs
    let mut opts = WalkOptions::new(8);
    opts.stop = Some(&stop);
    let began = Instant::now();
    let stats = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            stop.store(true, Ordering::Relaxed);
        });
        walk(&q, &opts, &lib.keys, |_| false).unwrap()
    });
    assert!(stats.timed_out && stats.complete_to < 8);
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
}

#[test]
fn wl_bitmap_keeps_at_least_16_bits_per_hash_within_its_bounds() {
    use crate::index::bitmap_bits;
    assert_eq!(bitmap_bits(0), 23);
    assert_eq!(bitmap_bits(100_000), 23);
    for hashes in [1_500_000u64, 9_627_160, 100_000_000] {
        let bits = bitmap_bits(hashes);
        assert!(1u64 << bits >= 16 * hashes, "{hashes}: 2^{bits}");
        assert!(
            1u64 << bits < 32 * hashes,
            "{hashes}: 2^{bits} (no more than needed)"
        );
    }
    assert_eq!(bitmap_bits(1_000_000_000), 32);
    assert_eq!(bitmap_bits(u64::MAX), 32);
}
