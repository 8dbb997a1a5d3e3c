//! One distance of a [`crate::walk()`] divided among workers: the threads of this process and
//! the other processes ([`Peers`], MPI ranks) walking the same query over the same library.
//!
//! A distance's work is the edits of every graph of its frontier: each edit is hashed,
//! canonicalized and looked up. Worker `w` of `W` takes the frontier's graphs `w, w + W, ...`
//! ([`work`]), or, for a frontier of fewer than [`SPLIT_BELOW`] graphs a worker (the first
//! distances: the query alone, then its few neighbours, each graph with hundreds of edits), the
//! edits `w, w + W, ...` of the frontier's edits counted graph after graph, so that no worker
//! waits while another walks a graph alone. It hands back a [`Record`] for each edit whose
//! result matters: a library skeleton first reached at this distance, or a graph the next
//! distance may start from (one its worker has not already seen dominated: the frontier so far
//! and its own earlier records). Every
//! walker then merges every record in the order of one walk (graph, then edit: the walk's
//! `merge` steps), so that the hits handed out, their paths and the next frontier are exactly
//! one walk's, whatever the number of threads and peers. Between processes only the records'
//! fixed-size fields travel ([`encode`]): each walker rebuilds the graphs it merges from its
//! own copy of the frontier.

use std::sync::atomic::AtomicBool;

use crate::canon::canonical;
use crate::edits::{apply, edit_list, Edit, Kind, ALL_KINDS};
use crate::keys::KeyMap;
use crate::skeleton::Skeleton;
use crate::walk::{
    count_edit, dominated, kinds_worth, out_of_time, shift_rings, Graph, Library, WalkStats,
};
use crate::AnalogError;

/// A graph of the walk's frontier: the graph, its path's edits by kind, and the query atom each
/// of its atoms comes from.
pub(crate) type Node = (Skeleton, [u8; 6], Vec<u16>);

/// The other processes walking the same query over the same library, at the same time: each
/// distance's records are exchanged with them ([`Peers::exchange`]) so that every one of them
/// merges all of them. A walk alone has none ([`Alone`]).
pub trait Peers {
    /// This walker's place among them, `0..size()`.
    fn rank(&self) -> usize;
    /// How many walk (this one included).
    fn size(&self) -> usize;
    /// Every walker's bytes, in rank order (this one's `mine` included at its rank), once every
    /// walker has given its own: a collective, called by every walker at the same point.
    fn exchange(&mut self, mine: Vec<u8>) -> Result<Vec<Vec<u8>>, AnalogError>;
}

/// No peers: the walk's threads divide each distance among themselves.
pub struct Alone;

impl Peers for Alone {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn exchange(&mut self, mine: Vec<u8>) -> Result<Vec<Vec<u8>>, AnalogError> {
        Ok(vec![mine])
    }
}

/// The two passes over a distance's frontier: its hits alone ([`crate::WalkOptions::probe`]),
/// or every graph the next distance starts from (and, without a probe, the hits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    Probe,
    Build,
}

/// What stays the same over a walk's distances.
pub(crate) struct Fixed<'a, L> {
    /// the query's components
    pub comps: usize,
    pub limits: [u8; 6],
    pub max_leaves: usize,
    pub deadline: Option<std::time::Instant>,
    pub stop: Option<&'a AtomicBool>,
    pub library: &'a L,
}

/// What a walk has reached: the graphs the next distance starts from, the distance each
/// library skeleton was found at, and the count vectors kept of each graph reached.
#[derive(Default)]
pub(crate) struct State {
    pub frontier: Vec<Node>,
    pub found: KeyMap<u128, usize>,
    pub seen: KeyMap<u128, Vec<[u8; 6]>>,
}

/// What a distance's workers read: the walk's state before the distance, read only.
pub(crate) struct Level<'a, L> {
    pub fixed: &'a Fixed<'a, L>,
    pub state: &'a State,
    pub depth: usize,
    /// distances left after this one
    pub left: usize,
}

/// An edit whose result matters, from frontier graph `item`: the `seq`-th of its edits.
#[derive(Debug)]
pub(crate) struct Record {
    pub item: u32,
    pub seq: u32,
    pub edit: Edit,
    /// the result's canonical key
    pub key: u128,
    /// a library skeleton not reached at an earlier distance
    pub hit: bool,
    /// a graph the next distance may start from (no earlier one of its key dominates it)
    pub keep: bool,
    /// made by this process (counted in its statistics)
    pub own: bool,
    /// the result, where this process made it
    pub graph: Option<Skeleton>,
}

impl Record {
    /// The result graph: this process's, or rebuilt from the frontier graph it comes from.
    pub fn take_graph(&mut self, from: &Skeleton) -> Result<Skeleton, AnalogError> {
        match self.graph.take() {
            Some(g) => Ok(g),
            None => {
                let mut bonds = Vec::new();
                let atoms = apply(from, self.edit, &mut bonds);
                Skeleton::new(atoms, &bonds)
            }
        }
    }
}

/// What one worker did: its records (in walk order), statistics, and the first error.
#[derive(Default)]
struct Out {
    records: Vec<Record>,
    stats: WalkStats,
    error: Option<(u32, u32, AnalogError)>,
}

/// The workers of a walk: `threads` in each of `size` processes, this one `rank`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Workers {
    pub rank: usize,
    pub size: usize,
    pub threads: usize,
}

/// One pass of a distance over every worker: this process's threads, then the exchange with
/// its peers. The records of every worker in walk order; this process's statistics added to
/// `stats` (`timed_out` when any worker anywhere ran out of time); the error of the earliest
/// edit that failed anywhere.
pub(crate) fn pass<L: Library + Sync>(
    level: &Level<'_, L>,
    kind: Pass,
    workers: Workers,
    peers: &mut dyn Peers,
    stats: &mut WalkStats,
) -> Result<Vec<Record>, AnalogError> {
    let total = workers.size * workers.threads;
    let first = workers.rank * workers.threads;
    let outs: Vec<Out> = if workers.threads == 1 {
        vec![work(level, kind, first, total)]
    } else {
        // a thread the system will not start: its share runs on this one
        molsift_tasks::scoped(workers.threads, |t| work(level, kind, first + t, total))
    };
    let (mut records, mut timed_out, mut error) = (Vec::new(), false, None);
    for out in outs {
        stats.edges += out.stats.edges;
        stats.pruned += out.stats.pruned;
        stats.filtered += out.stats.filtered;
        stats.insertions_skipped += out.stats.insertions_skipped;
        timed_out |= out.stats.timed_out;
        error = earliest(error, out.error);
        records.extend(out.records);
    }
    if workers.size > 1 {
        let all = peers.exchange(encode(&records, timed_out, error.as_ref()))?;
        if all.len() != workers.size {
            return Err(AnalogError::Invalid(format!(
                "an exchange among {} walkers gave {} parts",
                workers.size,
                all.len()
            )));
        }
        for (r, bytes) in all.iter().enumerate() {
            if r != workers.rank {
                let (t, e, theirs) = decode(bytes)?;
                timed_out |= t;
                error = earliest(error, e);
                records.extend(theirs);
            }
        }
    }
    if let Some((_, _, e)) = error {
        return Err(e);
    }
    stats.timed_out |= timed_out;
    if total > 1 {
        records.sort_unstable_by_key(|r| (r.item, r.seq));
    }
    Ok(records)
}

/// The error of the earlier edit.
fn earliest(
    a: Option<(u32, u32, AnalogError)>,
    b: Option<(u32, u32, AnalogError)>,
) -> Option<(u32, u32, AnalogError)> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if (b.0, b.1) < (a.0, a.1) { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// A frontier of fewer graphs than this per worker is divided among the workers edit by edit
/// rather than graph by graph ([`work`]). Each worker then lists every graph's edits (a few
/// microseconds a graph, against hundreds of edits each hashed and most canonicalized);
/// frontiers this small are the first distances', where dealing whole graphs left one worker
/// walking the query alone (half of two workers' time at distance 1).
pub(crate) const SPLIT_BELOW: usize = 16;

/// Worker `me` of `of`: for one pass, the edits of frontier graphs `me, me + of, ...`, or for a
/// frontier of fewer than [`SPLIT_BELOW`] graphs a worker, the edits `me, me + of, ...` of all
/// the frontier's edits counted graph after graph. Either way a worker takes its edits in walk
/// order (graph, then edit), which its dropping of its own repeats relies on, and each graph's
/// statistics (`insertions_skipped`) are counted by one worker only, graph `i`'s by worker
/// `i % of`.
fn work<L: Library>(level: &Level<'_, L>, kind: Pass, me: usize, of: usize) -> Out {
    let mut out = Out::default();
    let f = level.fixed;
    out.stats.timed_out = out_of_time(f.deadline, f.stop);
    // this worker's graphs so far, by key (the count vectors it keeps for the next distance)
    let mut mine: KeyMap<u128, Vec<[u8; 6]>> = KeyMap::default();
    let limited = f.limits != crate::walk::UNLIMITED;
    let (mut list, mut bonds) = (Vec::new(), Vec::new());
    let lib = f.library;
    let split = of > 1 && level.state.frontier.len() < SPLIT_BELOW * of;
    let (first, step) = if split { (0, 1) } else { (me, of) };
    // the frontier's edits before graph i (split)
    let mut before = 0usize;
    // a graph's statistics counted by another worker
    let mut theirs = WalkStats::default();
    for (i, (g, counts, _)) in level
        .state
        .frontier
        .iter()
        .enumerate()
        .skip(first)
        .step_by(step)
    {
        if out.stats.timed_out || out.error.is_some() {
            break;
        }
        let rings = g.bonds() + f.comps - g.atoms();
        let mut graph = Graph::new(g);
        // at the last distance only library skeletons matter
        let mask = if kind == Pass::Probe || level.left == 0 {
            let stats = if i % of == me {
                &mut out.stats
            } else {
                &mut theirs
            };
            kinds_worth(lib, &mut graph, stats)
        } else {
            ALL_KINDS
        };
        edit_list(g, mask, &mut list);
        let offset = before;
        before += list.len();
        for (seq, &e) in list.iter().enumerate() {
            if split && (offset + seq) % of != me {
                continue;
            }
            if !count_edit(&mut out.stats, f.deadline, f.stop) {
                break;
            }
            let k = e.kind as usize;
            if counts[k] >= f.limits[k] {
                continue;
            }
            let atoms = e.atoms_after(g.atoms());
            let bound = lib.bound(f.comps, atoms, shift_rings(e.kind, rings));
            if kind == Pass::Probe {
                if bound != Some(0) {
                    continue;
                }
            } else if !bound.is_some_and(|b| b <= level.left) {
                out.stats.pruned += 1;
                continue;
            }
            if (kind == Pass::Probe || level.left == 0) && !lib.may_contain(graph.hash_after(e)) {
                out.stats.filtered += 1;
                continue;
            }
            apply(g, e, &mut bonds);
            let made = Skeleton::new(atoms, &bonds)
                .and_then(|r| canonical(&r, f.max_leaves).map(|c| (r, c.key())));
            let (result, key) = match made {
                Ok(rk) => rk,
                Err(err) => {
                    out.error = Some((i as u32, seq as u32, err));
                    break;
                }
            };
            let hit = lib.contains(key)
                && level
                    .state
                    .found
                    .get(&key)
                    .map_or(true, |&d| d == level.depth);
            let keep = kind == Pass::Build && {
                let mut c = *counts;
                c[k] += 1;
                let before = level.state.seen.get(&key).map_or(&[][..], Vec::as_slice);
                let dropped = if limited {
                    dominated(before, &c)
                } else {
                    !before.is_empty()
                };
                // a worker alone leaves its own repeats to the merge
                !dropped
                    && (of == 1 || {
                        let here = mine.entry(key).or_default();
                        let again = if limited {
                            dominated(here, &c)
                        } else {
                            !here.is_empty()
                        };
                        if !again {
                            here.push(c);
                        }
                        !again
                    })
            };
            if hit || keep {
                out.records.push(Record {
                    item: i as u32,
                    seq: seq as u32,
                    edit: e,
                    key,
                    hit,
                    keep,
                    own: true,
                    graph: Some(result),
                });
            }
        }
    }
    out
}

/// The bytes of one record between processes.
const RECORD_BYTES: usize = 4 + 4 + 1 + 4 + 4 + 16 + 1;

/// A process's records, whether one of its workers ran out of time, and its first error, as
/// bytes: a flag byte, the error (its edit, kind and text), then the records' fixed fields.
fn encode(records: &[Record], timed_out: bool, error: Option<&(u32, u32, AnalogError)>) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + records.len() * RECORD_BYTES);
    out.push(u8::from(timed_out));
    match error {
        None => out.push(0),
        Some((item, seq, e)) => {
            let (tag, text) = match e {
                AnalogError::TooSymmetric(n) => (1u8, n.to_string()),
                AnalogError::Invalid(why) => (2u8, why.clone()),
                // no other error comes of a pass; were one to, its words travel
                other => (2u8, other.to_string()),
            };
            out.push(tag);
            out.extend_from_slice(&item.to_le_bytes());
            out.extend_from_slice(&seq.to_le_bytes());
            out.extend_from_slice(&(text.len() as u32).to_le_bytes());
            out.extend_from_slice(text.as_bytes());
        }
    }
    for r in records {
        out.extend_from_slice(&r.item.to_le_bytes());
        out.extend_from_slice(&r.seq.to_le_bytes());
        out.push(r.edit.kind as u8);
        out.extend_from_slice(&r.edit.a.to_le_bytes());
        out.extend_from_slice(&r.edit.b.to_le_bytes());
        out.extend_from_slice(&r.key.to_le_bytes());
        out.push(u8::from(r.hit) | u8::from(r.keep) << 1);
    }
    out
}

/// Reads what [`encode`] wrote (another process's records: no graphs, not this one's own).
#[allow(clippy::type_complexity)]
fn decode(b: &[u8]) -> Result<(bool, Option<(u32, u32, AnalogError)>, Vec<Record>), AnalogError> {
    let bad = |what: &str| AnalogError::Invalid(format!("a peer's walk records: {what}"));
    let u32_at = |at: usize| -> Result<u32, AnalogError> {
        b.get(at..at + 4)
            .map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
            .ok_or_else(|| bad("cut short"))
    };
    let (&flag, &tag) = (
        b.first().ok_or_else(|| bad("empty"))?,
        b.get(1).ok_or_else(|| bad("cut short"))?,
    );
    let mut at = 2;
    let error = match tag {
        0 => None,
        1 | 2 => {
            let (item, seq, len) = (u32_at(at)?, u32_at(at + 4)?, u32_at(at + 8)? as usize);
            at += 12;
            let text = b.get(at..at + len).ok_or_else(|| bad("cut short"))?;
            at += len;
            let text = String::from_utf8_lossy(text).into_owned();
            let e = match (tag, text.parse::<usize>()) {
                (1, Ok(n)) => AnalogError::TooSymmetric(n),
                _ => AnalogError::Invalid(text),
            };
            Some((item, seq, e))
        }
        _ => return Err(bad("an unknown error kind")),
    };
    let body = &b[at..];
    if body.len() % RECORD_BYTES != 0 {
        return Err(bad("not whole records"));
    }
    let mut records = Vec::with_capacity(body.len() / RECORD_BYTES);
    for r in body.chunks_exact(RECORD_BYTES) {
        let word = |o: usize| u32::from_le_bytes(r[o..o + 4].try_into().expect("4 bytes"));
        let kind = *Kind::ALL
            .get(r[8] as usize)
            .ok_or_else(|| bad("an unknown edit kind"))?;
        records.push(Record {
            item: word(0),
            seq: word(4),
            edit: Edit {
                kind,
                a: word(9),
                b: word(13),
            },
            key: u128::from_le_bytes(r[17..33].try_into().expect("16 bytes")),
            hit: r[33] & 1 != 0,
            keep: r[33] & 2 != 0,
            own: false,
            graph: None,
        });
    }
    Ok((flag != 0, error, records))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walk::{walk_with, Event, WalkOptions, WalkStats};
    use crate::{skeleton_of_smiles, SkeletonGroups};
    use std::sync::{Barrier, Mutex};

    /// An event as the test keeps it.
    #[derive(Debug, PartialEq, Eq)]
    enum Ev {
        Hit(usize, u128, [u8; 6], usize, Vec<(u32, u32)>, Vec<u16>, bool),
        Done(usize),
    }

    fn owned(e: Event<'_>) -> Ev {
        match e {
            Event::Hit {
                distance: d,
                key: k,
                counts: c,
                graph: g,
                origin: o,
                again: a,
            } => Ev::Hit(d, k, *c, g.atoms(), g.bond_list().collect(), o.to_vec(), a),
            Event::Done(d) => Ev::Done(d),
        }
    }

    /// Walkers of one test, exchanging through shared slots.
    struct Sim<'a> {
        rank: usize,
        size: usize,
        slots: &'a Mutex<Vec<Vec<u8>>>,
        barrier: &'a Barrier,
    }

    impl Peers for Sim<'_> {
        fn rank(&self) -> usize {
            self.rank
        }
        fn size(&self) -> usize {
            self.size
        }
        fn exchange(&mut self, mine: Vec<u8>) -> Result<Vec<Vec<u8>>, AnalogError> {
            self.slots.lock().unwrap()[self.rank] = mine;
            self.barrier.wait();
            let all = self.slots.lock().unwrap().clone();
            self.barrier.wait();
            Ok(all)
        }
    }

    /// The events and stats of walks of `size` walkers of `threads` threads each.
    fn walks(
        q: &Skeleton,
        opts: &WalkOptions<'_>,
        lib: &crate::KeySet,
        size: usize,
        enough: usize,
    ) -> Vec<(Vec<Ev>, WalkStats)> {
        let slots = Mutex::new(vec![Vec::new(); size]);
        let barrier = Barrier::new(size);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..size)
                .map(|rank| {
                    let (slots, barrier) = (&slots, &barrier);
                    s.spawn(move || {
                        let mut peers = Sim {
                            rank,
                            size,
                            slots,
                            barrier,
                        };
                        let mut events = Vec::new();
                        let mut hits = 0;
                        let stats = walk_with(q, opts, lib, &mut peers, |e| {
                            hits += usize::from(matches!(e, Event::Hit { again: false, .. }));
                            events.push(owned(e));
                            hits >= enough
                        })
                        .unwrap();
                        (events, stats)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    #[test]
    fn a_divided_walk_hands_out_one_walks_events() {
        let text = include_str!("../../../data/nci_first_5k.smi");
        let smiles: Vec<&str> = text
            .lines()
            .take(800)
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        let lib = SkeletonGroups::build(&smiles, 2, 100_000).keys;
        let queries = [
            "CCC1=C(N)C=C(C)N=C1",
            "CC(=O)NC1=CC(=CC(=C1)C)C",
            "OC(=O)C1=CCCC1Cl",
        ];
        let mut limited = WalkOptions::new(3);
        limited.limits = [1, 255, 0, 1, 255, 255];
        let cases = [
            (WalkOptions::new(2), usize::MAX),
            (WalkOptions::new(3), usize::MAX),
            (
                WalkOptions {
                    probe: true,
                    ..WalkOptions::new(3)
                },
                4,
            ),
            (limited, usize::MAX),
            (
                WalkOptions {
                    probe: true,
                    ..limited
                },
                2,
            ),
        ];
        let mut hits = 0;
        for smi in queries {
            let q = skeleton_of_smiles(smi).unwrap();
            for (opts, enough) in &cases {
                let (one, alone) = walks(&q, opts, &lib, 1, *enough).pop().unwrap();
                hits += one.iter().filter(|e| matches!(e, Ev::Hit(..))).count();
                for (threads, size) in [(2, 1), (3, 1), (1, 2), (2, 3), (1, 4)] {
                    let opts = WalkOptions { threads, ..*opts };
                    let got = walks(&q, &opts, &lib, size, *enough);
                    let sum = |f: fn(&WalkStats) -> u64| got.iter().map(|(_, s)| f(s)).sum::<u64>();
                    for (events, stats) in &got {
                        assert!(events == &one, "{smi} {threads} threads x {size}");
                        assert_eq!(
                            (stats.complete_to, stats.timed_out),
                            (alone.complete_to, alone.timed_out)
                        );
                    }
                    assert_eq!(
                        [
                            sum(|s| s.edges),
                            sum(|s| s.pruned),
                            sum(|s| s.filtered),
                            sum(|s| s.nodes),
                            sum(|s| s.insertions_skipped)
                        ],
                        [
                            alone.edges,
                            alone.pruned,
                            alone.filtered,
                            alone.nodes,
                            alone.insertions_skipped
                        ],
                        "{smi} {threads} threads x {size}"
                    );
                }
            }
        }
        assert!(hits > 50, "the cases find hits ({hits})");
    }

    #[test]
    fn records_travel_whole() {
        let r = |item, seq, kind, hit, keep| Record {
            item,
            seq,
            edit: Edit {
                kind,
                a: 7,
                b: u32::MAX,
            },
            key: u128::MAX - u128::from(item),
            hit,
            keep,
            own: true,
            graph: None,
        };
        let rs = vec![
            r(0, 3, Kind::Tdn, true, false),
            r(9, 0, Kind::Lup, false, true),
        ];
        for (t, e) in [
            (false, None),
            (true, Some((2, 5, AnalogError::TooSymmetric(100_000)))),
            (
                false,
                Some((1, 1, AnalogError::Invalid("a bond to itself".into()))),
            ),
        ] {
            let (t2, e2, back) = decode(&encode(&rs, t, e.as_ref())).unwrap();
            assert_eq!(t2, t);
            assert_eq!(
                e2.map(|(i, s, e)| (i, s, e.to_string())),
                e.map(|(i, s, e)| (i, s, e.to_string()))
            );
            assert_eq!(back.len(), 2);
            for (a, b) in rs.iter().zip(&back) {
                assert_eq!(
                    (a.item, a.seq, a.edit, a.key, a.hit, a.keep),
                    (b.item, b.seq, b.edit, b.key, b.hit, b.keep)
                );
                assert!(!b.own && b.graph.is_none());
            }
        }
        assert!(decode(&[]).is_err());
        assert!(decode(&[0, 0, 1]).is_err());
        assert!(decode(&[0, 9]).is_err());
    }
}
