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

/// One single edit of a graph, as [`edit_list`] gives them: its kind and the atoms it works on.
/// `tdn`, `ldn`: `a` is the atom deleted; `tup`: `a` is the atom the new one bonds to; `rdn`,
/// `lup`: `(a, b)` is the bond deleted or split; `rup`: `(a, b)` is the new bond. [`apply`]
/// gives the bond list of the result; a walk hashes most results without building them
/// (`crate::wl::WlTable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edit {
    /// what the edit does
    pub kind: Kind,
    /// the atom it works on (the first of two)
    pub a: u32,
    /// the second atom, where there is one
    pub b: u32,
}

impl Edit {
    /// The atom count after the edit, of a graph of `n` atoms.
    pub fn atoms_after(&self, n: usize) -> usize {
        match self.kind {
            Kind::Tdn | Kind::Ldn => n - 1,
            Kind::Tup | Kind::Lup => n + 1,
            Kind::Rdn | Kind::Rup => n,
        }
    }
}

/// Every single edit of `g` of the kinds in `mask` (bit `kind as u8` set for each kind
/// wanted), into `out`, in the order [`edits_of`] makes them: `tdn` by atom, `tup` by atom,
/// `rdn` by bond, `rup` by atom pair, `ldn` by atom, `lup` by bond.
pub fn edit_list(g: &Skeleton, mask: u8, out: &mut Vec<Edit>) {
    out.clear();
    let n = g.atoms() as u32;
    let want = |k: Kind| mask & (1 << k as u8) != 0;
    let one = |kind, a, b| Edit { kind, a, b };
    if want(Kind::Tdn) {
        out.extend(
            (0..n)
                .filter(|&a| g.neighbours(a as usize).len() == 1)
                .map(|a| one(Kind::Tdn, a, 0)),
        );
    }
    if want(Kind::Tup) {
        out.extend((0..n).map(|a| one(Kind::Tup, a, 0)));
    }
    if want(Kind::Rdn) {
        out.extend(ring_bonds(g).into_iter().map(|(a, b)| one(Kind::Rdn, a, b)));
    }
    if want(Kind::Rup) {
        let comp = components(g);
        for i in 0..n {
            for j in i + 1..n {
                if comp[i as usize] == comp[j as usize]
                    && g.neighbours(i as usize).binary_search(&j).is_err()
                {
                    out.push(one(Kind::Rup, i, j));
                }
            }
        }
    }
    if want(Kind::Ldn) {
        for a in 0..n {
            let nb = g.neighbours(a as usize);
            if nb.len() == 2 && g.neighbours(nb[0] as usize).binary_search(&nb[1]).is_err() {
                out.push(one(Kind::Ldn, a, 0));
            }
        }
    }
    if want(Kind::Lup) {
        out.extend(g.bond_list().map(|(a, b)| one(Kind::Lup, a, b)));
    }
}

/// The bond list of the graph `e` makes of `g` into `out` (atoms above a deleted one move down
/// by one; a new atom is number `g.atoms()`); returns its atom count.
pub fn apply(g: &Skeleton, e: Edit, out: &mut Vec<(u32, u32)>) -> usize {
    let n = g.atoms() as u32;
    out.clear();
    match e.kind {
        Kind::Tdn | Kind::Ldn => {
            let gone = e.a;
            let renumber = |x: u32| x - u32::from(x > gone);
            out.extend(
                g.bond_list()
                    .filter(|&(i, j)| i != gone && j != gone)
                    .map(|(i, j)| (renumber(i), renumber(j))),
            );
            if e.kind == Kind::Ldn {
                let nb = g.neighbours(gone as usize);
                out.push((renumber(nb[0]), renumber(nb[1])));
            }
        }
        Kind::Tup => {
            out.extend(g.bond_list());
            out.push((e.a, n));
        }
        Kind::Rdn => out.extend(g.bond_list().filter(|&b| b != (e.a, e.b))),
        Kind::Rup => {
            out.extend(g.bond_list());
            out.push((e.a, e.b));
        }
        Kind::Lup => {
            out.extend(g.bond_list().filter(|&b| b != (e.a, e.b)));
            out.push((e.a, n));
            out.push((e.b, n));
        }
    }
    e.atoms_after(n as usize)
}

/// An atom that no query atom became (one an insertion made), in an origin list ([`carry`]).
pub const NEW_ATOM: u16 = u16::MAX;

/// Where each atom of the graph `e` makes of a graph of `n` atoms comes from, given where the
/// graph's own atoms come from (`origin`, one entry per atom: a query atom or [`NEW_ATOM`]),
/// into `out`: [`apply`]'s numbering, a deleted atom gone, a new atom [`NEW_ATOM`].
pub fn carry(origin: &[u16], e: Edit, out: &mut Vec<u16>) {
    out.clear();
    match e.kind {
        Kind::Tdn | Kind::Ldn => {
            let gone = e.a as usize;
            out.extend_from_slice(&origin[..gone]);
            out.extend_from_slice(&origin[gone + 1..]);
        }
        Kind::Tup | Kind::Lup => {
            out.extend_from_slice(origin);
            out.push(NEW_ATOM);
        }
        Kind::Rdn | Kind::Rup => out.extend_from_slice(origin),
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
    let mut list = Vec::new();
    edit_list(g, mask, &mut list);
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(g.bonds() + 2);
    for e in list {
        let atoms = apply(g, e, &mut out);
        f(e.kind, atoms, &out);
    }
}
