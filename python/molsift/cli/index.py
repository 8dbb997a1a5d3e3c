"""`molsift index STORE`: (re)build a store's column index for similarity search."""

from __future__ import annotations

from .common import add_io_log, add_verb

EXAMPLES = (
    "molsift index nci.store",
    "molsift index big.store   # after ingest --no-index, or to rebuild it",
)


def add_parser(subparsers):
    p = add_verb(
        subparsers,
        "index",
        help="(re)build a store's column index for similarity search",
        examples=EXAMPLES,
    )
    p.add_argument("store")
    add_io_log(p)
    return p


def run(args) -> int:
    from .._core import build_column_index

    size = build_column_index(args.store)
    print(f"column index written to {args.store}: {size:,} bytes")
    return 0
