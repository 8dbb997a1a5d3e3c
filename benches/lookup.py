"""Benchmark: exact lookup in a version-2 store of all of MOSES, with SQLite and a Python dict
as peers, in ONE run.

Queries: 1,000,000, half present (a stored molecule written as an RDKit random SMILES,
`MolToSmiles(doRandom=True)`, so canonicalization is real work) and half absent (a stored
molecule with its first atom labelled deuterium: MOSES holds no isotopes). Cached in the work
directory.

Figures:
- the index alone (Rust, warm, one thread; `crates/store/examples/v2_lookup.rs`): probes per
  second batched and one by one, lookups per second with every candidate block decoded and
  compared, microseconds to decode one SMILES, the full SMILES column's decode rate;
- end to end per core: `store.lookup` of 20,000 queries on one process (canonicalize + probe +
  confirm) against RDKit's canonicalization alone on the same queries (`MolFromSmiles` +
  `MolToSmiles`, the very function `store.lookup` calls), both warmed up, in alternate rounds
  (`--rounds`, medians), and the 1,000,000 on all cores;
- peers on the same canonical queries: SQLite (Python `sqlite3`, a table of canonical SMILES
  and positions with an index on the SMILES column, on disk in the work directory) and a
  Python dict; bytes per molecule of each.

    .venv/bin/python benches/lookup.py --store MOSES.v2.store --workdir DIR [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _make(chunk: list[tuple[str, bool, int]]) -> list[str]:
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    out = []
    for smiles, present, seed in chunk:
        mol = Chem.MolFromSmiles(smiles)
        if not present:
            mol.GetAtomWithIdx(0).SetIsotope(2)
        Chem.rdBase.SeedRandomNumberGenerator(seed)
        out.append(Chem.MolToSmiles(mol, doRandom=True))
    return out


def make_queries(store, n: int, path: Path, workers: int) -> list[str]:
    if path.exists():
        return path.read_text().splitlines()
    from concurrent.futures import ProcessPoolExecutor

    rng = random.Random(17)
    picks = [rng.randrange(len(store)) for _ in range(n)]
    jobs = [(store.smiles[i], k % 2 == 0, k) for k, i in enumerate(picks)]
    chunks = [jobs[i : i + 20_000] for i in range(0, len(jobs), 20_000)]
    with ProcessPoolExecutor(workers) as pool:
        queries = [q for part in pool.map(_make, chunks) for q in part]
    path.write_text("".join(q + "\n" for q in queries))
    return queries


def main() -> int:
    fmt = argparse.RawDescriptionHelpFormatter
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=fmt)
    ap.add_argument("--store", required=True, help="a version-2 store of MOSES")
    ap.add_argument("--workdir", default="/tmp/molsift-lookup-bench")
    ap.add_argument("--queries", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5, help="end-to-end rounds (medians)")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()

    import molsift
    from molsift.lookup import _canonical_chunk, canonicalize

    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    store = molsift.open_store(args.store, verify=False)
    n = len(store)
    workers = os.cpu_count() or 1
    queries = make_queries(store, args.queries, work / "queries.smi", workers)
    fig: dict = {"molecules": n, "queries": len(queries)}

    # canonical forms (all cores), then the Rust index figures on them
    t = time.perf_counter()
    canon = canonicalize(queries, workers)
    fig["canonicalize_all_cores_per_s"] = len(queries) / (time.perf_counter() - t)
    canon_file = work / "canonical.smi"
    canon_file.write_text("".join((c or "") + "\n" for c in canon))
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "molsift-store", "--example", "v2_lookup"],
        cwd=ROOT,
        check=True,
    )
    exe = ROOT / "target/release/examples/v2_lookup"
    out = subprocess.run(
        [str(exe), args.store, str(canon_file)], capture_output=True, text=True, check=True
    ).stdout
    rust = {k: float(v) for k, v in (line.split(": ") for line in out.splitlines())}
    fig["rust"] = rust

    # end to end on one process, against RDKit's canonicalization alone: both warmed up first
    # (the first pass pays RDKit's and the store's first-use costs), then in alternate rounds,
    # medians of the rounds
    sample = queries[:20_000]
    present = [k % 2 == 0 for k in range(len(sample))]
    _canonical_chunk(sample[:2_000])
    store.lookup(sample[:2_000], workers=1)
    rdkit_runs, e2e_runs = [], []
    for _ in range(args.rounds):
        t = time.perf_counter()
        _canonical_chunk(sample)
        rdkit_runs.append(len(sample) / (time.perf_counter() - t))
        t = time.perf_counter()
        pos = store.lookup(sample, workers=1)
        e2e_runs.append(len(sample) / (time.perf_counter() - t))
        assert all((p >= 0) == want for p, want in zip(pos.tolist(), present)), "wrong answer"
    fig["rdkit_canonical_per_s"] = statistics.median(rdkit_runs)
    fig["lookup_one_process_per_s"] = statistics.median(e2e_runs)
    fig["rdkit_canonical_runs"] = rdkit_runs
    fig["lookup_one_process_runs"] = e2e_runs
    t = time.perf_counter()
    pos_all = store.lookup(queries, workers=workers)
    fig["lookup_all_cores_per_s"] = len(queries) / (time.perf_counter() - t)
    assert all((p >= 0) == (k % 2 == 0) for k, p in enumerate(pos_all.tolist()))

    # peers: SQLite and a dict, on the same canonical queries
    stored = list(store.smiles)
    db = work / "moses.sqlite"
    if db.exists():
        db.unlink()
    con = sqlite3.connect(db)
    t = time.perf_counter()
    con.execute("CREATE TABLE mol (smiles TEXT, pos INTEGER)")
    con.executemany("INSERT INTO mol VALUES (?, ?)", ((s, i) for i, s in enumerate(stored)))
    con.execute("CREATE INDEX mol_smiles ON mol (smiles)")
    con.commit()
    fig["sqlite_build_s"] = time.perf_counter() - t
    fig["sqlite_bytes_per_mol"] = db.stat().st_size / n
    cur = con.cursor()
    t = time.perf_counter()
    found = 0
    for c in canon:
        found += cur.execute("SELECT pos FROM mol WHERE smiles = ?", (c,)).fetchone() is not None
    fig["sqlite_lookups_per_s"] = len(canon) / (time.perf_counter() - t)
    con.close()
    tracemalloc.start()
    d = {s: i for i, s in enumerate(stored)}
    fig["dict_bytes_per_mol"] = tracemalloc.get_traced_memory()[0] / n
    tracemalloc.stop()
    t = time.perf_counter()
    found_d = sum(c in d for c in canon)
    fig["dict_lookups_per_s"] = len(canon) / (time.perf_counter() - t)
    assert found == found_d == len(canon) // 2 + len(canon) % 2

    sizes = store.file_sizes()
    idx = sizes.get("smiles.lookup", 0) + sizes.get("ids.lookup", 0)
    print(f"\nall of MOSES: {n:,} molecules; {len(queries):,} queries, half present\n")
    r, f = rust, fig

    def span(runs):
        return f"rounds {min(runs):,.0f}-{max(runs):,.0f}"

    rows = [
        ("index alone, batched (Rust, one thread, warm)",
         f"{r['probe_batched_per_s'] / 1e6:.1f} M probes/s"),
        ("index alone, one by one", f"{r['probe_single_per_s'] / 1e6:.1f} M probes/s"),
        ("lookups, every candidate confirmed (Rust)",
         f"{r['confirmed_lookups_per_s'] / 1e3:,.0f} k/s"),
        ("decode one SMILES (Rust, warm)", f"{r['decode_one_us']:.2f} us"),
        ("  the same, whole block into a new buffer (before 2026-11-27)",
         f"{r['decode_one_whole_block_us']:.2f} us"),
        ("  the same, dictionary apart and portable front decoding (the way before)",
         f"{r['decode_one_before_us']:.2f} us"),
        ("decode the SMILES column (one thread)",
         f"{r['decode_all_bytes_per_s'] / 1e9:.2f} GB/s"),
        ("  the same, dictionary apart and portable front decoding (the way before)",
         f"{r['decode_all_before_bytes_per_s'] / 1e9:.2f} GB/s"),
        ("RDKit canonicalization alone, one process (median of the rounds)",
         f"{f['rdkit_canonical_per_s']:,.0f} /s ({span(f['rdkit_canonical_runs'])})"),
        ("`store.lookup` end to end, one process (rounds alternating with RDKit's)",
         f"{f['lookup_one_process_per_s']:,.0f} /s ({span(f['lookup_one_process_runs'])}; "
         f"{f['lookup_one_process_per_s'] / f['rdkit_canonical_per_s']:.2f} of RDKit's rate)"),
        (f"`store.lookup` end to end, {workers} processes",
         f"{f['lookup_all_cores_per_s']:,.0f} /s"),
        ("exact-match index size", f"{idx / n:.2f} B/molecule"),
        ("SQLite (indexed text column)", f"{f['sqlite_lookups_per_s']:,.0f} lookups/s, "
         f"{f['sqlite_bytes_per_mol']:.1f} B/molecule"),
        ("Python dict", f"{f['dict_lookups_per_s']:,.0f} lookups/s, "
         f"{f['dict_bytes_per_mol']:.1f} B/molecule"),
    ]  # fmt: skip
    print("| what | figure |")
    print("|---|---:|")
    for what, figure in rows:
        print(f"| {what} | {figure} |")
    if args.json:
        Path(args.json).write_text(json.dumps(fig, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
