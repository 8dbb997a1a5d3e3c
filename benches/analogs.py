"""Benchmark (issue 19): analog search on a store (all of MOSES less its last 100 lines, the
held-out queries), through the product path: the analog index is built on disk
(`molsift index STORE --analogs`, timed in this run), then `store.analogs(query, max_dist=D,
k=100)` answers each query (walk, index lookups, Tanimoto ranking, each returned row's element
changes). Prints the index (distinct skeletons, bytes per molecule, build seconds, threads) and,
per distance D, over the queries: ms to the first hit, ms to the top 100 (the walk ends with the
distance at which 100 are found, or at D), molecules found, graphs reached (the network's nodes
visited: distinct graphs canonicalized and kept) and per second of walk, edits considered (its
edges) per second of walk. With `--walk-threads 1,2` the D=3 and D=4 rows are repeated with each
distance of the walk divided among that many threads (`store.analogs(..., threads=N)`: the same
answers, checked).

Peers in the same run:
* Morgan top-100 (`store.search(query, k=100)`, one thread): its time, and how many of the
  analog top-100 it misses (hits with a distance no fingerprint ranking sees);
* the brute-force reference (`molsift.analogs.reference.distances`, keyed by molsift's
  certificate): too slow to run over MOSES, so it is timed on `--reference-targets` random
  library skeletons admitted by the lower bound for a few queries and extrapolated to all the
  targets it would have to examine (said so in the table).

    .venv/bin/python benches/analogs.py --store MOSES.store [--dist 1,2] [--queries 100]
        [--d3-queries 5] [--d4-queries 0 --d4-timeout 60] [--threads 2] [--walk-threads 1,2]
        [--reference-queries 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import statistics
import time
from pathlib import Path

import molsift
from molsift import _core
from molsift.analogs import skeleton_of_smiles
from molsift.analogs.reference import distances, lower_bound

ROOT = Path(__file__).resolve().parent.parent


def held_out(n: int) -> list[str]:
    """The last `n` lines of MOSES (not in the store)."""
    with gzip.open(ROOT.parent / "shared/data/moses_train.csv.gz", "rt") as fh:
        lines = fh.read().splitlines()
    return [line.split(",")[0] for line in lines[-n:]]


def run(store, queries: list[str], dist: int, timeout: float | None = None, threads: int = 1,
        answers: dict | None = None) -> dict:  # fmt: skip
    """One row: `queries` at `dist` on `threads`; each answer checked equal to the one in
    `answers` (by query) when it holds one, else kept there."""
    first, top, found, nodes, rate, node_rate = [], [], [], [], [], []
    morgan_ms, missed = [], []
    partial = 0
    for smi in queries:
        began = time.perf_counter()
        got = store.analogs(smi, max_dist=dist, k=100, timeout=timeout, threads=threads)
        partial += got.partial
        wall = (time.perf_counter() - began) * 1e3
        if answers is not None and not got.partial:
            mine = (got["position"].tolist(), got["tanimoto"].tolist(), got["mut"].tolist())
            if answers.setdefault((smi, dist), mine) != mine:
                raise SystemExit(f"{smi} at D={dist}: {threads} threads answered differently")
        st = got.stats
        first.append(st["first_hit_ns"] / 1e6)
        top.append(wall)
        found.append(len(got))
        nodes.append(st["nodes"])
        rate.append(st["edges"] / max(st["ns"] / 1e9, 1e-9))
        node_rate.append(st["nodes"] / max(st["ns"] / 1e9, 1e-9))
        began = time.perf_counter()
        fp = store.search(smi, k=100)
        morgan_ms.append((time.perf_counter() - began) * 1e3)
        missed.append(len(set(got["position"].tolist()) - set(fp.indices.tolist())))
    return {
        "dist": dist,
        "walk_threads": threads,
        "queries": len(queries),
        "first_hit_ms_p50": statistics.median(first),
        "top100_ms_p50": statistics.median(top),
        "top100_ms_max": max(top),
        "molecules_p50": statistics.median(found),
        "nodes_p50": statistics.median(nodes),
        "edges_per_s_p50": statistics.median(rate),
        "nodes_per_s_p50": statistics.median(node_rate),
        "morgan_top100_ms_p50": statistics.median(morgan_ms),
        "missed_by_morgan_p50": statistics.median(missed),
        "missed_by_morgan_share": sum(missed) / max(sum(found), 1),
        "timeout_s": timeout,
        "partial": partial,
    }


def reference_cost(store, queries: list[str], dist: int, targets: int, seed: int = 1) -> dict:
    """The reference's seconds per query, extrapolated: its time on `targets` random library
    skeletons that the lower bound admits, times the number it admits."""
    rng = random.Random(seed)
    smiles = list(store.smiles)
    sample = [skeleton_of_smiles(s) for s in rng.sample(smiles, 20000)]
    by_cert = {s.certificate: s for s in sample}
    per_query = []
    for smi in queries:
        q = skeleton_of_smiles(smi)
        admitted = [s for s in by_cert.values() if lower_bound(q, s) <= dist]
        share = len(admitted) / len(by_cert)  # of the sampled distinct skeletons
        chosen = rng.sample(admitted, min(targets, len(admitted)))
        began = time.perf_counter()
        distances(q, chosen, dist, key=lambda s: s.certificate)
        per_target = (time.perf_counter() - began) / max(len(chosen), 1)
        per_query.append(per_target * share * len(store._core.analog_index()))
    return {"dist": dist, "queries": len(queries), "targets_timed": targets,
            "seconds_per_query_p50": statistics.median(per_query)}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", required=True, help="a store (its analog index rebuilt)")
    ap.add_argument("--dist", default="1,2")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--d3-queries", type=int, default=5)
    ap.add_argument("--d4-queries", type=int, default=0)
    ap.add_argument("--d4-timeout", type=float, default=60.0, help="seconds per D=4 query")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--walk-threads", default="1", help="threads of each D>=3 walk, e.g. 1,2")
    ap.add_argument("--reference-queries", type=int, default=3)
    ap.add_argument("--reference-targets", type=int, default=20)
    ap.add_argument("--json")
    args = ap.parse_args()
    began = time.perf_counter()
    header, size = _core.build_analog_index(args.store, args.threads)
    build_s = time.perf_counter() - began
    header = json.loads(header)
    store = molsift.open_store(args.store)
    n = len(store)
    print(f"{n:,} molecules, {header['skeletons']:,} distinct skeletons, {header['failed']} "
          f"without one; analog index {size:,} bytes ({size / n:.1f} B/molecule) built in "
          f"{build_s:.1f} s on {args.threads} threads")  # fmt: skip
    queries = held_out(args.queries)
    store.analogs(queries[0], max_dist=1)  # open the index and the fingerprinter once
    rows = [run(store, queries, d) for d in (int(x) for x in args.dist.split(","))]
    answers: dict = {}
    for threads in (int(x) for x in args.walk_threads.split(",")):
        if args.d3_queries:
            rows.append(run(store, queries[: args.d3_queries], 3, None, threads, answers))
        if args.d4_queries:
            rows.append(run(store, queries[: args.d4_queries], 4, args.d4_timeout, threads,
                            answers))  # fmt: skip
    print("\n| D | walk threads | queries | first hit p50 ms | top-100 p50 ms | top-100 max ms | "
          "molecules p50 | graphs reached p50 | graphs/s p50 | edits/s p50 | Morgan top-100 "
          "p50 ms | analog hits Morgan top-100 misses |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        note = f" ({r['partial']} stopped at {r['timeout_s']:g} s)" if r["partial"] else ""
        print(f"| {r['dist']} | {r['walk_threads']} | {r['queries']} | "
              f"{r['first_hit_ms_p50']:.2f} | {r['top100_ms_p50']:.1f} | "
              f"{r['top100_ms_max']:.1f} | {r['molecules_p50']:g} | "
              f"{r['nodes_p50']:g} | {r['nodes_per_s_p50'] / 1e3:.0f} k | "
              f"{r['edges_per_s_p50'] / 1e6:.2f} M | "
              f"{r['morgan_top100_ms_p50']:.2f} | "
              f"{r['missed_by_morgan_share']:.0%} |{note}")  # fmt: skip
    ref = None
    if args.reference_queries:
        ref = reference_cost(store, queries[: args.reference_queries], 2, args.reference_targets)
        print(f"\nbrute-force reference at D=2 ({ref['queries']} queries, timed on "
              f"{ref['targets_timed']} admitted targets each, extrapolated to all admitted "
              f"skeletons): {ref['seconds_per_query_p50']:,.0f} s per query (p50)")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"molecules": n, "skeletons": header["skeletons"], "index_bytes": size,
             "build_s": build_s, "threads": args.threads, "rows": rows, "reference": ref},
            indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
