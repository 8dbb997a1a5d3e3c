"""The exact match of screen survivors, in whichever process runs it (the caller's, or a worker
of `engine.py`): the survivors' canonical SMILES fetched from the store in one call, then either

- `library`: the batch handed to RDKit's own C++ loop, a `SubstructLibrary` over a
  `CachedTrustedSmilesMolHolder` of just these SMILES (no fingerprints: every one is matched;
  each parsed without sanitization, its property cache updated, and RDKit's SSSR set when the
  query needs rings): the `fast` and `rings` forms of `forms.py` at RDKit's C++ speed (about
  12 µs per molecule against 22 µs through Python calls, on 100,000 MOSES molecules), for
  queries whose atoms carry no radicals (those need radicals assigned, which that loop does
  not do); a batch it refuses ("RingInfo not initialized": ring tests inside a recursive
  SMARTS) goes to the Python loop instead, and so does the rest of that query;
- `python`: each survivor made into the query's molecule form (`forms.py`) and tested with
  RDKit's `HasSubstructMatch` (`useChirality` only when asked).

Parsed queries are cached per process."""

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


def _library_match(query: Query, smiles: list[str]) -> list[int] | None:
    """Indices of `smiles` matching through RDKit's SubstructLibrary loop, or None when that
    loop refuses the query."""
    from rdkit.Chem import rdSubstructLibrary as sl

    holder = sl.CachedTrustedSmilesMolHolder()
    for smi in smiles:
        holder.AddSmiles(smi)
    try:
        found = sl.SubstructLibrary(holder).GetMatches(
            query.mol,
            recursionPossible=True,
            useChirality=False,
            useQueryQueryMatches=False,
            numThreads=1,
            maxResults=len(smiles),
        )
    except RuntimeError:  # e.g. "RingInfo not initialized" for ring tests in recursive SMARTS
        return None
    return sorted(found)


def match(core, query: Query, positions: np.ndarray) -> np.ndarray:
    """The positions (ascending, a subset of `positions`) whose molecule contains `query`.
    `core` is the open store (`molsift._core.Store` or `StoreV2`)."""
    if len(positions) == 0:
        return positions
    smiles = core.texts_at("smiles", np.ascontiguousarray(positions, dtype="<i8").tobytes())
    if query.matcher == "library":
        keep = _library_match(query, smiles)
        if keep is not None:
            return positions[keep]
        query.matcher = "python"  # for the rest of this query, in this process
    make = MAKERS[query.form]
    qmol, chirality = query.mol, query.chirality
    keep = [
        i
        for i, smi in enumerate(smiles)
        if (m := make(smi)) is not None and m.HasSubstructMatch(qmol, useChirality=chirality)
    ]
    return positions[keep]
