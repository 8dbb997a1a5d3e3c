//! Graph records ([`crate::graph`]) read from RDKit's binary form of a molecule
//! (`Mol.ToBinary()`, RDKit's "pickle", format 16.x): the atom and bond properties RDKit
//! computed when it parsed the molecule (H counts, valences, hybridization, aromaticity, the
//! rings it found) are all in that form, so a record costs one C++ call and a walk over bytes
//! instead of a dozen Python calls per atom.
//!
//! The reader knows the parts of the form that a molecule parsed from SMILES has: atoms
//! without queries, coordinates, map numbers, dummy labels or residue information; bonds
//! without queries or end points; ring information; conformers and property blocks (skipped).
//! Anything else (another format version, a tag it does not know, a truncated form) gives
//! [`Read::Unknown`]: the caller computes that molecule's record with RDKit's Python calls
//! (`program.graph_record`), so an unknown form costs time, never a wrong record. The Python
//! side also checks, once per process, that this reader and `graph_record` agree on a set of
//! probe molecules before it uses the reader at all.

use crate::pattern::Pattern;

/// What reading one molecule's binary form gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// the molecule's graph record (empty: the record form cannot describe the molecule,
    /// exactly as `graph_record` says)
    Record(Vec<u8>),
    /// the form holds something this reader does not know
    Unknown,
}

/// RDKit's pickle tags this reader meets (`MolPickler::Tags`).
mod tag {
    pub const BEGINATOM: u8 = 1;
    pub const BEGINBOND: u8 = 11;
    pub const BEGINPROPS: u8 = 18;
    pub const ENDPROPS: u8 = 19;
    pub const BEGINSSSR: u8 = 20;
    pub const ENDMOL: u8 = 22;
    pub const BEGINCONFS: u8 = 23;
    pub const BEGINATOMPROPS: u8 = 58;
    pub const BEGINBONDPROPS: u8 = 59;
    pub const BEGINCONFPROPS: u8 = 63;
    pub const BEGINCONFS_DOUBLE: u8 = 64;
    pub const BEGINSYMMSSSR: u8 = 66;
    pub const BEGINFASTFIND: u8 = 67;
    pub const BEGINFINDOTHERORUNKNOWN: u8 = 68;
}

/// The pickle's first word.
const ENDIAN_ID: u32 = 0xDEAD_BEEF;
/// The only major version of the form this reader knows.
const MAJOR: i32 = 16;
/// RDKit's `HybridizationType::SP3`: an atom's hybridization when the form leaves it out.
const SP3: u8 = 4;

/// A cursor over the bytes; every read past the end is `None`.
struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let out = self.data.get(self.at..end)?;
        self.at = end;
        Some(out)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn i8(&mut self) -> Option<i8> {
        self.u8().map(|b| b as i8)
    }
    /// a count byte RDKit wrote from a non-negative `char`
    fn small(&mut self) -> Option<u8> {
        self.i8().and_then(|v| u8::try_from(v).ok())
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }
    fn i32(&mut self) -> Option<i32> {
        self.u32().map(|v| v as i32)
    }
    /// skips a block written as its byte length (i32) then its bytes
    fn skip_block(&mut self) -> Option<()> {
        let n = usize::try_from(self.i32()?).ok()?;
        self.take(n).map(|_| ())
    }
}

/// One atom as the form gives it.
#[derive(Clone, Copy, Default)]
pub(crate) struct Atom {
    pub(crate) anum: u8,
    aromatic: bool,
    charge: i8,
    hyb: u8,
    explicit_hs: u8,
    explicit_valence: u8,
    implicit_valence: u8,
    radicals: u8,
    isotope: u32,
}

fn read_atom(b: &mut Bytes<'_>) -> Option<Atom> {
    let anum = b.u8()?;
    let flags = b.u8()?;
    // coordinates, a query, a map number, a dummy label, residue information: not ours
    if flags & 0b1001_1110 != 0 {
        return None;
    }
    let props = b.u32()?;
    // bit 0 (a mass difference) is an old form's; bits above 8 are unknown
    if props & !0x1FE != 0 {
        return None;
    }
    let has = |bit: u32| props & (1 << bit) != 0;
    let mut atom = Atom {
        anum,
        aromatic: flags & 0x40 != 0,
        hyb: SP3,
        ..Atom::default()
    };
    if has(1) {
        atom.charge = b.i8()?;
    }
    if has(2) {
        b.small()?; // the chiral tag: not part of the record
    }
    if has(3) {
        atom.hyb = b.small()?;
    }
    if has(4) {
        atom.explicit_hs = b.small()?;
    }
    if has(5) {
        atom.explicit_valence = b.small()?;
    }
    if has(6) {
        atom.implicit_valence = b.small()?;
    }
    if has(7) {
        atom.radicals = b.small()?;
    }
    if has(8) {
        atom.isotope = b.u32()?;
    }
    Some(atom)
}

/// One bond: (begin, end, RDKit bond type, aromatic).
fn read_bond(b: &mut Bytes<'_>) -> Option<(u8, u8, u8, bool)> {
    let (begin, end, flags) = (b.u8()?, b.u8()?, b.u8()?);
    // a query or molfile end points: not ours
    if flags & 0b0001_0001 != 0 {
        return None;
    }
    let btype = if flags & 0x08 != 0 { b.small()? } else { 1 };
    if flags & 0x04 != 0 {
        b.small()?; // the bond direction
    }
    if flags & 0x02 != 0 {
        b.small()?; // the stereo kind, then its atoms
        let n = b.small()?;
        b.take(usize::from(n))?;
    }
    Some((begin, end, btype, flags & 0x40 != 0))
}

/// A molecule as its binary form gives it.
pub(crate) struct Molecule {
    pub(crate) atoms: Vec<Atom>,
    /// (begin, end, RDKit bond type, aromatic)
    pub(crate) bonds: Vec<(u8, u8, u8, bool)>,
    /// rings each atom is in
    pub(crate) nrings: Vec<u32>,
    /// each atom's smallest ring (0: none)
    min_ring: Vec<u8>,
    /// the atom pairs (lower first) bonded along a ring, sorted
    pub(crate) ring_pairs: Vec<(u8, u8)>,
}

impl Molecule {
    /// A molecule of atoms of atomic numbers `anums` (nothing else set), `bonds` (begin, end,
    /// RDKit bond type, aromatic), each atom in `nrings[a]` rings and the bonded pairs (lower
    /// first) in `ring_pairs` along a ring: what the pattern fingerprint's tests make.
    #[cfg(test)]
    pub(crate) fn for_test(
        anums: &[u8],
        bonds: Vec<(u8, u8, u8, bool)>,
        nrings: Vec<u32>,
        mut ring_pairs: Vec<(u8, u8)>,
    ) -> Molecule {
        ring_pairs.sort_unstable();
        Molecule {
            atoms: anums
                .iter()
                .map(|&anum| Atom {
                    anum,
                    aromatic: false,
                    charge: 0,
                    hyb: 0,
                    explicit_hs: 0,
                    explicit_valence: 0,
                    implicit_valence: 0,
                    radicals: 0,
                    isotope: 0,
                })
                .collect(),
            bonds,
            min_ring: vec![0; anums.len()],
            nrings,
            ring_pairs,
        }
    }

    /// The molecule with its atoms in `order` (new atom k is old atom `order[k]`; RDKit's
    /// `_smilesAtomOutputOrder` after `MolToSmiles`: the atoms as a parse of the SMILES written
    /// numbers them), its bonds kept in their order with their ends renumbered; None unless
    /// `order` is a permutation of the atoms.
    fn renumbered(self, order: &[usize]) -> Option<Molecule> {
        let n = self.atoms.len();
        if order.len() != n {
            return None;
        }
        let mut new_of = vec![usize::MAX; n];
        for (k, &old) in order.iter().enumerate() {
            if old >= n || new_of[old] != usize::MAX {
                return None;
            }
            new_of[old] = k;
        }
        // a molecule of more than 255 atoms is Parsed::Large: every index fits a u8
        let new = |a: u8| new_of[usize::from(a)] as u8;
        let mut ring_pairs: Vec<(u8, u8)> = self
            .ring_pairs
            .iter()
            .map(|&(a, b)| (new(a).min(new(b)), new(a).max(new(b))))
            .collect();
        ring_pairs.sort_unstable();
        Some(Molecule {
            atoms: order.iter().map(|&o| self.atoms[o]).collect(),
            bonds: self
                .bonds
                .iter()
                .map(|&(b, e, t, arom)| (new(b), new(e), t, arom))
                .collect(),
            nrings: order.iter().map(|&o| self.nrings[o]).collect(),
            min_ring: order.iter().map(|&o| self.min_ring[o]).collect(),
            ring_pairs,
        })
    }
}

/// What the binary form holds.
enum Parsed {
    /// more atoms or bonds than a record holds (255)
    Large,
    Molecule(Molecule),
}

/// The facts the substructure screen's features count (`features.py`'s `_facts_fast`):
/// per atom its key (RDKit atom invariant `atomic number % 128 << 1 | aromatic`, degree), per
/// bond its key (RDKit bond type, the invariants of its ends), and the H atoms on N and O
/// (RDKit's `CalcNumLipinskiHBD`: `GetTotalNumHs(includeNeighbors=True)` summed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// (invariant, degree) per atom
    pub atoms: Vec<(u8, u8)>,
    /// (bond type: 1, 2, 3 or 12, invariant of the begin atom, of the end atom) per bond
    pub bonds: Vec<(u8, u8, u8)>,
    /// H atoms on N and O
    pub nhoh: u32,
}

/// What one molecule's binary form gives the substructure index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Screen {
    /// the graph record
    pub record: Read,
    /// the facts the features count: None where the form is unknown, the molecule has no
    /// atom, more than 255 atoms or bonds, or a bond other than single, double, triple or
    /// aromatic (the caller computes them itself)
    pub facts: Option<Facts>,
    /// RDKit's pattern fingerprint ([`crate::pattern`]), packed: None where the form is
    /// unknown, the molecule larger than a record, or no patterns were given
    pub pattern: Option<Vec<u8>>,
}

/// The graph record, the screen's facts and (with `patterns`: RDKit's patterns and the
/// fingerprint's bits) the pattern fingerprint of one molecule's binary form.
pub fn screen_from_pickle(pickle: &[u8], patterns: Option<(&[Pattern], u32)>) -> Screen {
    screen_from_pickle_in(pickle, patterns, None)
}

/// As [`screen_from_pickle`], the molecule's atoms first put in `order` (new atom k is old atom
/// `order[k]`, see `Molecule::renumbered`): the record of the molecule as a parse of the SMILES
/// RDKit wrote from it numbers its atoms. An order that is not a permutation of the atoms gives
/// [`Read::Unknown`].
pub fn screen_from_pickle_in(
    pickle: &[u8],
    patterns: Option<(&[Pattern], u32)>,
    order: Option<&[usize]>,
) -> Screen {
    let parsed = match (parse(pickle), order) {
        (Some(Parsed::Molecule(m)), Some(order)) => m.renumbered(order).map(Parsed::Molecule),
        (parsed, _) => parsed,
    };
    match parsed {
        Some(Parsed::Large) => Screen {
            record: Read::Record(Vec::new()),
            facts: None,
            pattern: None,
        },
        Some(Parsed::Molecule(m)) => Screen {
            record: Read::Record(encode(&m)),
            facts: facts(&m),
            pattern: patterns.map(|(p, bits)| crate::pattern::fingerprint(&m, p, bits)),
        },
        None => Screen {
            record: Read::Unknown,
            facts: None,
            pattern: None,
        },
    }
}

fn facts(m: &Molecule) -> Option<Facts> {
    if m.atoms.is_empty() {
        return None;
    }
    let inv: Vec<u8> = m
        .atoms
        .iter()
        .map(|a| (a.anum % 128) << 1 | u8::from(a.aromatic))
        .collect();
    let mut degree = vec![0u8; m.atoms.len()];
    let mut h_nbrs = vec![0u32; m.atoms.len()];
    let mut bonds = Vec::with_capacity(m.bonds.len());
    for &(begin, end, btype, _) in &m.bonds {
        if !crate::graph::BOND_TYPES.contains(&btype) {
            return None;
        }
        let (i, j) = (usize::from(begin), usize::from(end));
        degree[i] += 1;
        degree[j] += 1;
        h_nbrs[i] += u32::from(m.atoms[j].anum == 1);
        h_nbrs[j] += u32::from(m.atoms[i].anum == 1);
        bonds.push((btype, inv[i], inv[j]));
    }
    let nhoh = m
        .atoms
        .iter()
        .zip(&h_nbrs)
        .filter(|(a, _)| a.anum == 7 || a.anum == 8)
        .map(|(a, &h)| u32::from(a.explicit_hs) + u32::from(a.implicit_valence) + h)
        .sum();
    Some(Facts {
        atoms: inv.into_iter().zip(degree).collect(),
        bonds,
        nhoh,
    })
}

fn parse(pickle: &[u8]) -> Option<Parsed> {
    let mut b = Bytes {
        data: pickle,
        at: 0,
    };
    if b.u32()? != ENDIAN_ID || b.i32()? != 0 {
        return None;
    }
    let (major, _minor, _patch) = (b.i32()?, b.i32()?, b.i32()?);
    if major != MAJOR {
        return None;
    }
    let (na, nb) = (b.i32()?, b.i32()?);
    let (Ok(na), Ok(nb)) = (usize::try_from(na), usize::try_from(nb)) else {
        return None;
    };
    if na > 255 || nb > 255 {
        return Some(Parsed::Large); // more than the record form holds (as graph_record)
    }
    b.u8()?; // the "coordinates may follow" flag of the whole molecule
    if b.u8()? != tag::BEGINATOM {
        return None;
    }
    let mut atoms = Vec::with_capacity(na);
    for _ in 0..na {
        atoms.push(read_atom(&mut b)?);
    }
    if b.u8()? != tag::BEGINBOND {
        return None;
    }
    let mut bonds = Vec::with_capacity(nb);
    for _ in 0..nb {
        let bond = read_bond(&mut b)?;
        if usize::from(bond.0) >= na || usize::from(bond.1) >= na {
            return None;
        }
        bonds.push(bond);
    }
    // the rings RDKit found (a molecule parsed from SMILES always has them)
    let mut t = b.u8()?;
    if !matches!(
        t,
        tag::BEGINSSSR | tag::BEGINSYMMSSSR | tag::BEGINFASTFIND | tag::BEGINFINDOTHERORUNKNOWN
    ) {
        return None;
    }
    let mut nrings = vec![0u32; na];
    let mut min_ring = vec![0u8; na];
    let mut ring_pairs: Vec<(u8, u8)> = Vec::new();
    let rings = b.u32()?;
    for _ in 0..rings {
        let size = b.u8()?;
        let ring = b.take(usize::from(size))?;
        for (k, &a) in ring.iter().enumerate() {
            let i = usize::from(a);
            if i >= na {
                return None;
            }
            nrings[i] += 1;
            if min_ring[i] == 0 || size < min_ring[i] {
                min_ring[i] = size;
            }
            // RDKit lists a ring's atoms in ring order: its bonds join neighbours in the list
            let next = ring[(k + 1) % ring.len()];
            ring_pairs.push((a.min(next), a.max(next)));
        }
    }
    ring_pairs.sort_unstable();
    // what follows the rings: conformers and property blocks are skipped; substance groups,
    // stereo groups and query data are not ours
    t = b.u8()?;
    loop {
        match t {
            tag::ENDMOL => break,
            tag::BEGINCONFS | tag::BEGINCONFS_DOUBLE => {
                b.skip_block()?;
                t = b.u8()?;
                if t == tag::BEGINCONFPROPS {
                    b.skip_block()?;
                    t = b.u8()?;
                }
            }
            tag::BEGINPROPS | tag::BEGINATOMPROPS | tag::BEGINBONDPROPS => {
                b.skip_block()?;
                if b.u8()? != tag::ENDPROPS {
                    return None;
                }
                t = b.u8()?;
            }
            _ => return None,
        }
    }
    if b.at != pickle.len() {
        return None;
    }
    Some(Parsed::Molecule(Molecule {
        atoms,
        bonds,
        nrings,
        min_ring,
        ring_pairs,
    }))
}

/// The record (layout in [`crate::graph`]), empty where `graph_record` gives an empty one.
fn encode(m: &Molecule) -> Vec<u8> {
    use crate::graph::{ATOM_BYTES, BOND_BYTES, BOND_TYPES};
    let (atoms, bonds, nrings, min_ring) = (&m.atoms, &m.bonds, &m.nrings, &m.min_ring);
    let mut out = Vec::with_capacity(2 + ATOM_BYTES * atoms.len() + BOND_BYTES * bonds.len());
    out.push(atoms.len() as u8);
    out.push(bonds.len() as u8);
    for (i, a) in atoms.iter().enumerate() {
        let hs = u16::from(a.explicit_hs) + u16::from(a.implicit_valence);
        let valence = u16::from(a.explicit_valence) + u16::from(a.implicit_valence);
        if a.isotope != 0 || a.radicals > 7 || hs > 255 || valence > 255 || nrings[i] > 255 {
            return Vec::new();
        }
        out.extend_from_slice(&[
            a.anum,
            a.charge as u8,
            hs as u8,
            nrings[i] as u8,
            min_ring[i],
            valence as u8,
            a.hyb,
            u8::from(a.aromatic) | a.radicals << 1,
        ]);
    }
    // bonds by their ends, lower atom first (`graph_record`'s order): the same record for any
    // order the molecule's bonds were made in
    let mut sorted = Vec::with_capacity(bonds.len());
    for &(begin, end, btype, aromatic) in bonds {
        if !BOND_TYPES.contains(&btype) {
            return Vec::new();
        }
        let ends = (begin.min(end), begin.max(end));
        let in_ring = m.ring_pairs.binary_search(&ends).is_ok();
        sorted.push([
            ends.0,
            ends.1,
            btype | u8::from(aromatic) << 5 | u8::from(in_ring) << 6,
        ]);
    }
    sorted.sort_unstable();
    out.extend(sorted.iter().flatten());
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// the benzoate anion's binary form (below)
    pub(crate) fn benzoate_pickle() -> Vec<u8> {
        hex(BENZOATE)
    }

    /// `Chem.MolFromSmiles("c1ccccc1C(=O)[O-]").ToBinary()` from RDKit 2026.09 (form 16.4)
    const BENZOATE: &str = "efbeadde000000001000000004000000000000000900000009000000800106406800000003030106406800000003030106406800000003030106406800000003030106406800000003030106402800000003040600280000000304080028000000030208202a000000ff03010b0001680c0102680c0203680c0304680c0405680c050620060728020608200500680c42010000000600010203040517040000000000000016";

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn renumbered_atoms_carry_their_properties_and_bonds() {
        let plain = screen_from_pickle(&hex(BENZOATE), None);
        // the carboxylate first (as `[O-]C(=O)c1ccccc1` numbers it), then the ring backwards
        let order = [8, 6, 7, 5, 4, 3, 2, 1, 0];
        let moved = screen_from_pickle_in(&hex(BENZOATE), None, Some(&order));
        let (Read::Record(a), Read::Record(b)) = (plain.record, moved.record) else {
            panic!("not read")
        };
        assert_eq!(&b[..2], &a[..2]);
        for (k, &old) in order.iter().enumerate() {
            assert_eq!(
                b[2 + 8 * k..2 + 8 * (k + 1)],
                a[2 + 8 * old..2 + 8 * (old + 1)]
            );
        }
        let bonds = &b[2 + 9 * 8..];
        // O- (0) to C (1), C (1) to O (2), C (1) to the ring's C (3)
        assert_eq!(&bonds[..9], &[0, 1, 1, 1, 2, 2, 1, 3, 1]);
        let pairs: Vec<(u8, u8)> = bonds.chunks(3).map(|c| (c[0], c[1])).collect();
        assert!(pairs.windows(2).all(|w| w[0] < w[1]) && pairs.iter().all(|p| p.0 < p.1));
        // the ring's bonds keep their flags: 3-4 is aromatic and in the ring
        assert_eq!(&bonds[9..12], &[3, 4, 12 | 1 << 5 | 1 << 6]);
        assert_eq!(moved.facts.expect("facts").atoms[0], (8 << 1, 1));
        // an order that is not a permutation of the atoms is not read
        for bad in [
            &[0, 1, 2][..],
            &[0, 0, 1, 2, 3, 4, 5, 6, 7],
            &[9, 1, 2, 3, 4, 5, 6, 7, 8],
        ] {
            let r = screen_from_pickle_in(&hex(BENZOATE), None, Some(bad)).record;
            assert_eq!(r, Read::Unknown);
        }
    }

    #[test]
    fn benzoate() {
        let Read::Record(rec) = screen_from_pickle(&hex(BENZOATE), None).record else {
            panic!("not read")
        };
        assert_eq!(&rec[..2], &[9, 9]);
        // the first ring carbon: C, no charge, 1 H, 1 ring, size 6, valence 4, SP2, aromatic
        assert_eq!(&rec[2..10], &[6, 0, 1, 1, 6, 4, 3, 1]);
        // the carboxylate O-: charge -1, no H, in no ring, valence 1, SP2
        assert_eq!(&rec[2 + 8 * 8..2 + 9 * 8], &[8, 0xff, 0, 0, 0, 1, 3, 0]);
        // bonds by their ends, lower atom first: 0-1, 0-5 (the ring's closure), 1-2, ... 6-8
        let bonds = &rec[2 + 9 * 8..];
        assert_eq!(&bonds[..3], &[0, 1, 12 | 1 << 5 | 1 << 6]); // aromatic ring bond
        assert_eq!(&bonds[3..6], &[0, 5, 12 | 1 << 5 | 1 << 6]); // the ring's closure
        assert_eq!(&bonds[3 * 7..3 * 8], &[6, 7, 2]); // C=O, not in a ring
        assert_eq!(&bonds[3 * 8..], &[6, 8, 1]); // C-O-
        let screen = screen_from_pickle(&hex(BENZOATE), None);
        assert_eq!(screen.pattern, None);
        let facts = screen.facts.expect("facts");
        // aromatic C of degree 2, the ring C bearing the carboxylate (degree 3), the O-
        assert_eq!(facts.atoms[0], (6 << 1 | 1, 2));
        assert_eq!(facts.atoms[5], (6 << 1 | 1, 3));
        assert_eq!(facts.atoms[8], (8 << 1, 1));
        assert_eq!(facts.bonds[6], (2, 6 << 1, 8 << 1)); // C=O
        assert_eq!(facts.nhoh, 0);
    }

    #[test]
    fn anything_else_is_unknown() {
        let record_from_pickle = |p: &[u8]| screen_from_pickle(p, None).record;
        let good = hex(BENZOATE);
        // every truncation, a trailing byte, another major version
        for n in 0..good.len() {
            assert_eq!(record_from_pickle(&good[..n]), Read::Unknown, "{n} bytes");
        }
        let mut longer = good.clone();
        longer.push(0);
        assert_eq!(record_from_pickle(&longer), Read::Unknown);
        let mut other = good.clone();
        other[8] = 17;
        assert_eq!(record_from_pickle(&other), Read::Unknown);
        // an atom with coordinates
        let mut coords = good;
        coords[31] |= 0x80;
        assert_eq!(record_from_pickle(&coords), Read::Unknown);
    }
}
