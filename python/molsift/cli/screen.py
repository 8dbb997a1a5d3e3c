"""`molsift screen LIB --scorer NAME -o results.csv`: read, prepare, score, write one shared
result CSV with parallel writer groups; `--resume` finishes a killed run."""

from __future__ import annotations

import contextlib
import json

from ..screen import screen, summary
from ..screen.run import CHUNK_RECORDS, WRITE_BUFFER, WRITERS
from .common import (
    add_format_options,
    add_io_log,
    add_reader_options,
    add_verb,
    at_least_one,
    check_output,
    default_of,
    format_options,
    nothing_usable,
    parse_size,
    size_text,
)

EXAMPLES = (
    "molsift screen data/nci_first_5k.smi --scorer filter -o props.csv   # all cores",
    "molsift screen lib.smi --scorer similarity --refs actives.smi -o sim.csv --writers 2",
    "mpirun -n 16 molsift screen lib.smi --scorer filter -o props.csv --writers 4",
    "molsift screen lib.smi --scorer filter -o props.csv --resume   # after a crash or kill -9",
)


def add_parser(subparsers):
    from ..scorers import BUILTIN, scorer_class

    p = add_verb(
        subparsers,
        "screen",
        help="screen a library: read, prepare, score, write one result CSV",
        description="Score every record of a SMILES, CSV or SDF library into one "
        "CSV (id, smiles, score columns), rejects in OUTPUT.rejects.tsv. Worker "
        "processes (or MPI ranks under mpirun) fill per-worker buffers that writer "
        "groups write to the shared file. A killed run is finished by --resume "
        "with every record exactly once.",
        examples=EXAMPLES,
    )
    p.add_argument("library", help="SMILES, CSV or SDF file (gzip/zstd ok)")
    p.add_argument(
        "--scorer",
        required=True,
        metavar="NAME",
        help="filter, similarity, vina, or python:module:function",
    )
    p.add_argument("-o", "--output", required=True, metavar="CSV", help="result file")
    add_run_options(p)
    add_format_options(p)
    for name in BUILTIN:
        with contextlib.suppress(ImportError):  # e.g. vina not installed: no vina options
            scorer_class(name).add_arguments(p)
    add_io_log(p)
    return p


KEPT = "; --resume: the run's own"  # a run option left out of a resume (screen.run)


def add_run_options(p) -> None:
    """How the run goes: workers, writer groups, buffers, tasks, resume."""
    library = screen
    p.add_argument(
        "-j",
        "--workers",
        type=at_least_one,
        default=default_of(library, "workers"),
        metavar="N",
        help="worker processes, N >= 1 (default: all cores); under mpirun, worker processes per "
        "rank (default: 1, the rank itself works)",
    )
    p.add_argument(
        "--writers",
        type=at_least_one,
        default=default_of(library, "writers"),
        metavar="P",
        help="writer groups, each writing for one or more workers (MPI ranks under mpirun): "
        f"more than those are cut to their number, with a note (default: {WRITERS}{KEPT})",
    )
    p.add_argument(
        "--write-buffer",
        type=parse_size,
        default=default_of(library, "write_buffer"),
        metavar="SIZE",
        help=f"accumulation buffer per worker or rank (default: {size_text(WRITE_BUFFER)}{KEPT})",
    )
    add_reader_options(p, metavar="SIZE")
    p.add_argument(
        "--slabs",
        type=at_least_one,
        default=default_of(library, "slabs"),
        metavar="N",
        help="equal byte-range tasks, N >= 1 (default: tasks that shrink towards the end of the "
        f"file so the workers finish together; 1 per worker under MPI{KEPT})",
    )
    p.add_argument(
        "--chunk-records",
        type=at_least_one,
        default=default_of(library, "chunk_records"),
        metavar="N",
        help=f"records per task for gzip/zstd input, N >= 1 (default: {CHUNK_RECORDS}{KEPT})",
    )
    p.add_argument(
        "--standardize",
        action="store_true",
        default=default_of(library, "standardize"),  # None: not given (--resume: the run's)
        help="standardize molecules (RDKit cleanup, largest fragment, neutralize) before scoring",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="finish a run that was killed or failed, with the options it was started with "
        "(--writers, --write-buffer, --slabs, --chunk-records, --standardize, the reader's and "
        "the input format's: left out, they are the run's; given, they must be the run's); -j "
        "and --fsync are the resume's own",
    )
    p.add_argument("--overwrite", action="store_true", help="start again, replacing an earlier run")
    p.add_argument(
        "--run-dir",
        default=default_of(library, "run_dir"),
        help="where the run keeps its journal and timeline (default: OUTPUT.run)",
    )
    p.add_argument(
        "--fsync",
        action="store_true",
        help="sync each write before committing it (survives power loss, not only kills)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line, no summary")
    p.add_argument("--json", action="store_true", help="print the run report as JSON")


def run(args) -> int:
    from ..scorers import scorer_class

    check_output(args.output)
    scorer = scorer_class(args.scorer).from_args(args)
    report = screen(
        args.library,
        args.output,
        scorer,
        workers=args.workers,
        writers=args.writers,
        write_buffer=args.write_buffer,
        read_buffer=args.read_buffer,
        max_record_bytes=args.max_record_bytes,
        io=args.io,
        slabs=args.slabs,
        chunk_records=args.chunk_records,
        standardize=args.standardize,
        resume=args.resume,
        overwrite=args.overwrite,
        run_dir=args.run_dir,
        fsync=args.fsync,
        progress=False if args.quiet else None,
        **format_options(args),
    )
    if report is None:  # a non-root MPI rank
        return 0
    if args.json:
        print(json.dumps(report))
    elif not args.quiet:
        print(summary(report))
    if report["rows"] == 0:
        return nothing_usable(report["records_in"], report["rejects"])
    return 0
