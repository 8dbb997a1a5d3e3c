"""`MatchPool`: worker processes of the process engine (`parallel/processes.py`) that open the
store once and stay alive between queries, matching batches of screen survivors. The engine
runs in a background thread whose task feed is a queue: a query puts its batches in, the
workers' answers come back tagged with the query and batch number, and `ordered` hands them
out in store order. A query stopped early (max hits reached) is cancelled: its batches still queued
are dropped."""

from __future__ import annotations

import atexit
import functools
import itertools
import queue
import threading
import weakref
from collections.abc import Iterator

import numpy as np

from .. import _core
from ..parallel.processes import ProcessWorkers, WorkerError
from ..store import open_core
from .matcher import cached_query, match
from .query import Query

#: Seconds between checks that the pool is still alive while waiting for a batch.
WAIT = 0.2

_POOLS: weakref.WeakSet = weakref.WeakSet()
_AT_EXIT: list = []


def _close_all() -> None:
    for pool in list(_POOLS):
        pool.close()


def _close_at_exit(pool: MatchPool) -> None:
    """Pools end before multiprocessing joins its children at exit (which would wait forever
    for workers still waiting for a query): registered after multiprocessing's own handler, so
    run before it."""
    _POOLS.add(pool)
    if not _AT_EXIT:
        atexit.register(_close_all)
        _AT_EXIT.append(True)


class _MatchJob:
    """The job of one worker: the store opened once (the generation the caller searches,
    checked by its manifest), then batches matched as they come."""

    def __init__(self, store: str, manifest: str, ctx):
        self.ctx = ctx
        self.core = open_core(store)
        if self.core.manifest_json() != manifest:
            raise _core.StoreError(f"{store}: the store was replaced while it was searched")

    def run(self, task: tuple) -> None:
        qid, seq, text, kind, chirality, positions = task
        query = cached_query(text, kind, chirality)
        hits = match(self.core, query, np.frombuffer(positions, dtype="<i8"))
        self.ctx.send((qid, seq, hits.tobytes()))

    def finish(self) -> None:
        return None


class MatchPool:
    """`workers` match workers over the store at `path` (whose manifest is `manifest`)."""

    def __init__(self, path: str, manifest: str, workers: int):
        self.workers = workers
        self._feed: queue.Queue = queue.Queue()
        self._boxes: dict[int, queue.Queue] = {}
        self._cancelled: set[int] = set()
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self.error: BaseException | None = None
        self._engine = ProcessWorkers(
            workers,
            functools.partial(_MatchJob, path, manifest),
            name="molsift-match-{w}",
            handler_name="the substructure search",
        )
        _close_at_exit(self)
        self._thread = threading.Thread(target=self._run, name="molsift-match-pool", daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self.error is None and self._thread.is_alive()

    def _tasks(self) -> Iterator[tuple]:
        while True:
            task = self._feed.get()
            if task is None:
                return
            if task[0] not in self._cancelled:
                yield task

    def _take(self, _box: int, message: tuple) -> None:
        qid, seq, hits = message
        with self._lock:
            box = self._boxes.get(qid)
        if box is not None:
            box.put((seq, np.frombuffer(hits, dtype="<i8")))

    def _run(self) -> None:
        try:
            self._engine.run(self._tasks(), self._take)
        except BaseException as exc:  # handed to every query waiting
            self.error = exc
        if self.error is None:
            self.error = WorkerError("the substructure workers stopped")

    def open_query(self) -> int:
        qid = next(self._ids)
        with self._lock:
            self._boxes[qid] = queue.Queue()
        return qid

    def submit(self, qid: int, seq: int, query: Query, positions: np.ndarray) -> None:
        positions = np.ascontiguousarray(positions, dtype="<i8").tobytes()
        self._feed.put((qid, seq, query.text, query.kind, query.chirality, positions))

    def next_result(self, qid: int) -> tuple[int, np.ndarray]:
        """The next (batch number, hits) of query `qid` to arrive; raises if the pool failed."""
        box = self._boxes[qid]
        while True:
            try:
                return box.get(timeout=WAIT)
            except queue.Empty:
                if not self.alive:
                    err = self.error or WorkerError("the substructure workers stopped")
                    if isinstance(err, WorkerError) and err.cause is not None:
                        raise err.cause from err
                    raise err from None

    def close_query(self, qid: int) -> None:
        with self._lock:
            self._boxes.pop(qid, None)
            self._cancelled.add(qid)

    def close(self) -> None:
        if self._thread.is_alive():
            self._feed.put(None)
            self._thread.join(timeout=10)


def ordered(
    pool: MatchPool, query: Query, batches: Iterator[np.ndarray], depth: int
) -> Iterator[np.ndarray]:
    """Hits of each batch in batch order, matched on `pool` with at most `depth` batches in
    flight; closing the generator cancels what is left."""
    qid = pool.open_query()
    pending: dict[int, np.ndarray] = {}
    sent = done = 0
    exhausted = False
    try:
        while True:
            while not exhausted and sent - done < depth:
                batch = next(batches, None)
                if batch is None:
                    exhausted = True
                    break
                pool.submit(qid, sent, query, batch)
                sent += 1
            if done == sent and exhausted:
                return
            while done not in pending:
                seq, hits = pool.next_result(qid)
                pending[seq] = hits
            yield pending.pop(done)
            done += 1
    finally:
        pool.close_query(qid)


__all__ = ["MatchPool", "ordered"]
