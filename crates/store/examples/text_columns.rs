//! Measures the text columns and the exact-match index of store version 2 on a version-1
//! store's SMILES and ids: bytes per molecule, build time, one-string decode time, full decode
//! rate, probes per second.
//!
//! ```text
//! cargo run --release -p molsift-store --example text_columns -- STORE [--level L] [--block B] [--threads T] [--dict BYTES]
//! ```
//!
//! `REPS=N` times the full decode N times (default 5) and prints the median and the best;
//! `DECODE_ONLY=1` stops after it (for profiles).

use std::path::PathBuf;
use std::time::Instant;

use molsift_store::lookup::{build_index, key_hash, LookupIndex, LookupOptions};
use molsift_store::textblocks::{write_text_blocks, TextBlocks, TextOptions};
use molsift_store::{Store, Verify};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let store = PathBuf::from(&args[1]);
    let opt = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .map(|i| args[i + 1].parse().unwrap())
            .unwrap_or(default)
    };
    let (level, block, threads) = (opt("--level", 15), opt("--block", 128), opt("--threads", 2));
    let s = Store::open(&store, Verify::Sizes).unwrap();
    let n = s.len();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by(|&a, &b| {
        s.smiles(a as usize)
            .unwrap()
            .cmp(s.smiles(b as usize).unwrap())
    });
    let dir = tempfile::tempdir_in("/work").unwrap();
    let opts = TextOptions {
        block,
        level: level as i32,
        threads,
        dict_bytes: opt("--dict", molsift_store::textblocks::DEFAULT_DICT_BYTES),
        ..TextOptions::default()
    };
    let t = Instant::now();
    let path = dir.path().join("smiles.blocks");
    let size = write_text_blocks(
        &path,
        n,
        |i, out| out.extend_from_slice(s.smiles(order[i] as usize).unwrap().as_bytes()),
        &opts,
    )
    .unwrap();
    println!(
        "smiles: {:.3} B/mol, written in {:.1} s ({threads} threads, level {level}, block {block}, dictionary {} bytes)",
        size as f64 / n as f64,
        t.elapsed().as_secs_f64(),
        opts.dict_bytes
    );
    let ids_path = dir.path().join("ids.blocks");
    let ids_size = write_text_blocks(
        &ids_path,
        n,
        |i, out| out.extend_from_slice(s.id(i).unwrap().as_bytes()),
        &TextOptions {
            numbered: true,
            ..opts.clone()
        },
    )
    .unwrap();
    println!("ids: {:.3} B/mol", ids_size as f64 / n as f64);
    let f = std::fs::File::open(&path).unwrap();
    let cols = TextBlocks::open(&path, Some(unsafe { memmap2::Mmap::map(&f) }.unwrap())).unwrap();
    // one string, random positions, warm
    let mut rng = 0x1234_5678u64;
    let picks: Vec<usize> = (0..20_000)
        .map(|_| {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (rng >> 33) as usize % n
        })
        .collect();
    for &i in &picks[..1000] {
        cols.get(i).unwrap();
    }
    let t = Instant::now();
    for &i in &picks {
        cols.get(i).unwrap();
    }
    let one = t.elapsed().as_secs_f64() * 1e6 / picks.len() as f64;
    // the same, decoding the whole block into a new buffer each time (how `get` worked
    // before it stopped at the string and kept its buffer)
    let t = Instant::now();
    for &i in &picks {
        let mut buf = molsift_store::textblocks::Block::default();
        cols.decode_block(i / block, &mut buf).unwrap();
        std::hint::black_box(buf.get(i % block).to_string());
    }
    println!(
        "one SMILES, random, warm: {one:.2} us (whole block into a new buffer: {:.2} us)",
        t.elapsed().as_secs_f64() * 1e6 / picks.len() as f64
    );
    for _ in 0..opt("--decode-loops", 0) {
        cols.for_each_in_blocks(0..cols.blocks(), |_, _| Ok(()))
            .unwrap();
    }
    // the full decode: the fastest way, and the ways before it, alternating
    let ways = [
        ("full decode", false, false),
        ("full decode, portable front decoding", true, false),
        (
            "full decode, portable front decoding, dictionary apart",
            true,
            true,
        ),
    ];
    let mut text = 0usize;
    let reps: usize = std::env::var("REPS").map_or(5, |v| v.parse().expect("REPS: a number"));
    let mut times = vec![Vec::new(); ways.len()];
    for _ in 0..reps {
        for (slot, &(_, portable, apart)) in ways.iter().enumerate() {
            molsift_store::textblocks::set_decode_path(portable, apart);
            text = 0;
            let t = Instant::now();
            cols.for_each_in_blocks(0..cols.blocks(), |_, s| {
                text += s.len() + 1;
                Ok(())
            })
            .unwrap();
            times[slot].push(t.elapsed().as_secs_f64());
        }
    }
    molsift_store::textblocks::set_decode_path(false, false);
    for (times, (name, _, _)) in times.iter_mut().zip(ways) {
        times.sort_by(f64::total_cmp);
        println!(
            "{name}: {:.2} GB/s of SMILES text ({} bytes in {:.3} s, median of {reps}, one thread); best {:.2} GB/s",
            text as f64 / times[reps / 2] / 1e9,
            text,
            times[reps / 2],
            text as f64 / times[0] / 1e9
        );
    }
    if std::env::var_os("DECODE_ONLY").is_some() {
        return;
    }
    // the exact-match index: first block of each distinct SMILES
    let t = Instant::now();
    let mut entries = Vec::with_capacity(n);
    let mut prev: Option<&str> = None;
    for (i, &p) in order.iter().enumerate() {
        let smi = s.smiles(p as usize).unwrap();
        if prev != Some(smi) {
            entries.push((key_hash(smi.as_bytes(), 64), (i / block) as u64));
        }
        prev = Some(smi);
    }
    let distinct = entries.len();
    let index = build_index(entries, cols.blocks() as u64, &LookupOptions::default());
    println!(
        "lookup index: {:.3} B/mol ({distinct} distinct of {n}), built in {:.2} s",
        index.len() as f64 / n as f64,
        t.elapsed().as_secs_f64()
    );
    let idx = LookupIndex::parse(&index, &path).unwrap();
    let hashes: Vec<u64> = (0..1_000_000usize)
        .map(|k| {
            let i = picks[k % picks.len()];
            if k % 2 == 0 {
                key_hash(s.smiles(i).unwrap().as_bytes(), 64)
            } else {
                key_hash(format!("absent{k}").as_bytes(), 64)
            }
        })
        .collect();
    let mut out = vec![0u64; hashes.len()];
    for _ in 0..3 {
        let t = Instant::now();
        idx.probe_batch(&hashes, &mut out);
        let secs = t.elapsed().as_secs_f64();
        let t2 = Instant::now();
        let mut one = 0usize;
        for &h in &hashes {
            one += idx.probe(h).is_some() as usize;
        }
        let secs2 = t2.elapsed().as_secs_f64();
        let found = out.iter().filter(|&&b| b != u64::MAX).count();
        println!(
            "probes: {:.1} M/s batched, {:.1} M/s one by one ({found} candidates of {} probes, {one})",
            hashes.len() as f64 / secs / 1e6,
            hashes.len() as f64 / secs2 / 1e6,
            hashes.len()
        );
    }
}
