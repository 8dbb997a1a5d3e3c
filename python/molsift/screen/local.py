"""`molsift screen` on one machine: worker processes of the process engine
(`parallel.ProcessWorkers`) take tasks from one shared queue (an idle worker takes the next
slab: dynamic load balancing), and one writer thread per writer group in this process (the
engine's handler of that group's outbox) writes its group's buffers to the shared output.

Workers die with this process (the engine's die-with-parent), so a killed run never leaves
workers behind that could write after a `--resume` has started."""

from __future__ import annotations

import functools
import os
from typing import Any

from ..parallel.processes import ProcessWorkers, WorkerError
from .layout import RunFiles
from .worker import ScreenJob, Timeline
from .writer import GroupWriter, LocalOffsets


class WorkerFailed(ValueError):
    """A worker or writer failed; what was committed stays, and --resume finishes the run."""

    @classmethod
    def of(cls, text: str, resumable: bool) -> WorkerFailed:
        hint = (
            "run again with --resume to finish"
            if resumable
            else "--resume finishes the run once the input can be read"
        )
        return cls(f"{text.rstrip()}\nwhat was committed is kept: {hint}")


def run_local(
    plan: dict, files: RunFiles, state: dict, scorer, task_iter, workers: int, fsync: bool, bar
) -> dict[str, Any]:
    """Runs every task; returns per-worker and per-writer stats. `task_iter` yields (task,
    progress) pairs and may decode a stream as it goes."""
    gen = state["gen"]
    n_writers = max(1, min(plan["writers"], workers))
    groups = [
        [w for w in range(workers) if w * n_writers // workers == g] for g in range(n_writers)
    ]
    ends = state["ends"]
    offsets = LocalOffsets([ends["rows"], ends["rejects"], ends["poses"]])
    timelines = [
        Timeline(os.path.join(files.timeline_dir, f"g{gen}-writer{g}.jsonl"), {"writer": g})
        for g in range(n_writers)
    ]
    writers: list[GroupWriter] = []
    try:
        for g in range(n_writers):
            writers.append(GroupWriter(files, g, gen, offsets, fsync, log_event=timelines[g].event))
        engine = ProcessWorkers(
            workers,
            functools.partial(ScreenJob, plan, scorer, files, gen, None),
            outboxes=groups,
            name="molsift-screen-{w}",
            handler_name="writer",
        )
        shown = 0

        def tick(done: float) -> None:
            nonlocal shown
            bar.update(int(done) - shown)
            shown = int(done)

        worker_stats = engine.run(
            task_iter, lambda g, payload: writers[g].write(payload), on_tick=tick
        )
    except WorkerError as exc:
        raise WorkerFailed.of(exc.text, exc.resumable) from None
    finally:
        writer_stats = [
            {
                "writes": w.writes,
                "bytes": w.bytes,
                "seconds": w.seconds,
                "members": len(groups[g]),
                "group": g,
                "ranks": groups[g],
            }
            for g, w in enumerate(writers)
        ]
        for w in writers:
            w.close()
        for tl in timelines:
            tl.close()
    return {
        "workers": worker_stats,
        "writers": writer_stats,
        "groups": [len(m) for m in groups],
        "iostats": [w.pop("iostats") for w in worker_stats if "iostats" in w],
    }
