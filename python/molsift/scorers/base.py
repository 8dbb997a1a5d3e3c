"""The scorer plugin interface of `molsift screen`: what a scorer declares (its output columns),
what it loads once per worker (`setup`), and how it scores one prepared molecule (`score`).

A scorer object is built in the parent from command-line options, pickled to every worker, and
`setup()` is called once there before the first molecule: put expensive state (reference
fingerprints, receptor maps, compiled patterns) in `setup`, never in `__init__`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from .._core import MolsiftError


class ScorerError(MolsiftError, ValueError):
    """A scorer that cannot start: what it loads could not be read (a receptor Vina cannot
    read). Raised in `setup`, it is one line on the command line, not a worker's traceback, and
    the run is not said to be resumable: running again would fail the same way."""


class Reject(Exception):
    """Raised by `Scorer.score` when a molecule cannot be scored (e.g. it fails to embed, or the
    docking timed out). The record goes to the rejects file with this message as the reason; the
    run goes on."""


class Scorer:
    """Base class. Subclasses set `name` and `columns`, and implement `score`.

    `columns`: names of the values `score` returns, in order (they follow `id,smiles` in the
    result CSV). A scorer with `has_poses = True` returns `(values, pose_text)` from `score`;
    the pipeline writes `pose_text` to the pose file and adds `pose_offset,pose_bytes` columns
    that address it."""

    name: str = ""
    columns: Sequence[str] = ()
    has_poses: bool = False

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Adds this scorer's options to `molsift screen` (prefix them with the scorer name)."""

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Scorer:
        """Builds the scorer from parsed command-line options."""
        return cls()

    def setup(self) -> None:
        """Loads expensive state; called once per worker process before the first `score`."""

    def score(self, mol: Any) -> Any:
        """Scores one RDKit molecule: a list of values matching `columns` (or, with `has_poses`,
        `(values, pose_text)`). Raise `Reject(reason)` to reject the molecule."""
        raise NotImplementedError

    def options(self) -> dict[str, Any]:
        """What decides this scorer's values, as JSON values: recorded in a screening run's plan,
        so that a resume whose scorer was given other options (other references, another rule)
        is refused rather than scoring the rest of the library differently. The default: a
        dataclass's fields, else the object's public attributes; a scorer leaves out those that
        change only its speed (`FilterScorer`'s prescreen) and adds what a path hides (the
        receptor's bytes: `VinaScorer`)."""
        import dataclasses

        if dataclasses.is_dataclass(self):
            found = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        else:
            found = vars(self)
        return {k: json_value(v) for k, v in found.items() if not k.startswith("_")}

    def stats(self) -> dict[str, Any]:
        """Counters to add to the run report (e.g. receptor maps built); summed over workers."""
        return {}

    def close(self) -> None:
        """Releases what `setup` loaded; called once per worker at the end."""


def json_value(value: Any) -> Any:
    """`value` as JSON holds it (and reads it back): a dataclass as the dict of its fields,
    tuples as lists, paths as text; anything else JSON has no form for, its repr (an address
    left out: the same options give the same value in every process)."""
    import dataclasses
    import os

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: json_value(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    text = repr(value)  # an object's default repr names its address: its type, then
    return type(value).__qualname__ if " at 0x" in text else text


def format_value(value: Any) -> str:
    """How a score value is written to the CSV: floats with 6 significant digits, booleans as
    1/0, None as an empty field."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


__all__ = ["Reject", "Scorer", "ScorerError", "format_value", "json_value"]
