"""Merging: the per-process logs the tracer leaves in a directory (or the process records of a
molsift run) become one job log (same format, with a "job" object), written atomically."""

from __future__ import annotations

import glob
import json
import os
from typing import Any

from .log import FORMAT, VERSION, IoLogError, read_json


def process_logs(directory: str) -> list[str]:
    """The finished per-process logs in DIRECTORY (half-written *.tmp files are left out)."""
    return sorted(glob.glob(os.path.join(directory, "proc-*.json")))


def merge_process_logs(paths: list[str], job: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """One job log from per-process logs, processes in start order; unreadable logs are skipped
    and returned as problems (a process killed by SIGKILL leaves none)."""
    processes, problems = [], []
    for path in paths:
        try:
            processes.extend(read_json(path)["processes"])
        except IoLogError as exc:
            problems.append(str(exc))
    return merge_processes(processes, job), problems


def merge_processes(processes: list[dict[str, Any]], job: dict[str, Any]) -> dict[str, Any]:
    """One job log from process objects (the tracer's, or molsift's own built-in counters'),
    in start order."""
    processes = sorted(processes, key=lambda p: (p.get("start_time", 0.0), p.get("pid") or 0))
    job = dict(job, nprocs=len(processes))
    return {"format": FORMAT, "version": VERSION, "job": job, "processes": processes}


def write_log(doc: dict[str, Any], path: str) -> None:
    """Write a log as JSON through a temporary file, so a reader never sees half of it."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, separators=(",", ":"))
        fh.write("\n")
    os.replace(tmp, path)
