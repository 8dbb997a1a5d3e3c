//! Slices of ingest's parts, what MPI ranks send each other when they write a store set
//! (`mpirun molsift ingest ... --shards K`): after the set's cuts are found, each rank cuts
//! each of its own parts into one slice per shard ([`write_part_slices`]) and sends each slice
//! to the rank writing that shard, so a shard's writer reads only the slices it received, never
//! another rank's parts.
//!
//! A slice is a version-1 part store of the part's molecules whose SMILES lie in the shard's
//! range, in the part's order, with its run beside it (`SLICE.run.u32`, as a part's: the
//! part's run cut to the slice, no sort of its own) and the
//! positions of its molecules among all the parts' molecules (`SLICE.held.u64`,
//! [`crate::runs::held_path`]): a shard's writer opens its slices with the library's total
//! ([`crate::runs::PartRuns::open`]) and every position, input rank, duplicate and tie is that
//! of the whole library, as if it read the parts themselves. The part's rejects stay with the
//! part (the set's root lists them).

use std::path::{Path, PathBuf};

use crate::runs::{held_path, write_run_order, PartRuns};
use crate::{Store, StoreError, StoreWriter, Verify};

/// Cuts the part store at `part` (with its run; its first molecule at position `base` among
/// all the parts' molecules) into the shards of a set with `cuts`: for each shard `s` whose
/// range holds molecules of the part, a slice written at `outs[s]` (a new path). Returns each
/// shard's molecules of the part (their places in it, ascending; empty where no slice was
/// written).
pub fn write_part_slices(
    part: &Path,
    base: u64,
    cuts: &[Option<Vec<u8>>],
    outs: &[PathBuf],
) -> Result<Vec<Vec<u32>>, StoreError> {
    if outs.len() != cuts.len() + 1 {
        return Err(StoreError::Invalid(format!(
            "{} slice paths for a set of {} shards",
            outs.len(),
            cuts.len() + 1
        )));
    }
    let runs = PartRuns::of_part(part, Store::open(part, Verify::Sizes)?)?;
    let store = runs.part(0);
    let spec = store.manifest().fingerprint.clone();
    let files = runs.read_runs(true)?;
    let mut taken = Vec::with_capacity(outs.len());
    for (s, out) in outs.iter().enumerate() {
        let range = runs.shard_slice(&files, 0, cuts, s)?;
        // the part's places in the shard, in the run's order (canonical SMILES, ties by place)
        let sorted: Vec<u32> = range.map(|k| files[0].at(k) as u32).collect();
        let mut mine = sorted.clone();
        mine.sort_unstable();
        if !mine.is_empty() {
            let mut w = StoreWriter::create(out, spec.clone(), false)?;
            for &i in &mine {
                let i = i as usize;
                let (id, smiles) = (store.id(i)?, store.smiles(i)?);
                w.add_row(id, smiles, store.source_line(i), store.fingerprint(i))?;
            }
            w.finish()?;
            // the slice's run: its part's run cut to the slice, each place renumbered as the
            // slice holds it (a stable sort of the slice would find the same)
            let order: Vec<u32> = sorted
                .iter()
                .map(|i| mine.binary_search(i).expect("a place of the slice") as u32)
                .collect();
            write_run_order(out, &order)?;
            let held: Vec<u8> = mine
                .iter()
                .flat_map(|&i| (base + u64::from(i)).to_le_bytes())
                .collect();
            let path = held_path(out);
            molsift_iostats::write_file(&path, &held, false)
                .map_err(|e| StoreError::io(&path, e))?;
        }
        taken.push(mine);
    }
    Ok(taken)
}
