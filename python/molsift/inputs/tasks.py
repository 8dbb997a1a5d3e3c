"""The task planner of ingest and screen: what each worker or MPI rank reads.

- A plain file is cut into byte-range slabs (`cut_slabs`); one pre-pass over the file at memory
  speed (`molsift_io::slab_first_lines`) gives each slab the number of lines before it, so every
  task reads absolute line numbers (and ids of records without one) and no task reads the file
  outside its own slab (`slab_tasks`).
- A gzip or zstd file cannot be cut by bytes: one streaming decoder in the planning process
  cuts its record stream into chunks (`ChunkPlanner`), of a fixed number of records, or shrinking
  towards the end so that workers sharing a queue finish together.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .. import _core
from .files import InputFile


def cut_slabs(size: int, slabs: int | None, workers: int) -> list[tuple[int, int]]:
    """Byte ranges of a plain file of `size` bytes: `slabs` equal ones when given (MPI ranks
    take tasks round-robin), else slabs that shrink towards the end so that `workers` local
    workers sharing a queue finish together. Empty ranges are left out."""
    ranges = _core.split_slabs(size, slabs) if slabs else _core.guided_slabs(size, workers)
    return [(a, b) for a, b in ranges if a < b]


def slab_tasks(
    inp: InputFile, slabs: int | None, workers: int, threads: int
) -> tuple[list[dict[str, Any]], int]:
    """The tasks of a plain file, `{"kind": "slab", "slab": [start, end], "first_line": n}` in
    file order (`n`: newlines before the slab), and the newlines in the whole file; from one
    pre-pass over the file with `threads` threads."""
    ranges = cut_slabs(inp.bytes, slabs, workers)
    # an empty slab at the end of the file gives the newlines in the whole file
    firsts = _core.slab_first_lines(inp.path, [*ranges, (inp.bytes, inp.bytes)], max(1, threads))
    tasks = [
        {"kind": "slab", "slab": [a, b], "first_line": f} for (a, b), f in zip(ranges, firsts[:-1])
    ]
    return tasks, firsts[-1]


class ChunkPlanner:
    """Record chunks of a gzip/zstd (or any unsplittable) input, decoded by one reader.

    Iterating yields `(records, input_bytes)`: a list of (text, id, line, offset, problem)
    records and the bytes of the compressed file the decoder read for them. Each chunk holds
    `chunk_records` records; with `guided_workers`, chunks shrink towards the end of the stream
    (to a 16th of that) so that that many workers sharing a queue finish together. `counters`
    holds the decoder's read counters and the number of chunks so far."""

    def __init__(
        self,
        inp: InputFile,
        reader: dict | None,
        chunk_records: int,
        guided_workers: int | None = None,
    ):
        self.inp = inp
        self.chunk_records = chunk_records
        self.guided_workers = guided_workers
        self._src = inp.source(reader)
        self.counters: dict[str, Any] = {"chunks": 0}

    def __iter__(self) -> Iterator[tuple[list, int]]:
        seen, position, decoded, consumed = 0, 0, None, 0
        while True:
            size = self.chunk_records
            if self.guided_workers:
                size = _guided_chunk(size, self.guided_workers, seen, position, decoded)
            records = self._src.next_batch(size)
            seen += len(records)
            position = records[-1][3] if records else position
            counters = dict(self._src.counters())
            decoded = _decoded_size(counters, self.inp.bytes, decoded)
            self.counters.update(counters)
            if not records:
                return
            self.counters["chunks"] += 1
            now = counters["bytes_read"]
            yield records, now - consumed
            consumed = now


def _decoded_size(counters: dict, size: int, previous: float | None) -> float | None:
    """The decoded size of a compressed input, estimated from the compression ratio of what the
    decoder has read so far; once it has read the whole file the last estimate stands (None
    when the file was read in one go: no ratio was ever seen)."""
    packed, unpacked = counters.get("bytes_read", 0), counters.get("decompressed_bytes", 0)
    if 0 < packed < size:
        return size * unpacked / packed
    return previous


def _guided_chunk(
    largest: int, workers: int, records: int, position: int, decoded: float | None
) -> int:
    """Records for the next chunk of a compressed stream: a share of the records estimated
    left, between `largest` and a 16th of it, so that the last chunks are small and the
    workers finish together. `position` is the decoded offset reached by `records` records,
    `decoded` the estimated decoded size. Only task sizes depend on the estimate, never which
    records are read."""
    if not records or not position or not decoded:
        return largest
    left = max(0.0, decoded - position) * records / position
    return int(min(largest, max(largest // 16, 1, left / (2 * workers))))
