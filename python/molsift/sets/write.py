"""Writing a store set (`molsift ingest ... --shards K`) from ingest's parts and their sorted
runs (`_core.PartRuns`, opened unmerged), or from a version-1 store. The store order is cut
into K consecutive ranges, never between equal canonical SMILES (a shard may be empty).

From ingest's parts nothing merges the whole library: the root finds the K - 1 cuts by exact
selection over the runs (`PartRuns.set_cuts`: binary searches, nothing per molecule), then
each shard merges its own slice of every run (`_core.merge_set_shard`, with `--dedupe` there:
equal SMILES are in one shard), the root gathers the counts and the molecules left out (the
set's `duplicates.tsv`), and each shard is written as a complete one store
(`molsift_store::v2::write_shard`, its molecules read from the parts where they lie), its
substructure index from the rows and graph records ingest's workers computed (each shard's
writer transposes its own molecules' rows: `substructure.build.PatternParts.for_shards`) and
its analog index built. From a version-1 store the
root sorts it once and cuts the order (`_core.set_plan`); its substructure index is carried
over where it has one, computed otherwise. Each merge and each shard is a task of the
ingest's workers or MPI ranks (each rank takes its share, in parallel); the set's rejects,
`--dedupe` list and `set.json`, last, are written on the root."""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

import numpy as np

from .. import _core
from .manifest import FORMAT, VERSION, file_entry, shard_name, write_manifest

#: the most shards a set may have (a name has four digits)
MAX_SHARDS = 9999
#: the plan's store order, beside the shards while they are written (removed before set.json)
ORDER_FILE = ".order.u32"
#: a shard's merged molecules (positions among the parts' molecules, u64) until it is written
POSITIONS_FILE = ".shard-{:04d}.pos.u64"


def check_shards(shards) -> int:
    if not isinstance(shards, int) or isinstance(shards, bool) or not 1 <= shards <= MAX_SHARDS:
        raise ValueError(f"shards must be an integer from 1 to {MAX_SHARDS}, not {shards!r}")
    return shards


def write_set(
    src: str,
    dst: str,
    shards: int,
    *,
    threads: int = 1,
    workers: int | None = None,
    pattern: bool = True,
    analogs: bool = True,
    progress: bool | None = None,
    executor: Any = None,
    pattern_parts: Any = None,
    budget: Any = None,
    scratch: Any = None,
) -> dict | None:
    """Writes at `dst` (a new path in a work directory) the set of `shards` shards of `src`
    (ingest's `_core.PartRuns`, or the path of a version-1 store; given on the root, None on
    other MPI ranks); returns its manifest (on the root; None on other MPI
    ranks). The shards are written by `executor` (every rank calls this under MPI; default: up
    to `workers` local processes, one shard each at a time), the shards written at once sharing
    `threads` threads. Ingest's shards take their substructure indexes from its workers' rows
    (`pattern_parts`, given on the root: a `substructure.build.PatternParts`, or a function
    of the positions `--dedupe` left out that makes one once the shards' merges found them;
    what it made it removes), their write buffers cut from `budget` (a `budget.Budget`:
    ingest's --memory, shared by the shards written at once on one machine). Ingest's parts on
    several MPI ranks are exchanged as slices (`sets.exchange`), kept in `scratch` (default:
    beside the set). The caller moves `dst` into place."""
    from ..parallel import choose_executor

    check_shards(shards)
    if executor is not None and executor.name == "mpi" and executor.size > 1:
        # ingest's parts on several ranks: the ranks send each other their records
        by_parts = executor.broadcast(isinstance(src, _core.PartRuns) if executor.is_root else None)
        if by_parts:
            from .exchange import write_set_exchanged

            return write_set_exchanged(
                src, dst, shards, executor, threads=threads, pattern=pattern, analogs=analogs,
                budget=budget, scratch=scratch,
            )  # fmt: skip
    own = executor is None
    if own:
        executor = choose_executor(min(workers or threads, shards), use_mpi=False)
    try:
        return _write(
            src, dst, shards, threads, workers, pattern, analogs, progress, executor,
            pattern_parts, budget,
        )  # fmt: skip
    finally:
        if own:
            executor.close()


def _write(src, dst, shards, threads, workers, pattern, analogs, progress, executor, parts, budget):
    from ..progress import Progress

    plan: Any = None
    if executor.is_root:
        plan = _plan(src, dst, shards, pattern and parts is None)
    plan = executor.broadcast(plan)
    if isinstance(plan, Exception):
        raise plan
    show = progress if executor.name != "mpi" else False
    made = None  # the PatternParts made here from the merges' molecules left out
    if "cuts" in plan:  # ingest's parts: each shard merges its own slice of every run
        plan = _merge_shards(plan, dst, shards, executor, show)
        if executor.is_root and callable(parts):
            parts = made = parts(plan["source"]["dropped"])
    if executor.is_root:
        plan["parts"] = None if callable(parts) else parts
    plan["parts"] = executor.broadcast(plan["parts"] if executor.is_root else None)
    bounds = plan["bounds"]
    alone = executor.size == 1  # then `workers` build each shard's indexes
    per, buffers = shard_share(executor, shards, threads, budget)
    tasks = (
        {"src": plan["source"], "dst": dst, "index": s, "shards": shards, "first": bounds[s],
         "end": bounds[s + 1], "pattern": pattern, "carry": plan["carry"], "analogs": analogs,
         "parts": plan["parts"], "buffers": buffers,
         "threads": per, "workers": (workers or threads) if alone else per}
        for s in range(shards)
    )  # fmt: skip
    try:
        with Progress("shards", total=shards, unit="shard", enabled=show) as bar:
            entries = executor.map_ordered(
                write_shard_task, tasks, on_result=lambda _: bar.update(1)
            )
    finally:
        if made is not None:
            made.remove()
    if not executor.is_root:
        return None
    if "cuts" not in plan:
        os.unlink(os.path.join(dst, ORDER_FILE))
    return _finish(src, dst, entries, plan.get("counts"))


def shard_share(executor, shards: int, threads: int, budget: Any) -> tuple[int, dict]:
    """A shard writer's threads and write buffers: the `threads` of this machine shared by the
    shards written at once (one process writing every shard uses them all; a set of fewer
    shards than workers or ranks gives each writer more), and its share of `budget` (the
    shards written at once on one machine share its memory: MPI ranks on one node)."""
    per = max(1, threads // min(shards, executor.size))
    at_once = getattr(executor, "ranks_per_node", executor.size)
    mine = None if budget is None else budget.split(min(shards, at_once))
    buffers = (
        {}
        if mine is None
        else {"plane_budget": mine.plane_budget, "window_bytes": mine.window_bytes}
    )
    return per, buffers


def _plan(src: Any, dst: str, shards: int, pattern: bool) -> dict | Exception:
    """Root only. From ingest's parts: the set's cuts (`PartRuns.set_cuts`), its rejects, and
    what reopens the parts (`source`). From a version-1 store: the bounds, the store order
    saved beside the shards (every task reads its range of it) and whether the store's
    substructure index can be carried. Errors are returned (and broadcast) rather than raised,
    so every rank raises the same error."""
    from ..store import pattern_index_carries

    try:
        os.makedirs(dst)
        if isinstance(src, _core.PartRuns):
            cuts = src.set_cuts(shards)
            src.write_rejects(os.path.join(dst, "rejects.tsv"))
            src.release()  # the shards' merges and writers map the parts themselves
            source: Any = {
                "parts": src.parts(), "fingerprint": src.fingerprint_json(),
                "provenance": src.provenance_json(), "dedupe": src.dedupe,
            }  # fmt: skip
            counts = json.loads(src.counts_json())
            return {"cuts": cuts, "carry": False, "source": source, "counts": counts}
        bounds, raw = _core.set_plan(src, dst, shards)
        with open(os.path.join(dst, ORDER_FILE), "wb") as fh:
            fh.write(raw)
        return {"bounds": bounds, "carry": pattern and pattern_index_carries(src), "source": src}
    except Exception as exc:  # handed to every rank
        return exc


def merge_shard_task(task: dict) -> dict:
    """One shard's merge of its slice of every run: its molecules (positions among all the
    parts' molecules) written beside the shards; returns its count, its duplicates and the
    molecules it left out (position, the first of its SMILES' position, the first's index)."""
    src, s = task["source"], task["index"]
    n, duplicates, dropped = _core.merge_set_shard(
        src["parts"], src["fingerprint"], task["cuts"], s, src["dedupe"],
        os.path.join(task["dst"], POSITIONS_FILE.format(s)),
    )  # fmt: skip
    return {"molecules": n, "duplicates": duplicates, "dropped": dropped}


def _merge_shards(plan: dict, dst: str, shards: int, executor, show) -> dict:
    """Every shard's merge as a task of the workers or ranks; then, on the root, the bounds
    (set positions), the molecules left out (sorted, into `source` for the writers), the set's
    `duplicates.tsv` and counts; the plan with them on every rank."""
    from ..progress import Progress

    tasks = (
        {"source": plan["source"], "dst": dst, "index": s, "cuts": plan["cuts"]}
        for s in range(shards)
    )
    with Progress("shards merged", total=shards, unit="shard", enabled=show) as bar:
        merged = executor.map_ordered(merge_shard_task, tasks, on_result=lambda _: bar.update(1))
    found: Any = None
    if executor.is_root:
        try:
            found = _gather_merges(plan, dst, merged)
        except Exception as exc:  # handed to every rank
            found = exc
    found = executor.broadcast(found)
    if isinstance(found, Exception):
        raise found
    return found


def merged_plan(counts: dict, merged: list[dict]) -> tuple[list[int], list[list], dict]:
    """From the shards' merges (in shard order) and the parts' `counts`: the set's bounds, each
    shard's rows of `duplicates.tsv` (position left out, its first's position, the first's set
    position; ascending) and the set's counts (duplicates, molecules less those left out)."""
    bounds = [0]
    for m in merged:
        bounds.append(bounds[-1] + m["molecules"])
    rows = [
        sorted((pos, first, bounds[s] + index) for pos, first, index in m["dropped"])
        for s, m in enumerate(merged)
    ]
    left_out = sum(len(r) for r in rows)
    counts = dict(counts)
    counts["duplicates"] = sum(m["duplicates"] for m in merged)
    counts["molecules"] -= left_out
    if left_out:  # as a manifest writes it: absent when none was left out
        counts["dropped"] = left_out
    return bounds, rows, counts


def _gather_merges(plan: dict, dst: str, merged: list[dict]) -> dict:
    """Root only: the plan completed from the shards' merges."""
    bounds, per_shard, counts = merged_plan(plan["counts"], merged)
    rows = sorted(r for shard in per_shard for r in shard)
    src = dict(plan["source"], dropped=[r[0] for r in rows])
    if rows:
        _core.write_set_duplicates(
            src["parts"], src["fingerprint"], rows, os.path.join(dst, "duplicates.tsv")
        )
    return {**plan, "bounds": bounds, "source": src, "counts": counts}


def write_shard_task(task: dict) -> dict:
    """One shard: its one store, its substructure index and its analog index; returns its
    entry in `set.json` (name, offset, molecules, first and last SMILES, manifest checksum)."""
    from ..store import open_core

    dst, s, first, end = task["dst"], task["index"], task["first"], task["end"]
    path = os.path.join(dst, shard_name(s))
    if isinstance(task["src"], dict):  # ingest's parts: the shard's merge, as input ranks
        src = task["src"]
        merged = os.path.join(dst, POSITIONS_FILE.format(s))
        positions = np.fromfile(merged, dtype="<u8")
        dropped = np.asarray(src["dropped"], dtype=np.uint64)
        ranks = positions - np.searchsorted(dropped, positions).astype(np.uint64)
        source = ranks.astype("<u4").tobytes()
        del positions, ranks
        os.unlink(merged)
        _core.write_set_shard_from_parts(
            src["parts"], src["fingerprint"], src["dropped"], src["provenance"], path, s,
            task["shards"], first, source, threads=task["threads"],
            plane_budget=task["buffers"].get("plane_budget"), total=src.get("total"),
        )  # fmt: skip
    else:
        order = np.memmap(os.path.join(dst, ORDER_FILE), dtype="<u4", mode="r")
        source = np.ascontiguousarray(order[first:end]).tobytes()
        del order
        _core.write_set_shard(
            task["src"], path, s, task["shards"], first, source, threads=task["threads"]
        )
    workers = task["workers"]
    if task["pattern"] and task["parts"] is not None:
        task["parts"].write_index(
            path, threads=workers, source=source, window_bytes=task["buffers"].get("window_bytes")
        )
    elif task["pattern"] and task["carry"]:
        _core.carry_pattern_index(task["src"], path, threads=workers, source=source)
    elif task["pattern"]:
        from ..substructure.build import build_pattern_index

        build_pattern_index(path, workers=workers, progress=False)
    if task["analogs"]:
        from ..analogs.search import index_analogs

        index_analogs(path, workers)
    core = open_core(path)
    n = len(core)
    return {
        "name": shard_name(s),
        "offset": first,
        "molecules": n,
        "first_smiles": core.smiles(0) if n else None,
        "last_smiles": core.smiles(n - 1) if n else None,
        "manifest_checksum": json.loads(core.manifest_json())["checksum"],
    }


def _finish(src: Any, dst: str, entries: list[dict], counts: dict | None) -> dict:
    """Root only: the set's rejects and `set.json` (written last); `counts` those the shards'
    merges completed (ingest's parts)."""
    from ..store import open_core

    if isinstance(src, _core.PartRuns):  # its rejects were written with the plan
        fingerprint = json.loads(src.fingerprint_json())
        provenance = json.loads(src.provenance_json())
        assert counts is not None
    else:
        staging = json.loads(open_core(src).manifest_json())
        shutil.copyfile(os.path.join(src, "rejects.tsv"), os.path.join(dst, "rejects.tsv"))
        fingerprint, counts = staging["fingerprint"], staging["counts"]
        provenance = dict(staging.get("provenance") or {})
        provenance.pop("staging", None)
    return finish_set(dst, entries, counts, fingerprint, provenance)


def finish_set(
    dst: str, entries: list[dict], counts: dict, fingerprint: dict, provenance: dict
) -> dict:
    """Root only: the set's `set.json` (written last) over the shards' `entries`, its rejects
    and duplicates lists (in `dst` already) listed with their checksums."""
    files = {name: file_entry(os.path.join(dst, name))
             for name in ("rejects.tsv", "duplicates.tsv")
             if os.path.exists(os.path.join(dst, name))}  # fmt: skip
    manifest = {
        "format": FORMAT,
        "format_version": VERSION,
        "created_by": f"molsift {_core.__version__}",
        "fingerprint": fingerprint,
        "counts": counts,
        "provenance": provenance,
        "shards": entries,
        "files": files,
    }
    write_manifest(dst, manifest)
    return manifest
