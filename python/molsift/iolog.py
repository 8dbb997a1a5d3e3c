"""The I/O log format (docs/io-log-format.md), one module for every writer and reader of it: the
profiler (`molsift profile`, `molsift insights`) and molsift's own counters (`molsift.iostats`).

Owns the format's name and version, Darshan's request-size bins, checking a log's JSON
(`read_json`), the log model (`load_log(PATH)` reads a molsift log or a Darshan log into an
`IoLog` of per-file, per-process `Record`s with Darshan's counter names), joining process objects
into one job log (`merge_processes`) and writing a log atomically (`write_log`). Every problem
with a log is an `IoLogError` (a ValueError) naming the file."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from ._core import write_file

FORMAT = "molsift-iolog"
VERSION = 1
# Darshan's request-size bins; their inclusive upper bounds are defined once per language:
# molsift_iostats::size_bin (Rust) and size_bin in crates/tracer/tracer.c.
SIZE_BINS = [
    "0_100",
    "100_1K",
    "1K_10K",
    "10K_100K",
    "100K_1M",
    "1M_4M",
    "4M_10M",
    "10M_100M",
    "100M_1G",
    "1G_PLUS",
]
#: the inclusive upper bounds of SIZE_BINS in bytes (a request of 100 bytes is in 0_100), one per
#: bin but the last, 1G_PLUS, which has none
SIZE_BIN_EDGES = (100, 1 << 10, 10 << 10, 100 << 10, 1 << 20, 4 << 20, 10 << 20, 100 << 20, 1 << 30)
DARSHAN_MAGIC = (6567223).to_bytes(8, "little")  # after the 8-byte version string, e.g. b"3.41"


class IoLogError(ValueError):
    """A log (or a per-process log) that is missing, truncated, corrupt or of another version."""


@dataclass
class Process:
    """One process image: a rank, a forked child, or a program started by exec."""

    pid: int | None
    rank: int | None
    exe: str = ""
    argv: list[str] = field(default_factory=list)
    start_time: float = 0.0
    wall_seconds: float = 0.0
    ended_by: str = ""
    failed_opens: int = 0
    failed_stats: int = 0
    forked_from: int | None = None
    heatmap_bin_seconds: float = 0.0

    @property
    def label(self) -> str:
        if self.rank == -1:
            return "all ranks"  # Darshan's record of a file shared by every rank
        return f"rank {self.rank}" if self.rank is not None else f"pid {self.pid}"


@dataclass
class Record:
    """The counters of one file in one process (rank -1: Darshan's reduction over all ranks)."""

    module: str
    file: str
    process: Process
    counters: dict[str, int]
    fcounters: dict[str, float]
    file_size: int | None = None
    heat_read: list[int] = field(default_factory=list)
    heat_write: list[int] = field(default_factory=list)

    def c(self, name: str) -> int:
        return int(self.counters.get(name, 0))

    def f(self, name: str) -> float:
        return float(self.fcounters.get(name, 0.0))

    @property
    def rank(self) -> int | None:
        return self.process.rank

    def sizes(self, op: str) -> list[int]:
        """The 10-bin request-size histogram of op 'READ' or 'WRITE'."""
        return [self.c(f"SIZE_{op}_{b}") for b in SIZE_BINS]


@dataclass
class IoLog:
    """A whole run: where it came from, the job, its processes and their file records."""

    source: str
    kind: str  # "molsift" or "darshan"
    job: dict[str, Any]
    processes: list[Process]
    records: list[Record]

    @property
    def ranks(self) -> list[int]:
        return sorted({p.rank for p in self.processes if p.rank is not None and p.rank >= 0})

    @property
    def nprocs(self) -> int:
        return int(self.job.get("nprocs") or len(self.processes))

    @property
    def start_time(self) -> float:
        return min((p.start_time for p in self.processes), default=0.0)


def load_log(path: str) -> IoLog:
    """Read a molsift log (JSON) or a Darshan log (binary, read with pydarshan)."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except FileNotFoundError:
        raise IoLogError(f"{path}: no such I/O log") from None
    except OSError as exc:
        raise IoLogError(f"{path}: cannot read the I/O log: {exc.strerror}") from None
    if head.lstrip()[:1] == b"{":
        return parse_log(read_json(path), path)
    if head[8:16] == DARSHAN_MAGIC:
        from .profiler.darshan import load_darshan  # pydarshan, only for Darshan logs

        return load_darshan(path)
    if head.lstrip()[:1] == b"[":  # once "neither JSON nor a Darshan log"
        raise IoLogError(f"{path}: not a molsift I/O log (a JSON array; a log is one JSON object)")
    what = "empty file" if not head else "neither JSON nor a Darshan log header"
    raise IoLogError(f"{path}: not a molsift I/O log nor a Darshan log ({what})")


def is_molsift_log(path: str) -> bool:
    """Whether PATH holds a molsift I/O log: one JSON object naming this format (any version),
    as `load_log` recognizes one. Anything else (a Darshan log, a corrupt log, any other file)
    is not."""
    try:
        with open(path, "rb") as fh:
            if fh.read(64).lstrip()[:1] != b"{":  # not read whole: a 10 GB library is no log
                return False
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def read_json(path: str) -> dict[str, Any]:
    """The JSON document of a log, checked for our format name and version."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IoLogError(f"{path}: corrupt I/O log (not valid JSON: {exc})") from None
    except OSError as exc:
        raise IoLogError(f"{path}: cannot read the I/O log: {exc.strerror}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise IoLogError(f'{path}: not a molsift I/O log (no "format": "{FORMAT}")')
    if doc.get("version") != VERSION:
        raise IoLogError(
            f"{path}: I/O log version {doc.get('version')!r}; this molsift reads version {VERSION}"
        )
    if not isinstance(doc.get("processes"), list):
        raise IoLogError(f'{path}: corrupt I/O log ("processes" is not a list)')
    return doc


def parse_log(doc: dict[str, Any], source: str) -> IoLog:
    """An `IoLog` from a checked JSON document."""
    processes, records = [], []
    try:
        for p in doc["processes"]:
            proc = Process(
                pid=p.get("pid"),
                rank=p.get("rank"),
                exe=p.get("exe", ""),
                argv=list(p.get("argv", [])),
                start_time=float(p.get("start_time", 0.0)),
                wall_seconds=float(p.get("wall_seconds", 0.0)),
                ended_by=p.get("ended_by", ""),
                failed_opens=int(p.get("failed_opens", 0)),
                failed_stats=int(p.get("failed_stats", 0)),
                forked_from=p.get("forked_from"),
                heatmap_bin_seconds=float(p.get("heatmap_bin_seconds", 0.0)),
            )
            processes.append(proc)
            for r in p["records"]:
                heat = r.get("heatmap", {})
                records.append(
                    Record(
                        module=str(r["module"]),
                        file=str(r["file"]),
                        process=proc,
                        counters={k: int(v) for k, v in r.get("counters", {}).items()},
                        fcounters={k: float(v) for k, v in r.get("fcounters", {}).items()},
                        file_size=r.get("file_size"),
                        heat_read=list(heat.get("read", [])),
                        heat_write=list(heat.get("write", [])),
                    )
                )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise IoLogError(f"{source}: corrupt I/O log (bad process or record: {exc!r})") from None
    job = dict(doc.get("job") or {})
    kind = "darshan" if job.get("tool") == "darshan" else "molsift"
    return IoLog(source=source, kind=kind, job=job, processes=processes, records=records)


def merge_processes(processes: list[dict[str, Any]], job: dict[str, Any]) -> dict[str, Any]:
    """One job log from process objects (the tracer's, or molsift's own built-in counters'),
    in start order."""
    processes = sorted(processes, key=lambda p: (p.get("start_time", 0.0), p.get("pid") or 0))
    job = dict(job, nprocs=len(processes))
    return {"format": FORMAT, "version": VERSION, "job": job, "processes": processes}


def write_log(doc: dict[str, Any], path: str) -> None:
    """Writes a log through a temporary name (counted by molsift's I/O counters), so a reader
    never sees half of it."""
    tmp = f"{path}.tmp{os.getpid()}"
    write_file(tmp, (json.dumps(doc, separators=(",", ":")) + "\n").encode())
    os.replace(tmp, path)
