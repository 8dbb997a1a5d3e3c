"""The commit journal of a screening run, and how a restart turns it into a clean state.

Each writer appends one JSON line per committed write to its own journal, *after* the bytes are
in the output files: the extents it wrote in each file and, per task, how far the input got
(records handled `k`, offset `o` and line `l` of the last one, done flag `d`). A line is written
by one `write` call on an O_APPEND file, so a kill leaves either the whole line or a torn last
line, which is ignored. Bytes reserved but never committed (a write cut by a kill) are holes.

`consolidate` (at every start of a run that has a state) folds the journals into a new state of
the next generation: output files are truncated after their committed end, or compacted (copied
without the holes into a temporary file, renamed after the new state is committed) when a hole
lies between committed extents. The pose file is never compacted (rows address poses by offset);
its holes are unreferenced bytes."""

from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Iterable

from ..iostats import CountedFile, file_size, read_file
from .layout import RunFiles, read_json, write_json_atomic

STATE_VERSION = 1


def new_state(rows_end: int, rejects_end: int) -> dict:
    """The state of a run that has written only its headers."""
    return {
        "version": STATE_VERSION,
        "gen": 0,
        "complete": False,
        "ends": {"rows": rows_end, "rejects": rejects_end, "poses": 0},
        "progress": {},
        "totals": {"rows": 0, "rejects": 0},
        "restarts": 0,
    }


def entry_line(entry: dict) -> bytes:
    return (json.dumps(entry, separators=(",", ":")) + "\n").encode()


def read_entries(paths: Iterable[str]) -> list[dict]:
    """Every committed entry of the given journals; a torn (unparsable) line is skipped."""
    out = []
    for path in paths:
        for raw in read_file(path).splitlines(keepends=True):
            if not raw.endswith(b"\n"):
                continue  # torn by a kill: never committed
            try:
                out.append(json.loads(raw))
            except ValueError:
                continue
    return out


def merge_progress(progress: dict[str, dict], entries: Iterable[dict]) -> dict[str, dict]:
    """Per task, the furthest committed progress (records handled only grow)."""
    merged = {k: dict(v) for k, v in progress.items()}
    for e in entries:
        for task, p in e.get("p", {}).items():
            old = merged.get(task)
            if old is None or (p["k"], p["d"]) > (old["k"], old["d"]):
                merged[task] = p
    return merged


def _extents(base_end: int, entries: list[dict], key: str) -> list[tuple[int, int]]:
    ext = [(0, base_end)] if base_end else []
    ext += [tuple(e[key]) for e in entries if e.get(key) and e[key][1]]
    return sorted(ext)


def _has_holes(extents: list[tuple[int, int]]) -> tuple[bool, int]:
    end = 0
    for off, n in extents:
        if off != end:
            return True, end
        end = off + n
    return False, end


def _compact(path: str, extents: list[tuple[int, int]], tmp: str) -> int:
    """Copies the committed extents of `path`, in order, into `tmp` (synced); returns its size."""
    size = 0
    with CountedFile(path) as src, CountedFile(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC) as dst:
        for off, n in extents:
            at, left = off, n
            while left:
                chunk = src.pread(min(left, 1 << 22), at)
                if not chunk:
                    raise RuntimeError(
                        f"{path}: committed bytes {off}..{off + n} are missing (file truncated?)"
                    )
                dst.write(chunk)
                at, left = at + len(chunk), left - len(chunk)
            size += n
        dst.fsync()
    return size


def load_state(files: RunFiles) -> dict:
    """The state, after finishing any interrupted compaction of a previous restart."""
    state = read_json(files.state)
    gen = state["gen"]
    for path in (files.rows_partial, files.rejects_partial):
        tmp = files.compacted(path, gen)
        if os.path.exists(tmp):
            os.replace(tmp, path)
    _remove_old_journals(files, gen)
    return state


def _remove_old_journals(files: RunFiles, gen: int) -> None:
    for path in glob.glob(os.path.join(files.run_dir, "journal-g*-w*.jsonl")):
        m = re.search(r"journal-g(\d+)-w", os.path.basename(path))
        if m and int(m.group(1)) < gen:
            os.remove(path)


def current_journals(files: RunFiles, gen: int) -> list[str]:
    return sorted(glob.glob(os.path.join(files.run_dir, f"journal-g{gen}-w*.jsonl")))


def consolidate(files: RunFiles) -> dict:
    """Folds the current generation's journals into a new state (next generation) and makes
    the output files hold exactly their committed bytes. Returns the new state."""
    state = load_state(files)
    gen = state["gen"]
    entries = read_entries(current_journals(files, gen))
    new = dict(state, gen=gen + 1, ends=dict(state["ends"]))
    renames = []
    for key, path in (("rows", files.rows_partial), ("rejects", files.rejects_partial)):
        ext = _extents(state["ends"][key], entries, key)
        holes, end = _has_holes(ext)
        if holes:
            tmp = files.compacted(path, gen + 1)
            end = _compact(path, ext, tmp)
            renames.append((tmp, path))
        elif file_size(path) != end:
            with CountedFile(
                path, os.O_WRONLY
            ) as f:  # bytes after the committed end were never committed
                f.truncate(end)
        new["ends"][key] = end
    pose_ends = [e["poses"][0] + e["poses"][1] for e in entries if e.get("poses")]
    new["ends"]["poses"] = max([state["ends"]["poses"], *pose_ends])
    new["progress"] = merge_progress(state["progress"], entries)
    new["totals"] = {
        "rows": state["totals"]["rows"] + sum(e["n"] for e in entries),
        "rejects": state["totals"]["rejects"] + sum(e["r"] for e in entries),
    }
    new["compactions"] = state.get("compactions", 0) + (1 if renames else 0)
    write_json_atomic(files.state, new)  # the commit point
    for tmp, path in renames:
        os.replace(tmp, path)
    _remove_old_journals(files, gen + 1)
    return new
