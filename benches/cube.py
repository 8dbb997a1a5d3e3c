"""Benchmark: reading and writing Gaussian cube files, molsift against the peers, in ONE run.

Files are real: PySCF (`pyscf.tools.cubegen`) densities, orbitals and potentials of water and
formaldehyde (RHF/6-31G*) at 80^3, 200^3 and 400^3 points (`benches/cube_data.py` writes the
ones missing into --data; the electrostatic potential is slow in PySCF, so it is made up to
200^3 only).
Each file is read once first (page cache warm), then, alternating:

- molsift `read_cube` with 1 and 2 workers (threads), float64; and one thread forced onto the
  counting path (the path of files whose rows differ in bytes), into an array already made;
- ASE `ase.io.cube.read_cube_data` (a `float()` per value);
- numpy `fromstring(text, sep=" ")` on the value text, and `loadtxt` (which refuses the
  ragged rows of these grids: rows of n3 values in lines of six);
- pandas `read_csv(sep=r"\\s+")` on the value text (rows padded with NaN, dropped);

and molsift `write_cube` (CP2K layout) with 1 and 2 workers, to the page cache and with fsync,
and `molsift cube convert` to `.npy` as whole commands: 2 threads, and `mpirun -n 2` (MPI-IO).
Every peer's array is compared with molsift's (bit for bit). A cold row reads the file after
dropping it from the page cache (posix_fadvise DONTNEED) and reports the device bytes read
(/proc/self/io read_bytes) over the file size: the read amplification. Medians of --repeats
(--peer-repeats for the slow peers on files over 200 MB).

    .venv/bin/python benches/cube.py --data /tmp/molsift-cube-bench
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MOLSIFT = str(Path(sys.executable).parent / "molsift")
MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none"]
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from search import timed as median_time  # noqa: E402 (benches/ on the path first)


def value_text(path: Path, header_lines: int) -> bytes:
    with open(path, "rb") as f:
        for _ in range(header_lines):
            f.readline()
        return f.read()


def new_file_time(out: Path, fn, repeats: int):
    """Median over `repeats` of the time of fn() writing `out`, which is removed before each
    call (outside the timing), and fn's last result."""
    times, result = [], None
    for _ in range(repeats):
        out.unlink(missing_ok=True)
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), result


def io_read_bytes() -> int:
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    return 0


def drop_from_cache(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def same(a: np.ndarray, b: np.ndarray) -> str:
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    if a.shape != b.shape:
        return f"shape {a.shape} != {b.shape}"
    diff = int(np.count_nonzero(a.view(np.uint64) != b.view(np.uint64)))
    return "identical" if diff == 0 else f"{diff} values differ"


def bench_file(path: Path, args, row) -> None:
    import molsift
    from molsift.cube.io import read_header

    mb = path.stat().st_size / 1e6
    name = path.name
    h = read_header(path)
    path.read_bytes()  # warm the page cache
    big = mb > 200
    reps = args.repeats
    peer_reps = args.peer_repeats if big else args.repeats

    times = {}
    cube = None
    for workers in (1, 2):
        s, cube = median_time(lambda w=workers: molsift.read_cube(path, workers=w), reps)
        times[workers] = s
        row(name, mb, "molsift read_cube", workers, s)
    ours = cube.values
    # the counting path (what a file whose rows differ in bytes takes), forced on this one
    from molsift import _core

    into = np.empty_like(ours)
    s, _ = median_time(
        lambda: _core.cube_read(
            str(path), into.ctypes.data, into.nbytes, "float64", threads=1, fixed=False
        ),
        reps,
    )
    note = "identical" if np.array_equal(into, ours) else "DIFFERS"
    row(name, mb, "molsift read_cube, counting path", 1, s, f"into one array; {note}")
    if not args.no_peers:
        from ase.io.cube import read_cube_data

        s, (ase_values, _) = median_time(lambda: read_cube_data(str(path)), peer_reps)
        row(name, mb, "ase read_cube_data", 1, s,
            f"{s / times[1]:.1f}x molsift/1 core; {same(ase_values, ours)}")  # fmt: skip

        def fromstring():
            return np.fromstring(value_text(path, h["header_lines"]), sep=" ")

        s, v = median_time(fromstring, peer_reps)
        row(name, mb, "numpy fromstring", 1, s,
            f"{s / times[1]:.1f}x; {same(v, ours)}")  # fmt: skip
        if mb < 10:
            t = time.perf_counter()
            try:
                v = np.loadtxt(io.BytesIO(value_text(path, h["header_lines"])))
                note = same(v, ours)
            except ValueError as exc:
                note = f"fails: {str(exc)[:60]}"
            row(name, mb, "numpy loadtxt", 1, time.perf_counter() - t, note)
        import pandas as pd

        def pandas():
            df = pd.read_csv(
                io.BytesIO(value_text(path, h["header_lines"])),
                sep=r"\s+",
                header=None,
                names=range(6),
                dtype=np.float64,
            )
            v = df.to_numpy().reshape(-1)
            return v[~np.isnan(v)]

        s, v = median_time(pandas, peer_reps)
        row(name, mb, "pandas read_csv", 1, s, f"{s / times[1]:.1f}x; {same(v, ours)}")
    # writing (CP2K layout), to the page cache and with fsync; a new file each time (the
    # previous one removed before the clock starts, so that dropping its pages is not timed)
    out = path.parent / f"written_{name}"
    for workers in (1, 2):
        s, n = new_file_time(
            out, lambda w=workers: molsift.write_cube(out, cube, workers=w, sync=False), reps
        )
        row(name, n / 1e6, "molsift write_cube cp2k", workers, s, "page cache")
    s, n = new_file_time(out, lambda: molsift.write_cube(out, cube, workers=2, sync=True), 1)
    row(name, n / 1e6, "molsift write_cube cp2k+fsync", 2, s)
    # convert to .npy: one process (threads) against mpirun ranks (MPI-IO collective read and
    # .npy write), whole commands, each result compared with the first
    if args.mpi and shutil.which("mpirun"):
        npy = path.parent / f"converted_{name}.npy"
        first = None
        for label, cmd in (
            (
                "molsift cube convert -j 2",
                [MOLSIFT, "cube", "convert", str(path), "-o", str(npy), "-j", "2"],
            ),
            (
                "mpirun -n 2 ... convert",
                [*MPIRUN, "-n", "2", MOLSIFT, "cube", "convert", str(path), "-o", str(npy)],
            ),
        ):
            t = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True, env=MPI_ENV)
            s = time.perf_counter() - t
            data = npy.read_bytes()
            note = "" if first is None else ("same .npy" if data == first else ".npy DIFFERS")
            first = first or data
            row(name, mb, label, 2, s, f"whole command; {note}".rstrip("; "))
        npy.unlink(missing_ok=True)
        Path(f"{npy}.json").unlink(missing_ok=True)
    # cold read: the device bytes over the file size
    drop_from_cache(path)
    before = io_read_bytes()
    t = time.perf_counter()
    molsift.read_cube(path, workers=1)
    s = time.perf_counter() - t
    amp = (io_read_bytes() - before) / path.stat().st_size
    row(name, mb, "molsift read_cube (cold)", 1, s, f"read amplification {amp:.4f}")
    out.unlink(missing_ok=True)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", default="/tmp/molsift-cube-bench")
    ap.add_argument("--sizes", type=int, nargs="+", default=[80, 200, 400])
    ap.add_argument("--kinds", nargs="+", default=["density", "orbital", "mep"])
    ap.add_argument("--molecules", nargs="+", default=["water", "formaldehyde"])
    ap.add_argument("--mep-max", type=int, default=200, help="largest grid of the slow MEP")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--peer-repeats", type=int, default=1, help="for peers on files > 200 MB")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--no-mpi", dest="mpi", action="store_false", help="skip the mpirun rows")
    args = ap.parse_args()

    from cube_data import write_pyscf_cube

    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    print(f"# commit {commit}; load average {os.getloadavg()}; {os.cpu_count()} cores")
    cache: dict = {}

    def row(file, mb, tool, workers, seconds, note=""):
        gbs = mb / 1e3 / seconds if seconds else float("nan")
        print(
            f"{file:34s} {mb:8.1f} MB  {tool:30s} {workers!s:>3}  {seconds:9.3f} s"
            f"  {gbs:6.3f} GB/s  {note}",
            flush=True,
        )

    for size in args.sizes:
        for molecule in args.molecules:
            for kind in args.kinds:
                if kind == "mep" and size > args.mep_max:
                    continue
                path = data / f"{molecule}_{kind}_{size}.cube"
                if not path.exists():
                    s = write_pyscf_cube(str(path), molecule, kind, size, cache)
                    print(f"# generated {path} with PySCF in {s:.1f} s", flush=True)
                bench_file(path, args, row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
