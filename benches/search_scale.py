"""Benchmark: how exact search time grows with the number of fingerprints (issue 5), molsift vs
FPSim2 0.7.4 in one run, at 1.58 M (the real MOSES store of benches/search.py), 10 M and 100 M.

The larger sets are synthetic, made from the real one: molecule i is a copy of MOSES molecule
i mod 1,584,563; copy 0 is the real fingerprint, every other copy has 2 of its on-bits moved to
random bits that were off (popcounts stay real). `crates/search/examples/synth_index.rs` writes
the column index of such a set straight to disk, a group of bit planes per pass (the same code,
`molsift_search::write_index`, that `molsift index` uses), so a 100 M index (26 GB) is built
with 4 GiB of memory. molsift searches it through `_core.Searcher.from_index` (the same search
code as a store; hits are positions in the synthetic set). Queries: the 100 held-out MOSES
molecules of benches/search.py (not in any set), one thread unless said.

Peers and checks:
- FPSim2 in memory, up to --fpsim2-max fingerprints (it holds 272 bytes per fingerprint in RAM:
  27 GB at 100 M, more than this 24 GiB machine has). Its database is written from the same
  synthetic fingerprints (PyTables, sorted by popcount, the layout `create_db_file` makes).
  FPSim2's hit sets (threshold) and score lists (top-k) must equal molsift's.
- At every synthetic size, an independent brute force (`synth_index --brute`: regenerates every
  fingerprint and counts common bits per query, no index code) gives the exact t=0.7 and top-10
  hits, which must equal molsift's, order included.
- Disk bytes read (/proc/diskstats, machine-wide) during the first pass over the queries, which
  at 100 M cannot all come from the page cache.

    .venv/bin/python benches/search_scale.py --sizes 10000000,100000000 --workdir /work/scale \\
        --drop-caches
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np
import search as base  # benches/ is on sys.path when a bench runs as a script
import search_cold as cold

ROOT = Path(__file__).resolve().parent.parent
SYNTH = ROOT / "target" / "release" / "examples" / "synth_index"
COLUMNS = [
    ("t=0.7", 0.7, None),
    ("top-10", None, 10),
    ("t=0.5", 0.5, None),
    ("t=0.8", 0.8, None),
    ("t=0.9", 0.9, None),
    ("top-1", None, 1),
    ("top-100", None, 100),
    ("top-1000", None, 1000),
]


def synth(args, store_path: Path, n: int, work: Path, rows: bool) -> Path:
    out = work / f"synth_{n}"
    rows_path = work / f"synth_{n}.rows"
    if not (out / "columns.json").exists() or (rows and not rows_path.exists()):
        subprocess.run(
            [
                "cargo",
                "build",
                "--release",
                "-q",
                "-p",
                "molsift-search",
                "--example",
                "synth_index",
            ],
            cwd=ROOT,
            check=True,
        )
        cmd = [
            str(SYNTH),
            "--store",
            str(store_path),
            "--n",
            str(n),
            "--out",
            str(out),
            "--budget-mib",
            str(args.budget_mib),
        ]
        if rows:
            cmd += ["--rows", str(rows_path)]
        subprocess.run(cmd, check=True)
    return out


def brute(store_path: Path, n: int, work: Path, qfile: Path) -> dict:
    path = work / f"synth_{n}.brute.json"
    if not path.exists():
        subprocess.run(
            [
                str(SYNTH),
                "--store",
                str(store_path),
                "--n",
                str(n),
                "--brute",
                str(qfile),
                "-t",
                "0.7",
                "-k",
                "10",
                "--brute-out",
                str(path),
            ],
            check=True,
        )
    return json.loads(path.read_text())


def reverse_bits_u64(words: np.ndarray) -> np.ndarray:
    """FPSim2 keeps bit i of a fingerprint in word i // 64 at bit 63 - i % 64 (BitStrToIntList)."""
    table = np.array([int(f"{b:08b}"[::-1], 2) for b in range(256)], dtype=np.uint8)
    return table[words.view(np.uint8)].view(np.uint64).byteswap()


def fpsim2_db(rows_path: Path, n: int, work: Path, template: Path) -> Path:
    """Writes an FPSim2 database (PyTables) of the synthetic rows, sorted by popcount."""
    import tables as tb
    from FPSim2.io.backends.pytables import create_schema

    path = work / f"synth_{n}_fpsim2.h5"
    if path.exists():
        return path
    t0 = time.perf_counter()
    rows = np.memmap(rows_path, dtype=np.uint64, mode="r").reshape(n, 32)
    pop = np.zeros(n, dtype=np.int64)
    for lo in range(0, n, 1 << 20):
        pop[lo : lo + (1 << 20)] = np.bitwise_count(rows[lo : lo + (1 << 20)]).sum(axis=1)
    order = np.argsort(pop, kind="stable")
    with tb.open_file(template) as f:
        config = [f.root.config[i] for i in range(4)]
    tmp = path.with_suffix(".h5.tmp")
    with tb.open_file(tmp, mode="w") as f:
        table = f.create_table(
            f.root,
            "fps",
            create_schema(2048),
            "Table storing fps",
            filters=tb.Filters(complib="blosc2", complevel=1),
        )
        for lo in range(0, n, 1 << 20):
            ix = order[lo : lo + (1 << 20)]
            chunk = np.empty(len(ix), dtype=table.dtype)
            chunk["fp_id"] = ix
            fp = reverse_bits_u64(np.ascontiguousarray(rows[np.sort(ix)]))
            fp = fp[np.argsort(np.argsort(ix))]  # back to popcount order
            for j in range(32):
                chunk[f"f{j + 1}"] = fp[:, j]
            chunk["popcnt"] = pop[ix]
            table.append(chunk)
        sp = pop[order]
        values, starts = np.unique(sp, return_index=True)
        ends = np.append(starts[1:], n)
        bins = [(int(v), (np.int64(s), np.int64(e))) for v, s, e in zip(values, starts, ends)]
        cfg = f.create_vlarray(f.root, "config", atom=tb.ObjectAtom())
        for c in [*config, bins]:
            cfg.append(c)
    os.replace(tmp, path)
    print(f"wrote FPSim2 database of {n:,} in {time.perf_counter() - t0:.0f} s", flush=True)
    return path


def search_each(searcher, qbits, t, k) -> list:
    """molsift's hits for each query, one query at a time on one thread."""
    return [searcher.search(b, t, k, 1) for b in qbits]


def search_batch(searcher, qbits, t, k, threads: int) -> list:
    """molsift's hits for all queries in one batch."""
    return searcher.search_batch(qbits, t, k, threads)[0]


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", default=str(ROOT.parent / "shared/data/moses_train.csv.gz"))
    ap.add_argument(
        "--base-workdir",
        default="/tmp/molsift-search-bench",
        help="where benches/search.py builds MOSES",
    )
    ap.add_argument("--workdir", default="/work/scale", help="synthetic sets (26 GB at 100 M)")
    ap.add_argument("--sizes", default="10000000,100000000")
    ap.add_argument("--fpsim2-max", type=int, default=10_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--repeats-large", type=int, default=1, help="repeats above 20 M molecules")
    ap.add_argument(
        "--budget-mib", type=int, default=4096, help="memory for planes while building an index"
    )
    ap.add_argument(
        "--drop-caches",
        action="store_true",
        help="drop the page cache before each size's first pass (root)",
    )
    args = ap.parse_args()

    from FPSim2 import FPSim2Engine
    from rdkit import Chem
    from rdkit.Chem import rdFingerprintGenerator

    from molsift import _core

    bwork, work = Path(args.base_workdir), Path(args.workdir)
    bwork.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    smi, db, query_smiles = base.build_inputs(Path(args.data), bwork, 100)
    store = base.build_store_v1(smi, bwork)
    store_path = bwork / "moses_db.store"
    n0 = len(store)
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    qbits = [list(gen.GetFingerprint(Chem.MolFromSmiles(s)).GetOnBits()) for s in query_smiles]
    qfile = work / "queries.txt"
    qfile.write_text("".join(" ".join(map(str, b)) + "\n" for b in qbits))
    sizes = [n0] + [int(s) for s in args.sizes.split(",") if s]
    print(
        f"queries: 100 held-out MOSES molecules; sizes {sizes}; {os.cpu_count()} cores; "
        f"median of {args.repeats} repeats",
        flush=True,
    )

    def ms(sec):
        return sec * 1000 / len(qbits)

    table, failures = [], []
    for n in sizes:
        real = n == n0
        with_fpsim2 = n <= args.fpsim2_max
        if real:
            searcher = _core.Searcher(str(store_path))
            index_bytes = sum(
                (store_path / f).stat().st_size for f in ("columns.planes.u64", "columns.order.u64")
            )
            fp_path = base.build_fpsim2(db, bwork)
            line_to_index = np.full(len(db), -1, dtype=np.int64)
            for i, sid in enumerate(store.ids):
                line_to_index[int(sid[1:])] = i
            to_index = line_to_index.take  # FPSim2 mol ids are database lines
            ref = None
        else:
            d = synth(args, store_path, n, work, rows=with_fpsim2)
            index_bytes = json.loads((d / "synth.json").read_text())["index_bytes"]
            searcher = _core.Searcher.from_index(str(d))
            fp_path = (
                fpsim2_db(work / f"synth_{n}.rows", n, work, bwork / "moses_db_fpsim2.h5")
                if with_fpsim2
                else None
            )
            to_index = np.asarray  # synthetic: FPSim2 mol ids are store positions
            ref = brute(store_path, n, work, qfile)

        # first pass at t=0.7, one query at a time: what comes from disk when the index is new
        if args.drop_caches:
            os.sync()
            Path("/proc/sys/vm/drop_caches").write_text("3\n")
        before, t0 = cold.disk_read_bytes(), time.perf_counter()
        first = [searcher.search(b, 0.7, None, 1) for b in qbits]
        first_ms = (time.perf_counter() - t0) * 1000 / len(qbits)
        first_disk = cold.disk_read_bytes() - before
        if ref is not None:
            for qi, (idx, _, _) in enumerate(first):
                if list(idx) != ref["threshold"][qi]:
                    failures.append(f"n={n} t=0.7 query {qi}: molsift != brute force")
            for qi, b in enumerate(qbits):
                if list(searcher.search(b, None, 10, 1)[0]) != ref["top_k"][qi]:
                    failures.append(f"n={n} top-10 query {qi}: molsift != brute force")

        fpe = FPSim2Engine(str(fp_path), in_memory_fps=True) if fp_path else None
        row = {
            "n": n,
            "synthetic": not real,
            "index_gb": index_bytes / 1e9,
            "first_ms": first_ms,
            "read_ahead": searcher.read_ahead,
            "first_disk_mb_per_query": first_disk / 1e6 / len(qbits),
            "cols": {},
        }
        reps = args.repeats if n <= 20_000_000 else args.repeats_large
        for name, t, k in COLUMNS:
            single_s, res = base.timed(partial(search_each, searcher, qbits, t, k), reps)
            batch_s, bres = base.timed(partial(search_batch, searcher, qbits, t, k, 1), reps)
            two_s, tres = base.timed(partial(search_batch, searcher, qbits, t, k, 2), reps)
            for qi, ((a, _, _), (b, _), (c, _)) in enumerate(zip(res, bres, tres)):
                if list(a) != list(b) or list(a) != list(c):
                    failures.append(f"n={n} {name} query {qi}: batch or 2 threads != single")
            f_ms = None
            if fpe is not None:
                fpsim2 = partial(base.fpsim2_search, fpe, query_smiles, to_index, t, k)
                f_s, fres = base.timed(fpsim2, 1)
                f_ms = ms(f_s)
                for qi, ((a, sa, _), (d, sd)) in enumerate(zip(res, fres)):
                    if k is None and sorted(a) != sorted(d.tolist()):
                        failures.append(
                            f"n={n} {name} query {qi}: FPSim2 hit set differs "
                            f"({len(a)} vs {len(d)})"
                        )
                    if k is not None and not np.allclose(np.sort(sa), np.sort(sd), atol=1e-6):
                        failures.append(f"n={n} {name} query {qi}: FPSim2 top-k scores differ")
            hits = sum(len(a) for a, _, _ in res)
            row["cols"][name] = (ms(single_s), ms(batch_s), ms(two_s), f_ms, hits)
            print(
                f"n={n:,} {name}: molsift {ms(single_s):.3f} ms/query (batch "
                f"{ms(batch_s):.3f}, 2 threads {ms(two_s):.3f}), "
                f"FPSim2 {'-' if f_ms is None else f'{f_ms:.1f}'}, hits {hits:,}",
                flush=True,
            )
        fpe = None  # free its fingerprints before the next size
        table.append(row)

    print()
    print(
        "| molecules | index GB | column | molsift single ms/query | batch of 100 "
        "| batch, 2 threads | FPSim2 in memory | FPSim2 / molsift | hits |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for row in table:
        label = f"{row['n']:,}" + (" (synthetic)" if row["synthetic"] else " (MOSES)")
        for name, (s1, b1, b2, f, hits) in row["cols"].items():
            fp = "-" if f is None else f"{f:.1f}"
            ratio = "-" if f is None else f"{f / s1:.0f}x"
            print(
                f"| {label} | {row['index_gb']:.2f} | {name} | {s1:.3f} | {b1:.3f} | {b2:.3f} "
                f"| {fp} | {ratio} | {hits:,} |"
            )
    print()
    for row in table:
        print(
            f"n={row['n']:,}: first pass at t=0.7 {row['first_ms']:.2f} ms/query, "
            f"{row['first_disk_mb_per_query']:.1f} MB/query read from disk (machine-wide); "
            f"read-ahead hints {'on' if row['read_ahead'] else 'off'}"
        )
    if failures:
        print(f"{len(failures)} MISMATCHES, first: {failures[:5]}", file=sys.stderr)
        return 1
    print(
        "all checked: molsift == brute force (t=0.7, top-10, order included) at every "
        "synthetic size; FPSim2 same hit sets / scores where run; batch and 2 threads == single"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
