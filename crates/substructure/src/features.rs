//! A molecule's whole screening row from RDKit's binary form: its pattern fingerprint
//! ([`crate::pattern`]), its feature bits ("count of X >= k", counted from its facts
//! ([`crate::pickle::Facts`]) with a [`FeatureTable`]) and the "parses" bit, with its graph
//! record beside: what ingest's workers compute for every stored molecule, in one call.
//!
//! The counters' meaning lives in the Python vocabulary (`python/molsift/substructure/
//! features.py`, which also reads queries): it hands this side, once per process, which
//! counters an atom of each (invariant, degree) counts for, and a bond of each type and end
//! invariants, as bit sets of counters. The counts and thresholds are those of the vocabulary's
//! own `_from_keys`; the Python side checks, on its probe molecules, that the rows made here
//! equal its own before it uses them.

use crate::graph::BOND_TYPES;
use crate::pattern::Pattern;
use crate::pickle::{screen_from_pickle_in, Facts, Read};

/// Counters a table can hold (bits of a `u128`).
pub const MAX_COUNTERS: usize = 128;

/// Which counters each atom and bond counts for, and the feature bits' thresholds: built by the
/// caller, then [`FeatureTable::checked`].
#[derive(Debug, Clone)]
pub struct FeatureTable {
    /// per atom invariant (element << 1 | aromatic, 256 entries): the atom counters its element
    /// and flag fit
    pub atom_inv: Vec<u128>,
    /// per degree (256 entries): the atom counters it fits
    pub atom_deg: Vec<u128>,
    /// per bond type (in [`BOND_TYPES`] order): the bond counters of that type
    pub bond_type: [u128; 4],
    /// per atom invariant (256 entries): the bond counters whose first (second) end it fits
    pub end1: Vec<u128>,
    #[allow(missing_docs)]
    pub end2: Vec<u128>,
    /// the counter of H atoms on N and O
    pub nhoh: usize,
    /// per feature bit: (its counter, the least count that sets it)
    pub bits: Vec<(u8, u32)>,
}

impl FeatureTable {
    /// The table, or why it cannot be one (a table not of 256 entries, a counter past
    /// [`MAX_COUNTERS`]).
    pub fn checked(self) -> Result<Self, String> {
        for (name, t) in [
            ("atom_inv", &self.atom_inv),
            ("atom_deg", &self.atom_deg),
            ("end1", &self.end1),
            ("end2", &self.end2),
        ] {
            if t.len() != 256 {
                return Err(format!("{name} has {} entries, not 256", t.len()));
            }
        }
        let far = |c: usize| c >= MAX_COUNTERS;
        if far(self.nhoh) || self.bits.iter().any(|&(c, _)| far(usize::from(c))) {
            return Err(format!("a counter past the table's {MAX_COUNTERS}"));
        }
        Ok(self)
    }

    /// Each counter's count for a molecule's facts.
    pub fn counts(&self, facts: &Facts) -> [u32; MAX_COUNTERS] {
        let mut counts = [0u32; MAX_COUNTERS];
        let mut add = |mut set: u128| {
            while set != 0 {
                counts[set.trailing_zeros() as usize] += 1;
                set &= set - 1;
            }
        };
        for &(inv, deg) in &facts.atoms {
            add(self.atom_inv[usize::from(inv)] & self.atom_deg[usize::from(deg)]);
        }
        for &(btype, a, b) in &facts.bonds {
            let Some(t) = BOND_TYPES.iter().position(|&x| x == btype) else {
                continue; // facts hold only these types (pickle::facts)
            };
            let (a, b) = (usize::from(a), usize::from(b));
            let ends = (self.end1[a] & self.end2[b]) | (self.end1[b] & self.end2[a]);
            add(self.bond_type[t] & ends);
        }
        counts[self.nhoh] += facts.nhoh;
        counts
    }

    /// Sets the molecule's feature bits in `row` (bit i in word i / 64), feature bit b at
    /// `offset + b`.
    pub fn set_bits(&self, facts: &Facts, row: &mut [u64], offset: usize) {
        let counts = self.counts(facts);
        for (b, &(c, least)) in self.bits.iter().enumerate() {
            if counts[usize::from(c)] >= least {
                let bit = offset + b;
                row[bit / 64] |= 1 << (bit % 64);
            }
        }
    }
}

/// Where a row's parts go: the pattern fingerprint's bytes from bit 0, the feature bits from
/// `features`, the "parses" bit at `ok`.
#[derive(Debug, Clone, Copy)]
pub struct RowLayout {
    /// the pattern fingerprint's bits
    pub pattern_bits: u32,
    /// the first feature bit
    pub features: usize,
    /// the bit every parsed molecule has
    pub ok: usize,
}

/// One molecule's screening row, written into `row` (zeroed by the caller), and its graph
/// record, from its binary form; None where the reader does not give every part (an unknown
/// form, a molecule without facts or larger than a record): the caller computes that molecule
/// itself, and `row` is left as it was.
///
/// With `order` the molecule's atoms are first put in that order (new atom k is old atom
/// `order[k]`: RDKit's `_smilesAtomOutputOrder`), so that the record is that of the molecule as
/// a parse of its canonical SMILES numbers its atoms; the row does not depend on the order.
pub fn screen_row(
    pickle: &[u8],
    order: Option<&[usize]>,
    patterns: &[Pattern],
    table: &FeatureTable,
    layout: RowLayout,
    row: &mut [u64],
) -> Option<Vec<u8>> {
    let s = screen_from_pickle_in(pickle, Some((patterns, layout.pattern_bits)), order);
    let (Read::Record(record), Some(facts), Some(pattern)) = (s.record, s.facts, s.pattern) else {
        return None;
    };
    for (j, &byte) in pattern.iter().enumerate() {
        row[j / 8] |= u64::from(byte) << (8 * (j % 8));
    }
    table.set_bits(&facts, row, layout.features);
    row[layout.ok / 64] |= 1 << (layout.ok % 64);
    Some(record)
}

/// An atom order as RDKit writes `_smilesAtomOutputOrder` (`[2,0,1,]`); None if it is not
/// one.
pub fn parse_atom_order(text: &str) -> Option<Vec<usize>> {
    let inner = text.strip_prefix('[')?.strip_suffix(']')?;
    inner
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counters: 0 "C atoms" (invariant 12), 1 "degree >= 2", 2 "C=O bonds"; bits: C >= 1,
    /// C >= 2, degree >= 2 atoms >= 1, C=O >= 1, counter 3 (N-O H atoms) >= 1.
    fn table() -> FeatureTable {
        let mut atom_inv = vec![0u128; 256];
        atom_inv[6 << 1] = 0b011;
        atom_inv[8 << 1] = 0b010;
        let atom_deg: Vec<u128> = (0..256)
            .map(|d| if d >= 2 { 0b011 } else { 0b001 })
            .collect();
        let mut end1 = vec![0u128; 256];
        let mut end2 = vec![0u128; 256];
        end1[6 << 1] = 0b100;
        end2[8 << 1] = 0b100;
        let bits = vec![(0, 1), (0, 2), (1, 1), (2, 1), (3, 1)];
        FeatureTable {
            atom_inv,
            atom_deg,
            bond_type: [0, 0b100, 0, 0],
            end1,
            end2,
            nhoh: 3,
            bits,
        }
        .checked()
        .unwrap()
    }

    #[test]
    fn counts_atoms_bonds_and_h_on_n_and_o() {
        // acetic acid's heavy atoms: C C(=O) O, with one H on O
        let facts = Facts {
            atoms: vec![(12, 1), (12, 3), (16, 1), (16, 1)],
            bonds: vec![(1, 12, 12), (2, 12, 16), (1, 12, 16)],
            nhoh: 1,
        };
        let t = table();
        let c = t.counts(&facts);
        assert_eq!(&c[..4], &[2, 1, 1, 1]);
        let mut row = [0u64; 2];
        t.set_bits(&facts, &mut row, 60);
        // bits 60 + (0, 1, 2, 3, 4): C >= 1, C >= 2, degree >= 2, C=O, H on N/O
        assert_eq!(row, [0b1111 << 60, 0b1]);
        // the bond written the other way round counts the same
        let flipped = Facts {
            bonds: vec![(2, 16, 12)],
            ..facts.clone()
        };
        assert_eq!(t.counts(&flipped)[2], 1);
        // a single C-O bond is not a C=O bond
        let single = Facts {
            bonds: vec![(1, 16, 12)],
            ..facts
        };
        assert_eq!(t.counts(&single)[2], 0);
    }

    #[test]
    fn reads_rdkit_atom_orders() {
        assert_eq!(parse_atom_order("[2,0,1,]"), Some(vec![2, 0, 1]));
        assert_eq!(parse_atom_order("[]"), Some(vec![]));
        assert_eq!(parse_atom_order("2,0,1"), None);
        assert_eq!(parse_atom_order("[2,x,]"), None);
    }

    #[test]
    fn refuses_tables_of_the_wrong_shape() {
        let short = FeatureTable {
            atom_inv: vec![0; 255],
            ..table()
        };
        assert!(short.checked().is_err());
        let far = FeatureTable {
            nhoh: 128,
            ..table()
        };
        assert!(far.checked().is_err());
        let far_bit = FeatureTable {
            bits: vec![(128, 1)],
            ..table()
        };
        assert!(far_bit.checked().is_err());
    }

    #[test]
    fn an_unknown_form_gives_no_row() {
        let mut row = [7u64; 2];
        let layout = RowLayout {
            pattern_bits: 64,
            features: 64,
            ok: 127,
        };
        assert_eq!(
            screen_row(b"not a pickle", None, &[], &table(), layout, &mut row),
            None
        );
        assert_eq!(row, [7, 7]);
    }
}
