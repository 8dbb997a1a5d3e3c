//! [`element_changes`]: how many atoms of a hit have another element than the query atom they
//! come from (SmallWorld's `mut`): the walk tells, for each atom of the graph it reached, which
//! query atom it comes from along its path (`crate::edits::carry`); that graph is isomorphic
//! to the hit molecule's skeleton, and of every isomorphism the one with the fewest element
//! differences is taken (`docs/analogs.md`, "Element changes").
//!
//! The isomorphisms are searched as a canonical form is (`crate::canon`): colour refinement of
//! both graphs by one hash function (so that a colour means the same on either side: hashes
//! that collide only merge classes, and every leaf is checked bond by bond), then one atom of
//! the smallest class individualized with each atom of the other side in turn. A branch is
//! cut when a lower bound of its differences (per colour class, the query elements its atoms
//! need that the other side's atoms of that class cannot give) reaches the best leaf found.

use crate::edits::NEW_ATOM;
use crate::skeleton::Skeleton;

/// The least number of atoms of `graph` (the walk's graph; `origin[i]`: the query atom atom
/// `i` comes from, or [`NEW_ATOM`]) whose query element (`query_elements`) differs from the
/// element of the atom of `target` it maps to (`target_elements`), over every isomorphism of
/// `graph` onto `target`. `None` when the graphs are not isomorphic or the search visits more
/// than `max_nodes` nodes.
pub fn element_changes(
    graph: &Skeleton,
    origin: &[u16],
    query_elements: &[u16],
    target: &Skeleton,
    target_elements: &[u16],
    max_nodes: usize,
) -> Option<u32> {
    element_changes_below(
        (graph, &colours(graph)),
        origin,
        query_elements,
        (target, &colours(target)),
        target_elements,
        max_nodes,
        u32::MAX,
    )
}

/// The stable colours of a graph's refinement from all atoms alike (the first step of
/// [`element_changes`], which depends on the graph alone: a caller mapping one graph onto
/// several molecules, or several paths onto one, computes each side's once).
pub fn colours(g: &Skeleton) -> Vec<u64> {
    let mut c = vec![0u64; g.atoms()];
    let (mut tmp, mut sorted) = (Vec::new(), Vec::new());
    let mut classes = 1.min(g.atoms());
    loop {
        round(g, &mut c, &mut tmp);
        let now = distinct(&c, &mut sorted);
        if now == classes {
            return c;
        }
        classes = now;
    }
}

/// [`element_changes`] with each side's [`colours`] given, when it is less than `below`
/// (`None` otherwise: a caller comparing several paths cuts the search of the later ones at
/// the best so far; `u32::MAX` for no cut).
pub fn element_changes_below(
    (graph, graph_colours): (&Skeleton, &[u64]),
    origin: &[u16],
    query_elements: &[u16],
    (target, target_colours): (&Skeleton, &[u64]),
    target_elements: &[u16],
    max_nodes: usize,
    below: u32,
) -> Option<u32> {
    let n = graph.atoms();
    if n != target.atoms()
        || graph.bonds() != target.bonds()
        || origin.len() != n
        || target_elements.len() != n
    {
        return None;
    }
    let want: Vec<Option<u16>> = origin
        .iter()
        .map(|&o| (o != NEW_ATOM).then(|| query_elements.get(o as usize).copied())?)
        .collect();
    let mut search = Search {
        graph,
        target,
        want,
        have: target_elements,
        best: below,
        nodes: 0,
        max_nodes,
        tmp: Vec::with_capacity(n),
        sorted: Vec::with_capacity(n),
    };
    let (g, t) = (graph_colours.to_vec(), target_colours.to_vec());
    if g.len() != n || t.len() != n || !search.same_multiset(&g, &t) {
        return None;
    }
    search.visit(g, t).ok()?;
    (search.best < below).then_some(search.best)
}

struct Search<'a> {
    graph: &'a Skeleton,
    target: &'a Skeleton,
    /// the query element each atom of `graph` comes with (None: a new atom)
    want: Vec<Option<u16>>,
    have: &'a [u16],
    /// the fewest differences of a leaf found so far, or the caller's `below`
    best: u32,
    nodes: usize,
    max_nodes: usize,
    tmp: Vec<u64>,
    sorted: Vec<u64>,
}

/// A strong 64-bit mix (splitmix64: a step, then [`crate::wl`]'s finalizer).
fn mix(z: u64) -> u64 {
    crate::wl::mix(z.wrapping_add(0x9E37_79B9_7F4A_7C15))
}

/// The colour an individualized atom gets (the same on both sides).
const MARK: u64 = 0x5851_F42D_4C95_7F2D;

/// Over budget: the search stops.
struct TooLong;

/// One round of colour refinement of `g`: each atom's colour becomes a hash of its colour and
/// the multiset of its neighbours' (the same function on either side, so equal colours mean
/// the same on both).
fn round(g: &Skeleton, c: &mut [u64], tmp: &mut Vec<u64>) {
    tmp.clear();
    tmp.extend(c.iter().map(|&x| mix(x)));
    for (v, cv) in c.iter_mut().enumerate() {
        let sum = g
            .neighbours(v)
            .iter()
            .fold(0u64, |s, &u| s.wrapping_add(tmp[u as usize]));
        *cv = mix(cv.wrapping_mul(0xD6E8_FEB8_6659_FD93) ^ sum);
    }
}

fn distinct(c: &[u64], sorted: &mut Vec<u64>) -> usize {
    sorted.clear();
    sorted.extend_from_slice(c);
    sorted.sort_unstable();
    sorted.dedup();
    sorted.len()
}

impl Search<'_> {
    /// Refines both colourings together until the graph's stops splitting; false when the two
    /// sides' colours differ as multisets (no isomorphism agrees with them).
    fn refine(&mut self, g: &mut [u64], t: &mut [u64]) -> bool {
        let mut classes = distinct(g, &mut self.sorted);
        loop {
            round(self.graph, g, &mut self.tmp);
            round(self.target, t, &mut self.tmp);
            let now = distinct(g, &mut self.sorted);
            if now == classes {
                break;
            }
            classes = now;
        }
        self.same_multiset(g, t)
    }

    fn same_multiset(&mut self, g: &[u64], t: &[u64]) -> bool {
        self.sorted.clear();
        self.sorted.extend_from_slice(g);
        self.sorted.sort_unstable();
        self.tmp.clear();
        self.tmp.extend_from_slice(t);
        self.tmp.sort_unstable();
        self.sorted == self.tmp
    }

    /// A lower bound of the differences of every isomorphism that agrees with the colours:
    /// per colour and element, the graph's atoms wanting that element beyond the target's
    /// atoms that have it.
    fn bound(&self, g: &[u64], t: &[u64]) -> u32 {
        let n = self.n();
        let mut need: Vec<(u64, u16, i32)> = Vec::with_capacity(2 * n);
        for i in 0..n {
            if let Some(e) = self.want[i] {
                need.push((g[i], e, 1));
            }
            need.push((t[i], self.have[i], -1));
        }
        need.sort_unstable_by_key(|&(c, e, _)| (c, e));
        let mut lb = 0u32;
        let mut w = 0;
        while w < need.len() {
            let (c, e) = (need[w].0, need[w].1);
            let mut sum = 0i32;
            while w < need.len() && (need[w].0, need[w].1) == (c, e) {
                sum += need[w].2;
                w += 1;
            }
            lb += sum.max(0) as u32;
        }
        lb
    }

    fn n(&self) -> usize {
        self.graph.atoms()
    }

    fn visit(&mut self, g: Vec<u64>, t: Vec<u64>) -> Result<(), TooLong> {
        self.nodes += 1;
        if self.nodes > self.max_nodes {
            return Err(TooLong);
        }
        let lb = self.bound(&g, &t);
        if lb >= self.best {
            return Ok(());
        }
        let n = self.n();
        // the smallest colour class of more than one atom
        let mut by: Vec<(u64, u32)> = g.iter().enumerate().map(|(i, &c)| (c, i as u32)).collect();
        by.sort_unstable();
        let mut cell: Option<(usize, u64)> = None;
        let mut w = 0;
        while w < n {
            let mut e = w + 1;
            while e < n && by[e].0 == by[w].0 {
                e += 1;
            }
            if e - w > 1 && cell.map_or(true, |(size, _)| e - w < size) {
                cell = Some((e - w, by[w].0));
            }
            w = e;
        }
        let Some((_, cell)) = cell else {
            // every atom its own colour: the isomorphism the colours give
            let mut tt: Vec<(u64, u32)> =
                t.iter().enumerate().map(|(j, &c)| (c, j as u32)).collect();
            tt.sort_unstable();
            let image = |i: u32| {
                let k = tt.partition_point(|&(c, _)| c < g[i as usize]);
                tt[k].1
            };
            let iso = self.graph.bond_list().all(|(i, j)| {
                self.target
                    .neighbours(image(i) as usize)
                    .binary_search(&image(j))
                    .is_ok()
            });
            if iso && lb < self.best {
                self.best = lb;
            }
            return Ok(());
        };
        // a graph atom that wants an element, if there is one, then the target's atoms with
        // that element first
        let i = (0..n)
            .filter(|&i| g[i] == cell)
            .max_by_key(|&i| (self.want[i].is_some(), std::cmp::Reverse(i)))
            .expect("the cell has graph atoms");
        let mut js: Vec<usize> = (0..n).filter(|&j| t[j] == cell).collect();
        js.sort_by_key(|&j| Some(self.have[j]) != self.want[i]);
        for j in js {
            let (mut g2, mut t2) = (g.clone(), t.clone());
            g2[i] = mix(g2[i] ^ MARK);
            t2[j] = mix(t2[j] ^ MARK);
            if self.refine(&mut g2, &mut t2) {
                self.visit(g2, t2)?;
            }
            if self.best == lb {
                break; // no isomorphism does better than the bound
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smiles::skeleton_and_elements;

    fn mol(smiles: &str) -> (Skeleton, Vec<u16>) {
        skeleton_and_elements(smiles).unwrap()
    }

    /// The least differences by trying every bijection (small graphs only).
    fn brute(g: &Skeleton, origin: &[u16], qe: &[u16], t: &Skeleton, te: &[u16]) -> Option<u32> {
        fn perms(n: usize, at: usize, p: &mut Vec<usize>, f: &mut impl FnMut(&[usize])) {
            if at == n {
                f(p);
                return;
            }
            for k in at..n {
                p.swap(at, k);
                perms(n, at + 1, p, f);
                p.swap(at, k);
            }
        }
        let n = g.atoms();
        let mut best = None::<u32>;
        let mut p: Vec<usize> = (0..n).collect();
        perms(n, 0, &mut p, &mut |p| {
            let iso = g.bond_list().all(|(i, j)| {
                t.neighbours(p[i as usize])
                    .contains(&(p[j as usize] as u32))
            });
            if iso && g.bonds() == t.bonds() {
                let d = (0..n)
                    .filter(|&i| origin[i] != NEW_ATOM && qe[origin[i] as usize] != te[p[i]])
                    .count() as u32;
                best = Some(best.map_or(d, |b| b.min(d)));
            }
        });
        best
    }

    #[test]
    fn same_molecule_any_numbering_has_no_change() {
        for (a, b) in [
            ("c1ccncc1", "n1ccccc1"),
            ("OCc1ccccc1", "c1ccc(CO)cc1"),
            ("FC(F)(F)c1ccc(Cl)cc1", "Clc1ccc(C(F)(F)F)cc1"),
        ] {
            let (g, qe) = mol(a);
            let (t, te) = mol(b);
            let origin: Vec<u16> = (0..g.atoms() as u16).collect();
            assert_eq!(
                element_changes(&g, &origin, &qe, &t, &te, 10_000),
                Some(0),
                "{a} {b}"
            );
        }
    }

    #[test]
    fn counts_the_least_changes_over_isomorphisms() {
        for (a, b, want) in [
            ("c1ccccc1C", "c1ccncc1C", 1),  // an N for a C, wherever it is
            ("c1ccncc1C", "c1cnccc1C", 2),  // the N moved: two atoms change
            ("OCCO", "NCCO", 1),            // either end
            ("OCCN", "NCCO", 0),            // reversed
            ("[Se]1C=CC=C1", "s1cccc1", 1), // Se to S
            ("ClC(Cl)(Cl)Cl", "BrC(Cl)(Cl)Cl", 1),
        ] {
            let (g, qe) = mol(a);
            let (t, te) = mol(b);
            let origin: Vec<u16> = (0..g.atoms() as u16).collect();
            let got = element_changes(&g, &origin, &qe, &t, &te, 10_000);
            assert_eq!(got, Some(want), "{a} {b}");
            assert_eq!(got, brute(&g, &origin, &qe, &t, &te), "{a} {b}");
        }
    }

    #[test]
    fn new_atoms_never_count() {
        // toluene's methyl carbon came from no query atom: any element there is free
        let (g, _) = mol("c1ccccc1C");
        let (t, te) = mol("c1ccccc1O");
        let qe = vec![crate::smiles::element_code("C"); 6];
        let origin: Vec<u16> = vec![0, 1, 2, 3, 4, 5, NEW_ATOM];
        assert_eq!(element_changes(&g, &origin, &qe, &t, &te, 10_000), Some(0));
    }

    #[test]
    fn agrees_with_every_bijection_on_random_labelled_graphs() {
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut next = move |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        let elements = [67u16, 78, 79];
        for _ in 0..300 {
            let n = 2 + next(6) as usize;
            let mut bonds = Vec::new();
            for j in 1..n as u32 {
                bonds.push((next(j as u64) as u32, j)); // a tree, then extra bonds
            }
            for _ in 0..next(3) {
                let (i, j) = (next(n as u64) as u32, next(n as u64) as u32);
                if i != j
                    && !bonds.contains(&(i.min(j), i.max(j)))
                    && !bonds.contains(&(i.max(j), i.min(j)))
                {
                    bonds.push((i.min(j), i.max(j)));
                }
            }
            let g = Skeleton::new(n, &bonds).unwrap();
            // the target: the same graph renumbered
            let mut perm: Vec<u32> = (0..n as u32).collect();
            for k in (1..n).rev() {
                perm.swap(k, next(k as u64 + 1) as usize);
            }
            let tb: Vec<(u32, u32)> = bonds
                .iter()
                .map(|&(i, j)| (perm[i as usize], perm[j as usize]))
                .collect();
            let t = Skeleton::new(n, &tb).unwrap();
            let qe: Vec<u16> = (0..n).map(|_| elements[next(3) as usize]).collect();
            let te: Vec<u16> = (0..n).map(|_| elements[next(3) as usize]).collect();
            let origin: Vec<u16> = (0..n as u16)
                .map(|i| if next(5) == 0 { NEW_ATOM } else { i })
                .collect();
            assert_eq!(
                element_changes(&g, &origin, &qe, &t, &te, 100_000),
                brute(&g, &origin, &qe, &t, &te),
                "{bonds:?} {perm:?}"
            );
        }
    }

    #[test]
    fn graphs_that_differ_have_no_mapping() {
        let (g, qe) = mol("CCCC");
        let (t, te) = mol("CC(C)C");
        assert_eq!(
            element_changes(&g, &[0, 1, 2, 3], &qe, &t, &te, 10_000),
            None
        );
    }
}
