"""Benchmark (issue 41): the one store at 1.58 M molecules (all of MOSES) and at 10 M (the library
of `benches/make_library.py`), each written by one `molsift ingest` under a memory limit
(4 GiB by default: a cgroup, as `systemd-run -p MemoryMax=4G` makes; `benches/memlimit.py`),
then searched under the same limit. One table: build time and molecules/s, peak RSS (and the
cgroup's peak charge, page cache included), bytes/molecule, and ms/query of each search kind.

Queries, the same for every library (molecules whose scaffolds MOSES train lacks,
benches/data/moses_test_scaffolds.100.smi, "unlike"):
- similarity: 100 queries at t=0.7 and 100 top-10, one thread, median ms;
- substructure: tests/data/substructure/queries.tsv (334 SMILES and SMARTS), one worker,
  median ms (each run to completion: every hit);
- analogs: the first `--analog-queries` queries, top-100 within 3 edits, median ms;
- lookup: 20,000 stored molecules (every `n/20000`-th position) written as RDKit random SMILES,
  `store.lookup` on one process end to end (canonicalization included): lookups/s.
Before the timings each store is warmed (first-use checksums of the files each kind reads).

    .venv/bin/python benches/one_store_scale.py --library moses=../shared/data/moses_train.csv.gz \\
        --library ml10m=/work/bench/ml10m.smi --workdir /work/bench/scale [--memory 4G] [-j 2]
    .venv/bin/python benches/one_store_scale.py --queries-only STORE   # the query phase alone

`--keep` keeps the stores (else each is removed after its queries). Needs root for the cgroup.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import memlimit

ROOT = Path(__file__).resolve().parent.parent
UNLIKE = ROOT / "benches" / "data" / "moses_test_scaffolds.100.smi"
SUBSTRUCTURE = ROOT / "tests" / "data" / "substructure" / "queries.tsv"


def median_ms(fn, items) -> float:
    times = []
    for item in items:
        t = time.perf_counter()
        fn(item)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def queries_only(path: str, analog_queries: int) -> dict:
    """The query phase (run as its own process inside the memory limit)."""
    from rdkit import Chem, RDLogger

    import molsift

    RDLogger.DisableLog("rdApp.*")
    store = molsift.open_store(path, verify=False)
    n = len(store)
    unlike = [ln.split()[0] for ln in UNLIKE.read_text().splitlines() if ln.strip()]
    with open(SUBSTRUCTURE) as fh:
        subs = [(r["query"], r["kind"] == "smarts") for r in csv.DictReader(fh, delimiter="\t")]
    # warm: what each kind reads first (checksums at first use), out of the timings
    store.search(unlike[0], threshold=0.7)
    store.substructure("*", smarts=True, max_hits=1, workers=1)
    store.analogs(unlike[0], max_dist=1, k=1)
    out: dict = {"molecules": n}
    out["similarity_t07_ms"] = median_ms(lambda q: store.search(q, threshold=0.7), unlike)
    out["similarity_top10_ms"] = median_ms(lambda q: store.search(q, k=10), unlike)
    out["substructure_ms"] = median_ms(
        lambda q: store.substructure(q[0], smarts=q[1], workers=1), subs
    )
    out["analogs_top100_d3_ms"] = median_ms(
        lambda q: store.analogs(q, max_dist=3, k=100), unlike[:analog_queries]
    )
    step = max(1, n // 20000)
    stored = [store.smiles[i] for i in range(0, n, step)][:20000]
    probes = [Chem.MolToSmiles(Chem.MolFromSmiles(s), doRandom=True) for s in stored]
    t = time.perf_counter()
    found = store.lookup(probes, workers=1)
    out["lookup_per_s"] = len(probes) / (time.perf_counter() - t)
    out["lookup_found"] = int((found >= 0).sum())
    out["lookup_probes"] = len(probes)
    return out


def store_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file())


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--library", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--workdir", default="/tmp/one_store_scale")
    ap.add_argument("--memory", default="4G", help="memory limit (default 4G)")
    ap.add_argument("-j", "--workers", type=int, default=2)
    ap.add_argument("--analog-queries", type=int, default=20)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--skip-ingest", action="store_true", help="query stores already built")
    ap.add_argument("--queries-only", metavar="STORE")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.queries_only:
        print(json.dumps(queries_only(args.queries_only, args.analog_queries)))
        return 0
    limit = memlimit.parse_size(args.memory)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for spec in args.library:
        name, _, src = spec.partition("=")
        store = work / f"{name}.store"
        row: dict = {"library": name, "input": src}
        if not args.skip_ingest:
            cmd = [sys.executable, "-m", "molsift", "ingest", src, "-o", str(store),
                   "--overwrite", "-j", str(args.workers), "--json"]  # fmt: skip
            log = work / f"{name}.ingest.json"
            with open(log, "w") as fh:
                ran = memlimit.run(cmd, limit, stdout=fh)
            if ran.returncode != 0:
                print(f"{name}: ingest exited {ran.returncode} (OOM kills {ran.oom_kills})")
                return 1
            report = json.loads(log.read_text().strip().splitlines()[-1])
            row.update(
                build_s=ran.seconds,
                per_s=report["molecules"] / ran.seconds,
                ingest_peak_rss=ran.peak_rss,
                ingest_peak_charged=ran.peak_charged,
            )
        out = work / f"{name}.queries.json"
        with open(out, "w") as fh:
            cmd = [sys.executable, __file__, "--queries-only", str(store),
                   "--analog-queries", str(args.analog_queries)]  # fmt: skip
            ran = memlimit.run(cmd, limit, stdout=fh)
        if ran.returncode != 0:
            print(f"{name}: queries exited {ran.returncode} (OOM kills {ran.oom_kills})")
            return 1
        row.update(json.loads(out.read_text().strip().splitlines()[-1]))
        row.update(query_peak_rss=ran.peak_rss, bytes=store_bytes(store))
        row["bytes_per_molecule"] = row["bytes"] / row["molecules"]
        rows.append(row)
        if not args.keep:
            shutil.rmtree(store, ignore_errors=True)
    mib = 2**20
    print(
        f"one store, `molsift ingest -j {args.workers}` under a {args.memory} memory limit "
        f"(cgroup), {os.cpu_count()} CPUs; queries: one thread/worker, medians"
    )
    print(
        "| library | molecules | build s | molecules/s | ingest peak RSS MiB (charged) "
        "| B/molecule | sim t=0.7 ms | top-10 ms | substructure ms | analogs top-100 D<=3 ms "
        "| lookup /s | queries peak RSS MiB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        build = (
            f"{r['build_s']:,.0f} | {r['per_s']:,.0f} | {r['ingest_peak_rss'] / mib:,.0f} "
            f"({r['ingest_peak_charged'] / mib:,.0f})"
            if "build_s" in r
            else "- | - | -"
        )
        print(
            f"| {r['library']} | {r['molecules']:,} | {build} | {r['bytes_per_molecule']:.1f} "
            f"| {r['similarity_t07_ms']:.2f} | {r['similarity_top10_ms']:.2f} "
            f"| {r['substructure_ms']:.2f} | {r['analogs_top100_d3_ms']:.1f} "
            f"| {r['lookup_per_s']:,.0f} | {r['query_peak_rss'] / mib:,.0f} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
