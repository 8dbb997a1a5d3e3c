//! Shared helpers of the integration tests: a small deterministic RNG, fingerprint sets with
//! realistic density and duplicates, and the plain brute-force reference search.
#![allow(dead_code)]

use molsift_search::{Hit, Query};

#[path = "../../examples/common/rng.rs"]
mod rng;
pub use rng::Rng;

/// Row-major fingerprints with their popcounts.
pub struct Set {
    pub bits: u32,
    pub stride: usize,
    pub rows: Vec<u64>,
    pub pops: Vec<u16>,
}

impl Set {
    pub fn n(&self) -> usize {
        self.pops.len()
    }
    pub fn words(&self) -> usize {
        self.bits as usize / 64
    }
    pub fn row(&self, i: usize) -> &[u64] {
        &self.rows[i * self.stride..i * self.stride + self.words()]
    }
    pub fn push(&mut self, on: &[u32]) {
        let mut r = vec![0u64; self.stride];
        for &b in on {
            r[b as usize / 64] |= 1 << (b % 64);
        }
        self.pops
            .push(r.iter().map(|w| w.count_ones() as u16).sum());
        self.rows.extend(r);
    }
    pub fn new(bits: u32) -> Set {
        let stride = (bits as usize / 64).div_ceil(8) * 8;
        Set {
            bits,
            stride,
            rows: Vec::new(),
            pops: Vec::new(),
        }
    }
}

/// A random fingerprint of about `density` on-bits, drawn with a skew towards low bit numbers.
pub fn random_bits(rng: &mut Rng, bits: u32, density: u32) -> Vec<u32> {
    let n = if density == 0 {
        0
    } else {
        (density / 2 + rng.below(u64::from(density)) as u32).min(bits)
    };
    (0..n)
        .map(|_| {
            // half uniform, half from a narrow "common" range
            if rng.below(2) == 0 {
                rng.below(u64::from(bits)) as u32
            } else {
                rng.below(u64::from(bits.min(96))) as u32
            }
        })
        .collect()
}

/// A variant of `base`: drops about a fifth of its bits and adds a few.
pub fn mutate(rng: &mut Rng, bits: u32, base: &[u32]) -> Vec<u32> {
    let mut v: Vec<u32> = base.iter().copied().filter(|_| rng.below(5) != 0).collect();
    for _ in 0..rng.below(6) {
        v.push(rng.below(u64::from(bits)) as u32);
    }
    v
}

/// `n` molecules in families (so high thresholds find hits), with exact duplicates mixed in.
pub fn family_set(seed: u64, bits: u32, n: usize, density: u32) -> Set {
    let mut rng = Rng(seed);
    let mut s = Set::new(bits);
    let bases: Vec<Vec<u32>> = (0..(n / 20).max(1))
        .map(|_| random_bits(&mut rng, bits, density))
        .collect();
    let mut made: Vec<Vec<u32>> = Vec::new();
    for _ in 0..n {
        let on = match rng.below(10) {
            0 if !made.is_empty() => made[rng.below(made.len() as u64) as usize].clone(), // duplicate
            1 => random_bits(&mut rng, bits, density),
            _ => {
                let b = rng.below(bases.len() as u64) as usize;
                mutate(&mut rng, bits, &bases[b])
            }
        };
        s.push(&on);
        made.push(on);
    }
    s
}

/// Queries: some molecules of the set, some variants, an empty one and a dense one.
pub fn queries_for(seed: u64, set: &Set, count: usize) -> Vec<Query> {
    let mut rng = Rng(seed);
    let mut out = vec![Query::from_on_bits(set.bits, &[]).unwrap()];
    let dense: Vec<u32> = (0..set.bits).filter(|_| rng.below(3) == 0).collect();
    out.push(Query::from_on_bits(set.bits, &dense).unwrap());
    while out.len() < count {
        if set.n() > 0 && rng.below(2) == 0 {
            let i = rng.below(set.n() as u64) as usize;
            let mut on = Vec::new();
            for (w, &x) in set.row(i).iter().enumerate() {
                for b in 0..64 {
                    if x >> b & 1 == 1 {
                        on.push(w as u32 * 64 + b);
                    }
                }
            }
            if rng.below(2) == 0 {
                on = mutate(&mut rng, set.bits, &on);
            }
            out.push(Query::from_on_bits(set.bits, &on).unwrap());
        } else {
            out.push(Query::from_on_bits(set.bits, &random_bits(&mut rng, set.bits, 40)).unwrap());
        }
    }
    out
}

/// The reference: score every molecule as RDKit does, filter, sort by score then index.
pub fn brute(set: &Set, query: &Query, threshold: Option<f64>, k: Option<usize>) -> Vec<Hit> {
    let q = query.popcount();
    let mut all = Vec::new();
    for i in 0..set.n() {
        let c: u32 = set
            .row(i)
            .iter()
            .zip(query.row())
            .map(|(a, b)| (a & b).count_ones())
            .sum();
        let p = u32::from(set.pops[i]);
        let union = p + q - c;
        let score = if union == 0 {
            0.0
        } else {
            c as f64 / union as f64
        };
        if score >= threshold.unwrap_or(0.0) {
            all.push(Hit {
                index: i as u64,
                score,
            });
        }
    }
    all.sort_by(|a, b| {
        b.score
            .partial_cmp(&a.score)
            .unwrap()
            .then(a.index.cmp(&b.index))
    });
    if let Some(k) = k {
        all.truncate(k);
    }
    all
}

/// The set's fingerprints as the compressed planes of store version 2, written into a
/// temporary directory and opened as a column index (the directory lives as long as the
/// index needs it: it is returned too).
#[allow(dead_code)]
pub fn compressed_index(set: &Set) -> (tempfile::TempDir, molsift_search::ColumnIndex) {
    compressed_index_of_format(set, molsift_store::planes::FORMAT_VERSION)
}

/// [`compressed_index`] with the planes of format `version`: 3 (with part masks of 32 and of
/// 16 slots), 2 (of 32 slots only) or 1 (none), as stores written by older versions hold them.
#[allow(dead_code)]
pub fn compressed_index_of_format(
    set: &Set,
    version: u32,
) -> (tempfile::TempDir, molsift_search::ColumnIndex) {
    let dir = tempfile::tempdir().unwrap();
    molsift_store::planes::write_planes(
        dir.path(),
        set.bits,
        set.n(),
        |i| u32::from(set.pops[i]),
        |i, out| out.copy_from_slice(set.row(i)),
        usize::MAX,
    )
    .unwrap();
    if version < molsift_store::planes::FORMAT_VERSION {
        molsift_store::planes::strip_parts(dir.path(), version).unwrap();
    }
    let files: Vec<(String, molsift_iostats::CountedFile)> = molsift_store::planes::FILES
        .iter()
        .filter(|f| dir.path().join(f).exists())
        .map(|f| {
            (
                f.to_string(),
                molsift_iostats::CountedFile::open(&dir.path().join(f)).unwrap(),
            )
        })
        .collect();
    let idx = molsift_search::ColumnIndex::open_planes(dir.path(), |name| {
        Ok(&files.iter().find(|(n, _)| n == name).unwrap().1)
    })
    .unwrap();
    (dir, idx)
}
