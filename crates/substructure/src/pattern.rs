//! RDKit's pattern fingerprint (`Chem.PatternFingerprint`, the substructure screen's main bits)
//! of a molecule read from its binary form ([`crate::pickle`]), computed here from the graph
//! instead of by RDKit's substructure matcher: every embedding of each of RDKit's small
//! patterns (given by the caller as graphs: atoms "any" or "in a ring", bonds "any", "in a
//! ring" or "single or aromatic", in RDKit's own atom and bond order) is enumerated, and each sets the bits RDKit sets:
//! one for the embedding (the pattern's index, then the atomic number of each matched atom in
//! pattern-atom order, then each matched bond's type, aromatic as 12, in pattern-bond order,
//! folded by boost's `hash_combine` on 32 bits) and one for the number of embeddings so far
//! (the pattern's index plus its atom and bond counts, combined with 0xBEEF once per
//! embedding). Molecules only: a query's fingerprint (wildcards, query bonds) stays RDKit's.
//!
//! The embeddings are those RDKit's matcher finds (every one, not one per atom set), found
//! faster: each pattern's atoms are placed most-constrained first (the atom of most bonds,
//! then each time the one of most bonds to atoms placed), a candidate needs at least the
//! pattern atom's number of bonds, and a pattern bond on a cycle of the pattern only takes a
//! molecule bond on a cycle of the molecule (an embedding maps a cycle onto a cycle; the
//! molecule's bridges are found by one depth-first search, not read from RDKit's rings). The
//! bits do not depend on the order embeddings are found in.
//!
//! The caller (`substructure/records.py`) checks once per process that these bits equal
//! RDKit's on probe molecules, and uses RDKit's own function otherwise.

use crate::pickle::Molecule;

/// What a pattern atom asks of a molecule atom.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomReq {
    /// any atom (`[*]`)
    Any,
    /// an atom in a ring (`[R]`)
    InRing,
}

/// What a pattern bond asks of a molecule bond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BondReq {
    /// any bond (`~`)
    Any,
    /// a bond in a ring (`@`)
    InRing,
    /// a single or aromatic bond (a SMARTS bond written as nothing)
    SingleOrAromatic,
}

/// One of RDKit's patterns as a graph, with the order in which it is matched.
#[derive(Debug, Clone)]
pub struct Pattern {
    atoms: Vec<AtomReq>,
    /// (begin, end, requirement), in RDKit's bond order
    bonds: Vec<(usize, usize, BondReq)>,
    /// the pattern atoms in the order they are placed: the first of most bonds, then each time
    /// the atom with most bonds to atoms placed (then most bonds), so that a placement that
    /// cannot be completed is left as early as can be
    steps: Vec<Step>,
}

/// Placing one pattern atom.
#[derive(Debug, Clone)]
struct Step {
    /// the pattern atom
    atom: usize,
    /// what it asks of its molecule atom
    req: AtomReq,
    /// its bonds in the pattern: its molecule atom has at least as many
    degree: u8,
    /// (after the first) a placed pattern atom it is bonded to, whose molecule atom's
    /// neighbours are the candidates: (that atom, the bond's requirement, the bond's index,
    /// whether the bond lies on a cycle of the pattern)
    via: (usize, BondReq, usize, bool),
    /// its other bonds to placed atoms (the same four facts), checked when it is placed
    back: Vec<(usize, BondReq, usize, bool)>,
}

impl Pattern {
    /// A pattern of `atoms` and `bonds` (begin, end, requirement); `Err` when it is not
    /// connected (RDKit's patterns all are) or an index is out of range.
    pub fn new(atoms: Vec<AtomReq>, bonds: Vec<(usize, usize, BondReq)>) -> Result<Self, String> {
        let n = atoms.len();
        if n == 0 {
            return Err("a pattern without atoms".into());
        }
        for &(a, b, _) in &bonds {
            if a >= n || b >= n || a == b {
                return Err(format!("bond {a}-{b} in a pattern of {n} atoms"));
            }
        }
        if n > 255 {
            return Err(format!("a pattern of {n} atoms"));
        }
        let pairs: Vec<(usize, usize)> = bonds.iter().map(|&(a, b, _)| (a, b)).collect();
        let (start, nbr, _) = neighbour_lists(n, &pairs);
        let cyclic = on_cycles(n, bonds.len(), &start, &nbr);
        let degree = |a: usize| bonds.iter().filter(|&&(x, y, _)| x == a || y == a).count();
        let mut placed = vec![false; n];
        let mut steps: Vec<Step> = Vec::with_capacity(n);
        for _ in 0..n {
            // the unplaced atom of most bonds to placed atoms, then of most bonds, then first
            let links = |a: usize| {
                bonds
                    .iter()
                    .filter(|&&(x, y, _)| (x == a && placed[y]) || (y == a && placed[x]))
                    .count()
            };
            let next = (0..n)
                .filter(|&a| !placed[a])
                .max_by_key(|&a| (links(a), degree(a), std::cmp::Reverse(a)))
                .expect("an atom left");
            if !steps.is_empty() && links(next) == 0 {
                return Err(format!(
                    "pattern atom {next} is bonded to no other atom placed"
                ));
            }
            let mut to_placed: Vec<(usize, BondReq, usize, bool)> = bonds
                .iter()
                .enumerate()
                .filter_map(|(k, &(x, y, req))| {
                    let other = if x == next {
                        y
                    } else if y == next {
                        x
                    } else {
                        return None;
                    };
                    placed[other].then_some((other, req, k, cyclic[k]))
                })
                .collect();
            to_placed.sort_by_key(|t| t.0);
            let via = if to_placed.is_empty() {
                (0, BondReq::Any, 0, false)
            } else {
                to_placed.remove(0)
            };
            steps.push(Step {
                atom: next,
                req: atoms[next],
                degree: u8::try_from(degree(next)).map_err(|_| "a pattern atom of 256 bonds")?,
                via,
                back: to_placed,
            });
            placed[next] = true;
        }
        Ok(Pattern {
            atoms,
            bonds,
            steps,
        })
    }
}

/// Per bond of a graph of `n` atoms and `bonds` bonds given as neighbour lists (`nbr[start[a]..
/// start[a + 1]]`: each neighbour of `a` and the bond to it): whether it lies on a cycle (is
/// not a bridge), by one depth-first search (Tarjan's low links).
fn on_cycles(n: usize, bonds: usize, start: &[u16], nbr: &[(u8, u16)]) -> Vec<bool> {
    let mut cyclic = vec![true; bonds];
    let mut order = vec![u16::MAX; n];
    let mut low = vec![0u16; n];
    let mut time = 0u16;
    // (atom, bond it was reached by, next neighbour to look at)
    let mut stack: Vec<(usize, usize, usize)> = Vec::with_capacity(n);
    for root in 0..n {
        if order[root] != u16::MAX {
            continue;
        }
        stack.push((root, usize::MAX, usize::from(start[root])));
        order[root] = time;
        low[root] = time;
        time += 1;
        while let Some(&mut (a, from, ref mut next)) = stack.last_mut() {
            if *next < usize::from(start[a + 1]) {
                let (b, k) = nbr[*next];
                let (b, k) = (usize::from(b), usize::from(k));
                *next += 1;
                if k == from {
                    continue;
                }
                if order[b] == u16::MAX {
                    order[b] = time;
                    low[b] = time;
                    time += 1;
                    stack.push((b, k, usize::from(start[b])));
                } else {
                    low[a] = low[a].min(order[b]);
                }
            } else {
                stack.pop();
                if let Some(&(parent, _, _)) = stack.last() {
                    low[parent] = low[parent].min(low[a]);
                    if low[a] > order[parent] {
                        cyclic[from] = false; // nothing below `a` reaches above it: a bridge
                    }
                }
            }
        }
    }
    cyclic
}

/// Neighbour lists of a graph of `n` atoms and `bonds` (pairs of atoms): per atom its
/// neighbours and the bonds to them, `nbr[start[a]..start[a + 1]]`, and each atom's degree.
fn neighbour_lists(n: usize, bonds: &[(usize, usize)]) -> (Vec<u16>, Vec<(u8, u16)>, Vec<u8>) {
    let mut degree = vec![0u8; n];
    for &(a, b) in bonds {
        degree[a] = degree[a].saturating_add(1);
        degree[b] = degree[b].saturating_add(1);
    }
    let mut start = Vec::with_capacity(n + 1);
    let mut at = 0u16;
    for &d in &degree {
        start.push(at);
        at += u16::from(d);
    }
    start.push(at);
    let mut fill: Vec<u16> = start[..n].to_vec();
    let mut nbr = vec![(0u8, 0u16); usize::from(at)];
    for (k, &(a, b)) in bonds.iter().enumerate() {
        nbr[usize::from(fill[a])] = (b as u8, k as u16);
        fill[a] += 1;
        nbr[usize::from(fill[b])] = (a as u8, k as u16);
        fill[b] += 1;
    }
    (start, nbr, degree)
}

/// boost's `hash_combine` as RDKit's `gboost` has it, on a 32-bit seed.
fn hash_combine(seed: &mut u32, v: u32) {
    *seed ^= v
        .wrapping_add(0x9e37_79b9)
        .wrapping_add(*seed << 6)
        .wrapping_add(*seed >> 2);
}

/// The molecule's graph as the matcher walks it.
struct Graph {
    n: usize,
    /// each atom's neighbours and the bonds to them: `nbr[start[a]..start[a + 1]]`
    start: Vec<u16>,
    nbr: Vec<(u8, u16)>,
    /// bond index + 1 between two atoms (0: none), n x n
    between: Vec<u16>,
    anum: Vec<u32>,
    degree: Vec<u8>,
    atom_in_ring: Vec<bool>,
    /// per bond: in a ring (RDKit's), single or aromatic, on a cycle of the graph (not a bridge)
    bond_in_ring: Vec<bool>,
    bond_single_or_aromatic: Vec<bool>,
    bond_on_cycle: Vec<bool>,
    /// a bond's type as the fingerprint hashes it (aromatic: 12)
    bond_code: Vec<u32>,
}

impl Graph {
    fn new(m: &Molecule) -> Self {
        let n = m.atoms.len();
        let pairs: Vec<(usize, usize)> = m
            .bonds
            .iter()
            .map(|&(a, b, _, _)| (usize::from(a), usize::from(b)))
            .collect();
        let (start, nbr, degree) = neighbour_lists(n, &pairs);
        let mut between = vec![0u16; n * n];
        let nb = m.bonds.len();
        let (mut bond_in_ring, mut bond_single_or_aromatic, mut bond_code) = (
            Vec::with_capacity(nb),
            Vec::with_capacity(nb),
            Vec::with_capacity(nb),
        );
        for (k, &(a, b, btype, aromatic)) in m.bonds.iter().enumerate() {
            let (ai, bi) = (usize::from(a), usize::from(b));
            between[ai * n + bi] = k as u16 + 1;
            between[bi * n + ai] = k as u16 + 1;
            bond_in_ring.push(m.ring_pairs.binary_search(&(a.min(b), a.max(b))).is_ok());
            bond_single_or_aromatic.push(matches!(btype, 1 | 12));
            bond_code.push(if aromatic { 12 } else { u32::from(btype) });
        }
        let bond_on_cycle = on_cycles(n, nb, &start, &nbr);
        Graph {
            n,
            start,
            nbr,
            between,
            anum: m.atoms.iter().map(|a| u32::from(a.anum)).collect(),
            degree,
            atom_in_ring: m.nrings.iter().map(|&r| r > 0).collect(),
            bond_in_ring,
            bond_single_or_aromatic,
            bond_on_cycle,
            bond_code,
        }
    }

    fn atom_fits(&self, c: usize, step: &Step) -> bool {
        self.degree[c] >= step.degree && (step.req == AtomReq::Any || self.atom_in_ring[c])
    }

    /// Whether molecule bond `k` may stand for a pattern bond of `req` (`cyclic`: on a cycle
    /// of the pattern, so only a bond on a cycle of the molecule can be its image).
    fn bond_fits(&self, k: usize, req: BondReq, cyclic: bool) -> bool {
        (!cyclic || self.bond_on_cycle[k])
            && match req {
                BondReq::Any => true,
                BondReq::InRing => self.bond_in_ring[k],
                BondReq::SingleOrAromatic => self.bond_single_or_aromatic[k],
            }
    }
}

/// The pattern fingerprint of `m` over `patterns` (RDKit's list, in its order), `bits` bits
/// packed as the store packs RDKit's bit vectors: bit i in byte i / 8 at bit i % 8.
pub(crate) fn fingerprint(m: &Molecule, patterns: &[Pattern], bits: u32) -> Vec<u8> {
    let mut out = vec![0u8; bits.div_ceil(8) as usize];
    let g = Graph::new(m);
    let mut map = Vec::new();
    let mut bond_map = Vec::new();
    let mut used = vec![false; g.n];
    for (p, pattern) in patterns.iter().enumerate() {
        let index = p as u32 + 1; // RDKit counts its patterns from 1
        let mut count_id = index + pattern.atoms.len() as u32 + pattern.bonds.len() as u32;
        map.clear();
        map.resize(pattern.atoms.len(), 0u8);
        bond_map.clear();
        bond_map.resize(pattern.bonds.len(), 0u16);
        let mut e = Embedding {
            map: &mut map,
            bonds: &mut bond_map,
            used: &mut used,
        };
        let out = &mut out;
        let mut set = move |bit: u32| {
            let bit = bit % bits;
            out[(bit / 8) as usize] |= 1 << (bit % 8);
        };
        embed(&g, pattern, 0, &mut e, &mut |map: &[u8], bonds: &[u16]| {
            // one bit for the number of embeddings so far, one for this embedding's atoms and
            // bonds: the same bits in any order of the embeddings
            hash_combine(&mut count_id, 0xBEEF);
            set(count_id);
            let mut id = index;
            for &a in map {
                hash_combine(&mut id, g.anum[usize::from(a)]);
            }
            for &k in bonds {
                hash_combine(&mut id, g.bond_code[usize::from(k)]);
            }
            set(id);
        });
    }
    out
}

/// A partial embedding: the molecule atom of each placed pattern atom, the molecule bond of
/// each pattern bond between placed atoms, the molecule atoms taken.
struct Embedding<'s> {
    map: &'s mut [u8],
    bonds: &'s mut [u16],
    used: &'s mut [bool],
}

/// Every embedding of `pattern` in `g` extending its first `s` steps in `e`, each handed to
/// `found` (atoms in pattern-atom order, bonds in pattern-bond order).
fn embed<F: FnMut(&[u8], &[u16])>(
    g: &Graph,
    pattern: &Pattern,
    s: usize,
    e: &mut Embedding<'_>,
    found: &mut F,
) {
    let Some(step) = pattern.steps.get(s) else {
        found(e.map, e.bonds);
        return;
    };
    if s == 0 {
        for c in 0..g.n {
            if !g.atom_fits(c, step) {
                continue;
            }
            e.map[step.atom] = c as u8;
            e.used[c] = true;
            embed(g, pattern, 1, e, found);
            e.used[c] = false;
        }
        return;
    }
    let (via, via_req, via_bond, via_cyclic) = step.via;
    let a = usize::from(e.map[via]);
    let (from, to) = (usize::from(g.start[a]), usize::from(g.start[a + 1]));
    'candidates: for &(c, k) in &g.nbr[from..to] {
        let (c, k) = (usize::from(c), usize::from(k));
        if e.used[c] || !g.atom_fits(c, step) || !g.bond_fits(k, via_req, via_cyclic) {
            continue;
        }
        for &(j, req, pb, cyclic) in &step.back {
            match g.between[usize::from(e.map[j]) * g.n + c] {
                0 => continue 'candidates,
                kb => {
                    let kb = usize::from(kb) - 1;
                    if !g.bond_fits(kb, req, cyclic) {
                        continue 'candidates;
                    }
                    e.bonds[pb] = kb as u16;
                }
            }
        }
        e.bonds[via_bond] = k as u16;
        e.map[step.atom] = c as u8;
        e.used[c] = true;
        embed(g, pattern, s + 1, e, found);
        e.used[c] = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_combine_is_boosts() {
        // seed 0, value 0: 0x9e3779b9; then one more step by hand
        let mut s = 0u32;
        hash_combine(&mut s, 0);
        assert_eq!(s, 0x9e37_79b9);
        let mut t = 1u32;
        hash_combine(&mut t, 6);
        assert_eq!(t, 1 ^ (6u32 + 0x9e37_79b9 + (1 << 6)));
    }

    /// RDKit's 13 patterns as RDKit 2026.09 parses them (`records.pattern_graphs()`)
    #[allow(clippy::type_complexity)]
    const RDKIT: [(&[u8], &[(usize, usize, u8)]); 13] = [
        (&[0, 0], &[(0, 1, 0)]),
        (&[0, 0, 0], &[(0, 1, 0), (1, 2, 0)]),
        (&[1, 1, 1], &[(0, 1, 0), (1, 2, 0), (0, 2, 0)]),
        (&[0, 0, 0, 0], &[(0, 1, 0), (1, 2, 0), (1, 3, 0)]),
        (&[1, 1, 1, 1], &[(0, 1, 2), (1, 2, 0), (2, 3, 0), (0, 3, 0)]),
        (
            &[0, 0, 0, 0, 0],
            &[(0, 1, 0), (1, 2, 0), (2, 3, 0), (2, 4, 0)],
        ),
        (
            &[1, 1, 1, 1, 1],
            &[(0, 1, 0), (1, 2, 0), (2, 3, 0), (3, 4, 0), (0, 4, 0)],
        ),
        (
            &[1, 1, 1, 1, 1, 1],
            &[
                (0, 1, 0),
                (1, 2, 0),
                (2, 3, 0),
                (3, 4, 0),
                (4, 5, 0),
                (0, 5, 0),
            ],
        ),
        (
            &[1, 1, 1, 1, 1, 1, 1],
            &[
                (0, 1, 1),
                (0, 2, 1),
                (0, 3, 0),
                (3, 4, 0),
                (4, 5, 1),
                (4, 6, 1),
            ],
        ),
        (
            &[1, 1, 1, 1, 1, 1, 1, 1],
            &[
                (0, 1, 1),
                (0, 2, 1),
                (0, 3, 0),
                (3, 4, 1),
                (4, 5, 0),
                (5, 6, 1),
                (5, 7, 1),
            ],
        ),
        (
            &[0, 1, 1, 1, 1, 0],
            &[(0, 1, 0), (1, 2, 1), (1, 3, 1), (3, 4, 1), (3, 5, 0)],
        ),
        (
            &[0, 1, 1, 1, 1, 1, 0],
            &[
                (0, 1, 0),
                (1, 2, 1),
                (1, 3, 1),
                (3, 4, 1),
                (4, 5, 1),
                (4, 6, 0),
            ],
        ),
        (&[0], &[]),
    ];

    fn rdkit_patterns() -> Vec<Pattern> {
        let atom = [AtomReq::Any, AtomReq::InRing];
        let bond = [BondReq::Any, BondReq::InRing, BondReq::SingleOrAromatic];
        RDKIT
            .iter()
            .map(|(a, b)| {
                Pattern::new(
                    a.iter().map(|&k| atom[usize::from(k)]).collect(),
                    b.iter()
                        .map(|&(x, y, k)| (x, y, bond[usize::from(k)]))
                        .collect(),
                )
                .unwrap()
            })
            .collect()
    }

    #[test]
    fn benzoate_has_rdkits_bits() {
        // Chem.PatternFingerprint(Chem.MolFromSmiles("c1ccccc1C(=O)[O-]"), fpSize=2048)
        let want: [u32; 112] = [
            46, 53, 54, 61, 114, 173, 202, 217, 230, 253, 257, 296, 343, 360, 389, 394, 408, 410,
            424, 428, 429, 434, 447, 465, 469, 474, 488, 490, 512, 523, 527, 550, 602, 617, 618,
            622, 631, 663, 673, 695, 698, 702, 730, 756, 759, 772, 773, 778, 789, 797, 822, 865,
            874, 898, 912, 923, 938, 941, 945, 946, 957, 963, 967, 972, 1003, 1007, 1022, 1033,
            1037, 1061, 1065, 1092, 1120, 1124, 1155, 1164, 1165, 1182, 1185, 1189, 1193, 1208,
            1229, 1236, 1289, 1295, 1304, 1329, 1364, 1386, 1387, 1389, 1403, 1414, 1416, 1417,
            1449, 1460, 1465, 1531, 1565, 1573, 1607, 1608, 1713, 1764, 1839, 1902, 1961, 1982,
            2017, 2019,
        ];
        let patterns = rdkit_patterns();
        let pickle = crate::pickle::tests::benzoate_pickle();
        let screen = crate::pickle::screen_from_pickle(&pickle, Some((&patterns, 2048)));
        let fp = screen.pattern.expect("a fingerprint");
        let on: Vec<u32> = (0..2048u32)
            .filter(|&i| fp[(i / 8) as usize] & (1 << (i % 8)) != 0)
            .collect();
        assert_eq!(on, want);
    }

    /// Every embedding by brute force (each injective map of the pattern's atoms checked),
    /// hashed as `fingerprint` hashes them.
    fn brute_force(m: &Molecule, patterns: &[Pattern], bits: u32) -> Vec<u8> {
        let mut out = vec![0u8; bits.div_ceil(8) as usize];
        let mut set = |bit: u32| {
            let bit = bit % bits;
            out[(bit / 8) as usize] |= 1 << (bit % 8);
        };
        let n = m.atoms.len();
        let in_ring = |a: usize| m.nrings[a] > 0;
        let bond = |a: usize, b: usize| {
            m.bonds.iter().position(|&(x, y, _, _)| {
                (usize::from(x), usize::from(y)) == (a, b)
                    || (usize::from(x), usize::from(y)) == (b, a)
            })
        };
        for (p, pattern) in patterns.iter().enumerate() {
            let index = p as u32 + 1;
            let mut count_id = index + pattern.atoms.len() as u32 + pattern.bonds.len() as u32;
            let k = pattern.atoms.len();
            // every injective map of the pattern's atoms, in lexicographic order
            let mut maps: Vec<Vec<usize>> = vec![Vec::new()];
            for _ in 0..k {
                maps = maps
                    .into_iter()
                    .flat_map(|m| {
                        (0..n)
                            .filter(|a| !m.contains(a))
                            .map(|a| {
                                let mut m = m.clone();
                                m.push(a);
                                m
                            })
                            .collect::<Vec<_>>()
                    })
                    .collect();
            }
            'maps: for map in maps {
                if map
                    .iter()
                    .zip(&pattern.atoms)
                    .any(|(&a, &req)| req == AtomReq::InRing && !in_ring(a))
                {
                    continue 'maps;
                }
                let mut bonds = Vec::new();
                for &(a, b, req) in &pattern.bonds {
                    let Some(kb) = bond(map[a], map[b]) else {
                        continue 'maps;
                    };
                    let (x, y, btype, _) = m.bonds[kb];
                    let ok = match req {
                        BondReq::Any => true,
                        BondReq::InRing => m.ring_pairs.contains(&(x.min(y), x.max(y))),
                        BondReq::SingleOrAromatic => matches!(btype, 1 | 12),
                    };
                    if !ok {
                        continue 'maps;
                    }
                    bonds.push(kb);
                }
                hash_combine(&mut count_id, 0xBEEF);
                set(count_id);
                let mut id = index;
                for &a in &map {
                    hash_combine(&mut id, u32::from(m.atoms[a].anum));
                }
                for &kb in &bonds {
                    let (_, _, btype, aromatic) = m.bonds[kb];
                    hash_combine(&mut id, if aromatic { 12 } else { u32::from(btype) });
                }
                set(id);
            }
        }
        out
    }

    #[test]
    fn the_search_finds_every_embedding_brute_force_finds() {
        // random small graphs (rings, bridges, branches, several components; ring flags set
        // at random, as the search must not rely on them for its own pruning)
        let patterns = rdkit_patterns();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        let mut with_embeddings = 0;
        for case in 0..300 {
            let n = 3 + rnd(5) as usize; // 3 to 7 atoms
            let mut bonds: Vec<(u8, u8, u8, bool)> = Vec::new();
            for _ in 0..n + rnd(4) as usize {
                let (a, b) = (rnd(n as u64) as u8, rnd(n as u64) as u8);
                if a != b
                    && !bonds
                        .iter()
                        .any(|&(x, y, _, _)| (x, y) == (a, b) || (x, y) == (b, a))
                {
                    let t = [1u8, 2, 3, 12][rnd(4) as usize];
                    bonds.push((a, b, t, t == 12));
                }
            }
            let anums: Vec<u8> = (0..n).map(|_| [6u8, 7, 8][rnd(3) as usize]).collect();
            let nrings: Vec<u32> = (0..n).map(|_| rnd(3) as u32).collect();
            let ring_pairs: Vec<(u8, u8)> = bonds
                .iter()
                .filter(|_| rnd(3) > 0)
                .map(|&(a, b, _, _)| (a.min(b), a.max(b)))
                .collect();
            let m = Molecule::for_test(&anums, bonds, nrings, ring_pairs);
            let want = brute_force(&m, &patterns, 2048);
            assert_eq!(fingerprint(&m, &patterns, 2048), want, "case {case}");
            with_embeddings += usize::from(want.iter().any(|&b| b != 0));
        }
        assert!(with_embeddings > 250, "{with_embeddings}");
    }

    #[test]
    fn bridges_are_the_bonds_on_no_cycle() {
        // a triangle 0-1-2, a bridge 2-3, a square 3-4-5-6, a pendant 6-7, apart 8-9
        let bonds = [
            (0, 1),
            (1, 2),
            (2, 0),
            (2, 3),
            (3, 4),
            (4, 5),
            (5, 6),
            (6, 3),
            (6, 7),
            (8, 9),
        ];
        let (start, nbr, _) = neighbour_lists(10, &bonds);
        let cyclic = on_cycles(10, bonds.len(), &start, &nbr);
        assert_eq!(
            cyclic,
            [true, true, true, false, true, true, true, true, false, false]
        );
    }

    #[test]
    fn a_pattern_needs_connected_atoms() {
        assert!(Pattern::new(vec![AtomReq::Any; 2], vec![]).is_err());
        assert!(Pattern::new(vec![AtomReq::Any; 2], vec![(0, 1, BondReq::Any)]).is_ok());
        assert!(Pattern::new(vec![AtomReq::Any], vec![(0, 1, BondReq::Any)]).is_err());
    }
}
