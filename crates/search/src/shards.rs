//! One query over several column indexes at once: the shards of a store set that one process
//! searches, hits in set positions (each shard's offset plus its own position), exactly the
//! hits of one index holding every shard's molecules in that order.
//!
//! Top-k over compressed planes with part masks (store version 2) goes best bound first across
//! the blocks of every shard (`compressed::bestfirst::top_k_many`), the shards' sinks sharing
//! one bar: the caller's slot (the searches of the same query by other processes share it
//! too), or a cell and a slot of scores of this search's. So the nearest molecules of any shard
//! raise the bar for all of them, and the shards cost about what one store holding them all
//! does. Searched one after another instead, the first shard's top-k costs nearly the whole
//! store's (its own k-th best rises as slowly as the store's: BENCHMARKS.md). Anything else
//! (threshold searches, planes without part masks, several threads) searches the shards one
//! after another, each top-k search pruning with the bar the ones before it left.

use crate::bar::{with_slot, BarSlot};
use crate::batch::each_query;
use crate::columns::{topk_order, TopKSink};
use crate::compressed::{same_parts, top_k_many, Work};
use crate::layout::{Bucket, ColumnIndex, BLOCK};
use crate::scan::{Plan, Read};
use crate::topk::{finish, Scored};
use crate::{Hit, Query, SearchError, SearchOptions, SearchPath, SearchStats};

/// A shard: its index and the set position of its first molecule.
pub type Shard<'a> = (&'a ColumnIndex, u64);

/// One query over `shards` (see the module doc): hits in set positions, best first (score
/// descending, then position ascending), as one index over every shard would give them.
/// `opts.threads` threads split each shard's blocks when more than one.
pub fn search_shards(
    shards: &[Shard<'_>],
    query: &Query,
    opts: &SearchOptions,
) -> Result<(Vec<Hit>, SearchStats), SearchError> {
    let t = opts.checked_threshold()?;
    let live: Vec<Shard<'_>> = shards
        .iter()
        .copied()
        .filter(|(i, _)| !i.is_empty())
        .collect();
    if let Some(k) = opts
        .k
        .filter(|&k| k > 0 && opts.thread_count() == 1 && live.len() > 1)
    {
        if let Some(found) = best_first_together(&live, query, t, k, opts.bar)? {
            return Ok(found);
        }
    }
    one_after_another(&live, query, opts)
}

/// [`search_shards`] of many queries, query `i` sharing its k-th best through `bars[i]` (none:
/// `opts.bar` for every query); `opts.threads` threads take the queries in turn, each query on
/// one thread.
pub fn search_shards_batch(
    shards: &[Shard<'_>],
    queries: &[Query],
    opts: &SearchOptions,
    bars: &[BarSlot],
) -> Result<(Vec<Vec<Hit>>, SearchStats), SearchError> {
    each_query(queries, opts, bars, |q, o| search_shards(shards, q, o))
}

/// Top-k over every shard at once, best bound first; `None` when a shard's plan cannot go best
/// first (or the shards' part masks differ in size).
fn best_first_together(
    live: &[Shard<'_>],
    query: &Query,
    t: f64,
    k: usize,
    bar: Option<BarSlot>,
) -> Result<Option<(Vec<Hit>, SearchStats)>, SearchError> {
    let plans = live
        .iter()
        .map(|(index, _)| Plan::new(index, query))
        .collect::<Result<Vec<_>, _>>()?;
    let visits: Vec<Vec<usize>> = live
        .iter()
        .zip(&plans)
        .map(|((index, _), plan)| topk_order(&index.buckets, plan.q))
        .collect();
    let whole = |b: &Bucket| b.block_range();
    let Some(works) = plans
        .iter()
        .zip(&visits)
        .map(|(plan, visit)| plan.best_first_work(visit, &whole))
        .collect::<Option<Vec<Work<'_, '_>>>>()
    else {
        return Ok(None);
    };
    if !same_parts(&works) {
        return Ok(None);
    }
    with_slot(bar, |slot| {
        let shared = slot.shared();
        shared.claim();
        let mut sinks: Vec<TopKSink<'_>> = live
            .iter()
            .zip(&plans)
            .map(|((index, _), plan)| TopKSink::new(index.slot_order(), t, plan.q, k, Some(shared)))
            .collect();
        let reads = top_k_many(&works, &mut sinks);
        let mut stats = SearchStats {
            path: SearchPath::Columns,
            ..Default::default()
        };
        let mut read = Read::default();
        let mut all: Vec<Scored> = Vec::new();
        for ((&(_, offset), sink), (r, buckets)) in live.iter().zip(sinks).zip(reads) {
            stats.candidates += sink.candidates;
            stats.buckets_visited += buckets;
            read.add(r);
            all.extend(sink.heap.into_vec().into_iter().map(|s| Scored {
                index: s.index + offset,
                ..s
            }));
        }
        stats.units_visited = read.blocks;
        stats.bytes_touched = read.plane_blocks * (BLOCK / 8) as u64 + stats.candidates * 8;
        Ok(Some((finish(all, Some(k)), stats)))
    })
}

/// Each shard searched in turn (top-k: all sharing one bar, the caller's or this search's own),
/// the hits merged: score descending, then set position ascending, cut to k.
fn one_after_another(
    live: &[Shard<'_>],
    query: &Query,
    opts: &SearchOptions,
) -> Result<(Vec<Hit>, SearchStats), SearchError> {
    let search = |bar: Option<BarSlot>| {
        let mut stats = SearchStats {
            path: SearchPath::Columns,
            ..Default::default()
        };
        let mut all: Vec<Hit> = Vec::new();
        for &(index, offset) in live {
            let o = SearchOptions { bar, ..*opts };
            let (hits, st) = index.search_with_stats(query, &o)?;
            stats.add(&st);
            all.extend(hits.into_iter().map(|h| Hit {
                index: h.index + offset,
                score: h.score,
            }));
        }
        all.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
        if let Some(k) = opts.k {
            all.truncate(k);
        }
        Ok((all, stats))
    };
    match opts.k {
        None => search(None),
        Some(_) => with_slot(opts.bar, |slot| search(Some(slot))),
    }
}
