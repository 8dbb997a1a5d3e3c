"""Substructure search of one query over an open store: parse (`query.py`), screen the pattern
planes in Rust (`crates/substructure`, segments of the store in order), then match the
survivors exactly in batches, handing hits out in store order as each batch is confirmed, and
stopping at `max_hits`. The match runs on the index's graphs in Rust (`program.py` compiles the
query; threads, GIL released) when the index has them and the query compiles; molecules
without a graph, and queries that do not compile (chirality, rare primitives), go to RDKit
(`matcher.py`), in this process when they are few or one worker is asked for, else on the
store's `MatchPool` (`engine.py`). `last_stats()` tells what the last search
did (survivors of the screen, hits, times). A `cancel` flag (`molsift.cancel`) set while the
search runs stops it (`Cancelled`): it is read before each segment and batch, and inside the
graph matcher, molecule by molecule, when the built extension's matcher takes it."""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import _core
from ..cancel import check, kernel_flag
from ..parallel import check_workers, default_workers
from .engine import ordered
from .matcher import match
from .query import Query, parse_query

#: Molecules screened per call into Rust (candidates of one segment are held at once).
SEGMENT = 1 << 22
#: Survivors at or below which the match stays in the calling process (no worker round trip).
LOCAL_MAX = 2000
#: Survivors per batch: the first batches are small so that the first hits come early.
FIRST_BATCH, MAX_BATCH = 128, 4096
#: The largest batch of the graph matcher (split over its threads).
GRAPH_BATCH = 1 << 16

_GRAPH_QUERIES: dict[str, Any] = {}

_STATS = threading.local()


def last_stats() -> dict[str, Any]:
    """What the last search of this thread did: `candidates` (survivors of the screen),
    `hits`, `stopped_early` (max_hits reached), `screen_seconds`, `seconds`, `workers` (1 when
    the match ran in this process), `form` (the matcher's molecule form), `planes_read_bytes`."""
    return dict(getattr(_STATS, "value", {}))


def _batches(candidates: Iterator[np.ndarray], largest: int = MAX_BATCH) -> Iterator[np.ndarray]:
    size = FIRST_BATCH
    for cands in candidates:
        i = 0
        while i < len(cands):
            yield cands[i : i + size]
            i += size
            size = min(2 * size, largest)


def _graph_query(q: Query):
    """The compiled graph-matcher query of `q` (cached), or None."""
    if q.program is None:
        return None
    gq = _GRAPH_QUERIES.get(q.program)
    if gq is None:
        if len(_GRAPH_QUERIES) > 1000:
            _GRAPH_QUERIES.clear()
        gq = _GRAPH_QUERIES[q.program] = _core.GraphQuery(q.program)
    return gq


def _graph_match(
    store, index, gq, q: Query, batches, threads: int, cancel=None
) -> Iterator[np.ndarray]:
    flag = kernel_flag(cancel)
    extra = {} if flag is None else {"cancel": flag}  # an extension built before it: none
    for b in batches:
        raw_hits, raw_undecided = index.match_graphs(gq, b.tobytes(), threads, **extra)
        hits = np.frombuffer(raw_hits, dtype="<i8")
        undecided = np.frombuffer(raw_undecided, dtype="<i8")
        if len(undecided):  # molecules the graphs do not describe: RDKit decides
            hits = np.sort(np.concatenate([hits, match(store._core, q, undecided)]))
        yield hits


def iter_hit_arrays(
    store,
    query: str | Query,
    *,
    smarts: bool = False,
    max_hits: int | None = None,
    workers: int | None = None,
    chirality: bool = False,
    cancel=None,
) -> Iterator[np.ndarray]:
    """Hits of `query` in `store` (a `molsift.Store`), as int64 arrays in store order (the
    first arrive before the search ends); at most `max_hits` in all. `cancel`: a flag
    (`molsift.cancel.new_flag()`) that stops the search with `Cancelled` once set. A store set
    is searched shard by shard (`sets.store.iter_set_hit_arrays`)."""
    check_workers(workers)
    if hasattr(store, "shards"):
        from ..sets.store import iter_set_hit_arrays

        yield from iter_set_hit_arrays(
            store, query, smarts=smarts, max_hits=max_hits, workers=workers,
            chirality=chirality, cancel=cancel,
        )  # fmt: skip
        return
    t0 = time.perf_counter()
    q = query if isinstance(query, Query) else parse_query(query, smarts, chirality)
    if max_hits is not None and max_hits < 0:
        raise ValueError(f"max_hits must be >= 0, not {max_hits}")
    index = store._pattern_index()
    stats: dict[str, Any] = {
        "query": q.text, "kind": q.kind, "form": q.form, "candidates": 0, "matched": 0,
        "hits": 0, "stopped_early": False, "screen_seconds": 0.0, "planes_read_bytes": 0,
        "workers": 1, "always_false": q.always_false,
    }  # fmt: skip
    _STATS.value = stats
    n = len(store)
    if q.always_false is not None or max_hits == 0 or n == 0:
        stats["seconds"] = time.perf_counter() - t0
        return

    def screened() -> Iterator[np.ndarray]:
        for start in range(0, n, SEGMENT):
            check(cancel)
            s0 = time.perf_counter()
            raw, words = index.screen(q.bits, start, min(start + SEGMENT, n))
            cands = np.frombuffer(raw, dtype="<i8")
            stats["screen_seconds"] += time.perf_counter() - s0
            stats["planes_read_bytes"] += 8 * words
            stats["candidates"] += len(cands)
            yield cands

    segments = screened()
    first = next(segments)
    wanted = default_workers() if workers is None else max(1, int(workers))
    few = n <= SEGMENT and len(first) <= LOCAL_MAX

    def all_segments() -> Iterator[np.ndarray]:
        yield first
        yield from segments

    lengths: collections.deque = collections.deque()  # survivors of each batch, in order

    def counted(batches: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
        for b in batches:
            check(cancel)
            lengths.append(len(b))
            yield b

    gq = _graph_query(q) if index.has_graphs() else None
    if gq is not None:
        stats["form"] = "graph"
        stats["workers"] = wanted
        batches = counted(_batches(all_segments(), GRAPH_BATCH))
        results: Iterator[np.ndarray] = _graph_match(store, index, gq, q, batches, wanted, cancel)
    elif wanted <= 1 or few:
        batches = counted(_batches(all_segments()))
        results = (match(store._core, q, b) for b in batches)
    else:
        batches = counted(_batches(all_segments()))
        stats["workers"] = wanted
        results = ordered(store._match_pool(wanted), q, batches, depth=3 * wanted)
    try:
        for hits in results:
            stats["matched"] += lengths.popleft()
            if max_hits is not None and stats["hits"] + len(hits) >= max_hits:
                hits = hits[: max_hits - stats["hits"]]
                stats["hits"] += len(hits)
                stats["stopped_early"] = True
                if len(hits):
                    yield hits
                return
            stats["hits"] += len(hits)
            if len(hits):
                yield hits
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()
        stats["seconds"] = time.perf_counter() - t0


def substructure(store, query, **kw) -> np.ndarray:
    """Store positions (int64, ascending) of the molecules containing `query`."""
    parts = list(iter_hit_arrays(store, query, **kw))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def iter_substructure(store, query, **kw) -> Iterator[int]:
    """As `substructure`, one store position at a time, as each batch is confirmed."""
    for hits in iter_hit_arrays(store, query, **kw):
        yield from (int(i) for i in hits)
