"""`molsift ingest INPUT... -o STORE`: parse every record with RDKit in parallel, write the one
store (format version 2, every index) that every verb takes."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from .. import ingestion
from ..outputlock import output_lock
from ..spec import FingerprintSpec
from .common import (
    add_format_options,
    add_io_log,
    add_reader_options,
    add_verb,
    at_least_one,
    default_of,
    format_options,
    nothing_usable,
    parse_size,
)

EXAMPLES = (
    "molsift ingest data/nci_first_5k.smi -o nci.store           # all cores",
    "mpirun -n 4 molsift ingest big.smi -o big.set --shards 8 --scratch /tmp  # 4 ranks, 8 shards",
    "molsift ingest data/nci_first_5k.smi -o nci.store --overwrite --dedupe --verify-count",
    "molsift ingest data/nci_first_5k.smi -o nci.set --shards 4 --memory 2G  # 4 shards, <= 2 GiB",
)


def add_parser(subparsers):
    p = add_verb(
        subparsers,
        "ingest",
        help="parse molecules with RDKit and write a store",
        description="Read every record in parallel (byte-range slabs per worker "
        "or MPI rank), parse each once with RDKit, and write the one store (format "
        "version 2) that every verb takes: canonical SMILES, ids, fingerprints as "
        "compressed bit planes, the exact-match index, the substructure index and the "
        "analog index. "
        "Under mpirun each rank takes its share of the slabs. One run per output: "
        "while one writes STORE (a lock, .STORE.lock beside it), another ingest, upgrade "
        "or index onto it is refused (index waits).",
        examples=EXAMPLES,
    )
    p.add_argument(
        "inputs", nargs="+", metavar="INPUT", help="SMILES, CSV or SDF files (gzip/zstd ok)"
    )
    p.add_argument(
        "-o", "--output", required=True, metavar="STORE", help="store directory to create"
    )
    p.add_argument(
        "-j",
        "--workers",
        type=at_least_one,
        default=default_of(ingestion.ingest, "workers"),
        metavar="N",
        help="worker processes, N >= 1 (default: all cores; 1 per MPI rank)",
    )
    p.add_argument(
        "--radius",
        type=int,
        default=default_of(FingerprintSpec, "radius"),
        help="Morgan radius (default %(default)s)",
    )
    p.add_argument(
        "--bits",
        type=int,
        default=default_of(FingerprintSpec, "bits"),
        help="fingerprint size in bits (default %(default)s)",
    )
    p.add_argument(
        "--slabs",
        type=int,
        default=default_of(ingestion.ingest, "slabs"),
        help="equal byte-range slabs per plain input (default: slabs that shrink towards "
        "the end so the workers finish together; "
        f"{ingestion.MPI_SLABS_PER_RANK} per rank under MPI)",
    )
    p.add_argument(
        "--chunk-records",
        type=int,
        default=default_of(ingestion.ingest, "chunk_records"),
        help="records per task for gzip/zstd input (default %(default)s, fewer towards "
        "the end unless --slabs is given or under MPI)",
    )
    add_reader_options(p)
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing store (only a molsift store: anything else at the "
        "output is refused, never deleted)",
    )
    p.add_argument(
        "--dedupe",
        action="store_true",
        help="store one molecule per canonical SMILES (the first record's); the other "
        "records are listed in STORE/duplicates.tsv with the position and id kept "
        "(without it, duplicates are stored and counted)",
    )
    p.add_argument(
        "--shards",
        type=int,
        metavar="K",
        help="write a store set: K shard stores, each a consecutive range of the store order "
        "(every verb takes the set as one store; docs/scale-out.md)",
    )
    p.add_argument(
        "--scratch",
        metavar="DIR",
        help="with --shards under mpirun: an existing directory on each node (a node-local "
        "disk) where each rank keeps the slices of records it sends to and receives from the "
        "other ranks (default: beside the set being written)",
    )
    p.add_argument(
        "--memory",
        type=parse_size,
        metavar="SIZE",
        help="the memory each process may hold while the store is written (e.g. 4G; default: "
        "three quarters of what this machine or its cgroup allows): the write buffers are cut "
        "from it, and a library whose store needs more is refused, once its molecules are "
        "counted, with the number of shards that fits",
    )
    p.add_argument(
        "--no-pattern",
        action="store_true",
        help="leave out the substructure index (substructure search then needs "
        "`molsift index STORE --pattern`)",
    )
    p.add_argument(
        "--no-analogs",
        action="store_true",
        help="leave out the analog index (analog search then needs "
        "`molsift index STORE --analogs`)",
    )
    # before the one store, the analog index was asked for; it is now built by default
    p.add_argument("--analogs", action="store_true", help=argparse.SUPPRESS)
    p.add_argument(
        "--verify-count",
        action="store_true",
        help="count the inputs again independently (one more read) and fail if the "
        "ingest's count differs",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no summary")
    p.add_argument(
        "--json",
        action="store_true",
        help="print the report as JSON (store_bytes: the whole store or set, every index "
        "included, as `molsift info` counts it; pattern_bytes and analog_bytes: its indexes)",
    )
    add_format_options(p)
    add_io_log(p)
    return p


def run(args) -> int:
    with output_lock(args.output, "ingest"):  # a second run onto -o is refused, not broken
        report = _ingest(args)
    if report is None:  # a non-root MPI rank
        return 0
    if args.json:
        print(json.dumps({**asdict(report), "read_amplification": report.read_amplification}))
    elif not args.quiet:
        print(report.summary())
        if report.rejected:
            print(f"rejected records: {report.store}/rejects.tsv")
        if report.dropped:
            print(f"duplicates left out: {report.store}/duplicates.tsv")
    if report.molecules == 0:
        return nothing_usable("ingest", report.records_in, f"{report.store}/rejects.tsv")
    return 0


def _ingest(args):
    return ingestion.ingest(
        args.inputs,
        args.output,
        fingerprint=FingerprintSpec(radius=args.radius, bits=args.bits),
        workers=args.workers,
        slabs=args.slabs,
        chunk_records=args.chunk_records,
        buffer_size=args.read_buffer,
        max_record_bytes=args.max_record_bytes,
        io=args.io,
        overwrite=args.overwrite,
        dedupe=args.dedupe,
        shards=args.shards,
        memory=args.memory,
        scratch=args.scratch,
        verify_count=args.verify_count,
        pattern=not args.no_pattern,
        analogs=not args.no_analogs,
        progress=False if args.quiet else None,
        **format_options(args),
    )
