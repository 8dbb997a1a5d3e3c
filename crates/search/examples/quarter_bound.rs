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
    let (codes, cps, data, order, parts) = (
        file(FILES[1]),
        file(FILES[2]),
        file(FILES[3]),
        file(FILES[4]),
        file(FILES[5]),
    );
    let planes = Planes::new(dir.path(), &header, &codes, &cps, &data, &order, &parts).unwrap();
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
                            let m = if width == 64 {
                                w
                            } else {
                                (w >> shift) & ((1u64 << width) - 1)
                            };
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
    // best-first: blocks visited in order of the best score their bound allows (the codes'
    // bound, or the 32-slot part bound), the bar the 10th best score found so far; a block is
    // counted (with its non-empty query containers) when its bound can still reach the bar
    let mut visited = [[0u64; 2]; 2];
    for on in &queries {
        let q = on.len() as u32;
        let score = |c: u32, p: u32| {
            let u = p + q - c;
            if u == 0 {
                0.0
            } else {
                f64::from(c) / f64::from(u)
            }
        };
        // per block: (codes bound score, part bound score, non-empty containers, slot scores)
        let mut blocks: Vec<(f64, f64, u32, Vec<f64>)> = Vec::new();
        for b in &header.buckets {
            for blk in b.first_block..b.first_block + b.blocks {
                let blk = blk as usize;
                let (mut nonempty, mut part) = (0u32, [0u32; 8]);
                let mut per_slot = vec![0u32; BLOCK];
                for &p in on {
                    let lane = planes.container(p as usize, blk).lane();
                    nonempty += u32::from(lane != [0; 4]);
                    for (r, c) in part.iter_mut().enumerate() {
                        *c += u32::from((lane[r / 2] >> (32 * (r % 2))) as u32 != 0);
                    }
                    for r in 0..4 {
                        let mut x = lane[r];
                        while x != 0 {
                            per_slot[r * 64 + x.trailing_zeros() as usize] += 1;
                            x &= x - 1;
                        }
                    }
                }
                let real = (blk - b.first_block as usize) * BLOCK;
                let slots = (b.count as usize).saturating_sub(real).min(BLOCK);
                let pb = *part.iter().max().unwrap();
                blocks.push((
                    score(nonempty.min(b.popcount).min(q), b.popcount),
                    score(pb.min(b.popcount).min(q), b.popcount),
                    nonempty,
                    per_slot[..slots]
                        .iter()
                        .map(|&c| score(c, b.popcount))
                        .collect(),
                ));
            }
        }
        for (v, by_part) in [false, true].into_iter().enumerate() {
            let key = |x: &(f64, f64, u32, Vec<f64>)| if by_part { x.1 } else { x.0 };
            let mut order: Vec<usize> = (0..blocks.len()).collect();
            order.sort_by(|&a, &b| key(&blocks[b]).total_cmp(&key(&blocks[a])));
            let mut best: Vec<f64> = Vec::new();
            for &i in &order {
                let bar = if best.len() == 10 { best[9] } else { 0.0 };
                if best.len() == 10 && key(&blocks[i]) < bar {
                    break;
                }
                visited[v][0] += 1;
                visited[v][1] += u64::from(blocks[i].2);
                best.extend(blocks[i].3.iter().copied());
                best.sort_by(|a, b| b.total_cmp(a));
                best.truncate(10);
            }
        }
    }
    let k = queries.len() as u64;
    println!(
        "best-first, per query: by the codes' bound {} blocks ({} non-empty containers); by the 32-slot part bound {} blocks ({})",
        visited[0][0] / k,
        visited[0][1] / k,
        visited[1][0] / k,
        visited[1][1] / k
    );
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
