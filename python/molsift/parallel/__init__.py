"""molsift's one worker engine: where every job's parallel work runs.

- `processes.ProcessWorkers`: worker processes on this machine (spawned with the allocator,
  dying with their parent, aborting the run on the first error, with progress); screen runs its
  workers on it directly, with writer groups as outboxes.
- Executors that run a list of tasks and hand back their results in task order (ingest): in
  this process (`SerialExecutor`, the reference), on the process engine (`PoolExecutor`), or
  across MPI ranks (`MPIExecutor`, only under `mpirun`; mpi4py is imported lazily).
  `choose_executor` picks one.
- `mpi.abort_job`: the one way a failure on one MPI rank ends the job.
- `lifetime.die_with_parent`: every process molsift starts dies with its parent.
"""

from __future__ import annotations

import os

from .serial import SerialExecutor

MPI_ENV_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")


#: the launchers' variables that give a process its rank (Open MPI, MPICH/Slurm PMI, PMIx)
RANK_ENV_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")


def launched_under_mpi() -> bool:
    """True when this process was started by mpirun/mpiexec/srun with an MPI launcher."""
    return any(v in os.environ for v in MPI_ENV_VARS)


def speaks_for_the_run() -> bool:
    """False on an MPI rank other than 0, whose notes would repeat rank 0's; True without
    mpirun. Read from the launcher's environment (RANK_ENV_VARS), so that a note costs no
    import of mpi4py (`molsift count` imports nothing heavy)."""
    for name in RANK_ENV_VARS:
        value = os.environ.get(name, "").strip()
        if value.isdigit():
            return int(value) == 0
    return True


def default_workers() -> int:
    """Worker processes to use by default: MOLSIFT_WORKERS, else the number of usable cores."""
    env = os.environ.get("MOLSIFT_WORKERS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def check_workers(n: int | None, name: str = "workers") -> int | None:
    """`n` threads or worker processes as a caller gave them: None (the default, all cores) as
    it is, else a whole number at least 1, or ValueError naming `name` (the Rust core would
    raise OverflowError for a negative one, and take 0 silently); TypeError for one that is
    not a whole number (`"2"`, `2.5`, `True`)."""
    from ..arguments import is_whole

    if n is not None and not is_whole(n):
        raise TypeError(f"{name} must be a whole number or None, not {type(n).__name__}")
    if n is not None and n < 1:
        raise ValueError(f"{name} must be at least 1, got {n}")
    return n


def choose_executor(workers: int | None = None, use_mpi: bool | None = None):
    """MPI ranks when launched under MPI (or `use_mpi=True`), else `workers` local processes."""
    check_workers(workers)
    if use_mpi is None:
        use_mpi = launched_under_mpi()
    if use_mpi:
        from .mpi import MPIExecutor

        return MPIExecutor()
    workers = default_workers() if workers is None else workers
    if workers <= 1:
        return SerialExecutor()
    from .pool import PoolExecutor

    return PoolExecutor(workers)


__all__ = [
    "SerialExecutor",
    "check_workers",
    "choose_executor",
    "default_workers",
    "launched_under_mpi",
]
