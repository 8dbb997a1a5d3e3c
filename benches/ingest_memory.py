"""Benchmark (issue 41, `--memory`): the root's memory by phase of one `molsift.ingest`.

The root process's resident memory (`RssAnon`: its heap, what `--memory` bounds; `RssFile`:
mapped file pages, the kernel's to reclaim) is sampled every 50 ms, and the peak of each is
kept for each phase the ingest announces (`progress.Phase` and `progress.Progress`: the
workers, the parts merged, the substructure planes, the one store's write, the substructure
index, the analog index). The workers are other processes: not counted here (see
`benches/memlimit.py` for the whole run under a cgroup). Prints one table: peak MiB of each
phase, and anonymous bytes a molecule above the root's memory before the first phase.

    .venv/bin/python benches/ingest_memory.py ../shared/data/moses_train.csv.gz -j 2
    .venv/bin/python benches/ingest_memory.py big.smi -j 2 --memory 2G --out /tmp/x.store
    .venv/bin/python benches/ingest_memory.py moses.csv -j 2 --shards 4 --dedupe --out /tmp/x.set

Compare builds by running it with each one's `PYTHONPATH` (the same input, the same -j).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import threading
import time
from pathlib import Path

#: the phase being sampled (set by the hooks below)
CURRENT = ["start"]
PEAKS: dict[str, list[int]] = {}


def _sample() -> tuple[int, int]:
    """(RssAnon, RssFile) of this process, bytes."""
    found = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("RssAnon", "RssFile")):
                key, value = line.split(":")
                found[key] = int(value.split()[0]) * 1024
    return found["RssAnon"], found["RssFile"]


def _sampler(stop: threading.Event) -> None:
    while not stop.is_set():
        anon, file = _sample()
        peak = PEAKS.setdefault(CURRENT[0], [0, 0])
        peak[0], peak[1] = max(peak[0], anon), max(peak[1], file)
        stop.wait(0.05)


def _hook() -> None:
    """Names the phase being sampled whenever ingest starts one."""
    from molsift import progress

    phase_enter = progress.Phase.__enter__
    bar_init = progress.Progress.__init__

    def enter(self):
        CURRENT[0] = self.desc
        return phase_enter(self)

    def init(self, desc, *args, **kwargs):
        CURRENT[0] = "the workers" if desc == "ingest" else desc
        return bar_init(self, desc, *args, **kwargs)

    progress.Phase.__enter__ = enter
    progress.Progress.__init__ = init


def main() -> int:
    from molsift.cli.common import parse_size

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("-j", "--workers", type=int, default=2)
    ap.add_argument("--memory", type=parse_size, help="ingest's --memory (default its own)")
    ap.add_argument("--out", default="/tmp/ingest_memory.store")
    ap.add_argument("--shards", type=int, help="write a store set of this many shards")
    ap.add_argument("--dedupe", action="store_true", help="ingest's --dedupe")
    args = ap.parse_args()

    import molsift

    # what the root imports on the way (RDKit, numpy), before the start is taken: the bytes a
    # molecule are then the phases' own
    import molsift.analogs.search
    import molsift.substructure.build

    _hook()
    base, _ = _sample()
    stop = threading.Event()
    threading.Thread(target=_sampler, args=(stop,), daemon=True).start()
    shutil.rmtree(args.out, ignore_errors=True)
    start = time.perf_counter()
    extra = {} if args.memory is None else {"memory": args.memory}  # older builds: no --memory
    if args.shards:
        extra["shards"] = args.shards
    report = molsift.ingest(
        args.input, args.out, workers=args.workers, overwrite=True, progress=False,
        dedupe=args.dedupe, **extra,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    stop.set()
    n = report.molecules
    mib = 2**20
    print(
        f"`molsift.ingest {Path(args.input).name} -j {args.workers}"
        f"{f' --shards {args.shards}' if args.shards else ''}"
        f"{' --dedupe' if args.dedupe else ''}`: {n:,} molecules in "
        f"{seconds:,.1f} s; the root's memory by phase (anonymous at start {base / mib:,.0f} MiB)"
    )
    print(
        "| phase | peak anonymous MiB | bytes a molecule above the start | peak file-mapped MiB |"
    )
    print("|---|---:|---:|---:|")
    for phase, (anon, file) in PEAKS.items():
        if phase == "start":
            continue
        print(
            f"| {phase} | {anon / mib:,.0f} | {(anon - base) / max(n, 1):,.1f} "
            f"| {file / mib:,.0f} |"
        )
    shutil.rmtree(args.out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
