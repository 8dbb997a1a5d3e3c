//! Merging hit lists that are each already best first (score descending, then position
//! ascending): the lists of a set's ranks or shards for many queries at once
//! ([`merge_runs`]), and two rows of top-k records ([`merge_top_k`]). One pass over the
//! lists, never a sort of all their hits; a list out of order is an error, not a wrong answer.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::SearchError;

/// The order of hits: score descending, then position ascending (`Less` = comes first).
fn order(a: (f64, i64), b: (f64, i64)) -> Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

/// Many queries' hits merged ([`merge_runs`]): query after query, each query's best first.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    /// the hits' positions
    pub positions: Vec<i64>,
    /// their scores
    pub scores: Vec<f64>,
    /// where each query's hits end in `positions` and `scores`
    pub ends: Vec<usize>,
}

/// Hits of many queries merged: `positions` and `scores` hold `runs` lists one after
/// another, each list the hits of query 0, then of query 1, and so on, `counts[r * queries +
/// q]` of them for query `q` in list `r`, each query's hits best first in every list.
/// Returns every query's hits of all the lists, best first, query after query, and where
/// each query's hits end. An error when the counts do not add up to the arrays or a list is
/// out of order.
pub fn merge_runs(
    counts: &[u64],
    runs: usize,
    positions: &[i64],
    scores: &[f64],
) -> Result<Merged, SearchError> {
    let bad = |reason: String| SearchError::Invalid(format!("merging hit lists: {reason}"));
    if positions.len() != scores.len() {
        return Err(bad(format!(
            "{} positions but {} scores",
            positions.len(),
            scores.len()
        )));
    }
    if runs == 0 || counts.len() % runs != 0 {
        return Err(bad(format!("{} counts for {runs} lists", counts.len())));
    }
    let queries = counts.len() / runs;
    let total: u64 = counts.iter().sum();
    if total != positions.len() as u64 {
        return Err(bad(format!(
            "the counts add up to {total}, the arrays hold {}",
            positions.len()
        )));
    }
    // where list r's hits of query q start
    let mut starts = Vec::with_capacity(counts.len());
    let mut at = 0usize;
    for &c in counts {
        starts.push(at);
        at += c as usize;
    }
    let (mut out_pos, mut out_sc) = (Vec::with_capacity(at), Vec::with_capacity(at));
    let mut ends = Vec::with_capacity(queries);
    let mut heap = BinaryHeap::with_capacity(runs);
    for q in 0..queries {
        let mut spans: Vec<(usize, usize)> = (0..runs)
            .map(|r| {
                let i = r * queries + q;
                (starts[i], starts[i] + counts[i] as usize)
            })
            .filter(|&(a, b)| a < b)
            .collect();
        for (r, span) in spans.iter().enumerate() {
            check_sorted(positions, scores, span.0, span.1)
                .map_err(|at| bad(format!("query {q}: a list is not best first at hit {at}")))?;
            heap.push(Head(scores[span.0], positions[span.0], r));
        }
        while let Some(Head(s, p, r)) = heap.pop() {
            out_pos.push(p);
            out_sc.push(s);
            let span = &mut spans[r];
            span.0 += 1;
            if span.0 < span.1 {
                heap.push(Head(scores[span.0], positions[span.0], r));
            }
        }
        ends.push(out_pos.len());
    }
    Ok(Merged {
        positions: out_pos,
        scores: out_sc,
        ends,
    })
}

/// Ok, or the index of the first hit in `from..to` that comes before the one preceding it.
fn check_sorted(positions: &[i64], scores: &[f64], from: usize, to: usize) -> Result<(), usize> {
    for i in from + 1..to {
        if order((scores[i - 1], positions[i - 1]), (scores[i], positions[i])) != Ordering::Less {
            return Err(i - from);
        }
    }
    Ok(())
}

/// A list's next hit in the merge's heap (a max-heap: the best hit is the greatest).
struct Head(f64, i64, usize);

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Head {}
impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        order((other.0, other.1), (self.0, self.1)).then(other.2.cmp(&self.2))
    }
}

/// Two rows of top-k records, `(score, position)` pairs, `k` to a row and each row best
/// first (padding records, which sort after every real one, fill a row past its hits): every
/// row of `into` becomes the `k` best of itself and the same row of `from`. An error when the
/// rows do not match or are not best first.
pub fn merge_top_k(
    from: &[(f64, i64)],
    into: &mut [(f64, i64)],
    k: usize,
) -> Result<(), SearchError> {
    let bad = |reason: String| SearchError::Invalid(format!("merging top-k records: {reason}"));
    if k == 0 || from.len() != into.len() || from.len() % k != 0 {
        return Err(bad(format!(
            "{} and {} records in rows of {k}",
            from.len(),
            into.len()
        )));
    }
    let mut row = Vec::with_capacity(k);
    for (a, b) in from.chunks_exact(k).zip(into.chunks_exact_mut(k)) {
        for r in [a, &*b] {
            if let Some(i) = (1..k).find(|&i| order(r[i - 1], r[i]) == Ordering::Greater) {
                return Err(bad(format!("a row is not best first at record {i}")));
            }
        }
        row.clear();
        let (mut i, mut j) = (0, 0);
        while row.len() < k {
            if order(a[i], b[j]) != Ordering::Greater {
                row.push(a[i]);
                i += 1;
            } else {
                row.push(b[j]);
                j += 1;
            }
        }
        b.copy_from_slice(&row);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference: every query's hits of every list, sorted.
    fn sorted(counts: &[u64], runs: usize, pos: &[i64], sc: &[f64]) -> Vec<Vec<(f64, i64)>> {
        let queries = counts.len() / runs;
        let mut out = vec![Vec::new(); queries];
        let mut at = 0;
        for (i, &c) in counts.iter().enumerate() {
            for j in at..at + c as usize {
                out[i % queries].push((sc[j], pos[j]));
            }
            at += c as usize;
        }
        for hits in &mut out {
            hits.sort_by(|a, b| order(*a, *b));
        }
        out
    }

    /// A small deterministic generator (xorshift), so the tests need no crate.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn runs_merge_as_a_sort_would() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for runs in 1..6 {
            for queries in [0usize, 1, 3, 17] {
                let (mut counts, mut pos, mut sc) = (Vec::new(), Vec::new(), Vec::new());
                for r in 0..runs {
                    for _ in 0..queries {
                        let n = (next(&mut seed) % 6) as usize;
                        // few distinct scores: ties decided by position across lists
                        let mut hits: Vec<(f64, i64)> = (0..n)
                            .map(|i| {
                                let s = (next(&mut seed) % 4) as f64 / 4.0;
                                (s, (i * runs + r) as i64 * 7)
                            })
                            .collect();
                        hits.sort_by(|a, b| order(*a, *b));
                        counts.push(n as u64);
                        pos.extend(hits.iter().map(|h| h.1));
                        sc.extend(hits.iter().map(|h| h.0));
                    }
                }
                let Merged {
                    positions: p,
                    scores: s,
                    ends,
                } = merge_runs(&counts, runs, &pos, &sc).unwrap();
                let want = sorted(&counts, runs, &pos, &sc);
                let mut at = 0;
                assert_eq!(ends.len(), queries);
                for (q, &end) in ends.iter().enumerate() {
                    let got: Vec<(f64, i64)> = (at..end).map(|i| (s[i], p[i])).collect();
                    assert_eq!(got, want[q], "runs {runs}, query {q}");
                    at = end;
                }
            }
        }
    }

    #[test]
    fn runs_out_of_order_or_miscounted_are_refused() {
        let err = merge_runs(&[2, 0], 2, &[5, 3], &[0.5, 0.5]).unwrap_err();
        assert!(err.to_string().contains("not best first"), "{err}");
        let err = merge_runs(&[2, 1], 2, &[5, 3], &[0.5, 0.5]).unwrap_err();
        assert!(err.to_string().contains("add up to 3"), "{err}");
        let err = merge_runs(&[1, 1, 1], 2, &[1, 2, 3], &[0.5, 0.5, 0.5]).unwrap_err();
        assert!(err.to_string().contains("3 counts for 2 lists"), "{err}");
    }

    #[test]
    fn top_k_rows_keep_the_k_best() {
        let pad = (-1.0, i64::MAX);
        let from = [(0.9, 4), (0.5, 1), pad, (0.7, 2), (0.7, 8), (0.1, 0)];
        let mut into = [(0.9, 2), (0.5, 0), (0.2, 3), pad, pad, pad];
        merge_top_k(&from, &mut into, 3).unwrap();
        assert_eq!(
            into,
            [(0.9, 2), (0.9, 4), (0.5, 0), (0.7, 2), (0.7, 8), (0.1, 0)]
        );
        let mut bad = [(0.1, 0), (0.9, 1), pad];
        assert!(merge_top_k(&[pad, pad, pad], &mut bad, 3).is_err());
        assert!(merge_top_k(&[pad, pad], &mut [pad, pad, pad], 3).is_err());
    }
}
