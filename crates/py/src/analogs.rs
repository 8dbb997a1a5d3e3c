//! Python wrappers of `molsift_analogs`: the canonical form of a skeleton.

use molsift_analogs::{canonical, skeleton_of_smiles, Skeleton};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::error::analog_err;

/// The canonical form of the skeleton of `n` atoms and `bonds`: (the canonical label of each
/// atom, the certificate as little-endian u32 bytes: equal exactly when the graphs are
/// isomorphic). ValueError for a bad graph or one needing more than `max_leaves` search leaves.
#[pyfunction]
#[pyo3(signature = (n, bonds, max_leaves=100_000))]
fn canonical_skeleton<'py>(
    py: Python<'py>,
    n: usize,
    bonds: Vec<(u32, u32)>,
    max_leaves: usize,
) -> PyResult<(Vec<u32>, Bound<'py, PyBytes>)> {
    let canon = py
        .detach(|| Skeleton::new(n, &bonds).and_then(|g| canonical(&g, max_leaves)))
        .map_err(analog_err)?;
    let bytes: Vec<u8> = canon
        .certificate
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    Ok((canon.labels, PyBytes::new(py, &bytes)))
}

/// The skeleton of a SMILES read from its topology alone: (heavy atoms, bonds as (i, j) with
/// i < j). ValueError naming the byte offset for text that is not SMILES.
#[pyfunction]
fn smiles_skeleton(py: Python<'_>, smiles: &str) -> PyResult<(usize, Vec<(u32, u32)>)> {
    let g = py
        .detach(|| skeleton_of_smiles(smiles))
        .map_err(analog_err)?;
    Ok((g.atoms(), g.bond_list().collect()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(canonical_skeleton, m)?)?;
    m.add_function(wrap_pyfunction!(smiles_skeleton, m)?)?;
    Ok(())
}
