"""`molsift index STORE`: (re)build a store's column index for similarity search, with
`--pattern` its substructure index (pattern planes), or with `--analogs` its analog index
(distinct skeletons and their molecules)."""

from __future__ import annotations

from .common import add_io_log, add_verb

EXAMPLES = (
    "molsift index nci.store",
    "molsift index big.store   # after ingest --no-index, or to rebuild it",
    "molsift index old.store --pattern -j 8  # the substructure index (after ingest --no-pattern)",
    "molsift index nci.store --analogs -j 8  # the analog index, for molsift analogs",
)


def add_parser(subparsers):
    p = add_verb(
        subparsers,
        "index",
        help="(re)build a store's column index (similarity), its substructure index "
        "(--pattern) or its analog index (--analogs)",
        description="(Re)build a store's column index for similarity search, its "
        "substructure index (--pattern) or its analog index (--analogs). While another "
        "molsift writes the store (ingest, upgrade, index), waits for it to end.",
        examples=EXAMPLES,
    )
    p.add_argument("store")
    p.add_argument(
        "--pattern",
        action="store_true",
        help="build the substructure index (RDKit pattern fingerprints and atom features as bit "
        "planes, and each molecule's graph for the exact match, from the stored SMILES) "
        "instead of the column index",
    )
    p.add_argument(
        "--analogs",
        action="store_true",
        help="build the analog index (each molecule's skeleton, canonicalized, grouped by "
        "skeleton; read from the stored SMILES without a toolkit) for `molsift analogs`",
    )
    p.add_argument(
        "-j",
        "--workers",
        type=int,
        help="worker processes for --pattern, threads for --analogs (default: all cores; "
        "under mpirun, the ranks for --pattern)",
    )
    add_io_log(p)
    return p


def run(args) -> int:
    from ..outputlock import output_lock

    with output_lock(args.store, "index", wait=True):  # one writer of the store at a time
        return _index(args)


def _index(args) -> int:
    from ..store import format_version

    if args.pattern and args.analogs:
        raise ValueError("give --pattern or --analogs, not both")
    if format_version(args.store) == 2 and not (args.analogs or args.pattern):
        raise ValueError(
            f"{args.store}: a version-2 store needs no column index: search reads its "
            "compressed planes (--pattern and --analogs rebuild its other indexes)"
        )
    if args.analogs:
        return _analogs(args)
    if args.pattern:
        from ..substructure import build_pattern_index

        size = build_pattern_index(args.store, workers=args.workers)
        print(f"substructure index written to {args.store}: {size:,} bytes")
        return 0
    from .._core import build_column_index

    size = build_column_index(args.store)
    print(f"column index written to {args.store}: {size:,} bytes")
    return 0


def _analogs(args) -> int:
    import os

    from ..analogs.search import index_analogs
    from ..progress import Progress
    from ..store import open_store

    store = open_store(args.store, verify=False)
    threads = args.workers or os.cpu_count() or 1
    if threads < 1:
        raise ValueError(f"-j must be at least 1, not {threads}")
    with Progress("skeletons", total=len(store)) as bar:
        seen = [0]

        def progress(done: int) -> None:
            bar.update(max(done - seen[0], 0))
            seen[0] = max(seen[0], done)

        header = index_analogs(args.store, threads, progress=progress)
    size = sum(f["bytes"] for f in header["files"].values())
    n = max(header["molecules"], 1)
    print(
        f"analog index written to {args.store}: {header['skeletons']:,} distinct skeletons for "
        f"{header['indexed']:,} molecules ({header['failed']:,} without a skeleton, listed in "
        f"analogs.failed.tsv), {size:,} bytes ({size / n:.1f} B/molecule)"
    )
    return 0
