"""Per-call overhead of the `molsift profile` tracer (crates/tracer) against the plain run.

    .venv/bin/python benches/tracer_overhead.py [--calls 1000000] [--repeats 5]

A small C program (below, compiled with gcc -O2) times N calls of one kind in a loop with
clock_gettime around the loop only, so process start and the log write are not counted:
  pread   1 byte at offset 0 of a 4 KiB file (page cache)      traced file
  pwrite  1 byte at offset 0 of a 4 KiB file                   traced file
  stat    an absolute path                                     traced path
  fstat   an open traced file
  read    1 byte of /dev/zero (excluded from tracing: the cost of an untraced descriptor)
Each kind runs plain, with the library preloaded but off (no MOLSIFT_TRACER_DIR), and traced,
alternating, REPEATS times; the table shows medians in ns/call and the traced - plain difference.
Darshan's published figure for comparison (ANCHORS.md): +0.25 us/call.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from molsift.profiler.profile import write_tracer_library

OPS = ["pread", "pwrite", "stat", "fstat", "read"]
SOURCE = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    const char *op = argv[1], *path = argv[2];
    long n = atol(argv[3]);
    char buf[16];
    struct stat st;
    int fd = strcmp(op, "read") == 0 ? open("/dev/zero", O_RDONLY) : open(path, O_RDWR);
    if (fd < 0) return 1;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (!strcmp(op, "pread")) for (long i = 0; i < n; i++) pread(fd, buf, 1, 0);
    else if (!strcmp(op, "pwrite")) for (long i = 0; i < n; i++) pwrite(fd, buf, 1, 0);
    else if (!strcmp(op, "stat")) for (long i = 0; i < n; i++) stat(path, &st);
    else if (!strcmp(op, "fstat")) for (long i = 0; i < n; i++) fstat(fd, &st);
    else if (!strcmp(op, "read")) for (long i = 0; i < n; i++) read(fd, buf, 1);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.2f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
    close(fd);
    return 0;
}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lib = write_tracer_library(tmp)  # the library molsift profile preloads
        exe, data, logs = Path(tmp) / "calls", Path(tmp) / "data.bin", Path(tmp) / "logs"
        (Path(tmp) / "calls.c").write_text(SOURCE)
        subprocess.run(["gcc", "-O2", "-o", str(exe), str(Path(tmp) / "calls.c")], check=True)
        data.write_bytes(b"x" * 4096)
        logs.mkdir()
        modes = {
            "plain": {},
            "preloaded, off": {"LD_PRELOAD": lib},
            "traced": {"LD_PRELOAD": lib, "MOLSIFT_TRACER_DIR": str(logs)},
        }
        times = {(op, m): [] for op in OPS for m in modes}
        for _ in range(args.repeats):
            for op in OPS:
                for mode, extra in modes.items():
                    env = dict(os.environ, **extra)
                    out = subprocess.run(
                        [str(exe), op, str(data), str(args.calls)],
                        env=env,
                        capture_output=True,
                        text=True,
                        check=True,
                    ).stdout
                    times[op, mode].append(float(out))
        logged = sorted(os.listdir(logs))
    print(
        f"{args.calls:,} calls per run, median of {args.repeats} runs, ns/call "
        f"({len(logged)} traced runs wrote their log)"
    )
    print("| call | plain | preloaded, off | traced | traced - plain |")
    print("|---|---|---|---|---|")
    for op in OPS:
        med = {m: statistics.median(times[op, m]) for m in modes}
        print(
            f"| {op} | {med['plain']:.0f} | {med['preloaded, off']:.0f} | {med['traced']:.0f} "
            f"| {med['traced'] - med['plain']:+.0f} |"
        )


if __name__ == "__main__":
    main()
