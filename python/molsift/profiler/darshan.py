"""Darshan logs in: `load_darshan(PATH)` reads a *.darshan file with pydarshan (`pip install
darshan`) into the same `IoLog` as molsift's own logs, so every rule applies to it.

pydarshan's C library can crash the process on a damaged log (a truncated one segfaults), so the
log is converted in a child process (`python -m molsift.profiler.darshan LOG` prints our JSON
format) and a crash there becomes an `IoLogError` naming the file."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from typing import Any

from ..iolog import IoLog, IoLogError, parse_log

PREFIXES = {"POSIX": "POSIX_", "STDIO": "STDIO_", "MPI-IO": "MPIIO_"}


def load_darshan(path: str) -> IoLog:
    try:
        import darshan  # noqa: F401  (only to say early that it is missing)
    except ImportError:
        raise IoLogError(
            f"{path}: reading Darshan logs needs pydarshan (pip install darshan)"
        ) from None
    child = subprocess.run(
        [sys.executable, "-m", "molsift.profiler.darshan", path],
        capture_output=True,
        text=True,
        errors="replace",
    )
    errors = " ".join(
        line.strip() for line in child.stderr.splitlines() if line.startswith("Error")
    )
    if child.returncode != 0 or errors:
        how = (
            f"pydarshan crashed with {signal.Signals(-child.returncode).name}"
            if child.returncode < 0
            else child.stderr.strip().splitlines()[-1]
            if child.returncode and child.stderr.strip()
            else "pydarshan reported errors"
        )
        raise IoLogError(
            f"{path}: corrupt or truncated Darshan log ({how}; {errors or 'no details'})"
        )
    return parse_log(json.loads(child.stdout), path)


def convert(path: str) -> dict[str, Any]:
    """The Darshan log at PATH as a molsift log document: one "process" per rank (-1: Darshan's
    reduction of a file shared by all ranks), counters without their module prefix."""
    import darshan

    report = darshan.DarshanReport()
    try:
        report.open(path, read_all=True)
    except Exception:
        if report.log is not None and not report.log.get("handle"):
            report.log = None  # else pydarshan's destructor closes a NULL handle and aborts
        raise
    job = report.metadata.get("job", {})
    start = float(job.get("start_time_sec", 0)) + float(job.get("start_time_nsec", 0)) * 1e-9
    processes: dict[int, dict[str, Any]] = {}
    names = report.name_records
    for module, prefix in PREFIXES.items():
        if module not in report.records:
            continue
        frames = report.records[module].to_df()
        counters, fcounters = frames["counters"], frames.get("fcounters")
        frows = fcounters.to_dict("records") if fcounters is not None else [{}] * len(counters)
        for row, frow in zip(counters.to_dict("records"), frows):
            rank = int(row["rank"])
            c = {k[len(prefix) :]: int(v) for k, v in row.items() if k.startswith(prefix)}
            f = {k[len(prefix) :]: float(v) for k, v in frow.items() if k.startswith(prefix)}
            size = None
            if c.get("BYTES_READ") or c.get("BYTES_WRITTEN"):  # an estimate: the last byte touched
                size = max(c.get("MAX_BYTE_READ", 0), c.get("MAX_BYTE_WRITTEN", 0)) + 1
            proc = processes.setdefault(
                rank,
                {
                    "pid": None,
                    "rank": rank,
                    "exe": report.metadata.get("exe", ""),
                    "start_time": start,
                    "records": [],
                },
            )
            proc["records"].append(
                {
                    "module": module,
                    "file": names.get(int(row["id"]), "<unknown>"),
                    "file_size": size,
                    "counters": c,
                    "fcounters": f,
                }
            )
    report._cleanup()
    info = {
        "tool": "darshan",
        "exe": report.metadata.get("exe", ""),
        "nprocs": job.get("nprocs"),
        "run_time": job.get("run_time"),
        "jobid": job.get("jobid"),
        "start_time": start,
        "darshan_version": job.get("metadata", {}).get("lib_ver"),
    }
    return {
        "format": "molsift-iolog",
        "version": 1,
        "job": info,
        "processes": [processes[k] for k in sorted(processes)],
    }


if __name__ == "__main__":
    json.dump(convert(sys.argv[1]), sys.stdout)
