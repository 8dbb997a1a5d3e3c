"""Benchmark (issue 43): a library searched as one store in one process, and as store sets of
1, 2, 4 and 8 shards searched by 1, 2 and 4 MPI ranks (`mpirun -n R`; on a machine of C cores,
R > C is oversubscribed and the table says so). Per cell, the median ms/query of similarity at
t=0.7 and top-10, substructure and analogs (top-100 within 3 edits), the bytes each rank sent per
query in the merges (the top-k reduction: goal at most k records of 16 bytes per rank), and the
efficiency against the one store in one process: (one-store time / set time) / ranks (goal >= 90%
at 2 ranks on 2 cores). Every answer of every cell is checked equal to the one store's (a cell
whose answers differ fails the run). Each kind is timed twice: query by query (a barrier before
each, the median: the latency of one query) and as one batch of all its queries (ms/query =
wall / queries, the median of `--batch-repeats` runs of the batch after `--batch-warmups`
untimed ones, on both sides: the steady throughput of `--queries FILE`, where the ranks share
each query's parsing and fingerprint and merge the batch's top-k lists in one reduction).

The stores are written from one version-1 staging ingest of the library (parsed once): the one
store (`store.write_complete`) and each set (`sets.write.write_set`), as `molsift ingest` and
`molsift ingest --shards K` write them.

    .venv/bin/python benches/scale_out.py --library moses=../shared/data/moses_train.csv.gz \\
        --workdir /work/bench/scaleout [--shards 1,2,4,8] [--ranks 1,2,4] [--rounds 3] \\
        [--kinds t07,top10,substructure,analogs] [--json out.json]

`--kinds` times only some kinds (a large library's grid in parts: the table shows `-` for the
others).

A rank's loop (`--rank-loop SET OUT.json`) runs under mpirun: every rank takes the queries, a
barrier before each query, rank 0 times it (the answer is complete on rank 0 when the merge
returns: the slowest rank is in it).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UNLIKE = ROOT / "benches" / "data" / "moses_test_scaffolds.100.smi"
SUBSTRUCTURE = ROOT / "tests" / "data" / "substructure" / "queries.tsv"
KINDS = ("t07", "top10", "substructure", "analogs")


def queries(n_sim: int, n_sub: int, n_analogs: int, sub_spread: bool = False) -> dict:
    """The queries: the first `n_sim` / `n_analogs` unlike molecules, and `n_sub` substructure
    test queries, the first ones or (`sub_spread`) spread evenly over the whole list (its
    first are functional-group SMARTS that pass most of a library's screen: seconds each at
    10 M molecules)."""
    unlike = [ln.split()[0] for ln in UNLIKE.read_text().splitlines() if ln.strip()]
    with open(SUBSTRUCTURE) as fh:
        subs = [(r["query"], r["kind"] == "smarts") for r in csv.DictReader(fh, delimiter="\t")]
    if sub_spread and n_sub:
        subs = subs[:: max(1, len(subs) // n_sub)]
    return {"sim": unlike[:n_sim], "sub": subs[:n_sub], "analogs": unlike[:n_analogs]}


def run_kind(store, kind: str, qs: dict, barrier=None) -> tuple[list[float], list]:
    """ms per query of one kind, and the answers (rank 0's; empty elsewhere)."""
    times, answers = [], []
    items = qs["sub"] if kind == "substructure" else qs["analogs" if kind == "analogs" else "sim"]
    for q in items:
        if barrier is not None:
            barrier()
        t = time.perf_counter()
        if kind == "t07":
            h = store.search(q, threshold=0.7)
            ans = (h.indices.tolist(), h.scores.tolist())
        elif kind == "top10":
            h = store.search(q, k=10)
            ans = (h.indices.tolist(), h.scores.tolist())
        elif kind == "substructure":
            ans = store.substructure(q[0], smarts=q[1], workers=1).tolist()
        else:
            a = store.analogs(q, max_dist=3, k=100)
            ans = (a["position"].tolist(), a["distance"].tolist(), a["tanimoto"].tolist())
        times.append((time.perf_counter() - t) * 1000)
        answers.append(ans)
    return times, answers


def run_batch(
    store, kind: str, qs: dict, barrier=None, repeats: int = 1, warmups: int = 0
) -> tuple[float, list]:
    """ms per query of one kind's whole batch, as the verbs run `--queries FILE`: the median
    of `repeats` runs of the batch after `warmups` untimed ones (each run's answers must
    equal the first's); and the answers. A process's first batches are slower (its first
    touches of the mapped files: about 2x, then 10-20% for a few more); the one store's
    long-lived process warms over the rounds, each cell's ranks start afresh, so both sides
    take the same untimed runs first."""
    for _ in range(warmups):
        _one_batch(store, kind, qs, barrier)
    runs = [_one_batch(store, kind, qs, barrier) for _ in range(max(1, repeats))]
    if any(answers != runs[0][1] for _, answers in runs):
        raise SystemExit(f"{kind}: a batch's answers changed between runs")
    return statistics.median(ms for ms, _ in runs), runs[0][1]


def _one_batch(store, kind: str, qs: dict, barrier=None) -> tuple[float, list]:
    """One run of a kind's batch: similarity by `search_batch`, substructure queries parsed by
    `sets.mpi.prepared` (the ranks share the parsing under MPI) and searched in turn, analog
    queries in turn; ms per query and the answers."""
    from molsift.sets.mpi import prepared
    from molsift.substructure.query import parse_query

    items = qs["sub"] if kind == "substructure" else qs["analogs" if kind == "analogs" else "sim"]
    if barrier is not None:
        barrier()
    t = time.perf_counter()
    if kind in ("t07", "top10"):
        hits = store.search_batch(items, **({"threshold": 0.7} if kind == "t07" else {"k": 10}))
        answers = [(h.indices.tolist(), h.scores.tolist()) for h in hits]
    elif kind == "substructure":
        answers = []
        for _, q, error in prepared(store, items, lambda it: parse_query(it[0], it[1])):
            if error is not None:
                raise error
            answers.append(store.substructure(q, workers=1).tolist())
    else:
        answers = []
        for q in items:
            a = store.analogs(q, max_dist=3, k=100)
            answers.append((a["position"].tolist(), a["distance"].tolist(),
                            a["tanimoto"].tolist()))  # fmt: skip
    return (time.perf_counter() - t) * 1000 / max(1, len(items)), answers


def rank_loop(
    set_path: str, out: str, qs: dict, kinds=KINDS, repeats: int = 1, warmups: int = 0
) -> None:
    """Under mpirun: every rank searches its shards; rank 0 writes the times and answers."""
    import molsift
    from molsift.sets.mpi import spread

    store = molsift.open_store(set_path, verify=False)
    root = spread(store)
    ranks = getattr(store, "_ranks", None)
    comm = ranks.comm if ranks is not None else None
    barrier = comm.Barrier if comm is not None else None
    # warm: first-use checksums of what each kind reads, out of the timings
    for kind in kinds:
        run_kind(store, kind, {"sim": qs["sim"][:1], "sub": qs["sub"][:1],
                               "analogs": qs["analogs"][:1]}, barrier)  # fmt: skip
    result = {}
    for kind in kinds:
        sent0 = ranks.sent_bytes if ranks is not None else 0
        times, answers = run_kind(store, kind, qs, barrier)
        sent = (ranks.sent_bytes if ranks is not None else 0) - sent0
        per_rank = comm.gather(sent, root=0) if comm is not None else [0]
        n = max(1, len(times))
        result[kind] = {"median_ms": statistics.median(times) if times else None,
                        "sent_bytes_per_query": [b / n for b in (per_rank or [])],
                        "answers": answers}  # fmt: skip
        ms, batch = run_batch(store, kind, qs, barrier, repeats, warmups)
        result[kind].update(batch_ms=ms, batch_answers=batch)
    if ranks is not None:  # the top-k reduction alone: its cost per query at this rank count
        import numpy as np

        rng = np.random.default_rng(ranks.rank)
        result["reduction_us"] = {}
        for k in (10, 100):
            idx = np.sort(rng.choice(1 << 30, size=k, replace=False)).astype(np.int64)
            sc = np.sort(rng.random(k))[::-1].copy()
            times = []
            for _ in range(300):
                comm.Barrier()
                t = time.perf_counter()
                ranks.topk(idx, sc, k)
                times.append((time.perf_counter() - t) * 1e6)
            result["reduction_us"][str(k)] = statistics.median(times)
    if root:
        Path(out).write_text(json.dumps(result))


def build(library: str, work: Path, shards: list[int]) -> tuple[Path, dict[int, Path]]:
    """The one store and each set, from one version-1 staging ingest of the library."""
    from molsift.ingestion import ingest
    from molsift.sets.write import write_set
    from molsift.store import write_complete

    staging = work / "staging.store"
    if not (staging / "manifest.json").exists():
        t = time.perf_counter()
        ingest(library, staging, version=1, index=False, analogs=False, overwrite=True,
               progress=False)  # fmt: skip
        print(f"staging ingest {time.perf_counter() - t:.0f} s", flush=True)
    one = work / "one.store"
    if not (one / "manifest.json").exists():
        t = time.perf_counter()
        tmp = work / "one.store.tmp"
        write_complete(str(staging), str(tmp), threads=os.cpu_count() or 1)
        tmp.rename(one)
        print(f"one store {time.perf_counter() - t:.0f} s", flush=True)
    sets = {}
    for k in shards:
        sets[k] = work / f"s{k}.set"
        if not (sets[k] / "set.json").exists():
            t = time.perf_counter()
            tmp = work / f"s{k}.set.tmp"
            write_set(str(staging), str(tmp), k, threads=os.cpu_count() or 1)
            tmp.rename(sets[k])
            print(f"set of {k} shards {time.perf_counter() - t:.0f} s", flush=True)
    return one, sets


def one_store_times(store, qs: dict, kinds=KINDS, repeats: int = 1, warmups: int = 0) -> dict:
    """The one store in this process: each kind's median ms query by query, its batch ms per
    query, and both answers (through JSON, as the cells' come back)."""
    base = {}
    for kind in kinds:
        run_kind(store, kind, {"sim": qs["sim"][:1], "sub": qs["sub"][:1],
                               "analogs": qs["analogs"][:1]})  # fmt: skip
        times, answers = run_kind(store, kind, qs)
        ms, batch = run_batch(store, kind, qs, repeats=repeats, warmups=warmups)
        base[kind] = {"median_ms": statistics.median(times), "batch_ms": ms,
                      "answers": json.loads(json.dumps(answers)),
                      "batch_answers": json.loads(json.dumps(batch))}  # fmt: skip
    return base


def run_cell(args, set_path: Path, ranks: int, out: Path, env: dict) -> dict:
    """One cell: the rank loop over `set_path` on `ranks` ranks (mpirun past one)."""
    cmd = [sys.executable, __file__, "--rank-loop", str(set_path), str(out),
           "--sim-queries", str(args.sim_queries), "--sub-queries", str(args.sub_queries),
           "--analog-queries", str(args.analog_queries), "--kinds", args.kinds,
           "--batch-repeats", str(args.batch_repeats), "--batch-warmups", str(args.batch_warmups),
           *(["--sub-spread"] if args.sub_spread else [])]  # fmt: skip
    if ranks > 1:
        cmd = ["mpirun", "-n", str(ranks), "--oversubscribe", "--bind-to", "none", *cmd]
    subprocess.run(cmd, check=True, env=env)
    return json.loads(out.read_text())


def _cell(row: dict, kind: str) -> str:
    """A kind's query-by-query cell: ms (efficiency; top-10 adds the bytes a rank sent), or -
    for a kind not timed."""
    if f"{kind}_ms" not in row:
        return "-"
    ms = f"{row[f'{kind}_ms']:.2f}" if kind in ("substructure", "analogs") else (
        f"{row[f'{kind}_ms']:.3f}")  # fmt: skip
    sent = f", {row['top10_sent_bytes']:.0f}" if kind == "top10" else ""
    return f"{ms} ({row[f'{kind}_efficiency']:.0%}{sent})"


def _batch_cell(row: dict, kind: str) -> str:
    """A kind's batch cell: ms (efficiency, its range over the rounds), or - when not timed."""
    if f"{kind}_batch_ms" not in row:
        return "-"
    low, high = row[f"{kind}_batch_efficiency_range"]
    return (f"{row[f'{kind}_batch_ms']:.3f} ({row[f'{kind}_batch_efficiency']:.0%}, "
            f"{low:.0%}-{high:.0%})")  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--library", action="append", default=[], help="NAME=PATH (repeatable)")
    p.add_argument("--workdir", default="/tmp/molsift-scaleout")
    p.add_argument("--shards", default="1,2,4,8")
    p.add_argument("--ranks", default="1,2,4")
    p.add_argument("--sim-queries", type=int, default=100)
    p.add_argument("--sub-queries", type=int, default=100)
    p.add_argument("--analog-queries", type=int, default=20)
    p.add_argument("--rounds", type=int, default=1,
                   help="rounds, each timing the one store and then every cell; each cell's "
                   "efficiency is the median over the rounds of its ratio to the same "
                   "round's one store (a noisy machine drifts between minutes)")  # fmt: skip
    p.add_argument("--batch-repeats", type=int, default=3,
                   help="runs of each batch, the median timed (one run of a batch "
                   "of t=0.7 queries is tens of ms: one alone is at the noise)")  # fmt: skip
    p.add_argument("--batch-warmups", type=int, default=2,
                   help="untimed runs of each batch first, on both sides (a fresh "
                   "process's first batch takes about twice as long)")  # fmt: skip
    p.add_argument("--kinds", default=",".join(KINDS),
                   help="the kinds timed, of " + ", ".join(KINDS) + " (default: all)")  # fmt: skip
    p.add_argument("--sub-spread", action="store_true",
                   help="take the substructure queries spread over the test list, not "
                   "its first (functional-group SMARTS: seconds each at 10 M)")  # fmt: skip
    p.add_argument("--json")
    p.add_argument("--rank-loop", nargs=2, metavar=("SET", "OUT"), help=argparse.SUPPRESS)
    args = p.parse_args()
    qs = queries(args.sim_queries, args.sub_queries, args.analog_queries, args.sub_spread)
    kinds = [k for k in args.kinds.split(",") if k]
    if not kinds or any(k not in KINDS for k in kinds):
        p.error(f"--kinds {args.kinds!r}: give some of {', '.join(KINDS)}")
    if args.rank_loop:
        rank_loop(args.rank_loop[0], args.rank_loop[1], qs, kinds, args.batch_repeats,
                  args.batch_warmups)  # fmt: skip
        return
    import molsift

    cores = os.cpu_count() or 1
    report = {"cores": cores, "rounds": args.rounds, "libraries": {}}
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    med = statistics.median
    for spec in args.library:
        name, path = spec.split("=", 1)
        work = Path(args.workdir) / name
        work.mkdir(parents=True, exist_ok=True)
        one, sets = build(path, work, [int(k) for k in args.shards.split(",")])
        store = molsift.open_store(one, verify=False)
        run_kind(store, "t07", {"sim": qs["sim"][:1]})  # warm
        bases: list[dict] = []
        cells: dict[tuple, list] = {}
        for round_ in range(args.rounds):
            base = one_store_times(store, qs, kinds, args.batch_repeats, args.batch_warmups)
            bases.append(base)
            for k, set_path in sets.items():
                for r in [int(x) for x in args.ranks.split(",")]:
                    cell = run_cell(args, set_path, r, work / f"cell-{k}-{r}.json", env)
                    for kind in kinds:
                        if cell[kind]["answers"] != base[kind]["answers"]:
                            raise SystemExit(
                                f"{name}: {k} shards, {r} ranks: {kind} answers differ"
                            )
                        if cell[kind]["batch_answers"] != base[kind]["batch_answers"]:
                            raise SystemExit(f"{name}: {k} shards, {r} ranks: {kind} batch differs")
                    cells.setdefault((k, r), []).append(cell)
                    print(f"round {round_ + 1}: {k} shards, {r} ranks done", flush=True)
        rows = []
        for (k, r), runs in cells.items():
            row = {"shards": k, "ranks": r, "oversubscribed": r > cores,
                   "reduction_us": runs[-1].get("reduction_us")}  # fmt: skip
            for kind in kinds:
                pairs = list(zip(bases, runs))
                row[f"{kind}_ms"] = med([c[kind]["median_ms"] for c in runs])
                row[f"{kind}_efficiency"] = med(
                    [b[kind]["median_ms"] / c[kind]["median_ms"] / r for b, c in pairs]
                )
                row[f"{kind}_batch_ms"] = med([c[kind]["batch_ms"] for c in runs])
                batch = [b[kind]["batch_ms"] / c[kind]["batch_ms"] / r for b, c in pairs]
                row[f"{kind}_batch_efficiency"] = med(batch)
                row[f"{kind}_batch_efficiency_range"] = [min(batch), max(batch)]
                row[f"{kind}_sent_bytes"] = max(runs[-1][kind]["sent_bytes_per_query"] or [0])
            rows.append(row)
            print(json.dumps(row), flush=True)
        one_ms = {kind: med([b[kind]["median_ms"] for b in bases]) for kind in kinds}
        one_batch = {kind: med([b[kind]["batch_ms"] for b in bases]) for kind in kinds}
        report["libraries"][name] = {"molecules": len(store), "one_store_ms": one_ms,
                                     "one_store_batch_ms": one_batch,
                                     "cells": rows}  # fmt: skip
        rounds = f" (medians of {args.rounds} rounds)" if args.rounds > 1 else ""
        print(f"\n{name}: {len(store):,} molecules{rounds}; one store, one process: "
              + ", ".join(f"{k} {v:.2f} ms" for k, v in one_ms.items()))  # fmt: skip
        print(
            "| shards | ranks | t=0.7 ms (eff) | top-10 ms (eff, B sent/rank) | "
            "substructure ms (eff) | analogs ms (eff) |"
        )
        print("|---|---|---|---|---|---|")
        for row in rows:
            over = " (oversubscribed)" if row["oversubscribed"] else ""
            print(f"| {row['shards']} | {row['ranks']}{over} | "
                  + " | ".join(_cell(row, kind) for kind in KINDS) + " |")  # fmt: skip
        print("\nthe same queries as one batch each (`--queries FILE`), ms/query = wall / "
              "queries; one store, one process: "
              + ", ".join(f"{k} {v:.2f} ms" for k, v in one_batch.items()))  # fmt: skip
        print("| shards | ranks | t=0.7 ms (eff, range) | top-10 ms (eff, range) | "
              "substructure ms (eff, range) | analogs ms (eff, range) |")  # fmt: skip
        print("|---|---|---|---|---|---|")
        for row in rows:
            over = " (oversubscribed)" if row["oversubscribed"] else ""
            print(f"| {row['shards']} | {row['ranks']}{over} | "
                  + " | ".join(_batch_cell(row, kind) for kind in KINDS) + " |")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
