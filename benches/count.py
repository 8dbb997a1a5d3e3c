"""Benchmark: `molsift count` against `wc -l` on the same cached multi-GB SMILES file, in one run.

Builds the file by repeating the MOSES SMILES (../shared/data/moses_train.csv.gz) until it
reaches --gib GiB, reads it once so it is in the page cache, then alternates the two tools
--repeats times and prints median GB/s and the ratio. Both count the same thing here (MOSES has
one record per line after its header), and the script checks they agree.

    .venv/bin/python benches/count.py --gib 4 --repeats 5
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build(path: Path, source: Path, gib: float) -> None:
    target = int(gib * (1 << 30))
    if path.exists() and path.stat().st_size >= target:
        return
    with gzip.open(source, "rb") as fh:
        lines = fh.read().split(b"\n", 1)[1]  # drop the CSV header
    lines = lines if lines.endswith(b"\n") else lines + b"\n"
    with open(path, "wb") as f:
        written = 0
        while written < target:
            f.write(lines)
            written += len(lines)


def timed(cmd) -> tuple:
    start = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - start, out


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", default=str(ROOT.parent / "shared/data/moses_train.csv.gz"))
    ap.add_argument("--file", default="/tmp/molsift-bench/moses_repeated.smi")
    ap.add_argument("--gib", type=float, default=4.0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument(
        "--threads", type=int, default=None, help="molsift threads (default: all cores)"
    )
    ap.add_argument("--keep", action="store_true", help="keep the big file")
    args = ap.parse_args()

    path = Path(args.file)
    path.parent.mkdir(parents=True, exist_ok=True)
    build(path, Path(args.data), args.gib)
    size = path.stat().st_size
    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)  # warm the cache

    molsift = [str(Path(sys.executable).with_name("molsift")), "count", str(path), "--json"]
    if args.threads:
        molsift += ["--threads", str(args.threads)]
    wc, ms, ms_inner, counts = [], [], [], set()
    for _ in range(args.repeats):
        t, out = timed(["wc", "-l", str(path)])
        wc.append(t)
        counts.add(("wc", int(out.split()[0])))
        t, out = timed(molsift)
        report = json.loads(out)
        ms.append(t)
        ms_inner.append(report["seconds"])
        counts.add(("molsift", report["records"]))
        amp = report["bytes_read"] / report["bytes"]
    if len({c for _, c in counts}) != 1:
        print(f"MISMATCH: {sorted(counts)}", file=sys.stderr)
        return 1
    gbs = lambda ts: size / statistics.median(ts) / 1e9  # noqa: E731
    print(
        f"file: {path} ({size / 1e9:.2f} GB, {counts.pop()[1]:,} records, page cache warm), "
        f"{os.cpu_count()} cores, median of {args.repeats}"
    )
    print("| tool | median s | GB/s | vs wc -l |")
    print("|---|---|---|---|")
    print(f"| wc -l | {statistics.median(wc):.3f} | {gbs(wc):.2f} | 1.00x |")
    print(
        f"| molsift count (whole process) | {statistics.median(ms):.3f} | {gbs(ms):.2f} | "
        f"{statistics.median(wc) / statistics.median(ms):.2f}x |"
    )
    print(
        f"| molsift count (counting only) | {statistics.median(ms_inner):.3f} | "
        f"{gbs(ms_inner):.2f} | "
        f"{statistics.median(wc) / statistics.median(ms_inner):.2f}x |"
    )
    print(f"read amplification {amp:.4f}x")
    if not args.keep:
        path.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
