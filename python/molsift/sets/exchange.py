"""A store set written by MPI ranks that send each other their records (`mpirun -n R molsift
ingest INPUT -o SET --shards K`): no rank reads the records of another rank's parts.

Ingest's ranks each wrote their own parts (task `i` on rank `i % R`), each with its run. Then:

1. **The cuts**: the exact selection of `molsift_store::cuts`, run by the ranks together. Each
   round every rank gives the middles of its own runs' windows (`PartRuns.cut_middles`,
   gathered on every rank), every rank takes the same pivot (`_core.cut_pivot`), counts its own
   runs below and up to it (`PartRuns.cut_split`) and the counts are summed. The cuts are those
   one process finds over every run: the set is the same for any rank count, file for file.
2. **The slices**: each rank cuts each of its parts into one slice per shard
   (`_core.write_part_slices`: the molecules, their run and their positions in the library),
   with the slice's screening rows and graph records.
3. **One all-to-all exchange**, in `R - 1` rounds of pairs (round `k`: to rank `+ k`, from rank
   `- k`), each slice's files streamed in chunks of at most `CHUNK` bytes; a rank's parts and
   the slices it sent are removed once the exchange is over. A rank keeps its slices in a
   directory of its own, in the set's work directory or in `--scratch` (a node-local disk:
   then nothing of the exchange touches the shared file system).
4. **The shards**: shard `s` is merged and written on rank `s % R` from the slices it holds
   (`PartRuns` of slices: positions, input ranks, ties and duplicates are the library's). The
   root gathers the counts and the molecules `--dedupe` left out; each rank writes its shards'
   rows of `duplicates.tsv`, which the root merges in input order with `set.json`. The set's
   provenance says what the exchange cost (`exchange`: bytes sent between ranks, each phase's
   longest time on a rank).

The root reads every part's manifest and rejects when it opens the parts (`rejects.tsv` is the
set's), never their records. A failure on any rank ends the job (`parallel.mpi.abort_job`):
the ranks are in collectives together."""

from __future__ import annotations

import heapq
import json
import os
import shutil
import tempfile
import time
from typing import Any

import numpy as np

from .. import _core
from .write import POSITIONS_FILE, finish_set, merged_plan, shard_share, write_shard_task

#: the most bytes of a file sent in one message of the exchange
CHUNK = 16 << 20
#: the exchange's messages (a tag of its own on the executor's communicator)
TAG = 7301
#: where a rank's slices (sent and received) lie while the set is written, without a scratch
#: directory: `DST/.exchange/rR`
EXCHANGE_DIR = ".exchange"


def write_set_exchanged(
    src: Any, dst: str, shards: int, executor, *, threads: int, pattern: bool, analogs: bool,
    budget: Any = None, scratch: Any = None,
) -> dict | None:  # fmt: skip
    """Writes at `dst` the set of `shards` shards of ingest's parts (`src`, a `_core.PartRuns`
    opened unmerged on the root, None on the other ranks) on the ranks of `executor` (an
    `MPIExecutor`), each rank's slices in a directory of its own in `scratch` (an existing
    directory on each node; default: `DST/.exchange`); returns the set's manifest on the root,
    None elsewhere."""
    meta = _open(src, dst) if executor.is_root else None
    meta = executor.broadcast(meta)
    if isinstance(meta, Exception):
        raise meta
    try:
        return _write(meta, dst, shards, executor, threads, pattern, analogs, budget, scratch)
    except BaseException:
        from ..parallel.mpi import abort_job

        abort_job(comm=executor.comm)
        raise


def _open(src: Any, dst: str) -> dict | Exception:
    """Root only: the set's directory and rejects, and what every rank needs of the parts."""
    try:
        os.makedirs(dst)
        src.write_rejects(os.path.join(dst, "rejects.tsv"))
        meta = {
            "parts": [os.fspath(p) for p in src.parts()], "fingerprint": src.fingerprint_json(),
            "provenance": src.provenance_json(), "dedupe": src.dedupe,
            "counts": json.loads(src.counts_json()),
        }  # fmt: skip
        src.release()
        return meta
    except Exception as exc:  # handed to every rank
        return exc


def _write(meta, dst, shards, executor, threads, pattern, analogs, budget, scratch):
    comm, rank, size = executor.comm, executor.rank, executor.size
    clock = _Clock()
    names: list[str] = meta["parts"]
    mine = [i for i in range(len(names)) if i % size == rank]
    spec = json.loads(meta["fingerprint"])
    runs = None  # this rank's parts, opened unmerged (none on a rank without parts)
    if mine:
        runs = _core.PartRuns(
            [names[i] for i in mine], spec["kind"], spec["bits"], json.dumps(spec["params"]),
            merge=False,
        )  # fmt: skip
    lens = runs.check_runs() if runs is not None else []
    sizes = [0] * len(names)
    for got in comm.allgather(dict(zip(mine, lens))):
        for i, n in got.items():
            sizes[i] = n
    bases = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).tolist()
    total = int(bases[-1])
    cuts = select_cuts(runs, lens, total, shards, comm)
    del runs
    clock.lap("cuts")

    # 2. this rank's parts cut into slices
    if scratch is None:
        here = os.path.join(dst, EXCHANGE_DIR, f"r{rank}")
        os.makedirs(here, exist_ok=True)
    else:  # a directory of this rank's own (other jobs and ranks may share the node's)
        here = tempfile.mkdtemp(prefix=f"molsift-exchange-r{rank}-", dir=scratch)
    slices: dict[int, list[tuple[int, str]]] = {s: [] for s in range(shards)}
    for i in mine:
        outs = [os.path.join(here, _slice_name(i, s)) for s in range(shards)]
        taken = _core.write_part_slices(names[i], bases[i], cuts, outs)
        for s, t in enumerate(taken):
            if t:
                if pattern:
                    _slice_pattern_files(names[i], outs[s], np.frombuffer(t, dtype="<u4"))
                slices[s].append((i, outs[s]))

    clock.lap("slices")

    # 3. the exchange: shard s's slices to rank s % size
    outgoing = {
        dest: [path for s, got in slices.items() if s % size == dest for _, path in got]
        for dest in range(size)
        if dest != rank
    }
    sent = sum(_slice_bytes(path) for paths in outgoing.values() for path in paths)
    received = exchange_files(comm, outgoing, here)
    for dest in outgoing:
        for path in outgoing[dest]:
            _remove_slice(path)
    from ..ingestion import remove_parts

    remove_parts([names[i] for i in mine])  # their records are in the slices now
    owned = [s for s in range(shards) if s % size == rank]
    held = {s: list(slices[s]) for s in owned}  # (part, slice), then sorted: task order
    for name in received:
        i, s = _parse_slice_name(name)
        held[s].append((i, os.path.join(here, name)))
    held = {s: [p for _, p in sorted(got)] for s, got in held.items()}
    clock.lap("exchange")

    # 4. the shards' merges, gathered; their duplicates and writes
    merges = {}
    for s in owned:
        n, dups, dropped = _core.merge_set_shard(
            held[s], meta["fingerprint"], cuts, s, meta["dedupe"],
            os.path.join(dst, POSITIONS_FILE.format(s)), total=total,
        )  # fmt: skip
        merges[s] = {"molecules": n, "duplicates": dups, "dropped": dropped}
    plan = None
    gathered = comm.gather(merges, root=0)
    if executor.is_root:
        every = {s: m for part in gathered for s, m in part.items()}
        plan = _plan(meta, [every[s] for s in range(shards)])
    plan = executor.broadcast(plan)
    clock.lap("merges")
    dropped = plan["dropped"]
    per, buffers = shard_share(executor, shards, threads, budget)
    entries = {}
    for s in owned:
        rows = plan["rows"][s]
        if rows:
            _core.write_set_duplicates(
                held[s], meta["fingerprint"], rows, _duplicates_part(dst, s), total=total
            )
        pattern_parts = None
        if pattern:
            from ..substructure.build import PatternParts

            pattern_parts = PatternParts.for_shards(held[s], dropped, total=total)
        source = {
            "parts": held[s], "fingerprint": meta["fingerprint"], "dropped": dropped,
            "provenance": meta["provenance"], "total": total,
        }  # fmt: skip
        task = {
            "src": source, "dst": dst, "index": s, "shards": shards, "first": plan["bounds"][s],
            "end": plan["bounds"][s + 1], "pattern": pattern, "carry": False,
            "analogs": analogs, "parts": pattern_parts, "buffers": buffers, "threads": per,
            "workers": per,
        }  # fmt: skip
        entries[s] = write_shard_task(task)
        for path in held[s]:
            _remove_slice(path)
    clock.lap("shards")
    shutil.rmtree(here, ignore_errors=True)
    gathered = comm.gather((entries, sent, clock.laps), root=0)
    comm.Barrier()
    if not executor.is_root:
        return None
    every = {s: e for part, _, _ in gathered for s, e in part.items()}
    provenance = json.loads(meta["provenance"])
    # what the exchange cost: bytes sent between ranks, each phase's longest time on a rank
    provenance["exchange"] = {
        "ranks": size,
        "bytes_sent": sum(g[1] for g in gathered),
        "seconds": {k: round(max(g[2][k] for g in gathered), 3) for k in clock.laps},
    }
    shutil.rmtree(os.path.join(dst, EXCHANGE_DIR), ignore_errors=True)
    _merge_duplicates(dst, plan, shards)
    return finish_set(
        dst, [every[s] for s in range(shards)], plan["counts"], json.loads(meta["fingerprint"]),
        provenance,
    )  # fmt: skip


def select_cuts(runs: Any, lens: list[int], total: int, shards: int, comm) -> list:
    """The set's `shards - 1` inner cuts (as `PartRuns.set_cuts` finds them over every run),
    selected by the ranks together, each over its own runs (`runs`, None for a rank without
    parts; `lens` their lengths) of the parts' `total` molecules: for boundary `s`, the SMILES
    at rank `floor(total * s / shards) - 1`, None when that is below 0."""
    cuts: list[bytes | None] = []
    for s in range(1, shards):
        r = total * s // shards
        if r == 0:
            cuts.append(None)
            continue
        r -= 1
        lo, hi = [0] * len(lens), list(lens)
        while True:
            mids = runs.cut_middles(lo, hi) if runs is not None else []
            pivot = _core.cut_pivot([m for got in comm.allgather(mids) for m in got])
            if pivot is None:
                raise _core.StoreError(
                    f"rank {r} is past the parts' {total} molecules, or a run is not in "
                    "SMILES order"
                )
            below, upto = runs.cut_split(lo, hi, pivot) if runs is not None else ([], [])
            less, at_most = np.sum(comm.allgather((sum(below), sum(upto))), axis=0).tolist()
            if r < less:
                hi = below
            elif r >= at_most:
                lo = upto
            else:
                cuts.append(pivot)
                break
    return cuts


def exchange_files(comm, outgoing: dict[int, list[str]], here: str) -> list[str]:
    """Sends each path of `outgoing[dest]` (a slice: its directory's files and the files
    beside it, `PATH.*`) to rank `dest`, and writes what the other ranks send into `here`:
    one all-to-all in `size - 1` rounds of pairs. Returns the names (in `here`) of the slices
    received."""
    rank, size = comm.Get_rank(), comm.Get_size()
    received: set[str] = set()
    for k in range(1, size):
        dest, source = (rank + k) % size, (rank - k) % size
        messages = _messages(outgoing.get(dest, []))
        sending, receiving = True, True
        out = None
        while sending or receiving:
            req = None
            if sending:
                msg = next(messages, None)
                sending = msg is not None
                req = comm.isend(msg, dest=dest, tag=TAG)
            if receiving:
                got = comm.recv(source=source, tag=TAG)
                if got is None:
                    receiving = False
                else:
                    name, first, data = got
                    path = os.path.join(here, name)
                    if first:
                        if out is not None:
                            out.close()
                        os.makedirs(os.path.dirname(path), exist_ok=True)
                        out = open(path, "wb")  # noqa: SIM115 (closed at the next file or the end)
                        received.add(name.split(os.sep)[0].split(".")[0])
                    out.write(data)
            if req is not None:
                req.wait()
        if out is not None:
            out.close()
            out = None
    return sorted(received)


def _messages(paths: list[str]):
    """Each file of the slices at `paths` as messages (name relative to the slice's directory's
    parent, whether it is the file's first, bytes), at most `CHUNK` bytes each."""
    for path in paths:
        top = os.path.dirname(path)
        for f in _slice_files(path):
            name = os.path.relpath(f, top)
            with open(f, "rb") as fh:
                first = True
                while True:
                    data = fh.read(CHUNK)
                    if data or first:
                        yield (name, first, data)
                    first = False
                    if len(data) < CHUNK:
                        break


def _plan(meta: dict, merged: list[dict]) -> dict:
    """Root only: the bounds, each shard's rows of `duplicates.tsv`, the molecules left out
    (sorted positions) and the set's counts, from the shards' merges (`merged_plan`)."""
    bounds, rows, counts = merged_plan(meta["counts"], merged)
    dropped = sorted(r[0] for shard in rows for r in shard)
    return {"bounds": bounds, "rows": rows, "dropped": dropped, "counts": counts}


def _merge_duplicates(dst: str, plan: dict, shards: int) -> None:
    """Root only: the set's `duplicates.tsv`, the shards' rows merged in input order."""
    rows = plan["rows"]
    if not any(rows):
        return
    streams = []
    header = None
    for s in range(shards):
        if rows[s]:
            with open(_duplicates_part(dst, s), "rb") as fh:
                lines = fh.read().splitlines(keepends=True)
            header = lines[0]
            streams.append([(r[0], line) for r, line in zip(rows[s], lines[1:], strict=True)])
            os.unlink(_duplicates_part(dst, s))
    tmp = os.path.join(dst, "duplicates.tsv.tmp")
    with open(tmp, "wb") as out:
        out.write(header or b"")
        for _, line in heapq.merge(*streams):
            out.write(line)
    os.replace(tmp, os.path.join(dst, "duplicates.tsv"))


def _duplicates_part(dst: str, s: int) -> str:
    return os.path.join(dst, f".duplicates-{s:04d}.tsv")


def _slice_name(part: int, shard: int) -> str:
    return f"p{part:08d}-s{shard:04d}"


def _parse_slice_name(name: str) -> tuple[int, int]:
    p, s = name.split("-")
    return int(p[1:]), int(s[1:])


def _slice_pattern_files(part: str, out: str, taken: np.ndarray) -> None:
    """The screening rows and graph records of the part's molecules `taken` (places,
    ascending) written beside the slice at `out` (`substructure.build.PART_FILES`)."""
    from ..substructure.build import read_part_files

    rows, lengths = read_part_files(part)
    records = np.fromfile(part + ".grec.bin", dtype=np.uint8)
    ends = np.cumsum(lengths, dtype=np.int64)
    idx = taken.astype(np.int64)
    mine = lengths[idx].astype(np.int64)
    starts = ends[idx] - mine
    at = np.cumsum(mine) - mine  # where each record starts in the slice's file
    gather = np.repeat(starts - at, mine) + np.arange(int(mine.sum()), dtype=np.int64)
    rows[idx].tofile(out + ".rows.u64")
    lengths[idx].tofile(out + ".glen.u32")
    records[gather].tofile(out + ".grec.bin")


class _Clock:
    """Each phase's seconds on this rank."""

    def __init__(self):
        self.laps: dict[str, float] = {}
        self.last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = now - self.last
        self.last = now


def _slice_files(path: str) -> list[str]:
    """A slice's files: its directory's (a version-1 part store), then those beside it (its
    run, its positions, its rows and graph records)."""
    from ..substructure.build import PART_FILES

    files = [os.path.join(path, f) for f in sorted(os.listdir(path))]
    beside = [path + ext for ext in (_core.PART_RUN_EXT, _core.SLICE_HELD_EXT, *PART_FILES)]
    return files + [f for f in beside if os.path.exists(f)]


def _slice_bytes(path: str) -> int:
    return sum(os.path.getsize(f) for f in _slice_files(path))


def _remove_slice(path: str) -> None:
    for f in _slice_files(path)[::-1]:
        os.unlink(f)
    os.rmdir(path)
