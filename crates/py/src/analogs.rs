//! Python wrappers of `molsift_analogs`: the canonical form of a skeleton.

use molsift_analogs::{canonical, edits, skeleton_of_smiles, walk, Skeleton, SkeletonGroups};
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
    let bytes = canon.certificate_bytes();
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

/// Every single edit of the skeleton of `n` atoms and `bonds`: (kind name, certificate of the
/// result), one per edit (isomorphic results repeat).
#[pyfunction]
#[pyo3(signature = (n, bonds, max_leaves=100_000))]
fn skeleton_edits<'py>(
    py: Python<'py>,
    n: usize,
    bonds: Vec<(u32, u32)>,
    max_leaves: usize,
) -> PyResult<Vec<(&'static str, Bound<'py, PyBytes>)>> {
    let found = py
        .detach(|| {
            let g = Skeleton::new(n, &bonds)?;
            let mut out = Vec::new();
            let mut err = None;
            edits(&g, |kind, atoms, list| {
                match Skeleton::new(atoms, list).and_then(|r| canonical(&r, max_leaves)) {
                    Ok(c) => out.push((kind.name(), c.certificate_bytes())),
                    Err(e) => err = Some(e),
                }
            });
            err.map_or(Ok(out), Err)
        })
        .map_err(analog_err)?;
    Ok(found
        .into_iter()
        .map(|(kind, bytes)| (kind, PyBytes::new(py, &bytes)))
        .collect())
}

/// The skeletons of a library's SMILES (by position), searched by the exact walk.
#[pyclass(name = "SkeletonLibrary", module = "molsift._core", frozen)]
pub struct PySkeletonLibrary {
    inner: SkeletonGroups,
}

#[pymethods]
impl PySkeletonLibrary {
    /// Reads and canonicalizes `smiles` (position i is smiles[i]) on `threads` threads.
    #[new]
    #[pyo3(signature = (smiles, threads=1, max_leaves=100_000))]
    fn new(py: Python<'_>, smiles: Vec<String>, threads: usize, max_leaves: usize) -> Self {
        let inner = py.detach(|| {
            let refs: Vec<&str> = smiles.iter().map(String::as_str).collect();
            SkeletonGroups::build(&refs, threads, max_leaves)
        });
        PySkeletonLibrary { inner }
    }

    /// Number of distinct skeletons.
    fn __len__(&self) -> usize {
        self.inner.keys.len()
    }

    /// Positions whose SMILES could not be read, with the reason.
    fn failed(&self) -> Vec<(u32, String)> {
        self.inner.failed.clone()
    }

    /// Every library molecule within `max_dist` edits of the skeleton of `n` atoms and `bonds`,
    /// nearest skeletons first: ([(distance, positions)], [("edges", n), ("pruned", n),
    /// ("nodes", n), ("first_hit_ns", n), ("ns", n)]). `limits`: the most edits of each kind
    /// (tdn tup rdn rup ldn lup; 255: none). `stop_after`: end the walk with the distance at
    /// which that many molecules have been found (all of that distance still come).
    #[pyo3(signature = (n, bonds, max_dist, limits=[255; 6], max_leaves=100_000, stop_after=usize::MAX))]
    #[allow(clippy::type_complexity, clippy::too_many_arguments)] // the Python signature
    fn walk(
        &self,
        py: Python<'_>,
        n: usize,
        bonds: Vec<(u32, u32)>,
        max_dist: usize,
        limits: [u8; 6],
        max_leaves: usize,
        stop_after: usize,
    ) -> PyResult<(Vec<(usize, Vec<u32>)>, Vec<(&'static str, u64)>)> {
        let lib = &self.inner;
        let (hits, stats, first, total) = py
            .detach(|| {
                let began = std::time::Instant::now();
                let mut first = None;
                let q = Skeleton::new(n, &bonds)?;
                let mut hits = Vec::new();
                let mut molecules = 0usize;
                let stats = walk(&q, max_dist, limits, &lib.keys, max_leaves, |d, key| {
                    first.get_or_insert_with(|| began.elapsed().as_nanos() as u64);
                    let group = &lib.groups[&key];
                    molecules += group.len();
                    hits.push((d, group.clone()));
                    molecules >= stop_after
                })?;
                let total = began.elapsed().as_nanos() as u64;
                Ok::<_, molsift_analogs::AnalogError>((hits, stats, first, total))
            })
            .map_err(analog_err)?;
        let stats = vec![
            ("edges", stats.edges),
            ("pruned", stats.pruned),
            ("nodes", stats.nodes),
            ("first_hit_ns", first.unwrap_or(total)),
            ("ns", total),
        ];
        Ok((hits, stats))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(canonical_skeleton, m)?)?;
    m.add_function(wrap_pyfunction!(smiles_skeleton, m)?)?;
    m.add_function(wrap_pyfunction!(skeleton_edits, m)?)?;
    m.add_class::<PySkeletonLibrary>()?;
    Ok(())
}
