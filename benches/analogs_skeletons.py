"""The skeletons of a store (issue 19's index sizing): how many distinct anonymous graphs, their
sizes, the cost of reading and canonicalizing one (Rust: `_core.smiles_skeleton` then
`_core.canonical_skeleton`, one thread, Python calls included), and for a sample of skeletons
how many distinct graphs lie one edit away, in all and by deletions alone, and how many one
bridge move away (what an index of neighbourhoods would hold per skeleton; docs/analogs.md).

    .venv/bin/python benches/analogs_skeletons.py STORE [--sample 200] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections import Counter
from pathlib import Path

import molsift
from molsift import _core
from molsift.analogs import Skeleton, edits
from molsift.analogs.skeleton import bridge_moves

DOWN = {"tdn", "rdn", "ldn"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--json")
    args = ap.parse_args()
    store = molsift.open_store(args.store)
    per_key: Counter = Counter()
    first: dict[bytes, tuple] = {}
    sizes: Counter = Counter()
    multi = 0
    began = time.perf_counter()
    for smiles in store.smiles:
        n, bonds = _core.smiles_skeleton(smiles)
        _labels, cert = _core.canonical_skeleton(n, bonds)
        per_key[cert] += 1
        if cert not in first:
            first[cert] = (n, bonds)
    seconds = time.perf_counter() - began
    for n, bonds in first.values():
        sizes[n] += 1
        multi += Skeleton.of(n, bonds).components > 1
    molecules = sum(per_key.values())
    print(f"{molecules:,} molecules, {len(per_key):,} distinct skeletons "
          f"({molecules / len(per_key):.2f} molecules each, the most {max(per_key.values()):,}); "
          f"{multi:,} skeletons of several components")  # fmt: skip
    print(f"read + canonicalize: {1e6 * seconds / molecules:.2f} us per molecule (one thread)")
    atoms = sorted(sizes.elements())
    print(f"atoms per skeleton: median {statistics.median(atoms)}, 10th-90th percentile "
          f"{atoms[len(atoms) // 10]}-{atoms[9 * len(atoms) // 10]}, max {atoms[-1]}")  # fmt: skip
    rng = random.Random(1)
    sample = rng.sample(list(first.values()), min(args.sample, len(first)))
    all_n, down_n, move_n = [], [], []
    began = time.perf_counter()
    for n, bonds in sample:
        g = Skeleton.of(n, bonds)
        around = {kind: set() for kind in ("all", "down")}
        for kind, result in edits(g):
            around["all"].add(result.certificate)
            if kind in DOWN:
                around["down"].add(result.certificate)
        all_n.append(len(around["all"]))
        down_n.append(len(around["down"]))
        move_n.append(len({m.certificate for m in bridge_moves(g)} - {g.certificate}))
    print(f"one edit away (distinct graphs, {len(sample)} skeletons): all edits median "
          f"{statistics.median(all_n)} (mean {statistics.mean(all_n):.0f}), deletions alone "
          f"median {statistics.median(down_n)} (mean {statistics.mean(down_n):.0f}); "
          f"one bridge move away median {statistics.median(move_n)} "
          f"(mean {statistics.mean(move_n):.0f}); {time.perf_counter() - began:.1f} s")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps({
            "molecules": molecules, "skeletons": len(per_key), "multi_component": multi,
            "us_per_molecule": 1e6 * seconds / molecules, "atoms_median": statistics.median(atoms),
            "neighbours_all_median": statistics.median(all_n),
            "neighbours_down_median": statistics.median(down_n),
            "bridge_moves_median": statistics.median(move_n),
        }, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
