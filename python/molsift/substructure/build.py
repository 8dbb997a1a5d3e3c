"""Building a store's substructure index (`molsift index STORE --pattern`, and ingest by
default): the store's canonical SMILES are cut into block-aligned ranges, each range a task on
the worker engine (processes or MPI ranks); a task parses its molecules with RDKit (full
sanitization, as a reference loop would), computes each one's screening row (RDKit
PatternFingerprint, the features of `features.py`, the "parses" bit) and writes it straight
into the shared planes file (`crates/substructure`: `pwrite`s to its own words, under a
temporary name); the root then checksums the planes, writes the header, renames both into the
store and lists them in its manifest."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from typing import Any

import numpy as np

from .. import _core
from ..parallel import choose_executor
from ..progress import Progress
from ..store import open_core
from . import features
from .query import FEATURE_OFFSET, OK_BIT, PATTERN_BITS, TOTAL_BITS
from .records import screen_inputs

#: Molecules per task (a multiple of the planes' block of 256).
TASK_MOLECULES = 1 << 15
WORDS_PER_ROW = (TOTAL_BITS + 63) // 64


def meaning() -> dict:
    """What the index's bits are: checked against this build when a store is searched."""
    from rdkit import rdBase

    return {
        "pattern": {"kind": "rdkit-pattern", "bits": PATTERN_BITS, "rdkit": rdBase.rdkitVersion},
        "features": {"bits": features.FEATURE_BITS, "version": features.FEATURES_VERSION},
        "ok_bit": OK_BIT,
        "total_bits": TOTAL_BITS,
    }


_STORES: dict[str, Any] = {}
_PACKERS: list = []


def _packer():
    if not _PACKERS:
        from rdkit import Chem

        from ..chem import bitvect_packer

        probes = [
            Chem.PatternFingerprint(Chem.MolFromSmiles(s), fpSize=PATTERN_BITS)
            for s in ("c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "C[C@H](N)C(=O)O", "[Na+].[Cl-]")
        ]
        _PACKERS.append(bitvect_packer(PATTERN_BITS, probes))
    return _PACKERS[0]


def stored_mol(smiles: str):
    """The molecule of a stored canonical SMILES as the screen reads it (`chem.to_mol_unstereo`:
    what `Chem.MolFromSmiles` gives less its stereo perception, which sets nothing the graph
    records, features or pattern bits read); None when RDKit cannot parse it."""
    from ..chem import to_mol_unstereo

    return to_mol_unstereo(smiles)[0]


def rows_of(smiles: list[str], graphs: list | None = None) -> np.ndarray:
    """The screening rows (uint64, WORDS_PER_ROW words each) of molecules given as SMILES; a
    molecule RDKit cannot parse gets an empty row (it is never a candidate). With `graphs` (a
    list), each molecule's graph record (`records.screen_inputs`) is appended to it."""
    return rows_of_mols([stored_mol(s) for s in smiles], graphs)


def written_form(mol) -> tuple[bytes, str] | None:
    """What `rows_of_written` needs of a molecule `Chem.MolToSmiles` has just written (its
    stored canonical SMILES): its binary form and the order its atoms were written in (RDKit's
    `_smilesAtomOutputOrder`: the atoms as a parse of that SMILES numbers them). None where the
    stored SMILES must be parsed again instead: RDKit's rings of the molecule (its symmetrized
    smallest set of smallest rings) are not all of its relevant cycles, so that another atom
    order could give other rings (the ring counts a graph record holds). A canonical SMILES that
    RDKit could not parse back (none in MOSES) gets the row and record of the molecule it was
    written from, as its fingerprint always did, where a second parse gave it an empty row."""
    ri = mol.GetRingInfo()
    if not ri.AreRingFamiliesInitialized() or ri.NumRelevantCycles() != ri.NumRings():
        return None
    if not mol.HasProp("_smilesAtomOutputOrder"):  # not written (an empty molecule)
        return None
    return mol.ToBinary(), mol.GetProp("_smilesAtomOutputOrder")


def rows_of_written(smiles: list[str], forms: list, graphs: list | None = None) -> np.ndarray:
    """As `rows_of` for stored canonical SMILES, each made from the molecule the SMILES was
    written from (`forms[i]`: `written_form` of that molecule, its atoms put in the SMILES's
    order) instead of a second parse of the SMILES: ingest's workers. A molecule without a form,
    or whose form the Rust reader does not read, is parsed again from its SMILES."""
    maker = _row_maker()
    if maker is None:
        return rows_of(smiles, graphs)
    return _written_rows(maker, smiles, forms, graphs)


def _written_rows(maker, smiles: list[str], forms: list, graphs: list | None) -> np.ndarray:
    """`rows_of_written` by `maker`."""
    n = len(smiles)
    have = [i for i, f in enumerate(forms) if f is not None]
    data, records, missing = maker.rows([forms[i][0] for i in have], [forms[i][1] for i in have])
    rows = np.zeros((n, WORDS_PER_ROW), dtype="<u8")
    rows[have] = np.frombuffer(data, dtype="<u8").reshape(len(have), WORDS_PER_ROW)
    out: list = [None] * n
    for i, rec in zip(have, records):
        out[i] = rec
    again = sorted({i for i, f in enumerate(forms) if f is None} | {have[j] for j in missing})
    if again:
        theirs: list[bytes] = []
        rows[again] = _rows_made(maker, [stored_mol(smiles[i]) for i in again], theirs)
        for i, rec in zip(again, theirs):
            out[i] = rec
    if graphs is not None:
        graphs.extend(out)
    return rows


def rows_of_mols(mols: list, graphs: list | None = None) -> np.ndarray:
    """As `rows_of`, for RDKit molecules (None: not parsed) read from the stored canonical
    SMILES: what ingest's workers hand in, one parse of each stored SMILES. Each row and graph
    record is made in Rust from the molecule's binary form (`_core.ScreenRows`) when that
    agreed with `rows_from_parts` on the probe molecules; the molecules it does not read, by
    `rows_from_parts`."""
    maker = _row_maker()
    if maker is None:
        return rows_from_parts(mols, graphs)
    return _rows_made(maker, mols, graphs)


def _rows_made(maker, mols: list, graphs: list | None) -> np.ndarray:
    """`rows_of_mols` by `maker`, the molecules it does not read by `rows_from_parts`."""
    data, records, missing = maker.rows([None if m is None else m.ToBinary() for m in mols])
    rows = np.frombuffer(data, dtype="<u8").reshape(len(mols), WORDS_PER_ROW)
    if missing:
        rows = rows.copy()
        theirs: list[bytes] = []
        rows[missing] = rows_from_parts([mols[i] for i in missing], theirs)
        for i, rec in zip(missing, theirs):
            records[i] = rec
    if graphs is not None:
        graphs.extend(records)
    return rows


_MAKERS: list = []


def _row_maker():
    """`_core.ScreenRows` for this process, or None (logged) where its rows or records differ
    from `rows_from_parts`' on the probe molecules (or the pattern reader is not in use):
    checked once per process."""
    if not _MAKERS:
        from rdkit import Chem

        from .records import PROBES, agreement

        agree, patterns = agreement()
        maker = None
        if agree and patterns is not None:
            nhoh, bits = features.feature_thresholds()
            maker = _core.ScreenRows(
                features.counter_tables(), nhoh, bits, patterns, PATTERN_BITS,
                FEATURE_OFFSET, OK_BIT, WORDS_PER_ROW,
            )  # fmt: skip
            mols = [Chem.MolFromSmiles(s) for s in PROBES] + [None]
            ours: list[bytes] = []
            rows = _rows_made(maker, mols, ours)
            theirs: list[bytes] = []
            expected = rows_from_parts(mols, theirs)
            # and each probe from the molecule its canonical SMILES was written from
            written = [m for m in (Chem.MolFromSmiles(s) for s in PROBES) if m is not None]
            canonical = [Chem.MolToSmiles(m) for m in written]
            forms = [written_form(m) for m in written]
            from_written: list[bytes] = []
            parsed: list[bytes] = []
            if (
                ours != theirs
                or not np.array_equal(rows, expected)
                or not np.array_equal(
                    _written_rows(maker, canonical, forms, from_written),
                    rows_from_parts([stored_mol(s) for s in canonical], parsed),
                )
                or from_written != parsed
            ):
                import logging

                logging.getLogger("molsift").warning(
                    "the screening rows made in Rust differ from the vocabulary's own on the "
                    "probe molecules; computing them in Python (slower)"
                )
                maker = None
        _MAKERS.append(maker)
    return _MAKERS[0]


def rows_from_parts(mols: list, graphs: list | None = None) -> np.ndarray:
    """As `rows_of_mols`, each row put together here from `records.screen_inputs`' parts
    (graph record, screen facts, pattern fingerprint) and `features.molecule_features`."""
    from rdkit import Chem

    pack = _packer()
    records, facts, patterns = screen_inputs(mols)
    if graphs is not None:
        graphs.extend(records)
    rows = np.zeros((len(mols), WORDS_PER_ROW), dtype="<u8")
    as_bytes = rows.view(np.uint8)
    pattern_bytes = PATTERN_BITS // 8
    at_row, at_bit = [], []  # feature and "parses" bits, set at once below
    for i, mol in enumerate(mols):
        if mol is None:
            continue
        packed = patterns[i]
        if packed is None:
            packed = pack(Chem.PatternFingerprint(mol, fpSize=PATTERN_BITS))
        as_bytes[i, :pattern_bytes] = np.frombuffer(packed, dtype=np.uint8)
        found = features.molecule_features(mol, facts[i])
        at_row += [i] * (len(found) + 1)
        at_bit += [FEATURE_OFFSET + f for f in found]
        at_bit.append(OK_BIT)
    if at_row:
        bits = np.asarray(at_bit, dtype=np.uint64)
        words = (bits >> np.uint64(6)).astype(np.intp)
        np.bitwise_or.at(rows, (np.asarray(at_row), words), np.uint64(1) << (bits & np.uint64(63)))
    return rows


def run_pattern_task(task: dict) -> dict:
    """One range of molecules: rows computed and written into the planes file."""
    start = time.perf_counter()
    path = task["store"]
    core = _STORES.get(path)
    if core is None or core.manifest_json() != task["manifest"]:
        core = _STORES[path] = open_core(path)
        if core.manifest_json() != task["manifest"]:
            raise _core.StoreError(f"{path}: the store was replaced while its index was built")
    first, end = task["first"], task["end"]
    positions = np.arange(first, end, dtype="<i8")
    graphs: list[bytes] = []
    rows = rows_of(core.texts_at("smiles", positions.tobytes()), graphs)
    counts = _core.write_pattern_part(
        task["planes"], TOTAL_BITS, task["n"], first, rows.tobytes(), WORDS_PER_ROW
    )
    _write_graph_part(task["graphs"], first, graphs)
    return {"counts": counts, "molecules": end - first, "seconds": time.perf_counter() - start}


def _write_graph_part(directory: str, first: int, records: list[bytes]) -> None:
    """A task's graph records as one part file (`crates/substructure`'s `assemble_graphs`):
    written under a temporary name, then renamed, so a part is whole or absent."""
    write_graph_records(os.path.join(directory, f"{first:012d}.part"), records)


def write_graph_records(name: str, records: list[bytes]) -> None:
    """`records` as one graph part file at `name` (count, u32 lengths, the records), written
    under a temporary name and renamed."""
    lengths = np.fromiter((len(r) for r in records), dtype="<u4", count=len(records))
    tmp = name + ".tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(len(records).to_bytes(8, "little"))
            f.write(lengths.tobytes())
            f.write(b"".join(records))
    except OSError as exc:  # a full disk names the file
        raise OSError(exc.errno, exc.strerror, exc.filename or tmp) from exc
    os.replace(tmp, name)


class PatternParts:
    """Ingest's one pass: the substructure index of the one store, or of each shard of a set,
    written from the rows and graph records its workers computed (`crates/substructure`
    `fromparts`). For the one store the parts' rows (each `PART.rows.u64`, in task order, less
    the molecules `--dedupe` left out at `dropped`) are transposed once into dense planes in
    that order, the input ranks (`planes`, a temporary file in the work directory, on `threads`
    threads); then `write_index` writes the store's compact index from those planes and the
    parts' graph records, each read where it lies. For a set (`for_shards`) each shard's writer
    transposes only its own molecules' rows. Pickles small (paths and counts): MPI ranks
    writing shards each get it."""

    def __init__(
        self,
        planes: str | None,
        parts: list[str],
        dropped: list[int],
        threads: int = 1,
        total: int | None = None,
    ):
        self.planes, self.parts = planes, [os.fspath(p) for p in parts]
        self.dropped = [int(d) for d in dropped]
        self.total = total  # of slices (`for_shards`): the library's molecules
        self.counts = (
            None
            if planes is None
            else _core.pattern_planes_from_parts(
                planes, self.parts, self.dropped, TOTAL_BITS, WORDS_PER_ROW, threads=threads
            )
        )

    @classmethod
    def for_shards(
        cls, parts: list[str], dropped: list[int], total: int | None = None
    ) -> PatternParts:
        """A store set's: no planes of the whole library; each shard's `write_index` writes
        the planes of its own molecules' rows beside it and its index from them. With
        `total`, `parts` are one shard's slices (`sets.exchange`) of parts holding `total`
        molecules."""
        return cls(None, parts, dropped, total=total)

    def write_index(
        self,
        store: str,
        threads: int = 1,
        source: bytes | None = None,
        window_bytes: int | None = None,
    ) -> int:
        """The substructure index of the one store at `store` (written from the same parts:
        its input order gives each molecule's input rank), or of a shard whose molecules are
        the input ranks `source` (u32 little-endian), its graph blocks compressed a window of
        about `window_bytes` of records at a time (default `_core.PATTERN_WINDOW_BYTES`);
        returns the screen's bytes. For a set's shard (`for_shards`) the planes of its own
        molecules are written beside it first (`STORE.pattern-planes.tmp`, removed after)."""
        if self.planes is None:
            if source is None:
                raise ValueError("a set's pattern parts write shards' indexes only (source)")
            return _core.pattern_shard_index_from_parts(
                os.fspath(store), os.fspath(store) + ".pattern-planes.tmp", self.parts,
                self.dropped, TOTAL_BITS, WORDS_PER_ROW, json.dumps(meaning()), source,
                threads=threads, window_bytes=window_bytes or _core.PATTERN_WINDOW_BYTES,
                total=self.total,
            )  # fmt: skip
        return _core.pattern_index_from_parts(
            os.fspath(store), self.planes, self.counts, self.parts, self.dropped, WORDS_PER_ROW,
            json.dumps(meaning()), threads=threads, source=source,
            window_bytes=window_bytes or _core.PATTERN_WINDOW_BYTES,
        )  # fmt: skip

    def remove(self) -> None:
        """Removes the planes and the parts' rows and graph records."""
        if self.planes is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.planes)
        remove_part_files(self.parts)


#: what an ingest task writes beside its part store for the substructure index
PART_FILES = (".rows.u64", ".glen.u32", ".grec.bin")


def read_part_files(part: str) -> tuple[np.ndarray, np.ndarray]:
    """A part's screening rows (`WORDS_PER_ROW` uint64 words a molecule, mapped) and its
    molecules' graph record lengths (uint32), once they are checked against each other and
    against the size of its graph records (`PART_FILES`); StoreError naming the part when
    they do not agree."""
    lengths = np.fromfile(part + ".glen.u32", dtype="<u4")
    if os.path.getsize(part + ".rows.u64") == 0:  # np.memmap cannot map an empty file
        rows = np.zeros(0, dtype="<u8")
    else:
        rows = np.memmap(part + ".rows.u64", dtype="<u8", mode="r")
    size = os.path.getsize(part + ".grec.bin")
    if len(rows) != len(lengths) * WORDS_PER_ROW or int(lengths.sum(dtype=np.int64)) != size:
        raise _core.StoreError(f"{part}: its screening rows and graph records do not agree")
    return rows.reshape(-1, WORDS_PER_ROW), lengths


def remove_part_files(parts: list[str]) -> None:
    """Removes the rows and graph records (`PART_FILES`) of each part."""
    for part in parts:
        for ext in PART_FILES:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(part + ext)


class IndexFromParts:
    """A version-1 ingest (`ingest(..., version=1)`, old stores for tests): the substructure
    index of the staged store assembled from the rows and graph records its workers computed
    (each part's, in task order, less the molecules `--dedupe` left out), written
    block-aligned into the planes as they come; `finish()` writes the index into the store."""

    def __init__(self, store: str, n: int):
        self.store, self.n = store, n
        self.planes = os.fspath(
            _core.temporary_sibling(os.path.join(store, _core.PATTERN_FILES[1]), "tmp")
        )
        _core.create_pattern_planes(self.planes, TOTAL_BITS, n)
        self.graphs = os.fspath(
            _core.temporary_sibling(os.path.join(store, _core.PATTERN_FILES[2]), "parts")
        )
        os.mkdir(self.graphs)
        self.counts = np.zeros(TOTAL_BITS, dtype=np.int64)
        self.pending = np.zeros((0, WORDS_PER_ROW), dtype="<u8")
        self.first = 0  # store position of the first pending row
        self.next_graph = 0

    def add(self, rows: np.ndarray, records: list[bytes]) -> None:
        """The next molecules' rows and graph records, in store order."""
        write_graph_records(os.path.join(self.graphs, f"{self.next_graph:012d}.part"), records)
        self.next_graph += len(records)
        self.pending = np.concatenate([self.pending, rows]) if len(self.pending) else rows
        whole = len(self.pending) - len(self.pending) % _core.PATTERN_BLOCK
        if whole:
            self._write(self.pending[:whole])
            self.pending = self.pending[whole:]

    def _write(self, rows: np.ndarray) -> None:
        counts = _core.write_pattern_part(
            self.planes,
            TOTAL_BITS,
            self.n,
            self.first,
            np.ascontiguousarray(rows).tobytes(),
            WORDS_PER_ROW,
        )
        self.counts += np.asarray(counts, dtype=np.int64)
        self.first += len(rows)

    def finish(self) -> int:
        if len(self.pending):
            self._write(self.pending)
        if self.first != self.n or self.next_graph != self.n:
            raise _core.StoreError(
                f"{self.store}: {self.first} screening rows and {self.next_graph} graph records "
                f"for {self.n} molecules"
            )
        size = _core.finish_pattern_index(
            self.store,
            self.planes,
            TOTAL_BITS,
            [int(c) for c in self.counts],
            json.dumps(meaning()),
            self.graphs,
        )
        return size

    def discard(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.planes)
        shutil.rmtree(self.graphs, ignore_errors=True)


def build_pattern_index(
    store: str | os.PathLike,
    *,
    workers: int | None = None,
    executor: Any = None,
    progress: bool | None = None,
) -> int:
    """Writes the substructure index of the store at `store` on `workers` processes (default:
    all cores) or on `executor` (MPI ranks: every rank calls this); returns the bytes of its
    planes on the root (0 elsewhere)."""
    path = os.path.abspath(os.fspath(store))
    own = executor is None
    executor = executor or choose_executor(workers)
    planes = None
    try:
        plan: Any = None
        if executor.is_root:
            plan = _plan(path)
        plan = executor.broadcast(plan)
        if isinstance(plan, Exception):
            raise plan
        planes = plan["planes"]
        tasks = [
            {**plan, "first": a, "end": min(a + TASK_MOLECULES, plan["n"])}
            for a in range(0, plan["n"], TASK_MOLECULES)
        ]
        show = progress if executor.name != "mpi" else False
        with Progress("substructure index", total=plan["n"], unit="mol", enabled=show) as bar:
            results = executor.map_ordered(
                run_pattern_task, tasks, on_result=lambda r: bar.update(r["molecules"])
            )
        size = 0
        if executor.is_root:
            counts = np.zeros(TOTAL_BITS, dtype=np.int64)
            for r in results:
                counts += np.asarray(r["counts"], dtype=np.int64)
            size = _core.finish_pattern_index(
                path,
                planes,
                TOTAL_BITS,
                [int(c) for c in counts],
                json.dumps(meaning()),
                plan["graphs"],
                threads=workers or os.cpu_count() or 1,
            )
            planes = None
        executor.barrier()
        return size
    finally:
        if planes is not None and executor.is_root:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(planes)
            shutil.rmtree(plan["graphs"], ignore_errors=True)
        if own:
            executor.close()


def _plan(path: str) -> dict | Exception:
    """Root only: opens the store, creates the planes file under a temporary name."""
    try:
        core = open_core(path)
        manifest = core.manifest_json()
        n = json.loads(manifest)["counts"]["molecules"]
        planes_name = _core.PATTERN_FILES[1]
        planes = os.fspath(_core.temporary_sibling(os.path.join(path, planes_name), "tmp"))
        _core.create_pattern_planes(planes, TOTAL_BITS, n)
        graphs = os.fspath(
            _core.temporary_sibling(os.path.join(path, _core.PATTERN_FILES[2]), "parts")
        )
        os.mkdir(graphs)
        return {"store": path, "manifest": manifest, "n": n, "planes": planes, "graphs": graphs}
    except Exception as exc:  # handed to every rank
        return exc
