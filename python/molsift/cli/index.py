"""`molsift index STORE`: (re)build a store's column index for similarity search, or with
`--pattern` its substructure index (pattern planes)."""

from __future__ import annotations

from .common import add_io_log, add_verb

EXAMPLES = (
    "molsift index nci.store",
    "molsift index big.store   # after ingest --no-index, or to rebuild it",
    "molsift index old.store --pattern -j 8  # the substructure index (after ingest --no-pattern)",
)


def add_parser(subparsers):
    p = add_verb(
        subparsers,
        "index",
        help="(re)build a store's column index (similarity) or, with --pattern, its "
        "substructure index",
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
        "-j",
        "--workers",
        type=int,
        help="worker processes for --pattern (default: all cores; under mpirun, the ranks)",
    )
    add_io_log(p)
    return p


def run(args) -> int:
    if args.pattern:
        from ..substructure import build_pattern_index

        size = build_pattern_index(args.store, workers=args.workers)
        print(f"substructure index written to {args.store}: {size:,} bytes")
        return 0
    from .._core import build_column_index

    size = build_column_index(args.store)
    print(f"column index written to {args.store}: {size:,} bytes")
    return 0
