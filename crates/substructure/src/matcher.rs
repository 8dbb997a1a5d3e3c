//! The exact substructure match on the graph form: does a molecule ([`MolGraph`]) contain a
//! compiled query ([`Program`])? A backtracking search for a subgraph monomorphism, as RDKit's
//! `HasSubstructMatch` decides it with chirality off: query atoms are placed in a fixed order
//! (the most specific atom first, then always an atom bonded to one already placed), each
//! candidate is a neighbour of its placed partner whose bond and atom satisfy the query, and
//! ring-closure bonds to other placed atoms are checked as soon as both ends are placed. Atom
//! tests are remembered per molecule; a recursive pattern is matched once per atom it is asked
//! about, rooted there. [`match_positions`] runs it over many molecules on threads; a stop
//! flag set by another thread ends it, read before each molecule and every
//! [`STOP_CHECK_STEPS`] placements inside one (a query can take exponential time on one
//! molecule).

use std::sync::atomic::{AtomicBool, Ordering};

use crate::compact::{BlockCursor, GraphBlocks};
use crate::graph::{Graphs, MolGraph};

/// Where the matcher reads molecules' graph records: the plain graphs file, or the compact
/// form's zstd blocks (each thread keeps its last decoded block in its cursor).
pub trait RecordSource: Sync {
    /// A thread's reading state.
    type Cursor: Default;
    /// Molecules.
    fn count(&self) -> usize;
    /// The record of molecule `i` (empty: not described); `Err` says what is damaged.
    fn record_at<'c>(&'c self, i: usize, cur: &'c mut Self::Cursor) -> Result<&'c [u8], String>;
}

impl RecordSource for Graphs<'_> {
    type Cursor = ();
    fn count(&self) -> usize {
        self.len()
    }
    fn record_at<'c>(&'c self, i: usize, _: &'c mut ()) -> Result<&'c [u8], String> {
        self.record(i)
            .ok_or_else(|| "offsets out of order".to_string())
    }
}

impl<'a> RecordSource for GraphBlocks<'a> {
    type Cursor = BlockCursor<'a>;
    fn count(&self) -> usize {
        self.len()
    }
    fn record_at<'c>(&'c self, i: usize, cur: &'c mut BlockCursor<'a>) -> Result<&'c [u8], String> {
        self.record(i, cur)
    }
}
use crate::program::{atom_leaf, atom_value, bond_ok, AtomExpr, AtomField, Pattern, Program};
use crate::SubstructureError;

/// The order in which one pattern's atoms are placed.
#[derive(Debug, Clone)]
struct Plan {
    order: Vec<usize>,
    /// for each position: the placed atom to walk from and the query bond to it
    parent: Vec<Option<(usize, usize)>>,
    /// for each position: other placed atoms bonded to it in the query, with the bond
    closures: Vec<Vec<(usize, usize)>>,
}

fn score(e: &AtomExpr) -> i32 {
    match e {
        AtomExpr::Eq(AtomField::AtomicNum | AtomField::AtomType, v) => match v % 1000 {
            6 => 2,
            0 => 1,
            _ => 6,
        },
        AtomExpr::Eq(..) | AtomExpr::Range(..) => 1,
        AtomExpr::And(v) => v.iter().map(score).sum(),
        AtomExpr::Or(v) => v.iter().map(score).min().unwrap_or(0),
        AtomExpr::Rec(_) => 3,
        AtomExpr::True | AtomExpr::Not(_) => 0,
    }
}

fn plan(p: &Pattern, rooted: bool) -> Plan {
    let n = p.atoms.len();
    let mut nbrs: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
    for (k, b) in p.bonds.iter().enumerate() {
        nbrs[b.a].push((b.b, k));
        nbrs[b.b].push((b.a, k));
    }
    let scores: Vec<i32> = p.atoms.iter().map(score).collect();
    let mut placed = vec![false; n];
    let mut out = Plan {
        order: Vec::with_capacity(n),
        parent: Vec::with_capacity(n),
        closures: Vec::with_capacity(n),
    };
    while out.order.len() < n {
        // an atom bonded to a placed one, most placed neighbours and specific first
        let mut best: Option<(i32, usize)> = None;
        for q in (0..n).filter(|&q| !placed[q]) {
            let links = nbrs[q].iter().filter(|&&(r, _)| placed[r]).count() as i32;
            if links == 0 {
                continue;
            }
            let s = 100 * links + scores[q];
            if best.map_or(true, |(bs, _)| s > bs) {
                best = Some((s, q));
            }
        }
        let q = match best {
            Some((_, q)) => q,
            None if rooted && out.order.is_empty() => 0,
            None => (0..n)
                .filter(|&q| !placed[q])
                .max_by_key(|&q| (scores[q], std::cmp::Reverse(q)))
                .expect("an atom is left"),
        };
        let links: Vec<(usize, usize)> = nbrs[q]
            .iter()
            .copied()
            .filter(|&(r, _)| placed[r])
            .collect();
        out.order.push(q);
        out.parent.push(links.first().copied());
        out.closures.push(links.iter().skip(1).copied().collect());
        placed[q] = true;
    }
    out
}

/// A query ready to match: its program and the placing order of each pattern (0: the query,
/// `1 + k`: recursive pattern `k`).
#[derive(Debug, Clone)]
pub struct Compiled {
    prog: Program,
    plans: Vec<Plan>,
}

impl Compiled {
    /// Plans the patterns of `prog`.
    pub fn new(prog: Program) -> Compiled {
        let mut plans = vec![plan(&prog.pattern, false)];
        plans.extend(prog.recursive.iter().map(|p| plan(p, true)));
        Compiled { prog, plans }
    }

    fn pattern(&self, i: usize) -> &Pattern {
        if i == 0 {
            &self.prog.pattern
        } else {
            &self.prog.recursive[i - 1]
        }
    }
}

/// Placements tried between two reads of the stop flag.
pub const STOP_CHECK_STEPS: u32 = 4096;

/// Per-molecule memory of a match: atom tests and recursive results (0 unknown, 1 yes, 2 no),
/// and the stop flag it reads ([`State::until`]).
#[derive(Debug, Default)]
pub struct State<'s> {
    nt: usize,
    atoms: Vec<Vec<u8>>,
    rec: Vec<u8>,
    stop: Option<&'s AtomicBool>,
    steps: u32,
    stopped: bool,
}

impl<'s> State<'s> {
    /// Scratch whose matches end (false, with [`State::stopped`] set) once `stop` is set.
    pub fn until(stop: Option<&'s AtomicBool>) -> State<'s> {
        State {
            stop,
            ..State::default()
        }
    }

    /// Whether the stop flag ended the last match (its answer means nothing then).
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Counts one placement; true once the stop flag has been seen set.
    #[inline]
    fn halt(&mut self) -> bool {
        if self.stopped {
            return true;
        }
        self.steps = self.steps.wrapping_add(1);
        if self.steps % STOP_CHECK_STEPS == 0 {
            self.stopped = self.stop.is_some_and(|s| s.load(Ordering::Relaxed));
        }
        self.stopped
    }

    fn reset(&mut self, c: &Compiled, nt: usize) {
        self.nt = nt;
        self.atoms.resize(c.plans.len(), Vec::new());
        for (i, v) in self.atoms.iter_mut().enumerate() {
            v.clear();
            v.resize(c.pattern(i).atoms.len() * nt, 0);
        }
        self.rec.clear();
        self.rec.resize(c.prog.recursive.len() * nt, 0);
    }
}

fn eval(c: &Compiled, st: &mut State, m: &MolGraph, e: &AtomExpr, t: usize) -> bool {
    match e {
        AtomExpr::True => true,
        AtomExpr::Not(x) => !eval(c, st, m, x, t),
        AtomExpr::And(v) => v.iter().all(|x| eval(c, st, m, x, t)),
        AtomExpr::Or(v) => v.iter().any(|x| eval(c, st, m, x, t)),
        AtomExpr::Eq(f, v) => atom_leaf(m, *f, *v, t),
        AtomExpr::Range(f, lo, hi) => (*lo..=*hi).contains(&atom_value(m, *f, t)),
        AtomExpr::Rec(k) => {
            let slot = k * st.nt + t;
            match st.rec[slot] {
                1 => true,
                2 => false,
                _ => {
                    let ok = search(c, st, m, 1 + k, Some(t));
                    st.rec[slot] = if ok { 1 } else { 2 };
                    ok
                }
            }
        }
    }
}

#[inline]
fn atom_ok(c: &Compiled, st: &mut State, m: &MolGraph, pat: usize, q: usize, t: usize) -> bool {
    let slot = q * st.nt + t;
    match st.atoms[pat][slot] {
        1 => true,
        2 => false,
        _ => {
            let ok = eval(c, st, m, &c.pattern(pat).atoms[q], t);
            st.atoms[pat][slot] = if ok { 1 } else { 2 };
            ok
        }
    }
}

fn search(c: &Compiled, st: &mut State, m: &MolGraph, pat: usize, root: Option<usize>) -> bool {
    let nq = c.plans[pat].order.len();
    if nq > m.n {
        return false;
    }
    let mut map = vec![usize::MAX; nq];
    let mut used = vec![false; m.n];
    match root {
        Some(t) => {
            let q = c.plans[pat].order[0];
            if !atom_ok(c, st, m, pat, q, t) {
                return false;
            }
            map[q] = t;
            used[t] = true;
            extend(c, st, m, pat, 1, &mut map, &mut used)
        }
        None => extend(c, st, m, pat, 0, &mut map, &mut used),
    }
}

#[allow(clippy::too_many_arguments)]
fn try_place(
    c: &Compiled,
    st: &mut State,
    m: &MolGraph,
    pat: usize,
    p: usize,
    t: usize,
    map: &mut [usize],
    used: &mut [bool],
) -> bool {
    let plan = &c.plans[pat];
    let q = plan.order[p];
    if used[t] || !atom_ok(c, st, m, pat, q, t) {
        return false;
    }
    let bonds = &c.pattern(pat).bonds;
    for &(r, qb) in &plan.closures[p] {
        match m.bond_between(t, map[r]) {
            Some(tb) if bond_ok(m, &bonds[qb].expr, tb) => {}
            _ => return false,
        }
    }
    map[q] = t;
    used[t] = true;
    if extend(c, st, m, pat, p + 1, map, used) {
        return true;
    }
    used[t] = false;
    map[q] = usize::MAX;
    false
}

fn extend(
    c: &Compiled,
    st: &mut State,
    m: &MolGraph,
    pat: usize,
    p: usize,
    map: &mut [usize],
    used: &mut [bool],
) -> bool {
    let plan = &c.plans[pat];
    if p == plan.order.len() {
        return true;
    }
    if st.halt() {
        return false;
    }
    match plan.parent[p] {
        Some((r, qb)) => {
            let expr = &c.pattern(pat).bonds[qb].expr;
            let tr = map[r];
            for &(t, tb) in m.neighbors(tr) {
                if bond_ok(m, expr, tb as usize)
                    && try_place(c, st, m, pat, p, t as usize, map, used)
                {
                    return true;
                }
            }
            false
        }
        None => (0..m.n).any(|t| try_place(c, st, m, pat, p, t, map, used)),
    }
}

/// Whether molecule `m` contains the query `c` (`st` is scratch memory, reused).
pub fn contains(c: &Compiled, st: &mut State, m: &MolGraph) -> bool {
    st.reset(c, m.n);
    search(c, st, m, 0, None)
}

/// What [`match_positions`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct GraphMatches {
    /// positions whose molecule contains the query, ascending
    pub hits: Vec<u64>,
    /// positions whose molecule has no graph record (RDKit must decide them), ascending
    pub undecided: Vec<u64>,
}

/// Matches `c` against the molecules at `positions` (ascending) on `threads` threads;
/// [`SubstructureError::Cancelled`] once `stop` is set.
pub fn match_positions<G: RecordSource>(
    graphs: &G,
    c: &Compiled,
    positions: &[u64],
    threads: usize,
    path: &std::path::Path,
    stop: Option<&AtomicBool>,
) -> Result<GraphMatches, SubstructureError> {
    let n = graphs.count() as u64;
    if let Some(&bad) = positions.iter().find(|&&p| p >= n) {
        return Err(SubstructureError::Invalid(format!(
            "store position {bad} is out of range for {n} molecules"
        )));
    }
    let run = |part: &[u64]| -> Result<GraphMatches, SubstructureError> {
        let mut out = GraphMatches::default();
        let mut m = MolGraph::default();
        let mut st = State::until(stop);
        let mut cur = G::Cursor::default();
        for &pos in part {
            if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                return Err(SubstructureError::Cancelled);
            }
            let corrupt = |reason: String| SubstructureError::Corrupted {
                path: path.to_path_buf(),
                reason: format!("molecule {pos}: {reason}"),
            };
            let rec = graphs.record_at(pos as usize, &mut cur).map_err(corrupt)?;
            if rec.is_empty() {
                out.undecided.push(pos);
                continue;
            }
            m.decode(rec).map_err(corrupt)?;
            let found = contains(c, &mut st, &m);
            if st.stopped() {
                return Err(SubstructureError::Cancelled);
            }
            if found {
                out.hits.push(pos);
            }
        }
        Ok(out)
    };
    let threads = threads
        .clamp(1, 64)
        .min(positions.len().div_ceil(256).max(1));
    if threads == 1 {
        return run(positions);
    }
    let size = positions.len().div_ceil(threads);
    let parts: Vec<Result<GraphMatches, SubstructureError>> = std::thread::scope(|s| {
        let handles: Vec<_> = positions
            .chunks(size)
            .map(|part| s.spawn(move || run(part)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a match thread panicked"))
            .collect()
    });
    let mut out = GraphMatches::default();
    for part in parts {
        let part = part?;
        out.hits.extend(part.hits);
        out.undecided.extend(part.undecided);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::MolGraph;

    /// A record: atoms as (atomic number, H count, rings, aromatic), bonds as (a, b, type,
    /// in ring).
    fn record(atoms: &[(u8, u8, u8, bool)], bonds: &[(u8, u8, u8, bool)]) -> Vec<u8> {
        let mut r = vec![atoms.len() as u8, bonds.len() as u8];
        for &(z, hs, rings, arom) in atoms {
            let min_ring = if rings > 0 { 3 } else { 0 };
            r.extend_from_slice(&[z, 0, hs, rings, min_ring, 4, 4, u8::from(arom)]);
        }
        for &(a, b, t, ring) in bonds {
            r.extend_from_slice(&[a, b, t | u8::from(ring) << 6]);
        }
        r
    }

    fn contains_json(prog: &str, rec: &[u8]) -> bool {
        let c = Compiled::new(Program::from_json(prog).unwrap());
        let mut m = MolGraph::default();
        m.decode(rec).unwrap();
        contains(&c, &mut State::default(), &m)
    }

    fn chain(atoms: &[&str], bonds: &[(usize, usize, &str)]) -> String {
        let bonds: Vec<String> = bonds
            .iter()
            .map(|(a, b, e)| format!(r#"{{"a":{a},"b":{b},"expr":{e}}}"#))
            .collect();
        format!(
            r#"{{"pattern":{{"atoms":[{}],"bonds":[{}]}},"recursive":[]}}"#,
            atoms.join(","),
            bonds.join(",")
        )
    }

    const C: &str = r#"{"eq":["atomic_num",6]}"#;
    const O: &str = r#"{"eq":["atomic_num",8]}"#;
    const SINGLE: &str = r#"{"eq":["order",1]}"#;
    const DOUBLE: &str = r#"{"eq":["order",2]}"#;

    #[test]
    fn ethanol_and_cyclopropane() {
        let ethanol = record(
            &[(6, 3, 0, false), (6, 2, 0, false), (8, 1, 0, false)],
            &[(0, 1, 1, false), (1, 2, 1, false)],
        );
        let cyclopropane = record(
            &[(6, 2, 1, false), (6, 2, 1, false), (6, 2, 1, false)],
            &[(0, 1, 1, true), (1, 2, 1, true), (2, 0, 1, true)],
        );
        assert!(contains_json(&chain(&[C, O], &[(0, 1, SINGLE)]), &ethanol));
        assert!(!contains_json(&chain(&[C, O], &[(0, 1, DOUBLE)]), &ethanol));
        // disconnected: two distinct carbons, not three
        assert!(contains_json(&chain(&[C, C], &[]), &ethanol));
        assert!(!contains_json(&chain(&[C, C, C], &[]), &ethanol));
        // a ring closure is checked, not only the chain
        let ring = chain(
            &[C, C, C],
            &[(0, 1, SINGLE), (1, 2, SINGLE), (2, 0, SINGLE)],
        );
        assert!(contains_json(&ring, &cyclopropane));
        let propane = record(
            &[(6, 3, 0, false), (6, 2, 0, false), (6, 3, 0, false)],
            &[(0, 1, 1, false), (1, 2, 1, false)],
        );
        assert!(!contains_json(&ring, &propane));
        assert!(contains_json(
            &chain(&[C, C, C], &[(0, 1, SINGLE), (1, 2, SINGLE)]),
            &propane
        ));
        // H counts, ring tests, negation
        let oh = r#"{"and":[{"eq":["atomic_num",8]},{"eq":["total_hs",1]}]}"#;
        assert!(contains_json(&chain(&[oh], &[]), &ethanol));
        let ring_c = r#"{"eq":["n_rings",-1]}"#;
        assert!(contains_json(&chain(&[ring_c], &[]), &cyclopropane));
        assert!(!contains_json(&chain(&[ring_c], &[]), &ethanol));
        let not_c = r#"{"not":{"eq":["atomic_num",6]}}"#;
        assert!(!contains_json(&chain(&[not_c], &[]), &cyclopropane));
    }

    #[test]
    fn recursive_patterns_are_rooted() {
        let ethanol = record(
            &[(6, 3, 0, false), (6, 2, 0, false), (8, 1, 0, false)],
            &[(0, 1, 1, false), (1, 2, 1, false)],
        );
        // [$(CO)] then a bond to a carbon that is not itself next to O: CH2 is the root,
        // CH3 is its neighbour; [$(OC)]-C needs O bonded to C bonded to C
        let prog = |root: &str| {
            format!(
                r#"{{"pattern":{{"atoms":[{{"rec":0}},{C}],"bonds":[{{"a":0,"b":1,"expr":{SINGLE}}}]}},
                "recursive":[{{"atoms":[{root},{C}],"bonds":[{{"a":0,"b":1,"expr":{SINGLE}}}]}}]}}"#
            )
        };
        assert!(contains_json(&prog(O), &ethanol));
        assert!(contains_json(&prog(C), &ethanol));
        let n = r#"{"eq":["atomic_num",7]}"#;
        assert!(!contains_json(&prog(n), &ethanol));
    }

    #[test]
    fn bad_programs_are_refused() {
        assert!(Program::from_json("{").is_err());
        assert!(Program::from_json(r#"{"pattern":{"atoms":[],"bonds":[]}}"#).is_err());
        let rec = r#"{"pattern":{"atoms":[{"rec":3}],"bonds":[]}}"#;
        assert!(Program::from_json(rec).is_err());
        let bond = r#"{"pattern":{"atoms":["true"],"bonds":[{"a":0,"b":0,"expr":"true"}]}}"#;
        assert!(Program::from_json(bond).is_err());
    }

    /// An `n` x `n` grid of carbons: bipartite, so it has no odd ring, and paths abound.
    fn grid(n: usize) -> Vec<u8> {
        let atoms = vec![(6, 1, 1, false); n * n];
        let mut bonds = Vec::new();
        for r in 0..n {
            for c in 0..n {
                let i = (r * n + c) as u8;
                if c + 1 < n {
                    bonds.push((i, i + 1, 1, true));
                }
                if r + 1 < n {
                    bonds.push((i, i + n as u8, 1, true));
                }
            }
        }
        record(&atoms, &bonds)
    }

    /// A ring of `n` carbons joined by any bond.
    fn ring(n: usize) -> Compiled {
        let bonds: Vec<(usize, usize, &str)> =
            (0..n).map(|i| (i, (i + 1) % n, "\"true\"")).collect();
        Compiled::new(Program::from_json(&chain(&vec![C; n], &bonds)).unwrap())
    }

    /// Records in memory.
    struct Records(Vec<Vec<u8>>);

    impl RecordSource for Records {
        type Cursor = ();
        fn count(&self) -> usize {
            self.0.len()
        }
        fn record_at<'c>(&'c self, i: usize, _: &'c mut ()) -> Result<&'c [u8], String> {
            Ok(&self.0[i])
        }
    }

    #[test]
    fn a_stop_flag_ends_a_match_inside_one_molecule() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::time::{Duration, Instant};
        let mut m = MolGraph::default();
        m.decode(&grid(8)).unwrap();
        // an even ring is found, an odd one never (after trying every path of its length)
        assert!(contains(&ring(4), &mut State::default(), &m));
        assert!(!contains(&ring(7), &mut State::default(), &m));
        let odd = ring(31); // paths on the grid for far longer than this test waits
        let stop = AtomicBool::new(false);
        let began = Instant::now();
        let (found, stopped) = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                stop.store(true, Ordering::Relaxed);
            });
            let mut st = State::until(Some(&stop));
            (contains(&odd, &mut st, &m), st.stopped())
        });
        assert!(!found && stopped);
        assert!(
            began.elapsed() < Duration::from_secs(5),
            "{:?}",
            began.elapsed()
        );
        // over many molecules, on threads: an error, not a partial answer
        let recs = Records(vec![grid(8); 8]);
        let path = std::path::Path::new("memory");
        let all = match_positions(&recs, &ring(4), &[0, 3, 7], 2, path, Some(&stop));
        assert!(matches!(all, Err(SubstructureError::Cancelled)));
        stop.store(false, Ordering::Relaxed);
        let all = match_positions(&recs, &ring(4), &[0, 3, 7], 2, path, Some(&stop)).unwrap();
        assert_eq!(all.hits, [0, 3, 7]);
        let began = Instant::now();
        let all = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                stop.store(true, Ordering::Relaxed);
            });
            match_positions(
                &recs,
                &odd,
                &(0..8).collect::<Vec<u64>>(),
                2,
                path,
                Some(&stop),
            )
        });
        assert!(matches!(all, Err(SubstructureError::Cancelled)));
        assert!(
            began.elapsed() < Duration::from_secs(5),
            "{:?}",
            began.elapsed()
        );
    }
}
