//! [`skeleton_of_smiles`]: the skeleton of a SMILES read from its topology alone (atoms, bonds,
//! branches, ring closures, dots), without a chemistry toolkit: a store's canonical SMILES
//! become skeletons at millions per second. [`skeleton_and_elements`] also gives each heavy
//! atom's element (as an [`element_code`]), which the element changes of a hit need
//! (`crate::mapping`). Hydrogens (`[H]`, `[2H]`, ...) and dummy atoms
//! (`*`) are not heavy atoms (RDKit's definition: atomic number > 1) and are left out with their
//! bonds. Chemistry is not checked: the SMILES are expected to be ones RDKit wrote or read.

use crate::skeleton::Skeleton;
use crate::AnalogError;

/// The skeleton of `smiles`; an error naming the byte offset for text that is not SMILES
/// (an unclosed bracket, branch or ring, an unknown character).
pub fn skeleton_of_smiles(smiles: &str) -> Result<Skeleton, AnalogError> {
    parse(smiles, None)
}

/// The skeleton of `smiles` and the element of each of its atoms ([`element_code`]: aromatic
/// `c` and aliphatic `C` are the same element).
pub fn skeleton_and_elements(smiles: &str) -> Result<(Skeleton, Vec<u16>), AnalogError> {
    let mut elements = Vec::new();
    let g = parse(smiles, Some(&mut elements))?;
    Ok((g, elements))
}

/// An element symbol as a number: its first letter upper-cased in the high byte, its second
/// letter (lower case) or 0 in the low byte ("C" and "c" give the same code, "Cl" another).
pub fn element_code(symbol: &str) -> u16 {
    let b = symbol.as_bytes();
    let first = b.first().map_or(0, u8::to_ascii_uppercase);
    let second = b.get(1).map_or(0, u8::to_ascii_lowercase);
    u16::from(first) << 8 | u16::from(second)
}

/// Two-letter aromatic symbols of bracket atoms (`[se]`, `[as]`, `[te]`); every other
/// lower-case symbol is one letter.
const AROMATIC_TWO: [&[u8; 2]; 3] = [b"se", b"as", b"te"];

fn parse(smiles: &str, mut elements: Option<&mut Vec<u16>>) -> Result<Skeleton, AnalogError> {
    let b = smiles.as_bytes();
    let bad = |at: usize, why: &str| {
        AnalogError::Invalid(format!("SMILES {smiles:?} at byte {at}: {why}"))
    };
    // atom index (heavy atoms numbered in order) or None for a hydrogen or dummy atom
    let mut atoms: Vec<Option<u32>> = Vec::new();
    let mut heavy = 0u32;
    let mut bonds: Vec<(u32, u32)> = Vec::new();
    let mut prev: Option<usize> = None;
    let mut branches: Vec<Option<usize>> = Vec::new();
    let mut rings: [Option<usize>; 100] = [None; 100];
    let mut open_rings = 0usize;
    let mut i = 0;
    let mut add_atom = |is_heavy: bool,
                        prev: &mut Option<usize>,
                        atoms: &mut Vec<Option<u32>>,
                        bonds: &mut Vec<(u32, u32)>| {
        let id = if is_heavy {
            heavy += 1;
            Some(heavy - 1)
        } else {
            None
        };
        atoms.push(id);
        if let (Some(p), Some(me)) = (*prev, id) {
            if let Some(q) = atoms[p] {
                bonds.push((q, me));
            }
        }
        *prev = Some(atoms.len() - 1);
    };
    while i < b.len() {
        let c = b[i];
        match c {
            b'[' => {
                let end = b[i..]
                    .iter()
                    .position(|&x| x == b']')
                    .ok_or_else(|| bad(i, "unclosed bracket atom"))?
                    + i;
                let mut k = i + 1;
                while k < end && b[k].is_ascii_digit() {
                    k += 1; // isotope
                }
                if k >= end {
                    return Err(bad(i, "bracket atom without an element"));
                }
                let hydrogen = b[k] == b'H' && !(k + 1 < end && b[k + 1].is_ascii_lowercase());
                let dummy = b[k] == b'*';
                if !hydrogen && !dummy {
                    if let Some(out) = elements.as_deref_mut() {
                        // a capital and its lower-case letter, or an aromatic symbol
                        let two = k + 1 < end
                            && b[k + 1].is_ascii_lowercase()
                            && (b[k].is_ascii_uppercase()
                                || AROMATIC_TWO.contains(&&[b[k], b[k + 1]]));
                        let len = if two { 2 } else { 1 };
                        out.push(element_code(&smiles[k..k + len]));
                    }
                }
                add_atom(!hydrogen && !dummy, &mut prev, &mut atoms, &mut bonds);
                i = end + 1;
            }
            b'B' | b'C' | b'N' | b'O' | b'P' | b'S' | b'F' | b'I' | b'b' | b'c' | b'n' | b'o'
            | b's' | b'p' => {
                add_atom(true, &mut prev, &mut atoms, &mut bonds);
                let len = if (c == b'C' && b.get(i + 1) == Some(&b'l'))
                    || (c == b'B' && b.get(i + 1) == Some(&b'r'))
                {
                    2
                } else {
                    1
                };
                if let Some(out) = elements.as_deref_mut() {
                    out.push(element_code(&smiles[i..i + len]));
                }
                i += len;
            }
            b'*' => {
                add_atom(false, &mut prev, &mut atoms, &mut bonds);
                i += 1;
            }
            b'0'..=b'9' | b'%' => {
                let (num, len) = if c == b'%' {
                    if i + 2 >= b.len() || !b[i + 1].is_ascii_digit() || !b[i + 2].is_ascii_digit()
                    {
                        return Err(bad(i, "'%' not followed by two digits"));
                    }
                    (((b[i + 1] - b'0') * 10 + (b[i + 2] - b'0')) as usize, 3)
                } else {
                    ((c - b'0') as usize, 1)
                };
                let here = prev.ok_or_else(|| bad(i, "ring closure before any atom"))?;
                match rings[num].take() {
                    Some(other) => {
                        open_rings -= 1;
                        if let (Some(x), Some(y)) = (atoms[other], atoms[here]) {
                            bonds.push((x, y));
                        }
                    }
                    None => {
                        rings[num] = Some(here);
                        open_rings += 1;
                    }
                }
                i += len;
            }
            b'(' => {
                branches.push(prev);
                i += 1;
            }
            b')' => {
                prev = branches.pop().ok_or_else(|| bad(i, "')' without '('"))?;
                i += 1;
            }
            b'.' => {
                prev = None;
                i += 1;
            }
            // bond symbols, dative bonds (`->`, `<-`) included: the graph has one kind of bond
            b'-' | b'=' | b'#' | b'$' | b':' | b'/' | b'\\' | b'>' | b'<' => i += 1,
            _ => return Err(bad(i, &format!("unexpected character {:?}", c as char))),
        }
    }
    if !branches.is_empty() {
        return Err(bad(b.len(), "unclosed branch"));
    }
    if open_rings > 0 {
        return Err(bad(b.len(), "unclosed ring"));
    }
    Skeleton::new(heavy as usize, &bonds)
}
