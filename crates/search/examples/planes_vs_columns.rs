//! Compressed planes (store version 2) against the dense column index (version 1) on a real
//! version-1 store that has its column index: size, and ms/query at t = 0.7 and top-10, one
//! thread, same queries, same run (medians of 5 runs), every result compared.
//!
//! ```text
//! cargo run --release -p molsift-search --example planes_vs_columns -- STORE [QUERIES.onbits]
//! ```
//!
//! Queries: a file of on-bit lists (one query per line, bits separated by spaces), or else 100
//! fingerprints of the store itself (every 15,000th molecule).
//!
//! Modes, by environment variable:
//! * `ONLY=t=0.7` or `ONLY=top-10`: that search only.
//! * `TIMEIT=N`: N rounds, each a dense pass then a compressed pass over all queries; prints
//!   the minimum and median ms/query of each and their ratios (a slow moment of a shared
//!   machine falls on both; the dense pass between leaves the caches as a real query finds
//!   them). With `WARM=1` each query is searched once untimed just before its timed search.
//! * `GRIND=1`: one untimed pass of each kernel (`REPS=N` compressed passes), for cachegrind or
//!   perf: `GRIND=1 ONLY=top-10 valgrind --tool=cachegrind --cache-sim=no --branch-sim=yes
//!   target/release/examples/planes_vs_columns STORE QUERIES.onbits`, then `cg_annotate`
//!   (divide the kernels' counts by the number of queries). Use a build without debug
//!   information: each kernel is then one line, where line tables split it over many lines
//!   and `cg_annotate` hides those under 0.1% of the total.

use std::time::Instant;

use molsift_iostats::CountedFile;
use molsift_search::{ColumnIndex, Query, SearchOptions};
use molsift_store::{Store, Verify};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = std::path::PathBuf::from(&args[1]);
    let store = Store::open(&path, Verify::Sizes).unwrap();
    let bits = store.manifest().fingerprint.bits;
    let n = store.len();
    let dense = ColumnIndex::open_in(&store)
        .unwrap()
        .expect("the store has a column index");
    let dir = tempfile::tempdir_in(path.parent().unwrap()).unwrap();
    let t = Instant::now();
    let header = molsift_store::planes::write_planes(
        dir.path(),
        bits,
        n,
        |i| u32::from(store.popcount(i)),
        |i, out| out.copy_from_slice(store.fingerprint(i)),
        1 << 30,
    )
    .unwrap();
    let files: Vec<(String, CountedFile)> = molsift_store::planes::FILES
        .iter()
        .map(|f| {
            (
                f.to_string(),
                CountedFile::open(&dir.path().join(f)).unwrap(),
            )
        })
        .collect();
    let comp = ColumnIndex::open_planes(dir.path(), |name| {
        Ok(&files.iter().find(|(f, _)| f == name).unwrap().1)
    })
    .unwrap();
    let sizes: Vec<(String, u64)> = header
        .files
        .iter()
        .map(|(k, v)| (k.clone(), v.bytes))
        .collect();
    let total: u64 = sizes.iter().map(|s| s.1).sum();
    println!(
        "compressed planes: {:.2} B/molecule ({}), written in {:.1} s; dense planes + order: {:.2} B/molecule",
        total as f64 / n as f64,
        sizes
            .iter()
            .map(|(k, b)| format!("{k} {:.2}", *b as f64 / n as f64))
            .collect::<Vec<_>>()
            .join(", "),
        t.elapsed().as_secs_f64(),
        (store.manifest().files["columns.planes.u64"].bytes
            + store.manifest().files["columns.order.u64"].bytes) as f64
            / n as f64
    );
    let queries: Vec<Query> = match args.get(2) {
        Some(f) => std::fs::read_to_string(f)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let on: Vec<u32> = l.split_whitespace().map(|b| b.parse().unwrap()).collect();
                Query::from_on_bits(bits, &on).unwrap()
            })
            .collect(),
        None => (0..100)
            .map(|k| Query::from_row(bits, store.fingerprint(k * 15_000 % n)).unwrap())
            .collect(),
    };
    for (label, opts) in [
        ("t=0.7", SearchOptions::threshold(0.7)),
        ("top-10", SearchOptions::top_k(10)),
    ] {
        if std::env::var("ONLY").is_ok_and(|o| o != label) {
            continue;
        }
        if let Some(n) = std::env::var("TIMEIT")
            .ok()
            .and_then(|r| r.parse::<usize>().ok())
        {
            let pass = |idx: &ColumnIndex| {
                if std::env::var_os("WARM").is_some() {
                    // each query searched once untimed, then timed: its data in cache
                    let mut s = 0.0;
                    for q in &queries {
                        idx.search(q, &opts).unwrap();
                        let t = Instant::now();
                        idx.search(q, &opts).unwrap();
                        s += t.elapsed().as_secs_f64();
                    }
                    return s * 1e3 / queries.len() as f64;
                }
                let t = Instant::now();
                for q in &queries {
                    idx.search(q, &opts).unwrap();
                }
                t.elapsed().as_secs_f64() * 1e3 / queries.len() as f64
            };
            pass(&dense);
            pass(&comp);
            let (mut d, mut c) = (Vec::new(), Vec::new());
            for _ in 0..n {
                d.push(pass(&dense));
                c.push(pass(&comp));
            }
            let mut r: Vec<f64> = c.iter().zip(&d).map(|(c, d)| c / d).collect();
            for v in [&mut d, &mut c, &mut r] {
                v.sort_by(f64::total_cmp);
            }
            println!(
                "{label}: dense min {:.3} med {:.3}; compressed min {:.3} med {:.3}; ratio of mins {:.2}, median ratio {:.2}",
                d[0], d[n / 2], c[0], c[n / 2], c[0] / d[0], r[n / 2]
            );
            continue;
        }
        if std::env::var_os("GRIND").is_some() {
            // one pass of each kernel, for cachegrind
            for q in &queries {
                dense.search(q, &opts).unwrap();
            }
            let reps: usize = std::env::var("REPS")
                .ok()
                .and_then(|r| r.parse().ok())
                .unwrap_or(1);
            for _ in 0..reps {
                for q in &queries {
                    comp.search(q, &opts).unwrap();
                }
            }
            continue;
        }
        // warm both, and compare every result
        for q in queries
            .iter()
            .filter(|_| std::env::var_os("NOCHECK").is_none())
        {
            assert_eq!(
                dense.search(q, &opts).unwrap(),
                comp.search(q, &opts).unwrap(),
                "results differ"
            );
        }
        let time = |idx: &ColumnIndex| {
            let mut runs: Vec<f64> = (0..5)
                .map(|_| {
                    let t = Instant::now();
                    for q in &queries {
                        idx.search(q, &opts).unwrap();
                    }
                    t.elapsed().as_secs_f64() * 1e3 / queries.len() as f64
                })
                .collect();
            runs.sort_by(f64::total_cmp);
            runs[2]
        };
        let (mut dr, mut cr) = ((0u64, 0u64), (0u64, 0u64));
        for q in &queries {
            let (_, a) = dense.search_with_stats(q, &opts).unwrap();
            let (_, b) = comp.search_with_stats(q, &opts).unwrap();
            dr = (dr.0 + a.units_visited, dr.1 + a.bytes_touched / 32);
            cr = (cr.0 + b.units_visited, cr.1 + b.bytes_touched / 32);
        }
        println!(
            "{label}: per query, dense {} blocks, {} plane-blocks; compressed {} blocks, {} plane-blocks decoded",
            dr.0 / 100, dr.1 / 100, cr.0 / 100, cr.1 / 100
        );
        // alternate to share the machine's noise
        let (d1, c1, d2, c2) = (time(&dense), time(&comp), time(&dense), time(&comp));
        println!(
            "{label}: dense {:.3} ms/query, compressed {:.3} ms/query (runs: {d1:.3} {d2:.3} / {c1:.3} {c2:.3}); results equal for all {} queries",
            d1.min(d2),
            c1.min(c2),
            queries.len()
        );
    }
}
