//! A cheap isomorphism-invariant hash of a skeleton given as a bond list ([`wl_hash`]): three
//! rounds of colour refinement (Weisfeiler-Leman) from the degrees, each atom's new colour
//! mixing its own with the sum of its neighbours' (a multiset, so the atom order does not
//! matter), and the graph's hash the sum of its atoms' final colours with the atom and bond
//! counts. Isomorphic graphs always hash alike; different graphs usually differ. The walk uses
//! it as a filter only: a graph whose hash no library skeleton has cannot be a library
//! skeleton, so its canonical form (about 30 times the cost) is never computed; a graph that
//! passes is still canonicalized and looked up by its exact key.

use crate::edits::{Edit, Kind};
use crate::skeleton::Skeleton;

/// Refinement rounds.
pub const ROUNDS: u32 = 3;

/// splitmix64's finalizer (also `crate::mapping`'s colour mix).
#[inline]
pub(crate) fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Reusable buffers of [`wl_hash`].
#[derive(Debug, Default, Clone)]
pub struct WlScratch {
    colour: Vec<u64>,
    sum: Vec<u64>,
    sent: Vec<u64>,
}

/// The hash of the graph of `atoms` atoms and `bonds` (pairs of atom indices below `atoms`).
pub fn wl_hash(atoms: usize, bonds: &[(u32, u32)], s: &mut WlScratch) -> u64 {
    s.colour.clear();
    s.colour.resize(atoms, 0);
    for &(i, j) in bonds {
        s.colour[i as usize] += 1;
        s.colour[j as usize] += 1;
    }
    for round in 0..ROUNDS {
        let salt = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(u64::from(round) + 1);
        // what each atom sends its neighbours, mixed once per atom
        s.sent.clear();
        s.sent.extend(s.colour.iter().map(|&c| mix(c ^ salt)));
        s.sum.clear();
        s.sum.resize(atoms, 0);
        for &(i, j) in bonds {
            let (i, j) = (i as usize, j as usize);
            s.sum[i] = s.sum[i].wrapping_add(s.sent[j]);
            s.sum[j] = s.sum[j].wrapping_add(s.sent[i]);
        }
        for ((c, &t), &own) in s.colour.iter_mut().zip(&s.sum).zip(&s.sent) {
            *c = mix(own.rotate_left(17) ^ t);
        }
    }
    let mut h = mix(((atoms as u64) << 32) ^ bonds.len() as u64);
    for &c in &s.colour {
        h = h.wrapping_add(mix(c ^ 0x5851_f42d_4c95_7f2d));
    }
    h
}

/// A graph of at most 63 atoms of at most four neighbours each as a neighbour table, to hash it
/// ([`WlTable::hash`]) and each of its single edits ([`WlTable::hash_after`]) without building
/// their bond lists: the same values as [`wl_hash`] of the bond lists [`crate::edits::apply`]
/// gives (an atom deleted stays a hole here, a new atom takes the next slot: the hash does not
/// depend on the numbering). A walk hashes every edit at its last distance and canonicalizes
/// few of them; what the table cannot hold goes through [`wl_hash`].
#[derive(Debug, Clone)]
pub struct WlTable {
    /// each atom's neighbours, [`NONE`] in the places left
    nbr: [[u8; 4]; 64],
    deg: [u8; 64],
    /// atoms in use (slots `0..slots`)
    slots: usize,
    bonds: usize,
}

/// An empty place in [`WlTable`]'s neighbour table (`sent[NONE]` is zero).
const NONE: u8 = 64;

impl WlTable {
    /// The table of `g`, or `None` when it has more than 63 atoms (an edit may add one) or an
    /// atom with more than four neighbours.
    pub fn new(g: &Skeleton) -> Option<WlTable> {
        let n = g.atoms();
        if n > 63 {
            return None;
        }
        let mut nbr = [[NONE; 4]; 64];
        let mut deg = [0u8; 64];
        for a in 0..n {
            let list = g.neighbours(a);
            if list.len() > 4 {
                return None;
            }
            for (k, &b) in list.iter().enumerate() {
                nbr[a][k] = b as u8;
            }
            deg[a] = list.len() as u8;
        }
        Some(WlTable {
            nbr,
            deg,
            slots: n,
            bonds: g.bonds(),
        })
    }

    /// [`wl_hash`] of the graph.
    pub fn hash(&self) -> u64 {
        wl_table(
            &self.nbr,
            &self.deg,
            self.slots,
            low_bits(self.slots),
            self.bonds,
        )
    }

    /// [`wl_hash`] of the graph `e` makes of this one; `None` when the edit gives an atom a
    /// fifth neighbour.
    pub fn hash_after(&self, e: Edit) -> Option<u64> {
        let mut nbr = self.nbr;
        let mut deg = self.deg;
        let mut present = low_bits(self.slots);
        let mut slots = self.slots;
        let mut bonds = self.bonds;
        let (a, b) = (e.a as usize, e.b as usize);
        let new = self.slots;
        let swap = |nbr: &mut [[u8; 4]; 64], x: usize, from: u8, to: u8| {
            let row = &mut nbr[x];
            for v in row.iter_mut() {
                if *v == from {
                    *v = to;
                    return;
                }
            }
        };
        // adds y to x's neighbours: false when x has four already
        let add = |nbr: &mut [[u8; 4]; 64], deg: &mut [u8; 64], x: usize, y: usize| {
            if deg[x] >= 4 {
                return false;
            }
            swap(nbr, x, NONE, y as u8);
            deg[x] += 1;
            true
        };
        let remove = |nbr: &mut [[u8; 4]; 64], deg: &mut [u8; 64], x: usize, y: usize| {
            swap(nbr, x, y as u8, NONE);
            deg[x] -= 1;
        };
        match e.kind {
            Kind::Tdn | Kind::Ldn => {
                let row = nbr[a];
                for &x in row.iter().filter(|&&x| x != NONE) {
                    remove(&mut nbr, &mut deg, usize::from(x), a);
                }
                bonds -= usize::from(deg[a]);
                deg[a] = 0;
                nbr[a] = [NONE; 4];
                present &= !(1 << a);
                if e.kind == Kind::Ldn {
                    let mut two = row.iter().filter(|&&x| x != NONE);
                    let (x, y) = (usize::from(*two.next()?), usize::from(*two.next()?));
                    add(&mut nbr, &mut deg, x, y);
                    add(&mut nbr, &mut deg, y, x);
                    bonds += 1;
                }
            }
            Kind::Tup => {
                if !add(&mut nbr, &mut deg, a, new) {
                    return None;
                }
                nbr[new] = [a as u8, NONE, NONE, NONE];
                deg[new] = 1;
                present |= 1 << new;
                slots += 1;
                bonds += 1;
            }
            Kind::Rdn => {
                remove(&mut nbr, &mut deg, a, b);
                remove(&mut nbr, &mut deg, b, a);
                bonds -= 1;
            }
            Kind::Rup => {
                if deg[a] >= 4 || deg[b] >= 4 {
                    return None;
                }
                add(&mut nbr, &mut deg, a, b);
                add(&mut nbr, &mut deg, b, a);
                bonds += 1;
            }
            Kind::Lup => {
                swap(&mut nbr, a, b as u8, new as u8);
                swap(&mut nbr, b, a as u8, new as u8);
                nbr[new] = [a as u8, b as u8, NONE, NONE];
                deg[new] = 2;
                present |= 1 << new;
                slots += 1;
                bonds += 1;
            }
        }
        Some(wl_table(&nbr, &deg, slots, present, bonds))
    }
}

/// [`wl_hash`] of a graph given as a neighbour table (`slots` rows, [`NONE`] for an empty
/// place, `deg` the degrees) whose atoms are the bits of `present` (the other rows are holes
/// no row refers to): the same rounds, each atom's four places summed without a branch.
fn wl_table(nbr: &[[u8; 4]; 64], deg: &[u8; 64], slots: usize, present: u64, bonds: usize) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512dq") {
        // SAFETY: the CPU has AVX-512F and DQ.
        return unsafe { wl_table_avx512(nbr, deg, slots, present, bonds) };
    }
    wl_table_body(nbr, deg, slots, present, bonds)
}

/// [`wl_table_body`] compiled for AVX-512F/DQ, where its eight-lane loops become one vector
/// instruction per step (64-bit multiplies are AVX-512DQ's).
///
/// # Safety
/// The CPU must have AVX-512F and AVX-512DQ.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
unsafe fn wl_table_avx512(
    nbr: &[[u8; 4]; 64],
    deg: &[u8; 64],
    slots: usize,
    present: u64,
    bonds: usize,
) -> u64 {
    wl_table_body(nbr, deg, slots, present, bonds)
}

/// [`wl_table`]'s work, the mixes (most of it: two per atom and round) written eight lanes at a
/// time so that a vector unit takes them together.
#[inline(always)]
fn wl_table_body(
    nbr: &[[u8; 4]; 64],
    deg: &[u8; 64],
    slots: usize,
    present: u64,
    bonds: usize,
) -> u64 {
    let mut colour = [0u64; 64];
    // sent[NONE] stays zero: the chunks below write at most the first 64
    let mut sent = [0u64; 72];
    let mut sum = [0u64; 64];
    let chunks = slots.div_ceil(8);
    for i in 0..slots {
        colour[i] = u64::from(deg[i]);
    }
    for round in 0..ROUNDS {
        let salt = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(u64::from(round) + 1);
        for c in 0..chunks {
            let (from, to) = (&colour[8 * c..8 * c + 8], &mut sent[8 * c..8 * c + 8]);
            for l in 0..8 {
                to[l] = mix(from[l] ^ salt);
            }
        }
        for i in 0..slots {
            let [p, q, r, t] = nbr[i];
            sum[i] = sent[usize::from(p)]
                .wrapping_add(sent[usize::from(q)])
                .wrapping_add(sent[usize::from(r)])
                .wrapping_add(sent[usize::from(t)]);
        }
        for c in 0..chunks {
            let (own, t, to) = (
                &sent[8 * c..8 * c + 8],
                &sum[8 * c..8 * c + 8],
                &mut colour[8 * c..8 * c + 8],
            );
            for l in 0..8 {
                to[l] = mix(own[l].rotate_left(17) ^ t[l]);
            }
        }
    }
    let atoms = u64::from(present.count_ones());
    let mut acc = [0u64; 8];
    for c in 0..chunks {
        let from = &colour[8 * c..8 * c + 8];
        for l in 0..8 {
            let keep = 0u64.wrapping_sub((present >> (8 * c + l)) & 1);
            acc[l] = acc[l].wrapping_add(mix(from[l] ^ 0x5851_f42d_4c95_7f2d) & keep);
        }
    }
    acc.iter()
        .fold(mix((atoms << 32) ^ bonds as u64), |h, &x| h.wrapping_add(x))
}

/// Bits `0..n` set (`n <= 64`).
fn low_bits(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renumbering_keeps_the_hash_and_a_different_graph_changes_it() {
        let mut s = WlScratch::default();
        // o-xylene's skeleton, then renumbered, then p-xylene's
        let ortho = [
            (0, 1),
            (1, 2),
            (2, 3),
            (3, 4),
            (4, 5),
            (5, 0),
            (0, 6),
            (1, 7),
        ];
        let renum = [
            (7, 6),
            (6, 5),
            (5, 4),
            (4, 3),
            (3, 2),
            (2, 7),
            (7, 0),
            (6, 1),
        ];
        let para = [
            (0, 1),
            (1, 2),
            (2, 3),
            (3, 4),
            (4, 5),
            (5, 0),
            (0, 6),
            (3, 7),
        ];
        let h = wl_hash(8, &ortho, &mut s);
        assert_eq!(h, wl_hash(8, &renum, &mut s));
        assert_ne!(h, wl_hash(8, &para, &mut s));
    }

    #[test]
    fn table_hashes_of_every_edit_equal_the_bond_list_hashes() {
        use crate::edits::{apply, edit_list, ALL_KINDS};
        let mut s = WlScratch::default();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let (mut edits, mut out) = (Vec::new(), Vec::new());
        let (mut checked, mut tables, mut fifth) = (0, 0, 0);
        for case in 0..300 {
            // random graphs of 1 to 63 atoms, sparse and dense, some in pieces
            let n = 1 + rnd(if case % 3 == 0 { 63 } else { 25 }) as u32;
            let mut bonds = Vec::new();
            for i in 1..n {
                if rnd(8) != 0 {
                    bonds.push((rnd(u64::from(i)) as u32, i));
                }
            }
            for _ in 0..rnd(u64::from(n)) {
                let (i, j) = (rnd(u64::from(n)) as u32, rnd(u64::from(n)) as u32);
                if i != j
                    && !bonds.contains(&(i.min(j), i.max(j)))
                    && !bonds.contains(&(i.max(j), i.min(j)))
                {
                    bonds.push((i.min(j), i.max(j)));
                }
            }
            let g = Skeleton::new(n as usize, &bonds).unwrap();
            let Some(w) = WlTable::new(&g) else {
                assert!(
                    (0..g.atoms()).any(|a| g.neighbours(a).len() > 4),
                    "case {case}"
                );
                continue;
            };
            tables += 1;
            let all: Vec<_> = g.bond_list().collect();
            assert_eq!(w.hash(), wl_hash(g.atoms(), &all, &mut s), "case {case}");
            // the vector and the portable table hashes, side by side (the body compiled here,
            // without AVX-512)
            let present = low_bits(w.slots);
            assert_eq!(
                wl_table_body(&w.nbr, &w.deg, w.slots, present, w.bonds),
                w.hash(),
                "case {case}"
            );
            edit_list(&g, ALL_KINDS, &mut edits);
            for &e in &edits {
                let atoms = apply(&g, e, &mut out);
                match w.hash_after(e) {
                    Some(h) => assert_eq!(h, wl_hash(atoms, &out, &mut s), "case {case} {e:?}"),
                    None => {
                        // only an edit that gives an atom a fifth neighbour is refused
                        let mut degree = vec![0; atoms];
                        for &(i, j) in &out {
                            degree[i as usize] += 1;
                            degree[j as usize] += 1;
                        }
                        assert!(degree.iter().any(|&d| d > 4), "case {case} {e:?}");
                        fifth += 1;
                    }
                }
                checked += 1;
            }
        }
        assert!(checked > 5_000, "{checked}");
        // graphs the table holds and graphs it does not, edits it refuses
        assert!(
            tables > 50 && tables < 250,
            "{tables} of 300 through the table"
        );
        assert!(fifth > 0);
        let big = Skeleton::new(64, &[]).unwrap();
        assert!(WlTable::new(&big).is_none());
    }
}
