"""`molsift screen` on one machine: worker processes (spawn) take tasks from one shared queue
(an idle worker takes the next slab: dynamic load balancing), and writer *threads* in this
process, one per writer group, write their group's buffers to the shared output.

Workers die with this process (PR_SET_PDEATHSIG), so a killed run never leaves workers behind
that could write after a `--resume` has started."""

from __future__ import annotations

import os
import queue
import signal
import threading
import time
import traceback
from typing import Any

from .._core import MolsiftError
from ..allocator import spawn_context
from ..iostats import process_record
from ..parallel.lifetime import die_with_parent
from .layout import RunFiles
from .worker import Screener, Timeline
from .writer import GroupWriter, LocalOffsets


def _worker_main(
    wid: int,
    plan: dict,
    scorer,
    tasks,
    out,
    status,
    files: RunFiles,
    gen: int,
    rank: int | None = None,
    parent: int | None = None,
) -> None:
    """One worker process: takes tasks until `None`, puts its buffers on `out`. `rank`: the MPI
    rank this worker belongs to (`molsift screen -j N` under mpirun), None on one machine;
    `parent`: the PID of the process that started it (it dies with it, even if that process was
    killed while this one was still starting)."""
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    name = f"g{gen}-worker{wid}.jsonl" if rank is None else f"g{gen}-rank{rank}-worker{wid}.jsonl"
    timeline = Timeline(os.path.join(files.timeline_dir, name), {"worker": wid, "rank": rank or 0})
    try:
        scorer.setup()

        def flush(payload: dict) -> None:
            out.put(("data", payload))

        def set_status(records: int, rejects: int, bytes_read: int) -> None:
            status[3 * wid], status[3 * wid + 1], status[3 * wid + 2] = records, rejects, bytes_read

        src = f"w{wid}" if rank is None else f"r{rank}w{wid}"
        s = Screener(plan, scorer, src, flush, timeline, queue_depth=out.qsize, status=set_status)
        while True:
            item = tasks.get()
            if item is None:
                break
            task, prog = item
            s.run_task(task, prog)
        stats = s.finish()
        stats["worker"] = wid
        if rank is not None:
            stats["rank"] = rank
        set_status(stats["records"], stats["rejects"], stats["bytes_read"])
        scorer.close()
        timeline.close()
        stats["iostats"] = process_record()  # this worker's own I/O, for RUN_DIR/io.json
        out.put(("done", wid, stats))
    except BaseException as exc:
        out.put(("error", wid, *describe_failure(exc)))
        raise SystemExit(1)
    finally:
        timeline.close()


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


def describe_failure(exc: BaseException) -> tuple[str, bool]:
    """(text, resumable) of an exception in a worker or the reader: molsift's own errors (a
    damaged input, a missing column) are their one-line message, and running again will not
    get past them; anything else is unexpected, shown with its traceback."""
    if isinstance(exc, MolsiftError):
        return str(exc), False
    return traceback.format_exc(), True


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
    ctx = spawn_context()  # workers run on tcmalloc when it is installed
    tasks = ctx.Queue(maxsize=2 * workers)
    group_q = [ctx.Queue(maxsize=2 * len(m)) for m in groups]
    status = ctx.Array("d", 3 * workers, lock=False)
    offsets = LocalOffsets(
        [state["ends"]["rows"], state["ends"]["rejects"], state["ends"]["poses"]]
    )
    procs = []
    for g, members in enumerate(groups):
        for w in members:
            procs.append(
                ctx.Process(
                    target=_worker_main,
                    name=f"molsift-screen-{w}",
                    args=(w, plan, scorer, tasks, group_q[g], status, files, gen),
                    kwargs={"parent": os.getpid()},
                )
            )
    for p in procs:
        p.start()

    abort = threading.Event()
    errors: list[tuple[str, bool]] = []
    worker_stats: dict[int, dict] = {}
    writer_stats: dict[int, dict] = {}

    def feed() -> None:
        try:
            for item in task_iter:
                while not abort.is_set():
                    try:
                        tasks.put(item, timeout=0.2)
                        break
                    except queue.Full:
                        continue
            for _ in range(workers):
                tasks.put(None)
        except BaseException as exc:
            text, resumable = describe_failure(exc)
            errors.append((f"reading the input failed: {text}", resumable))
            abort.set()

    def write(g: int) -> None:
        tl = Timeline(os.path.join(files.timeline_dir, f"g{gen}-writer{g}.jsonl"), {"writer": g})
        writer = GroupWriter(files, g, gen, offsets, fsync, log_event=tl.event)
        done = 0
        try:
            while done < len(groups[g]) and not abort.is_set():
                try:
                    msg = group_q[g].get(timeout=0.2)
                except queue.Empty:
                    continue
                if msg[0] == "data":
                    writer.write(msg[1])
                elif msg[0] == "done":
                    worker_stats[msg[1]] = msg[2]
                    done += 1
                else:
                    errors.append((f"worker {msg[1]} failed: {msg[2]}", msg[3]))
                    abort.set()
        except BaseException as exc:
            text, resumable = describe_failure(exc)
            errors.append((f"writer {g} failed: {text}", resumable))
            abort.set()
        finally:
            writer_stats[g] = {
                "writes": writer.writes,
                "bytes": writer.bytes,
                "seconds": writer.seconds,
                "members": len(groups[g]),
                "group": g,
                "ranks": groups[g],
            }
            writer.close()
            tl.close()

    threads = [threading.Thread(target=feed, daemon=True)]
    threads += [threading.Thread(target=write, args=(g,), daemon=True) for g in range(n_writers)]
    for t in threads:
        t.start()
    try:
        shown = 0
        while any(t.is_alive() for t in threads[1:]):
            time.sleep(0.2)
            done = int(sum(status[3 * w] for w in range(workers)))
            bar.update(done - shown)
            shown = done
            for p in procs:
                if p.exitcode not in (None, 0) and not abort.is_set():
                    time.sleep(0.5)  # let its error message reach the writer
                    if not errors:
                        errors.append(
                            (f"worker process {p.name} died (exit code {p.exitcode})", True)
                        )
                    abort.set()
        done = int(sum(status[3 * w] for w in range(workers)))
        bar.update(done - shown)
    finally:
        if abort.is_set() or any(t.is_alive() for t in threads[1:]):
            abort.set()
            tasks.cancel_join_thread()  # no worker reads it any more: exit without flushing it
            for p in procs:
                if p.is_alive():
                    p.kill()
        for p in procs:
            p.join()
        for t in threads[1:]:
            t.join()
    if errors:
        raise WorkerFailed.of(*errors[0])
    workers_out = [worker_stats[w] for w in sorted(worker_stats)]
    return {
        "workers": workers_out,
        "writers": [writer_stats[g] for g in sorted(writer_stats)],
        "groups": [len(m) for m in groups],
        "iostats": [w.pop("iostats") for w in workers_out if "iostats" in w],
    }
