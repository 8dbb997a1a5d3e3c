"""The exact match of screen survivors, in whichever process runs it (the caller's, or a worker
of `engine.py`): the survivors' canonical SMILES fetched from the store in one call, each turned
into the query's molecule form (`forms.py`) and tested with RDKit's `HasSubstructMatch`
(`useChirality` only when asked). Parsed queries are cached per process."""

from __future__ import annotations

import numpy as np

from .forms import MAKERS
from .query import Query, parse_query

_QUERIES: dict[tuple, Query] = {}


def cached_query(text: str, kind: str, chirality: bool) -> Query:
    """The query parsed once per process (workers receive its text)."""
    key = (text, kind, chirality)
    q = _QUERIES.get(key)
    if q is None:
        if len(_QUERIES) > 1000:
            _QUERIES.clear()
        q = _QUERIES[key] = parse_query(text, smarts=kind == "smarts", chirality=chirality)
    return q


def match(core, query: Query, positions: np.ndarray) -> np.ndarray:
    """The positions (ascending, a subset of `positions`) whose molecule contains `query`.
    `core` is the open store (`molsift._core.Store`)."""
    if len(positions) == 0:
        return positions
    smiles = core.smiles_at(np.ascontiguousarray(positions, dtype="<i8").tobytes())
    make = MAKERS[query.form]
    qmol, chirality = query.mol, query.chirality
    keep = [
        i
        for i, smi in enumerate(smiles)
        if (m := make(smi)) is not None and m.HasSubstructMatch(qmol, useChirality=chirality)
    ]
    return positions[keep]
