//! Measures a version-2 store's exact-match index and SMILES column from Rust, warm, one
//! thread: probes per second of the index alone (batched with prefetch, and one by one),
//! lookups per second with every candidate confirmed against the stored SMILES, microseconds
//! to decode one SMILES, and the full-column decode rate. Prints `key: value` lines (read by
//! `benches/lookup.py`).
//!
//! ```text
//! cargo run --release -p molsift-store --example v2_lookup -- STORE CANONICAL_QUERIES.txt
//! ```

use std::time::Instant;

use molsift_store::lookup::{key_hash, LookupIndex};
use molsift_store::textblocks::{set_decode_path, Block};
use molsift_store::v2::StoreV2;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let store = StoreV2::open(std::path::Path::new(&args[1]), false).unwrap();
    let queries: Vec<String> = std::fs::read_to_string(&args[2])
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let bytes = std::fs::read(store.path().join("smiles.lookup")).unwrap();
    let index = LookupIndex::parse(&bytes, store.path()).unwrap();
    let hashes: Vec<u64> = queries
        .iter()
        .map(|q| key_hash(q.as_bytes(), index.hash_bits()))
        .collect();
    let mut out = vec![0u64; hashes.len()];
    let batched = median(
        (0..5)
            .map(|_| {
                let t = Instant::now();
                index.probe_batch(&hashes, &mut out);
                hashes.len() as f64 / t.elapsed().as_secs_f64()
            })
            .collect(),
    );
    let mut candidates = 0usize;
    let single = median(
        (0..5)
            .map(|_| {
                candidates = 0;
                let t = Instant::now();
                for &h in &hashes {
                    candidates += usize::from(index.probe(h).is_some());
                }
                hashes.len() as f64 / t.elapsed().as_secs_f64()
            })
            .collect(),
    );
    println!("queries: {}", queries.len());
    println!("probe_batched_per_s: {batched:.0}");
    println!("probe_single_per_s: {single:.0}");
    println!("candidates: {candidates}");
    let mut buf = Block::default();
    let t = Instant::now();
    let mut found = 0usize;
    for q in &queries {
        found += usize::from(!store.lookup(q, &mut buf).unwrap().is_empty());
    }
    println!(
        "confirmed_lookups_per_s: {:.0}",
        queries.len() as f64 / t.elapsed().as_secs_f64()
    );
    println!("found: {found}");
    let n = store.len();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let picks: Vec<usize> = (0..50_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        })
        .collect();
    for &i in &picks[..5000] {
        store.smiles(i).unwrap();
    }
    let col = store.smiles_column().unwrap();
    // medians of 11 alternating runs: `store.smiles(i)` (the block expanded up to the string,
    // in a buffer kept per thread), the whole block expanded into a new buffer each time, and
    // `store.smiles(i)` the way blocks were decoded before 2026-11-27's second change
    // (dictionary apart from the output, portable front decoding)
    let (mut one, mut whole, mut one_before) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..11 {
        let t = Instant::now();
        for &i in &picks {
            store.smiles(i).unwrap();
        }
        one.push(t.elapsed().as_secs_f64() * 1e6 / picks.len() as f64);
        let t = Instant::now();
        for &i in &picks {
            let mut buf = Block::default();
            col.decode_block(i / col.block_len(), &mut buf).unwrap();
            std::hint::black_box(buf.get(i % col.block_len()).to_string());
        }
        whole.push(t.elapsed().as_secs_f64() * 1e6 / picks.len() as f64);
        set_decode_path(true, true);
        let t = Instant::now();
        for &i in &picks {
            store.smiles(i).unwrap();
        }
        one_before.push(t.elapsed().as_secs_f64() * 1e6 / picks.len() as f64);
        set_decode_path(false, false);
    }
    println!("decode_one_us: {:.2}", median(one));
    println!("decode_one_whole_block_us: {:.2}", median(whole));
    println!("decode_one_before_us: {:.2}", median(one_before));
    // the full column, the same ways alternating
    let (mut rates, mut rates_before) = (Vec::new(), Vec::new());
    for _ in 0..11 {
        for before in [false, true] {
            set_decode_path(before, before);
            let mut text = 0usize;
            let t = Instant::now();
            col.for_each_in_blocks(0..col.blocks(), |_, s| {
                text += s.len() + 1;
                Ok(())
            })
            .unwrap();
            let rate = text as f64 / t.elapsed().as_secs_f64();
            if before {
                rates_before.push(rate);
            } else {
                rates.push(rate);
            }
        }
    }
    set_decode_path(false, false);
    println!("decode_all_bytes_per_s: {:.0}", median(rates));
    println!("decode_all_before_bytes_per_s: {:.0}", median(rates_before));
}
