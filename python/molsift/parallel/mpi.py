"""MPI ranks (only when launched under `mpirun`; mpi4py is imported lazily, when first used).

- `MPIExecutor`: one worker per rank. Every rank walks the same task list and runs the tasks
  whose index modulo the world size is its rank; results are gathered on rank 0 in task order.
  Its communicator (`comm`, a duplicate of the world's) also serves jobs with their own message
  patterns (screen's writer ranks).
- `abort_job()`: the one way a failure on one rank ends the whole job (MPI_Abort), instead of
  leaving the other ranks waiting forever.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterable
from typing import Any, Callable


class MPIUnavailable(RuntimeError):
    """Launched under mpirun, but mpi4py cannot be imported in this Python."""


def world():
    """`MPI.COMM_WORLD` (imports mpi4py; `MPIUnavailable` when it cannot be imported)."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise MPIUnavailable(
            f"this process runs under mpirun, but mpi4py cannot be imported ({exc}): install "
            "it into this Python (`pip install 'molsift[mpi]'` or `pip install mpi4py`; in a "
            "checkout `MOLSIFT_WITH_MPI=1 bash scripts/setup.sh`), or run molsift without mpirun"
        ) from exc
    return MPI.COMM_WORLD


def abort_job(code: int = 1, comm=None, show_traceback: bool = True) -> None:
    """Prints the exception being handled (if any, unless `show_traceback` is False: an error
    already said in one line), says which rank failed, and aborts every rank of the job. Does
    nothing on a job of one rank: the exception then ends it normally."""
    if comm is None:
        try:
            comm = world()
        except MPIUnavailable:  # no MPI to abort with: every rank fails the same way alone
            return
    size = comm.Get_size()
    if size <= 1:
        return
    err = sys.__stderr__ or sys.stderr  # a searching rank's sys.stderr may be silenced
    if show_traceback and sys.exc_info()[0] is not None:
        traceback.print_exc(file=err)
    err.write(f"molsift: rank {comm.Get_rank()} failed; aborting all {size} ranks\n")
    err.flush()
    comm.Abort(code)


class MPIExecutor:
    name = "mpi"

    def __init__(self):
        from mpi4py import MPI

        self.comm = world().Dup()
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.is_root = self.rank == 0
        # the most ranks sharing one machine's memory (what a memory budget is shared by)
        node = self.comm.Split_type(MPI.COMM_TYPE_SHARED)
        self.ranks_per_node = self.comm.allreduce(node.Get_size(), op=MPI.MAX)
        node.Free()

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
            if self.size == 1:
                raise
            abort_job(comm=self.comm)
        gathered = self.comm.gather(mine, root=0)
        if not self.is_root:
            return None
        return [r for _, r in sorted((p for part in gathered for p in part), key=lambda p: p[0])]

    def broadcast(self, value: Any) -> Any:
        return self.comm.bcast(value, root=0)

    def barrier(self) -> None:
        self.comm.Barrier()

    def close(self) -> None:
        self.comm.Free()
