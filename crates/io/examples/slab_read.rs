//! Reads every record of a file through slab readers on one thread, slab after slab, PASSES
//! times over, and prints one JSON line: seconds, records, bytes read, read calls, and whether
//! molsift's I/O counters were recording (`MOLSIFT_IOSTATS=0` turns them off). With
//! `alternate`, passes switch recording on and off in turn (`iostats::set_enabled`) and the line
//! also holds the median seconds of a pass with and without recording: paired in one process,
//! these are steadier than separate runs on a busy machine. Used by
//! `benches/iostats_overhead.py` to time the counters' cost per read request.
//!
//! Usage: `cargo run --release -p molsift-io --example slab_read -- FILE BUFFER_BYTES [SLABS] [PASSES] [alternate]`

use molsift_io::{split_slabs, ReaderOptions, RecordKind, SlabReader};
use molsift_iostats as iostats;
use std::path::Path;
use std::time::Instant;

/// (records, bytes read, read calls) of one pass over every slab.
fn pass(path: &Path, len: u64, buffer: usize, slabs: usize) -> (u64, u64, u64) {
    let (mut records, mut bytes_read, mut read_calls) = (0, 0, 0);
    for slab in split_slabs(len, slabs) {
        let opts = ReaderOptions {
            buffer_size: buffer,
            ..ReaderOptions::for_kind(RecordKind::Line)
        };
        let mut r = SlabReader::open(path, RecordKind::Line, slab, opts).expect("open");
        while let Some(rec) = r.next_record().expect("read") {
            std::hint::black_box(rec.bytes);
        }
        let c = r.counters();
        records += c.records;
        bytes_read += c.bytes_read;
        read_calls += c.read_calls;
    }
    (records, bytes_read, read_calls)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: slab_read FILE BUFFER_BYTES [SLABS] [PASSES] [alternate]";
    let path = Path::new(args.get(1).expect(usage));
    let buffer: usize = args.get(2).expect(usage).parse().expect(usage);
    let slabs: usize = args.get(3).map_or(1, |s| s.parse().expect(usage));
    let passes: usize = args.get(4).map_or(1, |s| s.parse().expect(usage));
    let alternate = args.get(5).is_some_and(|a| a == "alternate");
    let recording = iostats::enabled();
    let len = iostats::metadata(path).expect("stat").len();
    let (mut on, mut off) = (Vec::new(), Vec::new());
    let (mut records, mut bytes_read, mut read_calls) = (0, 0, 0);
    let start = Instant::now();
    for i in 0..passes {
        if alternate {
            iostats::set_enabled(matches!(i % 4, 0 | 3)); // on, off, off, on, ...
        }
        let t = Instant::now();
        let (r, b, c) = pass(path, len, buffer, slabs);
        let secs = t.elapsed().as_secs_f64();
        if iostats::enabled() {
            &mut on
        } else {
            &mut off
        }
        .push(secs);
        (records, bytes_read, read_calls) = (records + r, bytes_read + b, read_calls + c);
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{{\"seconds\":{seconds},\"records\":{records},\"bytes_read\":{bytes_read},\"read_calls\":{read_calls},\"recording\":{recording},\"pass_on\":{},\"pass_off\":{}}}",
        median(on),
        median(off)
    );
}
