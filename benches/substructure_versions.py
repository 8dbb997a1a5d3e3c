"""Benchmark (issue 41): substructure search on the one store (version 2, compact index) against
the version-1 store of the same molecules, in one run, one query at a time, alternating which
store goes first. Hit sets must be equal: version 1's positions (its input ranks) are mapped to
version 2's through `input_ranks`. Prints, per query set, the median and p90 ms of each store,
their ratio, and the screen survivors of each (the compact screen keeps fewer planes).

Query sets: tests/data/substructure/queries.tsv (334 SMILES and SMARTS) and
benches/data/zinc.frags.500.q.smi (500 ZINC fragments). SubstructLibrary is the peer of
benches/substructure.py (`--compare-store` there runs this comparison beside it).

    .venv/bin/python benches/substructure_versions.py --v1 moses.v1 --v2 moses.v2 [-j 1]
        [--sets test,zinc] [--json out.json]
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import molsift
from molsift.store import open_version_1
from molsift.substructure import last_stats

ROOT = Path(__file__).resolve().parent.parent


def load(sets: list[str]) -> list[tuple[str, str, bool]]:
    out = []
    if "test" in sets:
        path = ROOT / "tests" / "data" / "substructure" / "queries.tsv"
        with open(path) as fh:
            out += [
                ("test", r["query"], r["kind"] == "smarts")
                for r in csv.DictReader(fh, delimiter="\t")
            ]
    if "zinc" in sets:
        with open(ROOT / "benches" / "data" / "zinc.frags.500.q.smi") as fh:
            out += [("zinc", line.split()[0], False) for line in fh if line.strip()]
    return out


def warm(store, workers: int) -> None:
    """First-use work out of the timings: every plane's checksum, the graphs' checksum."""
    index = store._pattern_index()
    index.screen([b for b, c in enumerate(index.bit_counts()) if c], 0, 0)
    store.substructure("*", smarts=True, max_hits=1, workers=workers)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--v1", required=True, help="the version-1 store")
    ap.add_argument("--v2", required=True, help="the version-2 store of the same molecules")
    ap.add_argument("-j", "--workers", type=int, default=1)
    ap.add_argument("--sets", default="test,zinc")
    ap.add_argument("--json", help="write every per-query figure here")
    args = ap.parse_args()
    v1 = open_version_1(args.v1)
    v2 = molsift.open_store(args.v2, verify=False)
    n = len(v2)
    if len(v1) != n:
        raise SystemExit(f"{args.v1} holds {len(v1)} molecules, {args.v2} {n}")
    to_v2 = np.empty(n, dtype=np.int64)
    to_v2[v2.input_ranks] = np.arange(n)  # version-1 position (input rank) -> version-2
    for s in (v1, v2):
        warm(s, args.workers)
    queries = load(args.sets.split(","))
    rows, mismatches = [], []
    for k, (kind, text, smarts) in enumerate(queries):
        order = [("v1", v1), ("v2", v2)] if k % 2 == 0 else [("v2", v2), ("v1", v1)]
        row: dict = {"set": kind, "query": text}
        hits = {}
        for name, s in order:
            t = time.perf_counter()
            hits[name] = s.substructure(text, smarts=smarts, workers=args.workers)
            row[f"{name}_ms"] = (time.perf_counter() - t) * 1000
            row[f"{name}_survivors"] = last_stats().get("candidates", 0)
        row["hits"] = len(hits["v2"])
        if sorted(to_v2[hits["v1"]].tolist()) != hits["v2"].tolist():
            mismatches.append(text)
        rows.append(row)
    print(f"{n:,} molecules; one query at a time, -j {args.workers}; ms per query (wall)")
    print(
        "| query set | queries | v1 median | v2 median | ratio | v1 p90 | v2 p90 "
        "| survivors v1 | survivors v2 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kind in dict.fromkeys(r["set"] for r in rows):
        mine = [r for r in rows if r["set"] == kind]
        a = statistics.median(r["v1_ms"] for r in mine)
        b = statistics.median(r["v2_ms"] for r in mine)
        p90 = {key: float(np.percentile([r[key] for r in mine], 90)) for key in ("v1_ms", "v2_ms")}
        s1 = sum(r["v1_survivors"] for r in mine)
        s2 = sum(r["v2_survivors"] for r in mine)
        print(
            f"| {kind} | {len(mine)} | {a:.2f} | {b:.2f} | **{b / a:.3f}** "
            f"| {p90['v1_ms']:.1f} | {p90['v2_ms']:.1f} | {s1:,} | {s2:,} |"
        )
    print(f"hit sets equal: {len(rows) - len(mismatches)} of {len(rows)}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows))
    for text in mismatches:
        print(f"MISMATCH {text}", file=sys.stderr)
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
