"""Type stub of `molsift._core`, the compiled module (crates/py, glue over the Rust crates):
every class, function and constant it defines, with types and one-line docs.
tests/test_packaging.py checks it against the module, names and parameters."""

import mmap
import os
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

_Path = str | os.PathLike[str]
# One record as handed to Python: (text, id, line, byte offset, problem or None).
_Record = tuple[str, str, int, int, str | None]

__version__: str

# ---- errors (crates/py/src/error.rs) ----

class MolsiftError(Exception):
    """Base class of every molsift error."""

class InputError(MolsiftError):
    """An input file cannot be read as records."""

class StoreError(MolsiftError):
    """A store cannot be written, merged or opened."""

class Cancelled(MolsiftError):
    """A search stopped because its cancel flag was set."""

class CancelFlag:
    """A flag one thread sets to stop a search another runs in Rust (the graph matcher, the
    analog walk); read by the kernels without the GIL."""

    def __init__(self) -> None:
        """An unset flag."""
    def set(self) -> None:
        """Tells every search holding this flag to stop."""
    def is_set(self) -> bool:
        """Whether `set()` was called."""

# ---- reading input (molsift-io) ----

DEFAULT_READ_BUFFER: int
"""Bytes of a reader's buffer unless told otherwise."""
DEFAULT_MAX_LINE_RECORD_BYTES: int
"""Longest SMILES or CSV line kept as a record; longer ones are rejected."""
DEFAULT_MAX_SDF_RECORD_BYTES: int
"""Longest SDF block kept as a record; longer ones are rejected."""

class RecordSource:
    """Records of one slab of a plain file, or of a whole (possibly compressed) file."""

    def __init__(
        self,
        path: _Path,
        format: str,
        slab: tuple[int, int] | None = None,
        header: bool = False,
        smiles_col: str | None = None,
        id_col: str | None = None,
        delimiter: str | None = None,
        buffer_size: int | None = None,
        max_record_bytes: int | None = None,
        first_line: int | None = None,
        io: str | None = None,
    ) -> None:
        """Opens `path` as `format` (smiles, csv, sdf); `slab`: only records starting there;
        `io`: how a slab is read (auto, mmap, pread, uring, direct; None: auto)."""
    def next_batch(self, n: int) -> list[_Record]:
        """Up to `n` records as (text, id, line, offset, problem); empty at the end."""
    def counters(self) -> dict[str, int | str]:
        """Bytes read, read calls, records, oversized records and decompressed bytes so far,
        and io (pread, mmap, uring, direct or stream) and io_reason."""

IO_METHODS: tuple[str, ...]
"""The ways a plain file can be read, as `io=` and `--io` take them (auto first)."""
IO_AUTO_CACHED: float
"""`io="auto"` maps (count) or preads (readers) a file at least this share of which is cached."""
"""`io="auto"` reads a file direct when at most this share of it is cached."""
IO_AUTO_MAP_BELOW: int
"""`io="auto"` maps (count) or preads (readers) files or slabs smaller than this many bytes."""
IO_CHUNK: int
"""Bytes per read of count's pread, uring and direct ways."""
IO_DEPTH: int
"""Reads in flight per thread of count's uring and direct ways."""

def count_records(
    path: _Path, format: str, threads: int = 1, header: bool = False, io: str = "auto"
) -> dict[str, int | str]:
    """Records, bytes, bytes_read, read_calls, io (how the file was read: mmap, pread, uring,
    direct or stream) and io_reason of a file, counted on `threads` threads; `io`: auto, mmap,
    pread, uring or direct."""

def split_slabs(len: int, n: int) -> list[tuple[int, int]]:
    """Byte ranges of `n` near-equal slabs covering a file of `len` bytes."""

def guided_slabs(len: int, workers: int, min_len: int = 0) -> list[tuple[int, int]]:
    """Byte ranges for `workers` workers taking slabs from a queue, shrinking towards the end."""

def detect_format(path: _Path) -> tuple[str, bool]:
    """(format, header) guessed from the file name and first line."""

def file_compression(path: _Path) -> Literal["none", "gzip", "zstd"]:
    """The compression of a file, from its first bytes."""

def count_newlines(path: _Path, start: int, end: int) -> int:
    """Number of newline bytes in `[start, end)` of a plain file."""

def slab_first_lines(path: _Path, slabs: list[tuple[int, int]], threads: int) -> list[int]:
    """Newline bytes before the start of each slab, counted in one parallel pass."""

# ---- the store (molsift-store) ----

STORE_FILES: dict[str, str]
"""File names of a store, by what they hold (fingerprints, popcounts, smiles, ...)."""
STORE_FORMAT_VERSION: int
"""The store format version this build writes and reads."""

class StoreWriter:
    """Builds one store under a temporary name; `finish` moves it into place."""

    def __init__(
        self, path: _Path, kind: str, bits: int, params_json: str, overwrite: bool = False
    ) -> None:
        """A new store at `path` for `bits`-bit fingerprints of `kind` with `params_json`."""
    def add_molecules_packed(
        self, ids: list[str], smiles: list[str], lines: list[int], fps: bytes
    ) -> None:
        """Appends molecules whose fingerprints are packed rows of `bits / 8` bytes each."""
    def add_reject(self, source: str, line: int, offset: int, id: str, reason: str) -> None:
        """Records one rejected record."""
    def set_provenance(self, provenance_json: str) -> None:
        """Provenance (a JSON text) to keep in the manifest."""
    def set_duplicates(self, n: int) -> None:
        """Sets the number of duplicate molecules the manifest reports (`counts["duplicates"]`)."""
    def counts(self) -> tuple[int, int, int]:
        """(records_in, molecules, rejected) so far."""
    def finish(self) -> str:
        """Syncs, writes the manifest, renames into place; returns the manifest as JSON text."""
    def abort(self) -> None:
        """Drops the unfinished store (its temporary directory is removed)."""

def reject_row(source: str, line: int, offset: int, id: str, reason: str) -> str:
    """One row of `rejects.tsv` (the one format of rejected records, a store's and screen's)."""

REJECTS_HEADER: str
"""The header row of `rejects.tsv`."""

class Store:
    """An open, checked store: one generation of it, through one directory handle."""

    def __init__(self, path: _Path, full: bool = True) -> None:
        """Opens and checks the store (every file's checksum too if `full`)."""
    def manifest_json(self) -> str:
        """The manifest as JSON text."""
    def dup_fd(self, name: str) -> int:
        """A new descriptor (the caller closes it) of the data file `name`."""
    def verify_file(self, name: str) -> None:
        """Checks the checksum of `name` against the manifest (StoreError if it differs)."""
    def text(self, column: Literal["ids", "smiles"], i: int) -> str:
        """Id or SMILES of molecule `i`, checked."""
    def searcher(self) -> Searcher:
        """A searcher over this very store."""
    def texts_at(self, column: Literal["ids", "smiles"], positions: bytes) -> list[str]:
        """Ids or SMILES of the molecules at `positions` (little-endian int64 bytes), checked."""
    def pattern_index(self) -> PatternIndex:
        """The substructure index of this very store (StoreError saying how to build one)."""
    def analog_index(self) -> AnalogIndex:
        """The analog index of this very store (StoreError saying how to build one)."""

def open_store_manifest(path: _Path, full: bool = True) -> str:
    """Checks a store and returns its manifest as JSON text (StoreError naming what is wrong)."""

def sweep_leftovers(path: _Path) -> list[Path]:
    """Removes what killed runs on this host left beside `path`; returns the removed paths."""

def temporary_sibling(path: _Path, kind: str) -> Path:
    """`DIR/.NAME.KIND-PID-NANOS@HOST` beside `path`: molsift's one temporary name."""

def swap_into_place(staged: _Path, path: _Path, overwrite: bool = False) -> None:
    """Moves the finished store at `staged` to `path` (a store there replaced only with
    `overwrite`, by the overwrite rule, in one atomic exchange)."""

def check_replaceable(path: _Path) -> None:
    """Raises StoreError unless `path` is absent or a store that `--overwrite` may replace."""

# ---- search (molsift-search) ----

class StoreV2:
    """An open version-2 store (compressed columns, exact-match index)."""

    def __init__(self, path: _Path, verify: bool = False) -> None:
        """Opens the store at `path` (sizes and headers; `verify`: every checksum too)."""
    def __len__(self) -> int:
        """Molecules."""
    def manifest_json(self) -> str:
        """The manifest as written."""
    def smiles(self, i: int) -> str:
        """Canonical SMILES of store position `i` (decodes one block)."""
    def smiles_block(self, b: int) -> list[str]:
        """The SMILES of block `b` of the SMILES column."""
    def block_len(self) -> int:
        """Strings per block of the SMILES column."""
    def id(self, i: int) -> str:
        """Id of store position `i`."""
    def texts_at(self, column: Literal["ids", "smiles"], positions: bytes) -> list[str]:
        """Ids or SMILES of the molecules at `positions` (little-endian int64 bytes)."""
    def input_rank(self, i: int) -> int:
        """Input rank of store position `i`."""
    def source_line(self, i: int) -> int:
        """1-based source line of store position `i`."""
    def lookup(self, smiles: list[str]) -> list[list[int]]:
        """Store positions of each canonical SMILES (empty when absent)."""
    def lookup_ids(self, ids: list[str]) -> list[list[int]]:
        """Store positions of each id (empty when absent)."""
    def fingerprint_rows(self) -> bytes:
        """Every fingerprint in store order, little-endian u64 words."""
    def fingerprint_rows_at(self, positions: list[int]) -> bytes:
        """The fingerprints of those store positions (in that order), decoded for them alone."""
    def tanimoto_at(self, positions: list[int], on_bits: list[int]) -> bytes:
        """The Tanimoto of a query (its on-bits) to those store positions (in that order),
        little-endian f64, from the query's planes alone."""
    def positions_by_input(self) -> bytes:
        """Store position of each input rank, little-endian u32."""
    def file_sizes(self) -> dict[str, int]:
        """Bytes of each file of the store."""
    def verify_file(self, name: str) -> None:
        """Checks one file's checksum (once per process)."""
    def verify_all(self) -> None:
        """Checks every file's checksum."""
    def searcher(self) -> Searcher:
        """The searcher over this store's planes, through the files the store opened."""
    def pattern_index(self) -> PatternIndex:
        """The substructure index of this very store, or StoreError saying how to build one."""
    def analog_index(self) -> AnalogIndex:
        """The analog index of this very store, or StoreError saying how to build one."""

def upgrade_store(
    src: _Path,
    dst: _Path,
    overwrite: bool = False,
    threads: int = 1,
    level: int = 15,
    check_bits: int = 6,
    hash_bits: int = 64,
) -> str:
    """Writes the version-2 form of the version-1 store `src` at `dst`; returns its manifest."""

PART_RUN_EXT: str
"""The name a part's run has beside it: the part's path + this (`write_part_run`)."""
SLICE_HELD_EXT: str
"""The name a slice's positions have beside it: the slice's path + this (`write_part_slices`)."""

def write_part_run(part: _Path) -> None:
    """Writes the run of the finished part store at `part` (`PART.run.u32`: its positions
    sorted by canonical SMILES, stable): what `PartRuns` merges."""

class PartRuns:
    """Ingest's part stores (task order, each with its run) merged k-way into the one store's
    order: duplicates counted and, with `dedupe`, left out; no staging copy. With
    `merge=False` (a store set's root) only opened: `set_cuts` cuts them into shards, each of
    which merges its own range (`merge_set_shard`); writing a store from them raises."""

    def __init__(
        self,
        parts: list[_Path],
        kind: str,
        bits: int,
        params_json: str,
        dedupe: bool = False,
        provenance_json: str = "null",
        merge: bool = True,
    ) -> None:
        """Merges the runs of `parts` (fingerprints of `kind`, `bits`, `params_json`), or
        only opens them (`merge=False`)."""
    def __len__(self) -> int: ...
    @property
    def dedupe(self) -> bool:
        """Whether molecules whose SMILES an earlier one had are left out."""
    def set_cuts(self, shards: int) -> list[bytes | None]:
        """A store set's `shards - 1` inner cuts (SMILES; None where the shards before are
        empty), by exact selection over the runs, without a merge: shard s holds the SMILES
        after cut s up to cut s + 1."""
    def check_runs(self) -> list[int]:
        """Checks each run to be a permutation of its part's positions; their lengths."""
    def cut_middles(self, lo: list[int], hi: list[int]) -> list[tuple[bytes, int]]:
        """One round of the cuts' selection, this process's share: (the SMILES at the middle of
        each run's window lo..hi that is not empty, the window's size)."""
    def cut_split(self, lo: list[int], hi: list[int], pivot: bytes) -> tuple[list[int], list[int]]:
        """Each run's window lo..hi cut by `pivot`: (first positions at least it, first above)."""
    def parts(self) -> list[str]:
        """The part stores, in task order."""
    def counts_json(self) -> str:
        """The counts (records in, molecules, rejected, duplicates, dropped) as JSON text."""
    def fingerprint_json(self) -> str:
        """The fingerprint spec as JSON text (as a manifest writes it)."""
    def provenance_json(self) -> str:
        """The provenance the store records, as JSON text."""
    def dropped(self) -> list[int]:
        """The positions (among all the parts' molecules, ascending) `dedupe` left out."""
    def release(self) -> None:
        """Unmaps the parts and drops the order (counts, spec, provenance and `dropped` stay);
        writing from the runs afterwards raises StoreError."""
    def write_version_1(self, out: _Path, overwrite: bool = False) -> str:
        """Writes the molecules at `out` as a version-1 store in input order (what `upgrade`
        reads; for tests); returns its manifest (JSON text)."""
    def write_store(self, dst: _Path, threads: int = 1, plane_budget: int | None = None) -> str:
        """Writes the one store at the new path `dst` (the similarity planes built from at most
        `plane_budget` bytes of payload a pass); returns its manifest (JSON text)."""
    def write_rejects(self, path: _Path) -> None:
        """Writes `rejects.tsv` (its header, then every part's rejected records) at `path`."""

def write_set_shard_from_parts(
    parts: list[_Path],
    fingerprint_json: str,
    dropped: list[int],
    provenance_json: str,
    out: _Path,
    index: int,
    shards: int,
    offset: int,
    source: bytes,
    threads: int = 1,
    plane_budget: int | None = None,
    total: int | None = None,
) -> None:
    """Writes shard `index` of `shards` at the new directory `out`: the one store of the
    molecules at input ranks `source` (u32 little-endian) of ingest's `parts` less `dropped`,
    its first molecule at set position `offset` (the similarity planes built from at most
    `plane_budget` bytes of payload a pass). With `total`, `parts` are the shard's slices
    (`write_part_slices`) of parts holding `total` molecules."""

def merge_set_shard(
    parts: list[_Path],
    fingerprint_json: str,
    cuts: list[bytes | None],
    index: int,
    dedupe: bool,
    out: _Path,
    total: int | None = None,
) -> tuple[int, int, list[tuple[int, int, int]]]:
    """Merges shard `index` of a set of ingest's `parts` cut at `cuts` (its slice of every
    run); writes its molecules (positions among all the parts' molecules, u64 little-endian,
    set order) at `out`; returns (molecules kept, duplicates, the molecules left out as
    (position, the first of its SMILES' position, the first's index in the shard)). With
    `total`, `parts` are the shard's slices (`write_part_slices`)."""

def write_set_duplicates(
    parts: list[_Path],
    fingerprint_json: str,
    rows: list[tuple[int, int, int]],
    path: _Path,
    total: int | None = None,
) -> None:
    """Writes a set's `duplicates.tsv` at `path`: rows of (position left out, the first of its
    SMILES' position, the first's set position), ascending. With `total`, `parts` are one
    shard's slices and `rows` that shard's."""

def write_part_slices(
    part: _Path, base: int, cuts: list[bytes | None], outs: list[_Path]
) -> list[bytes]:
    """Cuts the part store at `part` (its first molecule at position `base` of all the parts')
    into the shards of a set with `cuts`: a slice at `outs[s]` for each shard holding some of
    its molecules; returns each shard's molecules of the part (places, u32 little-endian,
    ascending; empty where no slice was written)."""

def cut_pivot(mids: list[tuple[bytes, int]]) -> bytes | None:
    """A round's pivot of the cuts' selection: the weighted median of every rank's
    `PartRuns.cut_middles`; None when no window is left."""

def set_plan(src: _Path, dir: _Path, shards: int) -> tuple[list[int], bytes]:
    """A store set's plan from the version-1 store `src`: the bounds (shards + 1 set positions)
    and the store order (u32 little-endian: set position -> position in `src`); writes the
    set's `duplicates.tsv` in set positions into the existing directory `dir` when `src` has
    one."""

def write_set_shard(
    src: _Path,
    out: _Path,
    index: int,
    shards: int,
    offset: int,
    source: bytes,
    threads: int = 1,
) -> None:
    """Writes shard `index` of `shards` at the new directory `out`: the one store of `src`'s
    molecules at `source` (u32 little-endian positions, the shard's range of the plan's
    order), its first molecule at set position `offset`."""

class Searcher:
    """Searches one store (its column index, or a row scan) with the GIL released."""

    def __init__(self, path: _Path) -> None:
        """Opens the store at `path` and its column index (built in memory if it has none)."""
    @staticmethod
    def from_index(path: _Path) -> Searcher:
        """Opens a bare column index directory (hits are index positions)."""
    def __len__(self) -> int:
        """Molecules in the index."""
    @property
    def read_ahead(self) -> bool:
        """Whether searches give the kernel read-ahead hints for the planes they scan."""
    @read_ahead.setter
    def read_ahead(self, on: bool) -> None: ...
    @property
    def index_built_in_memory(self) -> bool:
        """True when the store had no column index on disk and one was built at open."""
    def search(
        self,
        on_bits: list[int],
        threshold: float | None = None,
        k: int | None = None,
        threads: int = 1,
        bars: SharedBars | None = None,
        tag: int = 0,
    ) -> tuple[list[int], list[float], dict[str, Any]]:
        """One query by its on-bits: (indices, scores, stats), best first. With `bars`
        (top-k): searches of this query over other shards given the same `bars` and `tag`
        share their k-th best with this one as they run."""
    def search_batch(
        self,
        queries: list[list[int]],
        threshold: float | None = None,
        k: int | None = None,
        threads: int = 1,
        bars: SharedBars | None = None,
        tags: list[int] | None = None,
    ) -> tuple[list[tuple[list[int], list[float]]], dict[str, Any]]:
        """Many queries at once: (indices, scores) per query, and the summed stats. With
        `bars` and `tags` (one per query, top-k): query i shares its k-th best with the
        searches of the same query over other shards given the same `bars` and tag."""
    @staticmethod
    def search_shards(
        searchers: list[Searcher],
        offsets: list[int],
        queries: list[list[int]],
        threshold: float | None = None,
        k: int | None = None,
        threads: int = 1,
        bars: SharedBars | None = None,
        tags: list[int] | None = None,
    ) -> tuple[list[tuple[list[int], list[float]]], dict[str, Any]]:
        """Many queries over several searchers at once (a set's shards), at set positions
        `offsets[i]` + each one's own: (positions, scores) per query merged best first, and the
        summed stats. Top-k goes best bound first across every shard's blocks."""

class SharedBars:
    """Cells where searches of one query over different shards share their k-th best as they
    run (a cell per query in flight, chosen by the query's tag), owned or in memory that
    another object owns (an MPI window the ranks of a node share). For top-k of k <= SHARED_BAR_K
    each cell also holds the scores of the searches' molecules: its bar is then the k-th best of
    their molecules together."""

    def __init__(self, cells: int = 1) -> None:
        """`cells` cells of this object's own, none holding a bar."""
    @staticmethod
    def over(address: int, nbytes: int, owner: object) -> SharedBars:
        """`nbytes // SHARED_BAR_BYTES` cells in `nbytes` zeroed bytes at `address` (aligned to 8),
        valid while `owner` lives (kept with the cells)."""
    def __len__(self) -> int:
        """Cells."""
    def get(self, tag: int) -> float | None:
        """The bar shared for query `tag` (its score), or None."""

SHARED_BAR_BYTES: int
"""Bytes a cell of SharedBars takes in the memory given to `SharedBars.over`."""
SHARED_BAR_K: int
"""The largest k whose top-k searches share their molecules' scores, not only their k-th bests."""

def build_column_index(path: _Path, budget: int = ...) -> int:
    """Builds and writes the store's column index in bounded memory; returns its bytes."""

def merge_runs(
    counts: bytes, runs: int, positions: bytes, scores: bytes
) -> tuple[bytes, bytes, list[int]]:
    """Hit lists each best first merged in one pass: `runs` lists of many queries' hits
    (little-endian u64 counts, list-major; i64 positions; f64 scores): the merged positions
    and scores, query after query, and where each query's hits end. ValueError when the
    counts do not add up or a list is out of order."""

def merge_top_k(incoming: bytes, into: bytes, k: int) -> bytes:
    """Two buffers of top-k records (f64 score, i64 position; rows of k, best first): each row
    of `into` merged with the same row of `incoming`, its k best, as bytes."""

# ---- substructure screen (molsift-substructure) ----

PATTERN_FILES: tuple[str, str, str]
"""The substructure index's files in a store: (header, planes, molecule graphs)."""

def carry_pattern_index(
    src: _Path, dst: _Path, threads: int = 1, source: bytes | None = None
) -> int:
    """Writes the substructure index of the version-2 store `dst` upgraded from the version-1
    store `src` by carrying `src`'s index over to the new positions (graph blocks compressed on
    `threads` threads); returns its bytes. `source` (u32 little-endian, one per molecule of
    `dst`: its position in `src`) for a shard of a set; without it, `dst`'s input order."""

def pattern_planes_from_parts(
    planes: _Path,
    parts: list[_Path],
    dropped: list[int],
    bits: int,
    words_per_row: int,
    threads: int = 1,
) -> list[int]:
    """Writes the dense planes (`bits` planes, at the new temporary file `planes`) of the
    screening rows of ingest's parts (each `PART` of `PART.rows.u64`, `PART.glen.u32`,
    `PART.grec.bin`, in task order, less the molecules at `dropped`) on `threads` threads;
    returns how many molecules have each bit."""

def pattern_index_from_parts(
    dst: _Path,
    planes: _Path,
    bit_counts: list[int],
    parts: list[_Path],
    dropped: list[int],
    words_per_row: int,
    meaning_json: str,
    threads: int = 1,
    source: bytes | None = None,
    window_bytes: int = ...,
) -> int:
    """Writes the substructure index of the version-2 store `dst` (written from ingest's
    parts) from the parts' dense planes and graph records; returns the bytes of the screen.
    `source` (u32 little-endian, one per molecule of `dst`: its input rank) for a shard of a
    set; without it, `dst`'s input order. The graph blocks are compressed a window of about
    `window_bytes` of records at a time (default `PATTERN_WINDOW_BYTES`)."""

def pattern_shard_index_from_parts(
    dst: _Path,
    scratch: _Path,
    parts: list[_Path],
    dropped: list[int],
    bits: int,
    words_per_row: int,
    meaning_json: str,
    source: bytes,
    threads: int = 1,
    window_bytes: int = ...,
    total: int | None = None,
) -> int:
    """Writes the substructure index of `dst`, a shard of a set whose molecules are the input
    ranks `source` (u32 little-endian) of ingest's `parts`, from the shard's own rows (their
    dense planes at the temporary file `scratch`, removed after); returns the screen's bytes.
    With `total`, `parts` are the shard's slices of parts holding `total` molecules."""

_Facts = tuple[list[tuple[int, int]], list[tuple[float, int, int]], int]
_PatternGraph = tuple[list[int], list[tuple[int, int, int]]]

def screen_from_pickles(
    pickles: list[bytes | None], patterns: list[_PatternGraph] | None = None, bits: int = 2048
) -> list[tuple[bytes | None, _Facts | None, bytes | None]]:
    """What the substructure index stores of molecules given as RDKit's binary form
    (`Mol.ToBinary()`; None: a molecule RDKit did not parse, an empty record): per molecule its
    graph record, or None where the form holds something the reader does not know (ask
    `program.graph_record`); the screen's facts: ([(atom invariant, degree)], [(bond valence
    contribution, invariant, invariant)], H atoms on N and O), or None where the reader does not
    give them; and with `patterns` (RDKit's pattern fingerprint's patterns in its order: atom
    kinds 0 any / 1 in a ring, bonds (begin, end, 0 any / 1 in a ring / 2 single or aromatic))
    the pattern fingerprint of `bits` bits, packed (bit i in byte i / 8 at bit i % 8), or None.
    GIL released."""

class ScreenRows:
    """Screening rows and graph records of molecules given as RDKit's binary form, made in Rust
    (`crates/substructure` `features::screen_row`): pattern fingerprint, feature bits counted
    with the vocabulary's tables (`features.counter_tables`), the "parses" bit."""

    def __init__(
        self,
        tables: tuple[list[int], list[int], list[int], list[int], list[int]],
        nhoh: int,
        bits: list[tuple[int, int]],
        patterns: list[_PatternGraph],
        pattern_bits: int,
        features: int,
        ok: int,
        words: int,
    ) -> None:
        """`tables`: (atom_inv, atom_deg, bond_type, end1, end2) as sets of counters; `nhoh`
        the counter of H atoms on N and O; `bits` each feature bit's (counter, threshold); the
        row: `words` u64 words, the pattern bits from bit 0, the features from `features`, the
        "parses" bit at `ok`."""
    def rows(
        self, pickles: list[bytes | None], orders: list[str | None] | None = None
    ) -> tuple[bytes, list[bytes | None], list[int]]:
        """(rows: `words` u64 words each; each molecule's graph record, None where not read;
        the molecules not read, their rows left zero). `orders`: RDKit's
        `_smilesAtomOutputOrder` text per molecule (None: as it is), the atoms put in that
        order before the record is made. GIL released."""

PATTERN_COMPACT_FILES: tuple[str, str]
"""The compact substructure index's files in a version-2 store (besides the header):
(compressed screen planes, graph records in zstd blocks)."""
PATTERN_BLOCK: int
"""Molecules per block of the planes: a part written by one task starts on a block."""
PATTERN_WINDOW_BYTES: int
"""Bytes of graph records a window of the substructure index's graph blocks holds by default
(gathered, compressed, written; ingest's `--memory` may cut it)."""

class PatternIndex:
    """A store's pattern planes: screens of queries' bits (GIL released)."""

    def __init__(self, path: _Path) -> None:
        """Opens the store at `path` (sizes checked) and its pattern index."""
    def __len__(self) -> int:
        """Molecules in the index."""
    @property
    def bits(self) -> int:
        """Number of screening bits."""
    def bit_counts(self) -> list[int]:
        """Molecules having each bit."""
    def meaning_json(self) -> str:
        """What the bits mean (JSON text), as the writer recorded it."""
    def screen(self, bits: list[int], start: int, end: int) -> tuple[bytes, int]:
        """Positions in `start..end` having every bit (little-endian int64 bytes), words read."""
    def has_graphs(self) -> bool:
        """Whether the index holds the molecules' graphs (the exact-match form)."""
    def graphs_bytes(self) -> int:
        """Bytes of the graphs file (0 without one)."""
    def match_graphs(
        self,
        query: GraphQuery,
        positions: bytes,
        threads: int,
        cancel: CancelFlag | None = None,
    ) -> tuple[bytes, bytes] | None:
        """(hits, undecided) among `positions` (int64 bytes, ascending) on `threads` threads, GIL
        released; undecided: molecules without a graph. None without graphs. Cancelled once
        `cancel` is set (read inside each molecule's match too)."""

class GraphQuery:
    """A query compiled for the graph matcher (JSON from `molsift.substructure.program`)."""

    def __init__(self, program_json: str) -> None:
        """Parses and checks the program (ValueError when it is not one)."""

def create_pattern_planes(path: _Path, bits: int, n: int) -> None:
    """Creates the all-zero planes file of `bits` planes for `n` molecules."""

def write_pattern_part(
    path: _Path, bits: int, n: int, first: int, rows: bytes, words_per_row: int
) -> list[int]:
    """Writes molecules `first ..` (rows of little-endian u64 words); returns bit counts."""

def finish_pattern_index(
    store: _Path,
    planes_tmp: _Path,
    bits: int,
    bit_counts: list[int],
    meaning_json: str,
    graphs_dir: _Path | None = None,
    threads: int = 1,
) -> int:
    """Joins the graph parts in `graphs_dir` (then removes it), checksums, writes the header,
    renames into the store, lists in its manifest (a version-2 store's graph blocks compressed
    on `threads` threads)."""

# ---- fingerprints (molsift-fp) ----

class FingerprintSet:
    """Packed fingerprints of equal length (a multiple of 64 bits), bit i in byte i/8."""

    def __init__(self, rows: list[bytes]) -> None:
        """A set of byte rows, all as long as the first (ValueError otherwise)."""
    def __len__(self) -> int:
        """Number of fingerprints."""
    def best(self, query: bytes) -> tuple[int, float]:
        """(row, Tanimoto) of the row most like `query` (first on ties); (-1, 0.0) if empty."""
    def subsets_of(self, query: bytes) -> list[int]:
        """Indices of the rows whose bits are all set in `query`."""

def packed_from_rdkit(binary: bytes, bits: int) -> bytes:
    """The packed row of RDKit's binary `ExplicitBitVect.ToBinary()` of `bits` bits."""

def on_bits_from_rdkit(binary: bytes, bits: int) -> list[int]:
    """The set bits, ascending, of RDKit's binary `ExplicitBitVect.ToBinary()` of `bits` bits."""

# ---- molsift's I/O counters (molsift-iostats) ----

class CountedFile:
    """A file opened with `os.open` flags whose every call is counted; GIL released."""

    def __init__(self, path: _Path, flags: int = 0, mode: int = 0o644) -> None:
        """Opens `path` with `os.open` flags (`os.O_WRONLY | os.O_APPEND`, ...) and mode."""
    def pread(self, n: int, offset: int) -> bytes:
        """Up to `n` bytes at `offset` (one pread)."""
    def pwrite(self, data: bytes, offset: int) -> int:
        """Writes all of `data` at `offset`; returns its length."""
    def read(self, n: int) -> bytes:
        """Up to `n` bytes from the file offset (one read)."""
    def write(self, data: bytes) -> int:
        """Writes all of `data` at the file offset (the end with `O_APPEND`); returns its length."""
    def seek(self, offset: int, whence: int = 0) -> int:
        """Moves the file offset like `os.lseek`; returns the new offset."""
    def size(self) -> int:
        """The file's size, by `fstat` (counted as a stat)."""
    def fsync(self) -> None:
        """`fsync`."""
    def fdatasync(self) -> None:
        """`fdatasync`."""
    def truncate(self, length: int) -> None:
        """Truncates (or extends) the file to `length` bytes."""
    def mmap(self) -> mmap.mmap:
        """The whole file mapped read-only, counted as one mmap."""
    def fileno(self) -> int:
        """The file descriptor."""
    def close(self) -> None:
        """Closes the file (again: nothing happens)."""
    @property
    def closed(self) -> bool:
        """Whether the file is closed."""
    def __enter__(self) -> CountedFile: ...
    def __exit__(
        self,
        _t: type[BaseException] | None,
        _v: BaseException | None,
        _tb: TracebackType | None,
    ) -> None: ...

def read_file(path: _Path) -> bytes:
    """The whole file (counted: one open, 64 KiB reads)."""

def write_file(path: _Path, data: bytes, sync: bool = False) -> None:
    """Creates or truncates `path` and writes `data` (counted); `sync`: fsync before closing."""

def file_size(path: _Path) -> int:
    """The size of `path` by `stat` (counted as a stat of it)."""

def iostats_process(ended_by: str = "exit") -> str:
    """This process's I/O counters as one "process" object of the I/O log (JSON text)."""

def iostats_counters(path: _Path) -> dict[str, int] | None:
    """The non-zero integer counters of `path` in this process, or None."""

def iostats_enabled() -> bool:
    """Whether this process records I/O (MOLSIFT_IOSTATS is not 0)."""

# ---- the I/O tracer of `molsift profile` (molsift-tracer) ----

TRACER_LIBRARY_NAME: str
"""File name of the tracer library (libmolsift_tracer.so)."""

def tracer_library() -> bytes:
    """The LD_PRELOAD tracer library (an ELF shared object built with this module)."""

def canonical_skeleton(
    n: int, bonds: list[tuple[int, int]], max_leaves: int = 100_000
) -> tuple[list[int], bytes]:
    """Canonical labels of a skeleton's atoms and its certificate (u32 LE bytes): equal
    certificates exactly when the graphs are isomorphic. ValueError for a bad or too symmetric
    graph."""

def smiles_skeleton(smiles: str) -> tuple[int, list[tuple[int, int]]]:
    """The skeleton of a SMILES read from its topology alone: (heavy atoms, bonds (i, j), i < j).
    ValueError naming the byte offset for text that is not SMILES."""

def skeleton_edits(
    n: int, bonds: list[tuple[int, int]], max_leaves: int = 100_000
) -> list[tuple[str, bytes]]:
    """Every single edit of a skeleton: (kind, certificate of the result), one per edit."""

class SkeletonLibrary:
    """The skeletons of a library's SMILES (position i is smiles[i]), searched by the exact
    analog walk (breadth first over every edit)."""

    def __init__(self, smiles: list[str], threads: int = 1, max_leaves: int = 100_000) -> None:
        """Reads and canonicalizes every SMILES on `threads` threads."""
    def __len__(self) -> int:
        """Number of distinct skeletons."""
    def failed(self) -> list[tuple[int, str]]:
        """Positions whose SMILES could not be read, with the reason."""
    def walk(
        self,
        n: int,
        bonds: list[tuple[int, int]],
        max_dist: int,
        limits: list[int] = ...,
        max_leaves: int = 100_000,
        stop_after: int = ...,
    ) -> tuple[list[tuple[int, list[int]]], list[tuple[str, int]]]:
        """Library molecules within max_dist edits, nearest first: ([(distance, positions)],
        [("edges", n), ("pruned", n), ("nodes", n), ("first_hit_ns", n), ("ns", n)]);
        stop_after: end with the distance at which that many molecules are found."""

class HitPaths:
    """The paths an analog walk found to each of its hits (in the order of its hit list), kept
    so that `AnalogIndex.element_changes` computes the element changes of the rows a caller
    keeps."""

    def __init__(self) -> None:
        """No paths (a walk returns the ones it found)."""
    def __len__(self) -> int:
        """Number of hits."""

class AnalogIndex:
    """The analog index of an open store (`molsift index STORE --analogs`): its distinct
    skeletons and their molecules, searched by the exact walk."""

    def __init__(self, path: _Path) -> None:
        """Opens the store at `path` (sizes checked) and its analog index."""
    def __len__(self) -> int:
        """Number of distinct skeletons."""
    def header_json(self) -> str:
        """The header (`analogs.json`) as JSON text."""
    def walk(
        self,
        n: int,
        bonds: list[tuple[int, int]],
        max_dist: int,
        limits: list[int] = ...,
        stop_after: int = ...,
        timeout_s: float | None = None,
        on_level: Callable[[int, list[tuple[int, bytes, list[int]]], HitPaths], object]
        | None = None,
        elements: list[str] | None = None,
        cancel: CancelFlag | None = None,
        probe: bool | None = None,
        threads: int = 1,
        peers: tuple[int, int, Callable[[bytes], list[bytes]]] | None = None,
    ) -> tuple[list[tuple[int, bytes, list[int]]], HitPaths, list[tuple[str, int]]]:
        """Indexed molecules within max_dist edits, nearest skeletons first: ([(distance, edits
        by kind as 6 bytes, positions)], the paths to each hit (none without elements, the
        query atoms' symbols), [(stat, value)]: edges, pruned, nodes, complete_to, timed_out,
        first_hit_ns, ns). stop_after: end with the distance at which that many molecules are
        found; timeout_s: stop there (timed_out 1); on_level(distance, hits, paths): called as
        each distance completes (then only an unfinished distance's hits return; a true answer
        ends the walk there, an exception it raises ends it with that error); cancel: the walk
        stops once it is set and raises Cancelled; probe (default: with stop_after): each
        distance's hits found, and on_level called,
        before its graphs are canonicalized for the next distance; threads: each distance
        divided among that many threads; peers (rank, size, exchange): other processes walking
        the same query over the same library with the same arguments at once, each distance
        divided among them too, every exchange(bytes) -> list[bytes] a collective (every
        walker's bytes in rank order: an allgather); every walker gets the whole walk's hits,
        its stats count its own work."""
    def element_changes(
        self, paths: HitPaths, rows: list[tuple[int, int]]
    ) -> tuple[list[int], list[bytes]]:
        """For each (hit, position) row: the atoms whose element differs from the query atom
        they come from, under the best isomorphism, over the hit's paths (-1 where unknown),
        and the edits by kind of the path that gives it (6 bytes)."""

class AnalogIndexUnion:
    """The analog indexes of a store set's shards searched by one walk, positions in the set
    (each shard's offset added): what a walk of every shard finds, for about the cost of one."""

    def __init__(self, parts: list[AnalogIndex], offsets: list[int]) -> None:
        """The shards' indexes in set order and each one's first set position; ValueError
        unless the offsets ascend, the set's positions fit 32 bits and the indexes were built
        alike (max_leaves). Makes the union's filter (every shard's WL hashes in one bitmap,
        the bounds' tables joined): a few ms for millions of molecules, so made once."""
    def walk(
        self,
        n: int,
        bonds: list[tuple[int, int]],
        max_dist: int,
        limits: list[int] = ...,
        stop_after: int = ...,
        timeout_s: float | None = None,
        on_level: Callable[[int, list[tuple[int, bytes, list[int]]], HitPaths], object]
        | None = None,
        elements: list[str] | None = None,
        cancel: CancelFlag | None = None,
        probe: bool | None = None,
        threads: int = 1,
        peers: tuple[int, int, Callable[[bytes], list[bytes]]] | None = None,
    ) -> tuple[list[tuple[int, bytes, list[int]]], HitPaths, list[tuple[str, int]]]:
        """As AnalogIndex.walk, over every shard at once, positions in the set."""
    def element_changes(
        self, paths: HitPaths, rows: list[tuple[int, int]]
    ) -> tuple[list[int], list[bytes]]:
        """As AnalogIndex.element_changes, rows by set position."""

def build_analog_index(
    path: _Path,
    threads: int = 1,
    max_leaves: int = 100_000,
    progress: Callable[[int], object] | None = None,
) -> tuple[str, int]:
    """Builds the analog index of the store at `path` on `threads` threads and renames it into
    the store; progress(done) is called now and then. Returns (header JSON, bytes written)."""

# cube files (crates/cube, glue crates/py/src/cube.rs): arrays cross as (address, bytes) of a
# C-contiguous numpy array the caller allocates and keeps alive for the call (molsift/cube/io.py)

def cube_header(path: _Path) -> dict[str, Any]:
    """The header of the cube file at `path`: comments, natoms_field, origin, nval_field,
    shape, shape_fields, axes, units, atoms [(Z, charge, x, y, z)], orbitals, nval,
    values_offset, header_lines, value_count, file_bytes, row_bytes / lines_per_row of the
    fixed layout (None when rows differ), and first_row_values / first_row_bytes, the first
    row as the layout test found it (None when the value area holds no value; bytes 0 when the
    file ends before that row's last line does or the line holds a value of the next row).
    InputError naming the line for a malformed header."""

def cube_read(
    path: _Path,
    addr: int,
    nbytes: int,
    dtype: str,
    threads: int = 1,
    slabs: int = 0,
    fixed: bool = True,
) -> dict[str, Any]:
    """Reads every value into the array memory at `addr` ("float64" or "float32"); returns
    fixed, row_bytes, slabs, threads, file_bytes. InputError naming file, line and byte."""

def cube_parse_block(
    path: _Path,
    data_addr: int,
    data_nbytes: int,
    base: int,
    first_line: int,
    addr: int,
    nbytes: int,
    dtype: str,
) -> None:
    """Parses exactly nbytes/itemsize values from a piece of value text (at file offset
    `base`, starting on line `first_line`, 0 when unknown) into the array at `addr`."""

def cube_count_tokens(addr: int, nbytes: int) -> int:
    """Whitespace-separated tokens in `nbytes` bytes at `addr`."""

def cube_count_newlines(addr: int, nbytes: int) -> int:
    """Line ends (`\\n`) in `nbytes` bytes at `addr`."""

def cube_write(
    path: _Path,
    header: dict[str, Any],
    addr: int,
    nbytes: int,
    dtype: str,
    layout: str = "cp2k",
    threads: int = 1,
    sync: bool = True,
) -> tuple[int, int]:
    """Writes a cube (temporary name, synced, renamed); returns (file bytes, header bytes)."""

def cube_format_value(value: float, layout: str = "cp2k") -> str:
    """One value in 13 columns as the writer formats it ("cp2k" or "gaussian")."""
