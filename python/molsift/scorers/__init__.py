"""Scorers for `molsift screen`, by name: `filter`, `similarity`, `vina`, and
`python:module:function` for user code. Scorer modules are imported only when chosen (RDKit
descriptors, Vina and Meeko are heavy)."""

from __future__ import annotations

import importlib

from .base import Reject, Scorer, format_value

# name -> "module:class", imported lazily
BUILTIN: dict[str, str] = {
    "filter": "molsift.scorers.filter:FilterScorer",
    "similarity": "molsift.scorers.similarity:SimilarityScorer",
    "vina": "molsift.scorers.vina:VinaScorer",
}


def scorer_class(name: str) -> type[Scorer]:
    """The scorer class for `name` (a built-in name or `python:module:function`)."""
    if name.startswith("python:"):
        from .user import PythonScorer

        return PythonScorer
    if name not in BUILTIN:
        raise ValueError(
            f"unknown scorer {name!r}: choose one of {', '.join(BUILTIN)} or python:module:function"
        )
    module, cls = BUILTIN[name].split(":")
    return getattr(importlib.import_module(module), cls)


__all__ = ["BUILTIN", "Reject", "Scorer", "format_value", "scorer_class"]
