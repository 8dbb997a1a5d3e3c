"""Similarity search on a store that is not in the page cache (issue 5): drops the kernel's
caches (root only), then runs the held-out MOSES queries one at a time and reports, per query,
the time and the bytes actually read from the disk (/proc/diskstats, machine-wide: run it on a
quiet machine), next to the bytes of fingerprints and columns the search touched. A second pass
over the same queries shows the warm figures.

    sudo .venv/bin/python benches/search_cold.py [STORE] [--threshold 0.7] [--k K] \\
        [--read-ahead auto|on|off]

--read-ahead: the search's madvise(MADV_WILLNEED) hints for the planes each query scans (auto:
on when the index is larger than half the memory the page cache may use, cgroup included).

STORE defaults to the one benches/search.py builds (/tmp/molsift-search-bench/moses_db.store)."""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MOSES = ROOT.parent / "shared" / "data" / "moses_train.csv.gz"


def disk_read_bytes() -> int:
    """Bytes read from the block devices so far, machine-wide (/proc/diskstats sectors x 512):
    page faults on mapped files are not in /proc/self/io, so the device is counted instead."""
    total = 0
    with open("/proc/diskstats") as f:
        for line in f:
            parts = line.split()
            if parts[2].startswith(("loop", "ram")) or (
                parts[2][-1].isdigit() and not parts[2].startswith("nvme")
            ):
                continue  # partitions and virtual devices: counted in their whole disk
            total += int(parts[5]) * 512
    return total


def held_out_queries(n: int = 100):
    with gzip.open(MOSES, "rt") as f:
        lines = f.read().splitlines()[1:]
    return [line.split(",")[0] for line in lines[-n:]]


def run(store, queries, threshold, k):
    rows = []
    for q in queries:
        before = disk_read_bytes()
        t = time.perf_counter()
        hits = store.search(q, threshold=threshold, k=k)
        rows.append(
            (
                time.perf_counter() - t,
                disk_read_bytes() - before,
                hits.stats.get("bytes_touched", 0),
                len(hits),
            )
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store", nargs="?", default="/tmp/molsift-search-bench/moses_db.store")
    ap.add_argument("-t", "--threshold", type=float, default=0.7)
    ap.add_argument("-k", "--k", type=int, default=None)
    ap.add_argument("--read-ahead", choices=("auto", "on", "off"), default="auto")
    args = ap.parse_args()
    import molsift

    queries = held_out_queries()
    store = molsift.open_store(args.store, verify=False)
    size = sum(p.stat().st_size for p in Path(args.store).iterdir())
    store.search("CCO", threshold=1.0)  # open the index before timing; fingerprint the queries
    if args.read_ahead != "auto":
        store._searcher().read_ahead = args.read_ahead == "on"
    with open("/proc/sys/vm/drop_caches", "w") as f:  # needs root
        os.sync()
        f.write("3\n")
    print(
        f"store {args.store}: {len(store):,} molecules, {size:,} bytes; caches dropped; "
        f"read-ahead hints {'on' if store._searcher().read_ahead else 'off'} ({args.read_ahead})"
    )
    print(
        "| pass | median ms/query | first query ms | max ms/query "
        "| disk bytes read: first query | all queries | bytes touched/query (median) | hits |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in ("cold (first touch after drop_caches)", "warm (same queries again)"):
        rows = run(store, queries, args.threshold, args.k)
        print(
            f"| {name} | {1000 * statistics.median(r[0] for r in rows):.2f} "
            f"| {1000 * rows[0][0]:.1f} | {1000 * max(r[0] for r in rows):.2f} "
            f"| {rows[0][1]:,} | {sum(r[1] for r in rows):,} "
            f"| {statistics.median(r[2] for r in rows):,.0f} | {sum(r[3] for r in rows)} |"
        )


if __name__ == "__main__":
    main()
