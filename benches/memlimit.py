"""Run a command under a memory limit and measure its peak memory: what
`systemd-run --scope -p MemoryMax=4G CMD` does, for machines whose PID 1 is not systemd.

A cgroup is made for the run (cgroup v2: `memory.max`; cgroup v1: `memory.limit_in_bytes` under
`/sys/fs/cgroup/memory`), the command is started inside it (its children too: worker
processes, MPI ranks), and while it runs the cgroup's resident anonymous memory (`anon` in
cgroup v2's `memory.stat`, `total_rss` in v1's) is sampled every 0.1 s. Reported:

- `peak_rss`: the largest sampled sum of the resident memory of every process of the run (what
  the limit must hold; page cache is not in it);
- `peak_charged`: the cgroup's own peak charge (`memory.peak` / `memory.max_usage_in_bytes`),
  page cache included, which the kernel reclaims at the limit rather than failing;
- `oom_kills`: processes the kernel killed at the limit (0 when the run fit).

    .venv/bin/python benches/memlimit.py 4G -- .venv/bin/molsift ingest big.smi -o big.store

Needs root (or a delegated cgroup). Without a writable cgroup hierarchy it says so and exits 2.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

V2 = Path("/sys/fs/cgroup")
V1 = Path("/sys/fs/cgroup/memory")


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    text = text.strip().upper().rstrip("B").rstrip("I")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


@dataclass
class Limited:
    returncode: int
    seconds: float
    limit: int
    peak_rss: int
    peak_charged: int
    oom_kills: int
    cgroup: str


def _make_cgroup(limit: int) -> tuple[Path, str]:
    name = f"molsift-bench-{os.getpid()}-{time.monotonic_ns()}"
    if (V2 / "cgroup.controllers").exists() and not V1.is_dir():
        group = V2 / name
        group.mkdir()
        (group / "memory.max").write_text(str(limit))
        (group / "memory.swap.max").write_text("0")
        return group, "v2"
    group = V1 / name
    group.mkdir()
    (group / "memory.limit_in_bytes").write_text(str(limit))
    swap = group / "memory.memsw.limit_in_bytes"
    if swap.exists():  # no escape into swap
        swap.write_text(str(limit))
    return group, "v1"


def _stat(group: Path, keys: tuple[str, ...]) -> int:
    total = 0
    for line in (group / "memory.stat").read_text().splitlines():
        key, _, value = line.partition(" ")
        if key in keys:
            total += int(value)
    return total


def run(cmd: list[str], limit: int, **popen) -> Limited:
    """Runs `cmd` in a new cgroup limited to `limit` bytes; waits; measures; removes the group."""
    try:
        group, kind = _make_cgroup(limit)
    except OSError as exc:
        raise SystemExit(f"memlimit: cannot make a cgroup ({exc}); run as root") from exc
    procs = group / "cgroup.procs"
    rss_keys = ("anon",) if kind == "v2" else ("total_rss",)  # huge pages counted in both
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            with contextlib.suppress(OSError):
                peak[0] = max(peak[0], _stat(group, rss_keys))
            done.wait(0.1)

    def enter() -> None:  # in the child, before exec: join the group
        with open(procs, "w") as fh:
            fh.write(str(os.getpid()))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    try:
        rc = subprocess.run(cmd, preexec_fn=enter, **popen).returncode
    finally:
        seconds = time.perf_counter() - t0
        done.set()
        sampler.join()
        if kind == "v2":
            peak_file = group / "memory.peak"
            charged = int(peak_file.read_text()) if peak_file.exists() else 0
            events = dict(
                line.split() for line in (group / "memory.events").read_text().splitlines()
            )
            kills = int(events.get("oom_kill", 0))
        else:
            charged = int((group / "memory.max_usage_in_bytes").read_text())
            oom = dict(
                line.split() for line in (group / "memory.oom_control").read_text().splitlines()
            )
            kills = int(oom.get("oom_kill", 0))
        for _ in range(50):  # the group goes once its last process has
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)
    return Limited(rc, seconds, limit, peak[0], charged, kills, kind)


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    result = run(argv[2:], parse_size(argv[0]))
    print(
        f"memlimit: exit {result.returncode}, {result.seconds:.1f} s, limit "
        f"{result.limit / 2**30:.2f} GiB (cgroup {result.cgroup}), peak RSS "
        f"{result.peak_rss / 2**20:,.0f} MiB, peak charged (page cache included) "
        f"{result.peak_charged / 2**20:,.0f} MiB, OOM kills {result.oom_kills}",
        file=sys.stderr,
    )
    return result.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
