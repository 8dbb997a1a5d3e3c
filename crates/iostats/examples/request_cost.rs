//! The cost of counting one read request: `read_at` of 1 KiB from a cached 1 MiB file, on a
//! plain `File` and on a `CountedFile` (recording on), alternating, in CPU nanoseconds per
//! request (process CPU time, so other processes on the machine disturb it less than wall time).
//! Prints one JSON line per round. Used by `benches/iostats_overhead.py`.
//!
//! Usage: `cargo run --release -p molsift-iostats --example request_cost -- [DIR] [REQUESTS] [ROUNDS]`

use molsift_iostats::CountedFile;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

fn per_request(n: u64, mut read: impl FnMut(u64)) -> f64 {
    let t = cpu_seconds();
    for i in 0..n {
        read((i % 1024) * 1024);
    }
    (cpu_seconds() - t) / n as f64 * 1e9
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(args.get(1).map_or("/tmp", String::as_str));
    let n: u64 = args
        .get(2)
        .map_or(2_000_000, |s| s.parse().expect("REQUESTS"));
    let rounds: usize = args.get(3).map_or(5, |s| s.parse().expect("ROUNDS"));
    let path = dir.join(format!("molsift-request-cost-{}.bin", std::process::id()));
    std::fs::write(&path, vec![1u8; 1 << 20]).expect("write the test file");
    let plain = std::fs::File::open(&path).expect("open");
    let counted = CountedFile::open(&path).expect("open");
    let mut buf = vec![0u8; 1024];
    for _ in 0..rounds {
        let p = per_request(n, |at| {
            assert_eq!(plain.read_at(&mut buf, at).unwrap(), 1024)
        });
        let c = per_request(n, |at| {
            assert_eq!(counted.read_at(&mut buf, at).unwrap(), 1024)
        });
        println!("{{\"plain_ns\":{p:.1},\"counted_ns\":{c:.1}}}");
    }
    let _ = std::fs::remove_file(&path);
}
