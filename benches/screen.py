"""Benchmark of `molsift screen` (issue 3) against a plain single-process RDKit loop doing the
same work (parse, the same properties or similarities, one CSV row per molecule), on MOSES.

Prints, per scorer: records/s of the RDKit loop and of molsift at each worker count, molsift's
records/s per core as a share of the loop's, and the share of worker time spent waiting for
writers. Then read amplification of the slab readers across read-buffer sizes and rank counts,
next to a Docker-HT-style reader (whole buffers, reading one more whole buffer to finish the
slab's last record) measured on the same file.

    .venv/bin/python benches/screen.py [--limit N] [--scorers filter,similarity] [--workers 1,2]
        [--peer-processes 2]

MOLSIFT_MOSES names another copy of moses_train.csv.gz, MOLSIFT_BENCH_DIR the work directory.
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
MOSES = Path(os.environ.get("MOLSIFT_MOSES", ROOT.parent / "shared" / "data" / "moses_train.csv.gz"))
WORK = Path(os.environ.get("MOLSIFT_BENCH_DIR", "/tmp/molsift-screen-bench"))
REFS = ["CC(C)Cc1ccc(C(C)C(=O)O)cc1", "CN1C(=O)CN=C(c2ccccc2)c2cc(Cl)ccc21",
        "CC(=O)Nc1ccc(O)cc1", "O=C(O)c1ccccc1OC(C)=O", "Cn1cnc2c1c(=O)n(C)c(=O)n2C"]


def library(limit: int, work: Path = WORK) -> Path:
    """MOSES as a plain CSV in `work` (first `limit` molecules when limit > 0), made once."""
    work.mkdir(parents=True, exist_ok=True)
    path = work / (f"moses_{limit}.csv" if limit else "moses_all.csv")
    if not path.exists():
        with gzip.open(MOSES, "rt") as src, open(path, "w") as dst:
            dst.write(src.readline())
            for i, line in enumerate(src):
                if limit and i >= limit:
                    break
                dst.write(line)
    return path


def rdkit_loop(path: Path, scorer: str, out: Path) -> tuple:
    """The peer: one process, RDKit only. Returns (records, seconds)."""
    from rdkit import Chem, DataStructs, RDLogger
    from rdkit.Chem import QED, Crippen, Descriptors, Lipinski, rdFingerprintGenerator, rdMolDescriptors
    from rdkit.Chem.FilterCatalog import FilterCatalog, FilterCatalogParams

    RDLogger.DisableLog("rdApp.*")
    start = time.perf_counter()
    if scorer == "filter":
        params = FilterCatalogParams()
        params.AddCatalog(FilterCatalogParams.FilterCatalogs.PAINS)
        pains = FilterCatalog(params)
    else:
        gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
        refs = [gen.GetFingerprint(Chem.MolFromSmiles(s)) for s in REFS]
    n = 0
    with open(path) as f, open(out, "w") as w:
        f.readline()
        for lineno, line in enumerate(f, 2):
            smi = line.split(",", 1)[0]
            n += 1
            mol = Chem.MolFromSmiles(smi)
            if mol is None:
                continue
            if scorer == "filter":
                vals = [Descriptors.MolWt(mol), Crippen.MolLogP(mol), Lipinski.NumHDonors(mol),
                        Lipinski.NumHAcceptors(mol), rdMolDescriptors.CalcNumRotatableBonds(mol),
                        rdMolDescriptors.CalcTPSA(mol), QED.qed(mol), len(pains.GetMatches(mol))]
            else:
                sims = DataStructs.BulkTanimotoSimilarity(gen.GetFingerprint(mol), refs)
                best = max(sims)
                vals = [best, sims.index(best)]
            w.write(f"{lineno},{smi}," + ",".join(str(v) for v in vals) + "\n")
    return n, time.perf_counter() - start


def _loop_share(args: tuple) -> tuple:
    path, scorer, out = args
    return rdkit_loop(Path(path), scorer, Path(out))


def rdkit_loop_processes(path: Path, scorer: str, procs: int) -> tuple:
    """The same loop in `procs` processes at once, each on its own contiguous share of the file
    (what a user splitting the file would do), workers started and RDKit imported before the
    clock. Returns (records, wall seconds, slowest share's seconds, fastest share's seconds)."""
    from peers import timed_in_processes

    lines = path.read_text().splitlines()
    head, body = lines[0], lines[1:]
    shares = []
    for i in range(procs):
        share = WORK / f"share-{procs}-{i}.csv"
        part = body[len(body) * i // procs: len(body) * (i + 1) // procs]
        share.write_text(head + "\n" + "\n".join(part) + "\n")
        shares.append((str(share), scorer, str(share) + f".{scorer}.out"))
    wall, done = timed_in_processes(_loop_share, shares)
    return sum(n for n, _ in done), wall, max(s for _, s in done), min(s for _, s in done)


def molsift(path: Path, scorer: str, workers: int, out: Path, extra=()) -> dict:
    args = [sys.executable, "-m", "molsift", "screen", str(path), "--scorer", scorer, "-o", str(out),
            "-j", str(workers), "--overwrite", "--json", "-q", *extra]
    if scorer == "similarity":
        args += sum((["--ref", s] for s in REFS), [])
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(r.stderr)
    return json.loads(r.stdout)


def docker_ht_reader(path: Path, ranks: int, buffer: int) -> int:
    """Bytes a Docker-HT-style reader reads: each rank reads its slab in whole buffers, and
    one more whole buffer past the slab end to finish its last record."""
    size = path.stat().st_size
    total = 0
    with open(path, "rb") as f:
        for r in range(ranks):
            start, end = size * r // ranks, size * (r + 1) // ranks
            pos = start
            while pos < end:
                f.seek(pos)
                total += len(f.read(buffer))
                pos += buffer
            if end < size:
                f.seek(pos)
                total += len(f.read(buffer))
    return total


def molsift_reader(path: Path, ranks: int, buffer: int) -> int:
    from molsift import _core

    size = path.stat().st_size
    total = 0
    for start, end in _core.split_slabs(size, ranks):
        src = _core.RecordSource(str(path), "csv", slab=(start, end), first_line=0, buffer_size=buffer)
        while src.next_batch(1 << 16):
            pass
        total += src.counters()["bytes_read"]
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=0, help="first N molecules of MOSES (0: all)")
    ap.add_argument("--scorers", default="filter,similarity")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--peer-processes", default="",
                    help="also run the RDKit loop in these numbers of processes at once (the "
                    "machine's own scaling), e.g. 2 or 8,16")
    args = ap.parse_args()
    path = library(args.limit)
    print(f"library {path} ({path.stat().st_size:,} bytes); machine: {os.cpu_count()} vCPU")
    rows = []
    for scorer in args.scorers.split(","):
        peer = [rdkit_loop(path, scorer, WORK / f"peer-{scorer}.csv") for _ in range(args.repeats)]
        n = peer[0][0]
        peer_rate = n / statistics.median(s for _, s in peer)
        rows.append((scorer, "RDKit loop, 1 process", n, peer_rate, 1.0, None, None))
        for procs in (int(p) for p in args.peer_processes.split(",") if p):
            m, wall, slowest, fastest = rdkit_loop_processes(path, scorer, procs)
            rows.append((scorer, f"RDKit loop, {procs} processes (shares {fastest:.1f}-{slowest:.1f} s)",
                         m, m / wall, m / wall / procs / peer_rate, None, None))
        for w in map(int, args.workers.split(",")):
            reps = [molsift(path, scorer, w, WORK / f"ms-{scorer}-{w}.csv") for _ in range(args.repeats)]
            rep = sorted(reps, key=lambda r: r["seconds"])[len(reps) // 2]
            rate = rep["records_in"] / rep["seconds"]
            rows.append((scorer, f"molsift -j{w}", rep["records_in"], rate, rate / w / peer_rate,
                         rep["write_wait_share"], rep["read_amplification"]))
    print("\n| scorer | run | records | records/s | per core vs RDKit loop | writer wait share | read amp |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for s, name, n, rate, eff, wait, amp in rows:
        print(f"| {s} | {name} | {n:,} | {rate:,.0f} | {eff:.2f} | "
              f"{'' if wait is None else f'{100 * wait:.3f}%'} | {'' if amp is None else f'{amp:.4f}x'} |")
    print("\nread amplification of the slab readers (bytes read / file size), same file:")
    print("| ranks | read buffer | Docker-HT-style reader | molsift slab reader |")
    print("|---:|---:|---:|---:|")
    size = path.stat().st_size
    for ranks in (1, 4, 16, 64):
        for buf in (1 << 10, 1 << 20, 20 << 20):
            d = docker_ht_reader(path, ranks, buf) / size
            m = molsift_reader(path, ranks, buf) / size
            print(f"| {ranks} | {buf // 1024:,} KiB | {d:.4f}x | {m:.4f}x |")


if __name__ == "__main__":
    main()
