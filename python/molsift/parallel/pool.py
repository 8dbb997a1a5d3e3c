"""`PoolExecutor`: worker processes on this machine, with a bounded number of tasks in flight
(so a streaming producer never races ahead of the workers) and results handed back in order."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable


class PoolExecutor:
    """`workers` processes started with the spawn method (safe with threads in the parent); they
    die with this process (`lifetime.die_with_parent`)."""

    is_root = True
    rank = 0
    name = "processes"

    def __init__(self, workers: int, in_flight_per_worker: int = 2):
        self.size = workers
        self._limit = workers * in_flight_per_worker
        from ..allocator import spawn_context  # workers run on tcmalloc when it is installed
        from .lifetime import die_with_parent

        self._pool = ProcessPoolExecutor(
            workers,
            mp_context=spawn_context(),
            initializer=die_with_parent,
            initargs=(os.getpid(),),
        )

    def map_ordered(
        self,
        fn: Callable[[Any], Any],
        tasks: Iterable[Any],
        on_result: Callable[[Any], None] | None = None,
    ) -> list[Any]:
        results: list[Any] = []
        pending: deque = deque()

        def take_oldest() -> None:
            result = pending.popleft().result()
            if on_result:
                on_result(result)
            results.append(result)

        for task in tasks:
            if len(pending) >= self._limit:
                take_oldest()
            pending.append(self._pool.submit(fn, task))
        while pending:
            take_oldest()
        return results

    def broadcast(self, value: Any) -> Any:
        return value

    def barrier(self) -> None:
        pass

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
