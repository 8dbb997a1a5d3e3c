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
    /// per atom after the first: an earlier atom it is bonded to (candidates are its
    /// neighbours), and every bond to an earlier atom (the earlier atom, the requirement, the
    /// pattern bond's index: checked, and the molecule's bond kept, when the atom is placed)
    parent: Vec<usize>,
    back: Vec<Vec<(usize, BondReq, usize)>>,
}

impl Pattern {
    /// A pattern of `atoms` and `bonds` (begin, end, requirement); `Err` when an atom after
    /// the first is bonded to no earlier atom (RDKit's patterns never are) or an index is out
    /// of range.
    pub fn new(atoms: Vec<AtomReq>, bonds: Vec<(usize, usize, BondReq)>) -> Result<Self, String> {
        let n = atoms.len();
        let mut back = vec![Vec::new(); n];
        for (k, &(a, b, req)) in bonds.iter().enumerate() {
            if a >= n || b >= n || a == b {
                return Err(format!("bond {a}-{b} in a pattern of {n} atoms"));
            }
            let (lo, hi) = (a.min(b), a.max(b));
            back[hi].push((lo, req, k));
        }
        let mut parent = vec![0; n];
        for (i, p) in parent.iter_mut().enumerate().skip(1) {
            *p = back[i]
                .iter()
                .map(|&(j, _, _)| j)
                .min()
                .ok_or_else(|| format!("pattern atom {i} is bonded to no earlier atom"))?;
        }
        if n == 0 {
            return Err("a pattern without atoms".into());
        }
        Ok(Pattern {
            atoms,
            bonds,
            parent,
            back,
        })
    }
}

/// boost's `hash_combine` as RDKit's `gboost` has it, on a 32-bit seed.
fn hash_combine(seed: &mut u32, v: u32) {
    *seed ^= v
        .wrapping_add(0x9e37_79b9)
        .wrapping_add(*seed << 6)
        .wrapping_add(*seed >> 2);
}

/// The molecule's graph as the matcher walks it.
struct Graph<'a> {
    m: &'a Molecule,
    n: usize,
    /// per atom: its neighbours
    adj: Vec<Vec<usize>>,
    /// bond index + 1 between two atoms (0: none), n x n
    between: Vec<u16>,
    atom_in_ring: Vec<bool>,
    bond_in_ring: Vec<bool>,
    /// a bond's type as the fingerprint hashes it (aromatic: 12)
    bond_code: Vec<u32>,
    /// a bond's RDKit type
    bond_type: Vec<u8>,
}

impl<'a> Graph<'a> {
    fn new(m: &'a Molecule) -> Self {
        let n = m.atoms.len();
        let mut adj = vec![Vec::new(); n];
        let mut between = vec![0u16; n * n];
        let mut bond_in_ring = Vec::with_capacity(m.bonds.len());
        let mut bond_code = Vec::with_capacity(m.bonds.len());
        let mut bond_type = Vec::with_capacity(m.bonds.len());
        for (k, &(a, b, btype, aromatic)) in m.bonds.iter().enumerate() {
            let (a, b) = (usize::from(a), usize::from(b));
            adj[a].push(b);
            adj[b].push(a);
            between[a * n + b] = k as u16 + 1;
            between[b * n + a] = k as u16 + 1;
            let pair = (a.min(b) as u8, a.max(b) as u8);
            bond_in_ring.push(m.ring_pairs.binary_search(&pair).is_ok());
            bond_code.push(if aromatic { 12 } else { u32::from(btype) });
            bond_type.push(btype);
        }
        Graph {
            m,
            n,
            adj,
            between,
            atom_in_ring: m.nrings.iter().map(|&r| r > 0).collect(),
            bond_in_ring,
            bond_code,
            bond_type,
        }
    }

    fn bond(&self, a: usize, b: usize) -> Option<usize> {
        match self.between[a * self.n + b] {
            0 => None,
            k => Some(usize::from(k) - 1),
        }
    }

    fn atom_fits(&self, i: usize, req: AtomReq) -> bool {
        req == AtomReq::Any || self.atom_in_ring[i]
    }

    fn bond_fits(&self, k: usize, req: BondReq) -> bool {
        match req {
            BondReq::Any => true,
            BondReq::InRing => self.bond_in_ring[k],
            BondReq::SingleOrAromatic => matches!(self.bond_type[k], 1 | 12),
        }
    }
}

/// The pattern fingerprint of `m` over `patterns` (RDKit's list, in its order), `bits` bits
/// packed as the store packs RDKit's bit vectors: bit i in byte i / 8 at bit i % 8.
pub(crate) fn fingerprint(m: &Molecule, patterns: &[Pattern], bits: u32) -> Vec<u8> {
    let mut out = vec![0u8; bits.div_ceil(8) as usize];
    let mut set = |bit: u32| {
        let bit = bit % bits;
        out[(bit / 8) as usize] |= 1 << (bit % 8);
    };
    let g = Graph::new(m);
    let mut map = Vec::new();
    let mut bond_map = Vec::new();
    let mut used = vec![false; g.n];
    for (p, pattern) in patterns.iter().enumerate() {
        let index = p as u32 + 1; // RDKit counts its patterns from 1
        let mut count_id = index + pattern.atoms.len() as u32 + pattern.bonds.len() as u32;
        map.clear();
        map.resize(pattern.atoms.len(), 0usize);
        bond_map.clear();
        bond_map.resize(pattern.bonds.len(), 0usize);
        let mut state = Embedding {
            map: &mut map,
            bonds: &mut bond_map,
            used: &mut used,
        };
        embed(
            &g,
            pattern,
            0,
            &mut state,
            &mut |map: &[usize], bonds: &[usize]| {
                hash_combine(&mut count_id, 0xBEEF);
                set(count_id);
                let mut id = index;
                for &a in map {
                    hash_combine(&mut id, u32::from(g.m.atoms[a].anum));
                }
                for &k in bonds {
                    hash_combine(&mut id, g.bond_code[k]);
                }
                set(id);
            },
        );
    }
    out
}

/// A partial embedding: the molecule atom of each placed pattern atom, the molecule bond of
/// each pattern bond between placed atoms, the molecule atoms taken.
struct Embedding<'s> {
    map: &'s mut [usize],
    bonds: &'s mut [usize],
    used: &'s mut [bool],
}

/// Every embedding of `pattern` in `g` extending the first `i` atoms of `e`, each handed to
/// `found` (atoms in pattern-atom order, bonds in pattern-bond order).
fn embed(
    g: &Graph<'_>,
    pattern: &Pattern,
    i: usize,
    e: &mut Embedding<'_>,
    found: &mut dyn FnMut(&[usize], &[usize]),
) {
    if i == pattern.atoms.len() {
        found(e.map, e.bonds);
        return;
    }
    let req = pattern.atoms[i];
    let mut place = |c: usize, e: &mut Embedding<'_>| {
        if e.used[c] || !g.atom_fits(c, req) {
            return;
        }
        for &(j, breq, pb) in &pattern.back[i] {
            match g.bond(e.map[j], c) {
                Some(k) if g.bond_fits(k, breq) => e.bonds[pb] = k,
                _ => return,
            }
        }
        e.map[i] = c;
        e.used[c] = true;
        embed(g, pattern, i + 1, e, found);
        e.used[c] = false;
    };
    if i == 0 {
        for c in 0..g.n {
            place(c, e);
        }
    } else {
        for &c in &g.adj[e.map[pattern.parent[i]]] {
            place(c, e);
        }
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

    #[test]
    fn a_pattern_needs_connected_atoms() {
        assert!(Pattern::new(vec![AtomReq::Any; 2], vec![]).is_err());
        assert!(Pattern::new(vec![AtomReq::Any; 2], vec![(0, 1, BondReq::Any)]).is_ok());
        assert!(Pattern::new(vec![AtomReq::Any], vec![(0, 1, BondReq::Any)]).is_err());
    }
}
