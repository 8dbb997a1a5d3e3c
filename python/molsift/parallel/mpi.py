"""`MPIExecutor`: one worker per MPI rank. Every rank walks the same task list and runs the tasks
whose index modulo the world size is its rank; results are gathered on rank 0 in task order.
An exception on any rank aborts the whole job instead of leaving the others hung."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterable
from typing import Any, Callable


class MPIExecutor:
    name = "mpi"

    def __init__(self):
        from mpi4py import MPI  # imported only when launched under MPI

        self._MPI = MPI
        self.comm = MPI.COMM_WORLD.Dup()
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.is_root = self.rank == 0

    def map_ordered(
        self,
        fn: Callable[[Any], Any],
        tasks: Iterable[Any],
        on_result: Callable[[Any], None] | None = None,
    ) -> list[Any] | None:
        mine = []
        try:
            for index, task in enumerate(tasks):
                if index % self.size == self.rank:
                    result = fn(task)
                    if on_result:
                        on_result(result)
                    mine.append((index, result))
        except BaseException:
            self.abort()
        gathered = self.comm.gather(mine, root=0)
        if not self.is_root:
            return None
        return [r for _, r in sorted((p for part in gathered for p in part), key=lambda p: p[0])]

    def broadcast(self, value: Any) -> Any:
        return self.comm.bcast(value, root=0)

    def barrier(self) -> None:
        self.comm.Barrier()

    def abort(self, code: int = 1) -> None:
        traceback.print_exc()
        sys.stderr.write(f"molsift: rank {self.rank} failed; aborting all {self.size} ranks\n")
        sys.stderr.flush()
        self.comm.Abort(code)

    def close(self) -> None:
        self.comm.Free()
