//! Times `count_records` by each read method (memory map, positioned reads, io_uring buffered
//! and direct, with a few read sizes and depths) and the slab readers on one file; prints GB/s
//! and read amplification.
//!
//! Usage: `cargo run --release -p molsift-io --example count_bench -- FILE [line|sdf] [THREADS] [RUNS]`
//! `BENCH_DROP=1` drops the page cache before every run (root); `BENCH_ONLY=direct` runs only
//! the configurations whose name (`direct1048576d8`) starts with it.

use molsift_io::{
    count_records_with, read_amplification, split_slabs, CountOptions, ReadCounters, ReadMethod,
    ReaderOptions, RecordKind, SlabReader,
};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn slab_pass(path: &Path, kind: RecordKind, slabs: usize, buffer: usize) -> (u64, ReadCounters) {
    let len = std::fs::metadata(path).unwrap().len();
    let results: Vec<(u64, ReadCounters)> = std::thread::scope(|s| {
        let handles: Vec<_> = split_slabs(len, slabs)
            .into_iter()
            .map(|slab| {
                s.spawn(move || {
                    let opts = ReaderOptions {
                        buffer_size: buffer,
                        ..ReaderOptions::for_kind(kind)
                    };
                    let mut r = SlabReader::open(path, kind, slab, opts).unwrap();
                    let mut bytes = 0u64;
                    while let Some(rec) = r.next_record().unwrap() {
                        bytes += rec.bytes.len() as u64;
                    }
                    (bytes, r.counters().clone())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut total = ReadCounters::default();
    let mut bytes = 0;
    for (b, c) in results {
        bytes += b;
        total.add(&c);
    }
    (bytes, total)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = PathBuf::from(
        args.get(1)
            .expect("usage: count_bench FILE [line|sdf] [THREADS] [RUNS]"),
    );
    let kind = match args.get(2).map(String::as_str) {
        Some("sdf") => RecordKind::Sdf,
        _ => RecordKind::Line,
    };
    let threads: usize = args.get(3).map_or(2, |s| s.parse().unwrap());
    let runs: usize = args.get(4).map_or(3, |s| s.parse().unwrap());
    let len = std::fs::metadata(&path).unwrap().len();
    println!("file {} bytes, {threads} threads", len);
    let cold = std::env::var("BENCH_DROP").is_ok_and(|v| v == "1");
    for (method, chunk, depth) in [
        (ReadMethod::Mmap, 1 << 20, 8),
        (ReadMethod::Pread, 1 << 20, 8),
        (ReadMethod::Pread, 4 << 20, 4),
        (ReadMethod::Uring, 1 << 20, 8),
        (ReadMethod::Uring, 4 << 20, 4),
        (ReadMethod::Direct, 1 << 20, 8),
        (ReadMethod::Direct, 1 << 20, 16),
        (ReadMethod::Direct, 4 << 20, 4),
        (ReadMethod::Direct, 4 << 20, 8),
    ] {
        let only = std::env::var("BENCH_ONLY").unwrap_or_default();
        if !only.is_empty()
            && !format!("{method:?}{chunk}d{depth}")
                .to_lowercase()
                .starts_with(&only)
        {
            continue;
        }
        let opts = CountOptions {
            threads,
            skip_header: true,
            method,
            chunk_size: chunk,
            depth,
        };
        let mut speeds = Vec::new();
        let mut last = None;
        for _ in 0..runs {
            if cold {
                drop_caches();
            }
            let t = Instant::now();
            let r = count_records_with(&path, kind, &opts).unwrap();
            speeds.push(len as f64 / t.elapsed().as_secs_f64() / 1e9);
            last = Some(r);
        }
        let r = last.unwrap();
        println!(
            "count {method:?} chunk {chunk} depth {depth}: median {:.2} GB/s (runs {:?}) records {} newlines {} bytes_read {} read_calls {}",
            median(speeds.clone()),
            speeds.iter().map(|s| format!("{s:.2}")).collect::<Vec<_>>(),
            r.records,
            r.newlines,
            r.bytes_read,
            r.read_calls
        );
    }
    if std::env::var("BENCH_SLABS").is_err() {
        return;
    }
    for (slabs, buffer) in [(64, 20 << 20), (threads, 1 << 20)] {
        let t = Instant::now();
        let (bytes, c) = slab_pass(&path, kind, slabs, buffer);
        println!(
            "slab readers: {slabs} slabs, buffer {buffer}: {:.2} GB/s, records {}, record bytes {bytes}, read amplification {:.6}, read calls {}",
            len as f64 / t.elapsed().as_secs_f64() / 1e9,
            c.records,
            read_amplification(c.bytes_read, len),
            c.read_calls
        );
    }
}

/// Writes back dirty pages and drops the page cache (root only; `BENCH_DROP=1`).
fn drop_caches() {
    let ok = std::process::Command::new("sync").status().is_ok()
        && std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok();
    assert!(
        ok,
        "BENCH_DROP=1 needs root (writes /proc/sys/vm/drop_caches)"
    );
}
