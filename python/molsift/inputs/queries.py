"""`read_queries`: the query files of every query verb (search, substructure, analogs, lookup),
read by the input model's readers as any input is: SMILES, CSV or SDF, gzip/zstd, the record
size limit, a bad record (too long, not UTF-8, a NUL byte) handed back with its file, line and
reason instead of ending the run. A SMILES or CSV record's text is handed back unparsed (it may
be SMARTS or an id); an SDF block is parsed with RDKit and its SMILES handed back."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .files import PathLike, describe_input

UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


@dataclass(frozen=True)
class Query:
    """One query: its text (a SMILES, SMARTS or id as written; for an SDF block, RDKit's SMILES
    of it), its id, where it was read (path and 1-based line; None for a command-line query)
    and `problem`, the reason it cannot be used (None when it can). `mol`: the RDKit molecule
    of an SDF block, parsed once."""

    text: str
    id: str
    path: str | None = None
    line: int | None = None
    problem: str | None = None
    mol: Any = None

    @property
    def where(self) -> str:
        """'PATH:LINE: ' for a query read from a file, '' for one from the command line."""
        return f"{self.path}:{self.line}: " if self.path is not None else ""


def read_queries(
    path: PathLike,
    *,
    format: str | None = None,
    max_record_bytes: int | None = None,
    **fields,
) -> Iterator[Query]:
    """Every record of a query file as a `Query`, in file order, read lazily (millions of
    lookups stream); the file is opened by this call, so that a missing one is an error before
    any query runs. Records in = queries yielded, bad ones included (their `problem` says
    why). `format` and `fields` (header, smiles_col, id_col, delimiter) as `read_records`;
    `max_record_bytes`: longer records are rejected (default: the reader's limit)."""
    inp = describe_input(path, format, **fields)
    records = inp.records({"max_record_bytes": max_record_bytes})  # opened now: errors here
    utf16 = inp.compression == "none" and _starts_with_utf16_bom(inp.path)
    return _queries(records, inp.path, inp.sdf, utf16)


def _queries(records: Iterator[tuple], path: str, sdf: bool, utf16: bool) -> Iterator[Query]:
    for text, rid, line, _offset, problem in records:
        mol = None
        if problem is None and sdf:
            from ..chem import to_mol, to_smiles

            mol, why = to_mol(text, True)
            text, problem = (to_smiles(mol), None) if mol is not None else ("", why)
        elif problem is not None and utf16:
            problem += " (the file is UTF-16 text: save it as UTF-8)"
        yield Query(text, rid, path, line, problem, mol)


def _starts_with_utf16_bom(path: str) -> bool:
    from ..iostats import open_counted

    with open_counted(path, "rb") as f:
        return f.read(2) in UTF16_BOMS
