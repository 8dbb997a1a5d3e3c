//! A query compiled for the graph matcher: each atom and bond of an RDKit query molecule as an
//! expression over the properties of [`crate::graph::MolGraph`] (the Python side reads RDKit's
//! query trees and writes this as JSON), with the semantics of RDKit's query functions
//! (`QueryOps.h`): an equality leaf compares one property with a value, `AtomInNRings` and
//! `AtomRingBondCount` with a negative value mean "not zero" (RDKit's `AtomRingQuery`),
//! a range leaf bounds a property on both sides (inclusive), and a recursive leaf `rec k` asks whether recursive pattern `k` matches with its first atom
//! on the atom. Recursive patterns are listed once, flat, at the top level.

use serde::Deserialize;

use crate::graph::MolGraph;
use crate::SubstructureError;

/// An atom property an equality leaf reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AtomField {
    /// `GetAtomicNum`
    AtomicNum,
    /// atomic number + 1000 if aromatic
    AtomType,
    /// 1 if aromatic
    Aromatic,
    /// 1 if not aromatic
    Aliphatic,
    /// formal charge
    Charge,
    /// minus the formal charge
    NegCharge,
    /// `GetTotalNumHs(True)`
    TotalHs,
    /// `GetTotalNumHs(False)`
    ImplicitHs,
    /// 1 if `GetTotalNumHs(False) > 0`
    HasImplicitH,
    /// `GetDegree`
    Degree,
    /// `GetTotalDegree`
    TotalDegree,
    /// isotope (always 0 in a described molecule)
    Isotope,
    /// radical electrons
    Radicals,
    /// SSSR rings the atom is in (negative value: in any)
    NRings,
    /// 1 if in a ring
    InRing,
    /// smallest ring size (0: none)
    MinRingSize,
    /// ring bonds at the atom (negative value: any)
    RingBondCount,
    /// 1 if it has a ring bond
    HasRingBond,
    /// total valence
    TotalValence,
    /// hybridization value
    Hybridization,
    /// `GetTotalDegree() < GetTotalValence()`
    Unsaturated,
}

/// An atom expression.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AtomExpr {
    /// any atom
    True,
    /// negation
    Not(Box<AtomExpr>),
    /// all of
    And(Vec<AtomExpr>),
    /// any of
    Or(Vec<AtomExpr>),
    /// property == value (with the ring-query rule for negative values)
    Eq(AtomField, i32),
    /// lower <= property <= upper (SMARTS ranges `{a-b}`, `{a-}`, `{-b}`: RDKit's range,
    /// less-equal and greater-equal queries)
    Range(AtomField, i32, i32),
    /// recursive pattern `k` matches here
    Rec(usize),
}

/// A bond property.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BondField {
    /// RDKit bond type value
    Order,
    /// 1 if single or aromatic
    SingleOrAromatic,
    /// 1 if double or aromatic
    DoubleOrAromatic,
    /// 1 if single or double
    SingleOrDouble,
    /// 1 if single, double or aromatic
    SingleOrDoubleOrAromatic,
    /// 1 if in a ring
    InRing,
    /// 1 if aromatic (the bond's flag)
    IsAromatic,
}

/// A bond expression.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BondExpr {
    /// any bond
    True,
    /// negation
    Not(Box<BondExpr>),
    /// all of
    And(Vec<BondExpr>),
    /// any of
    Or(Vec<BondExpr>),
    /// property == value
    Eq(BondField, i32),
}

/// A query bond.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct QueryBond {
    /// first atom
    pub a: usize,
    /// second atom
    pub b: usize,
    /// what the bond must be
    pub expr: BondExpr,
}

/// One pattern: atoms and bonds.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Pattern {
    /// atom expressions
    pub atoms: Vec<AtomExpr>,
    /// bonds
    pub bonds: Vec<QueryBond>,
}

/// A compiled query: the pattern and the recursive patterns its expressions name.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Program {
    /// the query
    pub pattern: Pattern,
    /// recursive patterns (`rec k` is `recursive[k]`, matched with its atom 0 on the atom)
    #[serde(default)]
    pub recursive: Vec<Pattern>,
}

impl Program {
    /// Parses and checks a program written as JSON.
    pub fn from_json(text: &str) -> Result<Program, SubstructureError> {
        let p: Program = serde_json::from_str(text)
            .map_err(|e| SubstructureError::Invalid(format!("bad query program: {e}")))?;
        let nrec = p.recursive.len();
        for pat in std::iter::once(&p.pattern).chain(&p.recursive) {
            let n = pat.atoms.len();
            if n == 0 || n > 255 {
                return Err(SubstructureError::Invalid(format!(
                    "a query pattern of {n} atoms (1 to 255)"
                )));
            }
            for b in &pat.bonds {
                if b.a >= n || b.b >= n || b.a == b.b {
                    return Err(SubstructureError::Invalid(format!(
                        "query bond {}-{} in {n} atoms",
                        b.a, b.b
                    )));
                }
            }
            for e in &pat.atoms {
                check_rec(e, nrec)?;
            }
        }
        Ok(p)
    }
}

fn check_rec(e: &AtomExpr, nrec: usize) -> Result<(), SubstructureError> {
    match e {
        AtomExpr::Rec(k) if *k >= nrec => Err(SubstructureError::Invalid(format!(
            "recursive pattern {k} of {nrec}"
        ))),
        AtomExpr::Not(x) => check_rec(x, nrec),
        AtomExpr::And(v) | AtomExpr::Or(v) => v.iter().try_for_each(|x| check_rec(x, nrec)),
        _ => Ok(()),
    }
}

/// The value of `f` for atom `i` of `m`.
#[inline]
pub fn atom_value(m: &MolGraph, f: AtomField, i: usize) -> i32 {
    let arom = i32::from(m.arom[i]);
    match f {
        AtomField::AtomicNum => i32::from(m.anum[i]),
        AtomField::AtomType => i32::from(m.anum[i]) + 1000 * arom,
        AtomField::Aromatic => arom,
        AtomField::Aliphatic => 1 - arom,
        AtomField::Charge => i32::from(m.charge[i]),
        AtomField::NegCharge => -i32::from(m.charge[i]),
        AtomField::TotalHs => i32::from(m.hs[i]) + i32::from(m.h_nbrs[i]),
        AtomField::ImplicitHs => i32::from(m.hs[i]),
        AtomField::HasImplicitH => i32::from(m.hs[i] > 0),
        AtomField::Degree => i32::from(m.degree[i]),
        AtomField::TotalDegree => i32::from(m.degree[i]) + i32::from(m.hs[i]),
        AtomField::Isotope => 0,
        AtomField::Radicals => i32::from(m.radicals[i]),
        AtomField::NRings => i32::from(m.nrings[i]),
        AtomField::InRing => i32::from(m.nrings[i] > 0),
        AtomField::MinRingSize => i32::from(m.min_ring[i]),
        AtomField::RingBondCount => i32::from(m.ring_bonds[i]),
        AtomField::HasRingBond => i32::from(m.ring_bonds[i] > 0),
        AtomField::TotalValence => i32::from(m.valence[i]),
        AtomField::Hybridization => i32::from(m.hyb[i]),
        AtomField::Unsaturated => {
            i32::from(i32::from(m.degree[i]) + i32::from(m.hs[i]) < i32::from(m.valence[i]))
        }
    }
}

/// Whether atom leaf `f == v` holds for atom `i`.
#[inline]
pub fn atom_leaf(m: &MolGraph, f: AtomField, v: i32, i: usize) -> bool {
    let x = atom_value(m, f, i);
    if v < 0 && matches!(f, AtomField::NRings | AtomField::RingBondCount) {
        x != 0
    } else {
        x == v
    }
}

/// Whether bond expression `e` holds for bond `k` of `m`.
pub fn bond_ok(m: &MolGraph, e: &BondExpr, k: usize) -> bool {
    match e {
        BondExpr::True => true,
        BondExpr::Not(x) => !bond_ok(m, x, k),
        BondExpr::And(v) => v.iter().all(|x| bond_ok(m, x, k)),
        BondExpr::Or(v) => v.iter().any(|x| bond_ok(m, x, k)),
        BondExpr::Eq(f, v) => {
            let t = m.btype[k];
            let x = match f {
                BondField::Order => i32::from(t),
                BondField::SingleOrAromatic => i32::from(t == 1 || t == 12),
                BondField::DoubleOrAromatic => i32::from(t == 2 || t == 12),
                BondField::SingleOrDouble => i32::from(t == 1 || t == 2),
                BondField::SingleOrDoubleOrAromatic => i32::from(t == 1 || t == 2 || t == 12),
                BondField::InRing => i32::from(m.bring[k]),
                BondField::IsAromatic => i32::from(m.barom[k]),
            };
            x == *v
        }
    }
}
