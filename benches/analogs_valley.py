"""How often is the shortest edit path between two skeletons a "valley" (deletions from both ends
meeting in the middle: the paths a network built by deletions holds, as SmallWorld's is)? For
random queries of the bundled data, every skeleton within distance D by the reference search,
against the best valley path between the two. Prints the pairs and how many need insertions.

    .venv/bin/python benches/analogs_valley.py [--seed 1] [--queries 15] [--dist 3]
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from rdkit import RDLogger

from molsift.analogs import edits, skeleton_of_smiles
from molsift.analogs.reference import distances

DOWN = {"tdn", "rdn", "ldn"}
DATA = Path(__file__).resolve().parent.parent / "data/nci_first_5k.smi"


def down_ball(start, radius: int) -> dict:
    """Graphs within `radius` deletions of `start`: key -> deletions."""
    found = {start.key: 0}
    frontier = [start]
    for depth in range(1, radius + 1):
        nxt = []
        for graph in frontier:
            for kind, result in edits(graph):
                if kind in DOWN and result.key not in found:
                    found[result.key] = depth
                    nxt.append(result)
        frontier = nxt
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--queries", type=int, default=15)
    ap.add_argument("--dist", type=int, default=3)
    args = ap.parse_args()
    RDLogger.DisableLog("rdApp.*")
    skeletons = {}
    for line in DATA.read_text().splitlines()[1:]:
        try:
            s = skeleton_of_smiles(line.split()[0])
        except ValueError:
            continue
        if 6 <= s.n <= 12 and s.components == 1:
            skeletons[s.key] = s
    pool = list(skeletons.values())
    print(f"{len(pool)} distinct one-component skeletons of 6-12 atoms")
    checked = climbing = 0
    began = time.time()
    for query in random.Random(args.seed).sample(pool, args.queries):
        near = down_ball(query, args.dist)
        for key, dist in distances(query, pool, args.dist).items():
            far = down_ball(skeletons[key], args.dist)
            valley = min((near[k] + far[k] for k in near if k in far), default=None)
            checked += 1
            if valley != dist:
                climbing += 1
                if climbing <= 5:
                    print(f"{query.key} -> {key}: distance {dist}, best valley {valley}")
    print(
        f"{checked} pairs within distance {args.dist}; {climbing} ({100 * climbing / checked:.0f}%)"
        f" have no valley path as short; {time.time() - began:.0f} s"
    )


if __name__ == "__main__":
    main()
