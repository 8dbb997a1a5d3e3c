"""Benchmark (issue 19, first version): the exact analog walk on a store (all of MOSES less its
last 100 lines, the held-out queries). Prints the skeleton library's build (distinct skeletons,
seconds, threads) and, per distance D, over the queries: ms to the first hit, ms to the nearest
100 molecules (the walk ends with the distance at which 100 are found, or at D), molecules found,
graphs reached, edits considered per second. The walk is the first, breadth-first version
(crates/analogs/src/walk.rs); peers (the brute-force reference, Morgan top-100) and the on-disk
index come with the fast walk.

    .venv/bin/python benches/analogs.py --store MOSES.store [--dist 1,2] [--queries 100]
        [--d3-queries 5] [--threads 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import time
from pathlib import Path

import molsift
from molsift import _core

ROOT = Path(__file__).resolve().parent.parent


def held_out(n: int) -> list[str]:
    """The last `n` lines of MOSES (not in the store)."""
    with gzip.open(ROOT.parent / "shared/data/moses_train.csv.gz", "rt") as fh:
        lines = fh.read().splitlines()
    return [line.split(",")[0] for line in lines[-n:]]


def run(library, queries: list[str], dist: int) -> dict:
    first, top, found, nodes, rate = [], [], [], [], []
    for smi in queries:
        n, bonds = _core.smiles_skeleton(smi)
        hits, stats = library.walk(n, bonds, dist, stop_after=100)
        st = dict(stats)
        first.append(st["first_hit_ns"] / 1e6)
        top.append(st["ns"] / 1e6)
        found.append(sum(len(p) for _, p in hits))
        nodes.append(st["nodes"])
        rate.append(st["edges"] / (st["ns"] / 1e9))
    return {
        "dist": dist,
        "queries": len(queries),
        "first_hit_ms_p50": statistics.median(first),
        "top100_ms_p50": statistics.median(top),
        "top100_ms_max": max(top),
        "molecules_p50": statistics.median(found),
        "nodes_p50": statistics.median(nodes),
        "edges_per_s_p50": statistics.median(rate),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", required=True)
    ap.add_argument("--dist", default="1,2")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--d3-queries", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--json")
    args = ap.parse_args()
    store = molsift.open_store(args.store)
    smiles = list(store.smiles)
    began = time.perf_counter()
    library = _core.SkeletonLibrary(smiles, threads=args.threads)
    build_s = time.perf_counter() - began
    print(f"{len(smiles):,} molecules, {len(library):,} distinct skeletons, "
          f"{len(library.failed())} unreadable; library built in {build_s:.1f} s on "
          f"{args.threads} threads (in memory)")  # fmt: skip
    queries = held_out(args.queries)
    rows = [run(library, queries, d) for d in (int(x) for x in args.dist.split(","))]
    if args.d3_queries:
        rows.append(run(library, queries[: args.d3_queries], 3))
    print("\n| D | queries | first hit p50 ms | top-100 p50 ms | top-100 max ms | "
          "molecules p50 | graphs reached p50 | edits/s p50 |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['dist']} | {r['queries']} | {r['first_hit_ms_p50']:.2f} | "
              f"{r['top100_ms_p50']:.1f} | {r['top100_ms_max']:.1f} | {r['molecules_p50']:g} | "
              f"{r['nodes_p50']:g} | {r['edges_per_s_p50'] / 1e6:.2f} M |")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"molecules": len(smiles), "skeletons": len(library), "build_s": build_s,
             "rows": rows}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
