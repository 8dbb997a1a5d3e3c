"""`SerialExecutor`: runs every task in this process, in order. The reference the parallel
executors must agree with."""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs milliseconds at start-up: imported for the checkers only
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any


class SerialExecutor:
    """One worker: this process."""

    is_root = True
    size = 1
    rank = 0
    name = "serial"

    def map_ordered(
        self,
        fn: Callable[[Any], Any],
        tasks: Iterable[Any],
        on_result: Callable[[Any], None] | None = None,
    ) -> list[Any]:
        results = []
        for task in tasks:
            result = fn(task)
            if on_result:
                on_result(result)
            results.append(result)
        return results

    def broadcast(self, value: Any) -> Any:
        return value

    def barrier(self) -> None:
        pass

    def close(self) -> None:
        pass
