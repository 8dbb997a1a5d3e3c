"""molsift's own I/O, seen from Python. Every file the Python side of molsift reads or writes
goes through `CountedFile` or `open_counted` (a drop-in for `open`), so the Rust core's counters
(crates/iostats) see it; `process_record()` is this process's record in the I/O log
format (docs/io-log-format.md), and `job_log()` joins the records of every process of a run
(workers, MPI ranks) into one log: `molsift --io-log FILE`, and `RUN_DIR/io.json` of a screen.
The format itself (merging, reading, writing a log) is `molsift.iolog`'s."""

from __future__ import annotations

import io
import json
import os
import socket
import sys
import time
from collections.abc import Iterable
from typing import Any

from . import _core
from ._core import CountedFile, file_size, read_file, write_file
from .iolog import merge_processes, parse_log, write_log

__all__ = [
    "CountedFile",
    "add_job_info",
    "add_process_records",
    "all_records",
    "collect_from_workers",
    "file_size",
    "job_log",
    "open_counted",
    "process_record",
    "read_file",
    "totals",
    "write_file",
    "write_log",
]

_OPEN_FLAGS = {
    "r": os.O_RDONLY,
    "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
    "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    "x": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
}


class _RawCounted(io.RawIOBase):
    """`io.RawIOBase` over a `CountedFile`, so Python's buffered and text layers count too."""

    def __init__(self, f: CountedFile, readable: bool, writable: bool):
        super().__init__()
        self._f, self._r, self._w = f, readable, writable

    def readable(self) -> bool:
        return self._r

    def writable(self) -> bool:
        return self._w

    def readinto(self, b) -> int:
        data = self._f.read(len(b))
        b[: len(data)] = data
        return len(data)

    def write(self, b) -> int:
        return self._f.write(bytes(b))

    def fileno(self) -> int:
        return self._f.fileno()

    def close(self) -> None:
        if not self.closed:
            self._f.close()
        super().close()


def open_counted(path: str, mode: str = "r", buffering: int = -1, encoding: str | None = None):
    """`open(path, mode)` for r, w, a, x (with b or +), with every call counted."""
    kind = mode.replace("b", "").replace("t", "").replace("+", "")
    flags = _OPEN_FLAGS[kind]
    if "+" in mode:
        flags = (flags & ~os.O_WRONLY) | os.O_RDWR
    readable = kind == "r" or "+" in mode
    writable = kind != "r" or "+" in mode
    raw = _RawCounted(CountedFile(os.fspath(path), flags, 0o644), readable, writable)
    line = buffering == 1 and "b" not in mode
    size = io.DEFAULT_BUFFER_SIZE if buffering in (-1, 1) else buffering
    if readable and writable:
        buffered: Any = io.BufferedRandom(raw, size)
    elif readable:
        buffered = io.BufferedReader(raw, size)
    else:
        buffered = io.BufferedWriter(raw, size)
    if "b" in mode:
        return buffered
    return io.TextIOWrapper(buffered, encoding=encoding or "utf-8", line_buffering=line)


def process_record(ended_by: str = "exit") -> dict[str, Any]:
    """This process's I/O record (one "process" object of the log)."""
    return json.loads(_core.iostats_process(ended_by))


# Records that other processes (workers, MPI ranks) handed to this one, by (hostname, pid): the
# latest snapshot of each process wins. Also what a run adds to its log's job object.
_others: dict[tuple[Any, Any], dict[str, Any]] = {}
_job_extra: dict[str, Any] = {}
_collecting = False


def collect_from_workers(on: bool = True) -> None:
    """Asks the jobs of this process (ingest) to bring back their workers' records for the log
    (`molsift --io-log`); `molsift screen` always does."""
    global _collecting
    _collecting = on


def collecting() -> bool:
    return _collecting


def add_process_records(records: Iterable[dict[str, Any]]) -> None:
    """Keeps the records of other processes for the log of this run (latest per process)."""
    for r in records:
        key = (r.get("hostname"), r.get("pid"))
        old = _others.get(key)
        if old is None or r.get("wall_seconds", 0.0) >= old.get("wall_seconds", 0.0):
            _others[key] = r


def add_job_info(**info: Any) -> None:
    """Adds keys to the job object of this run's log (e.g. molsift={"writer_groups": [...]})."""
    _job_extra.update(info)


def all_records(comm=None) -> list[dict[str, Any]] | None:
    """This process's record and those handed to it; with an MPI communicator, every rank's,
    gathered on rank 0 (None on the others)."""
    mine = [process_record(), *list(_others.values())]
    if comm is not None:
        parts = comm.gather(mine, root=0)
        if comm.Get_rank() != 0:
            return None
        mine = [r for part in parts for r in part]
    latest: dict[tuple[Any, Any], dict[str, Any]] = {}
    for r in mine:
        key = (r.get("hostname"), r.get("pid"))
        if key not in latest or r.get("wall_seconds", 0.0) >= latest[key].get("wall_seconds", 0.0):
            latest[key] = r
    return list(latest.values())


def job_log(
    tool: str, processes: list[dict[str, Any]], start_time: float, returncode: int = 0, **job: Any
) -> dict[str, Any]:
    """A whole log (format v1) of a molsift run from its processes' records."""
    info = {
        "tool": tool,
        "command": ["molsift", *sys.argv[1:]],
        "cwd": os.getcwd(),
        "hostname": socket.gethostname(),
        "start_time": start_time,
        "wall_seconds": time.time() - start_time,
        "returncode": returncode,
        **_job_extra,
        **job,
    }
    return merge_processes(processes, info)


def totals(doc: dict[str, Any], library: str | None = None) -> dict[str, Any]:
    """What a run's report shows from its log: opens, stats, requests, bytes read and written,
    I/O seconds (read, write, metadata), over all processes; with `library`, its size and the
    bytes read from it (a map counts no bytes): a screen report's read amplification."""
    log = parse_log(doc, "<run>")
    posix = [r for r in log.records if r.module == "POSIX"]

    def total(name: str) -> float:
        return sum(r.f(name) if name.startswith("F_") else r.c(name) for r in posix)

    out: dict[str, Any] = {
        "processes": len(log.processes),
        "files": len({r.file for r in posix}),
        **{
            k.lower(): int(total(k))
            for k in (
                "OPENS",
                "STATS",
                "SEEKS",
                "MMAPS",
                "FSYNCS",
                "FDSYNCS",
                "READS",
                "WRITES",
                "BYTES_READ",
                "BYTES_WRITTEN",
            )
        },
        "read_s": round(total("F_READ_TIME"), 6),
        "write_s": round(total("F_WRITE_TIME"), 6),
        "meta_s": round(total("F_META_TIME"), 6),
    }
    if library is not None:
        lib = os.path.abspath(library)
        mine = [r for r in posix if r.file == lib]
        size = max([r.file_size or 0 for r in mine] + [os.path.getsize(lib)])
        read = sum(r.c("BYTES_READ") for r in mine)
        out["library"] = {
            "file": lib,
            "bytes": size,
            "bytes_read": read,
            "reads": sum(r.c("READS") for r in mine),
            "mmaps": sum(r.c("MMAPS") for r in mine),
            "opens": sum(r.c("OPENS") for r in mine),
        }
    return out
