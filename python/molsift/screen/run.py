"""`screen()`: plans a run (or picks up a killed one with `resume`), runs it on local worker
processes or MPI ranks, checks that every record is accounted for, and renames the results
into place. The only module that knows the order of these steps."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

from .. import _core
from ..allocator import describe
from ..inputs import ChunkPlanner, InputFile, describe_input, slab_tasks
from ..iostats import (
    add_job_info,
    add_process_records,
    all_records,
    file_size,
    job_log,
    totals,
    write_file,
    write_log,
)
from ..parallel import check_workers, default_workers, launched_under_mpi
from ..parallel.mpi import MPIExecutor
from ..progress import Progress
from ..wording import plural, size_text
from .digest import first_changed_block, input_digests
from .journal import consolidate, new_state
from .layout import PLAN_VERSION, RunFiles, read_json, write_json_atomic
from .report import amplification_text, io_text


class ScreenError(ValueError):
    """A screening run cannot start or finish; the message says why and what to do."""


# the run options `screen` takes as None when not given: these in a new run, the plan's in a
# resumed one (which refuses a given value that differs from the plan's: `_check_same_options`)
WRITERS = 1
WRITE_BUFFER = 1 << 20
CHUNK_RECORDS = 2000


def make_plan(
    files: RunFiles,
    library: str,
    scorer,
    *,
    slabs: int | None,
    writers: int,
    write_buffer: int,
    reader: dict,
    standardize: bool,
    chunk_records: int,
    threads: int,
    fmt: dict,
) -> dict:
    inp = describe_input(os.path.abspath(library), **fmt)  # --resume may come from another cwd
    if inp.format == "csv":  # its header read now: a column it lacks is refused before the run
        inp.source(reader)  # (it failed every worker, and --resume could not get past it)
    columns = ["id", "smiles", *scorer.columns] + (
        ["pose_offset", "pose_bytes"] if scorer.has_poses else []
    )
    plan: dict[str, Any] = {
        "version": PLAN_VERSION,
        "input": asdict(inp),
        "source_name": library,
        "output": files.output,
        "scorer": scorer.name,
        "scorer_options": scorer_options(scorer),
        "columns": columns,
        "has_poses": scorer.has_poses,
        "writers": writers,
        "write_buffer": write_buffer,
        "reader": reader,
        "standardize": standardize,
        "chunk_records": chunk_records,
        "tasks": None,
        "prepass": None,
        "estimated_records": None,
        # what --resume checks the library against: an edit that keeps size and mtime too
        "input_digest": input_digests(inp.path, inp.bytes, threads),
    }
    if inp.compression == "none":
        t0 = time.perf_counter()
        tasks, newlines = slab_tasks(inp, slabs, threads, threads)
        plan["prepass"] = {"bytes": inp.bytes, "seconds": round(time.perf_counter() - t0, 4)}
        plan["tasks"] = [{"index": i, **t} for i, t in enumerate(tasks)]
        if inp.format != "sdf":
            plan["estimated_records"] = max(0, newlines - (1 if inp.header else 0))
    return plan


def _start(
    files: RunFiles,
    library: str,
    scorer,
    resume: bool,
    overwrite: bool,
    plan_args: dict,
    given: dict,
):
    """Root only: a fresh run or the state of the one to resume (consolidated), whose plan's
    options the `given` ones (None: not given) must equal. Returns (plan, state)."""
    exists = os.path.exists(files.state)
    if exists and not resume and not overwrite:
        raise ScreenError(
            f"{files.run_dir}: a run already exists for {files.output} "
            "(pass --resume to finish it, or --overwrite to start again)"
        )
    if resume and not exists:
        raise ScreenError(f"{files.run_dir}: no run to resume (start one without --resume)")
    if not exists or (overwrite and not resume):
        outputs = (files.output, files.rejects, files.rows_partial, files.rejects_partial)
        for path in (*outputs, files.poses):
            if os.path.exists(path) and os.path.exists(library) and os.path.samefile(path, library):
                raise ScreenError(
                    f"{path}: is the library being screened; choose another output"
                )  # --overwrite removed the library, then said it did not exist
        for path in outputs[:2]:
            if os.path.exists(path) and not overwrite:
                raise ScreenError(
                    f"{path}: already exists (choose another output or pass --overwrite)"
                )
        parent = os.path.dirname(files.output) or "."
        if not os.path.isdir(parent):
            raise ScreenError(f"{parent}: output directory does not exist")
        files.check_run_dir()
        # the input is checked (and planned) before anything of an earlier run is removed: with
        # --overwrite, a mistyped library name deleted the earlier results, then stopped
        plan = make_plan(files, library, scorer, **plan_args)
        plan["slabs"] = given["slabs"]  # as asked (None: the planner's), for --resume to check
        files.remove_run_dir()  # an earlier run's, or a start's that did not get far
        for path in (*outputs, files.poses):
            if os.path.exists(path):
                os.remove(path)
        os.makedirs(files.timeline_dir)
        header = ",".join(plan["columns"]) + "\n"
        write_file(files.rows_partial, header.encode())
        write_file(files.rejects_partial, _core.REJECTS_HEADER.encode())
        if scorer.has_poses:
            write_file(files.poses, b"")
        write_json_atomic(files.plan, plan)
        write_json_atomic(files.state, new_state(len(header.encode()), len(_core.REJECTS_HEADER)))
    else:
        plan = read_json(files.plan)
        _check_same_run(plan, files, library, scorer, plan_args["threads"])
        _check_same_options(plan, given)
        if read_json(files.state).get("complete"):
            _rename_results(files)
            return plan, read_json(files.state)
    os.makedirs(files.timeline_dir, exist_ok=True)
    return plan, consolidate(files)


def writers_note(writers: int, size: int, unit: str) -> str | None:
    """What is said when the run has more writer groups than `size` workers or MPI ranks
    (`unit`), each group writing for one or more of them: the run takes as many groups as
    there are (`run_local`, `run_mpi`), which only the report showed. None when they fit."""
    if writers <= size:
        return None
    return f"--writers {writers:,} > {plural(size, unit)}: using {plural(size, 'writer group')}"


def scorer_options(scorer) -> dict[str, Any]:
    """The scorer's options (`Scorer.options`) as the plan's JSON reads them back."""
    return json.loads(json.dumps(scorer.options()))


def _check_same_scorer_options(plan: dict, scorer) -> None:
    """Refuses a resume whose scorer was given other options than the run's (other
    references, another rule, another receptor): the rest of the library would be scored
    otherwise than its start, in one result file. Plans written before they held the options
    are not checked."""
    if "scorer_options" not in plan:
        return
    was, now = plan["scorer_options"], scorer_options(scorer)
    if was == now:
        return

    def shown(value: Any) -> str:
        if isinstance(value, list) and len(value) > 3:
            return f"{len(value):,} items"
        text = json.dumps(value)
        return text if len(text) <= 60 else f"{text[:60]}... ({len(text):,} characters)"

    differ = [
        f"{key} {shown(now.get(key))} (the run's: {shown(was.get(key))})"
        for key in sorted(set(was) | set(now))
        if was.get(key) != now.get(key)
    ]
    raise ScreenError(
        f"--resume: the run's scorer {plan['scorer']!r} was given other options: "
        + "; ".join(differ)
        + "; give the run's, or start again with --overwrite"
    )


def _check_same_run(plan: dict, files: RunFiles, library: str, scorer, threads: int) -> None:
    inp = plan["input"]
    wanted = os.path.abspath(library)
    if os.path.isabs(inp["path"]):
        same = inp["path"] == wanted
    else:  # a plan written before paths were made absolute: relative to the output's or this cwd
        same = wanted in (
            os.path.abspath(os.path.join(os.path.dirname(files.output), inp["path"])),
            os.path.abspath(inp["path"]),
        )
        if same:
            inp["path"] = wanted
    if not same:
        raise ScreenError(f"--resume: this run screens {inp['path']}, not {wanted}")
    if not os.path.isfile(library) or file_size(library) != inp["bytes"]:
        raise ScreenError(
            f"--resume: {library} changed size since the run started "
            f"({inp['bytes']} bytes then); start a new run"
        )
    _check_same_bytes(plan, library, threads)
    if plan["scorer"] != scorer.name or plan["columns"][2 : 2 + len(scorer.columns)] != list(
        scorer.columns
    ):
        raise ScreenError(
            f"--resume: the run used scorer {plan['scorer']!r} with columns "
            f"{plan['columns']}; give the same scorer and options"
        )
    _check_same_scorer_options(plan, scorer)


# the options a run is planned with, as the command line names them
RUN_OPTIONS = {
    "writers": "--writers",
    "write_buffer": "--write-buffer",
    "read_buffer": "--read-buffer",
    "max_record_bytes": "--max-record-bytes",
    "io": "--io",
    "slabs": "--slabs",
    "chunk_records": "--chunk-records",
    "standardize": "--standardize",
    "format": "--format",
    "header": "--header",
    "smiles_col": "--smiles-col",
    "id_col": "--id-col",
    "delimiter": "--delimiter",
}
_NOT_RECORDED = object()


def planned_options(plan: dict) -> dict[str, Any]:
    """The run options `plan` was made with (RUN_OPTIONS' keys), defaults filled in as the run
    took them: the reader's (the core's), and `slabs` None for the planner's own tasks."""
    inp, reader = plan["input"], plan["reader"]
    line_max = _core.DEFAULT_MAX_LINE_RECORD_BYTES
    return {
        "writers": plan["writers"],
        "write_buffer": plan["write_buffer"],
        "read_buffer": reader["buffer_size"] or _core.DEFAULT_READ_BUFFER,
        "max_record_bytes": reader["max_record_bytes"]
        or (_core.DEFAULT_MAX_SDF_RECORD_BYTES if inp["format"] == "sdf" else line_max),
        "io": reader["io"] or "auto",
        "slabs": plan.get("slabs", _NOT_RECORDED),  # plans before the option was kept
        "chunk_records": plan["chunk_records"],
        "standardize": bool(plan.get("standardize", False)),
        **{k: inp.get(k) for k in ("format", "header", "smiles_col", "id_col", "delimiter")},
    }


def _option_text(key: str, value: Any) -> str:
    """How the command line writes option `key` with `value`: `--writers 2`, `--write-buffer
    1MiB`, `--standardize` or `no --standardize`, `--no-header`, `--delimiter tab`."""
    option = RUN_OPTIONS[key]
    if value is _NOT_RECORDED:
        return f"{option} not recorded in its plan"
    if key == "header":
        return "--header" if value else "--no-header"
    if isinstance(value, bool):
        return option if value else f"no {option}"
    if value is None:
        return f"no {option} (the default)"
    if key in ("write_buffer", "read_buffer", "max_record_bytes"):  # 1MiB, as the help writes
        return f"{option} {size_text(value)}"
    return f"{option} {'tab' if value == chr(9) else value}"


def _check_same_options(plan: dict, given: dict) -> None:
    """Refuses, in one line naming each option and both values, the given run options (not
    None) that differ from those the run was planned with: a resumed run goes on with its plan's
    (the writer groups, buffers, tasks, reader and format its journals and rows come from), and
    took a different value silently. -j, --fsync, -q and --json are the resume's own."""
    planned = planned_options(plan)
    differ = [
        f"{_option_text(key, value)} (the run's: {_option_text(key, planned[key])})"
        for key, value in given.items()
        if value is not None and key in planned and value != planned[key]
    ]
    if differ:
        raise ScreenError(
            "--resume: a resumed run keeps the options it was started with: "
            + ", ".join(differ)
            + "; leave them out (or give the run's), or start again with --overwrite"
        )


def _check_same_bytes(plan: dict, library: str, threads: int) -> None:
    """Refuses a library whose bytes are not those the run was planned on (a plan written
    before plans held digests is checked by its size only)."""
    recorded = plan.get("input_digest")
    if recorded is None:
        return
    changed = first_changed_block(library, plan["input"]["bytes"], recorded, threads)
    if changed is not None:
        start = changed * recorded["block"]
        end = min(start + recorded["block"], plan["input"]["bytes"])
        raise ScreenError(
            f"--resume: {library} changed since the run started (same size, but bytes "
            f"{start:,}..{end:,} differ from those the run read); resuming would mix old and "
            "new records: start a new run (--overwrite)"
        )


def _stream_chunks(plan: dict, progress: dict, keep, counters: dict) -> Iterator[tuple]:
    """Record chunks of a compressed input, decoded by one reader: (task, progress) for the
    chunks `keep(i)` selects that are not done. Decoder counters are left in `counters`."""
    chunks = ChunkPlanner(InputFile(**plan["input"]), plan["reader"], plan["chunk_records"])
    for i, (records, _) in enumerate(chunks):
        counters.update(chunks.counters)
        prog = progress.get(str(i))
        if keep(i) and not (prog and prog["d"]):
            yield {"index": i, "kind": "records", "records": records}, prog
    counters.update(chunks.counters)


def screen(
    library: str,
    output: str,
    scorer,
    *,
    workers: int | None = None,
    writers: int | None = None,
    write_buffer: int | None = None,
    read_buffer: int | None = None,
    max_record_bytes: int | None = None,
    io: str | None = None,
    slabs: int | None = None,
    chunk_records: int | None = None,
    standardize: bool | None = None,
    resume: bool = False,
    overwrite: bool = False,
    run_dir: str | None = None,
    fsync: bool = False,
    progress: bool | None = None,
    use_mpi: bool | None = None,
    **fmt,
) -> dict | None:
    """Screens every record of `library` with `scorer` into the CSV `output` (one row per
    molecule, rejects in `output.rejects.tsv`). Returns the run report on the root, None on the
    other MPI ranks. With `resume`, finishes a run that was killed.

    The run options (`writers`, `write_buffer`, the reader's, `slabs`, `chunk_records`,
    `standardize` and the format's in `fmt`) are planned once: None, the default (WRITERS,
    WRITE_BUFFER, CHUNK_RECORDS, no standardizing; the reader's and planner's own), takes the
    plan's in a resumed run, and a value given to a resume that differs from the plan's is
    refused (ScreenError naming it and both values). `workers` and `fsync` are each attempt's."""
    start = time.time()
    check_workers(workers)
    if workers:  # before the run's files are made: -j 100000 left a run directory behind
        from ..parallel.processes import check_worker_count

        check_worker_count(workers)
    # 0 slabs or records per chunk was taken silently (a gzip input then screened nothing), a
    # negative number was the Rust core's OverflowError
    for name, n in (("writers", writers), ("slabs", slabs), ("chunk_records", chunk_records)):
        check_workers(n, name)
    if resume and overwrite:  # resume won, silently
        raise ScreenError(
            "--resume finishes the earlier run and --overwrite starts again: give one of them"
        )
    files = RunFiles.of(output, run_dir)
    output = files.output
    mpi = launched_under_mpi() if use_mpi is None else use_mpi
    ranks = MPIExecutor() if mpi else None  # the job's communicator, its abort
    comm = ranks.comm if ranks else None
    size = comm.Get_size() if comm else (workers or default_workers())
    rank = comm.Get_rank() if comm else 0
    local = max(1, workers or 1) if comm else 1  # worker processes per rank under MPI (-j)
    plan_args = {
        "slabs": slabs or (size * local if comm else None),
        "writers": WRITERS if writers is None else writers,
        "write_buffer": WRITE_BUFFER if write_buffer is None else write_buffer,
        "standardize": bool(standardize),
        "reader": {"buffer_size": read_buffer, "max_record_bytes": max_record_bytes, "io": io},
        "chunk_records": CHUNK_RECORDS if chunk_records is None else chunk_records,
        "threads": default_workers() if comm else size,
        "fmt": fmt,
    }
    given = {
        "writers": writers,
        "write_buffer": write_buffer,
        "read_buffer": read_buffer,
        "max_record_bytes": max_record_bytes,
        "io": io,
        "slabs": slabs,
        "chunk_records": chunk_records,
        "standardize": standardize,
        **fmt,
    }
    setup: Any = None
    if rank == 0:
        try:
            setup = _start(files, library, scorer, resume, overwrite, plan_args, given)
        except Exception as exc:  # every rank raises it
            setup = exc
    if comm:
        setup = comm.bcast(setup, root=0)
    if isinstance(setup, Exception):
        raise setup
    plan, state = setup
    if state.get("complete"):
        return read_json(files.report) if rank == 0 else None
    note = writers_note(plan["writers"], size, "MPI rank" if comm else "worker")
    if note and rank == 0:
        print(f"molsift: note: {note}", file=sys.stderr)

    stream: dict[str, Any] = {}
    prog = state["progress"]
    if plan["tasks"] is not None:
        all_tasks = [(t, prog.get(str(t["index"]))) for t in plan["tasks"]]
        mine = [
            (t, p)
            for t, p in all_tasks
            if not (p and p["d"]) and (comm is None or t["index"] % size == rank)
        ]
    else:
        mine = _stream_chunks(
            plan, prog, (lambda i: i % size == rank) if comm else (lambda i: True), stream
        )

    if comm:
        from .mpi import run_mpi

        stats = run_mpi(comm, plan, files, state, scorer, mine, fsync, local_workers=local)
        ranks.close()
        if rank != 0:
            return None
        executor = "mpi"
    else:
        from .local import run_local

        total = plan["estimated_records"]
        if total is not None:
            total = max(0, total - sum(p["k"] for p in prog.values()))
        with Progress("screen", total=total, unit="mol", enabled=progress) as bar:
            stats = run_local(plan, files, state, scorer, iter(mine), size, fsync, bar)
        executor = "processes"
    return _finish(files, plan, stats, stream, start, executor, size * local)


def _finish(
    files: RunFiles, plan: dict, stats: dict, stream: dict, start: float, executor: str, size: int
) -> dict:
    """Root only: folds the journals, checks completeness and counts, renames the results."""
    state = consolidate(files)
    prog = state["progress"]
    if plan["tasks"] is not None:
        expected = [str(t["index"]) for t in plan["tasks"]]
    else:
        expected = [str(i) for i in range(stream.get("chunks", 0))]
    missing = [t for t in expected if not prog.get(t, {}).get("d")]
    if missing:
        raise ScreenError(
            f"internal error: tasks {missing[:5]} did not finish; run again with --resume"
        )
    totals = state["totals"]
    handled = sum(prog[t]["k"] for t in expected)
    if handled != totals["rows"] + totals["rejects"]:
        raise ScreenError(
            f"internal error: {handled} records handled but {totals['rows']} rows "
            f"+ {totals['rejects']} rejects committed"
        )
    lines = _core.count_newlines(files.rows_partial, 0, state["ends"]["rows"])
    if lines != totals["rows"] + 1:
        raise ScreenError(
            f"internal error: {files.rows_partial} holds {lines - 1} rows, "
            f"the journal {totals['rows']}"
        )
    seconds = time.time() - start
    workers = stats["workers"]
    scorer_stats: dict[str, Any] = {}
    for w in workers:
        for k, v in w.get("scorer", {}).items():
            scorer_stats[k] = scorer_stats.get(k, 0) + v if isinstance(v, (int, float)) else v
    wait = sum(w["write_wait_s"] for w in workers)
    io = _write_io_log(files, plan, stats, start)
    # the library's reads as molsift's I/O counters saw them, every process of this attempt
    # (readers, the stream decoder, format detection): the report's one read amplification
    lib = io["library"]
    report = {
        "output": files.output,
        "rejects": files.rejects,
        "run_dir": files.run_dir,
        "poses": files.poses if plan["has_poses"] else None,
        "input": plan["input"]["path"],
        "input_bytes": plan["input"]["bytes"],
        "records_in": totals["rows"] + totals["rejects"],
        "rows": totals["rows"],
        "rejected": totals["rejects"],
        "seconds": round(seconds, 3),
        "executor": executor,
        "workers": size,
        "writers": len(stats["writers"]),
        "groups": stats["groups"],
        "restarts": state["gen"] - 2,
        "compactions": state.get("compactions", 0),
        "records_this_attempt": sum(w["records"] for w in workers),
        "bytes_read": lib["bytes_read"],
        "read_calls": lib["reads"],
        "read_amplification": _read_amplification(lib),
        "read_by": "+".join(sorted({m for w in workers for m in w.get("io", [])})),
        "prepass": plan["prepass"],
        "write_buffer": plan["write_buffer"],
        "read_buffer": plan["reader"]["buffer_size"],
        "time": {
            k: round(sum(w[k] for w in workers), 3)
            for k in ("read_wait_s", "prepare_s", "score_s", "write_wait_s")
        },
        "write_s": round(sum(w["seconds"] for w in stats["writers"]), 3),
        "write_wait_share": wait / (size * seconds) if seconds else 0.0,
        "per_worker": workers,
        "per_writer": stats["writers"],
        "scorer": plan["scorer"],
        "scorer_stats": scorer_stats,
        "started": start,
        "io": io,
        "allocator": describe(w.get("allocator", "system") for w in workers),
    }
    write_json_atomic(files.report, report)
    write_json_atomic(files.state, dict(state, complete=True))  # the commit point
    _rename_results(files)
    return report


def _read_amplification(lib: dict) -> float | None:
    """Bytes read from the library / its size; None when the I/O counters are off
    (MOLSIFT_IOSTATS=0: nothing was counted)."""
    if not _core.iostats_enabled():
        return None
    return lib["bytes_read"] / lib["bytes"] if lib["bytes"] else 0.0


def _write_io_log(files: RunFiles, plan: dict, stats: dict, start: float) -> dict:
    """RUN_DIR/io.json: molsift's own I/O counters of this attempt, every process (this one, the
    workers or ranks) and the writer groups; returns the totals the report shows."""
    add_process_records(stats.get("iostats", []))
    groups = [{k: w[k] for k in ("group", "ranks", "bytes", "seconds")} for w in stats["writers"]]
    add_job_info(molsift={"writer_groups": groups})
    doc = job_log("molsift screen", all_records(), start)
    write_log(doc, files.io_log)
    return totals(doc, library=plan["input"]["path"])


def _rename_results(files: RunFiles) -> None:
    """Moves the finished results to their names (again, if a kill came between the renames)."""
    for partial, final in (
        (files.rows_partial, files.output),
        (files.rejects_partial, files.rejects),
    ):
        if os.path.exists(partial):
            os.replace(partial, final)


def summary(report: dict) -> str:
    """The lines `molsift screen` prints at the end."""
    t = report["time"]
    rate = report["records_this_attempt"] / report["seconds"] if report["seconds"] else 0.0
    lines = [
        f"records in {report['records_in']:,} = rows {report['rows']:,}"
        f" + rejected {report['rejected']:,}",
        f"{report['seconds']:.1f} s, {rate:,.0f} records/s on {plural(report['workers'], 'worker')}"
        f" ({report['executor']}, allocator {report.get('allocator', 'system')}), "
        f"{plural(report['writers'], 'writer group')} of {report['groups']}",
        f"time summed over workers: prepare {t['prepare_s']:.1f} s, score {t['score_s']:.1f} s, "
        f"waiting for reads {t['read_wait_s']:.1f} s, waiting for writers "
        f"{t['write_wait_s']:.1f} s ({100 * report['write_wait_share']:.2f}% of worker time); "
        f"writers wrote for {report['write_s']:.2f} s",
        f"read {report['bytes_read']:,} of {report['input_bytes']:,} bytes in "
        f"{report['read_calls']:,} calls: "
        f"read amplification {amplification_text(report['read_amplification'])}"
        + (f", read by {report['read_by']}" if report.get("read_by") else "")
        + (" (plus one line-number pre-pass at memory speed)" if report["prepass"] else ""),
        *([io_text(report["io"])] if report.get("io") else []),
        f"results {report['output']}; rejects {report['rejects']}",
    ]
    if report["restarts"] > 0:
        lines.append(f"finished after {plural(report['restarts'], 'restart')} with --resume")
    return "\n".join(lines)
