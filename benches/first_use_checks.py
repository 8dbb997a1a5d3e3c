"""Benchmark: what the checks at first use cost a search (issue 14: a search never returns a hit
read from a damaged byte, so it checks the checksum of each file part it reads, once per process).

In ONE process, on a store with its column index (the page cache warm, so the difference is the
hashing, not disk reads):
- open (`open_store(path, verify=False)`: manifest, sizes, offsets);
- pass 1: each query once, top-10 (the first query to read a bit plane checks that plane, the
  first query of all also checks the slot order);
- pass 2: the same queries again (nothing left to check): pass 1 - pass 2 is the checks' cost;
- the first id and SMILES read (checks ids.txt, smiles.txt and their offsets) against a second;
- `molsift info`'s full check (every file) for scale.

    .venv/bin/python benches/first_use_checks.py STORE [--queries FILE] [-n 100]
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "moses_train.csv.gz"


def queries_from(path: Path, n: int) -> list:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        lines = [ln.replace(",", " ").split()[0] for ln in f if ln.strip()]
    return lines[-n:]


def main() -> None:
    import molsift
    from molsift.chem import to_mol
    from molsift.search import fingerprinter_for

    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("store")
    ap.add_argument(
        "--queries",
        type=Path,
        default=SHARED,
        help="SMILES or CSV (first column) file; its last -n lines are the queries",
    )
    ap.add_argument("-n", type=int, default=100, help="queries (default 100)")
    args = ap.parse_args()
    queries = queries_from(args.queries, args.n)

    t = time.perf_counter()
    store = molsift.open_store(args.store, verify=False)
    opened = time.perf_counter() - t
    t = time.perf_counter()
    store._searcher()  # the column index, opened through the store's handle
    index_opened = time.perf_counter() - t
    fper = fingerprinter_for(store)
    on_bits = [fper.on_bits(to_mol(q)[0]) for q in queries]

    def one_pass() -> list:
        times = []
        for bits in on_bits:
            t = time.perf_counter()
            store.search(bits, k=10)
            times.append(time.perf_counter() - t)
        return times

    first, second = one_pass(), one_pass()
    t = time.perf_counter()
    store.ids[0], store.smiles[0]
    text_first = time.perf_counter() - t
    t = time.perf_counter()
    store.ids[1], store.smiles[1]
    text_second = time.perf_counter() - t
    t = time.perf_counter()
    molsift.open_store(args.store, verify=True)
    full = time.perf_counter() - t

    ms = lambda s: f"{s * 1000:,.2f}"  # noqa: E731
    print(f"store {args.store}: {len(store):,} molecules, {len(queries)} queries (top-10)\n")
    print("| step | ms |")
    print("|---|---:|")
    print(f"| open (manifest, sizes, offsets) | {ms(opened)} |")
    print(f"| open the column index (header checked against the manifest) | {ms(index_opened)} |")
    print(f"| first query (checks its planes and the slot order) | {ms(first[0])} |")
    print(f"| pass 1, all queries (each plane checked at its first read) | {ms(sum(first))} |")
    print(f"| pass 2, the same queries (nothing left to check) | {ms(sum(second))} |")
    print(f"| pass 1 - pass 2: the plane and order checks | {ms(sum(first) - sum(second))} |")
    print(
        f"| median query, pass 1 / pass 2 | {ms(statistics.median(first))} / "
        f"{ms(statistics.median(second))} |"
    )
    print(f"| first id + SMILES read (checks ids, SMILES and their offsets) | {ms(text_first)} |")
    print(f"| next id + SMILES read | {ms(text_second)} |")
    print(f"| every file's checksum (`molsift info`) | {ms(full)} |")


if __name__ == "__main__":
    main()
