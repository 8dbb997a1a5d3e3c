"""Where a screening run keeps its files, and the run's plan.

A run writing `results.csv` keeps, until it completes, the result rows in `results.csv.partial`
and the rejects in `results.csv.rejects.tsv.partial`; both are renamed into place at the end.
Its run directory (default `results.csv.run/`) holds:

- `plan.json`   what to do: input (and the digests of its bytes, `digest.py`), tasks (byte-range
                slabs with their first line, or record chunks of a compressed stream), scorer,
                columns, buffer sizes; written once.
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
import re
import shutil
from dataclasses import dataclass
from typing import Any

from ..iostats import CountedFile, read_file, write_file

PLAN_VERSION = 1


@dataclass(frozen=True)
class RunFiles:
    """Paths of one run."""

    output: str
    run_dir: str

    @classmethod
    def of(cls, output: str, run_dir: str | None = None) -> RunFiles:
        """The run of `output` (made absolute), its directory `run_dir` or OUTPUT.run."""
        output = os.path.abspath(output)
        return cls(output, os.path.abspath(run_dir or output + ".run"))

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

    def remove_run_dir(self) -> None:
        """Removes the run directory, but only if it holds nothing but a run's own files (the
        same rule as a store's `--overwrite`: a directory given as `--run-dir` that holds
        anything else is never deleted)."""
        if self.check_run_dir():
            shutil.rmtree(self.run_dir)

    def check_run_dir(self) -> bool:
        """Whether the run directory exists; NotARunDir when it is not one molsift may remove
        (not a directory, or holding other files)."""
        if not os.path.lexists(self.run_dir):
            return False
        if not os.path.isdir(self.run_dir) or os.path.islink(self.run_dir):
            raise NotARunDir(f"{self.run_dir}: not a directory; choose another --run-dir")
        strangers = [n for n in os.listdir(self.run_dir) if not RUN_FILE.fullmatch(n)]
        if strangers:
            raise NotARunDir(
                f"{self.run_dir}: holds {strangers[0]!r}, which is not a file of a "
                "screening run; molsift never deletes it (choose another --run-dir)"
            )
        return True


class NotARunDir(ValueError):
    """A run directory to replace holds files that are not a run's."""


# every name a run writes into its run directory (see the module docstring)
RUN_FILE = re.compile(
    r"(plan|state|report|io)\.json(\.tmp-\d+)?|timeline|"
    r"journal-g\d+-w\d+\.jsonl(\.g\d+\.tmp)?"
)


def write_json_atomic(path: str, value: Any) -> None:
    """Writes JSON to a temporary name, syncs it and renames it over `path`."""
    tmp = f"{path}.tmp-{os.getpid()}"
    write_file(tmp, json.dumps(value, indent=1).encode(), sync=True)
    os.replace(tmp, path)
    with CountedFile(os.path.dirname(path) or ".") as d:
        d.fsync()


def read_json(path: str) -> dict[str, Any]:
    return json.loads(read_file(path))
