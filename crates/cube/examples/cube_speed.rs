//! Timing of the cube reader's and writer's inner loops on one thread, in Rust alone (where
//! the time goes; `benches/cube.py` is the benchmark against peers): parse into a pre-faulted
//! array (the same map, then a fresh map each time) and into a fresh array, format + write
//! into the page cache (no fsync), format only. Best of REPS.
//!
//! `cargo run --release -p molsift-cube --example cube_speed -- FILE.cube [REPS] [OUT_DIR]`
//! (`READ_ONLY=1` skips the writes; OUT_DIR defaults to the system's temporary directory).
use molsift_cube::*;
use std::time::Instant;

/// The best of the timings (the least disturbed on a shared machine).
fn best(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[0]
}

fn main() {
    let path = std::env::args().nth(1).unwrap();
    let reps: usize = std::env::args().nth(2).map_or(5, |s| s.parse().unwrap());
    let out_path = std::env::args()
        .nth(3)
        .map_or_else(std::env::temp_dir, std::path::PathBuf::from)
        .join("cube_speed.cube");
    let f = CubeFile::open(std::path::Path::new(&path)).unwrap();
    let n = f.header.value_count() as usize;
    let bytes = f.bytes().len() as f64;
    // warm the map
    let mut s = 0u64;
    for c in f.bytes().chunks(4096) {
        s += c[0] as u64;
    }
    std::hint::black_box(s);
    let opts = ReadOptions::default();
    let mut out = vec![0f64; n];
    let mut t = vec![];
    for _ in 0..reps {
        let t0 = Instant::now();
        f.read_into(&mut out, &opts).unwrap();
        t.push(t0.elapsed().as_secs_f64());
    }
    let tp = best(t);
    let mut t = vec![];
    for _ in 0..reps {
        let t0 = Instant::now();
        let (v, _) = f.read::<f64>(&opts).unwrap();
        t.push(t0.elapsed().as_secs_f64());
        std::hint::black_box(&v);
    }
    let tf = best(t);
    println!(
        "read prefaulted {:.3} s {:.2} GB/s {:.2} ns/value | fresh {:.3} s {:.2} GB/s {:.2} ns/value",
        tp, bytes / tp / 1e9, tp / n as f64 * 1e9, tf, bytes / tf / 1e9, tf / n as f64 * 1e9
    );
    let tm = fresh_map(std::path::Path::new(&path), &mut out, reps);
    println!(
        "read fresh map, prefaulted array {:.3} s {:.2} GB/s {:.2} ns/value",
        tm,
        bytes / tm / 1e9,
        tm / n as f64 * 1e9
    );
    if std::env::var("READ_ONLY").is_ok() {
        return;
    }
    for style in [Style::Cp2k, Style::Gaussian] {
        let wo = WriteOptions {
            style,
            threads: 1,
            sync: false,
        };
        let mut t = vec![];
        let mut nb = 0;
        for _ in 0..reps {
            let _ = std::fs::remove_file(&out_path);
            let t0 = Instant::now();
            let st = write_cube(&out_path, &f.header, &out, &wo).unwrap();
            t.push(t0.elapsed().as_secs_f64());
            nb = st.bytes;
        }
        let tw = best(t);
        println!(
            "write {:?} {:.3} s {:.2} GB/s {:.2} ns/value",
            style,
            tw,
            nb as f64 / tw / 1e9,
            tw / n as f64 * 1e9
        );
    }
    let _ = std::fs::remove_file(&out_path);
    for style in [Style::Cp2k, Style::Gaussian] {
        let t: Vec<f64> = (0..reps).map(|_| fmt_only(&out, style)).collect();
        println!("format only {:?} {:.2} ns/value", style, best(t));
    }
}

#[allow(dead_code)]
fn fmt_only(vals: &[f64], style: Style) -> f64 {
    let mut buf = vec![0u8; 14 * 4096];
    let t0 = Instant::now();
    for ch in vals.chunks(4092) {
        put_row(ch, style, &mut buf[..ch.len() * 13 + ch.len().div_ceil(6)]);
        std::hint::black_box(&buf);
    }
    t0.elapsed().as_secs_f64() / vals.len() as f64 * 1e9
}

/// Fresh map per read (as Python's `read_cube` does), into a pre-faulted array.
#[allow(dead_code)]
pub fn fresh_map(path: &std::path::Path, out: &mut [f64], reps: usize) -> f64 {
    let mut t = vec![];
    for _ in 0..reps {
        let t0 = Instant::now();
        let f = CubeFile::open(path).unwrap();
        f.read_into(out, &ReadOptions::default()).unwrap();
        t.push(t0.elapsed().as_secs_f64());
    }
    best(t)
}
