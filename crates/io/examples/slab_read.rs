//! Reads every record of a file through slab readers on one thread, slab after slab (PASSES
//! times over), and
//! prints one JSON line: seconds, records, bytes read, read calls, and whether molsift's I/O
//! counters were recording (`MOLSIFT_IOSTATS=0` turns them off). Used by
//! `benches/iostats_overhead.py` to time the counters' cost per read request.
//!
//! Usage: `cargo run --release -p molsift-io --example slab_read -- FILE BUFFER_BYTES [SLABS] [PASSES]`

use molsift_io::{iostats, split_slabs, ReaderOptions, RecordKind, SlabReader};
use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: slab_read FILE BUFFER_BYTES [SLABS] [PASSES]";
    let path = PathBuf::from(args.get(1).expect(usage));
    let buffer: usize = args.get(2).expect(usage).parse().expect(usage);
    let slabs: usize = args.get(3).map_or(1, |s| s.parse().expect(usage));
    let passes: usize = args.get(4).map_or(1, |s| s.parse().expect(usage));
    let len = iostats::metadata(&path).expect("stat").len();
    let start = Instant::now();
    let (mut records, mut bytes_read, mut read_calls, mut text) = (0u64, 0u64, 0u64, 0u64);
    let all = (0..passes).flat_map(|_| split_slabs(len, slabs));
    for slab in all {
        let opts = ReaderOptions {
            buffer_size: buffer,
            ..ReaderOptions::for_kind(RecordKind::Line)
        };
        let mut r = SlabReader::open(&path, RecordKind::Line, slab, opts).expect("open");
        while let Some(rec) = r.next_record().expect("read") {
            text += rec.bytes.len() as u64;
        }
        let c = r.counters();
        records += c.records;
        bytes_read += c.bytes_read;
        read_calls += c.read_calls;
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{{\"seconds\":{seconds},\"records\":{records},\"bytes_read\":{bytes_read},\"read_calls\":{read_calls},\"text_bytes\":{text},\"recording\":{}}}",
        iostats::enabled()
    );
}
