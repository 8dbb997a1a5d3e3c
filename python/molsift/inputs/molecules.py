"""`read_molecules`: the small molecule files a verb takes besides its library (search queries,
reference actives of the similarity scorer), every record parsed with RDKit. A bad record is an
error naming the file and line, or with `skip_bad` a `BadRecord` the caller reports and counts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .files import PathLike, describe_input


@dataclass(frozen=True)
class Molecule:
    """One usable record: its id, the RDKit molecule, its SMILES (the record's own text; for
    SDF, RDKit's canonical SMILES of the block) and its 1-based line."""

    id: str
    mol: Any
    smiles: str
    line: int


@dataclass(frozen=True)
class BadRecord:
    """A record that gave no molecule: where it is, its id and why."""

    path: str
    line: int
    id: str
    reason: str


@dataclass
class MoleculeFile:
    """What `read_molecules` read: the molecules in file order and the records skipped."""

    molecules: list[Molecule] = field(default_factory=list)
    skipped: list[BadRecord] = field(default_factory=list)

    @property
    def records(self) -> int:
        return len(self.molecules) + len(self.skipped)


def read_molecules(
    path: PathLike,
    *,
    skip_bad: bool = False,
    what: str = "record",
    format: str | None = None,
    **fields,
) -> MoleculeFile:
    """Every record of a SMILES, CSV or SDF file (gzip/zstd too) as an RDKit molecule. A record
    that cannot be used raises `ValueError` naming the file, line, `what` it is and why, unless
    `skip_bad`: it is then kept in `skipped`. Records in = molecules + skipped, always."""
    from ..chem import to_mol, to_smiles

    inp = describe_input(path, format, **fields)
    out = MoleculeFile()
    for text, rid, line, _offset, problem in inp.records():
        mol = None
        if problem is None:
            mol, problem = to_mol(text, inp.sdf)
        if mol is None:
            bad = BadRecord(inp.path, line, rid, problem or "unusable record")
            if not skip_bad:
                raise ValueError(f"{bad.path}:{bad.line}: {what} {bad.id!r}: {bad.reason}")
            out.skipped.append(bad)
            continue
        out.molecules.append(Molecule(rid, mol, to_smiles(mol) if inp.sdf else text, line))
    return out
