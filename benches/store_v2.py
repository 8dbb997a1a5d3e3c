"""Benchmark: store version 1 against version 2 (the one store, as `molsift upgrade` writes it:
every index) on MOSES, in ONE run: bytes per molecule per column and in total (both with every
index: version 1's as ingest wrote it, with its column index), and search time
(t = 0.7 and top-10, one thread, one query per call; version 1 and version 2 alternate round
by round, medians of --repeats) for two query sets, with FPSim2 and plain compressors as peers.

Database: all of ../shared/data/moses_train.csv.gz except its last 100 lines (as
benches/search.py builds it: the same work directory can be shared). Queries:
- held-out: those last 100 MOSES lines (molecules like the database);
- unlike: benches/data/moses_test_scaffolds.100.smi, the first 100 molecules of MOSES's
  scaffold test set (scaffolds MOSES train lacks).
Peers in the same table: FPSim2 0.7.4's h5 file (its own `create_db_file`), FPSim2 in memory
for search; zstd -19 of the database's canonical SMILES file (whole file, no random access);
SmiZip 2.0 per record, with n-grams trained (`find_best_ngrams --speed fast`) on 20,000
database SMILES (trained once, cached in the work directory: about 7 minutes).
Every hit of version 2 is checked equal to version 1's (same molecules by input rank, same
scores); FPSim2's hit sets (threshold) and top-k scores (to float32 precision) too.

    .venv/bin/python benches/store_v2.py --workdir DIR [--json out.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _search_bench():
    spec = importlib.util.spec_from_file_location("search_bench", ROOT / "benches/search.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def column_sizes(store) -> dict:
    """Bytes per file group of a store (version 1 or 2)."""
    files = {k: v["bytes"] for k, v in store.manifest["files"].items()}
    v2 = store.manifest["format_version"] == 2
    groups = (
        {
            "fingerprints": [
                "planes.codes.u8",
                "planes.checkpoints.u32",
                "planes.data.u8",
                "planes.json",
            ],
            "popcount order (slot -> position)": ["planes.order"],
            "part masks (bounds per 32 and per 16 slots)": ["planes.parts.u8"],
            "SMILES": ["smiles.blocks"],
            "ids": ["ids.blocks"],
            "lookup index": ["smiles.lookup", "ids.lookup"],
            "input order (position -> input rank)": ["input_order.packed"],
            "source lines": ["source_lines.packed"],
            "rejects": ["rejects.tsv"],
            "substructure index (screen, graph blocks)": [
                "pattern.json",
                "pattern.screen.u8",
                "pattern.graphs.zst",
            ],
            "analog index": [k for k in files if k.startswith("analogs.")],
        }
        if v2
        else {
            "fingerprints": ["fingerprints.u64", "popcounts.u16"],
            "column index (the bits again, and its order)": [
                "columns.planes.u64",
                "columns.order.u64",
                "columns.json",
            ],
            "SMILES": ["smiles.txt", "smiles.offsets.u64"],
            "ids": ["ids.txt", "ids.offsets.u64"],
            "source lines": ["source_lines.u64"],
            "rejects": ["rejects.tsv"],
            "substructure index (planes, graphs)": [
                "pattern.json",
                "pattern.planes.u64",
                "pattern.graphs.bin",
            ],
            "analog index": [k for k in files if k.startswith("analogs.")],
        }
    )
    out = {g: sum(files.get(f, 0) for f in names) for g, names in groups.items()}
    out["total"] = sum(files.values())
    return out


def smizip_bytes(smiles: list[str], work: Path) -> tuple[float, str]:
    from smizip.smizip import SmiZip

    ngrams = work / "smizip_ngrams.json"
    if not ngrams.exists():
        sample = work / "smizip_train.smi"
        sample.write_text(
            "".join(s + "\n" for s in smiles[:: max(1, len(smiles) // 20000)][:20000])
        )
        chars = "".join(sorted(set("".join(smiles)) - {"\n"}))
        subprocess.run(
            [sys.executable, "-m", "smizip.scripts.find_best_ngrams", "-i", str(sample),
             "-o", str(ngrams), "--chars", chars, "--lf", "--speed", "fast"],
            check=True, capture_output=True,
        )  # fmt: skip
    z = SmiZip(json.loads(ngrams.read_text())["ngrams"])
    return sum(len(z.zip(s)) for s in smiles) / len(smiles), "n-grams: 20,000 SMILES, --speed fast"


def main() -> int:
    fmt = argparse.RawDescriptionHelpFormatter
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=fmt)
    ap.add_argument("--data", default=str(ROOT.parent / "shared/data/moses_train.csv.gz"))
    ap.add_argument("--workdir", default="/tmp/molsift-search-bench")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()

    from FPSim2 import FPSim2Engine

    import molsift

    sb = _search_bench()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    smi, db, held_out = sb.build_inputs(Path(args.data), work, 100)
    v1 = sb.build_store_v1(smi, work)
    v2_path = work / "moses_db.v2.store"
    t = time.perf_counter()
    v2 = molsift.upgrade(v1.path, v2_path, overwrite=True, threads=os.cpu_count() or 1)
    upgrade_s = time.perf_counter() - t
    n = len(v1)
    h5 = sb.build_fpsim2(db, work)
    unlike = [
        line.split()[0]
        for line in (ROOT / "benches/data/moses_test_scaffolds.100.smi").read_text().splitlines()
        if line.strip()
    ]

    # sizes
    s1, s2 = column_sizes(v1), column_sizes(v2)
    smiles_file = Path(v1.path) / "smiles.txt"
    zstd_cmd = ["zstd", "-19", "-c", str(smiles_file)]
    zstd = len(subprocess.run(zstd_cmd, capture_output=True, check=True).stdout)
    sz, sz_how = smizip_bytes(list(v1.smiles), work)
    print(f"\nMOSES minus 100 held-out lines: {n:,} molecules; upgrade took {upgrade_s:.1f} s\n")
    print("| column | version 1 (B/molecule) | version 2 (B/molecule) |")
    print("|---|---:|---:|")
    groups = [g for g in dict.fromkeys([*s1, *s2]) if g != "total"] + ["total"]
    for g in groups:
        a = f"{s1[g] / n:.2f}" if g in s1 else "-"
        b = f"{s2[g] / n:.2f}" if g in s2 else "-"
        print(f"| {g} | {a} | {b} |")
    print(f"\npeers: FPSim2 h5 {h5.stat().st_size / n:.2f} B/molecule; zstd -19 of the SMILES file "
          f"{zstd / n:.2f}; SmiZip per record {sz:.2f} ({sz_how})")  # fmt: skip

    # search
    fpe = FPSim2Engine(str(h5), in_memory_fps=True)
    ranks = v2.input_ranks  # v2 position -> v1 position (v1 is input order)
    rows = []
    for qname, queries in (("held-out", held_out), ("unlike", unlike)):
        for label, kw in (("t=0.7", {"threshold": 0.7}), ("top-10", {"k": 10})):

            def run(store, kw=kw, queries=queries):
                return [store.search(q, **kw) for q in queries]

            # same hits: v2 positions mapped to input ranks equal v1's positions
            a, b = run(v1), run(v2)
            for x, y in zip(a, b):
                assert sorted(zip(x.scores.tolist(), x.indices.tolist())) == sorted(
                    zip(y.scores.tolist(), ranks[y.indices].tolist())
                ) or (len(x) == len(y) and x.scores.tolist() == y.scores.tolist()), "v1 != v2"
            # the two versions alternate, round by round, so that a slow moment of this
            # shared machine falls on both
            times1, times2 = [], []
            for _ in range(args.repeats):
                times1.append(sb.timed(lambda: run(v1), 1)[0])
                times2.append(sb.timed(lambda: run(v2), 1)[0])
            t1, t2 = statistics.median(times1), statistics.median(times2)
            tf, fp = sb.timed(
                lambda kw=kw, queries=queries: sb.fpsim2_search(
                    fpe,
                    queries,
                    np.asarray,
                    t=kw.get("threshold"),
                    k=kw.get("k"),
                ),
                args.repeats,
            )
            for x, (fp_ids, scores) in zip(a, fp):
                # FPSim2 scores are float32: the same hit set, or the same top-k scores
                if "threshold" in kw:
                    assert sorted(x.indices.tolist()) == sorted(fp_ids.tolist()), "FPSim2 differs"
                else:
                    assert np.allclose(np.sort(x.scores), np.sort(scores), atol=1e-6), "FPSim2"

            m = len(queries)
            rows.append({
                "queries": qname, "search": label, "v1_ms": t1 * 1000 / m, "v2_ms": t2 * 1000 / m,
                "fpsim2_ms": tf * 1000 / m, "hits": sum(len(x) for x in a),
            })  # fmt: skip
    print(
        "\n| queries | search | v1 ms/query | v2 ms/query | v2 / v1 | FPSim2 ms/query "
        "| FPSim2 / v1 | FPSim2 / v2 | hits |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['queries']} | {r['search']} | {r['v1_ms']:.3f} | {r['v2_ms']:.3f} | "
            f"{r['v2_ms'] / r['v1_ms']:.2f} | {r['fpsim2_ms']:.2f} | "
            f"{r['fpsim2_ms'] / r['v1_ms']:.0f}x | "
            f"{r['fpsim2_ms'] / r['v2_ms']:.0f}x | {r['hits']:,} |"
        )
    print("\nall hits: version 2 == version 1 (same molecules, same scores); FPSim2 the same")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "molecules": n, "v1": s1, "v2": s2, "fpsim2_h5": h5.stat().st_size,
            "zstd19_smiles": zstd, "smizip_per_mol": sz, "upgrade_s": upgrade_s, "search": rows,
        }, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
