"""Reading a store from Python: `open_store(path)` opens the one store (format version 2) and
checks it once through the Rust core (one directory handle: every file, and the searcher, come
from the same generation of the store even while `ingest --overwrite` replaces it); each file's
checksum is checked before the first answer that depends on it. `write_complete` writes the one
store from ingest's parts (merged as sorted runs) or from a version-1 store (an old store:
`upgrade`), which `open_version_1` reads and every verb but `upgrade` refuses."""

from __future__ import annotations

import json
import mmap
import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Union, overload

import numpy as np

from . import _core
from .arguments import is_whole
from .spec import FingerprintSpec

#: held while a store's substructure match pool is looked at or started
_POOL_LOCK = threading.Lock()

PathLike = Union[str, "os.PathLike[str]"]
FILES = _core.STORE_FILES


class _Column(Sequence):
    """A column of strings by store position: slices and negative indices as a list has them,
    an IndexError naming the store's size; `_get(i)` reads entry i (0 <= i < len)."""

    def _get(self, i: int) -> str:
        raise NotImplementedError

    def take(self, positions) -> list[str]:
        """The entries at `positions` (store positions, 0 <= p < len), in that order: one call
        into the store for a page of hits."""
        return [self[int(p)] for p in positions]

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not is_whole(i):
            raise TypeError(f"store indices must be integers or slices, not {type(i).__name__}")
        n = len(self)
        j = int(i) + n if i < 0 else int(i)
        if not 0 <= j < n:
            raise IndexError(f"index {int(i)} out of range for a store of {n} molecules")
        return self._get(j)


class _TextColumn(_Column):
    """Newline-separated strings with an offsets array: item i is O(1). The first access checks
    both files' checksums (once per process); every access checks its own offsets, through the
    Rust store, so damage is an error naming the file, never a wrong or garbled string."""

    def __init__(self, core, column: str, data: np.ndarray, offsets: np.ndarray):
        self._core = core
        self._column = column
        self._data = data
        self._offsets = offsets
        self._verified = False

    def _verify(self) -> None:
        if not self._verified:
            for key in (
                self._column,
                "smiles_offsets" if self._column == "smiles" else "id_offsets",
            ):
                self._core.verify_file(FILES[key])
            self._verified = True

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def _get(self, i: int) -> str:
        self._verify()
        return self._core.text(self._column, i)

    def take(self, positions) -> list[str]:
        self._verify()
        return self._core.texts_at(self._column, np.asarray(positions, dtype="<i8").tobytes())

    def __iter__(self) -> Iterator[str]:
        self._verify()
        for i in range(len(self)):
            yield self._core.text(self._column, i)


def _map(core, name: str, dtype) -> np.ndarray:
    """The store file `name` as a read-only array over a memory map of the descriptor the store
    opened (the same generation as every other file of this store)."""
    fd = core.dup_fd(name)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return np.zeros(0, dtype=dtype)
        return np.frombuffer(mmap.mmap(fd, size, prot=mmap.PROT_READ), dtype=dtype)
    finally:
        os.close(fd)


def _check_substructure_args(query: Any, max_hits: Any) -> None:
    """TypeError naming the argument for a query that is not text or a `max_hits` that is not
    a whole number (else an AttributeError or a slicing error from deep inside the search)."""
    from .substructure.query import Query

    if not isinstance(query, (str, Query)):
        raise TypeError(f"query must be a SMILES or SMARTS string, not {type(query).__name__}")
    if max_hits is not None and not is_whole(max_hits):
        raise TypeError(f"max_hits must be an integer or None, not {type(max_hits).__name__}")


class _StoreBase:
    """What both store versions share: the manifest's counts and spec, the rejects file, and
    search through `_searcher()` (each version opens its own)."""

    path: str
    manifest: dict

    def __len__(self) -> int:
        return self.manifest["counts"]["molecules"]

    @property
    def counts(self) -> dict:
        """records_in, molecules, rejected; duplicates (molecules whose canonical SMILES an
        earlier one had; absent in stores written before they were counted) and dropped (those
        left out by ingest's `dedupe`, listed in duplicates.tsv)."""
        return dict(self.manifest["counts"])

    @property
    def fingerprint_spec(self) -> FingerprintSpec:
        """Which fingerprint the store holds (kind, radius, bits), from its manifest."""
        return FingerprintSpec.from_manifest(self.manifest["fingerprint"])

    @property
    def rejects_path(self) -> str:
        return os.path.join(self.path, FILES["rejects"])

    def search(self, query, threshold=None, k=None, threads: int = 1):
        """Exact Tanimoto search: `query` is SMILES, an RDKit Mol, on-bits or a packed row.
        Returns Hits (indices, scores), best first (score descending, then index ascending)."""
        from .search import search

        return search(self, query, threshold=threshold, k=k, threads=threads)

    def search_batch(self, queries, threshold=None, k=None, threads: int = 1):
        """As `search`, for many queries at once; returns one Hits per query."""
        from .search import search_batch

        return search_batch(self, queries, threshold=threshold, k=k, threads=threads)

    def substructure(
        self,
        query,
        smarts: bool = False,
        max_hits: int | None = None,
        workers: int | None = None,
        chirality: bool = False,
    ) -> np.ndarray:
        """Store positions (int64, ascending) of the molecules containing `query`: SMILES (read
        with RDKit's `MolFromSmiles`), or SMARTS with `smarts=True` or when it is not SMILES.
        Exactly RDKit's `HasSubstructMatch` hits on the stored molecules (`chirality` as its
        `useChirality`); at most `max_hits`, the first in store order. The screen runs here;
        survivors are matched on the index's molecule graphs in Rust on `workers` threads
        (default: all cores), or, for what that matcher cannot express (chirality, a store
        indexed before graphs existed), by RDKit on `workers` processes that stay alive for
        the next query (`close()` ends them). Raises `molsift.QueryError` for a query that
        cannot be read, `molsift.StoreError` when the store has no substructure index."""
        from .substructure import substructure

        _check_substructure_args(query, max_hits)
        return substructure(
            self, query, smarts=smarts, max_hits=max_hits, workers=workers, chirality=chirality
        )

    def iter_substructure(
        self,
        query,
        smarts: bool = False,
        max_hits: int | None = None,
        workers: int | None = None,
        chirality: bool = False,
    ) -> Iterator[int]:
        """As `substructure`, a generator of store positions in ascending order, each handed
        out as soon as its batch is confirmed (the first before the search ends)."""
        from .substructure import iter_substructure

        _check_substructure_args(query, max_hits)
        return iter_substructure(
            self, query, smarts=smarts, max_hits=max_hits, workers=workers, chirality=chirality
        )

    def analogs(
        self,
        query,
        max_dist: int = 2,
        k: int | None = None,
        limits: dict | None = None,
        timeout: float | None = None,
        threads: int = 1,
    ):
        """Analog search by graph edit distance (docs/analogs.md): the molecules whose skeletons
        are at most `max_dist` edits from the query's (SMILES or RDKit Mol), ranked by distance,
        then Morgan Tanimoto to the query, then position, as an `Analogs` of numpy columns
        (`position`, `distance`, `tanimoto`, edits by kind). `k`: the k best (the walk stops at
        the distance where k molecules are reached); `limits`: the most edits of each kind
        ({"rup": 0, ...}); `timeout`: seconds, after which the result is marked partial;
        `threads`: each distance of the walk divided among that many (the same answer). Needs
        the analog index (`molsift index STORE --analogs`)."""
        from .analogs.search import analogs

        return analogs(self, query, max_dist=max_dist, k=k, limits=limits, timeout=timeout,
                       threads=threads)  # fmt: skip

    def iter_analogs(
        self,
        query,
        max_dist: int = 2,
        k: int | None = None,
        limits: dict | None = None,
        timeout: float | None = None,
        threads: int = 1,
    ):
        """As `analogs`, one `Analogs` per distance, each as soon as that distance has been
        searched (nearest first)."""
        from .analogs.search import iter_analogs

        return iter_analogs(self, query, max_dist=max_dist, k=k, limits=limits, timeout=timeout,
                            threads=threads)  # fmt: skip

    @property
    def has_analog_index(self) -> bool:
        """True when the store has an analog index (`molsift index STORE --analogs`)."""
        return "analogs.json" in self.manifest["files"]

    def missing_index(self, what: str) -> str:
        """How to build the index `what` ("substructure" or "analogs") needs, in one sentence."""
        flag = "--pattern" if what == "substructure" else "--analogs"
        return (
            f"{self.path}: the store has no {'substructure' if flag == '--pattern' else 'analog'}"
            f" index: build it with `molsift index {self.path} {flag}`"
        )

    @property
    def has_pattern_index(self) -> bool:
        """True when the store has a substructure index (ingest writes one by default,
        `molsift index STORE --pattern` adds one)."""
        return _core.PATTERN_FILES[0] in self.manifest["files"]

    def _pattern_index(self):
        """The pattern planes of this store (opened once), checked to mean what this build's
        queries mean, or StoreError saying how to rebuild them."""
        if getattr(self, "_pattern_obj", None) is None:
            from .substructure.build import meaning

            index = self._core.pattern_index()
            built, ours = json.loads(index.meaning_json()), meaning()
            if built != ours:
                raise _core.StoreError(
                    f"{self.path}: its substructure index was built for other screening bits "
                    f"({json.dumps(built)}; this molsift uses {json.dumps(ours)}): rebuild it "
                    f"with `molsift index {self.path} --pattern`"
                )
            self._pattern_obj = index
        return self._pattern_obj

    def _match_pool(self, workers: int):
        """The substructure match workers of this store (started on first use, kept; one pool
        even when threads search the store at once: the pool itself takes queries from any
        thread)."""
        with _POOL_LOCK:
            pool = getattr(self, "_pool", None)
            if pool is None or not pool.alive or pool.workers != workers:
                if pool is not None:
                    pool.close()
                from .substructure.engine import MatchPool

                pool = self._pool = MatchPool(self.path, self._core.manifest_json(), workers)
            return pool

    def close(self) -> None:
        """Stops this store's substructure workers, if any were started."""
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.close()
            self._pool = None


class Store(_StoreBase):
    """An open store. Use `open_store(path)`.

    Attributes: `ids`, `smiles` (sequences by store position), `fingerprints` (uint64 array of
    shape (n, bits/64), a view of the mapped file), `popcounts` (uint16), `source_lines`
    (uint64, 1-based line of each molecule's record), `manifest` (dict)."""

    def __init__(self, path: PathLike, core):
        self.path = os.fspath(path)
        self._core = core
        self.manifest = json.loads(core.manifest_json())
        n = self.manifest["counts"]["molecules"]
        spec = self.manifest["fingerprint"]
        words, stride = spec["bits"] // 64, spec["row_stride_words"]
        p = lambda key, dtype: _map(core, FILES[key], dtype)  # noqa: E731
        rows = p("fingerprints", "<u8").reshape(n, stride)
        self._arrays = {
            "fingerprints": rows[:, :words],
            "popcounts": p("popcounts", "<u2"),
            "source_lines": p("source_lines", "<u8"),
        }
        self.smiles = _TextColumn(core, "smiles", p("smiles", np.uint8), p("smiles_offsets", "<u8"))
        self.ids = _TextColumn(core, "ids", p("ids", np.uint8), p("id_offsets", "<u8"))

    def _array(self, key: str) -> np.ndarray:
        """A mapped array, its file's checksum checked first (once per process): whatever is
        computed from it (analog ranking, a user's own scan) never reads damaged bytes."""
        self._core.verify_file(FILES[key])
        return self._arrays[key]

    @property
    def fingerprints(self) -> np.ndarray:
        """uint64 (n, bits/64): a view of the mapped file, checked at first use."""
        return self._array("fingerprints")

    @property
    def popcounts(self) -> np.ndarray:
        """uint16 popcount of each fingerprint (mapped, checked at first use)."""
        return self._array("popcounts")

    @property
    def source_lines(self) -> np.ndarray:
        """uint64 1-based line of each molecule's record (mapped, checked at first use)."""
        return self._array("source_lines")

    def _searcher(self):
        if getattr(self, "_searcher_obj", None) is None:
            self._searcher_obj = self._core.searcher()
        return self._searcher_obj

    @property
    def has_column_index(self) -> bool:
        """True when the store's manifest lists a column index (`molsift index` writes one)."""
        return "columns.json" in self.manifest["files"]

    def __repr__(self) -> str:
        fp = self.manifest["fingerprint"]
        return (
            f"<molsift.Store {self.path!r}: {len(self)} molecules, "
            f"{fp['kind']} {fp['bits']} bits, {self.counts['rejected']} rejected>"
        )


class _V2Column(_Column):
    """A text column of a version-2 store by store position: item i decodes one block of
    about 128 strings (a few microseconds); `take(positions)` and iterating decode each block
    once for all the positions it holds (`take` reads them in block order and answers in the
    order given: 0.2-0.7 µs a row for 100,000 rows against 3-6 read one by one). Every block
    is checked against its check value as it is decoded."""

    def __init__(self, core, column: str, n: int):
        self._core = core
        self._column = column
        self._n = n

    def __len__(self) -> int:
        return self._n

    def _get(self, i: int) -> str:
        return self._core.smiles(i) if self._column == "smiles" else self._core.id(i)

    def take(self, positions) -> list[str]:
        return self._core.texts_at(self._column, np.asarray(positions, dtype="<i8").tobytes())

    def __iter__(self) -> Iterator[str]:
        if self._column == "smiles":
            per = self._core.block_len()
            for b in range(-(-self._n // per)):
                yield from self._core.smiles_block(b)
        else:
            for i in range(self._n):
                yield self._core.id(i)


class StoreV2(_StoreBase):
    """The one store, format version 2 (`molsift ingest`, docs/store-format.md), open: the
    four searches over compressed columns.

    Store positions follow the canonical SMILES in byte order (so equal SMILES sit side by
    side); `input_ranks[i]` is molecule i's place in the input and `source_lines[i]` its line.
    `fingerprints` and `popcounts` are decoded from the bit planes on first use (the planes
    are the only copy of the fingerprints)."""

    def __init__(self, path: PathLike, core):
        self.path = os.fspath(path)
        self._core = core
        self.manifest = json.loads(core.manifest_json())
        n = self.manifest["counts"]["molecules"]
        self.smiles = _V2Column(core, "smiles", n)
        self.ids = _V2Column(core, "ids", n)

    @property
    def fingerprints(self) -> np.ndarray:
        """uint64 array (n, bits/64) in store order, decoded from the planes once."""
        if getattr(self, "_fps", None) is None:
            words = self.manifest["fingerprint"]["bits"] // 64
            raw = np.frombuffer(self._core.fingerprint_rows(), dtype="<u8")
            self._fps = raw.reshape(len(self), words)
        return self._fps

    def fingerprints_at(self, positions) -> np.ndarray:
        """uint64 array (len(positions), bits/64): the fingerprints of the molecules at those
        store positions, decoded for them alone (`fingerprints` decodes every molecule's:
        `bits / 8` bytes of memory per molecule)."""
        words = self.manifest["fingerprint"]["bits"] // 64
        pos = [int(p) for p in positions]
        if getattr(self, "_fps", None) is not None:
            return self._fps[np.asarray(pos, dtype=np.int64)]
        raw = np.frombuffer(self._core.fingerprint_rows_at(pos), dtype="<u8")
        return raw.reshape(len(pos), words)

    def tanimoto_at(self, positions, on_bits) -> np.ndarray:
        """float64: the Tanimoto of a query (its on-bits in this store's fingerprint spec) to
        the molecules at those store positions, in that order, read from the query's planes
        alone (`fingerprints_at` decodes every bit of each molecule)."""
        pos = [int(p) for p in positions]
        if getattr(self, "_fps", None) is not None:
            return _tanimoto_rows(self._fps[np.asarray(pos, dtype=np.int64)], on_bits)
        raw = self._core.tanimoto_at(pos, [int(b) for b in on_bits])
        return np.frombuffer(raw, dtype="<f8").astype(np.float64)

    @property
    def popcounts(self) -> np.ndarray:
        """uint16 popcount of each fingerprint, in store order."""
        fps = self.fingerprints
        bits = np.unpackbits(fps.view(np.uint8), axis=1) if len(fps) else np.zeros((0, 0))
        return bits.sum(axis=1, dtype=np.uint16)

    @property
    def input_ranks(self) -> np.ndarray:
        """int64: each store position's place among the molecules in input order."""
        pos = np.frombuffer(self._core.positions_by_input(), dtype="<u4")
        ranks = np.empty(len(pos), dtype=np.int64)
        ranks[pos] = np.arange(len(pos), dtype=np.int64)
        return ranks

    @property
    def source_lines(self) -> np.ndarray:
        """uint64: the 1-based input line of each molecule, by store position."""
        return np.array([self._core.source_line(i) for i in range(len(self))], dtype=np.uint64)

    def lookup(self, smiles, workers: int | None = None) -> np.ndarray:
        """Store position of each query (int64; -1 when absent): each SMILES is canonicalized
        as ingest canonicalized the store (RDKit's `MolFromSmiles`, then `MolToSmiles`), so
        any valid SMILES of a molecule finds it. An unparsable query raises
        `molsift.QueryError`. Where a molecule is stored more than once, its first position."""
        from .lookup import lookup

        return lookup(self, smiles, workers=workers)

    def lookup_ids(self, ids) -> np.ndarray:
        """Store position of each id (int64; -1 when absent; the first where ids repeat). One id
        (a str) is looked up as a list of one, as `lookup` does with one SMILES."""
        if isinstance(ids, str):  # not its characters one by one
            ids = [ids]
        found = self._core.lookup_ids([str(i) for i in ids])
        return np.array([p[0] if p else -1 for p in found], dtype=np.int64)

    def _searcher(self):
        if getattr(self, "_searcher_obj", None) is None:
            self._searcher_obj = self._core.searcher()
        return self._searcher_obj

    @property
    def has_column_index(self) -> bool:
        return True

    def file_sizes(self) -> dict:
        """Bytes of each file of the store."""
        return dict(self._core.file_sizes())

    def __repr__(self) -> str:
        fp = self.manifest["fingerprint"]
        return (
            f"<molsift.StoreV2 {self.path!r}: {len(self)} molecules, "
            f"{fp['kind']} {fp['bits']} bits, {self.counts['rejected']} rejected>"
        )


def _tanimoto_rows(rows: np.ndarray, on_bits) -> np.ndarray:
    """float64: the Tanimoto of a query (its on-bits) to each fingerprint row (uint64 words);
    two empty fingerprints score 1."""
    q = np.zeros(rows.shape[1] if rows.ndim == 2 else 0, dtype=np.uint64)
    for b in on_bits:
        q[b // 64] |= np.uint64(1) << np.uint64(b % 64)
    common = np.bitwise_count(rows & q).sum(axis=1, dtype=np.int64)
    union = np.bitwise_count(rows | q).sum(axis=1, dtype=np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(union > 0, common / np.maximum(union, 1), 1.0)
    return t.astype(np.float64)


def format_version(path: PathLike) -> int | None:
    """The `format_version` a store's manifest states (None when it cannot be read: the
    reader then says what is wrong)."""
    try:
        with open(os.path.join(os.fspath(path), "manifest.json"), "rb") as fh:
            version = json.loads(fh.read())["format_version"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    # only a JSON integer is a version ("1" or true is not: the reader names what it found)
    return version if isinstance(version, int) and not isinstance(version, bool) else None


def file_bytes(manifest: dict, shards: Sequence[dict] = ()) -> dict[str, int]:
    """The bytes of every file a store holds, by name, as its manifest lists them (the
    manifest itself left out): the one count of a store's size, what `molsift info` shows and
    `molsift ingest` reports. For a store set, `manifest` is its `set.json` and `shards` its
    shards' manifests in order: the set's own files (rejects.tsv, duplicates.tsv) by name and
    each shard's as `shard-NNNN/FILE`."""
    records = manifest.get("shards") or []
    if len(records) != len(shards):
        raise ValueError(f"a set of {len(records)} shards sized from {len(shards)} manifests")
    out = {name: e["bytes"] for name, e in manifest["files"].items()}
    for rec, shard in zip(records, shards):
        out.update({f"{rec['name']}/{name}": e["bytes"] for name, e in shard["files"].items()})
    return out


def index_bytes(files: dict[str, int], prefix: str) -> int:
    """The bytes of one index in `file_bytes`'s count: its files named `prefix...` (`pattern.`,
    `analogs.`, `columns.`), a set's in every shard (`shard-NNNN/FILE`): what ingest reports,
    `molsift index` says and `molsift info` shows."""
    return sum(b for f, b in files.items() if f.rsplit("/", 1)[-1].startswith(prefix))


def open_core(path: PathLike, verify: bool = False):
    """The Rust reader (`molsift._core.Store` or `StoreV2`) of the store at `path`, by the
    format version its manifest states."""
    if format_version(path) == 2:
        return _core.StoreV2(os.fspath(path), verify=verify)
    return _core.Store(os.fspath(path), full=verify)


def open_store(path: PathLike, verify: bool = True) -> StoreV2:
    """Opens the one store (format version 2) read-only; a version-1 store is refused in one
    line that says to convert it with `molsift upgrade` (`open_version_1` reads it). A store
    set (`molsift ingest --shards K`) opens as a `sets.StoreSet`, which every search takes.

    Always checks the manifest (format, version, its own checksum), file sizes and offsets;
    with `verify=True` (the default) also every file's checksum, the column index's included,
    which reads the store once. Without it, the files a search or an id/SMILES lookup reads are
    checked when first read. Raises `molsift.StoreError` naming the file and what is wrong."""
    from .sets import is_set

    if not os.fspath(path):  # it was ": No such file or directory (os error 2)"
        raise _core.StoreError("an empty store path: name the store's directory")
    if is_set(path):  # a store set: its shards, one store to every caller
        from .sets import open_set

        return open_set(path, verify=verify)  # type: ignore[return-value]
    version = format_version(path)
    if version == 1:
        raise _core.StoreError(
            f"{os.fspath(path)}: a version-1 store, which only `molsift upgrade` reads; convert"
            f" it to the one store with `molsift upgrade {os.fspath(path)} -o NEW`"
        )
    return StoreV2(path, _core.StoreV2(os.fspath(path), verify=verify))


def open_version_1(path: PathLike, verify: bool = False) -> Store:
    """Opens a store of format version 1 (molsift before the one store) read-only: what
    `upgrade` converts, and what a benchmark compares the one store against. Every verb goes
    through `open_store`, which refuses it."""
    return Store(path, _core.Store(os.fspath(path), full=verify))


def check_store_output(output: str, overwrite: bool, inputs: Sequence[str] = ()) -> None:
    """The output of a store writer (ingest, upgrade) must be new, or with `overwrite` a
    molsift store (the one overwrite rule, `molsift_store::replace::check_replaceable`) that
    holds none of `inputs`; never inside an input that is a directory (`upgrade OLD -o
    OLD/new.store` wrote a store into the one it read)."""
    for path in inputs:
        if os.path.isdir(path) and os.path.realpath(output).startswith(
            os.path.realpath(path) + os.sep
        ):
            raise _core.StoreError(
                f"{output}: is inside the input {path}: write the new store beside it"
            )
    if not os.path.lexists(output):
        return
    if not overwrite:
        raise _core.StoreError(
            f"{output}: already exists (choose another output or pass --overwrite)"
        )
    _core.check_replaceable(output)
    inside = os.path.realpath(output) + os.sep
    for path in inputs:
        # the input itself too (`upgrade OLD -o OLD --overwrite` replaced OLD)
        if (os.path.realpath(path) + os.sep).startswith(inside):
            what = "is" if os.path.realpath(path) + os.sep == inside else "holds"
            raise _core.StoreError(
                f"{output}: {what} the input {path}; --overwrite never "
                "replaces a store that an input is read from"
            )


def pattern_index_carries(src: PathLike) -> bool:
    """Whether the version-1 store `src` has a substructure index that can be carried into a
    store written from it (`_core.carry_pattern_index`): one with graphs, built for this
    molsift's screening bits."""
    from .substructure.build import meaning

    old = open_version_1(src)
    if not old.has_pattern_index:
        return False
    index = old._core.pattern_index()
    return index.has_graphs() and json.loads(index.meaning_json()) == meaning()


def _pattern_index_of_upgrade(src, staged: str, workers, progress) -> None:
    """The substructure index of an upgraded store: the source's carried over to the new
    positions when it can be (`pattern_index_carries`); else computed from the stored
    SMILES."""
    from .substructure.build import build_pattern_index

    if pattern_index_carries(src):
        _core.carry_pattern_index(os.fspath(src), staged, threads=workers or os.cpu_count() or 1)
        return
    build_pattern_index(staged, workers=workers, progress=progress)


def write_complete(
    src: PathLike,
    staged: str,
    *,
    threads: int = 1,
    workers: int | None = None,
    pattern: bool = True,
    analogs: bool = True,
    progress: bool | None = None,
    pattern_parts: Any = None,
    budget: Any = None,
) -> None:
    """Writes at `staged` (a new path in a work directory) the one store, format version 2,
    from `src`: ingest's parts merged as sorted runs (a `_core.PartRuns`) or the version-1
    store at the path `src` (an old store): the store itself on `threads` threads, then with
    `pattern` its substructure index (ingest's: written from its workers' rows,
    `pattern_parts`, a `substructure.build.PatternParts`; an upgrade's: carried over from the
    source's when it has one), then with `analogs` its analog index. What `upgrade` and
    `ingest` both run, each step shown on a terminal (`progress`: the rule of
    `progress.Progress`); the caller moves `staged` into place. With `budget` (a
    `budget.Budget`: ingest's --memory) the write buffers of ingest's store are cut from it.
    """
    from .progress import Phase, Progress, counter

    buffers = {} if budget is None else {"plane_budget": budget.plane_budget}

    with Phase("the one store: text columns, fingerprint planes, exact-match index", progress):
        if isinstance(src, _core.PartRuns):
            src.write_store(staged, threads=threads, **buffers)
            src.release()  # the parts unmapped: the indexes below read their own files
        else:
            _core.upgrade_store(os.fspath(src), staged, threads=threads)
    if pattern and pattern_parts is not None:
        with Phase("the substructure index", progress):
            pattern_parts.write_index(
                staged, threads=workers or os.cpu_count() or 1,
                window_bytes=None if budget is None else budget.window_bytes,
            )  # fmt: skip
    elif pattern:
        with Phase("the substructure index", progress):
            _pattern_index_of_upgrade(src, staged, workers, progress)
    if analogs:
        from .analogs.search import index_analogs

        with open(os.path.join(staged, "manifest.json"), "rb") as fh:
            n = json.loads(fh.read())["counts"]["molecules"]
        with Progress("analog index", total=n, enabled=progress) as bar:
            index_analogs(staged, workers, progress=counter(bar))


def upgrade(
    src: PathLike,
    dst: PathLike,
    overwrite: bool = False,
    threads: int = 1,
    *,
    workers: int | None = None,
    indexes: bool = True,
    progress: bool | None = None,
) -> StoreV2:
    """Writes the version-2 form of the version-1 store `src` at `dst`, with every index (the
    substructure index and the analog index, built on `workers` processes/threads, default all
    cores, over the new store's positions; `indexes=False` leaves them out), and opens it. The
    store is built whole in a work directory beside `dst` and moved into place last: a killed
    or failed upgrade leaves no store that opens, and a store it overwrites stays as it was
    until the new one is complete."""
    import shutil

    from .parallel import check_workers

    check_workers(threads, "threads")
    check_workers(workers)
    dst = os.fspath(dst)
    check_store_output(dst, overwrite, [os.fspath(src)])
    parent = os.path.dirname(os.path.abspath(dst))
    if not os.path.isdir(parent):  # a file there is not said to be missing
        why = "is not a directory" if os.path.exists(parent) else "output directory does not exist"
        raise _core.StoreError(f"{parent}: {why}")
    _core.sweep_leftovers(dst)
    workdir = os.fspath(_core.temporary_sibling(dst, "upgrade"))
    os.makedirs(workdir)
    try:
        staged = os.path.join(workdir, "store")
        write_complete(
            src, staged, threads=threads, workers=workers, pattern=indexes, analogs=indexes,
            progress=progress,
        )  # fmt: skip
        _core.swap_into_place(staged, dst, overwrite)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return open_store(dst, verify=False)
