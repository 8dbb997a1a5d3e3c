//! [`walk`]: the exact analog search by breadth-first search from the query over every edit,
//! canonicalizing each graph reached and looking it up among the library's skeletons; hits
//! come out distance by distance (all of distance 1 before any of distance 2).
//!
//! Every graph within D edits of the query is reached, except where a filter proves it cannot
//! matter, so the walk is exact by construction (`docs/analogs.md`): the atom and ring counts
//! bound the distance to any library skeleton; at the last distance a graph whose WL hash no
//! library skeleton has is not canonicalized, and a graph no insertion can turn into a library
//! skeleton makes its deletions only ([`Library::may_contain`],
//! [`Library::insertion_may_reach`]); with [`WalkOptions::probe`] each distance's hits are found
//! that way before the distance is canonicalized as the next frontier. Per-kind limits keep,
//! for each graph, every count vector no other dominates.
//!
//! Each graph kept also carries where its atoms come from (the query atom each one was, along
//! the path that reached it first: [`carry`]); a hit hands its graph and that origin to the
//! caller, which maps the query's elements onto the hit ([`crate::mapping`]). Every edit that
//! reaches a library skeleton at its distance is handed out (the first one first), so the
//! caller can keep the path whose mapping it likes best.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::canon::canonical;
use crate::divide::{pass, Alone, Fixed, Level, Pass, Peers, State, Workers};
use crate::edits::{apply, carry, component_count, Edit, Kind, ALL_KINDS, DELETIONS, NEW_ATOM};
use crate::keys::KeySetOf;
use crate::skeleton::Skeleton;
use crate::wl::{wl_hash, WlScratch, WlTable};
use crate::AnalogError;

/// The library side of a walk: which skeletons it holds (by canonical key) and how near in atom
/// and ring counts its skeletons come to a graph.
pub trait Library {
    /// Whether a skeleton with canonical key `key` is in the library.
    fn contains(&self, key: u128) -> bool;
    /// A lower bound of the edits from a graph of `components`, `atoms` and `rings` to any
    /// library skeleton (`None` when no skeleton has that many components).
    fn bound(&self, components: usize, atoms: usize, rings: usize) -> Option<usize>;
    /// False only when no library skeleton has this [`wl_hash`] (so the graph is not one of
    /// them); true lets the walk canonicalize the graph and look up its key.
    fn may_contain(&self, wl: u64) -> bool;
    /// False only when no graph one deletion away from a library skeleton has this
    /// [`wl_hash`] (so no single insertion turns the graph into a library skeleton).
    fn insertion_may_reach(&self, _wl: u64) -> bool {
        true
    }
}

/// A reference to a library is one (a [`crate::Union`] of borrowed libraries).
impl<L: Library + ?Sized> Library for &L {
    fn contains(&self, key: u128) -> bool {
        (**self).contains(key)
    }
    fn bound(&self, components: usize, atoms: usize, rings: usize) -> Option<usize> {
        (**self).bound(components, atoms, rings)
    }
    fn may_contain(&self, wl: u64) -> bool {
        (**self).may_contain(wl)
    }
    fn insertion_may_reach(&self, wl: u64) -> bool {
        (**self).insertion_may_reach(wl)
    }
}

/// A library held as a set of keys and, per number of components, a table of the least
/// `|atoms difference| + |rings difference|` to any of its skeletons (filled by [`finish`]).
///
/// [`finish`]: KeySet::finish
#[derive(Debug, Default, Clone)]
pub struct KeySet {
    keys: KeySetOf<u128>,
    wl: KeySetOf<u64>,
    /// components -> (atoms, rings) present
    shapes: HashMap<usize, Vec<(usize, usize)>>,
    grids: HashMap<usize, Grid>,
}

/// L1 distances to the nearest present (atoms, rings), for atoms `0..=amax`, rings `0..=rmax`
/// (a library's bound for one number of components, [`Library::bound`]).
#[derive(Debug, Clone)]
pub struct Grid {
    amax: usize,
    rmax: usize,
    cells: Vec<u32>,
}

impl Grid {
    pub(crate) fn new(points: &[(usize, usize)]) -> Grid {
        let amax = points.iter().map(|p| p.0).max().unwrap_or(0);
        let rmax = points.iter().map(|p| p.1).max().unwrap_or(0);
        let (w, h) = (amax + 1, rmax + 1);
        let far = u32::MAX / 4;
        let mut cells = vec![far; w * h];
        for &(a, r) in points {
            cells[r * w + a] = 0;
        }
        // the L1 distance transform is separable: along atoms, then along rings
        for r in 0..h {
            let row = &mut cells[r * w..(r + 1) * w];
            for a in 1..w {
                row[a] = row[a].min(row[a - 1] + 1);
            }
            for a in (0..w - 1).rev() {
                row[a] = row[a].min(row[a + 1] + 1);
            }
        }
        for a in 0..w {
            for r in 1..h {
                cells[r * w + a] = cells[r * w + a].min(cells[(r - 1) * w + a] + 1);
            }
            for r in (0..h - 1).rev() {
                cells[r * w + a] = cells[r * w + a].min(cells[(r + 1) * w + a] + 1);
            }
        }
        Grid { amax, rmax, cells }
    }

    pub(crate) fn get(&self, atoms: usize, rings: usize) -> usize {
        let (a, r) = (atoms.min(self.amax), rings.min(self.rmax));
        (atoms - a) + (rings - r) + self.cells[r * (self.amax + 1) + a] as usize
    }

    /// The grid of the union of the grids' points: each cell the least of theirs. [`get`] is
    /// the exact L1 distance to a grid's nearest point anywhere (beyond `amax` or `rmax` it
    /// grows by one a step), so the union's `get` is the least of theirs everywhere.
    ///
    /// [`get`]: Grid::get
    pub(crate) fn union(grids: &[&Grid]) -> Grid {
        let amax = grids.iter().map(|g| g.amax).max().unwrap_or(0);
        let rmax = grids.iter().map(|g| g.rmax).max().unwrap_or(0);
        let far = (u32::MAX / 4) as usize;
        let mut cells = Vec::with_capacity((amax + 1) * (rmax + 1));
        for r in 0..=rmax {
            for a in 0..=amax {
                let d = grids.iter().map(|g| g.get(a, r)).min().unwrap_or(far);
                cells.push(d.min(far) as u32);
            }
        }
        Grid { amax, rmax, cells }
    }
}

impl KeySet {
    /// Adds a skeleton (its key, [`wl_hash`] and shape); call [`finish`](KeySet::finish) after
    /// the last.
    pub fn insert(&mut self, key: u128, wl: u64, components: usize, atoms: usize, rings: usize) {
        self.wl.insert(wl);
        if self.keys.insert(key) {
            self.shapes
                .entry(components)
                .or_default()
                .push((atoms, rings));
        }
    }

    /// Builds the distance tables.
    pub fn finish(&mut self) {
        self.grids = self
            .shapes
            .iter()
            .map(|(&c, points)| (c, Grid::new(points)))
            .collect();
    }

    /// Number of distinct skeletons.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

impl crate::union::Summary for KeySet {
    fn wl_count(&self) -> u64 {
        self.wl.len() as u64
    }

    fn each_wl(&self, f: &mut dyn FnMut(u64)) {
        self.wl.iter().for_each(|&h| f(h));
    }

    fn grids(&self) -> &HashMap<usize, Grid> {
        &self.grids
    }
}

impl Library for KeySet {
    fn contains(&self, key: u128) -> bool {
        self.keys.contains(&key)
    }

    fn bound(&self, components: usize, atoms: usize, rings: usize) -> Option<usize> {
        self.grids.get(&components).map(|g| g.get(atoms, rings))
    }

    fn may_contain(&self, wl: u64) -> bool {
        self.wl.contains(&wl)
    }
}

/// What a walk did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WalkStats {
    /// edits generated (graph to graph steps considered)
    pub edges: u64,
    /// edits pruned by the bound before canonicalizing
    pub pruned: u64,
    /// edits at the last distance whose result no library skeleton's [`wl_hash`] matches
    /// (not canonicalized)
    pub filtered: u64,
    /// graphs at the distance before the last whose insertions were not made (no library
    /// skeleton is one insertion away)
    pub insertions_skipped: u64,
    /// distinct graphs reached (canonicalized and kept)
    pub nodes: u64,
    /// the last distance searched completely: every hit up to it was reported (less than the
    /// walk's `max_dist` when the deadline or `hit` ended it early)
    pub complete_to: usize,
    /// whether the deadline (or the stop flag) ended the walk (hits beyond `complete_to` may
    /// be missing)
    pub timed_out: bool,
}

/// A limit per edit kind (`u8::MAX`: none), in [`Kind::ALL`] order.
pub type Limits = [u8; 6];

/// No limit on any kind.
pub const UNLIMITED: Limits = [u8::MAX; 6];

/// The edit kinds worth making from `g` when only library skeletons one edit away matter:
/// all, or the deletions alone when no insertion can reach one (counted in `stats`).
pub(crate) fn kinds_worth<L: Library>(library: &L, g: &mut Graph<'_>, stats: &mut WalkStats) -> u8 {
    if library.insertion_may_reach(g.hash()) {
        ALL_KINDS
    } else {
        stats.insertions_skipped += 1;
        DELETIONS
    }
}

/// A graph of the walk (and of the analog index's build) with what hashing it and its edits
/// takes: its neighbour table
/// ([`WlTable`], made at the first hash: graphs of the distances before the last are never
/// hashed) where the table holds it, its bond list and the scratch of [`wl_hash`] otherwise.
pub(crate) struct Graph<'g> {
    g: &'g Skeleton,
    /// `None` until the first hash
    table: Option<Option<WlTable>>,
    scratch: WlScratch,
    bonds: Vec<(u32, u32)>,
}

impl<'g> Graph<'g> {
    pub(crate) fn new(g: &'g Skeleton) -> Graph<'g> {
        Graph {
            g,
            table: None,
            scratch: WlScratch::default(),
            bonds: Vec::new(),
        }
    }

    fn table(&mut self) -> Option<&WlTable> {
        let g = self.g;
        self.table.get_or_insert_with(|| WlTable::new(g)).as_ref()
    }

    /// [`wl_hash`] of the graph.
    pub(crate) fn hash(&mut self) -> u64 {
        if let Some(h) = self.table().map(WlTable::hash) {
            return h;
        }
        self.bonds.clear();
        self.bonds.extend(self.g.bond_list());
        wl_hash(self.g.atoms(), &self.bonds, &mut self.scratch)
    }

    /// [`wl_hash`] of the graph `e` makes of it.
    pub(crate) fn hash_after(&mut self, e: Edit) -> u64 {
        if let Some(h) = self.table().and_then(|t| t.hash_after(e)) {
            return h;
        }
        let atoms = apply(self.g, e, &mut self.bonds);
        wl_hash(atoms, &self.bonds, &mut self.scratch)
    }
}

/// Counts one edit considered; false once the walk is out of time or told to stop (the
/// deadline and the stop flag are read as each worker's pass over a distance starts and
/// every 256 edits of it: [`out_of_time`]), and from then on.
pub(crate) fn count_edit(
    stats: &mut WalkStats,
    deadline: Option<std::time::Instant>,
    stop: Option<&AtomicBool>,
) -> bool {
    if stats.timed_out {
        return false;
    }
    stats.edges += 1;
    if stats.edges % 256 == 0 && out_of_time(deadline, stop) {
        stats.timed_out = true;
    }
    !stats.timed_out
}

/// Whether the deadline has passed or the stop flag is set.
pub(crate) fn out_of_time(deadline: Option<std::time::Instant>, stop: Option<&AtomicBool>) -> bool {
    deadline.is_some_and(|d| std::time::Instant::now() >= d)
        || stop.is_some_and(|s| s.load(Ordering::Relaxed))
}

/// The ring count after an edit of `kind` on a graph of `rings` rings.
pub(crate) fn shift_rings(kind: Kind, rings: usize) -> usize {
    match kind {
        Kind::Rdn => rings - 1,
        Kind::Rup => rings + 1,
        _ => rings,
    }
}

/// The [`Event::Hit`] of a path to `key` at `distance`, marking `key` handed out (`again` when
/// it was before).
fn hit_event<'a>(
    distance: usize,
    key: u128,
    counts: &'a [u8; 6],
    graph: &'a Skeleton,
    origin: &'a [u16],
    reported: &mut KeySetOf<u128>,
) -> Event<'a> {
    Event::Hit {
        distance,
        key,
        counts,
        graph,
        origin,
        again: !reported.insert(key),
    }
}

pub(crate) fn dominated(seen: &[[u8; 6]], c: &[u8; 6]) -> bool {
    seen.iter().any(|s| s.iter().zip(c).all(|(a, b)| a <= b))
}

/// What a walk reports, in this order: the hits at distance 0, `Done(0)`, the hits at
/// distance 1, `Done(1)`, and so on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// A library skeleton at `distance`, reached by a path with these edits by kind
    /// ([`Kind::ALL`] order). The first `Hit` of a key is the first shortest path the walk
    /// found to it; later ones (same distance, `again`) are other paths of the same length
    /// through the graphs the walk kept.
    Hit {
        /// edits from the query
        distance: usize,
        /// its canonical key
        key: u128,
        /// edits by kind
        counts: &'a [u8; 6],
        /// the graph the path ends at (isomorphic to the library skeleton), in the walk's
        /// numbering
        graph: &'a Skeleton,
        /// for each atom of `graph`, the query atom it comes from along the path, or
        /// [`NEW_ATOM`]
        origin: &'a [u16],
        /// whether this key was handed out before (at this distance)
        again: bool,
    },
    /// Every hit at this distance (and below) has been reported: with
    /// [`WalkOptions::probe`], before the distance's graphs are canonicalized for the next
    /// one, so that returning true ends the walk without that work.
    Done(usize),
}

/// How far and how a walk searches.
#[derive(Debug, Clone, Copy)]
pub struct WalkOptions<'a> {
    /// the largest distance searched
    pub max_dist: usize,
    /// the most edits of each kind a path may use
    pub limits: Limits,
    /// bounds each canonicalization (a graph needing more is an error, never a wrong key)
    pub max_leaves: usize,
    /// when it passes, the walk stops where it is (checked every 256 edits) with `timed_out`
    /// set; every hit up to `complete_to` was still reported
    pub deadline: Option<std::time::Instant>,
    /// when set (by another thread), the walk stops as at the deadline: a caller's way to
    /// end a walk whose answer nobody waits for any more
    pub stop: Option<&'a AtomicBool>,
    /// find each distance's hits before canonicalizing its graphs for the next distance
    /// (cheap: only graphs the WL filter passes are canonicalized), then report the distance
    /// [`Event::Done`]; pays when `on` is likely to end the walk early (a top-k search, the
    /// shards of a store set walking in step), costs one more pass over the edits otherwise
    pub probe: bool,
    /// the threads each distance is divided among (the same events, in the same order, for
    /// any number: [`crate::divide`]); 0 or 1: the calling thread alone
    pub threads: usize,
}

impl WalkOptions<'_> {
    /// To `max_dist`, no limits, 100,000 leaves, no deadline, no stop flag, one thread.
    pub fn new(max_dist: usize) -> WalkOptions<'static> {
        WalkOptions {
            max_dist,
            limits: UNLIMITED,
            max_leaves: 100_000,
            deadline: None,
            stop: None,
            probe: false,
            threads: 1,
        }
    }
}

/// Walks from `query` to distance `opts.max_dist`, telling `on` each library skeleton reached
/// (once, nearest first) and each distance completed ([`Event`]). When `on` returns true the
/// walk ends with the distance it is at (every hit at that distance is still reported: enough
/// to rank the nearest k). Each distance is divided among [`WalkOptions::threads`] threads.
pub fn walk<L: Library + Sync>(
    query: &Skeleton,
    opts: &WalkOptions<'_>,
    library: &L,
    on: impl FnMut(Event<'_>) -> bool,
) -> Result<WalkStats, AnalogError> {
    walk_with(query, opts, library, &mut Alone, on)
}

/// [`walk`], each distance divided among this process's threads and `peers`: processes walking
/// the same query over the same library with the same options at the same time, each
/// distance's records exchanged with them ([`crate::divide`]). Every walker hands `on` the
/// events of the whole walk, the same as one walk alone; each counts in its [`WalkStats`] the
/// edits it made and the graphs it kept (summed over the walkers: one walk's), and all end
/// where one walk ends (when one runs out of time or fails, all do).
pub fn walk_with<L: Library + Sync>(
    query: &Skeleton,
    opts: &WalkOptions<'_>,
    library: &L,
    peers: &mut dyn Peers,
    mut on: impl FnMut(Event<'_>) -> bool,
) -> Result<WalkStats, AnalogError> {
    let WalkOptions {
        max_dist,
        limits,
        max_leaves,
        deadline,
        stop,
        probe,
        threads,
    } = *opts;
    let mut stats = WalkStats::default();
    if query.atoms() >= NEW_ATOM as usize {
        return Err(AnalogError::Invalid(format!(
            "a query of {} atoms (the walk takes at most {})",
            query.atoms(),
            NEW_ATOM - 1
        )));
    }
    let workers = Workers {
        rank: peers.rank(),
        size: peers.size().max(1),
        threads: threads.max(1),
    };
    let comps = component_count(query);
    let start = canonical(query, max_leaves)?.key();
    let identity: Vec<u16> = (0..query.atoms() as u16).collect();
    // seen: key -> count vectors kept (one, the first, without limits); found: key -> the
    // distance it was found at
    let mut state = State::default();
    state.seen.insert(start, vec![[0; 6]]);
    let mut enough = false;
    if library.contains(start) {
        state.found.insert(start, 0);
        enough = on(Event::Hit {
            distance: 0,
            key: start,
            counts: &[0; 6],
            graph: query,
            origin: &identity,
            again: false,
        });
    }
    enough |= on(Event::Done(0));
    let limited = limits != UNLIMITED;
    state.frontier = vec![(query.clone(), [0; 6], identity)];
    let fixed = Fixed {
        comps,
        limits,
        max_leaves,
        deadline,
        stop,
        library,
    };
    let mut origin = Vec::new();
    for depth in 1..=max_dist {
        if enough || stats.timed_out {
            break;
        }
        stats.complete_to = depth - 1;
        let left = max_dist - depth;
        // keys handed out at this distance
        let mut reported: KeySetOf<u128> = KeySetOf::default();
        let probed = left > 0 && probe;
        if probed {
            // this distance's hits first, canonicalizing only the graphs the filter passes;
            // the whole level is canonicalized below only if the walk goes on
            let level = Level {
                fixed: &fixed,
                state: &state,
                depth,
                left,
            };
            let records = pass(&level, Pass::Probe, workers, peers, &mut stats)?;
            for mut r in records {
                let (g, counts, from) = &state.frontier[r.item as usize];
                if *state.found.entry(r.key).or_insert(depth) != depth {
                    continue;
                }
                let mut c = *counts;
                c[r.edit.kind as usize] += 1;
                let result = r.take_graph(g)?;
                carry(from, r.edit, &mut origin);
                enough |= on(hit_event(depth, r.key, &c, &result, &origin, &mut reported));
            }
            if stats.timed_out {
                break;
            }
            // every hit at this distance is out: the caller may end the walk here, before the
            // level is canonicalized for the next distance
            stats.complete_to = depth;
            if enough | on(Event::Done(depth)) {
                enough = true;
                break;
            }
        }
        let level = Level {
            fixed: &fixed,
            state: &state,
            depth,
            left,
        };
        let records = pass(&level, Pass::Build, workers, peers, &mut stats)?;
        let mut next = Vec::new();
        for mut r in records {
            let (g, counts, from) = &state.frontier[r.item as usize];
            let mut c = *counts;
            c[r.edit.kind as usize] += 1;
            // a library skeleton first found at this distance: every path to it is handed out
            // (unless the probe above handed them out already)
            let emit = r.hit && *state.found.entry(r.key).or_insert(depth) == depth && !probed;
            let mut result = None;
            if emit {
                let made = result.insert(r.take_graph(g)?);
                carry(from, r.edit, &mut origin);
                enough |= on(hit_event(depth, r.key, &c, made, &origin, &mut reported));
            }
            if !r.keep {
                continue;
            }
            let kept = state.seen.entry(r.key).or_default();
            if limited {
                if dominated(kept, &c) {
                    continue;
                }
                kept.retain(|s| !c.iter().zip(s).all(|(a, b)| a <= b));
            } else if !kept.is_empty() {
                continue;
            }
            kept.push(c);
            stats.nodes += u64::from(r.own);
            if left > 0 {
                if !emit {
                    carry(from, r.edit, &mut origin);
                }
                let made = match result {
                    Some(made) => made,
                    None => r.take_graph(g)?,
                };
                next.push((made, c, origin.clone()));
            }
        }
        if !stats.timed_out && !probed {
            stats.complete_to = depth;
            enough |= on(Event::Done(depth));
        }
        state.frontier = next;
    }
    if !enough && !stats.timed_out {
        stats.complete_to = max_dist;
    }
    Ok(stats)
}

/// The skeletons of a list of SMILES (a store's, by position): the key set a walk searches and
/// the positions of each skeleton's molecules, in memory (a store's on-disk index is
/// [`crate::AnalogIndex`]).
#[derive(Debug, Default)]
pub struct SkeletonGroups {
    /// the library a walk searches
    pub keys: KeySet,
    /// canonical key -> positions of its molecules, ascending
    pub groups: HashMap<u128, Vec<u32>>,
    /// positions whose SMILES could not be read, with the reason
    pub failed: Vec<(u32, String)>,
}

impl SkeletonGroups {
    /// Reads and canonicalizes every SMILES on `threads` threads.
    pub fn build(smiles: &[&str], threads: usize, max_leaves: usize) -> SkeletonGroups {
        type Part = Vec<(u32, Result<(u128, u64, usize, usize, usize), String>)>;
        let threads = threads.max(1);
        let chunk = smiles.len().div_ceil(threads).max(1);
        let parts: Vec<Part> = molsift_tasks::scoped(smiles.len().div_ceil(chunk), |t| {
            let part = &smiles[t * chunk..((t + 1) * chunk).min(smiles.len())];
            part.iter()
                .enumerate()
                .map(|(i, smi)| {
                    let pos = (t * chunk + i) as u32;
                    let one = crate::smiles::skeleton_of_smiles(smi)
                        .and_then(|g| {
                            let key = canonical(&g, max_leaves)?.key();
                            let comps = component_count(&g);
                            let rings = g.bonds() + comps - g.atoms();
                            let bonds: Vec<_> = g.bond_list().collect();
                            let wl = wl_hash(g.atoms(), &bonds, &mut WlScratch::default());
                            Ok((key, wl, comps, g.atoms(), rings))
                        })
                        .map_err(|e| e.to_string());
                    (pos, one)
                })
                .collect::<Part>()
        });
        let mut out = SkeletonGroups::default();
        for (pos, one) in parts.into_iter().flatten() {
            match one {
                Ok((key, wl, comps, atoms, rings)) => {
                    out.keys.insert(key, wl, comps, atoms, rings);
                    out.groups.entry(key).or_default().push(pos);
                }
                Err(why) => out.failed.push((pos, why)),
            }
        }
        out.keys.finish();
        out
    }
}
