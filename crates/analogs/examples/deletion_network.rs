//! What a stored edit network would cost and give (issue 19's edges-per-second goal, the design
//! SmallWorld uses): `cargo run --release -p molsift-analogs --example deletion_network -- STORE
//! [THREADS] [WALKS]`.
//!
//! Builds in memory the smallest network of that kind for the store's analog index: every
//! library skeleton joined to each distinct graph one deletion (`tdn`, `rdn`, `ldn`) below it.
//! Prints its nodes and edges, the least bytes per molecule it would add on disk (a key per
//! graph that is not a library skeleton, an id per edge in each direction, an offset per node),
//! the time to build it, and the rate at which breadth-first walks read its edges (WALKS walks
//! from library skeletons, down and up the network, to four edges: every valley path of up to
//! four edits). Nothing here is exact analog search: a walk on this network finds only the
//! paths that go down and then up through it (docs/analogs.md, "Shortest paths often climb").

use molsift_analogs::edits::{edits_of, DELETIONS};
use molsift_analogs::{canonical, skeleton_of_smiles, AnalogIndex, Skeleton};
use molsift_store::{Store, Verify};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let store = Store::open(args[1].as_ref(), Verify::Sizes).expect("open the store");
    let index = AnalogIndex::open_in(&store).expect("open the analog index");
    let threads: usize = args.get(2).map_or(2, |t| t.parse().expect("THREADS"));
    let walks: usize = args.get(3).map_or(1000, |t| t.parse().expect("WALKS"));
    let lib = index.len();
    let max_leaves = index.header().max_leaves;
    let began = Instant::now();
    // (parent skeleton, child key) for every distinct child of every skeleton
    let chunk = lib.div_ceil(threads);
    let parts: Vec<Vec<(u32, u128)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (index, store) = (&index, &store);
                s.spawn(move || {
                    let mut out = Vec::new();
                    let mut keys = Vec::new();
                    for i in t * chunk..((t + 1) * chunk).min(lib) {
                        let pos = index.positions(i)[0];
                        let smiles = store.smiles(pos as usize).expect("stored SMILES");
                        let g = skeleton_of_smiles(smiles).expect("a skeleton");
                        keys.clear();
                        edits_of(&g, DELETIONS, |_kind, atoms, bonds| {
                            let r = Skeleton::new(atoms, bonds).expect("an edited graph");
                            keys.push(canonical(&r, max_leaves).expect("canonical").key());
                        });
                        keys.sort_unstable();
                        keys.dedup();
                        out.extend(keys.iter().map(|&k| (i as u32, k)));
                    }
                    out
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    let edges: Vec<(u32, u128)> = parts.into_iter().flatten().collect();
    let built = began.elapsed().as_secs_f64();
    // node ids: library skeletons 0..lib, then the other graphs in key order
    let mut others: Vec<u128> = edges
        .iter()
        .map(|e| e.1)
        .filter(|&k| index.find(k).is_none())
        .collect();
    others.sort_unstable();
    others.dedup();
    let id = |k: u128| -> u32 {
        index
            .find(k)
            .map(|i| i as u32)
            .unwrap_or_else(|| (lib + others.binary_search(&k).expect("a node")) as u32)
    };
    let nodes = lib + others.len();
    let pairs: Vec<(u32, u32)> = edges.iter().map(|&(p, k)| (p, id(k))).collect();
    let (down_off, down) = csr(nodes, pairs.iter().map(|&(p, c)| (p, c)));
    let (up_off, up) = csr(nodes, pairs.iter().map(|&(p, c)| (c, p)));
    let molecules = store.len() as f64;
    let mut lib_children: Vec<u32> = pairs
        .iter()
        .map(|p| p.1)
        .filter(|&c| (c as usize) < lib)
        .collect();
    lib_children.sort_unstable();
    lib_children.dedup();
    println!(
        "{lib} library skeletons, {} molecules: {} deletion edges ({:.1} per skeleton) to {} \
         graphs, {} of them not library skeletons; built in {built:.1} s on {threads} threads \
         ({:.2} M canonical forms/s)",
        store.len(),
        pairs.len(),
        pairs.len() as f64 / lib as f64,
        others.len() + lib_children.len(),
        others.len(),
        pairs.len() as f64 / built / 1e6,
    );
    for key_bytes in [16usize, 8] {
        let bytes = others.len() * key_bytes + 2 * 4 * pairs.len() + 2 * 4 * (nodes + 1);
        println!(
            "least bytes on disk with {key_bytes}-byte keys for the {} new graphs: {bytes} \
             ({:.1} B/molecule on top of the index)",
            others.len(),
            bytes as f64 / molecules
        );
    }
    // breadth-first walks down and up the network to 4 edges
    let mut stamp = vec![0u32; nodes];
    let (mut frontier, mut next) = (Vec::new(), Vec::new());
    let mut read = 0u64;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let t = Instant::now();
    for w in 1..=walks as u32 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let start = (state % lib as u64) as u32;
        frontier.clear();
        frontier.push(start);
        stamp[start as usize] = w;
        for _ in 0..4 {
            next.clear();
            for &v in &frontier {
                let v = v as usize;
                for list in [
                    &down[down_off[v] as usize..down_off[v + 1] as usize],
                    &up[up_off[v] as usize..up_off[v + 1] as usize],
                ] {
                    read += list.len() as u64;
                    for &u in list {
                        if stamp[u as usize] != w {
                            stamp[u as usize] = w;
                            next.push(u);
                        }
                    }
                }
            }
            std::mem::swap(&mut frontier, &mut next);
        }
    }
    let s = t.elapsed().as_secs_f64();
    println!(
        "{walks} walks to 4 edges from random library skeletons: {read} edges read in {:.3} s: \
         {:.1} M edges/s on one thread ({:.0} edges per walk)",
        s,
        read as f64 / s / 1e6,
        read as f64 / walks as f64
    );
}

/// Compressed adjacency lists of `n` nodes from (from, to) pairs.
fn csr(n: usize, pairs: impl Iterator<Item = (u32, u32)> + Clone) -> (Vec<u32>, Vec<u32>) {
    let mut off = vec![0u32; n + 1];
    for (a, _) in pairs.clone() {
        off[a as usize + 1] += 1;
    }
    for i in 0..n {
        off[i + 1] += off[i];
    }
    let mut fill = off.clone();
    let mut list = vec![0u32; off[n] as usize];
    for (a, b) in pairs {
        list[fill[a as usize] as usize] = b;
        fill[a as usize] += 1;
    }
    (off, list)
}
