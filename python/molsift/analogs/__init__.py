"""Analog search by graph edit distance (issue 19, in progress; docs/analogs.md): molecules whose
anonymous graphs are a few edits away from the query's. One module per job: `skeleton.py` holds
the definition (anonymous graphs, the six edits, canonical keys); `reference.py` the brute-force
search that the fast index and walk are tested against."""

from __future__ import annotations

from .skeleton import (
    INVERSE,
    KINDS,
    Skeleton,
    canonical_key,
    edits,
    elements_of,
    skeleton_of,
    skeleton_of_smiles,
)

__all__ = [
    "INVERSE",
    "KINDS",
    "Skeleton",
    "canonical_key",
    "edits",
    "elements_of",
    "skeleton_of",
    "skeleton_of_smiles",
]
