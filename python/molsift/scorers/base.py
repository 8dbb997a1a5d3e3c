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

    def stats(self) -> dict[str, Any]:
        """Counters to add to the run report (e.g. receptor maps built); summed over workers."""
        return {}

    def close(self) -> None:
        """Releases what `setup` loaded; called once per worker at the end."""


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


__all__ = ["Reject", "Scorer", "ScorerError", "format_value"]
