"""The brute-force analog search that molsift's fast walk is tested against: edit distances by
breadth-first search over the edits of `skeleton.py`, canonicalizing every graph reached.

It meets in the middle, which changes nothing in the answer: every edit has an inverse edit,
so a path of length L <= D from the query Q to a target H passes a graph M at ceil(L/2) edits
from Q and floor(L/2) edits from H. The query's ball of radius ceil(D/2) and each target's ball
of radius floor(D/2) (edits read backwards, so their kinds inverted) are enumerated in full, and
the distance is the least i + j over the graphs M in both. With per-kind limits a graph keeps
every count vector not dominated by another (fewer or equal edits of every kind), since a
longer path may be the only one the limits allow. Only targets the lower bound admits (the
same number of components, |atoms difference| + |rings difference| <= D, the parity of the
bond difference) are walked. Slow by design: plain Python and RDKit, for tests and for
checking the fast path."""

from __future__ import annotations

from collections.abc import Iterable

from .skeleton import INVERSE, KINDS, Skeleton, edits

_INDEX = {kind: k for k, kind in enumerate(KINDS)}
_INVERTED = [_INDEX[INVERSE[kind]] for kind in KINDS]


def _within(counts: tuple, limits: tuple | None) -> bool:
    return limits is None or all(c <= m for c, m in zip(counts, limits))


def rdkit_key(s: Skeleton) -> str:
    """The reference canonical form (RDKit's canonical SMILES of the dummy-atom graph)."""
    return s.key


def ball(
    start: Skeleton,
    radius: int,
    limits: tuple | None = None,
    inverted: bool = False,
    key=rdkit_key,
) -> dict:
    """Every graph within `radius` edits of `start`: key -> [(edits, counts by kind)], the
    counts not dominated by another of the same graph (one entry, the nearest, without
    limits). `inverted` counts each edit as its inverse kind (a path read from its end);
    `key` is the canonical form used (RDKit's by default)."""
    found: dict = {key(start): [(0, (0,) * len(KINDS))]}
    frontier = [(start, (0,) * len(KINDS))]
    for depth in range(1, radius + 1):
        nxt = []
        for graph, counts in frontier:
            for kind, result in edits(graph):
                k = _INDEX[kind]
                if inverted:
                    k = _INVERTED[k]
                c = (*counts[:k], counts[k] + 1, *counts[k + 1 :])
                if not _within(c, limits):
                    continue
                seen = found.setdefault(key(result), [])
                if limits is None:
                    if seen:
                        continue
                elif any(all(a <= b for a, b in zip(old, c)) for _, old in seen):
                    continue
                seen[:] = [(d, old) for d, old in seen if not all(a <= b for a, b in zip(c, old))]
                seen.append((depth, c))
                nxt.append((result, c))
        frontier = nxt
    return found


def lower_bound(a: Skeleton, b: Skeleton) -> int | None:
    """A lower bound of the distance between `a` and `b`, or None when no sequence of edits
    joins them (different numbers of components)."""
    if a.components != b.components:
        return None
    bound = abs(a.n - b.n) + abs(a.rings - b.rings)
    if (bound - (len(a.bonds) - len(b.bonds))) % 2:
        bound += 1  # the distance has the parity of the bond difference
    return bound


def distances(
    query: Skeleton,
    targets: Iterable[Skeleton],
    max_dist: int,
    limits: dict[str, int] | None = None,
    balls: dict | None = None,
    key=rdkit_key,
) -> dict:
    """Edit distance from `query` to each target within `max_dist` (target key -> distance);
    `limits` bounds the edits of each kind (kinds not named are unbounded). `balls` caches
    the targets' balls between calls; `key` is the canonical form (RDKit's by default; the
    tests of the fast walk pass molsift's own, which a test checks against RDKit's)."""
    cap = None
    if limits:
        unknown = set(limits) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown edit kinds {sorted(unknown)}: use {', '.join(KINDS)}")
        cap = tuple(limits.get(kind, max_dist) for kind in KINDS)
    near = ball(query, (max_dist + 1) // 2, cap, key=key)
    balls = {} if balls is None else balls
    out: dict[str, int] = {}
    for target in targets:
        bound = lower_bound(query, target)
        target_key = key(target)
        if bound is None or bound > max_dist or target_key in out:
            continue
        cache_key = (target_key, max_dist // 2, cap)
        far = balls.get(cache_key)
        if far is None:
            far = balls[cache_key] = ball(target, max_dist // 2, cap, inverted=True, key=key)
        best = None
        for graph, ends in far.items():
            starts = near.get(graph)
            if starts is None:
                continue
            for j, c2 in ends:
                for i, c1 in starts:
                    if best is not None and i + j >= best:
                        continue
                    if _within(tuple(a + b for a, b in zip(c1, c2)), cap):
                        best = i + j
        if best is not None and best <= max_dist:
            out[target_key] = best
    return out
