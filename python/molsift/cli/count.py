"""`molsift count FILE`: records (not lines) of a SMILES, CSV or SDF file, at memory speed."""

from __future__ import annotations

import json
import sys

from ..inputs import count_records
from .common import add_format_options, add_io_log, add_verb, default_of

EXAMPLES = (
    "molsift count data/nci_first_5k.smi",
    "molsift count moses.csv.gz --json          # one streaming decoder for gzip/zstd",
    "molsift count lib.sdf -j 4",
)


def add_parser(subparsers):
    p = add_verb(
        subparsers,
        "count",
        help="count records (not lines) of a SMILES, CSV or SDF file",
        description="Count records with all cores at memory speed. gzip/zstd "
        "input is counted by one streaming decoder.",
        examples=EXAMPLES,
    )
    p.add_argument("file")
    p.add_argument(
        "-j",
        "--threads",
        type=int,
        default=default_of(count_records, "threads"),
        help="threads (default: all cores)",
    )
    p.add_argument("--json", action="store_true", help="print the counters as JSON")
    add_format_options(p)
    add_io_log(p)
    return p


def run(args) -> int:
    r = count_records(args.file, format=args.format, threads=args.threads, header=args.header)
    if args.json:
        print(json.dumps(r))
        return 0
    gbs = r["bytes"] / r["seconds"] / 1e9 if r["seconds"] else 0.0
    amp = r["bytes_read"] / r["bytes"] if r["bytes"] else 0.0
    print(f"{r['records']}\t{args.file}")
    print(
        f"{r['bytes']:,} bytes ({r['format']}, {r['compression']}) in {r['seconds']:.3f} s:"
        f" {gbs:.2f} GB/s, {r['read_calls']:,} read calls, read amplification {amp:.4f}x",
        file=sys.stderr,
    )
    return 0
