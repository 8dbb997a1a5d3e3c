"""How often is the shortest edit path between two skeletons a "valley" (deletions from both ends
meeting in the middle: the paths a network built by deletions holds, as SmallWorld's is)? For
random queries of the bundled data, every skeleton within distance D by the reference search,
against the best valley path between the two; and, for the pairs no valley path explains, the
best path of deletions and "bridge moves" from both ends (a bond added that puts a bridge on a
cycle, then that bridge deleted: two edits that move a branch to another atom).

    .venv/bin/python benches/analogs_valley.py [--seed 1] [--queries 15] [--dist 3]
        [--moves-on both|query]

`--moves-on query` allows the bridge moves on the query's side only (the library side then
needs only its deletions: what an index of deletion neighbourhoods could serve).
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from rdkit import RDLogger

from molsift.analogs import Skeleton, edits, skeleton_of_smiles
from molsift.analogs.reference import distances
from molsift.analogs.skeleton import bridge_moves

DOWN = {"tdn", "rdn", "ldn"}
DATA = Path(__file__).resolve().parent.parent / "data/nci_first_5k.smi"


def down_ball(start, radius: int, moves: bool = False) -> dict:
    """Graphs within `radius` of `start` by deletions (cost 1) and, with `moves`, bridge moves
    (cost 2): certificate -> cost."""
    found = {start.certificate: 0}
    frontier = [(start, 0)]
    while frontier:
        nxt = []
        for graph, cost in frontier:
            steps = [(r, 1) for kind, r in edits(graph) if kind in DOWN]
            if moves:
                steps += [(r, 2) for r in bridge_moves(graph)]
            for result, w in steps:
                key = result.certificate
                if cost + w <= radius and found.get(key, radius + 1) > cost + w:
                    found[key] = cost + w
                    nxt.append((result, cost + w))
        frontier = nxt
    return found


def meet(a: dict, b: dict):
    return min((a[k] + b[k] for k in a if k in b), default=None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--queries", type=int, default=15)
    ap.add_argument("--dist", type=int, default=3)
    ap.add_argument("--moves-on", choices=("both", "query"), default="both")
    args = ap.parse_args()
    RDLogger.DisableLog("rdApp.*")
    by_cert = {}
    for line in DATA.read_text().splitlines()[1:]:
        try:
            s = skeleton_of_smiles(line.split()[0])
        except ValueError:
            continue
        if 6 <= s.n <= 12 and s.components == 1:
            by_cert[s.certificate] = s
    pool = list(by_cert.values())
    print(f"{len(pool)} distinct one-component skeletons of 6-12 atoms")
    checked = climbing = explained = 0
    began = time.time()
    for query in random.Random(args.seed).sample(pool, args.queries):
        near = down_ball(query, args.dist)
        near_moves = None
        for key, dist in distances(query, pool, args.dist, key=cert).items():
            far = down_ball(by_cert[key], args.dist)
            checked += 1
            if meet(near, far) == dist:
                continue
            climbing += 1
            if near_moves is None:
                near_moves = down_ball(query, args.dist, moves=True)
            both = args.moves_on == "both"
            if meet(near_moves, down_ball(by_cert[key], args.dist, moves=both)) == dist:
                explained += 1
            elif climbing - explained <= 5:
                print(f"not explained: {query.key} -> {by_cert[key].key}, distance {dist}")
    print(
        f"{checked} pairs within distance {args.dist}; {climbing} ({100 * climbing / checked:.0f}%)"
        f" have no valley path as short; {explained} of those are explained by deletions and"
        f" bridge moves (moves on {args.moves_on} side(s)); {time.time() - began:.0f} s"
    )


def cert(s: Skeleton) -> bytes:
    return s.certificate


if __name__ == "__main__":
    main()
