"""The `similarity` scorer: the maximum Tanimoto similarity of each molecule to a set of
reference actives, and which reference it is (the first on ties). Fingerprints are compared
with molsift's own Tanimoto kernel (`molsift-fp`, run-time popcount dispatch): exact, RDKit's
scores."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from ..spec import FingerprintSpec
from ..wording import quoted
from .base import Scorer


def _unreadable(smi: str) -> str | None:
    """Why RDKit cannot read a reference SMILES (None when it can); an empty one, which RDKit
    reads as a molecule of no atoms (every score 0), is not read either."""
    from ..chem import to_mol

    if not smi.strip():
        return "an empty SMILES"
    mol, why = to_mol(smi)
    return None if mol is not None else why


@dataclass
class SimilarityScorer(Scorer):
    refs: list[tuple[str, str]]  # (id, SMILES)
    spec: FingerprintSpec = field(default_factory=FingerprintSpec)
    name = "similarity"
    columns = ("max_tanimoto", "nearest_ref")

    def __post_init__(self) -> None:
        if not self.refs:  # every record was then rejected, with a fingerprint-size error
            raise ValueError("scorer similarity needs at least one reference molecule")
        # each reference read before any run (the API's too), not in a worker mid-run
        for rid, smi in self.refs:
            why = _unreadable(smi)
            if why is not None:
                raise ValueError(f"reference {quoted(rid)} ({quoted(smi)}): {why}")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("scorer similarity")
        g.add_argument("--refs", metavar="FILE", help="reference actives (SMILES, CSV or SDF file)")
        g.add_argument(
            "--ref", action="append", metavar="SMILES", help="a reference SMILES (repeatable)"
        )
        spec = FingerprintSpec()  # the default of the scorer's spec field
        g.add_argument(
            "--similarity-radius",
            type=int,
            default=spec.radius,
            help=f"Morgan radius (default {spec.radius})",
        )
        g.add_argument(
            "--similarity-bits",
            type=int,
            default=spec.bits,
            help=f"fingerprint bits (default {spec.bits})",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SimilarityScorer:
        refs = [(f"ref{i + 1}", s) for i, s in enumerate(args.ref or [])]
        for rid, smi in refs:  # checked here, as --refs records are: not in a worker mid-run
            why = _unreadable(smi)
            if why is not None:
                raise ValueError(f"--ref {quoted(smi)}: reference {rid!r}: {why}")
        if args.refs:
            from_file = read_refs(args.refs)
            if not from_file:  # it was said to need --refs FILE, which was given
                raise ValueError(
                    f"--refs {args.refs}: no reference molecules in it (empty, or only blank "
                    "and comment lines)"
                )
            refs += from_file
        if not refs:
            raise ValueError(
                "scorer similarity needs reference molecules: --refs FILE or --ref SMILES"
            )
        return cls(refs, FingerprintSpec(radius=args.similarity_radius, bits=args.similarity_bits))

    def setup(self) -> None:
        from .. import _core
        from ..chem import Fingerprinter, to_mol

        # packed rows: bit i in byte i/8 at bit i%8, molsift's row layout
        self._fper = Fingerprinter(self.spec)
        rows = []
        for rid, smi in self.refs:
            mol, why = to_mol(smi)
            if mol is None:
                raise ValueError(f"reference {quoted(rid)} ({quoted(smi)}): {why}")
            rows.append(self._fper.packed(mol))
        self._set = _core.FingerprintSet(rows)
        self._ids = [rid for rid, _ in self.refs]

    def score(self, mol):
        best, score = self._set.best(self._fper.packed(mol))
        return [score, self._ids[best]]

    def __getstate__(self):
        return {"refs": self.refs, "spec": self.spec}

    def __setstate__(self, state):
        self.__dict__.update(state)


def read_refs(path: str) -> list[tuple[str, str]]:
    """(id, SMILES) of every record of a SMILES, CSV or SDF file; a bad record is an error
    naming the file and line (references are few and all of them matter)."""
    from ..inputs import read_molecules

    return [(m.id, m.smiles) for m in read_molecules(path, what="reference").molecules]
