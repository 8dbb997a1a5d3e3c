//! [`canonical`]: the canonical form of a skeleton, so that two skeletons are the same graph
//! exactly when their certificates are equal (and, for an index, their 128-bit keys are).
//!
//! Individualization and refinement, as nauty and bliss do it, kept small for molecular graphs:
//! colours are refined until stable (a vertex's new colour is its old colour and the multiset of
//! its neighbours' colours); while a colour class has several vertices, each of them in turn is
//! given a colour of its own and the search goes on below; every leaf (all colours distinct) is
//! a labeling, and the certificate is the least sorted bond list over the leaves. Every choice
//! depends only on the colours, never on the input numbering, so the least certificate is the
//! same for isomorphic graphs. Two leaves with equal certificates give an automorphism; children
//! in one orbit of the automorphisms that fix the path so far lead to the same certificates and
//! are skipped, which keeps symmetric graphs (rings, cages) to a few leaves.

use crate::skeleton::Skeleton;
use crate::AnalogError;
use xxhash_rust::xxh3::xxh3_128;

/// The canonical form of a skeleton.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Canon {
    /// The canonical label of each atom (a permutation of `0..n`).
    pub labels: Vec<u32>,
    /// `[n, bonds, i0, j0, i1, j1, ...]`: the bonds under the labels, each with i < j,
    /// ascending. Equal exactly when the graphs are isomorphic.
    pub certificate: Vec<u32>,
    /// Leaves of the search tree visited (1 for most molecules: refinement alone settles them).
    pub leaves: usize,
}

impl Canon {
    /// The certificate as little-endian bytes.
    pub fn certificate_bytes(&self) -> Vec<u8> {
        self.certificate
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect()
    }

    /// A 128-bit hash of the certificate (an index key; confirm a match on the certificate).
    pub fn key(&self) -> u128 {
        #[cfg(target_endian = "little")]
        {
            // SAFETY: u32s are 4 plain bytes each, little-endian here: the bytes
            // `certificate_bytes` would collect, read in place.
            let bytes = unsafe {
                std::slice::from_raw_parts(
                    self.certificate.as_ptr() as *const u8,
                    4 * self.certificate.len(),
                )
            };
            xxh3_128(bytes)
        }
        #[cfg(not(target_endian = "little"))]
        xxh3_128(&self.certificate_bytes())
    }
}

/// The canonical form of `g`; [`AnalogError::TooSymmetric`] when the search would visit more
/// than `max_leaves` leaves.
pub fn canonical(g: &Skeleton, max_leaves: usize) -> Result<Canon, AnalogError> {
    let mut search = Search {
        g,
        max_leaves,
        leaves: 0,
        first: None,
        best: None,
        autos: Vec::new(),
        scratch: Scratch::default(),
    };
    let colors = vec![0u32; g.atoms()];
    let lab: Vec<u32> = (0..g.atoms() as u32).collect();
    search.visit(colors, lab, &mut Vec::new())?;
    let (certificate, labels) = search.best.expect("a search reaches a leaf");
    Ok(Canon {
        labels,
        certificate,
        leaves: search.leaves,
    })
}

#[derive(Default)]
struct Scratch {
    hash: Vec<u64>,
    next_color: Vec<(u32, u32)>,
}

struct Search<'g> {
    g: &'g Skeleton,
    max_leaves: usize,
    leaves: usize,
    /// (certificate, labels) of the first leaf and of the least so far
    first: Option<(Vec<u32>, Vec<u32>)>,
    best: Option<(Vec<u32>, Vec<u32>)>,
    /// automorphisms found, as images of each atom
    autos: Vec<Vec<u32>>,
    scratch: Scratch,
}

/// A strong mix of a colour, summed over neighbours: a hash of the multiset of their colours.
fn mix(c: u32) -> u64 {
    let mut z = (c as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The end of the cell starting at `lab[p]` (atoms of one colour are contiguous in `lab`).
fn cell_end(colors: &[u32], lab: &[u32], p: usize) -> usize {
    let c = colors[lab[p] as usize];
    p + 1
        + lab[p + 1..]
            .iter()
            .take_while(|&&v| colors[v as usize] == c)
            .count()
}

/// The cell starts of a colouring of at most 64 atoms as a bitmask: colours are cell starts,
/// so position `k` of `lab` starts a cell exactly when its atom's colour is `k`.
fn cell_starts(colors: &[u32], lab: &[u32]) -> u64 {
    let mut m = 0u64;
    for (k, &v) in lab.iter().enumerate() {
        m |= u64::from(colors[v as usize] == k as u32) << k;
    }
    m
}

/// The end of the cell starting at `p`: from `starts` ([`cell_starts`]) where the atoms fit
/// in it (`n <= 64`), else as [`cell_end`] finds it.
#[inline(always)]
fn next_cell(starts: u64, colors: &[u32], lab: &[u32], p: usize) -> usize {
    let n = lab.len();
    if n > 64 {
        return cell_end(colors, lab, p);
    }
    if p + 1 >= n {
        return n;
    }
    let m = starts >> (p + 1);
    if m == 0 {
        n
    } else {
        p + 1 + m.trailing_zeros() as usize
    }
}

/// Refines `colors` until stable; colours are cell starts (the number of atoms of a smaller
/// colour), so a discrete colouring is a labeling. `lab` lists the atoms by colour (each cell
/// contiguous) and is kept so. Each round gives every atom of a cell of several the hash of its
/// neighbours' colours (all from the colours before the round), then splits each such cell by
/// that hash, in hash order. Returns the number of cells.
fn refine(g: &Skeleton, colors: &mut [u32], lab: &mut [u32], s: &mut Scratch) -> usize {
    let n = colors.len();
    s.hash.clear();
    s.hash.resize(n, 0);
    loop {
        // hashes of the atoms in cells of several, from this round's colours
        let starts = if n <= 64 { cell_starts(colors, lab) } else { 0 };
        let mut p = 0;
        let mut cells = 0;
        while p < n {
            let q = next_cell(starts, colors, lab, p);
            cells += 1;
            if q - p > 1 {
                for &v in &lab[p..q] {
                    s.hash[v as usize] = g
                        .neighbours(v as usize)
                        .iter()
                        .fold(0u64, |h, &u| h.wrapping_add(mix(colors[u as usize])));
                }
            }
            p = q;
        }
        if cells == n {
            return n;
        }
        // split each cell of several by hash
        let mut split = false;
        let mut new_cells = 0;
        p = 0;
        while p < n {
            let q = next_cell(starts, colors, lab, p);
            new_cells += 1;
            if q - p > 1 {
                let hash = &s.hash;
                lab[p..q].sort_unstable_by_key(|&v| hash[v as usize]);
                let mut start = p;
                for k in p..q {
                    if k > p && hash[lab[k] as usize] != hash[lab[k - 1] as usize] {
                        start = k;
                        split = true;
                        new_cells += 1;
                    }
                    s.next_color.push((lab[k], start as u32));
                }
            }
            p = q;
        }
        for &(v, c) in &s.next_color {
            colors[v as usize] = c;
        }
        s.next_color.clear();
        if !split {
            return new_cells;
        }
    }
}

fn certificate(g: &Skeleton, labels: &[u32]) -> Vec<u32> {
    // each bond as one sortable word: (smaller label, larger label)
    let mut pairs: Vec<u64> = Vec::with_capacity(g.bonds());
    for (i, &li) in labels.iter().enumerate() {
        for &j in g.neighbours(i) {
            if j as usize > i {
                let lj = labels[j as usize];
                pairs.push(u64::from(li.min(lj)) << 32 | u64::from(li.max(lj)));
            }
        }
    }
    pairs.sort_unstable();
    let mut out = Vec::with_capacity(2 + 2 * pairs.len());
    out.push(g.atoms() as u32);
    out.push(pairs.len() as u32);
    for p in pairs {
        out.push((p >> 32) as u32);
        out.push(p as u32);
    }
    out
}

impl Search<'_> {
    fn visit(
        &mut self,
        mut colors: Vec<u32>,
        mut lab: Vec<u32>,
        fixed: &mut Vec<u32>,
    ) -> Result<(), AnalogError> {
        let n = colors.len();
        if refine(self.g, &mut colors, &mut lab, &mut self.scratch) == n {
            return self.leaf(colors);
        }
        // the first cell of more than one atom (by colour: an invariant choice)
        let mut p = 0;
        let (start, end) = loop {
            let q = cell_end(&colors, &lab, p);
            if q - p > 1 {
                break (p, q);
            }
            p = q;
        };
        let target = start as u32;
        let mut members: Vec<u32> = lab[start..end].to_vec();
        members.sort_unstable();
        let mut explored: Vec<u32> = Vec::new();
        for &v in &members {
            if !explored.is_empty() && self.same_orbit(v, &explored, fixed) {
                continue;
            }
            let mut child = colors.clone();
            let mut child_lab = lab.clone();
            for &w in &members {
                if w != v {
                    child[w as usize] = target + 1;
                }
            }
            // v first in its cell, the others after it
            let at = start
                + child_lab[start..end]
                    .iter()
                    .position(|&w| w == v)
                    .expect("a member of the cell");
            child_lab.swap(start, at);
            fixed.push(v);
            self.visit(child, child_lab, fixed)?;
            fixed.pop();
            explored.push(v);
        }
        Ok(())
    }

    fn leaf(&mut self, labels: Vec<u32>) -> Result<(), AnalogError> {
        self.leaves += 1;
        if self.leaves > self.max_leaves {
            return Err(AnalogError::TooSymmetric(self.max_leaves));
        }
        let cert = certificate(self.g, &labels);
        for (seen_cert, seen_labels) in [&self.first, &self.best].into_iter().flatten() {
            if *seen_cert == cert {
                // v -> the atom the seen leaf labels as this leaf labels v
                let mut inverse = vec![0u32; labels.len()];
                for (u, &l) in seen_labels.iter().enumerate() {
                    inverse[l as usize] = u as u32;
                }
                let auto: Vec<u32> = labels.iter().map(|&l| inverse[l as usize]).collect();
                if auto.iter().enumerate().any(|(v, &w)| v as u32 != w) {
                    self.autos.push(auto);
                }
                break;
            }
        }
        if self.first.is_none() {
            self.first = Some((cert.clone(), labels.clone()));
        }
        if self.best.as_ref().map_or(true, |(b, _)| cert < *b) {
            self.best = Some((cert, labels));
        }
        Ok(())
    }

    /// Whether `v` is in the orbit of an explored sibling under the automorphisms found so far
    /// that fix every atom of `fixed`.
    fn same_orbit(&self, v: u32, explored: &[u32], fixed: &[u32]) -> bool {
        let n = self.g.atoms();
        let mut parent: Vec<u32> = (0..n as u32).collect();
        fn find(parent: &mut [u32], mut x: u32) -> u32 {
            while parent[x as usize] != x {
                parent[x as usize] = parent[parent[x as usize] as usize];
                x = parent[x as usize];
            }
            x
        }
        let mut any = false;
        for auto in &self.autos {
            if fixed.iter().any(|&f| auto[f as usize] != f) {
                continue;
            }
            any = true;
            for (a, &b) in auto.iter().enumerate() {
                let (ra, rb) = (find(&mut parent, a as u32), find(&mut parent, b));
                if ra != rb {
                    parent[ra as usize] = rb;
                }
            }
        }
        if !any {
            return false;
        }
        let root = find(&mut parent, v);
        explored.iter().any(|&w| find(&mut parent, w) == root)
    }
}
