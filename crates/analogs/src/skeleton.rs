//! [`Skeleton`]: an anonymous graph (a molecule's heavy atoms and bonds with every label
//! removed), checked when built: bonds join two different atoms of the graph, at most once.

use crate::AnalogError;

/// An anonymous graph: atoms `0..n`, each with its sorted list of neighbours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skeleton {
    adj: Vec<Vec<u32>>,
    bonds: usize,
}

impl Skeleton {
    /// The graph of `n` atoms and `bonds` (pairs of atom indices, in any order); an error for a
    /// bond to itself, to an atom outside `0..n`, or given twice.
    pub fn new(n: usize, bonds: &[(u32, u32)]) -> Result<Self, AnalogError> {
        if n > u32::MAX as usize {
            return Err(AnalogError::Invalid(format!("{n} atoms")));
        }
        let mut adj = vec![Vec::new(); n];
        for &(i, j) in bonds {
            if i == j || i as usize >= n || j as usize >= n {
                return Err(AnalogError::Invalid(format!(
                    "bond ({i}, {j}) in a graph of {n} atoms"
                )));
            }
            adj[i as usize].push(j);
            adj[j as usize].push(i);
        }
        for (a, list) in adj.iter_mut().enumerate() {
            list.sort_unstable();
            if list.windows(2).any(|w| w[0] == w[1]) {
                return Err(AnalogError::Invalid(format!(
                    "a bond of atom {a} given twice"
                )));
            }
        }
        Ok(Skeleton {
            adj,
            bonds: bonds.len(),
        })
    }

    /// Number of atoms.
    pub fn atoms(&self) -> usize {
        self.adj.len()
    }

    /// Number of bonds.
    pub fn bonds(&self) -> usize {
        self.bonds
    }

    /// The neighbours of atom `a`, ascending.
    pub fn neighbours(&self, a: usize) -> &[u32] {
        &self.adj[a]
    }

    /// Every bond once, as (i, j) with i < j, ascending.
    pub fn bond_list(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.adj.iter().enumerate().flat_map(|(i, list)| {
            list.iter()
                .filter(move |&&j| j as usize > i)
                .map(move |&j| (i as u32, j))
        })
    }
}
