//! [`Union`]: several libraries searched as one by a single walk (a store set's shards on one
//! machine): a skeleton is in the union when one of them has it, and every filter passes a
//! graph when one of them would. Each filter of a part has no false negatives, so neither has
//! the union's, and the walk over it reaches every skeleton of every part within its distance:
//! one walk finds what a walk of each part finds.
//!
//! Asking every part costs a walk over many parts more than a walk of one library of them all
//! would: each part's WL filter is a memory read (and a binary search when its bitmap has the
//! bit), each part's bound a table read, and most graphs of a walk are in no part. A
//! [`UnionFilter`], made once when the union is opened, answers those for all the parts at
//! once: one bitmap of every part's WL hashes (a graph whose bit it lacks is in no part; one
//! that has it asks the parts) and one distance table per number of components, the least of
//! the parts' (`Grid::union`): all of MOSES in 8 shards, 20 unlike queries, top-100 within 3
//! edits, 165 ms a query without it against 82 for the one store. What it does not share: each
//! part's deletions filter is sized to that part, and a graph passes the union's when it passes
//! any of them (all of MOSES in 8 shards: 25,578 edits on one query against 15,870 over the one
//! store), and a key is looked up in every part until one has it.

use std::collections::HashMap;

use crate::index::bitmap_bits;
use crate::walk::{Grid, Library};

/// What a [`UnionFilter`] is made from: a library's WL hashes and its distance tables.
pub trait Summary {
    /// How many distinct WL hashes [`each_wl`](Summary::each_wl) gives.
    fn wl_count(&self) -> u64;
    /// Calls `f` with each of the library's skeletons' distinct WL hashes.
    fn each_wl(&self, f: &mut dyn FnMut(u64));
    /// Per number of components, the table of [`Library::bound`].
    fn grids(&self) -> &HashMap<usize, Grid>;
}

impl<S: Summary + ?Sized> Summary for &S {
    fn wl_count(&self) -> u64 {
        (**self).wl_count()
    }
    fn each_wl(&self, f: &mut dyn FnMut(u64)) {
        (**self).each_wl(f);
    }
    fn grids(&self) -> &HashMap<usize, Grid> {
        (**self).grids()
    }
}

/// The filters of several libraries made into one: a bitmap of all their WL hashes (bit
/// `h >> (64 - bits)`, at least 16 bits per hash: a hash none of them has is almost always
/// answered by this one read) and their bounds' tables joined.
#[derive(Debug, Clone)]
pub struct UnionFilter {
    bitmap: Vec<u64>,
    bits: u32,
    grids: HashMap<usize, Grid>,
}

impl UnionFilter {
    /// The filter of `parts` (reads every part's WL hashes once).
    pub fn new<S: Summary>(parts: &[S]) -> UnionFilter {
        let bits = bitmap_bits(parts.iter().map(Summary::wl_count).sum());
        let mut bitmap = vec![0u64; 1 << (bits - 6)];
        for p in parts {
            p.each_wl(&mut |h| {
                let b = (h >> (64 - bits)) as usize;
                bitmap[b / 64] |= 1 << (b % 64);
            });
        }
        let mut by: HashMap<usize, Vec<&Grid>> = HashMap::new();
        for p in parts {
            for (&c, g) in p.grids() {
                by.entry(c).or_default().push(g);
            }
        }
        let grids = by.into_iter().map(|(c, g)| (c, Grid::union(&g))).collect();
        UnionFilter {
            bitmap,
            bits,
            grids,
        }
    }

    fn may_hold(&self, wl: u64) -> bool {
        let b = (wl >> (64 - self.bits)) as usize;
        self.bitmap[b / 64] & (1 << (b % 64)) != 0
    }
}

/// The libraries `parts`, searched as one; with the parts' [`UnionFilter`] (made once, kept
/// with the parts) its WL filter and bounds are answered at once for all of them.
#[derive(Debug, Clone, Copy)]
pub struct Union<'a, L> {
    parts: &'a [L],
    filter: Option<&'a UnionFilter>,
}

impl<'a, L> Union<'a, L> {
    /// `parts` as one library, each asked in turn.
    pub fn new(parts: &'a [L]) -> Self {
        Union {
            parts,
            filter: None,
        }
    }

    /// `parts` as one library, `filter` (`UnionFilter::new(parts)`) asked first.
    pub fn filtered(parts: &'a [L], filter: &'a UnionFilter) -> Self {
        Union {
            parts,
            filter: Some(filter),
        }
    }
}

impl<L: Library> Library for Union<'_, L> {
    fn contains(&self, key: u128) -> bool {
        self.parts.iter().any(|l| l.contains(key))
    }

    fn bound(&self, components: usize, atoms: usize, rings: usize) -> Option<usize> {
        if let Some(f) = self.filter {
            return f.grids.get(&components).map(|g| g.get(atoms, rings));
        }
        self.parts
            .iter()
            .filter_map(|l| l.bound(components, atoms, rings))
            .min()
    }

    fn may_contain(&self, wl: u64) -> bool {
        if self.filter.is_some_and(|f| !f.may_hold(wl)) {
            return false;
        }
        self.parts.iter().any(|l| l.may_contain(wl))
    }

    fn insertion_may_reach(&self, wl: u64) -> bool {
        self.parts.iter().any(|l| l.insertion_may_reach(wl))
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
        let filter = UnionFilter::new(&parts);
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
                let union = hits(&query, &Union::new(&parts), d);
                assert_eq!(union, each, "{q} d={d}");
                assert_eq!(hits(&query, &Union::filtered(&parts, &filter), d), each);
                assert_eq!(union, hits(&query, &whole, d), "{q} d={d}");
                found += union.len();
            }
        }
        assert!(found > 20, "the queries reach the library: {found} hits");
    }

    #[test]
    fn the_filter_answers_as_the_parts_do() {
        let parts = [
            library(&SMILES[..5]),
            library(&[]),
            library(&SMILES[5..12]),
            library(&SMILES[12..]),
        ];
        let filter = UnionFilter::new(&parts);
        let (plain, filtered) = (Union::new(&parts), Union::filtered(&parts, &filter));
        // every bound (inside and beyond each part's table) is the least of the parts'
        for c in 0..4 {
            for a in 0..40 {
                for r in 0..8 {
                    assert_eq!(filtered.bound(c, a, r), plain.bound(c, a, r), "{c} {a} {r}");
                }
            }
        }
        // no hash of a part is filtered out; a hash no part has is (almost always) answered by
        // the filter's bitmap alone
        for p in &parts {
            p.each_wl(&mut |h| assert!(filter.may_hold(h) && filtered.may_contain(h)));
        }
        let absent: Vec<u64> = (0..10_000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .filter(|&h| !plain.may_contain(h))
            .collect();
        let held = absent.iter().filter(|&&h| filter.may_hold(h)).count();
        assert!(
            absent.len() > 9_000 && held < absent.len() / 100,
            "{held} of {}",
            absent.len()
        );
        assert!(absent.iter().all(|&h| !filtered.may_contain(h)));
        assert!(filter.bitmap.iter().any(|&w| w != 0));
    }
}
