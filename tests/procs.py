"""The processes of this machine as Linux /proc shows them, for the tests, the fault suite and
benches/serve.py: the processes (`pids`), a process's parent, state, niceness and CPU seconds
(`stat`, `table`), the processes under it (`children`, `descendants`), its command line and
environment. One reader of /proc for all of them (before, each test kept its own walk). A
process that ends while it is read is left out (or reads as empty), never an error, except in
`cpu_s`: a sum that silently left out a process would be wrong."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Proc:
    """One process: `state` is /proc's letter (R, S, Z, ...), `cpu_s` its user + system CPU
    seconds so far."""

    pid: int
    ppid: int
    state: str
    nice: int
    cpu_s: float


def stat(pid: int) -> Proc | None:
    """Process `pid`, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            text = fh.read()
    except OSError:
        return None
    # after the name (which may hold spaces and parentheses): state (field 3), ppid (4) ...
    # utime (14), stime (15) ... nice (19)
    f = text.rsplit(")", 1)[1].split()
    cpu = (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    return Proc(pid, int(f[1]), f[0], int(f[16]), cpu)


def pids() -> list[int]:
    """The pid of every process of the machine (some may have ended by the time they are read)."""
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def table() -> dict[int, Proc]:
    """Every process of the machine, by pid."""
    return {p.pid: p for p in map(stat, pids()) if p is not None}


def children(pid: int, procs: dict[int, Proc] | None = None) -> list[int]:
    """The processes whose parent is `pid` (zombies included)."""
    procs = table() if procs is None else procs
    return sorted(p.pid for p in procs.values() if p.ppid == pid)


def descendants(pid: int, procs: dict[int, Proc] | None = None) -> list[int]:
    """Every process under `pid` (its children, theirs, ...: mpirun's daemons and ranks, a
    server's workers), nearest first."""
    procs = table() if procs is None else procs
    under: dict[int, list[int]] = {}
    for p in procs.values():
        under.setdefault(p.ppid, []).append(p.pid)
    out, todo = [], [pid]
    while todo:
        for child in sorted(under.get(todo.pop(0), [])):
            out.append(child)
            todo.append(child)
    return out


def cmdline(pid: int) -> bytes:
    """Process `pid`'s command line (its words NUL-separated), b"" when it is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def environ(pid: int) -> dict[bytes, bytes]:
    """Process `pid`'s environment as it started, {} when it is gone or not ours to read."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            raw = fh.read()
    except OSError:
        return {}
    return dict(kv.split(b"=", 1) for kv in raw.split(b"\0") if b"=" in kv)


def cpu_s(pids) -> float:
    """User + system CPU seconds of the processes `pids`, each of which must be alive (a
    ProcessLookupError names one that is gone: its seconds would be missing from the sum)."""
    total = 0.0
    for pid in pids:
        p = stat(pid)
        if p is None:
            raise ProcessLookupError(f"process {pid} has ended")
        total += p.cpu_s
    return total
