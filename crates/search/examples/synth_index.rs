//! Builds a large synthetic column index from a real store, for the scaling benchmark
//! (`benches/search_scale.py`): molecule `i` is a copy of the store's molecule `i % n0` (`n0`
//! molecules in the store); copy 0 is the real fingerprint, every further copy has `--moves` of
//! its on-bits moved to random positions that were off (so popcounts, and the popcount
//! distribution, are the real ones). Deterministic for a given `--seed`.
//!
//! ```text
//! cargo run --release -p molsift-search --example synth_index -- \
//!     --store STORE --n 10000000 --out DIR [--moves 2] [--seed 1] [--budget-mib 4096] [--rows FILE]
//! ```
//!
//! Writes the index (`columns.json`, planes, order) into `DIR` with [`molsift_search::write_index`]
//! (a group of planes per pass, so an index larger than memory can be built), `DIR/synth.json`
//! saying how it was made, and with `--rows FILE` the fingerprints themselves, row-major
//! (`n * words` little-endian `u64`, bit `b` in word `b / 64` at bit `b % 64`), for peers.
//!
//! The exactness check for sizes no peer can hold in memory:
//!
//! ```text
//! ... --example synth_index -- --store STORE --n N --brute QUERIES -t 0.7 -k 10 --brute-out OUT.json
//! ```
//!
//! regenerates every synthetic fingerprint once and scores it against every query (one line of
//! on-bits per query in `QUERIES`) by plain counting, independent of the index code: for each
//! query, every molecule with score `>= t` and the `k` best, ordered by score descending then
//! index ascending, with scores compared as exact ratios. Written as JSON
//! `{"threshold": [[index, ...], ...], "top_k": [[index, ...], ...]}`.

#[path = "common/rng.rs"]
mod rng;
use rng::Rng;

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use molsift_store::{Store, Verify};

/// The synthetic molecules: real rows, copied and perturbed.
struct Synth<'a> {
    base: &'a Store,
    words: usize,
    bits: u32,
    moves: u32,
    seed: u64,
}

impl Synth<'_> {
    fn popcount(&self, i: usize) -> u32 {
        u32::from(self.base.popcount(i % self.base.len()))
    }

    fn fill(&self, i: usize, row: &mut [u64]) {
        let n0 = self.base.len();
        row.copy_from_slice(&self.base.fingerprint(i % n0)[..self.words]);
        if i < n0 {
            return;
        }
        let p = self.popcount(i);
        if p == 0 {
            return;
        }
        let mut rng = Rng(self.seed ^ (i as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
        for _ in 0..self.moves {
            // clear the k-th on-bit
            let mut k = (rng.next() % u64::from(p)) as u32;
            for w in row.iter_mut() {
                let c = w.count_ones();
                if k < c {
                    let mut x = *w;
                    for _ in 0..k {
                        x &= x - 1;
                    }
                    *w &= !(x & x.wrapping_neg());
                    break;
                }
                k -= c;
            }
            // set a bit that is off
            loop {
                let b = (rng.next() % u64::from(self.bits)) as usize;
                if row[b / 64] >> (b % 64) & 1 == 0 {
                    row[b / 64] |= 1 << (b % 64);
                    break;
                }
            }
        }
    }
}

/// A molecule's exact score `common / union` against one query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cand {
    common: u32,
    union: u32,
    index: u64,
}

impl Ord for Cand {
    /// Greater = worse: lower score, then higher index.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        let mine = u64::from(self.common) * u64::from(o.union);
        let theirs = u64::from(o.common) * u64::from(self.union);
        theirs.cmp(&mine).then(self.index.cmp(&o.index))
    }
}

impl PartialOrd for Cand {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

/// Per query: every molecule at or above the threshold, and a heap of the `k` best.
type BruteOut = Vec<(Vec<Cand>, std::collections::BinaryHeap<Cand>)>;

fn brute(
    synth: &Synth<'_>,
    n: usize,
    queries: &[Vec<u32>],
    t: f64,
    k: usize,
    threads: usize,
) -> BruteOut {
    let mut by_bit: Vec<Vec<u16>> = vec![Vec::new(); synth.bits as usize];
    for (qi, q) in queries.iter().enumerate() {
        for &b in q {
            by_bit[b as usize].push(qi as u16);
        }
    }
    let part = |lo: usize, hi: usize| {
        let mut out: BruteOut = queries
            .iter()
            .map(|_| (Vec::new(), std::collections::BinaryHeap::new()))
            .collect();
        let mut counts = vec![0u32; queries.len()];
        let mut row = vec![0u64; synth.words];
        for i in lo..hi {
            synth.fill(i, &mut row);
            for (w, &word) in row.iter().enumerate() {
                let mut x = word;
                while x != 0 {
                    for &qi in &by_bit[w * 64 + x.trailing_zeros() as usize] {
                        counts[qi as usize] += 1;
                    }
                    x &= x - 1;
                }
            }
            let p = synth.popcount(i);
            for (qi, q) in queries.iter().enumerate() {
                let common = std::mem::take(&mut counts[qi]);
                let union = p + q.len() as u32 - common;
                // RDKit's score: 0 for two empty fingerprints
                let c = Cand {
                    common,
                    union: union.max(1),
                    index: i as u64,
                };
                let (hits, heap) = &mut out[qi];
                if f64::from(common) / f64::from(union.max(1)) >= t {
                    hits.push(c);
                }
                if heap.len() < k {
                    heap.push(c);
                } else if heap.peek().is_some_and(|w| c < *w) {
                    heap.pop();
                    heap.push(c);
                }
            }
        }
        out
    };
    let parts: Vec<BruteOut> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|j| {
                let part = &part;
                s.spawn(move || part(n * j / threads, n * (j + 1) / threads))
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("brute thread"))
            .collect()
    });
    let mut all: BruteOut = queries
        .iter()
        .map(|_| (Vec::new(), std::collections::BinaryHeap::new()))
        .collect();
    for p in parts {
        for (qi, (hits, heap)) in p.into_iter().enumerate() {
            all[qi].0.extend(hits);
            for c in heap {
                all[qi].1.push(c);
                if all[qi].1.len() > k {
                    all[qi].1.pop();
                }
            }
        }
    }
    all
}

fn json_lists(lists: &[Vec<u64>]) -> String {
    let rows: Vec<String> = lists
        .iter()
        .map(|l| {
            format!(
                "[{}]",
                l.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
            )
        })
        .collect();
    format!("[{}]", rows.join(",\n"))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut store, mut n, mut out, mut moves, mut seed, mut budget_mib, mut rows_out) =
        (None, None, None, 2u32, 1u64, 4096usize, None);
    let (mut brute_q, mut brute_out, mut t, mut k, mut threads) =
        (None, None, 0.7f64, 10usize, 2usize);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--store" => store = Some(PathBuf::from(val())),
            "--n" => n = Some(val().parse::<usize>().expect("--n N")),
            "--out" => out = Some(PathBuf::from(val())),
            "--moves" => moves = val().parse().expect("--moves M"),
            "--seed" => seed = val().parse().expect("--seed S"),
            "--budget-mib" => budget_mib = val().parse().expect("--budget-mib B"),
            "--rows" => rows_out = Some(PathBuf::from(val())),
            "--brute" => brute_q = Some(PathBuf::from(val())),
            "--brute-out" => brute_out = Some(PathBuf::from(val())),
            "-t" => t = val().parse().expect("-t T"),
            "-k" => k = val().parse().expect("-k K"),
            "--threads" => threads = val().parse().expect("--threads N"),
            other => panic!("unknown argument {other}; see the file's doc comment"),
        }
    }
    let (store, n) = (store.expect("--store STORE"), n.expect("--n N"));
    let base = Store::open(&store, Verify::Sizes).unwrap_or_else(|e| panic!("{e}"));
    let bits = base.manifest().fingerprint.bits;
    let words = bits as usize / 64;
    let synth = Synth {
        base: &base,
        words,
        bits,
        moves,
        seed,
    };
    if let Some(qpath) = brute_q {
        let text = std::fs::read_to_string(&qpath).expect("read --brute queries");
        let queries: Vec<Vec<u32>> = text
            .lines()
            .map(|l| {
                l.split_whitespace()
                    .map(|b| b.parse().expect("query on-bit"))
                    .collect()
            })
            .collect();
        let t0 = Instant::now();
        let res = brute(&synth, n, &queries, t, k, threads.max(1));
        let mut thr = Vec::new();
        let mut best = Vec::new();
        for (mut hits, heap) in res {
            hits.sort();
            thr.push(hits.iter().map(|c| c.index).collect::<Vec<_>>());
            best.push(
                heap.into_sorted_vec()
                    .iter()
                    .map(|c| c.index)
                    .collect::<Vec<_>>(),
            );
        }
        let json = format!(
            "{{\"threshold\": {},\n\"top_k\": {}}}\n",
            json_lists(&thr),
            json_lists(&best)
        );
        std::fs::write(brute_out.expect("--brute-out FILE"), json).expect("write --brute-out");
        eprintln!(
            "synth_index: brute force over {n} molecules x {} queries in {:.0} s",
            queries.len(),
            t0.elapsed().as_secs_f64()
        );
        return;
    }
    let out = out.expect("--out DIR");
    let t = Instant::now();
    let written = molsift_search::write_index(
        &out,
        bits,
        n,
        |i| synth.popcount(i),
        |i, row| synth.fill(i, row),
        budget_mib << 20,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let index_s = t.elapsed().as_secs_f64();
    eprintln!(
        "synth_index: {n} molecules, index {written} bytes in {index_s:.0} s -> {}",
        out.display()
    );
    if let Some(path) = &rows_out {
        let t = Instant::now();
        let mut w = BufWriter::with_capacity(
            1 << 22,
            std::fs::File::create(path).expect("create --rows file"),
        );
        let mut row = vec![0u64; words];
        for i in 0..n {
            synth.fill(i, &mut row);
            for x in &row {
                w.write_all(&x.to_le_bytes()).expect("write --rows file");
            }
        }
        w.flush().expect("write --rows file");
        eprintln!(
            "synth_index: rows -> {} in {:.0} s",
            path.display(),
            t.elapsed().as_secs_f64()
        );
    }
    let info = format!(
        "{{\"base_store\": {:?}, \"base_molecules\": {}, \"molecules\": {n}, \"bits\": {bits}, \"moves\": {moves}, \
         \"seed\": {seed}, \"index_bytes\": {written}, \"index_seconds\": {index_s:.1}}}\n",
        store.display().to_string(),
        base.len()
    );
    std::fs::write(out.join("synth.json"), info).expect("write synth.json");
}
