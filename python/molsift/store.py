"""Reading a store from Python: `open_store(path)` checks it through the Rust core and maps its
files with numpy, so `store.fingerprints` is a view of the mapped file, never a copy."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Iterator, Union, overload

import numpy as np

from . import _core
from .iostats import CountedFile

PathLike = Union[str, "os.PathLike[str]"]
FILES = _core.STORE_FILES


class _TextColumn(Sequence):
    """Newline-separated strings with an offsets array: item i is O(1)."""

    def __init__(self, data: np.ndarray, offsets: np.ndarray):
        self._data = data
        self._offsets = offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"index {i} out of range for a store of {n} molecules")
        start, end = int(self._offsets[i]), int(self._offsets[i + 1]) - 1
        return self._data[start:end].tobytes().decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        data = self._data.tobytes() if len(self._data) else b""
        offsets = self._offsets
        for i in range(len(self)):
            yield data[int(offsets[i]) : int(offsets[i + 1]) - 1].decode("utf-8")


def _map(path: str, dtype) -> np.ndarray:
    """The file as a read-only array over its memory map (counted: one open, one mmap)."""
    with CountedFile(path) as f:
        if f.size() == 0:
            return np.zeros(0, dtype=dtype)
        return np.frombuffer(f.mmap(), dtype=dtype)


class Store:
    """An open store. Use `open_store(path)`.

    Attributes: `ids`, `smiles` (sequences by store position), `fingerprints` (uint64 array of
    shape (n, bits/64), a view of the mapped file), `popcounts` (uint16), `source_lines`
    (uint64, 1-based line of each molecule's record), `manifest` (dict)."""

    def __init__(self, path: PathLike, manifest: dict):
        self.path = os.fspath(path)
        self.manifest = manifest
        n = manifest["counts"]["molecules"]
        spec = manifest["fingerprint"]
        words, stride = spec["bits"] // 64, spec["row_stride_words"]
        p = lambda key: os.path.join(self.path, FILES[key])  # noqa: E731
        rows = _map(p("fingerprints"), "<u8").reshape(n, stride)
        self.fingerprints: np.ndarray = rows[:, :words]
        self.popcounts: np.ndarray = _map(p("popcounts"), "<u2")
        self.source_lines: np.ndarray = _map(p("source_lines"), "<u8")
        self.smiles = _TextColumn(_map(p("smiles"), np.uint8), _map(p("smiles_offsets"), "<u8"))
        self.ids = _TextColumn(_map(p("ids"), np.uint8), _map(p("id_offsets"), "<u8"))

    def __len__(self) -> int:
        return self.manifest["counts"]["molecules"]

    @property
    def counts(self) -> dict:
        """records_in, molecules, rejected."""
        return dict(self.manifest["counts"])

    @property
    def fingerprint_spec(self) -> dict:
        return dict(self.manifest["fingerprint"])

    @property
    def rejects_path(self) -> str:
        return os.path.join(self.path, FILES["rejects"])

    def _searcher(self):
        if getattr(self, "_searcher_obj", None) is None:
            self._searcher_obj = _core.Searcher(self.path)
        return self._searcher_obj

    def search(self, query, threshold=None, k=None, threads: int = 1):
        """Exact Tanimoto search: `query` is SMILES, an RDKit Mol, on-bits or a packed row.
        Returns Hits (indices, scores), best first (score descending, then index ascending)."""
        from .search import search

        return search(self, query, threshold=threshold, k=k, threads=threads)

    def search_batch(self, queries, threshold=None, k=None, threads: int = 1):
        """As `search`, for many queries at once; returns one Hits per query."""
        from .search import search_batch

        return search_batch(self, queries, threshold=threshold, k=k, threads=threads)

    @property
    def has_column_index(self) -> bool:
        return os.path.exists(os.path.join(self.path, "columns.json"))

    def __repr__(self) -> str:
        fp = self.manifest["fingerprint"]
        return (
            f"<molsift.Store {self.path!r}: {len(self)} molecules, "
            f"{fp['kind']} {fp['bits']} bits, {self.counts['rejected']} rejected>"
        )


def open_store(path: PathLike, verify: bool = True) -> Store:
    """Opens a store read-only.

    Always checks the manifest, format version, file sizes and offsets; with `verify=True`
    (the default) also every file's checksum, which reads the store once. Raises
    `molsift.StoreError` naming the file and what is wrong."""
    manifest = json.loads(_core.open_store_manifest(os.fspath(path), full=verify))
    return Store(path, manifest)
