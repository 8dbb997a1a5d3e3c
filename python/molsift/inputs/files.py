"""What an input file is (`InputFile`, `describe_input`: size, compression, record format) and
its records from Python (`read_records`: the Rust readers)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Union

from .. import _core
from .counting import probe

PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class InputFile:
    """One input: path, size, compression and record format."""

    path: str
    bytes: int
    compression: str
    format: str
    header: bool
    smiles_col: str | None = None
    id_col: str | None = None
    delimiter: str | None = None

    def format_args(self) -> dict:
        """The format keywords of `_core.RecordSource`."""
        return {
            "format": self.format,
            "header": self.header,
            "smiles_col": self.smiles_col,
            "id_col": self.id_col,
            "delimiter": self.delimiter,
        }

    @property
    def sdf(self) -> bool:
        return self.format == "sdf"

    def source(self, reader: dict | None = None, **where) -> _core.RecordSource:
        """A reader of this file's records: the whole stream, or with `slab=(start, end)` and
        `first_line` one slab of a plain file. `reader`: buffer_size, max_record_bytes, io."""
        return _core.RecordSource(self.path, **where, **self.format_args(), **(reader or {}))

    def records(
        self, reader: dict | None = None, slab: tuple[int, int] | None = None, batch: int = 4096
    ) -> Iterator[tuple]:
        """(text, id, line, offset, problem) of every record of the file (or of the byte range
        `slab` of a plain file), read `batch` records at a time. The file is opened by this
        call: a missing file or a CSV header without its column is an error here."""
        return _batched(self.source(reader, slab=slab), batch)


def _batched(src: _core.RecordSource, batch: int) -> Iterator[tuple]:
    while True:
        records = src.next_batch(batch)
        if not records:
            return
        yield from records


def describe_input(
    path: PathLike,
    format: str | None = None,
    header: bool | None = None,
    smiles_col: str | None = None,
    id_col: str | None = None,
    delimiter: str | None = None,
) -> InputFile:
    """Checks that `path` is a readable file and works out its compression and format."""
    path, fmt, header = probe(path, format, header)
    return InputFile(
        path,
        os.path.getsize(path),
        _core.file_compression(path),
        fmt,
        header,
        smiles_col,
        id_col,
        delimiter,
    )


def read_records(
    path: PathLike,
    format: str | None = None,
    slab: tuple[int, int] | None = None,
    buffer_size: int | None = None,
    max_record_bytes: int | None = None,
    batch: int = 4096,
    io: str | None = None,
    **fields,
) -> Iterator[tuple]:
    """Yields (text, id, line, offset, problem) for every record of `path` (or of the byte range
    `slab` of a plain file). `problem` is None or the reason the record cannot be used."""
    inp = describe_input(path, format, **fields)
    reader = {"buffer_size": buffer_size, "max_record_bytes": max_record_bytes, "io": io}
    yield from inp.records(reader, slab, batch)
