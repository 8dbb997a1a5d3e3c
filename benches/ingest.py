"""Benchmark: `molsift ingest` of MOSES against RDKit's own single-process loop, in one run.

Peer: a plain Python loop over the SMILES already in memory (so the peer pays no I/O), doing the
same work as ingest: Chem.MolFromSmiles, Chem.MolToSmiles, and a Morgan fingerprint from
rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048). molsift reads the gzip file
itself, parses, fingerprints and writes a complete store.

molsift's workers run on tcmalloc when it is installed (python/molsift/allocator.py); the loop,
the issue's peer, runs on the system allocator as a user would run it. So that the gain of the
allocator can be told from the rest, the loop is also run with tcmalloc preloaded (the
"tcmalloc" rows; --no-allocator-peers leaves them out).

Checks every molecule: molsift's fingerprint equals the peer's bit for bit, its canonical SMILES
are equal, and records in = molecules stored + rejected.

    .venv/bin/python benches/ingest.py                 # all 1,584,663 molecules, -j 1 and -j 2
    .venv/bin/python benches/ingest.py --limit 100000  # a quicker look
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


def run_molsift(data: Path, out: Path, workers: int) -> tuple:
    cmd = [
        sys.executable,
        "-m",
        "molsift",
        "ingest",
        str(data),
        "-o",
        str(out),
        "-j",
        str(workers),
        "--json",
        "-q",
        "--overwrite",
    ]
    start = time.perf_counter()
    proc = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return time.perf_counter() - start, json.loads(proc.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", default=str(ROOT.parent / "shared/data/moses_train.csv.gz"))
    ap.add_argument("--limit", type=int, help="use only the first N molecules")
    ap.add_argument("--workers", default="1,2", help="molsift worker counts to run")
    ap.add_argument("--workdir", default=None)
    ap.add_argument(
        "--no-allocator-peers",
        action="store_true",
        help="skip the loop runs with tcmalloc preloaded",
    )
    args = ap.parse_args()

    import molsift

    work = Path(args.workdir or tempfile.mkdtemp(prefix="molsift-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    data = Path(args.data)
    lines = gzip.open(data, "rt").read().splitlines()[1:]
    if args.limit:
        lines = lines[: args.limit]
        data = work / "moses_subset.csv.gz"
        with gzip.open(data, "wt", compresslevel=1) as f:
            f.write("SMILES\n" + "\n".join(lines) + "\n")
    n = len(lines)
    print(
        f"{n:,} molecules from {args.data}{' (first %d)' % n if args.limit else ''}; "
        f"{os.cpu_count()} cores",
        flush=True,
    )

    peer_s, canon, fps = rdkit_loop(lines)
    peer_rate = n / peer_s
    print(f"RDKit loop: {peer_s:.1f} s, {peer_rate:,.0f} molecules/s", flush=True)
    parallel_peer = {}
    for w in [int(x) for x in args.workers.split(",") if int(x) > 1]:
        parallel_peer[w] = rdkit_loop_processes(lines, w)
        print(f"RDKit loop in {w} processes: {parallel_peer[w]:.1f} s", flush=True)
    from molsift import allocator

    lib = None if args.no_allocator_peers else allocator.library()
    alloc_peer = {}
    if lib:
        for w in sorted({1, *parallel_peer}):
            alloc_peer[w] = rdkit_loop_processes(lines, w, preload=lib)
            print(
                f"RDKit loop in {w} process(es), {os.path.basename(lib)} preloaded: "
                f"{alloc_peer[w]:.1f} s",
                flush=True,
            )
    expected = pack([f for f in fps if f is not None])
    expected_smiles = [c for c in canon if c is not None]
    del fps

    rows = []
    for w in [int(x) for x in args.workers.split(",")]:
        out = work / f"moses_j{w}.store"
        wall, report = run_molsift(data, out, w)
        store = molsift.open_store(out)
        assert report["records_in"] == n == report["molecules"] + report["rejected"], report
        assert len(store) == len(expected_smiles), (len(store), len(expected_smiles))
        same_fp = bool(np.array_equal(store.fingerprints, expected))
        same_smiles = list(store.smiles) == expected_smiles
        rate = report["molecules"] / wall
        rows.append(
            (
                w,
                wall,
                rate,
                rate / w / peer_rate,
                same_fp,
                same_smiles,
                report["store_bytes"] / report["molecules"],
                report["rejected"],
                report.get("allocator", "system"),
            )
        )
        print(f"molsift -j {w}: {wall:.1f} s", flush=True)
        shutil.rmtree(out)

    print()
    tc_rate = n / alloc_peer[1] if 1 in alloc_peer else None

    def vs_tc(rate, w):
        return f"{rate / w / tc_rate:.2f}" if tc_rate else "-"

    print(
        "| run | wall s | molecules/s | per core vs RDKit loop | per core vs RDKit loop on tcmalloc "
        "| fingerprints equal | SMILES equal | store bytes/molecule | rejected |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print(
        f"| RDKit loop, 1 process, input in memory | {peer_s:.1f} | {peer_rate:,.0f} | 1.00 | "
        f"{vs_tc(peer_rate, 1)} | - | - | - | {sum(c is None for c in canon)} |"
    )
    for w, sec in parallel_peer.items():
        print(
            f"| RDKit loop, {w} processes (the machine's own scaling) | {sec:.1f} | {n / sec:,.0f} | "
            f"{n / sec / w / peer_rate:.2f} | {vs_tc(n / sec, w)} | - | - | - | - |"
        )
    for w, sec in alloc_peer.items():
        print(
            f"| RDKit loop, {w} process(es), tcmalloc preloaded | {sec:.1f} | {n / sec:,.0f} | "
            f"{n / sec / w / peer_rate:.2f} | {vs_tc(n / sec, w)} | - | - | - | - |"
        )
    for w, wall, rate, per_core, same_fp, same_smiles, bpm, rej, alloc in rows:
        print(
            f"| molsift ingest -j {w} (reads the .gz, writes the store; allocator {alloc}) | {wall:.1f} "
            f"| {rate:,.0f} | {per_core:.2f} | {vs_tc(rate, w)} | {same_fp} | {same_smiles} | {bpm:.1f} | {rej} |"
        )
    ok = all(r[4] and r[5] for r in rows)
    if not ok:
        print("MISMATCH between molsift and RDKit", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
