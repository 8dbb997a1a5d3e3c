"""Searching a store set on MPI ranks (`mpirun -n R molsift search|substructure|analogs|lookup
SET ...`). mpi4py is imported only here, only under mpirun.

Every rank runs the same command: rank 0 reads the queries and broadcasts them, each rank
searches the shards it was given (`assign`: by size, the largest first to the least loaded
rank) with its threads, and the answers meet at rank 0, equal to the one store's:
- top-k (`-k`, with or without `-t`): a reduction along Open MPI's tree with a user-defined
  operation over fixed-size records (score, position): every rank sends k records of 16 bytes
  once, to its parent, which merges them with its own (`topk`); rank 0 never receives every hit;
- threshold hits, substructure hits, analogs, lookups: counts first, then the arrays gathered
  (`gather_arrays`), merged on rank 0 by the rules of `store.py`.
Rank 0 then reads the hits' ids and SMILES from the set's files. A failure on one rank aborts
the job (`parallel.mpi.abort_job`, through the command line's handler); a rank that dies ends
it through mpirun, with the rank named."""

from __future__ import annotations

import contextlib

import numpy as np

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


class Ranks:
    """The ranks searching one set: the communicator, this rank's shards, the reduction's
    operations and bytes sent (`sent_bytes`: what this rank sent in reductions and gathers).
    `fanout`: under `mpirun molsift serve`, the channel rank 0 announces each search on."""

    def __init__(self, comm, sizes: list[int], fanout=None, name: str = ""):
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.mine = assign(sizes, self.size)[self.rank]
        self.is_root = self.rank == 0
        self._ops: dict[int, tuple] = {}
        self.sent_bytes = 0
        self.fanout = fanout
        self.name = name

    def bcast(self, value):
        return self.comm.bcast(value, root=0)

    def _topk_op(self, k: int):
        got = self._ops.get(k)
        if got is None:
            from mpi4py import MPI

            def merge(inbuf, inoutbuf, datatype) -> None:
                a = np.frombuffer(inbuf, dtype=RECORD)
                b = np.frombuffer(inoutbuf, dtype=RECORD)
                both = np.concatenate([a, b])
                b[:] = both[np.lexsort((both["pos"], -both["score"]))[:k]]

            dtype = MPI.BYTE.Create_contiguous(RECORD.itemsize * k).Commit()
            got = self._ops[k] = (MPI.Op.Create(merge, commute=True), dtype)
        return got

    def topk(self, indices: np.ndarray, scores: np.ndarray, k: int):
        """The k best (score descending, position ascending) of every rank's hits, on rank 0
        (empty arrays elsewhere): one reduction of k records per rank."""
        op, dtype = self._topk_op(k)
        send = np.empty(k, dtype=RECORD)
        send["score"], send["pos"] = _PAD_SCORE, _PAD_POS
        n = min(k, len(indices))
        send["score"][:n], send["pos"][:n] = scores[:n], indices[:n]
        recv = np.empty_like(send) if self.is_root else None
        self.comm.Reduce(
            [send, 1, dtype], [recv, 1, dtype] if self.is_root else None, op=op, root=0
        )
        if not self.is_root:
            self.sent_bytes += send.nbytes
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        real = recv["score"] >= 0
        return recv["pos"][real].copy(), recv["score"][real].copy()

    def gather_arrays(self, *arrays: np.ndarray) -> list[np.ndarray] | None:
        """Each array concatenated over the ranks in rank order, on rank 0 (None elsewhere):
        the lengths gathered first, then the arrays by Gatherv."""
        n = len(arrays[0]) if arrays else 0
        counts = self.comm.gather(n, root=0)
        out = []
        for a in arrays:
            a = np.ascontiguousarray(a)
            if self.is_root:
                buf = np.empty(sum(counts), dtype=a.dtype)
                self.comm.Gatherv(a, [buf, counts], root=0)
                out.append(buf)
            else:
                self.comm.Gatherv(a, None, root=0)
                self.sent_bytes += a.nbytes
        return out if self.is_root else None

    def gather(self, value):
        """Small Python values (per-query lists, k-bounded analog columns), gathered on rank 0
        in rank order (pickled: the pickle's bytes counted as sent)."""
        if not self.is_root:
            import pickle

            self.sent_bytes += len(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        return self.comm.gather(value, root=0)


def spread(store) -> bool:
    """Under mpirun with more than one rank, hands a store set's shards out to the ranks (each
    then searches its own; answers meet at rank 0). Returns whether this rank writes the
    answers: rank 0, or the only process. A plain store, or a run without MPI, is untouched."""
    from ..parallel import launched_under_mpi

    if not hasattr(store, "shards") or not launched_under_mpi():
        return True
    from ..parallel.mpi import world

    comm = world()
    if comm.Get_size() <= 1:
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
    return ranks.bcast(list(read()) if root else None)


def root_status(store, status: int) -> int:
    """A verb's exit status under MPI: rank 0's on every rank (the others never saw the
    answers it is computed from); `status` without MPI."""
    ranks = getattr(store, "_ranks", None)
    return status if ranks is None else ranks.bcast(status)


@contextlib.contextmanager
def collective(store, op: str, *args):
    """Around one search of a set that every rank runs together. Under `mpirun molsift serve`,
    rank 0 (answering HTTP requests on many threads) first announces it to the searcher ranks
    (`Fanout.loop` runs the same call there) and holds the fan-out's lock until it ends: one
    search of the set at a time, so every rank meets the same collectives in the same order."""
    ranks = getattr(store, "_ranks", None)
    fan = None if ranks is None else ranks.fanout
    if fan is None or not ranks.is_root:
        yield
        return
    with fan.lock:
        fan.comm.bcast((ranks.name, op, args), root=0)
        yield


class Fanout:
    """`mpirun -n R molsift serve SET...`: rank 0 is the HTTP front end, the other ranks search
    their shards of every served set. Each search rank 0 runs on a set is announced to them on
    this channel (a broadcast of the set's name, the operation and its arguments; `collective`)
    and then run by all ranks together, the answer merged at rank 0 as for `mpirun molsift
    search`. Plain stores are searched by rank 0 alone."""

    def __init__(self, catalog):
        import threading

        from ..parallel.mpi import world

        self.comm = world().Dup()
        self.is_root = self.comm.Get_rank() == 0
        self.lock = threading.Lock()
        self.sets = {}
        for db in catalog:
            if hasattr(db.store, "shards"):
                db.store._ranks = Ranks(
                    world().Dup(), [len(s) for s in db.store.shards], self, db.name
                )
                self.sets[db.name] = db.store
        _ACTIVE.append(self)

    def loop(self) -> None:
        """A searcher rank's life: run what rank 0 announces until it says stop."""
        from .store import _SetCore, iter_set_hit_arrays, set_analogs

        while True:
            name, op, args = self.comm.bcast(None, root=0)
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
        """Rank 0, at shutdown: the searcher ranks leave their loop."""
        if self.is_root:
            with self.lock:
                self.comm.bcast(("", "stop", ()), root=0)


def _core_error():
    from .. import _core

    return _core.MolsiftError


def start_fanout(catalog):
    """Under mpirun with more than one rank, the `Fanout` of a server's catalog; else None."""
    from ..parallel import launched_under_mpi

    if not launched_under_mpi():
        return None
    from ..parallel.mpi import world

    if world().Get_size() <= 1:
        return None
    return Fanout(catalog)
