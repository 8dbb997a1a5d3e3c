"""The writer of one writer group: takes the accumulation buffers of its group's workers,
reserves their place in the shared output files, writes them there with `pwrite`, and commits
them to its journal.

Places are reserved by an atomic fetch-and-add on one counter per output file: an exclusive
prefix sum over the writes in the order they arrive, so writers never wait for one another (a
collective prefix sum would make every writer wait for the slowest group). `LocalOffsets` is the
counter for writer threads in one process; `MPIOffsets` keeps it in an MPI window on rank 0
(passive-target `Get_accumulate`)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from typing import Callable

from ..iostats import CountedFile
from .journal import entry_line
from .layout import RunFiles

FILES = ("rows", "rejects", "poses")


class LocalOffsets:
    """Fetch-and-add counters shared by threads of one process."""

    def __init__(self, starts: Sequence[int]):
        self._next = list(starts)
        self._lock = threading.Lock()

    def reserve(self, sizes: Sequence[int]) -> list[int]:
        with self._lock:
            out = list(self._next)
            for i, n in enumerate(sizes):
                self._next[i] += n
            return out


class MPIOffsets:
    """Fetch-and-add counters in an MPI window held by rank 0 (collective to create/free)."""

    def __init__(self, comm, starts: Sequence[int]):
        import numpy as np
        from mpi4py import MPI

        self._MPI, self._np = MPI, np
        n = len(starts)
        self._n = n
        self.win = MPI.Win.Allocate(8 * n if comm.Get_rank() == 0 else 0, 8, comm=comm)
        if comm.Get_rank() == 0:
            mem = np.frombuffer(self.win.tomemory(), dtype=np.int64)
            mem[:] = starts
        comm.Barrier()

    def reserve(self, sizes: Sequence[int]) -> list[int]:
        np, MPI = self._np, self._MPI
        add = np.asarray(sizes, dtype=np.int64)
        got = np.zeros(self._n, dtype=np.int64)
        self.win.Lock(0, MPI.LOCK_SHARED)
        self.win.Get_accumulate(
            [add, MPI.INT64_T], [got, MPI.INT64_T], 0, target=[0, self._n, MPI.INT64_T], op=MPI.SUM
        )
        self.win.Unlock(0)
        return [int(x) for x in got]

    def free(self) -> None:
        self.win.Free()


def _failpoint(name: str, count: int, hold: bool = False) -> bool:
    """Test hook: MOLSIFT_FAILPOINT=NAME:N kills this process with SIGKILL at point NAME of its
    N-th write (`hold`: only say whether it would). Used by the kill -9 tests."""
    spec = os.environ.get("MOLSIFT_FAILPOINT")
    if not spec or spec != f"{name}:{count}":
        return False
    if not hold:
        os.kill(os.getpid(), 9)
    return True


class GroupWriter:
    """Writes buffers to the shared files and journals them. One per writer group."""

    def __init__(
        self,
        files: RunFiles,
        writer: int,
        gen: int,
        offsets,
        fsync: bool,
        log_event: Callable[[dict], None] | None = None,
    ):
        self.writer = writer
        self.offsets = offsets
        self.fsync = fsync
        self.log_event = log_event
        self._files = {  # counted by molsift's I/O counters (the run's io.json)
            "rows": CountedFile(files.rows_partial, os.O_WRONLY),
            "rejects": CountedFile(files.rejects_partial, os.O_WRONLY),
        }
        self._poses_path = files.poses
        self._journal = CountedFile(
            files.journal(gen, writer), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644
        )
        self.writes = 0
        self.bytes = 0
        self.seconds = 0.0

    def write(self, payload: dict) -> None:
        """Reserves, writes and commits one buffer (see `worker.RowBuffer.payload`)."""
        start = time.time()
        poses = payload.get("poses") or b""
        pose_at = self.offsets.reserve((0, 0, len(poses)))[2] if poses else 0
        rows = payload["rows"]
        if payload.get("row_parts") is not None:  # rows that address their poses
            rows = "".join(
                f"{prefix},{pose_at + off},{n}\n" for prefix, off, n in payload["row_parts"]
            ).encode()
        rejects = payload.get("rejects") or b""
        at = self.offsets.reserve((len(rows), len(rejects), 0))
        entry = {
            "w": self.writer,
            "src": payload["src"],
            "n": payload["n"],
            "r": payload["r"],
            "p": payload["p"],
        }
        for key, data, off in (
            ("rows", rows, at[0]),
            ("rejects", rejects, at[1]),
            ("poses", poses, pose_at),
        ):
            if data and key == "rows" and _failpoint("mid-write", self.writes, hold=True):
                self._files[key].pwrite(data[: len(data) // 2], off)  # a write cut by a kill
                _failpoint("mid-write", self.writes)
            if data:
                if key not in self._files:  # only scorers with poses have a pose file
                    self._files[key] = CountedFile(
                        self._poses_path, os.O_WRONLY | os.O_CREAT, 0o644
                    )
                self._files[key].pwrite(data, off)  # all of it (short writes are retried)
                entry[key] = [off, len(data)]
        if self.fsync:
            for key in FILES:
                if key in entry and key in self._files:
                    self._files[key].fdatasync()
        _failpoint("before-commit", self.writes)
        self._journal.write(entry_line(entry))  # the commit: one write on an O_APPEND file
        end = time.time()
        n = len(rows) + len(rejects) + len(poses)
        self.writes += 1
        self.bytes += n
        self.seconds += end - start
        if self.log_event:
            self.log_event(
                {
                    "kind": "write",
                    "writer": self.writer,
                    "src": payload["src"],
                    "start": start,
                    "end": end,
                    "bytes": n,
                }
            )

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._journal.close()
