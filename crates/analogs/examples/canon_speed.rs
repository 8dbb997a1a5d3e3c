//! Canonicalization speed on real skeletons: `cargo run --release -p molsift-analogs --example
//! canon_speed -- FILE.smi [REPS]` (first column SMILES, header skipped): microseconds per
//! skeleton for the canonical form alone and for one edit's worth of work (graph built from a
//! bond list, then canonicalized).

use molsift_analogs::{canonical, edits, skeleton_of_smiles, Skeleton};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).expect("read the SMILES file");
    let reps: usize = args.get(2).map_or(5, |r| r.parse().expect("REPS"));
    let graphs: Vec<Skeleton> = text
        .lines()
        .skip(1)
        .filter_map(|l| skeleton_of_smiles(l.split_whitespace().next()?).ok())
        .collect();
    let mut leaves = 0usize;
    let t = Instant::now();
    for _ in 0..reps {
        for g in &graphs {
            leaves += canonical(g, 100_000).expect("canonical").leaves;
        }
    }
    let per = t.elapsed().as_secs_f64() * 1e6 / (reps * graphs.len()) as f64;
    println!(
        "{} skeletons: canonical {per:.2} us each, {:.2} leaves on average",
        graphs.len(),
        leaves as f64 / (reps * graphs.len()) as f64
    );
    let mut n_edits = 0usize;
    let t = Instant::now();
    for g in graphs.iter().take(500) {
        edits(g, |_kind, atoms, bonds| {
            let r = Skeleton::new(atoms, bonds).expect("edit result");
            std::hint::black_box(canonical(&r, 100_000).expect("canonical").key());
            n_edits += 1;
        });
    }
    let per = t.elapsed().as_secs_f64() * 1e6 / n_edits as f64;
    println!("{n_edits} edits of 500 skeletons: {per:.2} us per edit (build + canonical + key)");
}
