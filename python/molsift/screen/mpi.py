"""`molsift screen` under `mpirun`: one worker per rank. Tasks are dealt round-robin (task i to
rank i mod N; by default there is one slab per rank). Ranks are split into P writer groups of
consecutive ranks; the first rank of each group is its writer. A member sends each full buffer
to its writer without waiting (at most two sends in flight); the writer receives them between
its own batches, reserves their place with a fetch-and-add in an MPI window on rank 0 and
writes them with `pwrite`. A member that runs out of work sends `done`; a writer ends when all
its members have, so ranks may produce any amount of output.

Waiting is done by polling with short sleeps (Open MPI's blocking calls spin, which starves
the other ranks when they share cores)."""

from __future__ import annotations

import os
import time
from typing import Any, Dict, List

from ..iostats import process_record
from .layout import RunFiles
from .worker import Screener, Timeline
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


def run_mpi(comm, plan: dict, files: RunFiles, state: dict, scorer, my_tasks, fsync: bool) -> Dict[str, Any]:
    """Runs this rank's tasks; returns all ranks' stats on rank 0 (None elsewhere)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    gen = state["gen"]
    n_writers = max(1, min(plan["writers"], size))
    group = group_of(rank, size, n_writers)
    members = [r for r in range(size) if group_of(r, size, n_writers) == group]
    writer_rank = members[0]
    offsets = MPIOffsets(comm, [state["ends"]["rows"], state["ends"]["rejects"], state["ends"]["poses"]])
    timeline = Timeline(os.path.join(files.timeline_dir, f"g{gen}-rank{rank}.jsonl"),
                        {"worker": rank, "rank": rank})
    writer = None
    stats_of: Dict[int, dict] = {}
    pending: List[Any] = []
    try:
        scorer.setup()
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

        s = Screener(plan, scorer, f"r{rank}", flush, timeline, poll=poll, queue_depth=in_flight)
        for task, prog in my_tasks:
            s.run_task(task, prog)
        stats = s.finish()
        stats["rank"] = rank
        scorer.close()
        if writer is None:
            for req in pending:
                _wait(req)
            _wait(comm.isend(("done", rank, stats), dest=writer_rank, tag=TAG))
        else:
            stats_of[rank] = stats
            while len(stats_of) < len(members):
                drain()
                time.sleep(0.002)
            stats["writer"] = {"writes": writer.writes, "bytes": writer.bytes,
                               "seconds": writer.seconds, "members": len(members),
                               "group": group, "ranks": members}
            writer.close()
            writer = None
    finally:
        timeline.close()
    # every writer has committed everything before anyone frees the window
    _wait(comm.Ibarrier())
    offsets.free()
    mine = list(stats_of.values()) if rank == writer_rank else []
    gathered = comm.gather((mine, process_record()), root=0)  # with each rank's own I/O
    if rank != 0:
        return None
    workers = sorted((s for part, _ in gathered for s in part), key=lambda s: s.get("rank", 0))
    writers = [s["writer"] for s in workers if "writer" in s]
    return {"workers": workers, "writers": writers,
            "groups": [sum(1 for r in range(size) if group_of(r, size, n_writers) == g)
                       for g in range(n_writers)],
            "iostats": [io for _, io in gathered]}
