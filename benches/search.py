"""Benchmark: exact Tanimoto search, molsift vs FPSim2 0.7.4 vs RDKit, in ONE run, on MOSES.

Database: all of ../shared/data/moses_train.csv.gz except its last 100 lines, which are the
queries (so no query is in the database). Morgan radius 2, 2048 bits, one thread unless said.
Peers:
- FPSim2 0.7.4 in memory (`FPSim2Engine(db, in_memory_fps=True)`), its database built by its own
  `create_db_file` from the same SMILES;
- RDKit `DataStructs.BulkTanimotoSimilarity` over a list of ExplicitBitVect, rebuilt from the
  store's on-bits (benches/ingest.py shows these equal RDKit's own fingerprints bit for bit).
Checks: for every query and column, molsift's hits equal RDKit's exactly (same indices, same
order under the tie rule score desc / index asc, same float scores), and FPSim2 returns the same
hit set (threshold) or the same score list (top-k, where ties may be ordered differently).

    .venv/bin/python benches/search.py                       # builds what it needs under --workdir
    .venv/bin/python benches/search.py --repeats 5 --no-rdkit
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def build_inputs(data: Path, work: Path, n_queries: int):
    with gzip.open(data, "rt") as fh:
        lines = fh.read().splitlines()[1:]
    db, queries = lines[:-n_queries], lines[-n_queries:]
    smi = work / "moses_db.smi"
    if not smi.exists():
        smi.write_text("".join(f"{s} m{i}\n" for i, s in enumerate(db)))
    return smi, db, queries


def build_store(smi: Path, work: Path):
    """The one store of the database, as `molsift ingest` writes it (every index)."""
    import molsift

    out = work / "moses_db.one.store"
    if not (out / "manifest.json").exists():
        t = time.perf_counter()
        molsift.ingest(smi, out, progress=True, overwrite=True)
        print(f"built molsift store in {time.perf_counter() - t:.0f} s", flush=True)
    return molsift.open_store(out, verify=False)


def build_store_v1(smi: Path, work: Path):
    """A version-1 store of the database with its column index (the earlier format, for the
    benchmarks that compare against it; only `molsift upgrade` reads it outside benches)."""
    import molsift
    from molsift.ingestion import ingest
    from molsift.store import open_version_1

    out = work / "moses_db.store"
    manifest = out / "manifest.json"
    if manifest.exists() and json.loads(manifest.read_text()).get("format_version") != 1:
        raise SystemExit(f"{out}: not a version-1 store (remove it to rebuild)")
    if not manifest.exists():
        t = time.perf_counter()
        ingest(smi, out, progress=True, overwrite=True, version=1, index=False)
        print(f"built version-1 store in {time.perf_counter() - t:.0f} s", flush=True)
    if not (out / "columns.json").exists():
        molsift._core.build_column_index(str(out))
    return open_version_1(out)


def build_fpsim2(db, work: Path):
    from FPSim2.io import create_db_file

    path = work / "moses_db_fpsim2.h5"
    if not path.exists():
        t = time.perf_counter()
        create_db_file(
            [[s, i] for i, s in enumerate(db)],
            str(path),
            "smiles",
            "Morgan",
            {"radius": 2, "fpSize": 2048},
        )
        print(f"built FPSim2 database in {time.perf_counter() - t:.0f} s", flush=True)
    return path


def rdkit_fps(store):
    from rdkit import DataStructs

    fps = []
    bits = np.unpackbits(np.asarray(store.fingerprints).view(np.uint8), axis=1, bitorder="little")
    for row in bits:
        v = DataStructs.ExplicitBitVect(2048)
        v.SetBitsFromList(np.flatnonzero(row).tolist())
        fps.append(v)
    return fps


def timed(fn, repeats):
    """Median over `repeats` of the time of one call of fn(), and its last result."""
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def fpsim2_search(fpe, query_smiles, to_index, t=None, k=None) -> list:
    """FPSim2's (store positions, scores) for each query SMILES, threshold `t` and/or top `k`;
    `to_index` maps FPSim2's mol ids (database line numbers) to store positions."""
    out = []
    for s in query_smiles:
        r = (
            fpe.top_k(s, k=k, threshold=t or 0.0, n_workers=1)
            if k
            else fpe.similarity(s, t, n_workers=1)
        )
        out.append((to_index(r["mol_id"]), r["coeff"].astype(np.float64)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", default=str(ROOT.parent / "shared/data/moses_train.csv.gz"))
    ap.add_argument("--workdir", default="/tmp/molsift-search-bench")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-rdkit", action="store_true", help="skip the RDKit peer (slow)")
    args = ap.parse_args()

    from FPSim2 import FPSim2Engine
    from rdkit import Chem, DataStructs
    from rdkit.Chem import rdFingerprintGenerator

    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    smi, db, query_smiles = build_inputs(Path(args.data), work, args.queries)
    store = build_store(smi, work)
    fpe = FPSim2Engine(str(build_fpsim2(db, work)), in_memory_fps=True)
    n = len(store)
    # FPSim2 mol ids are database line numbers; store ids are "m<line>"
    line_to_index = np.full(len(db), -1, dtype=np.int64)
    for i, sid in enumerate(store.ids):
        line_to_index[int(sid[1:])] = i
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    qmols = [Chem.MolFromSmiles(s) for s in query_smiles]
    qfps = [gen.GetFingerprint(m) for m in qmols]
    qbits = [list(f.GetOnBits()) for f in qfps]
    fps = None if args.no_rdkit else rdkit_fps(store)
    print(
        f"database {n:,} molecules, {len(qmols)} held-out queries "
        f"(on-bits {min(map(len, qbits))}-{max(map(len, qbits))}, "
        f"median {int(np.median([len(b) for b in qbits]))}); "
        f"{os.cpu_count()} cores; median of {args.repeats} repeats",
        flush=True,
    )

    def rdkit_search(t=None, k=None):
        out = []
        for q in qfps:
            s = np.array(DataStructs.BulkTanimotoSimilarity(q, fps))
            order = np.lexsort((np.arange(n), -s))
            if t is not None:
                order = order[s[order] >= t]
            if k is not None:
                order = order[:k]
            out.append((order, s[order]))
        return out

    def molsift_single(t=None, k=None, threads=1):
        out = []
        for b in qbits:
            i, s, _ = store._searcher().search(b, t, k, threads)
            out.append((np.asarray(i), np.asarray(s)))
        return out

    def molsift_batch(t=None, k=None, threads=1):
        res, _ = store._searcher().search_batch(qbits, t, k, threads)
        return [(np.asarray(i), np.asarray(s)) for i, s in res]

    columns = [("t=0.7", 0.7, None), ("top-10", None, 10)]
    extra = [
        ("t=0.5", 0.5, None),
        ("t=0.8", 0.8, None),
        ("t=0.9", 0.9, None),
        ("top-1", None, 1),
        ("top-100", None, 100),
        ("top-1000", None, 1000),
    ]

    def ms(sec):
        return sec * 1000 / len(qbits)

    rows, failures = [], []
    for name, t, k in columns + extra:
        r_single, ref = timed(partial(molsift_single, t, k), args.repeats)
        r_batch, batch = timed(partial(molsift_batch, t, k), args.repeats)
        r_2t, two = timed(partial(molsift_batch, t, k, threads=2), args.repeats)
        f_s, fres = timed(
            partial(fpsim2_search, fpe, query_smiles, line_to_index.take, t, k),
            1 if (t or 1) < 0.6 or (k or 0) > 100 else args.repeats,
        )
        rd = None
        if fps is not None and (name, t, k) in columns:
            rd_s, rdres = timed(partial(rdkit_search, t, k), 1)
            rd = ms(rd_s)
            for qi, ((a, sa), (b, sb)) in enumerate(zip(ref, rdres)):
                if a.tolist() != b.tolist() or sa.tolist() != sb.tolist():
                    failures.append(f"{name} query {qi}: molsift != RDKit")
        for qi, ((a, sa), (b, _), (c, _), (d, sd)) in enumerate(zip(ref, batch, two, fres)):
            if a.tolist() != b.tolist() or a.tolist() != c.tolist():
                failures.append(f"{name} query {qi}: batch != single")
            if t is not None and k is None and sorted(a.tolist()) != sorted(d.tolist()):
                failures.append(f"{name} query {qi}: FPSim2 hit set differs ({len(a)} vs {len(d)})")
            if k is not None and not np.allclose(np.sort(sa), np.sort(sd), atol=1e-6):
                failures.append(f"{name} query {qi}: FPSim2 top-k scores differ")
        hits = sum(len(a) for a, _ in ref)
        rows.append((name, ms(r_single), ms(r_batch), ms(r_2t), ms(f_s), rd, hits))
        print(f"{name}: molsift {ms(r_single):.3f} ms/query, FPSim2 {ms(f_s):.2f}", flush=True)

    # slowest single queries at t=0.7
    per_q = []
    for b in qbits:
        t0 = time.perf_counter()
        store._searcher().search(b, 0.7, None, 1)
        per_q.append((time.perf_counter() - t0, len(b)))
    slow = sorted(per_q, reverse=True)[:5]

    print()
    print(
        "| query set | molsift single (ms/query) | molsift batch of 100 "
        "| molsift batch, 2 threads | FPSim2 in memory | RDKit Bulk | FPSim2 / molsift single "
        "| hits |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, s1, b1, b2, f, rd, hits in rows:
        print(
            f"| {name} | {s1:.3f} | {b1:.3f} | {b2:.3f} | {f:.2f} | {f'{rd:.0f}' if rd else '-'} | "
            f"{f / s1:.0f}x | {hits:,} |"
        )
    print()
    print(
        "slowest t=0.7 queries (ms, on-bits): "
        + ", ".join(f"{s * 1000:.2f} ms ({b})" for s, b in slow)
    )
    print(f"median on-bits of all queries: {int(np.median([len(b) for b in qbits]))}")
    if failures:
        print(f"{len(failures)} MISMATCHES, first: {failures[:5]}", file=sys.stderr)
        return 1
    print("all hits checked: molsift == RDKit (exact, tie rule), FPSim2 same hit sets / scores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
