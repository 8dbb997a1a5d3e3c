"""`molsift screen` under `mpirun`: one worker per rank, or with `-j N` N worker processes per
rank (one rank per node, its cores busy: the process engine, `parallel.ProcessWorkers`). Tasks
are dealt round-robin (task i to rank i mod N; by default there is one slab per worker); a
rank's own workers take its tasks from a local queue, and the rank forwards their buffers as if
they were its own. Ranks are split into P writer groups of consecutive ranks; the first rank of
each group is its writer. A member sends each full buffer to its writer without waiting (at
most two sends in flight); the writer receives them between its own batches, reserves their
place with a fetch-and-add in an MPI window on rank 0 and writes them with `pwrite`. A member
that runs out of work sends `done`; a writer ends when all its members have, so ranks may
produce any amount of output.

Waiting is done by polling with short sleeps (Open MPI's blocking calls spin, which starves
the other ranks when they share cores)."""

from __future__ import annotations

import functools
import os
import time
from typing import Any

from ..iostats import process_record
from ..parallel.processes import ProcessWorkers, WorkerError
from .layout import RunFiles
from .worker import Screener, ScreenJob, Timeline
from .writer import GroupWriter, MPIOffsets

TAG = 17
MAX_IN_FLIGHT = 2


def _wait(req, poll=None) -> Any:
    while True:
        done, value = req.test()
        if done:
            return value
        if poll is not None:
            poll()
        time.sleep(0.002)


def group_of(rank: int, size: int, writers: int) -> int:
    return rank * writers // size


def _run_local_workers(
    rank: int, n: int, plan: dict, files: RunFiles, gen: int, scorer, my_tasks, flush, poll
) -> tuple:
    """Runs this rank's tasks on `n` worker processes of the process engine; their buffers go
    to `flush` (in this thread), `poll` runs while waiting. Returns the workers' stats and
    their I/O records."""
    from .local import WorkerFailed

    engine = ProcessWorkers(
        n,
        functools.partial(ScreenJob, plan, scorer, files, gen, rank),
        name=f"molsift-screen-r{rank}w{{w}}",
        messages_per_worker=4,
    )
    try:
        stats = engine.run(my_tasks, lambda _box, payload: flush(payload), threads=False, poll=poll)
    except WorkerError as exc:
        raise WorkerFailed.of(f"rank {rank}: {exc.text}", exc.resumable) from None
    return stats, [s.pop("iostats") for s in stats if "iostats" in s]


def run_mpi(
    comm,
    plan: dict,
    files: RunFiles,
    state: dict,
    scorer,
    my_tasks,
    fsync: bool,
    local_workers: int = 1,
) -> dict[str, Any]:
    """Runs this rank's tasks (in this process, or on `local_workers` worker processes);
    returns all ranks' stats on rank 0 (None elsewhere)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    gen = state["gen"]
    n_writers = max(1, min(plan["writers"], size))
    group = group_of(rank, size, n_writers)
    members = [r for r in range(size) if group_of(r, size, n_writers) == group]
    writer_rank = members[0]
    offsets = MPIOffsets(
        comm, [state["ends"]["rows"], state["ends"]["rejects"], state["ends"]["poses"]]
    )
    timeline = Timeline(
        os.path.join(files.timeline_dir, f"g{gen}-rank{rank}.jsonl"), {"worker": rank, "rank": rank}
    )
    writer = None
    stats_of: dict[int, list[dict]] = {}
    pending: list[Any] = []
    worker_io: list[dict] = []
    try:
        if rank == writer_rank:
            writer = GroupWriter(files, group, gen, offsets, fsync, log_event=timeline.event)

            def drain() -> None:  # buffers of the other members, as they arrive
                from mpi4py import MPI

                while comm.iprobe(source=MPI.ANY_SOURCE, tag=TAG):
                    kind, src, body = comm.recv(source=MPI.ANY_SOURCE, tag=TAG)
                    if kind == "data":
                        writer.write(body)
                    else:
                        stats_of[src] = body

            def flush(payload: dict) -> None:
                writer.write(payload)
                drain()

            poll = drain
        else:
            drain = None

            def flush(payload: dict) -> None:
                while len(pending) >= MAX_IN_FLIGHT:  # the writer is behind: wait (write wait)
                    _wait(pending.pop(0))
                pending.append(comm.isend(("data", rank, payload), dest=writer_rank, tag=TAG))

            poll = None

        def in_flight() -> int:  # sends not yet received by the writer
            pending[:] = [r for r in pending if not r.test()[0]]
            return len(pending)

        if local_workers > 1:
            rank_stats, worker_io = _run_local_workers(
                rank, local_workers, plan, files, gen, scorer, my_tasks, flush, poll
            )
        else:
            scorer.setup()
            s = Screener(
                plan, scorer, f"r{rank}", flush, timeline, poll=poll, queue_depth=in_flight
            )
            for task, prog in my_tasks:
                s.run_task(task, prog)
            stats = s.finish()
            stats["rank"] = rank
            scorer.close()
            rank_stats = [stats]
        if writer is None:
            for req in pending:
                _wait(req)
            _wait(comm.isend(("done", rank, rank_stats), dest=writer_rank, tag=TAG))
        else:
            stats_of[rank] = rank_stats
            while len(stats_of) < len(members):
                drain()
                time.sleep(0.002)
            rank_stats[0]["writer"] = {
                "writes": writer.writes,
                "bytes": writer.bytes,
                "seconds": writer.seconds,
                "members": len(members),
                "group": group,
                "ranks": members,
            }
            writer.close()
            writer = None
    finally:
        timeline.close()
    # every writer has committed everything before anyone frees the window
    _wait(comm.Ibarrier())
    offsets.free()
    mine = [s for part in stats_of.values() for s in part] if rank == writer_rank else []
    gathered = comm.gather(
        (mine, [process_record(), *worker_io]), root=0
    )  # with every process's own I/O
    if rank != 0:
        return None
    workers = sorted(
        (s for part, _ in gathered for s in part),
        key=lambda s: (s.get("rank", 0), s.get("worker", 0)),
    )
    writers = [s["writer"] for s in workers if "writer" in s]
    return {
        "workers": workers,
        "writers": writers,
        "groups": [
            sum(1 for r in range(size) if group_of(r, size, n_writers) == g)
            for g in range(n_writers)
        ],
        "iostats": [io for _, ios in gathered for io in ios],
    }
