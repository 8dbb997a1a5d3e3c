"""Analog search over a store's analog index (`molsift index STORE --analogs`): the molecules
whose skeletons are at most D edits from the query's (docs/analogs.md has the definition), found
by the exact walk in Rust, ranked by distance, then Morgan Tanimoto to the query (the store's own
fingerprints), then store position.

`analogs` returns every hit at once (an `Analogs` of numpy columns); `iter_analogs` hands out the
hits of each distance as soon as that distance has been searched completely, so the nearest
arrive first. Both stop at the distance where `k` molecules are reached (all of that distance
still come, so the k best by the ranking are among them), or at `timeout` seconds, marking the
result partial: every hit up to `complete_to` is then still there. A `cancel` flag
(`molsift.cancel`) set while the walk runs ends it with `Cancelled` (inside the walk when the
built extension's walk takes the flag, else as the next distance completes)."""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..cancel import check, kernel_flag
from ..limits import MAX_SECONDS
from ..wording import quoted
from .skeleton import KINDS, elements_of, skeleton_of

if TYPE_CHECKING:
    import numpy as np

#: the columns of an analog result, in order
COLUMNS = ("position", "distance", "tanimoto", *KINDS, "mut")
#: a walk bound: the largest distance accepted (each edit multiplies the work about 100-fold)
MAX_DIST = 8
#: the most heavy atoms a query may have (the walk numbers each graph's atoms' origins in 16
#: bits)
MAX_ATOMS = 65_534


@dataclass
class Analogs:
    """Hits of one analog query in rank order, as numpy columns: `position` (int64), `distance`
    (int64), `tanimoto` (float64, Morgan to the query), and the edits by kind of one shortest
    path (`tdn`, `tup`, `rdn`, `rup`, `ldn`, `lup`, int64), and `mut` (int64): the atoms
    whose element differs from the query atom they come from along that path, under the
    isomorphism with the fewest (docs/analogs.md, "Element changes"; -1 where unknown).
    `complete_to`: every hit up to this distance is present; `partial`: the timeout ended the
    search before `max_dist`."""

    columns: dict
    complete_to: int
    partial: bool
    stats: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.columns["position"])

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def to_pandas(self):
        """The columns as a pandas DataFrame (pandas must be installed)."""
        import pandas as pd

        return pd.DataFrame(self.columns)


def index_analogs(store_path, workers: int | None = None, progress=None) -> dict:
    """Builds the analog index of the store at `store_path` on `workers` threads
    (default: all cores) and renames it into the store, as `molsift index STORE --analogs`
    does; `progress(done)` is called now and then with the molecules read. Returns the index
    header (counts, files). Stores opened before see it once opened again."""
    import json
    import os

    from .. import _core
    from ..parallel import check_workers

    threads = check_workers(workers) or os.cpu_count() or 1
    text, _size = _core.build_analog_index(os.fspath(store_path), threads, progress=progress)
    return json.loads(text)


def parse_limits(limits: Mapping[str, int] | None) -> list[int]:
    """Per-kind limits as the walk takes them (255: none), or ValueError naming a bad one."""
    out = [255] * len(KINDS)
    for kind, n in (limits or {}).items():
        if kind not in KINDS:
            raise ValueError(f"unknown edit kind {kind!r}: the kinds are {', '.join(KINDS)}")
        if n is None:
            continue
        if not isinstance(n, int) or not 0 <= n < 255:
            raise ValueError(f"the limit of {kind} must be an integer from 0 to 254, not {n!r}")
        out[KINDS.index(kind)] = n
    return out


def _check(max_dist: int, k: int | None, timeout: float | None) -> None:
    check_dist(max_dist)
    if k is not None and (not isinstance(k, int) or k < 1):
        raise ValueError(f"k must be at least 1, not {k!r}")
    check_timeout(timeout)


def check_dist(max_dist: int, name: str = "max_dist") -> None:
    """ValueError naming `name` (the command line's `--dist`) unless `max_dist` is an integer
    from 0 to MAX_DIST: the one check of an analog search's distance."""
    if not isinstance(max_dist, int) or not 0 <= max_dist <= MAX_DIST:
        raise ValueError(f"{name} must be an integer from 0 to {MAX_DIST}, not {max_dist!r}")


def check_timeout(timeout: float | None, name: str = "timeout") -> None:
    """ValueError naming `name` (the command line's `--timeout`) unless `timeout` is None or a
    positive number of seconds, at most MAX_SECONDS: 1e19 was a panic of the core. The one
    check of an analog search's time limit: the command line calls it before any output."""
    if timeout is not None and not 0 < timeout <= MAX_SECONDS:
        shown = format(timeout, ".15g") if isinstance(timeout, (int, float)) else repr(timeout)
        raise ValueError(
            f"{name} must be a positive number of seconds, at most {MAX_SECONDS} (a year), "
            f"not {shown}"
        )


def _query(store, query):
    """(RDKit Mol, skeleton) of a SMILES or Mol query; ValueError for SMILES RDKit cannot read
    or a query without heavy atoms (or too many for the walk)."""
    if isinstance(query, str):
        from ..chem import to_mol

        mol, reason = to_mol(query)
        if mol is None:
            raise ValueError(f"invalid query SMILES {query!r}: {reason}")
    else:
        mol = query
    skeleton = skeleton_of(mol)
    who = f"query {quoted(query)}" if isinstance(query, str) else "the query"  # named once
    if skeleton.n == 0:
        raise ValueError(f"{who} has no heavy atom: its skeleton is empty")
    if skeleton.n > MAX_ATOMS:
        raise ValueError(
            f"{who} has {skeleton.n} heavy atoms: analog search takes at most {MAX_ATOMS}"
        )
    return mol, skeleton


def _index(store):
    """The store's analog index, opened once per open store; a store set's, the union of its
    shards' (`_core.AnalogIndexUnion`: one walk over every shard, positions in the set)."""
    index = getattr(store, "_analog_obj", None)
    if index is None and hasattr(store, "shards"):
        from ..sets.store import union_index

        live = [s for s, shard in enumerate(store.shards) if len(shard)]
        index = store._analog_obj = union_index(store, live)
    elif index is None:
        index = store._analog_obj = store._core.analog_index()
    return index


def _shard_by_shard(store) -> bool:
    """Whether `store` is a store set searched shard by shard (`sets.store.set_analogs`): under
    MPI (the ranks of a node walk its shards), or a set with no molecule or too many for one walk's
    32-bit positions. Any other set is searched by one walk over the union of its shards."""
    if not hasattr(store, "shards"):
        return False
    from ..sets.store import UNION_MAX

    return getattr(store, "_ranks", None) is not None or not 0 < len(store) <= UNION_MAX


def _tanimoto(store, bits: list[int], positions: np.ndarray) -> np.ndarray:
    """Morgan Tanimoto of the query (its on-bits in the store's fingerprint spec) to each stored
    molecule: the store's `tanimoto_at` (the query's planes alone), else from the hits' rows."""
    import numpy as np

    from ..store import _tanimoto_rows

    if len(positions) == 0:
        return np.zeros(0, dtype=np.float64)
    at = getattr(store, "tanimoto_at", None)
    if at is not None:
        return at(positions, bits)
    return _tanimoto_rows(store.fingerprints[positions], bits)


def share_of(hits: list, share: tuple[int, int] | None) -> list:
    """A walk's hits (distance, edits by kind, positions) of one walker's share `(rank, size)`
    of them (walkers dividing a walk each get every hit: `AnalogIndex.walk`'s peers): the
    hits at places rank, rank + size, ... of the list, the others' positions emptied (a hit's
    place is its index in the walk's paths). All of them when `share` is None."""
    if share is None:
        return hits
    rank, size = share
    return [h if i % size == rank else (h[0], h[1], []) for i, h in enumerate(hits)]


def _rank(store, bits: list[int], hits: list, index=None, paths=None, k=None) -> dict:
    """Columns of (distance, counts, positions) hits in rank order, the first `k` (all when
    None); with `index` and `paths` (the walk's), each kept row's element changes (`mut`) and
    the edits by kind of the path they were counted along."""
    return _Ranked(store, bits, hits, k).columns(index, paths)


class _Ranked:
    """A distance's hits in rank order (distance, Tanimoto descending, position), before the
    element changes of the rows kept are computed (`columns`): a caller dividing a walk may
    first cut them further (`cut`), so that the changes of rows the answer drops are never
    computed (about 20 µs a row)."""

    def __init__(self, store, bits: list[int], hits: list, k=None) -> None:
        import numpy as np

        self.pos = [p for _, _, ps in hits for p in ps]
        self.counts = [c for _, c, ps in hits for _ in ps]
        self.hit = [h for h, (_, _, ps) in enumerate(hits) for _ in ps]
        self.position = np.asarray(self.pos, dtype=np.int64)
        self.distance = np.asarray([d for d, _, ps in hits for _ in ps], dtype=np.int64)
        self.tanimoto = _tanimoto(store, bits, self.position)
        self.order = np.lexsort((self.position, -self.tanimoto, self.distance))[:k]

    def cut(self, score: float, position: int, offset: int = 0) -> None:
        """Keeps the rows that rank no lower than (`score`, `position`) among hits of one
        distance (Tanimoto descending, then position: `offset` added to this walk's)."""
        sc, pos = self.tanimoto[self.order], self.position[self.order] + offset
        self.order = self.order[(sc > score) | ((sc == score) & (pos <= position))]

    def columns(self, index=None, paths=None) -> dict:
        """The kept rows' columns; with `index` and `paths` their element changes (`mut`)."""
        import numpy as np

        order = self.order
        cols = {
            "position": self.position[order],
            "distance": self.distance[order],
            "tanimoto": self.tanimoto[order],
        }
        mut = np.full(len(order), -1, dtype=np.int64)
        if index is not None and paths is not None and len(paths) and len(order):
            rows = [(self.hit[i], self.pos[i]) for i in order.tolist()]
            muts, counts = index.element_changes(paths, rows)
            mut = np.asarray(muts, dtype=np.int64)
        else:
            counts = [self.counts[i] for i in order.tolist()]
        # each path's edits by kind arrive as 6 bytes
        by_kind = np.frombuffer(b"".join(counts), dtype=np.uint8).astype(np.int64)
        by_kind = by_kind.reshape(-1, len(KINDS))
        for j, kind in enumerate(KINDS):
            cols[kind] = by_kind[:, j]
        cols["mut"] = mut
        return cols


def _prepare(store, query, max_dist, k, limits, timeout, lock):
    """(the query's on-bits, the walk's positional arguments, the index) after every check;
    the RDKit work under `lock`."""
    from ..search import fingerprinter_for

    _check(max_dist, k, timeout)
    lim = parse_limits(limits)
    with lock or contextlib.nullcontext():
        mol, skeleton = _query(store, query)
        bits = fingerprinter_for(store).on_bits(mol)
        elements = elements_of(mol)
    stop_after = k if k is not None else 2**63 - 1
    args = (skeleton.n, list(skeleton.bonds), max_dist, lim, stop_after, timeout)
    return bits, args, elements, _index(store)


def _walk_extra(cancel, threads: int = 1) -> dict:
    """The walk's cancel argument (none for an Event, or an extension built before it) and
    its threads."""
    flag = kernel_flag(cancel)
    extra = {"threads": max(1, int(threads))}
    return extra if flag is None else {**extra, "cancel": flag}


def analogs(
    store,
    query,
    max_dist: int = 2,
    k: int | None = None,
    limits: Mapping[str, int] | None = None,
    timeout: float | None = None,
    lock=None,
    cancel=None,
    threads: int = 1,
    *,
    peers=None,
    share: tuple[int, int] | None = None,
) -> Analogs:
    """The molecules of `store` within `max_dist` edits of `query` (SMILES or RDKit Mol), in rank
    order. `k`: stop at the distance where k molecules are reached and keep the k best;
    `limits`: the most edits of each kind, e.g. {"rup": 0, "tdn": 2}; `timeout`: seconds, after
    which the result is partial; `lock`: held around the RDKit work (a server sharing the store
    between threads); `cancel`: a flag that ends the walk with `Cancelled` once set; `threads`:
    each distance of the walk divided among that many (the same answer for any number);
    `peers` and `share`: the walk divided among processes too (`LevelWalk`), this one ranking
    its share of the hits (`share_of`). ValueError for a bad query or argument, StoreError when
    the store has no analog index."""
    from ..parallel import check_workers

    check_workers(threads, "threads")
    if _shard_by_shard(store):  # a store set under MPI: each node's shards, merged
        from ..sets.store import set_analogs

        return set_analogs(store, query, max_dist, k, limits, timeout, lock, cancel, threads)
    bits, args, elements, index = _prepare(store, query, max_dist, k, limits, timeout, lock)
    extra = _walk_extra(cancel, threads)
    hits, paths, stats = index.walk(*args, elements=elements, peers=peers, **extra)
    check(cancel)
    stats = dict(stats)
    cols = _rank(store, bits, share_of(hits, share), index, paths, k)
    return Analogs(cols, int(stats["complete_to"]), bool(stats["timed_out"]), stats)


def iter_analogs(
    store,
    query,
    max_dist: int = 2,
    k: int | None = None,
    limits: Mapping[str, int] | None = None,
    timeout: float | None = None,
    lock=None,
    cancel=None,
    threads: int = 1,
) -> Iterator[Analogs]:
    """As `analogs`, one `Analogs` per distance (0, 1, 2, ...), each handed out as soon as that
    distance has been searched completely (the walk goes on meanwhile). With `k`, the last
    distance is cut to make k in all. The last one is marked partial if the timeout ended the
    search (it then holds the hits found at the unfinished distance)."""
    from ..parallel import check_workers

    check_workers(threads, "threads")
    if _shard_by_shard(store):  # each shard's, merged, then cut by distance
        from ..sets.store import iter_set_analogs

        yield from iter_set_analogs(store, query, max_dist, k, limits, timeout, lock, cancel,
                                    threads)  # fmt: skip
        return
    bits, args, elements, index = _prepare(store, query, max_dist, k, limits, timeout, lock)
    out: queue.Queue = queue.Queue()
    stop = threading.Event()

    extra = _walk_extra(cancel, threads)

    def level(d, hits, paths) -> None:
        if stop.is_set():  # the consumer is gone: end the walk at this distance
            raise _Stopped
        check(cancel)  # handed to the consumer as an error
        out.put(("level", d, hits, paths))

    def run() -> None:
        try:
            found = index.walk(*args, on_level=level, elements=elements, **extra)
            check(cancel)
            out.put(("end", found))
        except _Stopped:
            pass
        except BaseException as exc:  # handed to the consumer, raised there
            out.put(("error", exc))

    worker = threading.Thread(target=run, name="molsift-analogs", daemon=True)
    worker.start()
    given = 0
    try:
        while True:
            item = out.get()
            if item[0] == "error":
                raise item[1]
            if item[0] == "level":
                _, d, hits, paths = item
                cols = _rank(store, bits, hits, index, paths, None if k is None else k - given)
                given += len(cols["position"])
                yield Analogs(cols, d, False, {})
                continue
            rest, paths, stats = item[1]
            stats = dict(stats)
            if stats["timed_out"]:
                rest_k = None if k is None else max(k - given, 0)
                cols = _rank(store, bits, rest, index, paths, rest_k)
                yield Analogs(cols, int(stats["complete_to"]), True, stats)
            return
    finally:
        # an error or a consumer that stops early: the walk must not call back into Python
        # after this (at exit the interpreter would be gone under it)
        stop.set()
        worker.join()


class LevelWalk:
    """One store's analog walk (no `k`: it goes on until told otherwise) in its own thread,
    pausing as each distance completes: `next_event()` gives the walk's next event (a
    distance's hits, which `columns` ranks, or its end) and, after a distance, the walk waits
    for `go_on(True)` to walk the next one or `go_on(False)` to end. Under MPI the ranks of a
    node walk their node's shards of a store set so, the nodes in step, and all stop after the
    distance where the set has k hits (`sets.store._walk_in_step`): one walk, not one per
    distance. `halt()` ends a walk wherever it is (inside the kernel when the extension takes a
    cancel flag).
    `threads`: each distance divided among that many; `peers` (rank, size, exchange): the
    other processes walking the same library with it, each distance divided among them too
    (`_core.AnalogIndex.walk`: every one of them gets the whole walk's hits)."""

    def __init__(self, store, query, max_dist, limits, timeout, lock, gate=None, threads=1,
                 peers=None):  # fmt: skip
        from ..cancel import new_flag

        self.store = store
        #: held while the walk runs, not while it waits (a set's walks share one: at most as
        #: many walking at once as it allows)
        self._gate = gate or contextlib.nullcontext()
        #: (what, distance, data): ("level", d, (hits, paths)), ("end", None, the walk's
        #: (rest, paths, stats)), ("stopped", None, None) or ("error", None, exception)
        self.events: queue.Queue = queue.Queue()
        self.bits, args, elements, self.index = _prepare(
            store, query, max_dist, None, limits, timeout, lock
        )
        self._flag = new_flag()
        self._go: queue.Queue = queue.Queue()
        self._extra = {**_walk_extra(self._flag, threads), "peers": peers}
        self._thread = threading.Thread(
            target=self._run, args=(args, elements), name="molsift-analogs", daemon=True
        )
        self._thread.start()

    def _run(self, args, elements) -> None:
        def level(d, hits, paths) -> bool:
            self.events.put(("level", d, (hits, paths)))
            self._gate.__exit__(None, None, None)
            more = self._go.get()
            self._gate.__enter__()
            if more is None:  # halted
                raise _Stopped
            return not more  # told to end: the walk ends here and reports its stats

        try:
            with self._gate:
                # probe: each distance's hits, and the pause, before its graphs are
                # canonicalized for the next distance (work a walk told to stop never does)
                found = self.index.walk(*args, on_level=level, elements=elements, probe=True,
                                        **self._extra)  # fmt: skip
            self.events.put(("end", None, found))
        except _Stopped:
            self.events.put(("stopped", None, None))
        except BaseException as exc:  # handed to the coordinator, raised there
            self.events.put(("error", None, exc))

    def ranked(self, hits, k=None) -> _Ranked:
        """A distance's hits (or a timed-out walk's last ones) in rank order, the first `k` (all
        when None); `columns(paths)` then gives their columns."""
        return _Ranked(self.store, self.bits, hits, k)

    def columns(self, ranked: _Ranked, paths) -> dict:
        """The columns of the rows `ranked` keeps, their element changes computed along the
        walk's `paths`."""
        return ranked.columns(self.index, paths)

    def next_event(self, cancel=None) -> tuple:
        """The walk's next event; `Cancelled` when `cancel` is set meanwhile."""
        while True:
            try:
                return self.events.get(timeout=0.05)
            except queue.Empty:
                check(cancel)

    def go_on(self, more: bool) -> None:
        """After a distance: walk the next one, or end here (the walk then reports `end`
        with its stats, the distance complete)."""
        self._go.put(more)

    def halt(self) -> None:
        """Ends the walk now (it then reports `stopped` or an error) and waits for it."""
        self._flag.set()
        self._go.put(None)
        self._thread.join()


class _Stopped(Exception):
    """Raised in the walk's level callback once the consumer has gone."""
