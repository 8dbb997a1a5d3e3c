"""One screening worker (a local process or an MPI rank): reads its tasks' records through a
reader thread and a bounded queue, prepares each molecule (RDKit parse, optional standardize),
scores it, and appends the result row (or the reject) to its own accumulation buffer. A full
buffer is handed to `flush` (the group writer, or a send to it); buffers are sized per worker,
so how often a worker flushes depends only on its own output, never on its group's size."""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any, Callable

from .. import _core
from ..allocator import loaded
from ..inputs import InputFile
from ..iostats import CountedFile, open_counted, process_record
from ..scorers import Reject, format_value

BATCH_RECORDS = 256
READ_QUEUE_BATCHES = 4


def csv_field(text: str) -> str:
    """`text` as one CSV field (quoted only when it must be)."""
    if "," in text or '"' in text or "\n" in text or "\r" in text:
        return '"' + text.replace('"', '""') + '"'
    return text


class Timeline:
    """Appends samples (records done, queue depths) and events as JSON lines to one file."""

    def __init__(self, path: str | None, who: dict, every: float = 0.5):
        self._f = open_counted(path, "a", buffering=1) if path else None
        self.who = who
        self.every = every
        self._last = 0.0

    def due(self) -> bool:
        return self._f is not None and time.time() - self._last >= self.every

    def sample(self, **values: Any) -> None:
        if self._f is None:
            return
        self._last = time.time()
        self._f.write(json.dumps({"kind": "sample", "t": self._last, **self.who, **values}) + "\n")

    def event(self, event: dict) -> None:
        if self._f is not None:
            self._f.write(json.dumps({**self.who, **event}) + "\n")

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


class RowBuffer:
    """The accumulation buffer of one worker: result rows, rejects, poses, and the progress of
    the tasks whose records it holds."""

    def __init__(self, capacity: int, src: str, has_poses: bool):
        self.capacity = capacity
        self.src = src
        self.has_poses = has_poses
        self._reset()

    def _reset(self) -> None:
        self.rows: list[Any] = []
        self.rejects: list[str] = []
        self.poses: list[bytes] = []
        self.pose_bytes = 0
        self.size = 0
        self.progress: dict[str, dict] = {}

    def add_row(self, prefix: str, pose: str | None = None) -> None:
        if self.has_poses:
            data = (pose or "").encode()
            self.rows.append((prefix, self.pose_bytes, len(data)))
            self.poses.append(data)
            self.pose_bytes += len(data)
            self.size += len(prefix) + 24 + len(data)
        else:
            line = prefix + "\n"
            self.rows.append(line)
            self.size += len(line)

    def add_reject(self, line: str) -> None:
        self.rejects.append(line)
        self.size += len(line)

    @property
    def empty(self) -> bool:
        return not self.rows and not self.rejects and not self.progress

    def payload(self) -> dict:
        """The buffer's content for a writer; the buffer is emptied."""
        p = {
            "src": self.src,
            "n": len(self.rows),
            "r": len(self.rejects),
            "p": self.progress,
            "rejects": "".join(self.rejects).encode(),
        }
        if self.has_poses:
            p.update(rows=b"", row_parts=self.rows, poses=b"".join(self.poses))
        else:
            p.update(rows="".join(self.rows).encode(), row_parts=None, poses=b"")
        self._reset()
        return p


def _prepare_fn(standardize: bool):
    """Returns prepare(text, sdf) -> (mol or None, reason)."""
    from ..chem import to_mol

    if not standardize:
        return to_mol
    from rdkit.Chem.MolStandardize import rdMolStandardize

    uncharger = rdMolStandardize.Uncharger()

    def prepare(text: str, sdf: bool):
        mol, why = to_mol(text, sdf)
        if mol is None:
            return None, why
        try:
            mol = rdMolStandardize.Cleanup(mol)
            mol = rdMolStandardize.FragmentParent(mol)
            return uncharger.uncharge(mol), ""
        except Exception as exc:  # RDKit raises several types
            return None, f"standardization failed: {exc}"

    return prepare


class Screener:
    """Runs tasks through prepare -> score -> buffer; calls `flush(payload)` on full buffers."""

    def __init__(
        self,
        plan: dict,
        scorer,
        src: str,
        flush: Callable[[dict], None],
        timeline: Timeline,
        poll: Callable[[], None] | None = None,
        queue_depth: Callable[[], int] | None = None,
        status: Callable[[int, int, int], None] | None = None,
    ):
        self.plan = plan
        self.scorer = scorer
        self.flush_fn = flush
        self.timeline = timeline
        self.poll = poll
        self.queue_depth = queue_depth or (lambda: 0)
        self.status = status
        self.input = InputFile(**plan["input"])
        self.sdf = self.input.sdf
        self.source = self.input.path  # absolute: read from any cwd
        self.source_name = plan.get("source_name", self.source)  # as typed, for rejects.tsv
        self.buffer = RowBuffer(plan["write_buffer"], src, scorer.has_poses)
        self.prepare = _prepare_fn(plan.get("standardize", False))
        if plan.get("standardize") or self.sdf:
            from rdkit import Chem

            self._to_smiles = Chem.MolToSmiles
        else:
            self._to_smiles = None
        self.stats = {
            "records": 0,
            "rows": 0,
            "rejects": 0,
            "flushes": 0,
            "bytes_read": 0,
            "read_calls": 0,
            "io": [],  # how this worker's slabs were read: pread, mmap, uring, direct, stream
            "read_wait_s": 0.0,
            "prepare_s": 0.0,
            "score_s": 0.0,
            "write_wait_s": 0.0,
            "tasks": 0,
            "flush_bytes": 0,
            "allocator": loaded(),
        }
        self._read_depth = 0

    # ------------------------------------------------------------ records of one task

    def _slab_batches(self, task: dict, prog: dict | None) -> Iterator[list]:
        start, end = task["slab"]
        first_line = task["first_line"]
        if prog and prog["k"]:
            # resume after the last committed record: the slab then starts one byte into it
            with CountedFile(self.source) as f:
                first = f.pread(1, prog["o"])
            start = prog["o"] + 1
            first_line = prog["l"] - 1 + (1 if first == b"\n" else 0)
        src = self.input.source(self.plan["reader"], slab=(start, end), first_line=first_line)
        q: queue.Queue = queue.Queue(maxsize=READ_QUEUE_BATCHES)
        failure: list[BaseException] = []

        def read() -> None:
            try:
                while True:
                    batch = src.next_batch(BATCH_RECORDS)
                    q.put(batch)
                    if not batch:
                        return
            except BaseException as exc:  # handed to the worker thread
                failure.append(exc)
                q.put(None)

        t = threading.Thread(target=read, daemon=True)
        t.start()
        while True:
            waited = time.perf_counter()
            batch = q.get()
            self.stats["read_wait_s"] += time.perf_counter() - waited
            self._read_depth = q.qsize()
            if batch is None:
                raise failure[0]
            if not batch:
                break
            yield batch
        t.join()
        c = src.counters()
        self.stats["bytes_read"] += c["bytes_read"]
        self.stats["read_calls"] += c["read_calls"]
        if c["io"] not in self.stats["io"]:
            self.stats["io"].append(c["io"])

    @staticmethod
    def _chunk_batches(task: dict, prog: dict | None) -> Iterator[list]:
        records = task["records"][prog["k"] if prog else 0 :]
        for i in range(0, len(records), BATCH_RECORDS):
            yield records[i : i + BATCH_RECORDS]

    # ------------------------------------------------------------ the work

    def run_task(self, task: dict, prog: dict | None) -> None:
        if prog and prog["d"]:
            return
        key = str(task["index"])
        k = prog["k"] if prog else 0
        batches = (
            self._slab_batches(task, prog)
            if task["kind"] == "slab"
            else self._chunk_batches(task, prog)
        )
        last = dict(prog) if prog else {"k": 0, "o": 0, "l": 0, "d": 0}
        buffer, one = self.buffer, self._one
        for batch in batches:
            for text, rid, line, offset, problem in batch:
                one(text, rid or str(line), line, offset, problem)
                k += 1
                # the buffer's progress is that of its last record (set before it is handed on)
                if buffer.size >= buffer.capacity:
                    buffer.progress[key] = {"k": k, "o": offset, "l": line, "d": 0}
                    self.flush()
                if k & 15 == 0 and self.timeline.due():
                    self._sample()
            if batch:
                last = {"k": k, "o": batch[-1][3], "l": batch[-1][2], "d": 0}
                buffer.progress[key] = last
            self._between_batches()
        buffer.progress[key] = dict(last, d=1)
        self.stats["tasks"] += 1

    def _one(self, text: str, rid: str, line: int, offset: int, problem: str | None) -> None:
        self.stats["records"] += 1
        mol = None
        if problem is None:
            t0 = time.perf_counter()
            try:
                mol, problem = self.prepare(text, self.sdf)
            except Exception as exc:  # a bad record never stops the run
                mol, problem = None, f"error while preparing the molecule: {exc}"
            t1 = time.perf_counter()
            self.stats["prepare_s"] += t1 - t0
            if mol is not None:
                if self.scorer.has_poses:
                    mol.SetProp("_Name", rid)  # the record's id titles its pose
                try:
                    result = self.scorer.score(mol)
                except Reject as exc:
                    problem = str(exc) or "rejected by the scorer"
                    mol = None
                except Exception as exc:  # user scorers may fail on odd molecules
                    problem = f"scorer error: {type(exc).__name__}: {exc}"
                    mol = None
                self.stats["score_s"] += time.perf_counter() - t1
        if mol is None:
            self.buffer.add_reject(
                _core.reject_row(self.source_name, line, offset, rid, problem or "")
            )
            self.stats["rejects"] += 1
            return
        pose = None
        if self.scorer.has_poses:
            result, pose = result
        values = [format_value(v) for v in result]
        broken = next((v for v in values if "\n" in v or "\r" in v), None)
        if broken is not None:  # a result row is one line: the run counts rows by newlines
            reason = f"scorer error: a value holds a line break: {broken[:60]!r}"
            self.buffer.add_reject(_core.reject_row(self.source_name, line, offset, rid, reason))
            self.stats["rejects"] += 1
            return
        smiles = self._to_smiles(mol) if self._to_smiles else text
        fields = [csv_field(rid), csv_field(smiles)] + [csv_field(v) for v in values]
        self.buffer.add_row(",".join(fields), pose)
        self.stats["rows"] += 1

    def _between_batches(self) -> None:
        if self.poll is not None:
            self.poll()
        if self.status is not None:
            self.status(self.stats["records"], self.stats["rejects"], self.stats["bytes_read"])
        if self.timeline.due():
            self._sample()

    def _sample(self) -> None:
        self.timeline.sample(
            records=self.stats["records"],
            rejects=self.stats["rejects"],
            read_queue=self._read_depth,
            write_queue=self.queue_depth(),
        )

    def flush(self) -> None:
        """Hands the buffer to the writer (the time blocked here is write wait)."""
        if self.buffer.empty:
            return
        payload = self.buffer.payload()
        self.stats["flushes"] += 1
        self.stats["flush_bytes"] += (
            len(payload["rows"]) + len(payload["rejects"]) + len(payload["poses"])
        )
        t0 = time.perf_counter()
        self.flush_fn(payload)
        self.stats["write_wait_s"] += time.perf_counter() - t0

    def finish(self) -> dict[str, Any]:
        self.flush()
        self._read_depth = 0
        self._sample()
        out = dict(self.stats)
        out["scorer"] = self.scorer.stats()
        return out


class ScreenJob:
    """A screening worker process's job on the process engine (`parallel.ProcessWorkers`): a
    `Screener` whose full buffers go to the parent (`ctx.send`), its timeline in the run
    directory, its records as progress. `rank`: the MPI rank the worker belongs to (`molsift
    screen -j N` under mpirun), None on one machine."""

    def __init__(self, plan: dict, scorer, files, gen: int, rank: int | None, ctx):
        self.ctx, self.scorer, self.rank = ctx, scorer, rank
        wid = ctx.worker
        name = f"g{gen}-worker{wid}" if rank is None else f"g{gen}-rank{rank}-worker{wid}"
        self.timeline = Timeline(
            os.path.join(files.timeline_dir, f"{name}.jsonl"), {"worker": wid, "rank": rank or 0}
        )
        scorer.setup()
        src = f"w{wid}" if rank is None else f"r{rank}w{wid}"
        self.screener = Screener(
            plan,
            scorer,
            src,
            ctx.send,
            self.timeline,
            queue_depth=ctx.queue_depth,
            status=lambda records, _rejects, _bytes: ctx.progress(records),
        )

    def run(self, item: tuple) -> None:
        task, prog = item
        self.screener.run_task(task, prog)

    def finish(self) -> dict[str, Any]:
        stats = self.screener.finish()
        stats["worker"] = self.ctx.worker
        if self.rank is not None:
            stats["rank"] = self.rank
        self.ctx.progress(stats["records"])
        self.scorer.close()
        self.timeline.close()
        stats["iostats"] = process_record()  # this worker's own I/O, for RUN_DIR/io.json
        return stats

    def close(self) -> None:
        self.timeline.close()
