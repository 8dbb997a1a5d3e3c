//! [`Union`]: several libraries searched as one by a single walk (a store set's shards on one
//! machine): a skeleton is in the union when one of them has it, and every filter passes a
//! graph when one of them would. Each filter of a part has no false negatives, so neither has
//! the union's, and the walk over it reaches every skeleton of every part within its distance:
//! one walk finds what a walk of each part finds. It costs more than a walk of one library of
//! them all would: each part's deletions filter is sized to that part, and a graph passes the
//! union's when it passes any of them (all of MOSES in 8 shards: 25,578 edits on one query
//! against 15,870 over the one store), and a key is looked up in every part.

use crate::walk::Library;

/// The libraries `parts`, searched as one.
#[derive(Debug, Clone, Copy)]
pub struct Union<'a, L>(pub &'a [L]);

impl<L: Library> Library for Union<'_, L> {
    fn contains(&self, key: u128) -> bool {
        self.0.iter().any(|l| l.contains(key))
    }

    fn bound(&self, components: usize, atoms: usize, rings: usize) -> Option<usize> {
        self.0
            .iter()
            .filter_map(|l| l.bound(components, atoms, rings))
            .min()
    }

    fn may_contain(&self, wl: u64) -> bool {
        self.0.iter().any(|l| l.may_contain(wl))
    }

    fn insertion_may_reach(&self, wl: u64) -> bool {
        self.0.iter().any(|l| l.insertion_may_reach(wl))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walk::{walk, Event, KeySet, SkeletonGroups, WalkOptions};
    use crate::{skeleton_of_smiles, Skeleton};

    const SMILES: &[&str] = &[
        "CCO",
        "CCCO",
        "CCCCO",
        "CC(C)O",
        "c1ccccc1",
        "c1ccccc1C",
        "c1ccccc1CC",
        "C1CCCCC1",
        "C1CCCC1",
        "c1ccc2ccccc2c1",
        "CC(=O)Nc1ccccc1",
        "OC(=O)c1ccccc1O",
        "CCN(CC)CC",
        "c1ccncc1",
        "C1CCNCC1",
        "CC1CCCCC1C",
        "c1ccc(cc1)-c1ccccc1",
        "CCCCCCCC",
    ];

    fn library(smiles: &[&str]) -> KeySet {
        SkeletonGroups::build(smiles, 1, 100_000).keys
    }

    fn hits<L: Library + Sync>(query: &Skeleton, lib: &L, max_dist: usize) -> Vec<(usize, u128)> {
        let mut out = Vec::new();
        walk(query, &WalkOptions::new(max_dist), lib, |event| {
            if let Event::Hit {
                distance,
                key,
                again: false,
                ..
            } = event
            {
                out.push((distance, key));
            }
            false
        })
        .unwrap();
        out.sort();
        out
    }

    #[test]
    fn one_walk_over_the_union_finds_what_each_part_finds() {
        let whole = library(SMILES);
        // split unevenly, one part empty
        let parts = [
            library(&SMILES[..2]),
            library(&SMILES[2..11]),
            library(&[]),
            library(&SMILES[11..]),
        ];
        let mut found = 0;
        for q in ["CCCO", "c1ccccc1CO", "C1CCCCC1N", "CCN(C)CC"] {
            let query = skeleton_of_smiles(q).unwrap();
            for d in 0..4 {
                let mut each: Vec<(usize, u128)> = Vec::new();
                for p in &parts {
                    each.extend(hits(&query, p, d));
                }
                // a key several parts hold is one hit of the union
                each.sort();
                each.dedup();
                let union = hits(&query, &Union(&parts), d);
                assert_eq!(union, each, "{q} d={d}");
                assert_eq!(union, hits(&query, &whole, d), "{q} d={d}");
                found += union.len();
            }
        }
        assert!(found > 20, "the queries reach the library: {found} hits");
    }
}
