//! Research: how many blocks of compressed planes a top-10 search must count at its final bar,
//! with the codes' bound per 256-slot block (today: a block can hold a hit only when at least
//! `need` of the query's planes are non-empty in it) against the same bound per part of 64, 32
//! or 16 slots (a container's part is non-empty when any of its slots has the bit), and how
//! many blocks really hold a molecule that reaches the bar. Queries as on-bit lists.
//!
//! ```text
//! cargo run --release -p molsift-search --example quarter_bound -- V1_STORE QUERIES.onbits
//! ```

use molsift_search::{min_common, ColumnIndex, Query, SearchOptions};
use molsift_store::planes::{write_planes, Planes, BLOCK, FILES};
use molsift_store::{Store, Verify};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = std::path::PathBuf::from(&args[1]);
    let store = Store::open(&path, Verify::Sizes).unwrap();
    let bits = store.manifest().fingerprint.bits;
    let n = store.len();
    let dense = ColumnIndex::open_in(&store).unwrap().unwrap();
    let dir = tempfile::tempdir_in(path.parent().unwrap()).unwrap();
    let header = write_planes(
        dir.path(),
        bits,
        n,
        |i| u32::from(store.popcount(i)),
        |i, out| out.copy_from_slice(store.fingerprint(i)),
        1 << 30,
    )
    .unwrap();
    let file = |f: &str| std::fs::read(dir.path().join(f)).unwrap();
    let (codes, cps, data, order) = (file(FILES[1]), file(FILES[2]), file(FILES[3]), file(FILES[4]));
    let planes = Planes::new(dir.path(), &header, &codes, &cps, &data, &order).unwrap();
    let queries: Vec<Vec<u32>> = std::fs::read_to_string(&args[2])
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(|b| b.parse().unwrap()).collect())
        .collect();
    let (mut tot_block, mut tot_part, mut tot_real) = ([0u64; 2], [[0u64; 2]; 3], 0u64);
    for on in &queries {
        let query = Query::from_on_bits(bits, on).unwrap();
        let hits = dense.search(&query, &SearchOptions::top_k(10)).unwrap();
        let bar = hits.last().unwrap().score;
        let q = on.len() as u32;
        for b in &header.buckets {
            let Some(need) = min_common(bar, b.popcount, q) else {
                continue;
            };
            if need > b.popcount.min(q) {
                continue;
            }
            for blk in b.first_block..b.first_block + b.blocks {
                let blk = blk as usize;
                let mut nonempty = 0u32;
                // non-empty query containers per part, for parts of 64, 32 and 16 slots
                let mut parts = [[0u32; 16]; 3];
                let mut per_slot = vec![0u32; BLOCK];
                for &p in on {
                    let lane = planes.container(p as usize, blk).lane();
                    if lane != [0; 4] {
                        nonempty += 1;
                    }
                    for (g, width) in [64usize, 32, 16].into_iter().enumerate() {
                        for part in 0..BLOCK / width {
                            let w = lane[part * width / 64];
                            let shift = (part * width) % 64;
                            let m = if width == 64 { w } else { (w >> shift) & ((1u64 << width) - 1) };
                            parts[g][part] += u32::from(m != 0);
                        }
                    }
                    for r in 0..4 {
                        let mut x = lane[r];
                        while x != 0 {
                            per_slot[r * 64 + x.trailing_zeros() as usize] += 1;
                            x &= x - 1;
                        }
                    }
                }
                if nonempty >= need {
                    tot_block[0] += 1;
                    tot_block[1] += u64::from(nonempty);
                }
                for g in 0..3 {
                    if parts[g].iter().any(|&c| c >= need) {
                        tot_part[g][0] += 1;
                        tot_part[g][1] += u64::from(nonempty);
                    }
                }
                if per_slot.iter().any(|&c| c >= need) {
                    tot_real += 1;
                }
            }
        }
    }
    let k = queries.len() as u64;
    println!(
        "per query at the final top-10 bar: blocks passing the bound per block {} (non-empty query containers in them {}); per 64-slot part {} ({}); per 32-slot part {} ({}); per 16-slot part {} ({}); blocks holding a molecule at the bar {}",
        tot_block[0] / k,
        tot_block[1] / k,
        tot_part[0][0] / k,
        tot_part[0][1] / k,
        tot_part[1][0] / k,
        tot_part[1][1] / k,
        tot_part[2][0] / k,
        tot_part[2][1] / k,
        tot_real / k
    );
}
