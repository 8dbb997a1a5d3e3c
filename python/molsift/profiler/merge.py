"""Merging the per-process logs the tracer leaves in a directory into one job log (the format
and its writing are `molsift.iolog`'s)."""

from __future__ import annotations

import glob
import os
from typing import Any

from ..iolog import IoLogError, merge_processes, read_json


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
