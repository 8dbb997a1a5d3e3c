"""Reading records from Python: `read_records` iterates (text, id, line, offset, problem) of a
file or of one of its slabs; `count_records` counts them at memory speed on all cores."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Union

from . import _core
from .parallel import default_workers

PathLike = Union[str, "os.PathLike[str]"]


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
    from .ingestion import describe_input

    inp = describe_input(path, format, **fields)
    src = _core.RecordSource(
        inp.path,
        slab=slab,
        buffer_size=buffer_size,
        max_record_bytes=max_record_bytes,
        **inp.format_args(),
    )
    while True:
        records = src.next_batch(batch)
        if not records:
            return
        yield from records


def count_records(
    path: PathLike,
    format: str | None = None,
    threads: int | None = None,
    header: bool | None = None,
) -> dict:
    """Records (not newlines) in a file: dict with records, bytes, bytes_read, read_calls,
    seconds. Plain files are counted by `threads` threads in parallel slabs; gzip and zstd by one
    streaming decoder."""
    import time

    from .ingestion import describe_input

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
