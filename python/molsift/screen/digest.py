"""The identity of a run's input: a digest (BLAKE2b, 128 bits) of each fixed-size block of the
library's bytes, taken when the run is planned and taken again by `--resume`, so that a resume
never mixes two versions of a file (an edit that keeps the size, and even the mtime).

The bytes are read through a memory map on threads (hashlib releases the GIL): one extra pass
over the file at memory speed when it is cached, not counted as library reads by the I/O
counters (as the line-number pre-pass)."""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor

from ..iostats import CountedFile

HASH = "blake2b-128"
BLOCK = 16 << 20  # bytes per digest


def input_digests(path: str, size: int, threads: int) -> dict:
    """The digests of `path`'s first `size` bytes, one per `BLOCK`, as recorded in the plan."""
    return {"hash": HASH, "block": BLOCK, "digests": _digests(path, size, BLOCK, threads)}


def first_changed_block(path: str, size: int, recorded: dict, threads: int) -> int | None:
    """The index of the first block of `path` whose bytes differ from the `recorded` digests
    (`input_digests`' answer), or None when every block is the same."""
    if recorded.get("hash") != HASH:
        raise ValueError(f"unknown input digest {recorded.get('hash')!r}")
    now = _digests(path, size, recorded["block"], threads)
    was = recorded["digests"]
    changed = [i for i, (a, b) in enumerate(zip(now, was)) if a != b]
    if changed:
        return changed[0]
    return None if len(now) == len(was) else min(len(now), len(was))


def _digests(path: str, size: int, block: int, threads: int) -> list[str]:
    if size == 0:
        return []
    with CountedFile(path) as f:
        mapped = f.mmap()
    view = memoryview(mapped)

    def digest(start: int) -> str:
        with view[start : min(start + block, size)] as data:
            return hashlib.blake2b(data, digest_size=16).hexdigest()

    try:
        starts = range(0, size, block)
        with ThreadPoolExecutor(max(1, min(threads, len(starts)))) as pool:
            return list(pool.map(digest, starts))
    finally:
        view.release()
        mapped.close()
