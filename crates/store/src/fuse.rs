//! A static function over 64-bit keys (a "retrieval" structure): given distinct keys and a
//! `width`-bit value for each, builds an array of about `1.125 * n` cells of `width` bits such
//! that the value of a key is the XOR of three cells the key's hash picks. Nothing about the
//! keys is stored: an absent key gets an arbitrary value, so callers put check bits in the
//! value and confirm what they find (the exact-match index confirms against the stored SMILES).
//!
//! The construction is the binary fuse graph of Graf and Lemire ("Binary Fuse Filters: Fast and
//! Smaller Than Xor Filters", 2022), written here from the paper: the cells are cut into
//! segments, a key's three cells lie in three consecutive segments, and the 3-hypergraph is
//! peeled (a cell used by one key alone settles that key); values are assigned in reverse
//! peeling order. A failed peel (rare) retries with the next seed.

/// Segment geometry and seed: everything a lookup needs besides the cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// seed mixed into every key
    pub seed: u64,
    /// cells per segment (a power of two)
    pub segment_length: u32,
    /// number of segments a key's first cell may fall in
    pub segment_count: u32,
    /// total cells: `(segment_count + 2) * segment_length`
    pub cells: u64,
}

impl Geometry {
    /// The geometry for `n` keys and a seed.
    pub fn for_keys(n: usize, seed: u64) -> Geometry {
        let n = n.max(1) as f64;
        // the paper's parameters for arity 3
        let seg_bits = ((n.ln() / 3.33f64.ln() + 2.25).floor() as i32).clamp(1, 18);
        let segment_length = 1u32 << seg_bits;
        let factor = if n <= 1.0 {
            0.0
        } else {
            (0.875 + 0.25 * 1e6f64.ln() / n.ln()).max(1.125)
        };
        let capacity = (n * factor).round() as u64;
        let count = capacity.div_ceil(u64::from(segment_length)).max(3) - 2;
        let segment_count = count.min(u32::MAX as u64) as u32;
        Geometry {
            seed,
            segment_length,
            segment_count,
            cells: (u64::from(segment_count) + 2) * u64::from(segment_length),
        }
    }

    /// The three cells of `key`: one in each of three consecutive segments, so never the same
    /// cell twice.
    #[inline]
    pub fn cells_of(&self, key: u64) -> [u64; 3] {
        let h = mix(key ^ self.seed);
        let span = u64::from(self.segment_count) * u64::from(self.segment_length);
        let h0 = ((h as u128 * span as u128) >> 64) as u64;
        let len = u64::from(self.segment_length);
        let mask = len - 1;
        let h1 = (h0 + len) ^ ((h >> 18) & mask);
        let h2 = (h0 + 2 * len) ^ (h & mask);
        [h0, h1, h2]
    }
}

/// A 64-bit finalizer (murmur3's), so that structured keys spread over the cells.
#[inline]
pub fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Builds the cells for `keys` (distinct) and `values` (each below `2^width`): the geometry and
/// one value per cell. Panics on duplicate keys only after many failed seeds.
pub fn build(keys: &[u64], values: &[u64], width: u32) -> (Geometry, Vec<u64>) {
    assert_eq!(keys.len(), values.len());
    assert!(width <= 64);
    let n = keys.len();
    for attempt in 0..64u64 {
        let g = Geometry::for_keys(n, 0x5eed_0000_0000_0000 ^ attempt);
        if let Some(cells) = try_build(&g, keys, values) {
            return (g, cells);
        }
    }
    panic!("could not build the static function: are the {n} keys distinct?");
}

fn try_build(g: &Geometry, keys: &[u64], values: &[u64]) -> Option<Vec<u64>> {
    let cells = g.cells as usize;
    // per cell: how many keys use it, and the XOR of their indices
    let mut count = vec![0u32; cells];
    let mut xor_idx = vec![0u64; cells];
    for (i, &k) in keys.iter().enumerate() {
        for c in g.cells_of(k) {
            count[c as usize] += 1;
            xor_idx[c as usize] ^= i as u64;
        }
    }
    let mut queue: Vec<u64> = (0..cells as u64)
        .filter(|&c| count[c as usize] == 1)
        .collect();
    // the peeling order: (key index, the cell that settles it)
    let mut order: Vec<(u64, u64)> = Vec::with_capacity(keys.len());
    while let Some(c) = queue.pop() {
        if count[c as usize] != 1 {
            continue;
        }
        let i = xor_idx[c as usize];
        order.push((i, c));
        for d in g.cells_of(keys[i as usize]) {
            let d = d as usize;
            count[d] -= 1;
            xor_idx[d] ^= i;
            if count[d] == 1 {
                queue.push(d as u64);
            }
        }
    }
    if order.len() != keys.len() {
        return None;
    }
    let mut out = vec![0u64; cells];
    for &(i, c) in order.iter().rev() {
        let [a, b, d] = g.cells_of(keys[i as usize]);
        // the three cells lie in three different segments, so c is one of them exactly once
        out[c as usize] = values[i as usize] ^ out[a as usize] ^ out[b as usize] ^ out[d as usize];
    }
    // check every key (cheap, and the construction's one guarantee)
    for (i, &k) in keys.iter().enumerate() {
        let v = g
            .cells_of(k)
            .iter()
            .fold(0u64, |acc, &x| acc ^ out[x as usize]);
        if v != values[i] {
            return None;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_gets_its_value() {
        for n in [0usize, 1, 2, 3, 10, 100, 1000, 50_000] {
            let keys: Vec<u64> = (0..n as u64).map(|i| mix(i * 7 + 1)).collect();
            let values: Vec<u64> = (0..n as u64).map(|i| (i * 31) & 0xfffff).collect();
            let (g, cells) = build(&keys, &values, 20);
            assert!(g.cells as usize == cells.len());
            if n >= 50_000 {
                // small sets need more room to peel (the paper's size factor)
                assert!(
                    (cells.len() as f64) < 1.25 * n as f64,
                    "{} cells for {n}",
                    cells.len()
                );
            }
            for (k, v) in keys.iter().zip(&values) {
                let got = g.cells_of(*k).iter().fold(0, |a, &c| a ^ cells[c as usize]);
                assert_eq!(got, *v);
            }
        }
    }

    #[test]
    fn sequential_keys_work_too() {
        let keys: Vec<u64> = (0..20_000).collect();
        let values: Vec<u64> = keys.iter().map(|k| k % 1000).collect();
        let (g, cells) = build(&keys, &values, 10);
        for (k, v) in keys.iter().zip(&values) {
            assert_eq!(
                g.cells_of(*k).iter().fold(0, |a, &c| a ^ cells[c as usize]),
                *v
            );
        }
    }
}
