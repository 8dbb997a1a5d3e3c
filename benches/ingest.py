"""Benchmark: `molsift ingest` of MOSES against RDKit's own single-process loop, in one run.

Peer: a plain Python loop over the SMILES already in memory (so the peer pays no I/O), doing the
same work as ingest: Chem.MolFromSmiles, Chem.MolToSmiles, and a Morgan fingerprint from
rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048). molsift reads the file
itself, parses, fingerprints and writes the one store (without the substructure and analog
indexes in the plain rows: the same work as the loop; `--complete` builds every index).

Like with like: molsift's workers run on tcmalloc when it is installed
(python/molsift/allocator.py), so the headline column compares molsift with the loop on the
**same allocator** (tcmalloc preloaded, same work, same number of processes). The loop as a
user runs it (glibc's malloc) is its own row: the allocator's gain, shown apart.

`--plain` ingests a plain (decompressed) copy of the file: the slab path, with its one
line-number pre-pass, instead of the gzip stream path. `--compare NAME=PYTHON` also runs
`PYTHON -m molsift ingest` (another build of molsift, e.g. a worktree at the commit before a
change) on the same data, alternating with this build, so both are measured side by side.

Checks every molecule: molsift's fingerprint equals the peer's bit for bit, its canonical SMILES
are equal, and records in = molecules stored + rejected.

    .venv/bin/python benches/ingest.py                 # all 1,584,663 molecules, -j 1 and -j 2
    .venv/bin/python benches/ingest.py --limit 100000  # a quicker look
    .venv/bin/python benches/ingest.py --plain --compare before=/work/before/.venv/bin/python
    .venv/bin/python benches/ingest.py --complete --plain   # the complete store (issue 41)

`--complete` measures what a user needs for every search: one `molsift ingest` (the one store
with every index; the substructure index computed in the same pass by the workers; for builds
before the one store, `ingest --analogs` then `upgrade`, timed together), against
the same loop and against the loop with RDKit's `PatternFingerprint` added (the screen's own
cost), with the peak RSS of the molsift processes and the complete store's bytes/molecule.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def rdkit_loop(smiles):
    from rdkit import Chem, RDLogger
    from rdkit.Chem import rdFingerprintGenerator

    RDLogger.DisableLog("rdApp.*")
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    canon, fps = [], []
    start = time.perf_counter()
    for smi in smiles:
        mol = Chem.MolFromSmiles(smi)
        if mol is None:
            canon.append(None)
            fps.append(None)
            continue
        canon.append(Chem.MolToSmiles(mol))
        fps.append(gen.GetFingerprint(mol))
    return time.perf_counter() - start, canon, fps


def rdkit_pattern_loop(smiles) -> tuple:
    """The loop plus RDKit's PatternFingerprint (2048 bits) of each molecule."""
    from rdkit import Chem, RDLogger
    from rdkit.Chem import rdFingerprintGenerator

    RDLogger.DisableLog("rdApp.*")
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    start = time.perf_counter()
    done = 0
    for smi in smiles:
        mol = Chem.MolFromSmiles(smi)
        if mol is None:
            continue
        Chem.MolToSmiles(mol)
        gen.GetFingerprint(mol)
        Chem.PatternFingerprint(mol, fpSize=2048)
        done += 1
    return time.perf_counter() - start, done


def _rdkit_loop_count(smiles):
    seconds, canon, _ = rdkit_loop(smiles)
    return seconds, len(canon)


def rdkit_loop_processes(smiles, procs: int, preload=None) -> float:
    """The same loop in `procs` processes, each on every procs-th molecule, started and warmed
    up (RDKit imported) before the clock starts: what this machine allows RDKit on `procs`
    cores (with `preload` in LD_PRELOAD, when given)."""
    from peers import timed_in_processes

    return timed_in_processes(_rdkit_loop_count, [smiles[i::procs] for i in range(procs)], preload)[
        0
    ]


def pack(fps, chunk: int = 100_000) -> np.ndarray:
    """RDKit bit vectors -> (n, 32) little-endian u64 words, bit i in word i//64 at bit i%64."""
    words = np.zeros((len(fps), 32), dtype="<u8")
    for start in range(0, len(fps), chunk):
        part = fps[start : start + chunk]
        dense = np.zeros((len(part), 2048), dtype=np.uint8)
        rows, bits = [], []
        for i, fp in enumerate(part):
            on = fp.GetOnBits()
            rows.extend([i] * len(on))
            bits.extend(on)
        dense[np.asarray(rows, dtype=np.int64), np.asarray(bits, dtype=np.int64)] = 1
        words[start : start + len(part)] = np.packbits(dense, axis=1, bitorder="little").view("<u8")
    return words


_PEAK = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "for cmd in sys.argv[1].split(' ;; '):\n"
    "    subprocess.run(cmd.split(' '), check=True, stdout=subprocess.DEVNULL)\n"
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def run_complete(data: Path, out: Path, workers: int, python: str = sys.executable) -> tuple:
    """The complete store, every index: one `molsift ingest` (since the one store); for builds
    before it, ingest --analogs then upgrade. (wall s, peak RSS MiB of any molsift process,
    the store's path, what was run: "ingest" or "ingest --analogs + upgrade")."""
    v1, v2 = out.with_suffix(".v1"), out.with_suffix(".v2")
    for p in (v1, v2):
        shutil.rmtree(p, ignore_errors=True)
    helps = subprocess.run(
        [python, "-m", "molsift", "ingest", "--help"], capture_output=True, text=True
    ).stdout
    if "--no-analogs" in helps:  # one command writes the one store with every index
        cmds = [f"{python} -m molsift ingest {data} -o {v2} -j {workers} -q"]
        how = "ingest"
    else:
        how = "ingest --analogs + upgrade"
        cmds = [
            f"{python} -m molsift ingest {data} -o {v1} -j {workers} -q --analogs",
            f"{python} -m molsift upgrade {v1} -o {v2} -j {workers}",
        ]
    proc = subprocess.run(
        [python, "-c", _PEAK, " ;; ".join(cmds)],
        check=True,
        capture_output=True,
        text=True,
        cwd=out.parent,
    )
    wall, kib = proc.stdout.split()
    shutil.rmtree(v1, ignore_errors=True)
    return float(wall), int(kib) / 1024, v2, how


def run_molsift(data: Path, out: Path, workers: int, python: str = sys.executable) -> tuple:
    cmd = [python, "-m", "molsift", "ingest", str(data), "-o", str(out)]
    cmd += ["-j", str(workers), "--json", "-q", "--overwrite"]
    # the same work as the RDKit loop (parse, canonical SMILES, Morgan fingerprints): the
    # substructure index, which builds by default since issue 16, is measured by
    # benches/substructure.py; builds before it have no such option
    helps = subprocess.run(
        [python, "-m", "molsift", "ingest", "--help"], capture_output=True, text=True
    ).stdout
    if "--no-pattern" in helps:
        cmd.append("--no-pattern")
    if "--no-analogs" in helps:  # the one store builds the analog index by default
        cmd.append("--no-analogs")
    start = time.perf_counter()
    proc = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=out.parent)
    return time.perf_counter() - start, json.loads(proc.stdout)


def open_either(path: Path):
    """The store a build wrote: the one store, or version 1 from a build before it."""
    import molsift
    from molsift.store import format_version

    if format_version(path) == 1:
        from molsift.store import open_version_1

        return open_version_1(path)
    return molsift.open_store(path)


def input_order(store) -> np.ndarray:
    """Store positions in input order (the one store keeps SMILES order; version 1 input)."""
    if hasattr(store, "input_ranks"):
        return np.argsort(store.input_ranks)
    return np.arange(len(store))


def read_moses(path: Path, limit: int | None) -> list[str]:
    with gzip.open(path, "rt") as f:
        lines = f.read().splitlines()[1:]
    return lines[:limit] if limit else lines


def write_input(work: Path, lines: list[str], plain: bool) -> Path:
    """The file molsift reads: a plain CSV (slab path) or gzip (stream path)."""
    text = "SMILES\n" + "\n".join(lines) + "\n"
    if plain:
        data = work / "moses.csv"
        data.write_text(text)
    else:
        data = work / "moses.csv.gz"
        with gzip.open(data, "wt", compresslevel=1) as f:
            f.write(text)
    return data


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", default=str(ROOT.parent / "shared/data/moses_train.csv.gz"))
    ap.add_argument("--limit", type=int, help="use only the first N molecules")
    ap.add_argument("--workers", default="1,2", help="molsift worker counts to run")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--plain", action="store_true", help="ingest a plain copy (slab path)")
    ap.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="NAME=PYTHON",
        help="also run another build's molsift (its python), alternating with this one",
    )
    ap.add_argument(
        "--complete",
        action="store_true",
        help="time ingest + upgrade to the complete version-2 store (every index)",
    )
    ap.add_argument(
        "--no-system-peer",
        action="store_true",
        help="skip the loop on the system allocator (the allocator-gain row)",
    )
    args = ap.parse_args()

    from molsift import allocator

    work = Path(args.workdir or tempfile.mkdtemp(prefix="molsift-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    lines = read_moses(Path(args.data), args.limit)
    n = len(lines)
    data = write_input(work, lines, args.plain)
    workers = [int(x) for x in args.workers.split(",")]
    builds = [("this build", sys.executable)] + [tuple(c.split("=", 1)) for c in args.compare]
    lib = allocator.library()
    print(
        f"{n:,} molecules from {args.data} ({data.name}); {os.cpu_count()} cores; "
        f"allocator of molsift's workers and of the reference loop: {lib or 'system'}",
        flush=True,
    )

    # the reference: the loop on the allocator molsift's workers use, 1 process and N
    ref_s, canon, fps = timed_loop_preloaded(lines, lib) if lib else rdkit_loop(lines)
    ref_rate = n / ref_s
    print(f"RDKit loop, same allocator: {ref_s:.1f} s", flush=True)
    peers = [("RDKit loop, 1 process, same allocator (the reference)", 1, ref_s)]
    for w in sorted({w for w in workers if w > 1}):
        sec = rdkit_loop_processes(lines, w, preload=lib)
        peers.append((f"RDKit loop, {w} processes, same allocator (the machine's scaling)", w, sec))
        print(f"RDKit loop in {w} processes: {sec:.1f} s", flush=True)
    if lib and not args.no_system_peer:
        sec = rdkit_loop(lines)[0]
        peers.append(("RDKit loop, 1 process, system malloc (as a user's script runs)", 1, sec))
        print(f"RDKit loop on the system allocator: {sec:.1f} s", flush=True)
    expected = pack([f for f in fps if f is not None])
    expected_smiles = [c for c in canon if c is not None]
    del fps
    if args.complete:
        from peers import timed_in_processes

        sec = timed_in_processes(rdkit_pattern_loop, [lines], lib)[0]
        peers.append(("RDKit loop + PatternFingerprint, 1 process, same allocator", 1, sec))
        print(f"RDKit loop + PatternFingerprint: {sec:.1f} s", flush=True)
        return complete(args, work, data, n, workers, builds, peers, ref_rate, expected,
                        expected_smiles)  # fmt: skip

    rows = []
    for w in workers:
        for name, python in builds:  # alternating: the builds see the same machine state
            out = work / f"moses_j{w}.store"
            wall, report = run_molsift(data, out, w, python)
            store = open_either(out)
            assert report["records_in"] == n == report["molecules"] + report["rejected"], report
            # the one store keeps molecules in SMILES order: compare in input order
            order = input_order(store)
            same_fp = bool(np.array_equal(store.fingerprints[order], expected))
            same_smiles = [store.smiles[int(i)] for i in order] == expected_smiles
            del store
            rate = report["molecules"] / wall
            rows.append(
                (
                    name,
                    w,
                    wall,
                    rate,
                    same_fp,
                    same_smiles,
                    report["store_bytes"] / n,
                    report["rejected"],
                    report.get("allocator", "system"),
                )
            )
            print(f"molsift ({name}) -j {w}: {wall:.1f} s", flush=True)
            shutil.rmtree(out)

    print()
    print(
        "| run | wall s | molecules/s | per core vs the RDKit loop on the same allocator "
        "| fingerprints equal | SMILES equal | store bytes/molecule | rejected |"
    )
    print("|---|---:|---:|---:|---|---|---:|---:|")
    for label, w, sec in peers:
        print(
            f"| {label} | {sec:.1f} | {n / sec:,.0f} | {n / sec / w / ref_rate:.2f} "
            f"| - | - | - | - |"
        )
    path = "plain CSV: slab path" if args.plain else "gzip: stream path"
    for name, w, wall, rate, same_fp, same_smiles, bpm, rej, alloc in rows:
        print(
            f"| molsift ingest -j {w}, {name} ({path}; allocator {alloc}) | {wall:.1f} "
            f"| {rate:,.0f} | **{rate / w / ref_rate:.2f}** | {same_fp} | {same_smiles} "
            f"| {bpm:.1f} | {rej} |"
        )
    ok = all(r[4] and r[5] for r in rows)
    if not ok:
        print("MISMATCH between molsift and RDKit", file=sys.stderr)
    return 0 if ok else 1


def complete(args, work, data, n, workers, builds, peers, ref_rate, expected, smiles) -> int:
    """The --complete rows: the complete store per worker count and build, alternating."""
    import molsift

    rows = []
    for w in workers:
        for name, python in builds:
            out = work / f"moses_j{w}"
            wall, peak, v2, how = run_complete(data, out, w, python)
            store = molsift.open_store(v2)
            order = np.argsort(store.input_ranks)  # input order of the version-2 positions
            same_fp = bool(np.array_equal(store.fingerprints[order], expected))
            same_smiles = [store.smiles[int(i)] for i in order] == smiles
            sizes = store.file_sizes()
            kinds = {
                "search": store.has_column_index,
                "substructure": store.has_pattern_index,
                "analogs": store.has_analog_index,
            }
            del store
            rows.append((name, w, wall, n / wall, peak, same_fp, same_smiles,
                         sum(sizes.values()) / n, kinds, how))  # fmt: skip
            print(f"molsift ({name}) -j {w}: {how} {wall:.1f} s, peak {peak:.0f} MiB",
                  flush=True)  # fmt: skip
            shutil.rmtree(v2)
    print()
    print(
        "| run | wall s | molecules/s | per core vs the RDKit loop (same allocator) "
        "| peak RSS MiB | fingerprints equal | SMILES equal | store bytes/molecule | indexes |"
    )
    print("|---|---:|---:|---:|---:|---|---|---:|---|")  # fmt: skip
    for label, w, sec in peers:
        print(f"| {label} | {sec:.1f} | {n / sec:,.0f} | {n / sec / w / ref_rate:.2f} "
              "| - | - | - | - | - |")  # fmt: skip
    for name, w, wall, rate, peak, fp, smi, bpm, kinds, how in rows:
        have = ", ".join(k for k, v in kinds.items() if v)
        print(f"| molsift {how} -j {w}, {name} | {wall:.1f} | {rate:,.0f} "
              f"| **{rate / w / ref_rate:.2f}** | {peak:.0f} | {fp} | {smi} | {bpm:.1f} "
              f"| {have} |")  # fmt: skip
    ok = all(r[5] and r[6] for r in rows)
    if not ok:
        print("MISMATCH between molsift and RDKit", file=sys.stderr)
    return 0 if ok else 1


def timed_loop_preloaded(lines: list[str], lib: str) -> tuple:
    """The loop in one process with `lib` preloaded, its molecules and fingerprints kept for
    the checks (run in this process when it already has `lib`, else in a spawned one)."""
    if lib in os.environ.get("LD_PRELOAD", ""):
        return rdkit_loop(lines)
    from peers import timed_in_processes

    # the loop's own time (measured inside it), not the time to send its results back
    _, (result,) = timed_in_processes(_loop_result, [lines], lib)
    seconds, canon, binaries = result
    from rdkit import DataStructs

    return seconds, canon, [None if b is None else DataStructs.ExplicitBitVect(b) for b in binaries]


def _loop_result(lines: list[str]) -> tuple:
    seconds, canon, fps = rdkit_loop(lines)
    return seconds, canon, [None if f is None else f.ToBinary() for f in fps]


if __name__ == "__main__":
    raise SystemExit(main())
