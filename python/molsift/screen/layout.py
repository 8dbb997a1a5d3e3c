"""Where a screening run keeps its files, and the run's plan.

A run writing `results.csv` keeps, until it completes, the result rows in `results.csv.partial`
and the rejects in `results.csv.rejects.tsv.partial`; both are renamed into place at the end.
Its run directory (default `results.csv.run/`) holds:

- `plan.json`   what to do: input, tasks (byte-range slabs with their first line, or record
                chunks of a compressed stream), scorer, columns, buffer sizes; written once.
- `state.json`  the committed state as of the last (re)start: generation, extents of each output
                file and per-task progress (written atomically: temporary name, then rename).
- `journal-g<gen>-w<writer>.jsonl`  one line per committed write, appended by its writer only.
- `timeline/`   per-worker throughput samples and per-writer write events (for `molsift report`).
- `report.json` the totals of the finished run.
- `io.json`     molsift's own I/O counters of the run's last attempt: every file, every process
                (main, workers or ranks), in the I/O log format; `molsift insights` reads it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Dict

from ..iostats import CountedFile, read_file, write_file

PLAN_VERSION = 1


@dataclass(frozen=True)
class RunFiles:
    """Paths of one run."""

    output: str
    run_dir: str

    @property
    def rows_partial(self) -> str:
        return self.output + ".partial"

    @property
    def rejects(self) -> str:
        return self.output + ".rejects.tsv"

    @property
    def rejects_partial(self) -> str:
        return self.rejects + ".partial"

    @property
    def poses(self) -> str:
        return self.output + ".poses"

    @property
    def plan(self) -> str:
        return os.path.join(self.run_dir, "plan.json")

    @property
    def state(self) -> str:
        return os.path.join(self.run_dir, "state.json")

    @property
    def report(self) -> str:
        return os.path.join(self.run_dir, "report.json")

    @property
    def io_log(self) -> str:
        return os.path.join(self.run_dir, "io.json")

    @property
    def timeline_dir(self) -> str:
        return os.path.join(self.run_dir, "timeline")

    def journal(self, gen: int, writer: int) -> str:
        return os.path.join(self.run_dir, f"journal-g{gen}-w{writer}.jsonl")

    def compacted(self, path: str, gen: int) -> str:
        return f"{path}.g{gen}.tmp"


def write_json_atomic(path: str, value: Any) -> None:
    """Writes JSON to a temporary name, syncs it and renames it over `path`."""
    tmp = f"{path}.tmp-{os.getpid()}"
    write_file(tmp, json.dumps(value, indent=1).encode(), sync=True)
    os.replace(tmp, path)
    with CountedFile(os.path.dirname(path) or ".") as d:
        d.fsync()


def read_json(path: str) -> Dict[str, Any]:
    return json.loads(read_file(path))
