//! Quick benchmark of the search paths on synthetic MOSES-like fingerprints.
//!
//! ```text
//! cargo run --release -p molsift-search --example bench_search -- [molecules] [--crossover] [--no-rows] [--reps R] [--files DIR]
//! ```
//!
//! Data: 2048-bit fingerprints with popcounts drawn from N(44, 8) (clamped to 8..=120), bits
//! drawn from a Zipf-like distribution over a random permutation of the 2048 positions (a few bits
//! in most molecules, most bits rare, as with Morgan fingerprints), molecules in families of
//! about 20 sharing most bits (so that t = 0.7 finds a few hits per query). 100 queries are drawn
//! the same way but are not in the database. Prints ms/query (median of `R` runs over the 100
//! queries) for threshold 0.7 and top-10 on both paths, 1 and 2 threads, single queries and
//! batches, and what the column index reads per query. Wall time is what a user waits; "cpu" is
//! the calling thread's CPU time (less sensitive to other processes on a shared machine; for two
//! threads it counts the calling thread only). `--crossover` also times dense queries on
//! both paths to find where the row scan starts to win.

#[path = "common/rng.rs"]
mod rng;
use rng::Rng;

use std::time::Instant;

use molsift_search::{ColumnIndex, Hit, Query, RowScan, SearchOptions, SearchStats};

const BITS: u32 = 2048;
const STRIDE: usize = 32;

/// Skewed bit distribution: cumulative weights over positions.
struct Bits {
    cum: Vec<f64>,
    pos: Vec<u32>,
}

impl Bits {
    fn new(rng: &mut Rng) -> Bits {
        let mut pos: Vec<u32> = (0..BITS).collect();
        for i in (1..pos.len()).rev() {
            pos.swap(i, (rng.next() % (i as u64 + 1)) as usize);
        }
        let mut cum = Vec::with_capacity(BITS as usize);
        let mut acc = 0.0;
        for r in 0..BITS {
            acc += 1.0 / f64::from(r + 3).powf(1.1);
            cum.push(acc);
        }
        Bits { cum, pos }
    }
    fn draw(&self, rng: &mut Rng) -> u32 {
        let x = rng.unit() * self.cum[self.cum.len() - 1];
        let r = self.cum.partition_point(|&c| c < x).min(self.cum.len() - 1);
        self.pos[r]
    }
}

fn popcount_target(rng: &mut Rng) -> usize {
    (44.0 + 8.0 * rng.normal()).round().clamp(8.0, 120.0) as usize
}

/// A member of `family`: keeps most of the family's bits, fills up with skewed draws.
fn member(rng: &mut Rng, bits: &Bits, family: &[u32], row: &mut [u64]) {
    row.fill(0);
    let target = popcount_target(rng);
    let mut have = 0;
    for &b in family {
        if have < target && rng.unit() < 0.85 {
            let (w, m) = (b as usize / 64, 1u64 << (b % 64));
            if row[w] & m == 0 {
                row[w] |= m;
                have += 1;
            }
        }
    }
    let mut tries = 0;
    while have < target && tries < 10_000 {
        let b = bits.draw(rng);
        let (w, m) = (b as usize / 64, 1u64 << (b % 64));
        if row[w] & m == 0 {
            row[w] |= m;
            have += 1;
        }
        tries += 1;
    }
}

fn family(rng: &mut Rng, bits: &Bits) -> Vec<u32> {
    let mut row = [0u64; STRIDE];
    member(rng, bits, &[], &mut row);
    (0..BITS)
        .filter(|&b| row[b as usize / 64] >> (b % 64) & 1 == 1)
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// CPU time of the calling thread, in seconds.
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Medians over `reps` runs of the mean wall and calling-thread CPU ms/query of `f`.
fn time_per_query(reps: usize, nq: usize, mut f: impl FnMut()) -> (f64, f64) {
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let (t, c) = (Instant::now(), thread_cpu());
        f();
        wall.push(t.elapsed().as_secs_f64() * 1e3 / nq as f64);
        cpu.push((thread_cpu() - c) * 1e3 / nq as f64);
    }
    (median(wall), median(cpu))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = (1..args.len())
        .filter(|&i| args[i - 1] != "--reps")
        .find_map(|i| args[i].parse().ok())
        .unwrap_or(1_584_663);
    let crossover = args.iter().any(|a| a == "--crossover");
    let with_rows = !args.iter().any(|a| a == "--no-rows");
    let reps: usize = args
        .iter()
        .position(|a| a == "--reps")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(3);

    let t0 = Instant::now();
    let mut rng = Rng(42);
    let bits = Bits::new(&mut rng);
    let families: Vec<Vec<u32>> = (0..n.div_ceil(20))
        .map(|_| family(&mut rng, &bits))
        .collect();
    let mut rows = vec![0u64; n * STRIDE];
    let mut pops = vec![0u16; n];
    for i in 0..n {
        let f = &families[(rng.next() % families.len() as u64) as usize];
        let row = &mut rows[i * STRIDE..(i + 1) * STRIDE];
        member(&mut rng, &bits, f, row);
        pops[i] = row.iter().map(|w| w.count_ones() as u16).sum();
    }
    let queries: Vec<Query> = (0..100)
        .map(|_| {
            let f = &families[(rng.next() % families.len() as u64) as usize];
            let mut row = [0u64; STRIDE];
            member(&mut rng, &bits, f, &mut row);
            Query::from_row(BITS, &row).unwrap()
        })
        .collect();
    let mean_pop = pops.iter().map(|&p| f64::from(p)).sum::<f64>() / n as f64;
    let mean_q = queries.iter().map(|q| f64::from(q.popcount())).sum::<f64>() / 100.0;
    println!("data: {n} molecules, mean popcount {mean_pop:.1}; 100 queries, mean on-bits {mean_q:.1}; generated in {:.1} s", t0.elapsed().as_secs_f64());

    let t0 = Instant::now();
    let index = ColumnIndex::build(&rows, STRIDE, BITS, n, &pops).unwrap();
    println!(
        "column index: built in {:.2} s, {} buckets, {} blocks (+{:.2}% padding), {:.0} MB",
        t0.elapsed().as_secs_f64(),
        index.buckets().len(),
        index.blocks(),
        100.0 * (index.blocks() as f64 * 256.0 / n as f64 - 1.0),
        index.size_bytes() as f64 / 1e6
    );
    let scan = RowScan::new(&rows, STRIDE, BITS, n, &pops).unwrap();
    // --files DIR: write the index, map it back, and search the mapped copy
    let index = match args
        .iter()
        .position(|a| a == "--files")
        .and_then(|i| args.get(i + 1))
    {
        Some(dir) => {
            let dir = std::path::Path::new(dir);
            let t0 = Instant::now();
            index.write(dir).unwrap();
            let written = t0.elapsed().as_secs_f64();
            drop(index);
            let t0 = Instant::now();
            let mapped = ColumnIndex::open(dir).unwrap();
            let opened = t0.elapsed().as_secs_f64();
            let t0 = Instant::now();
            mapped.verify().unwrap();
            println!(
                "files: written in {written:.2} s, opened in {:.1} ms, verified in {:.2} s; searching the mapped index",
                opened * 1e3,
                t0.elapsed().as_secs_f64()
            );
            mapped
        }
        None => index,
    };

    let t07 = SearchOptions::threshold(0.7);
    let top10 = SearchOptions::top_k(10);
    if let Some(i) = args.iter().position(|a| a == "--profile") {
        // run one configuration for a while, for a profiler
        let o = if args.get(i + 1).map(String::as_str) == Some("top10") {
            top10
        } else {
            t07
        };
        let batch = args.iter().any(|a| a == "--batch");
        let t = Instant::now();
        let mut rounds = 0;
        while t.elapsed().as_secs_f64() < 10.0 {
            if batch {
                std::hint::black_box(index.search_batch(&queries, &o).unwrap());
            } else {
                for q in &queries {
                    std::hint::black_box(index.search(q, &o).unwrap());
                }
            }
            rounds += 1;
        }
        println!(
            "{:.3} ms/query",
            t.elapsed().as_secs_f64() * 1e3 / (rounds * queries.len()) as f64
        );
        return;
    }

    // exactness on this data: both paths, single and batch, agree
    let mut stats = SearchStats::default();
    let mut hits07 = 0;
    for q in &queries {
        let (a, st) = index.search_with_stats(q, &t07).unwrap();
        assert_eq!(a, scan.search(q, &t07).unwrap());
        assert_eq!(
            index.search(q, &top10).unwrap(),
            scan.search(q, &top10).unwrap()
        );
        hits07 += a.len();
        stats.bytes_touched += st.bytes_touched;
        stats.units_visited += st.units_visited;
        stats.buckets_visited += st.buckets_visited;
        stats.candidates += st.candidates;
    }
    let batch07 = index.search_batch(&queries, &t07).unwrap();
    assert_eq!(batch07.iter().map(Vec::len).sum::<usize>(), hits07);
    let (_, st10) = index.search_batch_with_stats(&queries, &top10).unwrap();
    let (_, str07) = scan.search_with_stats(&queries[0], &t07).unwrap();
    println!(
        "t=0.7: {hits07} hits over 100 queries; columns read {:.2} MB/query in {:.0} buckets, {:.0} blocks (row scan: {:.0} MB); top-10 reads {:.2} MB/query, scores {:.0} candidates/query (t=0.7: {:.1})",
        stats.bytes_touched as f64 / 100.0 / 1e6,
        f64::from(stats.buckets_visited) / 100.0,
        stats.units_visited as f64 / 100.0,
        str07.bytes_touched as f64 / 1e6,
        st10.bytes_touched as f64 / 100.0 / 1e6,
        st10.candidates as f64 / 100.0,
        stats.candidates as f64 / 100.0,
    );

    let one = |path: &str, opts: &SearchOptions, f: &dyn Fn(&Query, &SearchOptions) -> Vec<Hit>| {
        let ms = time_per_query(reps, queries.len(), || {
            for q in &queries {
                std::hint::black_box(f(q, opts));
            }
        });
        println!("  {path:<36} {:>8.3} ms/query wall ({:.3} cpu)", ms.0, ms.1);
    };
    let batch = |label: &str, opts: &SearchOptions| {
        let ms = time_per_query(reps, queries.len(), || {
            std::hint::black_box(index.search_batch(&queries, opts).unwrap());
        });
        println!(
            "  {label:<36} {:>8.3} ms/query wall ({:.3} cpu)",
            ms.0, ms.1
        );
    };
    let col = |q: &Query, o: &SearchOptions| index.search(q, o).unwrap();
    let row = |q: &Query, o: &SearchOptions| scan.search(q, o).unwrap();
    for (name, o) in [("t=0.7", t07), ("top-10", top10)] {
        println!("{name}:");
        for threads in [1, 2] {
            let o = o.with_threads(threads);
            one(&format!("columns, {threads} thread(s)"), &o, &col);
            batch(&format!("columns batch of 100, {threads} thread(s)"), &o);
            if with_rows {
                one(&format!("row scan, {threads} thread(s)"), &o, &row);
            }
        }
        molsift_search::set_simd(false);
        one("columns, portable kernel, 1 thread", &o, &col);
        molsift_search::set_simd(true);
    }

    // what the k-th best scores are, and what a threshold search at that level costs
    let mut kth: Vec<f64> = queries
        .iter()
        .map(|q| index.search(q, &top10).unwrap()[9].score)
        .collect();
    kth.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "10th-best score: min {:.3}, median {:.3}, max {:.3}",
        kth[0], kth[50], kth[99]
    );
    // top-10 if the final bar were known from the start (the best a pilot could do)
    let oracle: Vec<SearchOptions> = queries
        .iter()
        .map(|q| SearchOptions {
            threshold: Some(index.search(q, &top10).unwrap()[9].score),
            ..top10
        })
        .collect();
    let ms = time_per_query(reps, queries.len(), || {
        for (q, o) in queries.iter().zip(&oracle) {
            std::hint::black_box(index.search(q, o).unwrap());
        }
    });
    println!(
        "  columns top-10 given its final bar {:>10.3} ms/query wall",
        ms.0
    );
    for t in [0.4, 0.5, 0.6, 0.8] {
        let o = SearchOptions::threshold(t);
        let ms = time_per_query(reps, queries.len(), || {
            for q in &queries {
                std::hint::black_box(index.search(q, &o).unwrap());
            }
        });
        println!("  columns t={t}, 1 thread {:>21.3} ms/query wall", ms.0);
    }

    if crossover {
        crossover_runs(&mut rng, &bits, reps);
    }
}

/// Times both paths on dense data: 400,000 fingerprints with popcounts spread over 200..1000
/// (about 500 per popcount, so buckets are nearly full), queries of 64..1536 random on-bits,
/// t = 0.3 and top-10; then tiny stores of MOSES-like fingerprints at t = 0.7 and top-10.
fn crossover_runs(rng: &mut Rng, bits: &Bits, reps: usize) {
    let n = 400_000;
    let mut rows = vec![0u64; n * STRIDE];
    let mut pops = vec![0u16; n];
    let mut shuffled: Vec<u32> = (0..BITS).collect();
    for i in 0..n {
        let want = 200 + (rng.next() % 801) as usize;
        let row = &mut rows[i * STRIDE..(i + 1) * STRIDE];
        for j in 0..want {
            let k = j + (rng.next() % (BITS as u64 - j as u64)) as usize;
            shuffled.swap(j, k);
            row[shuffled[j] as usize / 64] |= 1 << (shuffled[j] % 64);
        }
        pops[i] = want as u16;
    }
    let index = ColumnIndex::build(&rows, STRIDE, BITS, n, &pops).unwrap();
    let scan = RowScan::new(&rows, STRIDE, BITS, n, &pops).unwrap();
    println!(
        "crossover on {n} fingerprints with popcounts 200..1000, {} blocks (1 thread, 5 queries each):",
        index.blocks()
    );
    let only: Option<u32> = std::env::var("CROSSOVER_Q")
        .ok()
        .and_then(|v| v.parse().ok());
    for q_bits in [64u32, 128, 256, 384, 512, 768, 1024, 1536] {
        if only.is_some_and(|o| o != q_bits) {
            continue;
        }
        let qs: Vec<Query> = (0..5)
            .map(|_| {
                let mut on: Vec<u32> = (0..BITS).collect();
                for i in (1..on.len()).rev() {
                    on.swap(i, (rng.next() % (i as u64 + 1)) as usize);
                }
                Query::from_on_bits(BITS, &on[..q_bits as usize]).unwrap()
            })
            .collect();
        for (name, o) in [
            ("top-10", SearchOptions::top_k(10)),
            ("t=0.3", SearchOptions::threshold(0.3)),
        ] {
            let (mut cb, mut rb) = (0, 0);
            for q in &qs {
                cb += index.search_with_stats(q, &o).unwrap().1.bytes_touched;
                rb += scan.search_with_stats(q, &o).unwrap().1.bytes_touched;
            }
            let c = time_per_query(reps, qs.len(), || {
                for q in &qs {
                    std::hint::black_box(index.search(q, &o).unwrap());
                }
            })
            .0;
            let r = time_per_query(reps, qs.len(), || {
                for q in &qs {
                    std::hint::black_box(scan.search(q, &o).unwrap());
                }
            })
            .0;
            println!(
                "  q={q_bits:>5} {name:<7}: columns {c:>8.3} ms ({:>6.1} MB), row scan {r:>8.3} ms ({:>6.1} MB)",
                cb as f64 / 5e6,
                rb as f64 / 5e6
            );
        }
    }
    println!("tiny stores (MOSES-like, t=0.7 and top-10, 20 queries each):");
    for n in [16usize, 64, 256, 1024, 4096, 16384] {
        let fams: Vec<Vec<u32>> = (0..n.div_ceil(20)).map(|_| family(rng, bits)).collect();
        let mut rows = vec![0u64; n * STRIDE];
        let mut pops = vec![0u16; n];
        for i in 0..n {
            let f = &fams[(rng.next() % fams.len() as u64) as usize];
            let row = &mut rows[i * STRIDE..(i + 1) * STRIDE];
            member(rng, bits, f, row);
            pops[i] = row.iter().map(|w| w.count_ones() as u16).sum();
        }
        let qs: Vec<Query> = (0..20)
            .map(|_| {
                let f = &fams[(rng.next() % fams.len() as u64) as usize];
                let mut row = [0u64; STRIDE];
                member(rng, bits, f, &mut row);
                Query::from_row(BITS, &row).unwrap()
            })
            .collect();
        let index = ColumnIndex::build(&rows, STRIDE, BITS, n, &pops).unwrap();
        let scan = RowScan::new(&rows, STRIDE, BITS, n, &pops).unwrap();
        for (name, o) in [
            ("t=0.7", SearchOptions::threshold(0.7)),
            ("top-10", SearchOptions::top_k(10)),
        ] {
            let c = time_per_query(reps.max(5), qs.len(), || {
                for q in &qs {
                    std::hint::black_box(index.search(q, &o).unwrap());
                }
            })
            .0;
            let r = time_per_query(reps.max(5), qs.len(), || {
                for q in &qs {
                    std::hint::black_box(scan.search(q, &o).unwrap());
                }
            })
            .0;
            println!(
                "  n={n:>6} {name:<7}: columns {:>8.1} us, row scan {:>8.1} us",
                c * 1e3,
                r * 1e3
            );
        }
    }
}
