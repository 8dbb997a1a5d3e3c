"""`read_molecules`: the small molecule files a verb takes besides its library (search queries,
reference actives of the similarity scorer), read by `read_queries` and every record parsed
with RDKit. A bad record is an error naming the file and line, or with `skip_bad` a `BadRecord`
the caller reports and counts."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..wording import quoted
from .files import PathLike
from .queries import Query, read_queries


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
    records: Iterable[Query] | None = None,
    **fields,
) -> MoleculeFile:
    """Every record of a SMILES, CSV or SDF file (gzip/zstd too) as an RDKit molecule. A record
    that cannot be used raises `ValueError` naming the file, line, `what` it is and why, unless
    `skip_bad`: it is then kept in `skipped`. Records in = molecules + skipped, always.
    `records`: the file's records as the caller already reads them (a query verb's
    `query_file`), else `read_queries(path, format=format, **fields)`."""
    from ..chem import to_mol

    out = MoleculeFile()
    if records is None:
        records = read_queries(path, format=format, **fields)
    for query in records:
        mol, problem = query.mol, query.problem
        if mol is None and problem is None:
            mol, problem = to_mol(query.text)
        if mol is None:
            bad = BadRecord(query.path, query.line, query.id, problem or "unusable record")
            if not skip_bad:
                raise ValueError(f"{bad.path}:{bad.line}: {what} {quoted(bad.id)}: {bad.reason}")
            out.skipped.append(bad)
            continue
        out.molecules.append(Molecule(query.id, mol, query.text, query.line))
    return out
