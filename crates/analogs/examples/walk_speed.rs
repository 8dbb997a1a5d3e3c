//! Walk speed on a store's analog index, from Rust: `cargo run --release -p molsift-analogs
//! --example walk_speed -- STORE QUERIES.smi [MAX_DIST] [K]` (one SMILES per line; `THREADS=N`
//! divides each distance among N threads). Runs
//! `store.analogs(smiles, max_dist, k)`'s walk for each query (probe on, ending
//! with the distance at which K molecules are found) and prints per query the edits
//! considered, the graphs reached, the time, and the medians: edits per second is the
//! issue's "edges per second".

use molsift_analogs::walk::WalkOptions;
use molsift_analogs::{skeleton_of_smiles, walk, AnalogIndex, Event};
use molsift_store::v2::StoreV2;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let store = StoreV2::open(args[1].as_ref(), false).expect("open the store");
    let index = AnalogIndex::open_in(&store).expect("open the analog index");
    let text = std::fs::read_to_string(&args[2]).expect("read the queries");
    let max_dist: usize = args.get(3).map_or(3, |d| d.parse().expect("MAX_DIST"));
    let k: usize = args.get(4).map_or(100, |d| d.parse().expect("K"));
    let quiet = std::env::var_os("QUIET").is_some();
    let (mut rates, mut times, mut edges_all, mut ns_all) = (Vec::new(), Vec::new(), 0u64, 0f64);
    for line in text.lines() {
        let Some(smi) = line.split_whitespace().next() else {
            continue;
        };
        let q = skeleton_of_smiles(smi).expect("a query skeleton");
        let mut opts = WalkOptions::new(max_dist);
        opts.max_leaves = index.header().max_leaves;
        opts.probe = true;
        opts.threads = std::env::var("THREADS").map_or(1, |t| t.parse().expect("THREADS"));
        let mut found = 0usize;
        let began = Instant::now();
        let stats = walk(&q, &opts, &index, |e| match e {
            Event::Hit {
                key, again: false, ..
            } => {
                found += index.find(key).map_or(0, |i| index.positions(i).len());
                found >= k
            }
            Event::Hit { .. } => found >= k,
            Event::Done(_) => false,
        })
        .expect("walk");
        let s = began.elapsed().as_secs_f64();
        rates.push(stats.edges as f64 / s);
        times.push(s * 1e3);
        edges_all += stats.edges;
        ns_all += s;
        if !quiet {
            println!(
                "{:8.2} ms {:9} edits {:7} nodes {:8} filtered {:8} pruned {:6} ins_skipped to {} found {found}  {smi}",
                s * 1e3,
                stats.edges,
                stats.nodes,
                stats.filtered,
                stats.pruned,
                stats.insertions_skipped,
                stats.complete_to,
            );
        }
    }
    println!(
        "{} queries, max_dist {max_dist}, k {k}: p50 {:.2} ms, edits/s p50 {:.2} M, all edits / all time {:.2} M/s",
        times.len(),
        median(times.clone()),
        median(rates) / 1e6,
        edges_all as f64 / ns_all / 1e6
    );
}
