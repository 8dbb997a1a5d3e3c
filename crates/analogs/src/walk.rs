//! [`walk`]: the exact analog search by breadth-first search from the query over every edit,
//! canonicalizing each graph reached and looking it up among the library's skeletons; hits
//! come out distance by distance (all of distance 1 before any of distance 2).
//!
//! This first walk visits the whole ball of radius D around the query (pruned only where no
//! library skeleton can be reached in the edits left: the atom and ring counts bound the
//! distance, `docs/analogs.md`), so it is exact by construction and its cost grows about 300-fold
//! per distance for drug-sized molecules; `BENCHMARKS.md` has the figures. Per-kind limits keep,
//! for each graph, every count vector no other dominates.

use std::collections::HashMap;

use crate::canon::canonical;
use crate::edits::{component_count, edits, Kind};
use crate::skeleton::Skeleton;
use crate::AnalogError;

/// The library side of a walk: which skeletons it holds (by canonical key) and how near in atom
/// and ring counts its skeletons come to a graph.
pub trait Library {
    /// Whether a skeleton with canonical key `key` is in the library.
    fn contains(&self, key: u128) -> bool;
    /// A lower bound of the edits from a graph of `components`, `atoms` and `rings` to any
    /// library skeleton (`None` when no skeleton has that many components).
    fn bound(&self, components: usize, atoms: usize, rings: usize) -> Option<usize>;
}

/// A library held as a set of keys and, per number of components, a table of the least
/// `|atoms difference| + |rings difference|` to any of its skeletons (filled by [`finish`]).
///
/// [`finish`]: KeySet::finish
#[derive(Debug, Default, Clone)]
pub struct KeySet {
    keys: std::collections::HashSet<u128>,
    /// components -> (atoms, rings) present
    shapes: HashMap<usize, Vec<(usize, usize)>>,
    grids: HashMap<usize, Grid>,
}

/// L1 distances to the nearest present (atoms, rings), for atoms `0..=amax`, rings `0..=rmax`.
#[derive(Debug, Clone)]
struct Grid {
    amax: usize,
    rmax: usize,
    cells: Vec<u32>,
}

impl Grid {
    fn new(points: &[(usize, usize)]) -> Grid {
        let amax = points.iter().map(|p| p.0).max().unwrap_or(0);
        let rmax = points.iter().map(|p| p.1).max().unwrap_or(0);
        let (w, h) = (amax + 1, rmax + 1);
        let far = u32::MAX / 4;
        let mut cells = vec![far; w * h];
        for &(a, r) in points {
            cells[r * w + a] = 0;
        }
        // the L1 distance transform is separable: along atoms, then along rings
        for r in 0..h {
            let row = &mut cells[r * w..(r + 1) * w];
            for a in 1..w {
                row[a] = row[a].min(row[a - 1] + 1);
            }
            for a in (0..w - 1).rev() {
                row[a] = row[a].min(row[a + 1] + 1);
            }
        }
        for a in 0..w {
            for r in 1..h {
                cells[r * w + a] = cells[r * w + a].min(cells[(r - 1) * w + a] + 1);
            }
            for r in (0..h - 1).rev() {
                cells[r * w + a] = cells[r * w + a].min(cells[(r + 1) * w + a] + 1);
            }
        }
        Grid { amax, rmax, cells }
    }

    fn get(&self, atoms: usize, rings: usize) -> usize {
        let (a, r) = (atoms.min(self.amax), rings.min(self.rmax));
        (atoms - a) + (rings - r) + self.cells[r * (self.amax + 1) + a] as usize
    }
}

impl KeySet {
    /// Adds a skeleton (its key and shape); call [`finish`](KeySet::finish) after the last.
    pub fn insert(&mut self, key: u128, components: usize, atoms: usize, rings: usize) {
        if self.keys.insert(key) {
            self.shapes
                .entry(components)
                .or_default()
                .push((atoms, rings));
        }
    }

    /// Builds the distance tables.
    pub fn finish(&mut self) {
        self.grids = self
            .shapes
            .iter()
            .map(|(&c, points)| (c, Grid::new(points)))
            .collect();
    }

    /// Number of distinct skeletons.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

impl Library for KeySet {
    fn contains(&self, key: u128) -> bool {
        self.keys.contains(&key)
    }

    fn bound(&self, components: usize, atoms: usize, rings: usize) -> Option<usize> {
        self.grids.get(&components).map(|g| g.get(atoms, rings))
    }
}

/// What a walk did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WalkStats {
    /// edits generated (graph to graph steps considered)
    pub edges: u64,
    /// edits pruned by the bound before canonicalizing
    pub pruned: u64,
    /// distinct graphs reached (canonicalized and kept)
    pub nodes: u64,
}

/// A limit per edit kind (`u8::MAX`: none), in [`Kind::ALL`] order.
pub type Limits = [u8; 6];

/// No limit on any kind.
pub const UNLIMITED: Limits = [u8::MAX; 6];

fn dominated(seen: &[[u8; 6]], c: &[u8; 6]) -> bool {
    seen.iter().any(|s| s.iter().zip(c).all(|(a, b)| a <= b))
}

/// Walks from `query` to distance `max_dist`: `hit(distance, key)` once for each library
/// skeleton reached, nearest first; when it returns true the walk ends with the distance it is
/// at (so every hit at that distance is still reported: enough to rank the nearest k).
/// `max_leaves` bounds each canonicalization.
pub fn walk<L: Library>(
    query: &Skeleton,
    max_dist: usize,
    limits: Limits,
    library: &L,
    max_leaves: usize,
    mut hit: impl FnMut(usize, u128) -> bool,
) -> Result<WalkStats, AnalogError> {
    let mut stats = WalkStats::default();
    let comps = component_count(query);
    let start = canonical(query, max_leaves)?.key();
    // key -> count vectors kept (one, the first, without limits)
    let mut seen: HashMap<u128, Vec<[u8; 6]>> = HashMap::new();
    seen.insert(start, vec![[0; 6]]);
    let mut found: std::collections::HashSet<u128> = std::collections::HashSet::new();
    let mut enough = false;
    if library.contains(start) {
        found.insert(start);
        enough = hit(0, start);
    }
    let limited = limits != UNLIMITED;
    let mut frontier: Vec<(Skeleton, [u8; 6])> = vec![(query.clone(), [0; 6])];
    for depth in 1..=max_dist {
        if enough {
            break;
        }
        let left = max_dist - depth;
        let mut next = Vec::new();
        let mut error = None;
        for (g, counts) in &frontier {
            let rings = g.bonds() + comps - g.atoms();
            edits(g, |kind: Kind, atoms, bonds| {
                if error.is_some() {
                    return;
                }
                stats.edges += 1;
                let k = kind as usize;
                if counts[k] >= limits[k] {
                    return;
                }
                let new_rings = match kind {
                    Kind::Rdn => rings - 1,
                    Kind::Rup => rings + 1,
                    _ => rings,
                };
                match library.bound(comps, atoms, new_rings) {
                    Some(b) if b <= left => {}
                    _ => {
                        stats.pruned += 1;
                        return;
                    }
                }
                let result = match Skeleton::new(atoms, bonds) {
                    Ok(r) => r,
                    Err(e) => {
                        error = Some(e);
                        return;
                    }
                };
                let key = match canonical(&result, max_leaves) {
                    Ok(c) => c.key(),
                    Err(e) => {
                        error = Some(e);
                        return;
                    }
                };
                let mut c = *counts;
                c[k] += 1;
                let kept = seen.entry(key).or_default();
                if limited {
                    if dominated(kept, &c) {
                        return;
                    }
                    kept.retain(|s| !c.iter().zip(s).all(|(a, b)| a <= b));
                } else if !kept.is_empty() {
                    return;
                }
                kept.push(c);
                stats.nodes += 1;
                if library.contains(key) && found.insert(key) && hit(depth, key) {
                    enough = true;
                }
                if left > 0 {
                    next.push((result, c));
                }
            });
        }
        if let Some(e) = error {
            return Err(e);
        }
        frontier = next;
    }
    Ok(stats)
}

/// The skeletons of a list of SMILES (a store's, by position): the key set a walk searches and
/// the positions of each skeleton's molecules. In memory (the on-disk index comes next).
#[derive(Debug, Default)]
pub struct SkeletonGroups {
    /// the library a walk searches
    pub keys: KeySet,
    /// canonical key -> positions of its molecules, ascending
    pub groups: HashMap<u128, Vec<u32>>,
    /// positions whose SMILES could not be read, with the reason
    pub failed: Vec<(u32, String)>,
}

impl SkeletonGroups {
    /// Reads and canonicalizes every SMILES on `threads` threads.
    pub fn build(smiles: &[&str], threads: usize, max_leaves: usize) -> SkeletonGroups {
        type Part = Vec<(u32, Result<(u128, usize, usize, usize), String>)>;
        let threads = threads.max(1);
        let chunk = smiles.len().div_ceil(threads).max(1);
        let parts: Vec<Part> = std::thread::scope(|s| {
            let handles: Vec<_> = smiles
                .chunks(chunk)
                .enumerate()
                .map(|(t, part)| {
                    s.spawn(move || {
                        part.iter()
                            .enumerate()
                            .map(|(i, smi)| {
                                let pos = (t * chunk + i) as u32;
                                let one = crate::smiles::skeleton_of_smiles(smi)
                                    .and_then(|g| {
                                        let key = canonical(&g, max_leaves)?.key();
                                        let comps = component_count(&g);
                                        let rings = g.bonds() + comps - g.atoms();
                                        Ok((key, comps, g.atoms(), rings))
                                    })
                                    .map_err(|e| e.to_string());
                                (pos, one)
                            })
                            .collect::<Part>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("skeleton thread"))
                .collect()
        });
        let mut out = SkeletonGroups::default();
        for (pos, one) in parts.into_iter().flatten() {
            match one {
                Ok((key, comps, atoms, rings)) => {
                    out.keys.insert(key, comps, atoms, rings);
                    out.groups.entry(key).or_default().push(pos);
                }
                Err(why) => out.failed.push((pos, why)),
            }
        }
        out.keys.finish();
        out
    }
}
