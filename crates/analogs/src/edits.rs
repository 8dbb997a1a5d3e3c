//! The six edits of a skeleton (`docs/analogs.md`), each changing the number of bonds by one:
//! [`edits`] calls back with every single-edit result, as `python/molsift/analogs/skeleton.py`
//! defines them (the reference the tests compare with).

use crate::skeleton::Skeleton;

/// An edit kind, in the order counts are given everywhere (`tdn tup rdn rup ldn lup`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// delete an atom of degree 1 with its bond
    Tdn = 0,
    /// add a new atom bonded to one atom
    Tup = 1,
    /// delete a bond that lies on a cycle
    Rdn = 2,
    /// add a bond between two unbonded atoms of one component
    Rup = 3,
    /// delete an atom of degree 2 whose neighbours are not bonded, joining them
    Ldn = 4,
    /// put a new atom in the middle of a bond
    Lup = 5,
}

impl Kind {
    /// All kinds, in order.
    pub const ALL: [Kind; 6] = [
        Kind::Tdn,
        Kind::Tup,
        Kind::Rdn,
        Kind::Rup,
        Kind::Ldn,
        Kind::Lup,
    ];

    /// The kind that undoes this one.
    pub fn inverse(self) -> Kind {
        match self {
            Kind::Tdn => Kind::Tup,
            Kind::Tup => Kind::Tdn,
            Kind::Rdn => Kind::Rup,
            Kind::Rup => Kind::Rdn,
            Kind::Ldn => Kind::Lup,
            Kind::Lup => Kind::Ldn,
        }
    }

    /// SmallWorld's name of the kind.
    pub fn name(self) -> &'static str {
        ["tdn", "tup", "rdn", "rup", "ldn", "lup"][self as usize]
    }
}

/// The connected component of each atom (numbered by its smallest atom).
pub fn components(g: &Skeleton) -> Vec<u32> {
    let n = g.atoms();
    let mut comp = vec![u32::MAX; n];
    let mut stack = Vec::new();
    for s in 0..n {
        if comp[s] != u32::MAX {
            continue;
        }
        comp[s] = s as u32;
        stack.push(s);
        while let Some(a) = stack.pop() {
            for &b in g.neighbours(a) {
                if comp[b as usize] == u32::MAX {
                    comp[b as usize] = s as u32;
                    stack.push(b as usize);
                }
            }
        }
    }
    comp
}

/// The number of connected components.
pub fn component_count(g: &Skeleton) -> usize {
    let comp = components(g);
    comp.iter()
        .enumerate()
        .filter(|&(a, &c)| a as u32 == c)
        .count()
}

/// The bonds on a cycle (not bridges), as (i, j) with i < j: Tarjan's low-link, iteratively.
pub fn ring_bonds(g: &Skeleton) -> Vec<(u32, u32)> {
    let n = g.atoms();
    let mut order = vec![u32::MAX; n];
    let mut low = vec![0u32; n];
    let mut bridges = Vec::new();
    let mut counter = 0u32;
    for root in 0..n {
        if order[root] != u32::MAX {
            continue;
        }
        // (atom, parent, next neighbour index)
        let mut stack: Vec<(usize, usize, usize)> = vec![(root, usize::MAX, 0)];
        order[root] = counter;
        low[root] = counter;
        counter += 1;
        while let Some(top) = stack.last_mut() {
            let (a, parent) = (top.0, top.1);
            let nb = g.neighbours(a);
            if top.2 < nb.len() {
                let b = nb[top.2] as usize;
                top.2 += 1;
                if b == parent {
                    continue;
                }
                if order[b] == u32::MAX {
                    order[b] = counter;
                    low[b] = counter;
                    counter += 1;
                    stack.push((b, a, 0));
                } else {
                    low[a] = low[a].min(order[b]);
                }
            } else {
                stack.pop();
                if parent != usize::MAX {
                    low[parent] = low[parent].min(low[a]);
                    if low[a] > order[parent] {
                        bridges.push((parent.min(a) as u32, parent.max(a) as u32));
                    }
                }
            }
        }
    }
    bridges.sort_unstable();
    g.bond_list()
        .filter(|b| bridges.binary_search(b).is_err())
        .collect()
}

/// `g` less atom `gone` and its bonds, plus `extra` bonds (in `g`'s numbering).
fn without_atom(g: &Skeleton, gone: u32, extra: Option<(u32, u32)>, out: &mut Vec<(u32, u32)>) {
    let renumber = |a: u32| a - u32::from(a > gone);
    out.clear();
    out.extend(
        g.bond_list()
            .filter(|&(i, j)| i != gone && j != gone)
            .map(|(i, j)| (renumber(i), renumber(j))),
    );
    if let Some((u, v)) = extra {
        out.push((renumber(u), renumber(v)));
    }
}

/// Calls `f(kind, atoms, bonds)` for every single edit of `g` (results may repeat: symmetric
/// atoms give isomorphic graphs; compare them by canonical form).
pub fn edits(g: &Skeleton, f: impl FnMut(Kind, usize, &[(u32, u32)])) {
    edits_of(g, ALL_KINDS, f)
}

/// Every kind, as a [`edits_of`] mask.
pub const ALL_KINDS: u8 = 0b11_1111;
/// The deletions (`tdn`, `rdn`, `ldn`), as a [`edits_of`] mask.
pub const DELETIONS: u8 = 1 << Kind::Tdn as u8 | 1 << Kind::Rdn as u8 | 1 << Kind::Ldn as u8;

/// [`edits`] of the kinds in `mask` only (bit `kind as u8` set for each kind wanted).
pub fn edits_of(g: &Skeleton, mask: u8, mut f: impl FnMut(Kind, usize, &[(u32, u32)])) {
    let n = g.atoms();
    let bonds: Vec<(u32, u32)> = g.bond_list().collect();
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(bonds.len() + 2);
    let want = |k: Kind| mask & (1 << k as u8) != 0;
    for a in (0..n as u32).filter(|_| want(Kind::Tdn)) {
        if g.neighbours(a as usize).len() == 1 {
            without_atom(g, a, None, &mut out);
            f(Kind::Tdn, n - 1, &out);
        }
    }
    for a in (0..n as u32).filter(|_| want(Kind::Tup)) {
        out.clear();
        out.extend_from_slice(&bonds);
        out.push((a, n as u32));
        f(Kind::Tup, n + 1, &out);
    }
    let rings = if want(Kind::Rdn) {
        ring_bonds(g)
    } else {
        Vec::new()
    };
    for bond in rings {
        out.clear();
        out.extend(bonds.iter().copied().filter(|&b| b != bond));
        f(Kind::Rdn, n, &out);
    }
    let comp = components(g);
    for i in (0..n as u32).filter(|_| want(Kind::Rup)) {
        for j in i + 1..n as u32 {
            if comp[i as usize] == comp[j as usize]
                && g.neighbours(i as usize).binary_search(&j).is_err()
            {
                out.clear();
                out.extend_from_slice(&bonds);
                out.push((i, j));
                f(Kind::Rup, n, &out);
            }
        }
    }
    for a in (0..n as u32).filter(|_| want(Kind::Ldn)) {
        let nb = g.neighbours(a as usize);
        if nb.len() == 2 && g.neighbours(nb[0] as usize).binary_search(&nb[1]).is_err() {
            without_atom(g, a, Some((nb[0], nb[1])), &mut out);
            f(Kind::Ldn, n - 1, &out);
        }
    }
    for &(i, j) in bonds.iter().filter(|_| want(Kind::Lup)) {
        out.clear();
        out.extend(bonds.iter().copied().filter(|&b| b != (i, j)));
        out.push((i, n as u32));
        out.push((j, n as u32));
        f(Kind::Lup, n + 1, &out);
    }
}
