"""An open store set (`StoreSet`): the four searches over every shard, merged exactly.

Set position = shard offset + shard position, so each merge only shifts positions and keeps
the one store's order and tie rules:
- similarity (`search`, `search_batch`): each shard's hits (its k best, or all at or above the
  threshold) merged by score descending, then position ascending, cut to k; a process's top-k
  over several shards is one best-first search across all their blocks (`crates/search`
  shards.rs), its shards sharing one bar;
- substructure: the shards in order, each one's hits in store order, until `max_hits`;
- analogs: every shard's hits within d edits for d = 0, 1, ... until the set has k (the
  distance where one store's walk stops), merged by distance, Tanimoto descending, position,
  and cut to k;
- lookup: a canonical SMILES lives in the one shard whose first and last SMILES bracket it
  (shards never split equal SMILES); ids are asked of every shard.
Shards are searched on threads (`threads`, `workers`): the Rust kernels release the GIL."""

from __future__ import annotations

import bisect
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .. import _core
from ..store import StoreV2, _Column, _StoreBase
from .manifest import check_file, read_manifest
from .mpi import _BAR_CELLS, collective, merged_runs

_SUMMED = ("candidates", "matched", "hits", "screen_seconds", "planes_read_bytes")


def open_set(path, verify: bool = True) -> StoreSet:
    """Opens the store set at `path` read-only: its manifest checked, every shard opened (with
    `verify`, every shard file's checksum read) and matched to the manifest's record of it."""
    path = os.fspath(path)
    manifest = read_manifest(path)
    shards = []
    for rec in manifest["shards"]:
        where = os.path.join(path, rec["name"])
        if not os.path.isdir(where):
            raise _core.StoreError(f"{where}: shard {rec['name']} of the set is missing")
        core = _core.StoreV2(where, verify=verify)
        shard = StoreV2(where, core)
        if (
            shard.manifest.get("checksum") != rec["manifest_checksum"]
            or len(shard) != rec["molecules"]
        ):
            raise _core.StoreError(
                f"{where}: not the shard this set was written with (its manifest differs from "
                f"the set's record of {rec['name']})"
            )
        shards.append(shard)
    if verify:
        for name in manifest["files"]:
            check_file(path, manifest, name)
    return StoreSet(path, manifest, shards)


class _SetColumn(_Column):
    """A text column of every shard, by set position."""

    def __init__(self, store: StoreSet, column: str):
        self._store = store
        self._column = column

    def __len__(self) -> int:
        return len(self._store)

    def _get(self, i: int) -> str:
        s, local = self._store._locate(i)
        return getattr(self._store.shards[s], self._column)[local]

    def take(self, positions) -> list[str]:
        pos = np.asarray(positions, dtype=np.int64)
        out: list[str] = [""] * len(pos)
        for s, at, local in self._store._per_shard(pos):
            texts = getattr(self._store.shards[s], self._column).take(local)
            for j, t in zip(at.tolist(), texts):
                out[j] = t
        return out

    def __iter__(self) -> Iterator[str]:
        for shard in self._store.shards:
            yield from getattr(shard, self._column)


class _SetCore:
    """The part of a store's Rust reader that lookups call (`lookup`, `lookup_ids`), over
    every shard, positions in the set."""

    def __init__(self, store: StoreSet):
        self._store = store
        live = [s for s, rec in enumerate(store.manifest["shards"]) if rec["molecules"]]
        self._live = live
        self._firsts = [store.manifest["shards"][s]["first_smiles"] for s in live]

    def lookup(self, smiles: list[str]) -> list[list[int]]:
        with collective(self._store, "lookup", smiles):
            return self._lookup(smiles)

    def _lookup(self, smiles: list[str]) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in smiles]
        asked: dict[int, list[int]] = {}
        for j, s in enumerate(smiles):
            k = bisect.bisect_right(self._firsts, s) - 1
            if k >= 0:
                asked.setdefault(self._live[k], []).append(j)
        own = set(self._store._own())
        for s, idx in asked.items():
            if s not in own:
                continue
            found = self._store.shards[s]._core.lookup([smiles[j] for j in idx])
            off = self._store.offsets[s]
            for j, pos in zip(idx, found):
                out[j] = [off + p for p in pos]
        return self._across(out)

    def lookup_ids(self, ids: list[str]) -> list[list[int]]:
        with collective(self._store, "lookup_ids", ids):
            return self._lookup_ids(ids)

    def _lookup_ids(self, ids: list[str]) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in ids]
        own = set(self._store._own())
        for s in self._live:
            if s not in own:
                continue
            off = self._store.offsets[s]
            for j, pos in enumerate(self._store.shards[s]._core.lookup_ids(ids)):
                out[j] += [off + p for p in pos]
        return [sorted(p) for p in self._across(out)]

    def _across(self, out: list[list[int]]) -> list[list[int]]:
        """Each query's positions from every rank (rank 0; empty lists elsewhere)."""
        ranks = getattr(self._store, "_ranks", None)
        if ranks is None:
            return out
        got = ranks.gather(out)
        if got is None:
            return [[] for _ in out]
        return [[p for part in got for p in part[j]] for j in range(len(out))]


class _SetSearcher:
    """Similarity search over every shard (`search.search` calls it as a store's searcher)."""

    def __init__(self, store: StoreSet):
        self._store = store

    def _one(self, s: int, on_bits, threshold, k, bar=None):
        bars, tag = bar or (None, 0)
        idx, scores, stats = (
            self._store.shards[s]._searcher().search(on_bits, threshold, k, 1, bars, tag)
        )
        return np.asarray(idx, dtype=np.int64) + self._store.offsets[s], scores, stats

    def _bar(self, k, threads):
        """Where a top-k query's shard searches share their k-th best as they run: with the
        other ranks of this node (MPI), or between this process's threads; None for threshold
        searches and for one thread without MPI."""
        if k is None:
            return None
        ranks = getattr(self._store, "_ranks", None)
        if ranks is not None:
            return ranks.bar()
        if threads > 1:
            from .._core import SharedBars

            return SharedBars(1), 1
        return None

    def _across(self, answers: list[tuple], k):
        """Each query's hits of this process (merged over its shards), combined with the other
        ranks' (rank 0 gets the set's answers, the others empty ones): one reduction of top-k
        records, or one gather of threshold hits, for all the queries; unchanged without MPI."""
        ranks = getattr(self._store, "_ranks", None)
        if ranks is None:
            return answers
        return ranks.topk_many(answers, k) if k is not None else ranks.gather_many(answers)

    def _local(self, on_bits, threshold, k, threads):
        """One query's (indices, scores, stats) over this process's shards: top-k over several
        shards on one thread as one best-first search over all their blocks (`_together`),
        else the shards on threads (sharing a top-k bar), merged."""
        if k is not None and threads <= 1 and len(self._live()) > 1:
            bars, tags = self._batch_bars(k, 1)
            [(indices, scores)], stats = self._together([on_bits], threshold, k, 1, bars, tags)
            return indices, scores, stats
        bar = self._bar(k, threads)
        parts = self._store._map(lambda s: self._one(s, on_bits, threshold, k, bar), threads)
        indices, scores = merge_hits([(i, sc) for i, sc, _ in parts], k)
        return indices, scores, _sum_stats([st for _, _, st in parts])

    def _live(self) -> list[int]:
        """This process's shards that hold molecules."""
        return [s for s in self._store._own() if len(self._store.shards[s])]

    def _together(self, queries, threshold, k, threads, bars, tags):
        """The queries over this process's shards at once (`Searcher.search_shards`: top-k best
        bound first across every shard's blocks, a shared bar per query): a list of (set
        positions, scores) arrays per query, and the stats."""
        live = self._live()
        results, stats = _core.Searcher.search_shards(
            [self._store.shards[s]._searcher() for s in live],
            [self._store.offsets[s] for s in live],
            queries, threshold, k, threads, bars, tags,
        )  # fmt: skip
        out = [
            (np.asarray(i, dtype=np.int64), np.asarray(sc, dtype=np.float64)) for i, sc in results
        ]
        return out, stats

    def _query(self, on_bits, threshold, k, threads):
        """One query's (indices, scores, stats) over the set, across the ranks."""
        indices, scores, stats = self._local(on_bits, threshold, k, threads)
        [(indices, scores)] = self._across([(indices, scores)], k)
        return indices.tolist(), scores.tolist(), stats

    def search(self, on_bits, threshold=None, k=None, threads: int = 1):
        with collective(self._store, "search", on_bits, threshold, k, threads):
            return self._query(on_bits, threshold, k, threads)

    def search_batch(self, queries, threshold=None, k=None, threads: int = 1):
        with collective(self._store, "search_batch", queries, threshold, k, threads):
            return self._search_batch(queries, threshold, k, threads)

    def _search_batch(self, queries, threshold, k, threads):
        """Every query's hits over this process's shards first, then across the ranks at once
        (`_across`: one reduction or gather for the batch), each in one call into Rust: a top-k
        batch over several shards of this process goes best bound first across all their
        blocks, query by query (`_together`); otherwise each shard takes the batch (threads
        share the shards). Under MPI query i's
        searches share its k-th best with the node's other ranks through a cell of its own
        (`_batch_bars`), a chunk of at most `_BAR_CELLS` queries (the cells) at a time."""
        local, stats = [], []
        together = k is not None and len(self._live()) > 1
        for at in range(0, len(queries), _BAR_CELLS):
            part = queries[at : at + _BAR_CELLS]
            bars, tags = self._batch_bars(k, len(part))
            if together:  # every shard's blocks best bound first, query by query
                got, st = self._together(part, threshold, k, threads, bars, tags)
                local.extend(got)
                stats.append(st)
                continue

            def shard(s, part=part, bars=bars, tags=tags):
                results, st = (
                    self._store.shards[s]
                    ._searcher()
                    .search_batch(part, threshold, k, 1, bars, tags)
                )
                off = self._store.offsets[s]
                return [(np.asarray(i, dtype=np.int64) + off, sc) for i, sc in results], st

            parts = self._store._map(shard, threads)
            local.extend(merge_hits([p[0][q] for p in parts], k) for q in range(len(part)))
            stats.extend(p[1] for p in parts)
        merged = [(i.tolist(), sc.tolist()) for i, sc in self._across(local, k)]
        return merged, _sum_stats(stats)

    def _batch_bars(self, k, n: int):
        """(bars, tags) for `n` top-k queries under MPI (a chunk of a batch, or one query): the
        node's shared cells and the next `n` tags of the ranks (every rank counts them alike);
        (None, None) for threshold searches, without MPI (a process's own shards share their
        bar in Rust), or where the MPI cannot share memory."""
        ranks = getattr(self._store, "_ranks", None)
        if k is None or ranks is None:
            return None, None
        got = [ranks.bar() for _ in range(n)]
        if not got or got[0] is None:
            return None, None
        return got[0][0], [tag for _, tag in got]


def merge_hits(parts, k: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(indices, scores) of several shards' hits, each best first, merged best first (score
    descending, then position ascending) and cut to `k`."""
    if not parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    if len(parts) == 1:  # one list is in order already
        i, sc = parts[0]
        return np.asarray(i, dtype=np.int64)[:k], np.asarray(sc, dtype=np.float64)[:k]
    idx = np.concatenate([np.asarray(i, dtype=np.int64) for i, _ in parts])
    sc = np.concatenate([np.asarray(s, dtype=np.float64) for _, s in parts])
    [(idx, sc)] = merged_runs(np.array([len(i) for i, _ in parts]), len(parts), idx, sc)
    return idx[:k], sc[:k]


#: walk statistics that are not counts: how they combine over walks (the rest are summed)
_STAT_COMBINE = {"complete_to": min, "first_hit_ns": min, "timed_out": max, "ns": max}


def _sum_stats(stats: list) -> dict:
    """The statistics of several walks (of shards, or of ranks dividing one walk) as one: the
    counts (edits, pruned, filtered, graphs kept...) summed, the distance complete to the
    least, timed out if any did, the first hit the earliest, the time the longest."""
    out: dict = {}
    for st in stats:
        for key, v in dict(st).items():
            combine = _STAT_COMBINE.get(key)
            if key not in out:
                out[key] = v
            elif combine is not None:
                out[key] = combine(out[key], v)
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                out[key] = out[key] + v
    return out


class StoreSet(_StoreBase):
    """An open store set: `len`, `ids`, `smiles`, `counts`, `fingerprint_spec`, and `search`,
    `substructure`, `analogs`, `lookup` as a `StoreV2` answers them, by set position. `shards`
    are the shards' own stores; `offsets[s]` is the set position of shard s's first molecule."""

    def __init__(self, path: str, manifest: dict, shards: list[StoreV2]):
        self.path = path
        self.manifest = manifest
        self.shards = shards
        self.offsets = [rec["offset"] for rec in manifest["shards"]]
        self._ends = [o + len(s) for o, s in zip(self.offsets, shards)]
        self.smiles = _SetColumn(self, "smiles")
        self.ids = _SetColumn(self, "ids")
        self._core = _SetCore(self)
        #: the analog indexes' unions made so far, by their shards (`union_index`)
        self._unions: dict[tuple[int, ...], Any] = {}

    def _locate(self, i: int) -> tuple[int, int]:
        if not -len(self) <= i < len(self):
            raise IndexError(f"position {i} of a set of {len(self)} molecules")
        i %= max(1, len(self))
        s = bisect.bisect_right(self._ends, i)
        return s, i - self.offsets[s]

    def _shard_of(self, positions: np.ndarray) -> np.ndarray:
        if len(positions) and (positions.min() < 0 or positions.max() >= len(self)):
            raise IndexError(f"a position outside a set of {len(self)} molecules")
        return np.searchsorted(np.asarray(self._ends), positions, side="right")

    def _per_shard(self, pos: np.ndarray) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(shard, places in `pos`, the shard's own positions) for each shard holding some of
        the set positions `pos` (int64; IndexError for one outside the set)."""
        shard_of = self._shard_of(pos)
        for s in np.unique(shard_of).tolist():
            at = np.flatnonzero(shard_of == s)
            yield s, at, pos[at] - self.offsets[s]

    def _map(self, fn, threads: int):
        """fn(s) for every shard that holds molecules, in shard order, on up to `threads`
        threads."""
        live = [s for s in self._own() if len(self.shards[s])]
        if threads <= 1 or len(live) <= 1:
            return [fn(s) for s in live]
        with ThreadPoolExecutor(min(threads, len(live))) as pool:
            return list(pool.map(fn, live))

    def _own(self) -> list[int]:
        """The shards this process searches: all, or under MPI its rank's (`mpi.spread`)."""
        ranks = getattr(self, "_ranks", None)
        return list(range(len(self.shards))) if ranks is None else ranks.mine

    def _searcher(self):
        return _SetSearcher(self)

    @property
    def has_column_index(self) -> bool:
        return True

    @property
    def has_pattern_index(self) -> bool:
        return all(s.has_pattern_index for s in self.shards)

    @property
    def has_analog_index(self) -> bool:
        return all(s.has_analog_index for s in self.shards)

    def missing_index(self, what: str) -> str:
        flag = "--no-pattern" if what == "substructure" else "--no-analogs"
        return (
            f"{self.path}: the set's shards have no {what if what == 'substructure' else 'analog'}"
            f" index: ingest the set again without {flag}"
        )

    def _pattern_index(self):
        """Checks every shard's substructure index (StoreError naming the first without one)."""
        for shard in self.shards:
            if not shard.has_pattern_index:
                raise _core.StoreError(self.missing_index("substructure"))
            shard._pattern_index()
        return self

    @property
    def fingerprints(self) -> np.ndarray:
        words = self.manifest["fingerprint"]["bits"] // 64
        parts = [s.fingerprints for s in self.shards if len(s)]
        return np.concatenate(parts) if parts else np.zeros((0, words), dtype=np.uint64)

    def fingerprints_at(self, positions) -> np.ndarray:
        pos = np.asarray([int(p) for p in positions], dtype=np.int64)
        words = self.manifest["fingerprint"]["bits"] // 64
        out = np.zeros((len(pos), words), dtype=np.uint64)
        for s, at, local in self._per_shard(pos):
            out[at] = self.shards[s].fingerprints_at(local)
        return out

    def tanimoto_at(self, positions, on_bits) -> np.ndarray:
        pos = np.asarray([int(p) for p in positions], dtype=np.int64)
        out = np.zeros(len(pos), dtype=np.float64)
        for s, at, local in self._per_shard(pos):
            out[at] = self.shards[s].tanimoto_at(local, on_bits)
        return out

    def lookup(self, smiles, workers: int | None = None) -> np.ndarray:
        from ..lookup import lookup

        return lookup(self, smiles, workers=workers)

    def lookup_ids(self, ids) -> np.ndarray:
        found = self._core.lookup_ids([str(i) for i in ids])
        return np.array([p[0] if p else -1 for p in found], dtype=np.int64)

    def file_sizes(self) -> dict:
        """Bytes of each file of the set: the shards' as `shard-NNNN/FILE`."""
        out = {}
        for rec, shard in zip(self.manifest["shards"], self.shards):
            out.update({f"{rec['name']}/{f}": b for f, b in shard.file_sizes().items()})
        return out

    def close(self) -> None:
        for shard in self.shards:
            shard.close()

    def __repr__(self) -> str:
        fp = self.manifest["fingerprint"]
        return (
            f"<molsift.StoreSet {self.path!r}: {len(self)} molecules in {len(self.shards)} "
            f"shards, {fp['kind']} {fp['bits']} bits, {self.counts['rejected']} rejected>"
        )


def iter_set_hit_arrays(store: StoreSet, query, *, max_hits=None, workers=None, cancel=None,
                        smarts=False, chirality=False) -> Iterator[np.ndarray]:  # fmt: skip
    """Substructure hits of a set, as `substructure.search.iter_hit_arrays` gives a store's:
    int64 arrays in set order, at most `max_hits`; `last_stats()` sums the shards'."""
    from ..substructure import search as sub
    from ..substructure.query import Query, parse_query

    q = query if isinstance(query, Query) else parse_query(query, smarts, chirality)
    if max_hits is not None and max_hits < 0:
        raise ValueError(f"max_hits must be >= 0, not {max_hits}")
    store._pattern_index()
    total = [{"query": q.text, "kind": q.kind, "form": q.form, "workers": 1,
              "stopped_early": False, "always_false": q.always_false}]  # fmt: skip
    ranks = getattr(store, "_ranks", None)
    if ranks is not None:  # under MPI: this rank's shards, then the hits meet at rank 0
        # no cancel: a rank leaving early would leave the others in the merge
        kw = {"max_hits": max_hits, "workers": workers}
        with collective(store, "substructure", q, kw):
            yield from _ranks_hit_arrays(store, ranks, q, max_hits, workers, None, total)
        return
    try:
        yield from _shard_hits(store, range(len(store.shards)), q, max_hits, workers, cancel, total)
    finally:
        stats = _sum_stats(total)
        stats["stopped_early"] = any(t.get("stopped_early") for t in total)
        sub._STATS.value = stats


def set_analogs(store: StoreSet, query, max_dist=2, k=None, limits=None, timeout=None, lock=None,
                cancel=None, threads=1):  # fmt: skip
    """`analogs.search.analogs` over a set (`_set_analogs`: the distances one store walks, every
    shard's hits within them merged by distance, Tanimoto descending, position, cut to k);
    complete to the least distance every shard completed. Under MPI every rank runs it
    together, without `cancel`. `threads`: each walk's distances divided among that many."""
    ranks = getattr(store, "_ranks", None)
    if ranks is not None:  # every rank runs it together; no cancel (none may leave early)
        with collective(store, "analogs", query, max_dist, k, limits, timeout):
            return _set_analogs(store, query, max_dist, k, limits, timeout, lock, None, threads)
    return _set_analogs(store, query, max_dist, k, limits, timeout, lock, cancel, threads)


def _set_analogs(store, query, max_dist, k, limits, timeout, lock, cancel, threads=1):
    """This process walks its shards once, as one library (`_walk_units`: their union; under
    MPI with the other ranks of its node, the node's shards: `_node_walk`). With
    `k`, distance by distance as one store does (`_walk_in_step`): the hits within d edits, d =
    0, 1, ..., until the whole set has k of them (summed over the ranks under MPI) or
    `max_dist` is reached. A rank walking alone to its own k would go much farther than the set
    needs (its shards have fewer molecules near the query): each walks the distances the one
    store walks, no more."""
    from ..analogs.search import Analogs, analogs

    ranks = getattr(store, "_ranks", None)
    own = [s for s in store._own() if len(store.shards[s])]
    if k is not None and sum(1 for shard in store.shards if len(shard)) > 1:
        parts = _walk_in_step(store, own, query, max_dist, k, limits, timeout, lock, cancel,
                              threads)  # fmt: skip
    else:  # one shard (its own walk is the set's), or every hit within max_dist: one walk
        own, share, peers = _node_walk(store, own)
        parts = []
        for lib, offset in _walk_units(store, own):
            a = analogs(lib, query, max_dist=max_dist, k=k, limits=limits, timeout=timeout,
                        lock=lock, cancel=cancel, threads=threads, peers=peers,
                        share=share)  # fmt: skip
            a.columns["position"] = a.columns["position"] + offset
            parts.append(a)
    if not parts:  # no molecule here: the query checked as a shard would, no hit
        _check_query(store, query, max_dist, k, limits, timeout)
        parts = [Analogs(_no_hits(), max_dist, False, {})]
    if ranks is not None:  # under MPI: every rank's hits meet at rank 0
        got = ranks.gather(parts)
        if got is None:
            return Analogs({c: v[:0] for c, v in parts[0].columns.items()}, 0, False, {})
        parts = [p for part in got for p in part]
    cols = {c: np.concatenate([p.columns[c] for p in parts]) for c in parts[0].columns}
    order = np.lexsort((cols["position"], -cols["tanimoto"], cols["distance"]))[:k]
    cols = {c: v[order] for c, v in cols.items()}
    stats = _sum_stats([p.stats for p in parts])
    return Analogs(cols, min(p.complete_to for p in parts), any(p.partial for p in parts), stats)


#: the most molecules a set's shards walked as one library may hold (its hits' positions are
#: 32-bit); a larger set's shards each walk alone, in step
UNION_MAX = 1 << 32


def _walk_in_step(store, own, query, max_dist, k, limits, timeout, lock, cancel, threads=1):
    """The hits of `own` shards (`Analogs`, set positions) of a top-k analog search, every
    distance of `_InStep` walked: as one store's walk with `k`, complete to the distance where
    the set has k hits, every hit within it."""
    step = _InStep(store, own, query, max_dist, k, limits, timeout, lock, cancel, threads)
    for _ in step.levels():
        pass
    return step.parts()


class _InStep:
    """This process's walk of `own` shards (one `LevelWalk` over the union of their indexes,
    `_Shards`; each shard's own walk on its own thread, at most as many at once as there are
    cores, when the set's positions pass 32 bits), distance by distance, in step with the other
    ranks' under MPI: after each distance d the ranks sum their hits, and all stop after the
    distance where the whole set has `k` (if given), the last distance, or a timeout anywhere.
    A rank walking alone to its own k would go much farther than the set needs. A distance's
    hits are ranked and cut to what `k` leaves after the set's hits of the distances before
    (the set's answer keeps no more of them; each unit's best of them hold every one it keeps),
    so that the element changes of hits the answer drops are never computed.

    Under MPI the ranks of one node walk their node's shards together (`Ranks.walkers`): one
    walk over the union of those shards, each distance divided among the ranks (its records
    exchanged among them: `_core.AnalogIndexUnion.walk`'s peers), where each rank walked its
    own shards and every rank of the node repeated the same walk. Every rank of the node then
    has every hit of the node; each ranks and hands out its share (the hits `i` with `i %
    size == rank`), so that the node's hits are counted and ranked once, by all of its
    ranks."""

    def __init__(self, store, own, query, max_dist, k, limits, timeout, lock, cancel,
                 threads=1):  # fmt: skip
        from ..analogs.search import LevelWalk

        self.ranks = getattr(store, "_ranks", None)
        own, self.share, peers = _node_walk(store, own)
        self.units = _walk_units(store, own)
        gate = threading.BoundedSemaphore(os.cpu_count() or 1)  # walks at once: the cores
        self.walks = [LevelWalk(lib, query, max_dist, limits, timeout, lock, gate, threads,
                                peers) for lib, _ in self.units]  # fmt: skip
        self.cols: list[list] = [[] for _ in self.units]
        self.ended: dict[int, dict] = {}  # the stats of each walk that ended
        self.stop_at = max_dist
        self.max_dist, self.k, self.cancel = max_dist, k, cancel
        self.hits = 0  # this process's hits of every distance walked, before any cut
        self.before = 0  # the set's hits of the distances before the current one

    def levels(self) -> Iterator[tuple[int, list[dict], bool]]:
        """Per distance d: (d, the hits this process found at d, one dict of columns in set
        positions per unit that found some, whether a walk timed out in it: d is then the
        last and its hits are those found before the timeout)."""
        from ..analogs.search import share_of

        try:
            for d in range(self.max_dist + 1):
                paused, ranked = [], []
                keep = None if self.k is None else self.k - self.before
                for u, walk in enumerate(self.walks):
                    if u in self.ended:
                        continue
                    what, dist, data = walk.next_event(self.cancel)
                    if what == "error":
                        raise data
                    if what == "level":  # the walk reports every distance in turn
                        if dist != d:
                            raise RuntimeError(f"an analog walk reported distance {dist} at {d}")
                        hits = share_of(data[0], self.share)
                        self.hits += sum(len(ps) for _, _, ps in hits)
                        ranked.append((u, walk, walk.ranked(hits, keep), data[1]))
                        paused.append((u, walk))
                    elif what == "end":
                        rest, paths, stats = data
                        self.ended[u] = dict(stats)
                        if self.ended[u]["timed_out"]:  # the hits of the distance it left
                            rest = share_of(rest, self.share)
                            self.hits += sum(len(ps) for _, _, ps in rest)
                            ranked.append((u, walk, walk.ranked(rest, keep), paths))
                found = [self.hits, int(any(st["timed_out"] for st in self.ended.values()))]
                if self.ranks is not None:
                    found = self.ranks.allsum(found)
                if (
                    keep is not None
                    and found[0] - self.before > keep
                    and (self.ranks is not None or len(ranked) > 1)
                ):
                    self._cut(ranked, keep)
                new = [(u, walk.columns(r, paths)) for u, walk, r, paths in ranked]
                for u, c in new:
                    self.cols[u].append(c)
                self.before = found[0]
                more = not ((self.k is not None and found[0] >= self.k) or found[1]
                            or d == self.max_dist)  # fmt: skip
                for _, walk in paused:
                    walk.go_on(more)
                if not more:  # each walk ends at d and reports what it did
                    for u, walk in paused:
                        what, _, data = walk.next_event(self.cancel)
                        if what == "error":
                            raise data
                        if what == "end":
                            self.ended[u] = dict(data[2])
                yield d, [self._in_set(u, c) for u, c in new], bool(found[1])
                if not more:
                    self.stop_at = d
                    return
        finally:
            for walk in self.walks:
                walk.halt()

    def _cut(self, ranked: list, keep: int) -> None:
        """A distance's hits, more than `keep` over the whole set, cut to the `keep` that rank
        first over the set (Tanimoto descending, then set position) before their element
        changes are computed (about 15 µs a row): each unit's best `keep` (under MPI, each
        rank's: one all-reduction of `keep` records, `Ranks.everywhere_topk`) hold them all.
        Cut to its own `keep` only, each rank computed nearly `keep` rows (158 a query against
        one store's 100 on 2 ranks, the 20 unlike MOSES queries, top-100 within 3 edits)."""
        rows = [(r, self.units[u][1]) for u, _, r, _ in ranked]
        pos = np.concatenate([r.position[r.order] + off for r, off in rows] or [np.zeros(0)])
        sc = np.concatenate([r.tanimoto[r.order] for r, _ in rows] or [np.zeros(0)])
        best = np.lexsort((pos, -sc))[:keep]
        pos, sc = pos[best].astype(np.int64), sc[best]
        if self.ranks is not None:
            pos, sc = self.ranks.everywhere_topk(pos, sc, self.k)
        if len(pos) < keep:
            return
        for r, off in rows:
            r.cut(float(sc[keep - 1]), int(pos[keep - 1]), off)

    def _in_set(self, u: int, cols: dict) -> dict:
        """A unit's columns with set positions."""
        return {**cols, "position": cols["position"] + self.units[u][1]}

    def parts(self) -> list:
        """Each unit's hits of every distance walked (`Analogs`, set positions)."""
        from ..analogs.search import Analogs

        parts = []
        for u in range(len(self.units)):
            stats = self.ended.get(u, {})
            complete_to = min(int(stats.get("complete_to", self.stop_at)), self.stop_at)
            got = [self._in_set(u, c) for c in self.cols[u]] or [_no_hits()]
            merged = {c: np.concatenate([x[c] for x in got]) for c in got[0]}
            parts.append(Analogs(merged, complete_to, bool(stats.get("timed_out")), stats))
        return parts

    def stats(self) -> dict:
        """The walks' statistics summed (this process's work: each walk's own edits and graphs,
        whether it walked alone or divided among the ranks of its node)."""
        return _sum_stats(list(self.ended.values()))


def _node_walk(store: StoreSet, own: list[int]) -> tuple:
    """(shards, share, peers) of this process's analog walk: under MPI the non-empty shards of
    its node, walked by the node's ranks together (`Ranks.walkers`), this rank's share of the
    hits `(rank, size)` and the walk's peers `(rank, size, exchange)`; otherwise `own`, and
    None, None (also for a set whose positions pass 32 bits: its shards walk alone)."""
    ranks = getattr(store, "_ranks", None)
    walkers = ranks.walkers() if ranks is not None and len(store) <= UNION_MAX else None
    if walkers is None:
        return own, None, None
    rank, size, shards, exchange = walkers
    mine = [s for s in shards if len(store.shards[s])]
    return mine, (rank, size), (rank, size, exchange)


def _walk_units(store: StoreSet, own: list[int]) -> list[tuple]:
    """What this process walks for `own` shards, with the set offset of its positions: their
    union (`_Shards`, set positions), or each shard alone when the set's positions pass 32 bits
    (`UNION_MAX`); nothing when `own` is empty."""
    if own and len(store) <= UNION_MAX:
        return [(_Shards(store, own), 0)]
    return [(store.shards[s], store.offsets[s]) for s in own]


class _Shards:
    """Some shards of a set as one library of an analog walk: the union of their analog
    indexes (`_core.AnalogIndexUnion`), positions in the set, the set's Tanimoto to a query
    (what `analogs.search` reads of a store to walk and rank)."""

    def __init__(self, store: StoreSet, shards: list[int]):
        from ..search import fingerprinter_for

        self.manifest = store.manifest
        self.fingerprint_spec = store.fingerprint_spec
        self.tanimoto_at = store.tanimoto_at
        self._fingerprinter = fingerprinter_for(store)
        self._analog_obj = union_index(store, shards)


def union_index(store: StoreSet, shards: list[int]):
    """The analog indexes of `shards` (each opened once per open shard) as one
    (`_core.AnalogIndexUnion`), positions in the set: made once per open set and shards (its
    filter reads every shard's WL hashes: 1.5-1.8 ms for all of MOSES)."""
    from ..analogs.search import _index

    key = tuple(shards)
    union = store._unions.get(key)
    if union is None:
        union = store._unions[key] = _core.AnalogIndexUnion(
            [_index(store.shards[s]) for s in shards], [store.offsets[s] for s in shards]
        )
    return union


def _check_query(store, query, max_dist, k, limits, timeout) -> None:
    """An analog search's arguments and query checked as a shard's walk checks them (a process
    with no molecule of the set raises the same error as one that walks)."""
    from ..analogs.search import _check, _query, parse_limits

    _check(max_dist, k, timeout)
    parse_limits(limits)
    _query(store, query)


def _no_hits() -> dict:
    """The columns of an analog result with no hit."""
    from ..analogs.search import KINDS

    return {"position": np.zeros(0, np.int64), "distance": np.zeros(0, np.int64),
            "tanimoto": np.zeros(0, np.float64), **{c: np.zeros(0, np.int64) for c in KINDS},
            "mut": np.zeros(0, np.int64)}  # fmt: skip


def iter_set_analogs(store: StoreSet, query, max_dist=2, k=None, limits=None, timeout=None,
                     lock=None, cancel=None, threads=1):  # fmt: skip
    """As `analogs.search.iter_analogs`, one `Analogs` per distance, for a set searched shard
    by shard: each distance handed out as soon as every rank (or every shard's walk) has
    searched it (`_stream_in_step`). Under `mpirun molsift serve` (whose searcher ranks run
    whole searches) the set's answer is merged first, then cut by distance."""
    from ..analogs.search import Analogs

    ranks = getattr(store, "_ranks", None)
    if ranks is None or ranks.fanout is None:
        yield from _stream_in_step(store, query, max_dist, k, limits, timeout, lock, cancel,
                                   threads)  # fmt: skip
        return
    whole = set_analogs(store, query, max_dist, k, limits, timeout, lock, cancel, threads)
    dist = whole.columns["distance"]
    top = int(dist.max()) if len(dist) else -1
    last = max(top, whole.complete_to if not whole.partial else top)
    for d in range(0, last + 1):
        keep = dist == d
        yield Analogs({c: v[keep] for c, v in whole.columns.items()}, d, False, {})
    if whole.partial:
        yield Analogs({c: v[:0] for c, v in whole.columns.items()}, whole.complete_to, True,
                      whole.stats)  # fmt: skip


def _stream_in_step(store, query, max_dist, k, limits, timeout, lock, cancel, threads=1):
    """`iter_set_analogs` by `_InStep`: after each distance, its hits of every rank meet at rank
    0 (one gather), ranked (Tanimoto descending, then position) and cut to what `k` leaves,
    and are handed out (every rank hands out a level, empty but on rank 0). A timeout ends with
    the partial level (its hits found so far), marked partial as one store's last level is."""
    from ..analogs.search import Analogs

    ranks = getattr(store, "_ranks", None)
    own = [s for s in store._own() if len(store.shards[s])]
    if not own:  # no molecule here: the query checked as a shard would
        _check_query(store, query, max_dist, k, limits, timeout)
    step = _InStep(store, own, query, max_dist, k, limits, timeout, lock,
                   None if ranks is not None else cancel, threads)  # fmt: skip
    given = 0
    for d, new, timed_out in step.levels():
        if ranks is not None:
            got = ranks.gather(new)
            new = [c for part in (got or []) for c in part]
        cols = {c: np.concatenate([x[c] for x in new]) for c in new[0]} if new else _no_hits()
        order = np.lexsort((cols["position"], -cols["tanimoto"]))
        if k is not None:
            order = order[: max(0, k - given)]
        cols = {c: v[order] for c, v in cols.items()}
        given += len(order)
        if timed_out:
            yield Analogs(cols, d - 1, True, step.stats())
            return
        yield Analogs(cols, d, False, {})


def _shard_hits(store, shards, q, max_hits, workers, cancel, total) -> Iterator[np.ndarray]:
    """The hits of `shards` (ascending) in set positions, in order, at most `max_hits` in all;
    each shard's `last_stats()` appended to `total`."""
    from ..substructure import search as sub

    found = 0
    for s in shards:
        shard = store.shards[s]
        if max_hits is not None and found >= max_hits:
            break
        if not len(shard):
            continue
        left = None if max_hits is None else max_hits - found
        for hits in sub.iter_hit_arrays(shard, q, max_hits=left, workers=workers, cancel=cancel):
            found += len(hits)
            yield hits + store.offsets[s]
        total.append(sub.last_stats())


def _ranks_hit_arrays(store, ranks, q, max_hits, workers, cancel, total) -> Iterator[np.ndarray]:
    """Substructure hits under MPI: each rank its shards' (each to `max_hits`, in set order),
    counts then hits gathered at rank 0, which keeps the first `max_hits` of their union."""
    from ..cancel import Cancelled, new_flag
    from ..substructure import search as sub

    mine: list[np.ndarray] = []
    # under `mpirun molsift serve`, each rank stops its own part at the time limit and still
    # meets the merge (a rank that left it would leave the others waiting)
    limit = None if ranks.fanout is None else ranks.fanout.time_limit_s
    flag = new_flag() if limit else cancel
    timer = threading.Timer(limit, flag.set) if limit else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    stopped = False
    try:
        try:
            mine.extend(_shard_hits(store, ranks.mine, q, max_hits, workers, flag, total))
        except Cancelled:
            if timer is None:
                raise
            stopped, mine = True, []
        finally:
            if timer is not None:
                timer.cancel()
        local = np.concatenate(mine) if mine else np.zeros(0, dtype=np.int64)
        got = ranks.gather_arrays(np.sort(local))
        early = ranks.gather(any(t.get("stopped_early") for t in total))
        if any(ranks.gather(stopped) or []):
            raise Cancelled("the search was stopped at the time limit")
        if got is not None:
            every = np.sort(got[0])
            cut = every if max_hits is None else every[:max_hits]
            total.append({"stopped_early": bool(any(early)) or len(every) > len(cut)})
            if len(cut):
                yield cut
    finally:
        stats = _sum_stats(total)
        stats["stopped_early"] = any(t.get("stopped_early") for t in total)
        sub._STATS.value = stats
