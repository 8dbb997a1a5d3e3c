//! Rough single-thread speed of parsing and formatting (the real benchmark is benches/cube.py).
use molsift_cube::*;
fn main() {
    let n = 8_000_000usize;
    let mut x = 0x1234_5678_9abc_def0u64;
    let vals: Vec<f64> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let m = (x >> 11) as f64 / (1u64 << 53) as f64;
            let e = (x % std::env::args().nth(1).map_or(40, |a| a.parse().unwrap())) as i32;
            m * 10f64.powi(-e)
        })
        .collect();
    for style in [Style::Cp2k, Style::Gaussian] {
        let mut text = vec![0u8; n * 13 + n.div_ceil(6)];
        let mut w = f64::MAX;
        for _ in 0..7 {
            let t = std::time::Instant::now();
            let mut pos = 0;
            for line in vals.chunks(6) {
                for &v in line {
                    let cell: &mut [u8; 13] = (&mut text[pos..pos + 13]).try_into().unwrap();
                    format_value(v, style, cell);
                    pos += 13;
                }
                text[pos] = b'\n';
                pos += 1;
            }
            w = w.min(t.elapsed().as_secs_f64());
        }
        let mut out = vec![0f64; n];
        let mut r = f64::MAX;
        let mut p = None;
        for _ in 0..7 {
            let t = std::time::Instant::now();
            p = Some(parse_values(&text, 0, &mut out).unwrap());
            r = r.min(t.elapsed().as_secs_f64());
        }
        let p = p.unwrap();
        let small = &text[..79 * 6000];
        let mut o2 = vec![0f64; 36000];
        let mut best = f64::MAX;
        for _ in 0..200 {
            let t = std::time::Instant::now();
            parse_values(small, 0, &mut o2).unwrap();
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "in cache: {:.0} MB/s ({:.1} ns/value)",
            small.len() as f64 / best / 1e6,
            best / 36000.0 * 1e9
        );
        let t = std::time::Instant::now();
        let s = std::str::from_utf8(&text).unwrap();
        let mut acc = 0.0;
        for tok in s.split_ascii_whitespace() {
            acc += tok.parse::<f64>().unwrap();
        }
        let sd = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let c = count_tokens(&text);
        let ct = t.elapsed().as_secs_f64();
        println!(
            "std split+parse {:.0} MB/s ({acc:.1}); count_tokens {:.0} MB/s ({c})",
            text.len() as f64 / sd / 1e6,
            text.len() as f64 / ct / 1e6
        );
        assert_eq!(p.values, n);
        println!(
            "{style:?}: format {:.0} MB/s, parse {:.0} MB/s ({:.1} ns/value)",
            text.len() as f64 / w / 1e6,
            text.len() as f64 / r / 1e6,
            r / n as f64 * 1e9
        );
    }
}
