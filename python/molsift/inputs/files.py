"""What an input file is (`InputFile`, `describe_input`: size, compression, record format) and
its records from Python (`read_records`, `count_records`: the Rust readers and counter)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Union

from .. import _core

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
        `first_line` one slab of a plain file. `reader`: buffer_size, max_record_bytes."""
        return _core.RecordSource(self.path, **where, **self.format_args(), **(reader or {}))

    def records(
        self, reader: dict | None = None, slab: tuple[int, int] | None = None, batch: int = 4096
    ) -> Iterator[tuple]:
        """Yields (text, id, line, offset, problem) for every record of the file (or of the
        byte range `slab` of a plain file), read `batch` records at a time."""
        src = self.source(reader, slab=slab)
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
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise _core.InputError(f"{path}: no such file")
    detected, detected_header = _core.detect_format(path)
    fmt = format or detected
    if header is None:
        header = detected_header if fmt == detected else fmt == "csv"
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
    **fields,
) -> Iterator[tuple]:
    """Yields (text, id, line, offset, problem) for every record of `path` (or of the byte range
    `slab` of a plain file). `problem` is None or the reason the record cannot be used."""
    inp = describe_input(path, format, **fields)
    reader = {"buffer_size": buffer_size, "max_record_bytes": max_record_bytes}
    yield from inp.records(reader, slab, batch)


def count_records(
    path: PathLike,
    format: str | None = None,
    threads: int | None = None,
    header: bool | None = None,
) -> dict:
    """Records (not newlines) in a file: dict with records, bytes, bytes_read, read_calls,
    seconds. Plain files are counted by `threads` threads in parallel slabs; gzip and zstd by one
    streaming decoder."""
    from ..parallel import default_workers

    inp = describe_input(path, format, header)
    start = time.perf_counter()
    out = dict(
        _core.count_records(
            inp.path, inp.format, threads=threads or default_workers(), header=inp.header
        )
    )
    out["seconds"] = time.perf_counter() - start
    out["format"] = inp.format
    out["compression"] = inp.compression
    return out
