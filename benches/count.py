"""Benchmark: `molsift count` against `wc -l`, `dd bs=4M` and fio on the same multi-GB SMILES
files, cold (page cache dropped) and cached, in one run (issue 21).

Builds the files by repeating the MOSES SMILES (../shared/data/moses_train.csv.gz) up to each
of --sizes GB. For every file it alternates the tools --repeats times and prints medians:

- cold (root only: `sync; echo 3 > /proc/sys/vm/drop_caches` before every run): `molsift
  count` with each `--io` path, `wc -l`, `dd bs=4M` and fio's sequential read at queue depth 16
  (`--bs=1M --iodepth=16 --ioengine=io_uring --direct=1`: the device's limit);
- cached (the file read once before): the same but fio;
- with --cgroup-mib N (root, cgroup v1 or v2): cold runs of each tool inside a memory cgroup of
  N MiB, smaller than the file;
- with --startup: only the start-up, `molsift count` of the small bundled file against
  `python -c pass` and `wc -l` (medians of 21).

Whole-process wall time is measured for every tool; molsift's own counting time is shown too.
Every tool must count the same lines (MOSES has one record per line after its header).

    sudo .venv/bin/python benches/count.py --sizes 2 8 16 --repeats 3 --cgroup-mib 1024
    apt-get install fio   # the peer; the script says so when it is missing
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WAYS = ("auto", "mmap", "pread", "uring", "direct")


def build(path: Path, source: Path, gb: float) -> None:
    target = int(gb * 1e9)
    if path.exists() and path.stat().st_size >= target:
        return
    with gzip.open(source, "rb") as fh:
        lines = fh.read().split(b"\n", 1)[1]  # drop the CSV header
    lines = lines if lines.endswith(b"\n") else lines + b"\n"
    tmp = path.with_suffix(".part")
    with open(tmp, "wb") as f:
        written = 0
        while written < target:
            f.write(lines)
            written += len(lines)
    tmp.rename(path)


def drop_caches() -> None:
    subprocess.run(["sync"], check=True)
    Path("/proc/sys/vm/drop_caches").write_text("3")


def warm(path: Path) -> None:
    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)


class Cgroup:
    """A memory cgroup of `mib` MiB that commands can be started in (v2 or v1)."""

    def __init__(self, mib: int):
        v2 = Path("/sys/fs/cgroup/cgroup.controllers")
        if v2.exists():
            self.dir = Path("/sys/fs/cgroup/molsift-bench")
            self.dir.mkdir(exist_ok=True)
            (self.dir / "memory.max").write_text(str(mib << 20))
            (self.dir / "memory.swap.max").write_text("0")
        else:
            self.dir = Path("/sys/fs/cgroup/memory/molsift-bench")
            self.dir.mkdir(exist_ok=True)
            (self.dir / "memory.limit_in_bytes").write_text(str(mib << 20))
        self.mib = mib

    def wrap(self, cmd: list[str]) -> list[str]:
        procs = self.dir / "cgroup.procs"
        return ["sh", "-c", f'echo $$ > {procs} && exec "$@"', "sh", *cmd]

    def close(self) -> None:
        try:
            self.dir.rmdir()
        except OSError as exc:
            print(f"could not remove the cgroup {self.dir}: {exc}", file=sys.stderr)


def run(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}")
    return seconds, done.stdout


def tools(path: Path, molsift: str, threads: int | None, cold: bool) -> dict[str, list[str]]:
    out = {}
    for way in WAYS:
        cmd = [molsift, "count", str(path), "--json", "--io", way]
        out[f"molsift count --io {way}"] = cmd + (["-j", str(threads)] if threads else [])
    out["wc -l"] = ["wc", "-l", str(path)]
    out["dd bs=4M"] = ["dd", f"if={path}", "of=/dev/null", "bs=4M"]
    if cold and shutil.which("fio"):
        out["fio qd16 direct"] = [
            "fio", "--name=seq", f"--filename={path}", "--rw=read", "--bs=1M",
            "--iodepth=16", "--ioengine=io_uring", "--direct=1", "--readonly",
            "--output-format=json",
        ]  # fmt: skip
    return out


def measure(path: Path, cmds: dict[str, list[str]], repeats: int, cold: bool, wrap=None):
    """{tool: [(whole s, counting s or None, io, amplification)]}, the tools alternated."""
    got: dict[str, list] = {name: [] for name in cmds}
    lines = set()
    for _ in range(repeats):
        for name, cmd in cmds.items():
            if cold:
                drop_caches()
            seconds, out = run(wrap(cmd) if wrap else cmd)
            inner, io, amp = None, "", None
            if name.startswith("molsift"):
                r = json.loads(out)
                inner, io, amp = r["seconds"], r["io"], r["bytes_read"] / r["bytes"]
                lines.add(r["records"])
            elif name == "wc -l":
                lines.add(int(out.split()[0]))
            elif name.startswith("fio"):
                job = json.loads(out)["jobs"][0]["read"]
                seconds = job["runtime"] / 1e3  # the read itself, not fio's set-up
            got[name].append((seconds, inner, io, amp))
    if len(lines) != 1:
        raise SystemExit(f"MISMATCH on {path}: {sorted(lines)}")
    return got, lines.pop()


def table(label: str, path: Path, size: int, got: dict, records: int) -> None:
    med = {name: statistics.median(r[0] for r in runs) for name, runs in got.items()}
    wc, fio = med["wc -l"], med.get("fio qd16 direct")
    print(f"\n### {label}: {path.name}, {size / 1e9:.2f} GB, {records:,} records\n")
    print("| tool | median s (whole process) | GB/s | vs wc -l | of fio | counting only GB/s "
          "| path | read amplification |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for name, runs in got.items():
        s = med[name]
        inner = [r[1] for r in runs if r[1]]
        inner_gbs = f"{size / statistics.median(inner) / 1e9:.2f}" if inner else ""
        of_fio = f"{fio / s:.0%}" if fio else ""
        paths = "+".join(sorted({r[2] for r in runs if r[2]}))
        amps = [r[3] for r in runs if r[3] is not None]
        amp = f"{max(amps):.4f}" if amps else ""
        print(
            f"| {name} | {s:.3f} | {size / s / 1e9:.2f} | {wc / s:.2f}x | {of_fio} | "
            f"{inner_gbs} | {paths} | {amp} |"
        )


def startup(molsift: str, runs: int = 21) -> None:
    """Median whole-process time of `molsift count` on the small bundled file, against Python's
    own start and `wc -l`: what the process costs before and after the counting."""
    small = str(ROOT / "data/nci_first_5k.smi")
    cmds = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "molsift count data/nci_first_5k.smi": [molsift, "count", small],
        "wc -l data/nci_first_5k.smi": ["wc", "-l", small],
    }
    print(f"\n### start-up: median of {runs} whole processes, alternated\n")
    print("| command | median ms |")
    print("|---|---|")
    times: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(runs):
        for name, cmd in cmds.items():
            times[name].append(run(cmd)[0])
    for name, ts in times.items():
        print(f"| {name} | {statistics.median(ts) * 1e3:.1f} |")


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", default=str(ROOT.parent / "shared/data/moses_train.csv.gz"))
    ap.add_argument("--dir", default="/tmp/molsift-bench", help="where the big files go")
    ap.add_argument("--sizes", type=float, nargs="+", default=[2.0], help="file sizes in GB")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None, help="molsift threads (default: all)")
    ap.add_argument("--cgroup-mib", type=int, default=0, help="also run in a memory cgroup")
    ap.add_argument("--no-cold", action="store_true", help="cached runs only (no root needed)")
    ap.add_argument("--keep", action="store_true", help="keep the big files")
    ap.add_argument("--startup", action="store_true", help="only time the start-up, then exit")
    args = ap.parse_args()
    molsift = str(Path(sys.executable).with_name("molsift"))
    if args.startup:
        startup(molsift)
        return 0

    cold = not args.no_cold
    if cold and os.geteuid() != 0:
        raise SystemExit("cold runs drop the page cache: run as root, or pass --no-cold")
    if cold and not shutil.which("fio"):
        print("fio not found (apt-get install fio): the device's limit is not measured",
              file=sys.stderr)  # fmt: skip
    where = Path(args.dir)
    where.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(
        f"commit {commit}, {os.cpu_count()} cores, load {load[0]:.2f} {load[1]:.2f} "
        f"{load[2]:.2f}, medians of {args.repeats}, tools alternated; fio: --bs=1M "
        "--iodepth=16 --ioengine=io_uring --direct=1 (its own read time)"
    )
    for gb in args.sizes:
        path = where / f"moses_{gb:g}gb.smi"
        build(path, Path(args.data), gb)
        size = path.stat().st_size
        if cold:
            got, n = measure(path, tools(path, molsift, args.threads, True), args.repeats, True)
            table("cold (page cache dropped before every run)", path, size, got, n)
        warm(path)
        got, n = measure(path, tools(path, molsift, args.threads, False), args.repeats, False)
        table("cached", path, size, got, n)
        if args.cgroup_mib and cold:
            group = Cgroup(args.cgroup_mib)
            try:
                cmds = tools(path, molsift, args.threads, False)
                got, n = measure(path, cmds, args.repeats, True, wrap=group.wrap)
            finally:
                group.close()
            table(f"cold, in a memory cgroup of {args.cgroup_mib} MiB", path, size, got, n)
        if not args.keep:
            path.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
