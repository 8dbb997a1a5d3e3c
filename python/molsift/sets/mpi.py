"""Searching a store set on MPI ranks (`mpirun -n R molsift search|substructure|analogs|lookup
SET ...`). mpi4py is imported only here, only under mpirun.

Every rank runs the same command: rank 0 reads the queries and broadcasts them, each rank
searches the shards it was given (`assign`: by size, the largest first to the least loaded
rank) with its threads, and the answers meet at rank 0, equal to the one store's:
- top-k (`-k`, with or without `-t`): a reduction along Open MPI's tree with a user-defined
  operation over fixed-size records (score, position): every rank sends k records of 16 bytes
  once, to its parent, which merges them with its own (`topk`); rank 0 never receives every hit;
- threshold hits, substructure hits, analogs, lookups: counts first, then the arrays gathered
  (`gather_arrays`), merged on rank 0 by the rules of `store.py` (a batch's threshold hits, each
  rank's best first, in one pass in Rust: `merged_runs`, `crates/search` merge.rs).
Rank 0 then reads the hits' ids and SMILES from the set's files. A failure on one rank aborts
the job (`parallel.mpi.abort_job`, through the command line's handler); a rank that dies ends
it through mpirun, with the rank named."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator

import numpy as np

#: the most bytes one reduction of many queries' top-k records carries (`Ranks.topk_many`)
_BATCH_BYTES = 4 << 20
#: a padding record sorts after every real one (scores are in [0, 1])
_PAD_SCORE, _PAD_POS = -1.0, np.iinfo(np.int64).max
RECORD = np.dtype([("score", "<f8"), ("pos", "<i8")])


def assign(sizes: list[int], ranks: int) -> list[list[int]]:
    """The shards (indices, ascending) each of `ranks` ranks searches: the largest shard first,
    each to the rank with the fewest molecules so far (the lowest rank on ties)."""
    load = [0] * ranks
    mine: list[list[int]] = [[] for _ in range(ranks)]
    for s in sorted(range(len(sizes)), key=lambda s: (-sizes[s], s)):
        r = min(range(ranks), key=lambda r: (load[r], r))
        load[r] += sizes[s]
        mine[r].append(s)
    return [sorted(m) for m in mine]


#: the lane of this thread (`Fanout.lane`): which of a set's communicators its search uses
_LANE = threading.local()


def _lane() -> int:
    return getattr(_LANE, "index", 0)


class Ranks:
    """The ranks searching one set: the communicator, this rank's shards, the reduction's
    operations and bytes sent (`sent_bytes`: what this rank sent in reductions and gathers).
    `fanout`: under `mpirun molsift serve`, the channel rank 0 announces each search on; its
    searches run at once in `lanes` lanes, each with a communicator of its own (`comm` is the
    one of the calling thread's lane)."""

    def __init__(self, comm, sizes: list[int], fanout=None, name: str = "", lanes: int = 1):
        self._comms = [comm, *(comm.Dup() for _ in range(lanes - 1))]
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.mine = assign(sizes, self.size)[self.rank]
        self.is_root = self.rank == 0
        self._ops: dict[int, tuple] = {}
        self._ops_lock = threading.Lock()
        self.sent_bytes = 0
        self.prepared_bytes = 0
        self.fanout = fanout
        self.name = name
        self._bars = _node_bars(comm)
        self._tags = [0] * lanes
        self._walkers: dict[int, tuple | None] = {}  # by lane: `walkers()`
        self.walk_bytes = 0  # what this rank sent in analog walks' exchanges

    @property
    def comm(self):
        """The communicator of this thread's lane."""
        return self._comms[_lane()]

    def bar(self):
        """(cells, tag) for the next top-k query: the ranks of this node share each query's
        k-th best in a window of memory they all map (`_core.SharedBars`), the tag counting the
        queries of this lane as every rank counts them (each top-k query of a lane is searched
        by every rank in the same order; lanes interleave their tags); None where the MPI
        cannot share memory."""
        if self._bars is None:
            return None
        self._tags[_lane()] += 1
        return self._bars, self.tag()

    def tag(self) -> int:
        """The tag of this lane's last top-k query (its cell's, in the shared window)."""
        lane, lanes = _lane(), len(self._tags)
        return (self._tags[lane] * lanes + lane) & 0xFFFFFFFF or 1

    def bcast(self, value):
        return self.comm.bcast(value, root=0)

    def walkers(self):
        """(rank, size, shards, exchange): this rank's place among the ranks of its node (of
        this lane's communicator), the shards they hold together, and their exchange of an
        analog walk's records (`exchange(bytes) -> list[bytes]`, every rank's in node order: an
        allgather on the node's communicator of this lane, made once, collectively, at the
        lane's first call). None when this rank is alone on its node."""
        lane = _lane()
        if lane not in self._walkers:
            self._walkers[lane] = self._make_walkers()
        return self._walkers[lane]

    def _make_walkers(self):
        node = _node_comm(self.comm)
        if node is None:
            return None
        if node.Get_size() == 1:
            node.Free()
            return None
        shards = sorted(s for mine in node.allgather(self.mine) for s in mine)
        return node.Get_rank(), node.Get_size(), shards, functools.partial(self._exchange, node)

    def _exchange(self, node, data: bytes) -> list[bytes]:
        """Every rank's `data` on `node`, in node order: the lengths, then the bytes. A rank
        that finished its part of a distance first waits for the others between short sleeps
        (`_wait(spin=False)`), not spinning on a core its node's walkers share."""
        n = node.Get_size()
        sizes = np.empty(n, dtype=np.int64)
        self._wait(node.Iallgather(np.array([len(data)], dtype=np.int64), sizes), spin=False)
        out = np.empty(int(sizes.sum()), dtype=np.uint8)
        self._wait(node.Iallgatherv(np.frombuffer(data, dtype=np.uint8), [out, sizes]), spin=False)
        self.walk_bytes += len(data)
        ends = np.cumsum(sizes).tolist()
        return [out[e - c : e].tobytes() for e, c in zip(ends, sizes.tolist())]

    def _topk_op(self, k: int):
        with self._ops_lock:  # lanes' threads may ask at once
            return self._make_topk_op(k)

    def _make_topk_op(self, k: int):
        got = self._ops.get(k)
        if got is None:
            from mpi4py import MPI

            from .._core import merge_top_k

            def merge(inbuf, inoutbuf, datatype) -> None:
                # one element: one query's k records; a reduction may carry many
                b = np.frombuffer(inoutbuf, dtype=np.uint8)
                b[:] = np.frombuffer(merge_top_k(bytes(inbuf), b.tobytes(), k), np.uint8)

            dtype = MPI.BYTE.Create_contiguous(RECORD.itemsize * k).Commit()
            got = self._ops[k] = (MPI.Op.Create(merge, commute=True), dtype)
        return got

    def _wait(self, req, spin: bool = True) -> None:
        """Waits for a non-blocking operation. Rank 0 of a server (`fanout`) waits at most the
        fan-out's deadline: a searcher rank that died never completes it, and the server then
        answers 503 rather than hanging (`Fanout.lose`). Elsewhere in `Wait`, or with `spin`
        false (a walk's exchange) by testing between sleeps of 10 to 100 µs, where `Wait`
        spins: a rank waiting for the others' part of a distance would take the core of a rank
        still walking when the ranks outnumber the cores, or slow it on the core's other
        hardware thread."""
        fan = self.fanout
        if fan is not None and self.is_root:
            late = (
                f"a searcher rank of {self.name!r} did not answer within {fan.deadline_s:g} s "
                "(it may have died)"
            )
            _poll(req, 2e-5, 2e-3, fan.deadline_s, lambda: fan.lose(late))
        elif spin:
            req.Wait()
        else:
            _poll(req, 1e-5, 1e-4)

    def topk(self, indices: np.ndarray, scores: np.ndarray, k: int):
        """The k best (score descending, position ascending) of every rank's hits, on rank 0
        (empty arrays elsewhere): one reduction of k records per rank."""
        return self.topk_many([(indices, scores)], k)[0]

    def topk_many(self, answers: list[tuple[np.ndarray, np.ndarray]], k: int) -> list[tuple]:
        """`topk` of many queries' hits in one reduction per chunk (at most `_BATCH_BYTES`):
        each query's k records are one element of the reduction, merged element by element.
        On rank 0 the k best (positions, scores) of each query; empty arrays elsewhere."""
        op, dtype = self._topk_op(k)
        out: list[tuple] = []
        step = max(1, _BATCH_BYTES // (RECORD.itemsize * k))
        for at in range(0, len(answers), step):
            part = answers[at : at + step]
            send = _records(part, k)
            recv = np.empty_like(send) if self.is_root else None
            self._wait(
                self.comm.Ireduce(
                    [send, len(part), dtype],
                    [recv, len(part), dtype] if self.is_root else None,
                    op=op,
                    root=0,
                )
            )
            if not self.is_root:
                self.sent_bytes += send.nbytes
                empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
                out.extend(empty for _ in part)
                continue
            out.extend(_unpad(recv))
        return out

    def everywhere_topk(self, indices: np.ndarray, scores: np.ndarray, k: int) -> tuple:
        """As `topk` of one query, the k best (positions, scores) of every rank's on every rank:
        one all-reduction of k records per rank (`indices`, `scores`: this rank's best first, at
        most k)."""
        op, dtype = self._topk_op(k)
        send = _records([(indices, scores)], k)
        recv = np.empty_like(send)
        self._wait(self.comm.Iallreduce([send, 1, dtype], [recv, 1, dtype], op=op))
        self.sent_bytes += send.nbytes
        return _unpad(recv)[0]

    def gather_many(self, answers: list[tuple[np.ndarray, np.ndarray]]) -> list[tuple]:
        """Threshold hits of many queries: every rank's (positions, scores) of each query, in
        one gather of counts and arrays (`gather_arrays`), merged on rank 0 best first (score
        descending, position ascending); empty arrays elsewhere."""
        counts = np.array([len(i) for i, _ in answers], dtype=np.int64)
        indices = np.concatenate(
            [np.asarray(i, dtype=np.int64) for i, _ in answers] or [np.zeros(0, np.int64)]
        )
        scores = np.concatenate(
            [np.asarray(s, dtype=np.float64) for _, s in answers] or [np.zeros(0)]
        )
        got = self.gather_arrays(counts)
        arrays = self.gather_arrays(indices, scores)
        if got is None or arrays is None:
            return [(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)) for _ in answers]
        return merged_runs(got[0], self.size, arrays[0], arrays[1])

    def share(self, items: list, work) -> list:
        """`work(items)` (a list of as many picklable results) on every rank, the work shared:
        each rank does the items `dealt` it by their `costs` (about equal shares) and the
        results are exchanged (one allgather of their pickles; `prepared_bytes` counts what
        this rank sent)."""
        import pickle

        hands = dealt(costs(items), self.size)
        mine = [items[j] for j in hands[self.rank]]
        data = pickle.dumps(work(mine), pickle.HIGHEST_PROTOCOL)
        self.prepared_bytes += len(data)
        out: list = [None] * len(items)
        for hand, d in zip(hands, self.comm.allgather(data)):
            for j, result in zip(hand, pickle.loads(d)):
                out[j] = result
        return out

    def _counts(self, n: int) -> list[int] | None:
        mine = np.array([n], dtype=np.int64)
        every = np.empty(self.size, dtype=np.int64) if self.is_root else None
        self._wait(self.comm.Igather(mine, every, root=0))
        return every.tolist() if self.is_root else None

    def gather_arrays(self, *arrays: np.ndarray) -> list[np.ndarray] | None:
        """Each array concatenated over the ranks in rank order, on rank 0 (None elsewhere):
        the lengths gathered first, then the arrays by Gatherv."""
        return self._gather_arrays(*arrays)[0]

    def _gather_arrays(self, *arrays: np.ndarray):
        counts = self._counts(len(arrays[0]) if arrays else 0)
        out = []
        for a in arrays:
            a = np.ascontiguousarray(a)
            if self.is_root:
                buf = np.empty(sum(counts), dtype=a.dtype)
                self._wait(self.comm.Igatherv(a, [buf, counts], root=0))
                out.append(buf)
            else:
                self._wait(self.comm.Igatherv(a, None, root=0))
                self.sent_bytes += a.nbytes
        return (out, counts) if self.is_root else (None, None)

    def allsum(self, values: list[int]) -> list[int]:
        """The element-wise sum of `values` over every rank, on every rank."""
        from mpi4py import MPI

        mine = np.asarray(values, dtype=np.int64)
        out = np.empty_like(mine)
        self._wait(self.comm.Iallreduce(mine, out, op=MPI.SUM))
        return out.tolist()

    def gather(self, value):
        """Small Python values (per-query lists, k-bounded analog columns), gathered on rank 0
        in rank order: pickled, lengths first, then the bytes (counted as sent)."""
        import pickle

        data = np.frombuffer(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), np.uint8)
        got, counts = self._gather_arrays(data)
        if got is None:
            return None
        ends = np.cumsum(counts).tolist()
        return [pickle.loads(got[0][e - c : e].tobytes()) for e, c in zip(ends, counts)]


def merged_runs(counts: np.ndarray, runs: int, positions: np.ndarray, scores: np.ndarray):
    """(positions, scores) of each query, best first, from `runs` lists of many queries' hits
    laid one after another (list r holds `counts[r * queries + q]` hits of query q, each
    query's best first): merged in one pass in Rust (`molsift_search::merge_runs`)."""
    from .._core import merge_runs

    pos, sc, ends = merge_runs(
        np.ascontiguousarray(counts, dtype="<u8").tobytes(),
        runs,
        np.ascontiguousarray(positions, dtype="<i8").tobytes(),
        np.ascontiguousarray(scores, dtype="<f8").tobytes(),
    )
    pos, sc = np.frombuffer(pos, dtype="<i8"), np.frombuffer(sc, dtype="<f8")
    return [(pos[a:e], sc[a:e]) for a, e in zip([0, *ends[:-1]], ends)]


def _text(item) -> str | None:
    """A query's text: the item itself, its `text`, or the first of a tuple; None if none."""
    text = getattr(item, "text", item)
    if isinstance(text, tuple) and text:
        text = text[0]
    return text if isinstance(text, str) else None


#: a character's weight in `costs`: letters (about the atoms) 1, digits (ring closures) 2
_WEIGHTS = np.zeros(256, dtype=np.int64)
_WEIGHTS[[ord(c) for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"]] = 1
_WEIGHTS[[ord(c) for c in "0123456789"]] = 2


def costs(items: list) -> list[int]:
    """What preparing each query costs, roughly: its text's letters (about its atoms) and
    twice its digits (ring closures: ring perception), at least 1 (also for an item with no
    text). On 100 unlike MOSES queries this follows the time of a parse and fingerprint with a
    correlation of 0.96 (the text's length: 0.52). Counted for all the items at once (a
    fraction of a microsecond an item: the deal must cost far less than the work it deals)."""
    if not items:
        return []
    raw = [(_text(x) or "").encode("ascii", "replace") for x in items]
    lengths = np.array([len(r) for r in raw])
    ends = np.cumsum(lengths)
    summed = np.concatenate([[0], np.cumsum(_WEIGHTS[np.frombuffer(b"".join(raw), np.uint8)])])
    return np.maximum(summed[ends] - summed[ends - lengths], 1).tolist()


def dealt(costs: list[int], ranks: int) -> list[list[int]]:
    """The item indices each of `ranks` ranks takes, in ascending order, so that their summed
    costs are near equal: the costliest item first to the least loaded rank (the lowest rank
    on a tie). The same on every rank, since it depends on the costs alone."""
    import heapq

    hands: list[list[int]] = [[] for _ in range(ranks)]
    loads = [(0, r) for r in range(ranks)]
    for j in sorted(range(len(costs)), key=costs.__getitem__, reverse=True):  # stable
        load, r = heapq.heappop(loads)
        hands[r].append(j)
        heapq.heappush(loads, (load + costs[j], r))
    return [sorted(h) for h in hands]


def _records(answers: list[tuple], k: int) -> np.ndarray:
    """Each answer's k best (positions, scores), best first, as a row of k records padded past
    its hits (`_PAD_SCORE`, `_PAD_POS`): a batch's rows filled at once, a few row by row
    (cheaper for one query)."""
    send = np.empty((len(answers), k), dtype=RECORD)
    send["score"], send["pos"] = _PAD_SCORE, _PAD_POS
    if len(answers) <= _FEW_PACKED:
        for row, (indices, scores) in zip(send, answers):
            n = min(k, len(indices))
            row["score"][:n], row["pos"][:n] = scores[:n], indices[:n]
        return send
    heads = [(i[:k], sc[:k]) for i, sc in answers]
    lens = np.fromiter((len(i) for i, _ in heads), dtype=np.intp, count=len(heads))
    if lens.any():
        filled = np.arange(k) < lens[:, None]
        send["pos"][filled] = np.concatenate([i for i, _ in heads])
        send["score"][filled] = np.concatenate([sc for _, sc in heads])
    return send


def _unpad(recv: np.ndarray) -> list[tuple]:
    """The rows of a reduction's records as (positions, scores) of their real records (a row's
    padding sorts after them)."""
    if len(recv) <= _FEW_UNPACKED:
        out = []
        for row in recv:
            n = int(np.count_nonzero(row["score"] >= 0))
            out.append((row["pos"][:n].copy(), row["score"][:n].copy()))
        return out
    pos = np.ascontiguousarray(recv["pos"])
    scores = np.ascontiguousarray(recv["score"])
    real = (scores >= 0).sum(axis=1).tolist()
    return [(p[:n], s[:n]) for p, s, n in zip(pos, scores, real)]


#: answers of a reduction up to which its records are packed row by row, and unpacked (for
#: one query a row costs 3 µs to pack and 3 to unpack, the batch's way 9 and 5)
_FEW_PACKED, _FEW_UNPACKED = 8, 2


#: cells of the node's shared k-th best window (one per query in flight: the ranks are at most
#: a few queries apart, far fewer)
_BAR_CELLS = 4096


def _node_comm(comm):
    """The ranks of `comm` on this node (collective over `comm`), or None if the MPI cannot
    tell."""
    from mpi4py import MPI

    try:
        return comm.Split_type(MPI.COMM_TYPE_SHARED)
    except MPI.Exception:
        return None


def _node_bars(comm):
    """`_core.SharedBars` over a window of memory that the ranks of `comm` on this node share
    (collective over `comm`), zeroed by the node's first rank; None if the MPI cannot make one."""
    from mpi4py import MPI

    from .._core import SHARED_BAR_BYTES, SharedBars

    node = _node_comm(comm)
    if node is None:
        return None
    try:
        size = _BAR_CELLS * SHARED_BAR_BYTES if node.Get_rank() == 0 else 0
        win = MPI.Win.Allocate_shared(size, 8, comm=node)
        buf, _ = win.Shared_query(0)
        cells = np.frombuffer(buf, dtype=np.uint64)
        if node.Get_rank() == 0:
            cells[:] = 0
        node.Barrier()
    except MPI.Exception:
        return None
    # the window, its node communicator and the array stay alive with the cells
    return SharedBars.over(cells.ctypes.data, cells.nbytes, (win, node, cells))


def _attempt(prepare, item) -> tuple:
    """(prepare(item), None), or (None, the exception) when it raised one."""
    try:
        return prepare(item), None
    except Exception as exc:  # handed to the caller, raised or reported there
        return None, exc


def _portable(outcome: tuple) -> tuple:
    """An outcome of `_attempt` whose exception survives pickling (one that does not travels
    as a RuntimeError with its message)."""
    import pickle

    error = outcome[1]
    if error is None:
        return outcome
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        return None, RuntimeError(str(error))
    return outcome


def prepared(store, items, prepare, chunk: int = 64) -> Iterator[tuple]:
    """(item, result, error) of `prepare(item)` for each of `items`, in order (`error` the
    exception `prepare` raised, then `result` is None, so that every rank meets it at the same
    item). A query's preparation (parsing a substructure query, a similarity query's
    fingerprint) is the same on every rank: under `mpirun` over a set the ranks share it, a
    chunk of items at a time (`shared`); elsewhere the items are prepared here in turn, lazily."""
    if _sharing(store) is None:
        for item in items:
            yield (item, *_attempt(prepare, item))
        return
    items = list(items)
    for at in range(0, len(items), chunk):
        part = items[at : at + chunk]
        done = shared(store, part, lambda mine: [_portable(_attempt(prepare, x)) for x in mine])
        for item, (result, error) in zip(part, done):
            yield item, result, error


def shared(store, items: list, work) -> list:
    """`work(items)`, a list of one picklable result per item. Under `mpirun` over a set
    (every rank running the same verb) each rank does its share (`Ranks.share`) and every
    rank gets every result; elsewhere `work(items)` here."""
    ranks = _sharing(store)
    return work(items) if ranks is None else ranks.share(items, work)


def _sharing(store):
    """The `Ranks` that share a verb's per-query work, or None: no MPI, a plain store, one
    rank, or a server's ranks (rank 0 prepares each query; the searcher ranks receive it)."""
    ranks = getattr(store, "_ranks", None)
    if ranks is None or ranks.fanout is not None or ranks.size == 1:
        return None
    return ranks


def spread(store) -> bool:
    """Under mpirun with more than one rank, hands a store set's shards out to the ranks (each
    then searches its own; answers meet at rank 0). Returns whether this rank writes the
    answers: rank 0, or the only process. A plain store, or a run without MPI, is untouched."""
    comm = _world_of_many()
    if not hasattr(store, "shards") or comm is None:
        return True
    store._ranks = Ranks(comm.Dup(), [len(s) for s in store.shards])
    _ACTIVE.append(store._ranks)
    return store._ranks.is_root


_ACTIVE: list = []


def searching_ranks() -> bool:
    """True in a process that searches a set with other MPI ranks (`spread`): an error here
    may be this rank's alone, so it must end the job rather than leave the others waiting."""
    return bool(_ACTIVE)


def for_ranks(store, args, read):
    """A query verb's start, `read()` giving its queries. Under mpirun over a set (`spread`):
    rank 0 reads the queries and broadcasts them; the other ranks search and write nothing
    (their stdout, stderr and `-o` silenced; a failure still reaches the terminal through
    `abort_job`). Returns the queries (a list under MPI); without MPI, `read()`."""
    import os
    import sys

    root = spread(store)
    ranks = getattr(store, "_ranks", None)
    if ranks is None:
        return read()
    if not root:
        sink = open(os.devnull, "w")  # noqa: SIM115 (lives as long as the process)
        sys.stdout = sys.stderr = sink
        if getattr(args, "output", None):
            args.output = os.devnull
    outcome = _attempt(lambda _: list(read()), None) if root else None
    queries, exc = ranks.bcast(_portable(outcome) if root else None)
    if root:
        exc = outcome[1]  # rank 0 raises its own exception, not a copy
    if exc is not None:
        # rank 0 could not read the queries (an empty, missing or unreadable file, a bad -q):
        # every rank meets the same error here, before any search, so the job ends as one
        # process would (one line, its exit status), with no rank to abort
        _ACTIVE.remove(ranks)
        raise exc
    return queries


def root_status(store, status: int) -> int:
    """A verb's exit status under MPI: rank 0's on every rank (the others never saw the
    answers it is computed from); `status` without MPI."""
    ranks = getattr(store, "_ranks", None)
    return status if ranks is None else ranks.bcast(status)


@contextlib.contextmanager
def collective(store, op: str, *args):
    """Around one search of a set that every rank runs together. Under `mpirun molsift serve`,
    rank 0 (answering HTTP requests on many threads) takes a free lane of the fan-out (the
    light one, or a heavy one for substructure and analog searches), announces the search on
    it (`Fanout.loop` runs the same call in that lane's thread there) and holds the lane until
    the search ends: searches in different lanes run at once, each on its own communicators,
    so every rank meets each lane's collectives in the same order."""
    ranks = getattr(store, "_ranks", None)
    fan = None if ranks is None else ranks.fanout
    if fan is None or not ranks.is_root:
        yield
        return
    with fan.lane(heavy=op in ("substructure", "analogs")):
        fan.announce((ranks.name, op, args))
        yield


class Fanout:
    """`mpirun -n R molsift serve SET...`: rank 0 is the HTTP front end, the other ranks search
    their shards of every served set. Each search rank 0 runs on a set is announced to them on
    one of `lanes` channels (a broadcast of the set's name, the operation and its arguments;
    `collective`) and then run by all ranks together in that lane, the answer merged at rank 0
    as for `mpirun molsift search`. A searcher rank runs a thread per lane, so as many searches
    of the sets run at once as there are lanes: one for light searches (one at a time), the
    others for heavy ones (the server's heavy slots), so that a heavy search never holds up a
    light one; an MPI without thread support gets one lane. Plain stores are searched by rank 0
    alone."""

    def __init__(self, catalog, time_limit_s: float | None = None, deadline_s: float = 60.0,
                 lanes: int = 1):  # fmt: skip
        from mpi4py import MPI

        from ..parallel.mpi import world

        comm = world().Dup()
        self.is_root = comm.Get_rank() == 0
        # rank 0's count for every rank; one lane where the MPI cannot take calls from threads
        lanes = comm.bcast(max(1, lanes), root=0)
        if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
            lanes = 1
        self._chan = [comm, *(comm.Dup() for _ in range(lanes - 1))]
        self.lanes = lanes
        self._free = list(range(lanes))
        self._lanes_free = threading.Condition()
        self.time_limit_s = time_limit_s
        self.deadline_s = deadline_s
        self.lost: str | None = None
        self.sets = {}
        for db in catalog:
            if hasattr(db.store, "shards"):
                db.store._ranks = Ranks(
                    world().Dup(), [len(s) for s in db.store.shards], self, db.name, lanes
                )
                self.sets[db.name] = db.store
        _ACTIVE.append(self)

    @property
    def comm(self):
        """The announcement channel of this thread's lane."""
        return self._chan[_lane()]

    @contextlib.contextmanager
    def lane(self, heavy: bool = False):
        """Rank 0: a free lane for one search (waiting for one if all are busy), this thread's
        until the search ends (a search inside another keeps the outer one's). Light searches
        (similarity, lookups) take the first lane, one at a time: each takes a few ms, and its
        searcher threads hear it at once (`_receive`); heavy ones (substructure, analogs) take
        the others, so that they never hold up a light one."""
        if getattr(_LANE, "held", False):
            yield _lane()
            return
        pool = [0] if not heavy or self.lanes == 1 else list(range(1, self.lanes))
        with self._lanes_free:
            self._lanes_free.wait_for(lambda: any(i in self._free for i in pool))
            index = next(i for i in pool if i in self._free)
            self._free.remove(index)
        _LANE.index, _LANE.held = index, True
        try:
            yield index
        finally:
            _LANE.index, _LANE.held = 0, False
            with self._lanes_free:
                self._free.append(index)
                self._lanes_free.notify_all()

    def lose(self, reason: str):
        """Rank 0: the searcher ranks are gone; this search and every later one of a set get
        503 (the front end, and the plain stores it serves, stay up)."""
        from ..serve.limits import ServiceError

        self.lost = self.lost or reason
        raise ServiceError(503, f"{self.lost}; the store sets of this server cannot answer")

    def announce(self, command) -> None:
        """Rank 0: the next search of this thread's lane, to every searcher rank (its length,
        then its pickle)."""
        import pickle

        if self.lost:
            self.lose(self.lost)
        data = np.frombuffer(pickle.dumps(command, protocol=pickle.HIGHEST_PROTOCOL), np.uint8)
        self._bcast_wait(np.array([len(data)], dtype=np.int64))
        self._bcast_wait(np.ascontiguousarray(data))

    def _bcast_wait(self, buf) -> None:
        late = f"a searcher rank did not answer within {self.deadline_s:g} s"
        _poll(self.comm.Ibcast(buf, root=0), 1e-4, 1e-4, self.deadline_s, lambda: self.lose(late))

    def _receive(self):
        """A searcher lane: the next announcement. The first lane (the light searches', one
        at a time) tests for it without sleeping for `LIGHT_SPIN_S` after the last search, so
        that searches arriving one after another are heard at once, and then between sleeps
        (20 µs, doubling to at most 1 ms): an idle server keeps no core busy (it spun in `Wait`
        before, a core of every searcher rank at all times). The heavy lanes poll with short
        sleeps (20 µs, doubling to at most 1 ms: a heavy search takes tens of ms)."""
        import pickle

        size = np.empty(1, dtype=np.int64)
        req = self.comm.Ibcast(size, root=0)
        if _lane() == 0:
            _spin_then_poll(req, LIGHT_SPIN_S, 1e-3)
        else:
            _poll(req, 2e-5, 1e-3)
        data = np.empty(int(size[0]), dtype=np.uint8)
        self.comm.Ibcast(data, root=0).Wait()
        return pickle.loads(data.tobytes())

    def loop(self) -> None:
        """A searcher rank's life: a thread per lane runs what rank 0 announces on it until it
        says stop."""
        threads = [
            threading.Thread(target=self._lane_thread, args=(i,), name=f"molsift-lane-{i}")
            for i in range(1, self.lanes)
        ]
        for t in threads:
            t.start()
        self._lane_loop(0)
        for t in threads:
            t.join()

    def _lane_thread(self, index: int) -> None:
        """A lane other than the first, in its own thread: a failure there ends the job as one
        in the rank's main thread does (rank 0 would otherwise wait on that lane)."""
        try:
            self._lane_loop(index)
        except BaseException:
            from ..parallel.mpi import abort_job

            abort_job()
            raise

    def _lane_loop(self, index: int) -> None:
        from .store import _SetCore, iter_set_hit_arrays, set_analogs

        _LANE.index = index
        while True:
            name, op, args = self._receive()
            if op == "stop":
                return
            store = self.sets[name]
            try:
                if op == "search":
                    store._searcher().search(*args)
                elif op == "search_batch":
                    store._searcher().search_batch(*args)
                elif op == "lookup":
                    _SetCore(store).lookup(*args)
                elif op == "lookup_ids":
                    _SetCore(store).lookup_ids(*args)
                elif op == "substructure":
                    q, kw = args
                    for _ in iter_set_hit_arrays(store, q, **kw):
                        pass
                elif op == "analogs":
                    set_analogs(store, *args)
            except (ValueError, _core_error()):
                # the query's own error: rank 0 met it too, before any collective
                continue

    def stop(self) -> None:
        """Rank 0, at shutdown: every lane's searcher threads leave their loop (unless the
        searchers are gone), each once its search under way has ended (a stopped lane is not
        handed out again)."""
        if not self.is_root:
            return
        for _ in range(self.lanes):
            with self._lanes_free:
                self._lanes_free.wait_for(lambda: self._free)
                _LANE.index = self._free.pop(0)
            with contextlib.suppress(Exception):  # a searcher gone: none to tell
                if not self.lost:
                    self.announce(("", "stop", ()))
        _LANE.index = 0


#: seconds a searcher rank's light lane tests for the next search without sleeping, after the
#: last one ended (`Fanout._receive`)
LIGHT_SPIN_S = 0.01


def _spin_then_poll(req, spin_s: float, most: float) -> None:
    """Waits for a non-blocking operation: tests it for `spin_s` seconds without sleeping (the
    interpreter lock yielded between tests, for the rank's other lanes), then as `_poll` does,
    between sleeps from 20 µs doubling to `most`."""
    import time

    end = time.monotonic() + spin_s
    while not req.Test():
        if time.monotonic() > end:
            _poll(req, 2e-5, most)
            return
        time.sleep(0)


def _poll(req, first: float, most: float, deadline_s: float | None = None, late=None) -> None:
    """Waits for a non-blocking operation by testing it between sleeps (`first` seconds,
    doubling to `most`) rather than in `Wait`, which Open MPI spins in; past `deadline_s`,
    calls `late()` (which raises)."""
    import time

    start, pause = time.monotonic(), first
    while not req.Test():
        if deadline_s is not None and time.monotonic() - start > deadline_s:
            late()
        time.sleep(pause)
        pause = min(pause * 2, most)


def _core_error():
    from .. import _core

    return _core.MolsiftError


def start_fanout(catalog, time_limit_s: float | None = None, deadline_s: float = 60.0,
                 lanes: int = 1):  # fmt: skip
    """Under mpirun with more than one rank, the `Fanout` of a server's catalog, searching in
    `lanes` lanes at once (rank 0's count); else None. Every rank stops its part of a
    substructure search at `time_limit_s` (the server's time limit; similarity and lookups are
    one bounded pass, analog walks have their own timeout) and still meets the merge; rank 0
    waits `deadline_s` at most in any step of a search, past which the searcher ranks are taken
    for dead (503)."""
    if _world_of_many() is None:
        return None
    return Fanout(catalog, time_limit_s, deadline_s, lanes)


def _world_of_many():
    """MPI's world communicator under mpirun with more than one rank; None otherwise (mpi4py
    not imported then)."""
    from ..parallel import launched_under_mpi

    if not launched_under_mpi():
        return None
    from ..parallel.mpi import world

    return world() if world().Get_size() > 1 else None
