"""Benchmark of `molsift screen` (issue 3) against a plain single-process RDKit loop doing the
same work (parse, the same properties or similarities, one CSV row per molecule), on MOSES.

Prints, per scorer: records/s of the RDKit loop and of molsift at each worker count, molsift's
records/s per core as a share of the loop's, and the share of worker time spent waiting for
writers. Then read amplification of the slab readers across read-buffer sizes and rank counts,
next to a Docker-HT-style reader (whole buffers, reading one more whole buffer to finish the
slab's last record) measured on the same file.

    .venv/bin/python benches/screen.py [--limit N] [--scorers filter,similarity] [--workers 1,2]
        [--peer-processes 2] [--chunks K [--state FILE]]

Like with like: molsift's workers run on tcmalloc when it is installed
(python/molsift/allocator.py), so the reference the per-core column is read against is the loop
with tcmalloc preloaded (same allocator, same work, one process); the loop on the system
allocator, as a user's script runs, is its own row (the allocator's gain). For the filter
scorer molsift runs twice: with `--filter-no-prescreen` (the loop's own calls: the like-with-like
row) and with its pattern-fingerprint prescreen (fewer PAINS/QED matches: the gain of doing less
work, its own row). --chunks mode (the long full-MOSES filter run) compares with the loop on the
system allocator only.

Every run's values are checked against the loop's, molecule by molecule, as molsift writes them
(6 significant digits): the table says how many differ.

With `--chunks K` the library is cut into K contiguous chunks and each chunk is run by the loop
and by molsift one after the other (the order alternating between chunks), so the comparison
sees the same machine moments; the figures are totals over all chunks (molsift's start-up is paid
once per chunk). Each finished chunk is saved to the state file at once, so a long run (the
filter scorer on all of MOSES is hours of RDKit loop here) can stop and be started again with
the same command and goes on where it was.

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
MOSES = Path(
    os.environ.get("MOLSIFT_MOSES", ROOT.parent / "shared" / "data" / "moses_train.csv.gz")
)
WORK = Path(os.environ.get("MOLSIFT_BENCH_DIR", "/tmp/molsift-screen-bench"))
REFS = [
    "CC(C)Cc1ccc(C(C)C(=O)O)cc1",
    "CN1C(=O)CN=C(c2ccccc2)c2cc(Cl)ccc21",
    "CC(=O)Nc1ccc(O)cc1",
    "O=C(O)c1ccccc1OC(C)=O",
    "Cn1cnc2c1c(=O)n(C)c(=O)n2C",
]


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
    from rdkit.Chem import (
        QED,
        Crippen,
        Descriptors,
        Lipinski,
        rdFingerprintGenerator,
        rdMolDescriptors,
    )
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
            smi = line.rstrip("\r\n").split(",", 1)[0]
            n += 1
            mol = Chem.MolFromSmiles(smi)
            if mol is None:
                continue
            if scorer == "filter":
                vals = [
                    Descriptors.MolWt(mol),
                    Crippen.MolLogP(mol),
                    Lipinski.NumHDonors(mol),
                    Lipinski.NumHAcceptors(mol),
                    rdMolDescriptors.CalcNumRotatableBonds(mol),
                    rdMolDescriptors.CalcTPSA(mol),
                    QED.qed(mol),
                    len(pains.GetMatches(mol)),
                ]
            else:
                sims = DataStructs.BulkTanimotoSimilarity(gen.GetFingerprint(mol), refs)
                best = max(sims)
                vals = [best, sims.index(best)]
            w.write(f"{lineno},{smi}," + ",".join(str(v) for v in vals) + "\n")
    return n, time.perf_counter() - start


def write_share(head: str, body: list, i: int, n: int, dest: Path) -> int:
    """Writes the i-th of n contiguous shares of the library's lines (header first) to `dest`;
    returns its number of records."""
    part = body[len(body) * i // n : len(body) * (i + 1) // n]
    dest.write_text(head + "\n" + "\n".join(part) + "\n")
    return len(part)


def _loop_share(args: tuple) -> tuple:
    path, scorer, out = args
    return rdkit_loop(Path(path), scorer, Path(out))


def rdkit_loop_processes(path: Path, scorer: str, procs: int, preload: str | None = None) -> tuple:
    """The same loop in `procs` processes at once, each on its own contiguous share of the file
    (what a user splitting the file would do), workers started and RDKit imported before the
    clock, with `preload` (the allocator) in LD_PRELOAD when given. Returns (records, wall
    seconds, slowest share's seconds, fastest share's seconds); the rate is read from the
    slowest share's own clock (the wall also holds first imports)."""
    from peers import timed_in_processes

    lines = path.read_text().splitlines()
    head, body = lines[0], lines[1:]
    shares = []
    for i in range(procs):
        share = WORK / f"share-{procs}-{i}.csv"
        write_share(head, body, i, procs, share)
        shares.append((str(share), scorer, str(share) + f".{scorer}.out"))
    wall, done = timed_in_processes(_loop_share, shares, preload)
    return sum(n for n, _ in done), wall, max(s for _, s in done), min(s for _, s in done)


def molsift(path: Path, scorer: str, workers: int, out: Path, extra=()) -> dict:
    args = [
        sys.executable,
        "-m",
        "molsift",
        "screen",
        str(path),
        "--scorer",
        scorer,
        "-o",
        str(out),
        "-j",
        str(workers),
        "--overwrite",
        "--json",
        "-q",
        *extra,
    ]
    if scorer == "similarity":
        args += [word for s in REFS for word in ("--ref", s)]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(r.stderr)
    return json.loads(r.stdout)


def differing(peer_out: Path, ms_out: Path, scorer: str) -> int:
    """Molecules whose values in molsift's CSV differ from the loop's (formatted as molsift
    writes them), plus molecules present in one output only."""
    import csv

    from molsift.scorers.base import format_value

    width = 8 if scorer == "filter" else 1
    peer = {}
    with open(peer_out) as f:
        for line in f:
            lineno, _smi, *vals = line.rstrip("\n").split(",")
            nums = [float(v) if ("." in v or "e" in v) else int(v) for v in vals[:width]]
            peer[lineno] = [format_value(v) for v in nums]
    bad = 0
    with open(ms_out, newline="") as f:
        for row in csv.reader(f):
            if row[0] == "id":
                continue
            want = peer.pop(row[0], None)
            bad += want is None or row[2 : 2 + width] != want
    return bad + len(peer)


def chunked(path: Path, scorer: str, workers: list, chunks: int, state_path: Path) -> list:
    """The loop and molsift chunk by chunk (see the module doc); returns the table's rows."""
    state = json.loads(state_path.read_text()) if state_path.exists() else {}
    lines = path.read_text().splitlines()
    head, body = lines[0], lines[1:]
    for i in range(chunks):
        key = str(i)
        if key in state:
            continue
        chunk = WORK / f"chunk-{chunks}-{i}.csv"
        records = write_share(head, body, i, chunks, chunk)
        peer_out = WORK / f"chunk-{scorer}-peer.csv"
        runs = [("loop", None)] + [("molsift", w) for w in workers]
        done = {"records": records, "bytes": chunk.stat().st_size, "molsift": {}}
        for kind, w in runs if i % 2 == 0 else runs[::-1]:
            if kind == "loop":
                n, done["loop_seconds"] = rdkit_loop(chunk, scorer, peer_out)
                assert n == records
            else:
                out = WORK / f"chunk-{scorer}-ms-{w}.csv"
                rep = molsift(chunk, scorer, w, out)
                done["molsift"][str(w)] = {
                    k: rep[k]
                    for k in ("seconds", "records_in", "write_wait_share", "read_amplification")
                }
        for w in workers:
            done["molsift"][str(w)]["differing"] = differing(
                peer_out, WORK / f"chunk-{scorer}-ms-{w}.csv", scorer
            )
        done["at"] = time.strftime("%Y-%m-%d %H:%M")
        done["commit"] = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        state[key] = done
        tmp = state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1))
        os.replace(tmp, state_path)
        print(
            f"chunk {i + 1}/{chunks}: {records:,} molecules, loop {done['loop_seconds']:.1f} s, "
            + ", ".join(f"-j{w} {done['molsift'][str(w)]['seconds']:.1f} s" for w in workers),
            flush=True,
        )
    n = sum(c["records"] for c in state.values())
    loop_rate = n / sum(c["loop_seconds"] for c in state.values())
    rows = [(scorer, f"RDKit loop, 1 process ({chunks} chunks)", n, loop_rate, 1.0, None, None, 0)]
    size = sum(c["bytes"] for c in state.values())
    for w in workers:
        ms = [c["molsift"][str(w)] for c in state.values()]
        secs = sum(m["seconds"] for m in ms)
        rate = sum(m["records_in"] for m in ms) / secs
        wait = sum(m["write_wait_share"] * m["seconds"] for m in ms) / secs
        amp = sum(m["read_amplification"] * c["bytes"] for m, c in zip(ms, state.values())) / size
        rows.append(
            (
                scorer,
                f"molsift -j{w}",
                n,
                rate,
                rate / w / loop_rate,
                wait,
                amp,
                sum(m["differing"] for m in ms),
            )
        )
    return rows


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
        src = _core.RecordSource(
            str(path), "csv", slab=(start, end), first_line=0, buffer_size=buffer
        )
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
    ap.add_argument(
        "--chunks",
        type=int,
        default=0,
        help="run loop and molsift chunk by chunk, resumable (see the module doc)",
    )
    ap.add_argument(
        "--state",
        type=Path,
        default=None,
        help="state file of --chunks (default: in the work directory, per scorer)",
    )
    ap.add_argument(
        "--no-allocator-peers",
        action="store_true",
        help="skip the loop run with tcmalloc preloaded (molsift's workers run on it)",
    )
    ap.add_argument(
        "--peer-processes",
        default="",
        help="also run the RDKit loop in these numbers of processes at once (the "
        "machine's own scaling), e.g. 2 or 8,16",
    )
    args = ap.parse_args()
    path = library(args.limit)
    print(f"library {path} ({path.stat().st_size:,} bytes); machine: {os.cpu_count()} vCPU")
    rows = []
    for scorer in args.scorers.split(","):
        workers = [int(w) for w in args.workers.split(",")]
        if args.chunks:
            state = (
                args.state
                or WORK / f"state-{scorer}-{args.limit}-{args.chunks}-{args.workers}.json"
            )
            print(f"{scorer}: chunk state in {state}", flush=True)
            rows += chunked(path, scorer, workers, args.chunks, state)
            continue
        peer_out = WORK / f"peer-{scorer}.csv"
        peer = [rdkit_loop(path, scorer, peer_out) for _ in range(args.repeats)]
        n = peer[0][0]
        system_rate = n / statistics.median(s for _, s in peer)
        from peers import timed_in_processes

        from molsift import allocator

        # the reference: the loop on the allocator molsift's workers use (like with like)
        lib = None if args.no_allocator_peers else allocator.library()
        ref_rate, ref_name = system_rate, "RDKit loop, 1 process (the reference)"
        if lib:
            runs = [
                timed_in_processes(_loop_share, [(str(path), scorer, str(peer_out) + ".tc")], lib)
                for _ in range(args.repeats)
            ]
            # the loop's own clock, as for the loop in this process (the wall of the pool call
            # also holds the first import of modules the loop uses)
            ref_rate = n / statistics.median(done[0][1] for _, done in runs)
            ref_name = f"RDKit loop, 1 process, {os.path.basename(lib)} (the reference)"
        rows.append((scorer, ref_name, n, ref_rate, 1.0, None, None, 0))
        if lib:
            rows.append(
                (
                    scorer,
                    "RDKit loop, 1 process, system malloc (as a user's script runs)",
                    n,
                    system_rate,
                    system_rate / ref_rate,
                    None,
                    None,
                    0,
                )
            )
        for procs in (int(p) for p in args.peer_processes.split(",") if p):
            m, _wall, slowest, fastest = rdkit_loop_processes(path, scorer, procs, lib)
            rows.append(
                (
                    scorer,
                    f"RDKit loop, {procs} processes (shares {fastest:.1f}-{slowest:.1f} s)",
                    m,
                    m / slowest,
                    m / slowest / procs / ref_rate,
                    None,
                    None,
                    None,
                )
            )
        # filter: the plain calls (the loop's work) and the prescreened ones (less work)
        variants = [("", ())]
        if scorer == "filter":
            variants = [
                (", --filter-no-prescreen (the loop's calls)", ("--filter-no-prescreen",)),
                (", prescreened (fewer PAINS/QED matches run)", ()),
            ]
        for w in workers:
            for label, extra in variants:
                out = WORK / f"ms-{scorer}-{w}.csv"
                reps = [molsift(path, scorer, w, out, extra) for _ in range(args.repeats)]
                rep = sorted(reps, key=lambda r: r["seconds"])[len(reps) // 2]
                rate = rep["records_in"] / rep["seconds"]
                rows.append(
                    (
                        scorer,
                        f"molsift -j{w}{label}",
                        rep["records_in"],
                        rate,
                        rate / w / ref_rate,
                        rep["write_wait_share"],
                        rep["read_amplification"],
                        differing(peer_out, out, scorer),
                    )
                )
    print(
        "\n| scorer | run | records | records/s | per core vs the reference loop (same "
        "allocator) | writer wait share "
        "| read amp | values differing from the loop's |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for s, name, n, rate, eff, wait, amp, bad in rows:
        print(
            f"| {s} | {name} | {n:,} | {rate:,.0f} | {eff:.2f} | "
            f"{'' if wait is None else f'{100 * wait:.3f}%'} | "
            f"{'' if amp is None else f'{amp:.4f}x'} | {'' if bad is None else bad} |"
        )
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
