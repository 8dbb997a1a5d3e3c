"""Substructure search (the Arthor side): which molecules of a store contain a SMILES or SMARTS
query, exactly as RDKit's `HasSubstructMatch` says.

- `query.py`: the query read with RDKit (`QueryError` when it cannot be), its screening bits.
- `features.py`: screening bits SMARTS queries do determine (atom counts by element, charge,
  aromaticity, H, rings; multiple bonds), beside RDKit's pattern fingerprint.
- `build.py`: the store's pattern planes, written in parallel (`molsift index --pattern`).
- `forms.py`, `matcher.py`: the exact match of survivors on the cheapest exact molecule form.
- `engine.py`: match workers that stay alive between queries.
- `search.py`: one query, end to end, streamed in store order.
"""

from __future__ import annotations

from .build import build_pattern_index
from .query import QueryError, parse_query
from .search import iter_substructure, last_stats, substructure

__all__ = [
    "QueryError",
    "build_pattern_index",
    "iter_substructure",
    "last_stats",
    "parse_query",
    "substructure",
]
