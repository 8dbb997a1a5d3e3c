"""`python:module:function` scorers: user code. The function takes an RDKit molecule and returns
a number, a sequence, or a dict; its columns are `function.columns` when it has that attribute,
else one column `score`. The module is imported once per worker. Raise
`molsift.scorers.Reject(reason)` to reject a molecule."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from typing import Any

from .base import Scorer


class PythonScorer(Scorer):
    name = "python"

    def __init__(self, spec: str):
        parts = spec.split(":")
        if len(parts) != 3 or not parts[1] or not parts[2]:
            raise ValueError(f"scorer {spec!r}: write python:module:function")
        self.spec = spec
        self.name = spec
        self._module, self._function = parts[1], parts[2]
        fn = self._load()
        self.columns = _columns(spec, getattr(fn, "columns", ("score",)))

    def _load(self):
        try:
            module = importlib.import_module(self._module)
        except ImportError as exc:
            raise ValueError(
                f"scorer {self.spec!r}: cannot import {self._module!r}: {exc}"
            ) from exc
        fn = getattr(module, self._function, None)
        if not callable(fn):
            raise ValueError(
                f"scorer {self.spec!r}: {self._module} has no function {self._function!r}"
            )
        return fn

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> PythonScorer:
        return cls(args.scorer)

    def setup(self) -> None:
        self._fn = self._load()

    def score(self, mol) -> Sequence[Any]:
        out = self._fn(mol)
        if isinstance(out, dict):
            return [out.get(c) for c in self.columns]
        if isinstance(out, (list, tuple)):
            if len(out) != len(self.columns):
                raise ValueError(f"returned {len(out)} values for {len(self.columns)} columns")
            return list(out)
        if len(self.columns) != 1:
            raise ValueError(f"returned one value for {len(self.columns)} columns")
        return [out]

    def __getstate__(self):
        return {
            "spec": self.spec,
            "name": self.name,
            "_module": self._module,
            "_function": self._function,
            "columns": self.columns,
        }

    def __setstate__(self, state):
        self.__dict__.update(state)


def _columns(spec: str, declared: Any) -> tuple[str, ...]:
    """The result columns a user function declares: one name (a str) or a sequence of distinct,
    non-empty names other than `id` and `smiles` (the CSV's first two columns). ValueError
    naming the scorer otherwise: a str's letters would be taken as one column each."""
    if isinstance(declared, str):
        declared = (declared,)
    try:
        names = tuple(declared)
    except TypeError:
        raise ValueError(
            f"scorer {spec!r}: columns must be a sequence of names, not {type(declared).__name__}"
        ) from None
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"scorer {spec!r}: column names must be non-empty text, got {name!r}")
        if name in ("id", "smiles"):
            raise ValueError(f"scorer {spec!r}: column {name!r} is the result's own; rename it")
        if any(c in name for c in ',"\r\n'):
            raise ValueError(
                f"scorer {spec!r}: column name {name!r} holds a comma, quote or newline"
            )
    if not names:
        raise ValueError(f"scorer {spec!r}: columns names no column")
    if len(set(names)) != len(names):
        raise ValueError(f"scorer {spec!r}: columns {list(names)} repeat a name")
    return names
