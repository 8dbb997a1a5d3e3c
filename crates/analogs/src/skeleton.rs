//! [`Skeleton`]: an anonymous graph (a molecule's heavy atoms and bonds with every label
//! removed), checked when built: bonds join two different atoms of the graph, at most once.

use crate::AnalogError;

/// An anonymous graph: atoms `0..n`, each with its sorted list of neighbours (all lists in one
/// buffer: a walk builds a graph for every edit it canonicalizes, and one allocation per atom
/// cost more than the graph's use).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skeleton {
    /// atom `a`'s neighbours are `nbrs[start[a] .. start[a + 1]]`
    start: Vec<u32>,
    nbrs: Vec<u32>,
    bonds: usize,
}

impl Skeleton {
    /// The graph of `n` atoms and `bonds` (pairs of atom indices, in any order); an error for a
    /// bond to itself, to an atom outside `0..n`, or given twice.
    pub fn new(n: usize, bonds: &[(u32, u32)]) -> Result<Self, AnalogError> {
        if n >= u32::MAX as usize || bonds.len() >= (u32::MAX / 2) as usize {
            return Err(AnalogError::Invalid(format!(
                "{n} atoms and {} bonds",
                bonds.len()
            )));
        }
        let mut start = vec![0u32; n + 1];
        for &(i, j) in bonds {
            if i == j || i as usize >= n || j as usize >= n {
                return Err(AnalogError::Invalid(format!(
                    "bond ({i}, {j}) in a graph of {n} atoms"
                )));
            }
            start[i as usize + 1] += 1;
            start[j as usize + 1] += 1;
        }
        for a in 0..n {
            start[a + 1] += start[a];
        }
        let mut fill: Vec<u32> = start[..n].to_vec();
        let mut nbrs = vec![0u32; 2 * bonds.len()];
        for &(i, j) in bonds {
            nbrs[fill[i as usize] as usize] = j;
            fill[i as usize] += 1;
            nbrs[fill[j as usize] as usize] = i;
            fill[j as usize] += 1;
        }
        for a in 0..n {
            let list = &mut nbrs[start[a] as usize..start[a + 1] as usize];
            list.sort_unstable();
            if list.windows(2).any(|w| w[0] == w[1]) {
                return Err(AnalogError::Invalid(format!(
                    "a bond of atom {a} given twice"
                )));
            }
        }
        Ok(Skeleton {
            start,
            nbrs,
            bonds: bonds.len(),
        })
    }

    /// Number of atoms.
    pub fn atoms(&self) -> usize {
        self.start.len() - 1
    }

    /// Number of bonds.
    pub fn bonds(&self) -> usize {
        self.bonds
    }

    /// The neighbours of atom `a`, ascending.
    pub fn neighbours(&self, a: usize) -> &[u32] {
        assert!(a < self.atoms(), "atom {a} of {}", self.atoms());
        // SAFETY: `new` made `start` ascending from 0 to `nbrs.len()` (n + 1 entries), so for
        // a < n both entries exist and bound a range of `nbrs`.
        unsafe {
            let (from, to) = (
                *self.start.get_unchecked(a) as usize,
                *self.start.get_unchecked(a + 1) as usize,
            );
            self.nbrs.get_unchecked(from..to)
        }
    }

    /// Every bond once, as (i, j) with i < j, ascending.
    pub fn bond_list(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        (0..self.atoms()).flat_map(move |i| {
            self.neighbours(i)
                .iter()
                .filter(move |&&j| j as usize > i)
                .map(move |&j| (i as u32, j))
        })
    }
}
