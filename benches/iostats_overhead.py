"""What molsift's built-in I/O counters (crates/iostats) cost: each scenario runs with
the counters on (the default) and off (MOLSIFT_IOSTATS=0, which exists for this benchmark
only), alternating on/off REPEATS times; the table shows medians and the overhead in %.

    .venv/bin/python benches/iostats_overhead.py [--gib 2] [--repeats 7] [--passes 10]
        [--screen 20000]

(a) `molsift count` of a cached multi-GB SMILES file (MOSES repeated, as benches/count.py):
    whole process, and the counting alone (the seconds molsift reports).
(b) every record of MOSES as plain CSV (58 MB) through the slab reader on one thread, PASSES
    times per run (crates/io/examples/slab_read.rs): read buffer 1 KiB (worst case: about
    58,000 requests of 1 KiB per pass, each counted) and 1 MiB (the default). Also paired in
    one process: 2 x PASSES passes with recording switched on and off in turn (on, off, off,
    on, ...), median seconds per pass; steadier than separate processes on a busy machine.
(c) `molsift screen --scorer similarity -j 2` on the first N MOSES molecules (5 references).
(d) one counted request: CPU ns of a 1 KiB pread of a cached file, plain `File` against
    `CountedFile` (crates/iostats/examples/request_cost.rs).
Wall seconds and CPU seconds (user + system of the process and its children) are both shown:
on a shared machine CPU time is the steadier of the two.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import count as count_bench  # benches/ is on sys.path when a bench runs as a script
import screen as screen_bench

ROOT = Path(__file__).resolve().parent.parent
MOSES = ROOT.parent / "shared" / "data" / "moses_train.csv.gz"
MOLSIFT = [sys.executable, "-m", "molsift"]


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd, on: bool) -> tuple:
    """(wall s, CPU s, stdout) of one run with the counters on or off."""
    env = dict(os.environ)
    env.pop("MOLSIFT_IOSTATS", None)
    if not on:
        env["MOLSIFT_IOSTATS"] = "0"
    cpu, start = children_cpu(), time.perf_counter()
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - start, children_cpu() - cpu, out


def alternate(cmd, repeats: int, inner=None) -> dict:
    """Medians of `repeats` on/off pairs: wall, CPU, and `inner(stdout)` seconds when given."""
    got = {(k, on): [] for k in ("wall", "cpu", "inner") for on in (True, False)}
    for i in range(repeats):
        for on in (True, False) if i % 2 == 0 else (False, True):
            wall, cpu, out = run(cmd, on)
            got["wall", on].append(wall)
            got["cpu", on].append(cpu)
            if inner:
                got["inner", on].append(inner(out))
    return {k: statistics.median(v) for k, v in got.items() if v}


def row(name: str, requests: str, m: dict, key: str) -> str:
    on, off = m[key, True], m[key, False]
    return f"| {name} | {requests} | {on:.3f} | {off:.3f} | {100 * (on - off) / off:+.1f}% |"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--work", default="/tmp/molsift-bench")
    ap.add_argument("--gib", type=float, default=2.0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--passes", type=int, default=10, help="(b): times the file is read per run")
    ap.add_argument("--screen", type=int, default=20_000, help="molecules for (c); 0 skips it")
    ap.add_argument("--keep", action="store_true", help="keep the big file")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            "cargo",
            "build",
            "--release",
            "-q",
            "-p",
            "molsift-io",
            "--example",
            "slab_read",
            "-p",
            "molsift-iostats",
            "--example",
            "request_cost",
        ],
        cwd=ROOT,
        check=True,
    )
    examples = ROOT / "target" / "release" / "examples"
    lines = []

    big = work / "moses_repeated.smi"
    count_bench.build(big, MOSES, args.gib)
    subprocess.run(["cat", str(big)], stdout=subprocess.DEVNULL, check=True)  # warm the cache
    count = [*MOLSIFT, "count", str(big), "--json", "--no-header"]
    m = alternate(count, args.repeats, inner=lambda out: json.loads(out)["seconds"])
    size = f"{big.stat().st_size / 1e9:.2f} GB"
    lines += [
        row(f"(a) molsift count {size}, whole process (wall)", "1 open, 1 stat, 1 mmap", m, "wall"),
        row(f"(a) molsift count {size}, counting only (wall)", "same", m, "inner"),
        row(f"(a) molsift count {size} (CPU)", "same", m, "cpu"),
    ]
    if not args.keep:
        big.unlink()

    csv = screen_bench.library(0, work)
    for buffer, name in ((1024, "1 KiB"), (1 << 20, "1 MiB")):
        cmd = [str(examples / "slab_read"), str(csv), str(buffer), "1", str(args.passes)]
        m = alternate(cmd, args.repeats, inner=lambda out: json.loads(out)["seconds"])
        calls = json.loads(run(cmd, True)[2])["read_calls"]
        # the same passes, recording switched on and off in turn inside one process
        paired = [
            json.loads(run([*cmd[:-1], str(2 * args.passes), "alternate"], True)[2])
            for _ in range(args.repeats)
        ]
        p = {
            ("pass", True): statistics.median(x["pass_on"] for x in paired),
            ("pass", False): statistics.median(x["pass_off"] for x in paired),
        }
        what = f"{calls // args.passes:,} reads"
        lines += [
            row(
                f"(b) slab read of MOSES x{args.passes}, {name} buffer (wall)",
                f"{calls:,} reads",
                m,
                "inner",
            ),
            row(f"(b) slab read of MOSES x{args.passes}, {name} buffer (CPU)", "same", m, "cpu"),
            row(
                f"(b) one pass, {name} buffer, on/off passes alternating in one process (wall)",
                what,
                p,
                "pass",
            ),
        ]

    if args.screen:
        lib = screen_bench.library(args.screen, work)
        out = work / "screen.csv"
        cmd = [
            *MOLSIFT,
            "screen",
            str(lib),
            "--scorer",
            "similarity",
            "-o",
            str(out),
            "-j",
            "2",
            "--overwrite",
            "-q",
            "--json",
            *[arg for s in screen_bench.REFS for arg in ("--ref", s)],
        ]
        m = alternate(cmd, args.repeats)
        io = json.loads(run(cmd, True)[2])["io"]
        what = f"{io['reads'] + io['writes']:,} requests, {io['opens']} opens"
        lines += [
            row(
                f"(c) molsift screen similarity, {args.screen:,} molecules, -j 2 (wall)",
                what,
                m,
                "wall",
            ),
            row(
                f"(c) molsift screen similarity, {args.screen:,} molecules, -j 2 (CPU)",
                "same",
                m,
                "cpu",
            ),
        ]

    costs = [
        json.loads(x)
        for x in subprocess.run(
            [str(examples / "request_cost"), str(work), "1000000", str(args.repeats)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.splitlines()
    ]
    plain = statistics.median(c["plain_ns"] for c in costs)
    counted = statistics.median(c["counted_ns"] for c in costs)

    print(
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end, "
        f"medians of {args.repeats} on/off pairs, {time.strftime('%Y-%m-%d %H:%M')}"
    )
    print("| scenario | counted calls per run | counters on (s) | off (s) | overhead |")
    print("|---|---|---:|---:|---:|")
    print("\n".join(lines))
    print(
        f"(d) one 1 KiB pread of a cached file: {plain:.0f} ns plain, {counted:.0f} ns counted: "
        f"+{counted - plain:.0f} ns per request (CPU time, median of {args.repeats} rounds of 10^6)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
