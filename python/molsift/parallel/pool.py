"""`PoolExecutor`: `map_ordered` on worker processes of this machine, built on the one process
engine (`processes.ProcessWorkers`): a bounded number of tasks in flight (a streaming producer
never races ahead of the workers), results handed back in task order."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any, Callable

from .processes import ProcessWorkers, WorkerContext, WorkerError


class _CallJob:
    """The job of `map_ordered` in a worker: calls `fn` on each (index, task) it is given and
    sends (index, result) back."""

    def __init__(self, fn: Callable[[Any], Any], ctx: WorkerContext):
        self.fn = fn
        self.ctx = ctx

    def run(self, item: tuple[int, Any]) -> None:
        index, task = item
        self.ctx.send((index, self.fn(task)))

    def finish(self) -> None:
        return None


class PoolExecutor:
    """`workers` processes of the process engine (spawned with the allocator, dying with this
    process), started for each `map_ordered`."""

    is_root = True
    rank = 0
    name = "processes"

    def __init__(self, workers: int):
        self.size = workers

    def map_ordered(
        self,
        fn: Callable[[Any], Any],
        tasks: Iterable[Any],
        on_result: Callable[[Any], None] | None = None,
    ) -> list[Any]:
        """`fn(task)` for every task (`fn` must be picklable: a module-level function), results
        in task order; `on_result` sees each result as it arrives. The first exception raised
        by `fn` in a worker is raised here (the other workers are stopped)."""
        results: dict[int, Any] = {}

        def take(_box: int, message: tuple[int, Any]) -> None:
            index, result = message
            results[index] = result
            if on_result:
                on_result(result)

        engine = ProcessWorkers(self.size, functools.partial(_CallJob, fn))
        try:
            engine.run(enumerate(tasks), take)
        except WorkerError as exc:
            if exc.cause is not None:
                raise exc.cause from exc
            raise
        return [results[i] for i in range(len(results))]

    def broadcast(self, value: Any) -> Any:
        return value

    def barrier(self) -> None:
        pass

    def close(self) -> None:
        pass
