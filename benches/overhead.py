"""Where `molsift screen` spends time beyond the RDKit work itself, per molecule, on MOSES.

Three runs of the same scorer on the same file, in alternating order, medians over rounds:
- the plain RDKit loop of benches/screen.py (the peer), in this process;
- molsift's worker loop (`Screener`: reader thread, prepare, score, row formatting, buffers) in
  this process, its buffers handed to a writer that drops them;
- `molsift screen -j 1` end to end (start-up, the worker process, the writer, the report).

This process (and so the loop and the in-process Screener) is restarted once with the allocator
molsift's workers use (tcmalloc when installed), so all three runs share it: the differences are
molsift's own. LD_PRELOAD is then put back, so `molsift screen` starts as a user's does
(restarting itself onto that allocator too). The two gaps it prints: the worker loop's overhead
(Screener - loop) and the process set-up's (end to end - Screener). `--profile` adds cProfile's
top functions of one in-process Screener run.

    .venv/bin/python benches/overhead.py [--limit 20000] [--scorers similarity,filter]
        [--rounds 3] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import screen as bench


def on_molsift_allocator() -> str:
    """Restarts this script once with molsift's allocator preloaded (as `molsift screen`
    restarts itself); returns its name."""
    from molsift import allocator

    allocator.reexec(sys.argv[1:], script=sys.argv[0])
    return allocator.loaded()


def make_scorer(name: str):
    from molsift.scorers import scorer_class

    cls = scorer_class(name)
    parser = argparse.ArgumentParser()
    cls.add_arguments(parser)
    argv = [w for s in bench.REFS for w in ("--ref", s)] if name == "similarity" else []
    return cls.from_args(parser.parse_args(argv))


def ways_to_screen(path: Path, name: str, tmp: str) -> dict:
    """The three runs compared, each screening `path` with scorer `name` and returning
    (molecules, seconds)."""
    return {
        "RDKit loop": lambda: bench.rdkit_loop(path, name, Path(tmp) / "loop.csv"),
        "molsift worker loop, in process": lambda: screener_in_process(path, name, tmp)[:2],
        "molsift screen -j 1, end to end": lambda: end_to_end(path, name, tmp),
    }


def screener_in_process(path: Path, name: str, tmp: str, profile: bool = False) -> tuple:
    """Runs molsift's worker loop over `path` here. Returns (records, seconds, profile text)."""
    from molsift.screen.layout import RunFiles
    from molsift.screen.run import make_plan
    from molsift.screen.worker import Screener, Timeline

    scorer = make_scorer(name)
    files = RunFiles(os.path.join(tmp, "in.csv"), os.path.join(tmp, "in.csv.run"))
    plan = make_plan(
        files,
        str(path),
        scorer,
        slabs=1,
        writers=1,
        write_buffer=1 << 20,
        reader={"buffer_size": None, "max_record_bytes": None},
        standardize=False,
        chunk_records=2000,
        threads=1,
        fmt={},
    )
    scorer.setup()
    timeline = Timeline(os.path.join(tmp, "timeline.jsonl"), {"worker": 0})
    s = Screener(plan, scorer, "w0", lambda payload: None, timeline)
    prof = cProfile.Profile() if profile else None
    start = time.perf_counter()
    if prof:
        prof.enable()
    for task in plan["tasks"]:
        s.run_task(task, None)
    s.finish()
    if prof:
        prof.disable()
    seconds = time.perf_counter() - start
    timeline.close()
    text = ""
    if prof:
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(15)
        text = out.getvalue()
    return s.stats["records"], seconds, text


def end_to_end(path: Path, name: str, tmp: str) -> tuple:
    """`molsift screen -j 1` as a user runs it: wall seconds from launch to exit."""
    start = time.perf_counter()
    rep = bench.molsift(path, name, 1, Path(tmp) / "e2e.csv")
    return rep["records_in"], time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--limit", type=int, default=20000, help="first N MOSES molecules (default 20000)"
    )
    ap.add_argument("--scorers", default="similarity,filter")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="cProfile one in-process Screener run")
    args = ap.parse_args()
    alloc = on_molsift_allocator()
    path = bench.library(args.limit)
    print(
        f"library {path} ({args.limit:,} molecules); this process and the loop on {alloc}; "
        f"machine: {os.cpu_count()} vCPU",
        flush=True,
    )
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.scorers.split(","):
            runs = ways_to_screen(path, name, tmp)
            times = {k: [] for k in runs}
            n = 0
            for r in range(args.rounds):
                order = list(runs) if r % 2 == 0 else list(reversed(runs))
                for k in order:
                    n, sec = runs[k]()
                    times[k].append(sec / n * 1e6)
                    print(
                        f"  {name} round {r + 1}: {k}: {sec / n * 1e6:.1f} us/molecule", flush=True
                    )
            med = {k: statistics.median(v) for k, v in times.items()}
            loop = med["RDKit loop"]
            for k in runs:
                rows.append((name, k, n, med[k], med[k] - loop, loop / med[k]))
            if args.profile:
                print(screener_in_process(path, name, tmp, profile=True)[2])
    print()
    print(
        "| scorer | run | molecules | µs per molecule (median) | over the loop, µs "
        "| share of the loop's speed |"
    )
    print("|---|---|---|---|---|---|")
    for name, k, n, us, over, share in rows:
        print(f"| {name} | {k} | {n:,} | {us:.1f} | {over:+.1f} | {share:.2f} |")


if __name__ == "__main__":
    main()
