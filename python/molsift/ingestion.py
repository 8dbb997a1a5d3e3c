"""Ingest: input files -> tasks (byte-range slabs of plain files, each with its first line from
one pre-pass; record chunks handed out by one streaming decoder for gzip/zstd: `inputs.tasks`)
-> worker processes or MPI ranks that parse with RDKit and write one part store per task, with
its run (its molecules sorted by canonical SMILES) -> the runs merged k-way on the root
(`_core.PartRuns`: the store order, duplicates counted and with `--dedupe` left out; no
staging copy) -> the one store (format version 2, every index: `store.write_complete`) read
from the parts where they lie, in the work directory.

Input ranks are the parts' molecules in task order and the store order is by canonical SMILES
then input rank, so the store is identical whatever the number of workers or ranks. The store
appears only when complete (moved into place last)."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import shutil
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from . import _core
from .allocator import describe, loaded
from .inputs import ChunkPlanner, InputFile, PathLike, describe_input, slab_tasks
from .iostats import add_process_records, collecting, process_record
from .parallel import choose_executor, default_workers
from .progress import Phase, Progress
from .spec import FingerprintSpec
from .wording import plural

BATCH_RECORDS = 2048
#: rows of rejects.tsv `reject_reasons` reads (a run that stored nothing says its commonest)
REASON_ROWS = 100_000
#: Equal slabs per plain input and MPI rank (ranks take them round-robin) when --slabs is not given.
MPI_SLABS_PER_RANK = 4


@dataclass
class IngestReport:
    """What an ingest did: counts, time, bytes read, and the store written."""

    store: str
    records_in: int
    molecules: int
    rejected: int
    #: molecules whose canonical SMILES an earlier record already gave
    duplicates: int
    #: of those, left out of the store (`dedupe`) and listed in duplicates.tsv
    dropped: int
    seconds: float
    workers: int
    executor: str
    tasks: int
    bytes_in: int
    bytes_read: int
    read_calls: int
    #: the whole store on disk, every index included: every file its manifest lists (a set:
    #: its own files and every shard's), as `molsift info` counts them (`store.file_bytes`)
    store_bytes: int
    #: of those, the column index (`columns.*`, a version-1 store's)
    index_bytes: int = 0
    #: of those, the substructure index (`pattern.*`)
    pattern_bytes: int = 0
    #: of those, the analog index (`analogs.*`)
    analog_bytes: int = 0
    inputs: list[dict[str, Any]] = field(default_factory=list)
    allocator: str = "system"  # what the workers ran on (allocator.py), e.g. "tcmalloc"

    @property
    def read_amplification(self) -> float:
        return self.bytes_read / self.bytes_in if self.bytes_in else 0.0

    def _read_by(self) -> str:
        """ ", read by direct": how the inputs were read (every way their slabs took)."""
        ways = sorted({w for i in self.inputs for w in i.get("io", "").split("+") if w})
        return f", read by {'+'.join(ways)}" if ways else ""

    @property
    def molecules_per_second(self) -> float:
        return self.molecules / self.seconds if self.seconds else 0.0

    @property
    def molecule_bytes(self) -> int:
        """The store less the indexes counted apart: its molecules (ids, SMILES, fingerprints,
        the exact-match index) and its lists of rejected and left-out records."""
        return self.store_bytes - self.index_bytes - self.pattern_bytes - self.analog_bytes

    def summary(self) -> str:
        # none for a store of no molecules (it said "74,699 bytes, 0.0 bytes/molecule")
        per_mol = (
            f", {self.store_bytes / self.molecules:.1f} bytes/molecule" if self.molecules else ""
        )
        dropped = f" + duplicates left out {self.dropped:,}" if self.dropped else ""
        if not self.duplicates:
            dups = ""
        elif self.dropped:
            dups = " (same canonical SMILES as an earlier record; listed in duplicates.tsv)"
        else:
            dups = " (same canonical SMILES as an earlier record; stored, --dedupe keeps one)"
        parts = [
            f"molecules {self.molecule_bytes:,}",
            f"column index {self.index_bytes:,}" if self.index_bytes else "",
            f"substructure index {self.pattern_bytes:,}" if self.pattern_bytes else "",
            f"analog index {self.analog_bytes:,}" if self.analog_bytes else "",
        ]
        return (
            f"records in {self.records_in:,} = molecules stored {self.molecules:,}"
            f" + rejected {self.rejected:,}{dropped}\n"
            f"duplicates: {self.duplicates:,}{dups}\n"
            f"{self.seconds:.1f} s, {self.molecules_per_second:,.0f} molecules/s on "
            f"{plural(self.workers, 'worker')} ({self.executor}, allocator {self.allocator}), "
            f"{plural(self.tasks, 'task')}\n"
            f"read {self.bytes_read:,} bytes of {self.bytes_in:,} in "
            f"{plural(self.read_calls, 'call')}:"
            f" read amplification {self.read_amplification:.4f}x{self._read_by()}\n"
            f"store {self.store}: {self.store_bytes:,} bytes{per_mol}"
            f" ({' + '.join(p for p in parts if p)})"
        )


# ---------------------------------------------------------------- worker side

_FINGERPRINTERS: dict[FingerprintSpec, Any] = {}


def _fingerprinter(spec: FingerprintSpec):
    if spec not in _FINGERPRINTERS:
        from .chem import Fingerprinter

        _FINGERPRINTERS[spec] = Fingerprinter(spec)
    return _FINGERPRINTERS[spec]


def store_writer(path: str, spec: FingerprintSpec, overwrite: bool):
    """A Rust store writer for fingerprints of `spec` (the one place a spec becomes a store's)."""
    return _core.StoreWriter(path, spec.kind, spec.bits, spec.params_json(), overwrite)


def run_ingest_task(task: dict) -> dict:
    """Parses the records of one task with RDKit and writes them to one part store. Python's
    cycle collector is paused meanwhile: the task makes no cycles, and its batches' tuples
    and lists set it off every few hundred records (about 2% of a worker's time, perf)."""
    was = gc.isenabled()
    gc.disable()
    try:
        return _ingest_task(task)
    finally:
        if was:
            gc.enable()


def _ingest_task(task: dict) -> dict:
    from .chem import to_mol, to_smiles

    start = time.perf_counter()
    spec, inp = task["spec"], task["input"]
    fper = _fingerprinter(spec)
    writer = store_writer(task["part"], spec, True)
    if task["kind"] == "slab":  # absolute lines: the plan's pre-pass gave the first one
        src = inp.source(task["reader"], slab=tuple(task["slab"]), first_line=task["first_line"])
        batches: Any = iter(lambda: src.next_batch(BATCH_RECORDS), [])
    else:
        src = None
        batches = [task["records"]]
    # the substructure index's rows and graph records, in this same pass: from each molecule
    # with its atoms put in its stored SMILES's order (`written_form`), or where that cannot
    # stand for the stored SMILES's parse, from that SMILES parsed once more (the molecule every
    # search and its RDKit reference read)
    pattern = _PatternPart(task["part"]) if task.get("pattern", False) else None
    if pattern is not None:
        from .substructure.build import written_form
    for batch in batches:
        ids, smiles, lines, fps, forms = [], [], [], [], []
        for text, rid, line, offset, problem in batch:
            if problem is None:
                try:
                    mol, problem = to_mol(text, inp.sdf)
                    if mol is not None:
                        smi = to_smiles(mol)
                        fp = fper.packed(mol)
                        if pattern is not None:
                            forms.append(written_form(mol))
                        smiles.append(smi)
                        fps.append(fp)
                        ids.append(rid)
                        lines.append(line)
                        continue
                except Exception as exc:  # a bad record never stops the run
                    problem = f"error while preparing the molecule: {exc}"
            writer.add_reject(inp.path, line, offset, rid, problem)
        writer.add_molecules_packed(ids, smiles, lines, b"".join(fps))
        if pattern is not None:
            pattern.add(smiles, forms)
    read = src.counters() if src is not None else {}
    manifest = json.loads(writer.finish())
    # the part as a sorted run (its positions by canonical SMILES): what the root merges k-way
    _core.write_part_run(task["part"])
    if pattern is not None:
        pattern.close()
    return {
        "index": task["index"],
        "part": task["part"],
        "input": inp.path,
        "counts": manifest["counts"],
        "read": dict(read),
        "input_bytes": task["input_bytes"],
        "seconds": time.perf_counter() - start,
        "pid": os.getpid(),
        "allocator": loaded(),
        # the worker's I/O so far, for the run's log (molsift --io-log); the latest one counts
        "iostats": process_record("running") if task.get("iostats") else None,
    }


class _PatternPart:
    """A task's screening rows and graph records, appended batch by batch beside its part store
    (so a worker holds one batch of them at a time): `PART.rows.u64`, `PART.glen.u32` (each
    record's length), `PART.grec.bin` (the records)."""

    def __init__(self, part: str):
        # open for the task's life, closed by close() (a failed task's part is thrown away)
        from .substructure.build import PART_FILES

        self.files = [open(part + ext, "wb") for ext in PART_FILES]  # noqa: SIM115

    def add(self, smiles: list[str], forms: list) -> None:
        """The rows and records of one batch's canonical SMILES, from the molecules they were
        written from (`forms`: `substructure.build.written_form` of each)."""
        import numpy as np

        from .substructure.build import rows_of_written

        records: list[bytes] = []
        rows = rows_of_written(smiles, forms, records)
        self.files[0].write(rows.tobytes())
        self.files[1].write(np.fromiter(map(len, records), dtype="<u4", count=len(records)))
        self.files[2].write(b"".join(records))

    def close(self) -> None:
        for f in self.files:
            f.close()


#: molecules of a part's rows and graph records read at a time (a multiple of the index's
#: 256-molecule block): the root's memory for them stays bounded whatever the part's size
PATTERN_CHUNK = 1 << 16


def _pattern_chunks(part: str, chunk: int = PATTERN_CHUNK):
    """A part's rows (uint64, WORDS_PER_ROW each) and graph records, `chunk` molecules at a
    time: (first molecule of the chunk in the part, rows, records)."""
    import numpy as np

    from .substructure.build import read_part_files

    rows, lengths = read_part_files(part)
    with open(part + ".grec.bin", "rb") as fh:
        for start in range(0, len(lengths), chunk):
            mine = lengths[start : start + chunk]
            data = fh.read(int(mine.sum(dtype=np.int64)))
            ends = np.cumsum(mine, dtype=np.int64)
            starts = (ends - mine).tolist()
            records = [data[a:b] for a, b in zip(starts, ends.tolist())]
            yield start, np.array(rows[start : start + chunk]), records


def _index_from_parts(staged: str, results: list, dropped: list[int], n: int) -> int:
    """Root only: the staged store's substructure index from its parts' rows and graph
    records (in task order, without the molecules `--dedupe` left out), read a chunk at a time;
    returns its bytes."""
    import numpy as np

    from .substructure.build import IndexFromParts

    index = IndexFromParts(staged, n)
    try:
        drop = np.asarray(dropped, dtype=np.int64)
        base = 0
        for r in results:
            for start, rows, records in _pattern_chunks(r["part"]):
                first = base + start
                mine = drop[(drop >= first) & (drop < first + len(rows))] - first
                if len(mine):
                    keep = np.ones(len(rows), dtype=bool)
                    keep[mine] = False
                    rows = rows[keep]
                    records = [rec for rec, k in zip(records, keep.tolist()) if k]
                index.add(rows, records)
            base += os.path.getsize(r["part"] + ".glen.u32") // 4  # the part's molecules
        return index.finish()
    except BaseException:
        index.discard()
        raise


# ---------------------------------------------------------------- root side


def _tasks(
    plan: dict,
    workdir: str,
    common: dict,
    slabs: int | None,
    workers: int,
    chunk_records: int,
    stream_reads: dict[str, dict],
) -> Iterator[dict]:
    """Every task, in input order: the planned slabs of plain files (`plan["slabs"]`, made once
    on the root), and record chunks of compressed ones, decoded here.

    With `slabs` (MPI ranks take tasks round-robin) every chunk holds `chunk_records` records;
    without, chunks shrink towards the end of each file so that `workers` workers taking them
    from a queue finish together. Each task carries `input_bytes`, the bytes of the input file
    it accounts for (for progress); the decoders' read counters are left in `stream_reads`."""
    index = 0
    for inp in plan["inputs"]:
        base = {**common, "input": inp}
        if inp.compression == "none":
            planned = plan["slabs"][inp.path]
        else:
            chunks = ChunkPlanner(inp, common["reader"], chunk_records, None if slabs else workers)
            stream_reads[inp.path] = chunks.counters
            planned = (
                {"kind": "records", "records": records, "input_bytes": n} for records, n in chunks
            )
        for task in planned:
            part = os.path.join(workdir, f"part-{index:08d}")
            extra = {"input_bytes": task["slab"][1] - task["slab"][0]} if "slab" in task else {}
            yield {**base, **task, **extra, "index": index, "part": part}
            index += 1


def ingest(
    inputs: PathLike | Sequence[PathLike],
    output: PathLike,
    *,
    fingerprint: FingerprintSpec | None = None,
    workers: int | None = None,
    executor: Any = None,
    slabs: int | None = None,
    chunk_records: int = 10_000,
    buffer_size: int | None = None,
    max_record_bytes: int | None = None,
    io: str | None = None,
    format: str | None = None,
    header: bool | None = None,
    smiles_col: str | None = None,
    id_col: str | None = None,
    delimiter: str | None = None,
    overwrite: bool = False,
    dedupe: bool = False,
    shards: int | None = None,
    verify_count: bool = False,
    index: bool = True,
    pattern: bool = True,
    analogs: bool = True,
    progress: bool | None = None,
    version: int = 2,
    memory: int | None = None,
    scratch: PathLike | None = None,
) -> IngestReport | None:
    """Reads every record of `inputs`, parses it with RDKit, and writes the one store (format
    version 2) at `output`.

    Runs on `workers` local processes (default: all cores), or on MPI ranks when launched under
    `mpirun`. With `pattern` (the default) the store gets its substructure index (RDKit pattern
    fingerprints and atom features as compressed bit planes, and each molecule's graph,
    computed by the workers from the stored SMILES in the same pass); with `analogs` (the
    default) its analog index (`molsift analogs`; built on the root's cores). `version=1`
    writes the version-1 staging form instead (what `molsift upgrade` reads; for its tests),
    where `index` adds the version-1 column index. With `verify_count`, the
    inputs are also counted by an independent pass (reading them once more) and the ingest
    fails loudly if its own count differs. Molecules whose canonical SMILES an earlier record
    already gave are counted (`report.duplicates`); with `dedupe` only the first is stored and
    the others are listed in `duplicates.tsv` against it. With `shards`, the output is a store
    set (`molsift.sets`): that many shard stores, each a consecutive range of the one store's
    order, every index in each. `memory` (bytes; default `budget.default_memory()`: three
    quarters of what the machine or its cgroup allows) is what each process may hold while the
    store is written: the write buffers are cut from it, and a library whose store (or set)
    needs more is refused in one line (`budget.OverBudget`, naming the shards that fit) once
    the parts are merged, before the indexes are built. `scratch` (an existing directory on
    each node, e.g. a node-local disk) is where each MPI rank writing a set keeps the slices of
    records it sends and receives (`sets.exchange`; default: beside the set being written).
    Returns the report on the root (rank 0), None on other ranks."""
    from .budget import Budget, check, default_memory

    start = time.perf_counter()
    if memory is not None and (
        isinstance(memory, bool) or not isinstance(memory, int) or memory < 1
    ):
        raise ValueError(f"memory must be a number of bytes >= 1, not {memory!r}")
    budget = Budget(memory or default_memory())
    check(0, budget, None, 1, 1)  # what any store needs: refused before any work
    spec = fingerprint or FingerprintSpec()
    if shards is not None:
        from .sets.write import check_shards

        check_shards(shards)
        if version == 1:
            raise ValueError("a store set is written in the one store's format (version 2)")
    if scratch is not None and not os.path.isdir(scratch):
        raise ValueError(f"scratch directory {os.fspath(scratch)!r}: no such directory")
    paths = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    if not paths:
        raise ValueError("no input files")
    output = os.path.abspath(os.fspath(output))
    own_executor = executor is None
    executor = executor or choose_executor(workers)
    cleanup = None
    try:
        # MPI ranks take tasks round-robin: equal slabs; local workers share a queue: guided
        n_slabs = slabs or (MPI_SLABS_PER_RANK * executor.size if executor.name == "mpi" else None)
        plan = None
        if executor.is_root:
            fmt = {"format": format, "header": header, "smiles_col": smiles_col,
                   "id_col": id_col, "delimiter": delimiter}  # fmt: skip
            plan = _plan(paths, output, overwrite, fmt, n_slabs, executor.size)
        plan = executor.broadcast(plan)
        if isinstance(plan, Exception):
            raise plan
        input_files, workdir = plan["inputs"], plan["workdir"]
        # the store is built whole inside the work directory, every index included, and moved
        # into place last: a killed or failed ingest leaves no store that opens, and an
        # overwritten store stays as it was until the new one is complete
        staged = os.path.join(workdir, "store")
        local = workers if executor.name != "mpi" else None  # threads of the root's phases
        if executor.is_root:
            cleanup = workdir  # removed however the ingest ends (a kill -9 leaves it to the sweep)
        reader = {"buffer_size": buffer_size, "max_record_bytes": max_record_bytes, "io": io}
        stream_reads: dict[str, dict] = {}
        show = progress if executor.name != "mpi" else False  # ranks would draw over each other
        total = sum(i.bytes for i in input_files)
        common = {"spec": spec, "reader": reader, "iostats": collecting(), "pattern": pattern}
        with Progress("ingest", total=total, unit="B", enabled=show) as bar:
            tasks = _tasks(
                plan, workdir, common, n_slabs, executor.size, chunk_records, stream_reads
            )
            results = executor.map_ordered(
                run_ingest_task, tasks, on_result=lambda r: bar.update(r["input_bytes"])
            )
        report = None
        parts = None  # the one store's substructure index, from the workers' rows (root)
        runs = None  # the workers' parts merged as sorted runs (root, version 2)
        if executor.is_root:
            add_process_records(r.pop("iostats") for r in results if r.get("iostats"))
            options = {
                "workers": executor.size,
                "executor": executor.name,
                "slabs_per_plain_file": n_slabs or "guided",
                "chunk_records": chunk_records,
                "dedupe": dedupe,
                "reader": reader,
                "prepass": plan["prepass"],
                "memory": budget.memory,
            }
            with Phase("the parts merged" if shards is None else "the parts opened", show):
                report, dropped, runs = _finish(
                    results, input_files, staged, spec, options, stream_reads, start, version,
                    merge=shards is None,
                )  # fmt: skip
            report.store = output
            if version != 1:
                from .sets.write import MAX_SHARDS

                # the shards written at once on one machine share its memory: MPI ranks on one
                # node, or local workers
                at_once = executor.ranks_per_node if executor.name == "mpi" else local
                writers = min(at_once or default_workers(), shards or 1)
                check(report.molecules, budget, shards, writers, MAX_SHARDS)
            # the substructure index, from the rows and graph records the workers computed:
            # the one store's planes in input-rank order now, its index once it is written (a
            # set's shards each transpose their own rows)
            if pattern and version == 1:
                _index_from_parts(staged, results, dropped, report.molecules)
            elif pattern:
                from .substructure.build import PatternParts

                names = [r["part"] for r in results]
                if shards is None:
                    with Phase("the substructure planes", show):
                        parts = PatternParts(
                            os.path.join(workdir, "pattern.planes"), names, dropped,
                            threads=local or default_workers(),
                        )  # fmt: skip
                else:  # made by write_set once the shards' merges found the duplicates; each
                    # shard's writer transposes its own molecules' rows

                    def parts(dropped):
                        return PatternParts.for_shards(names, dropped)

            if version == 1:
                remove_parts([r["part"] for r in results])
                if index:
                    _core.build_column_index(staged)
                if analogs:
                    from .analogs.search import index_analogs

                    index_analogs(staged, local)
            elif shards is None:
                from .store import write_complete

                write_complete(
                    runs, staged, threads=local or default_workers(), workers=local,
                    pattern=pattern, analogs=analogs, progress=show, pattern_parts=parts,
                    budget=budget,
                )  # fmt: skip
        if shards is not None:
            # a store set: every rank (or worker) writes the shards it takes, in parallel
            from .sets.write import write_set

            manifest = write_set(
                runs, staged, shards,
                threads=local or default_workers(), workers=local, pattern=pattern,
                analogs=analogs, progress=show, executor=executor, pattern_parts=parts,
                budget=budget, scratch=scratch,
            )  # fmt: skip
            if executor.is_root:  # the duplicates, known once each shard merged its range
                counts = manifest["counts"]
                report.molecules = counts["molecules"]
                report.duplicates = counts.get("duplicates", 0)
                report.dropped = counts.get("dropped", 0)
                parts = None  # write_set removed what it made
        if executor.is_root:
            if parts is not None:
                parts.remove()
            if version != 1:
                runs = None  # released when the store was written; the parts go now
                remove_parts([r["part"] for r in results], pattern_files=parts is None)
            _sizes(staged, report)
            report.seconds = time.perf_counter() - start
            if verify_count:
                _verify_count(input_files, report)
        executor.barrier()
        if executor.is_root:
            _core.swap_into_place(staged, output, overwrite)
        executor.barrier()
        return report
    finally:
        if own_executor:
            executor.close()
        if cleanup:
            shutil.rmtree(cleanup, ignore_errors=True)


def _sizes(path: str, report: IngestReport) -> None:
    """The report's byte counts from the written store's manifests (a set's and its shards'):
    the whole store (`store.file_bytes`, what `molsift info` shows) and, of it, the column
    index (`columns.*`, version 1), the substructure index (`pattern.*`) and the analog index
    (`analogs.*`)."""
    from .sets import is_set
    from .sets.manifest import read_manifest
    from .store import file_bytes, index_bytes

    # the set manifest checked as a set's opening checks it; a store's (of version 1 too, which
    # no opening reads but `upgrade`'s) and each shard's as written
    manifest = read_manifest(path) if is_set(path) else _read_json(path, "manifest.json")
    shards = [_read_json(path, rec["name"], "manifest.json") for rec in manifest.get("shards", [])]
    files = file_bytes(manifest, shards)
    report.store_bytes = sum(files.values())
    report.index_bytes = index_bytes(files, "columns.")
    report.pattern_bytes = index_bytes(files, "pattern.")
    report.analog_bytes = index_bytes(files, "analogs.")


def _read_json(*parts: str) -> Any:
    with open(os.path.join(*parts), "rb") as fh:
        return json.loads(fh.read())


def _plan(
    paths: list, output: str, overwrite: bool, fmt: dict, slabs: int | None, workers: int
) -> dict | Exception:
    """Root only: checks inputs and output, cuts plain inputs into slabs with their first lines
    (one pre-pass over each, with all cores), makes the work directory. Errors are returned (and
    broadcast) rather than raised, so every rank raises the same error."""
    try:
        files = [describe_input(p, **fmt) for p in paths]
        _check_output(output, overwrite, files)
        parent = os.path.dirname(output) or "."
        if not os.path.isdir(parent):
            raise _core.StoreError(f"{parent}: output directory does not exist")
        _core.sweep_leftovers(output)  # what killed runs into this output left behind
        t0, planned = time.perf_counter(), {}
        for inp in files:
            if inp.compression == "none" and inp.path not in planned:
                planned[inp.path] = slab_tasks(inp, slabs, workers, default_workers())[0]
        prepass = {
            "bytes": sum(i.bytes for i in files if i.compression == "none"),
            "seconds": round(time.perf_counter() - t0, 4),
        }
        workdir = os.fspath(_core.temporary_sibling(output, "ingest"))
        os.makedirs(workdir)
        return {"inputs": files, "workdir": workdir, "slabs": planned, "prepass": prepass}
    except Exception as exc:  # handed to every rank
        return exc


def _check_output(output: str, overwrite: bool, inputs: Sequence[InputFile]) -> None:
    """The output must be new, or a store `--overwrite` may replace that holds no input."""
    from .store import check_store_output

    check_store_output(output, overwrite, [inp.path for inp in inputs])


def remove_parts(parts: list[str], pattern_files: bool = True) -> None:
    """The part stores at `parts` and their runs (the staged store is in the work directory
    too: only the parts go), what is already gone skipped; with `pattern_files` their rows and
    graph records too (else `PatternParts.remove` takes them, once the index is written from
    them)."""
    from .substructure.build import remove_part_files

    for part in parts:
        shutil.rmtree(part, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(part + _core.PART_RUN_EXT)
    if pattern_files:
        remove_part_files(parts)


def _finish(
    results, inputs, output, spec, options, stream_reads, start, version, merge=True
) -> tuple[IngestReport, list[int], Any]:
    """Root only: the parts' runs merged k-way (`_core.PartRuns`: what the one store is written
    from; for version 1, the version-1 store at `output` is written from them in input order);
    returns the report, the positions (among all the parts' molecules) that `--dedupe` left
    out, and the merged runs (None for version 1). A store set's (`merge=False`) are only
    opened: each shard merges its own range (`sets.write`), which counts the duplicates."""
    by_input = []
    for inp in inputs:
        mine = [r for r in results if r["input"] == inp.path]
        reads = (
            [r["read"] for r in mine]
            if inp.compression == "none"
            else [stream_reads.get(inp.path, {})]
        )
        b = sum(r.get("bytes_read", 0) for r in reads)
        c = sum(r.get("read_calls", 0) for r in reads)
        by_input.append(
            {
                **asdict(inp),
                "bytes_read": b,
                "read_calls": c,
                "read_amplification": b / inp.bytes if inp.bytes else 0.0,
                "io": "+".join(sorted({r["io"] for r in reads if r.get("io")})),
                "records_in": sum(r["counts"]["records_in"] for r in mine),
            }
        )
    provenance = {
        "inputs": by_input,
        **options,
        "tasks": len(results),
        # the workers' pass (parse, fingerprints, the parts), before the merge and the write
        # of the one store: the whole ingest's time is the report's
        "parse_seconds": round(time.perf_counter() - start, 3),
    }
    runs = _core.PartRuns(
        [r["part"] for r in results], spec.kind, spec.bits, spec.params_json(),
        dedupe=options["dedupe"], provenance_json=json.dumps(provenance),
        merge=merge or version == 1,
    )  # fmt: skip
    counts, dropped = json.loads(runs.counts_json()), runs.dropped()
    if version == 1:
        runs.write_version_1(output)
        runs.release()
        runs = None
    report = IngestReport(
        store=output,
        records_in=counts["records_in"],
        molecules=counts["molecules"],
        rejected=counts["rejected"],
        duplicates=counts["duplicates"],
        dropped=counts.get("dropped", 0),
        seconds=time.perf_counter() - start,
        workers=options["workers"],
        executor=options["executor"],
        tasks=len(results),
        bytes_in=sum(i.bytes for i in inputs),
        bytes_read=sum(i["bytes_read"] for i in by_input),
        read_calls=sum(i["read_calls"] for i in by_input),
        store_bytes=0,  # the store's, once written with its indexes (`_sizes`)
        inputs=by_input,
        allocator=describe(r.get("allocator", "system") for r in results) or loaded(),
    )
    return report, dropped, runs


def reject_reasons(store: PathLike, rows: int = REASON_ROWS) -> Counter[str]:
    """The reasons of the first `rows` records listed in the rejects.tsv of `store` (a set's
    lists every shard's), counted: what a run that stored no molecule says of why. Empty when
    the file cannot be read as the table it should be."""
    import csv
    import itertools

    try:
        with open(os.path.join(os.fspath(store), "rejects.tsv"), encoding="utf-8",
                  errors="replace", newline="") as fh:  # fmt: skip
            table = csv.reader(fh, delimiter="\t")
            header = next(table, [])
            at = header.index("reason") if "reason" in header else len(header) - 1
            return Counter(row[at] for row in itertools.islice(table, rows) if 0 <= at < len(row))
    except (OSError, csv.Error):  # a field over csv's limit (a long id): no reason to say
        return Counter()


def _verify_count(inputs: Sequence[InputFile], report: IngestReport) -> None:
    """Counts the inputs again, independently of the readers (at memory speed for plain files,
    one more decoding pass for gzip/zstd), and fails loudly if the ingest saw a different number."""
    threads = default_workers()
    expected = sum(
        _core.count_records(i.path, i.format, threads=threads, header=i.header)["records"]
        for i in inputs
    )
    if expected != report.records_in:
        raise RuntimeError(
            f"internal error: the inputs hold {plural(expected, 'record')} but the ingest saw "
            f"{report.records_in:,}; please report this with the input file"
        )
