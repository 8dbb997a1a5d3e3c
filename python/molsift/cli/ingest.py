"""`molsift ingest INPUT... -o STORE`: parse every record with RDKit in parallel, write the one
store (format version 2, every index) that every verb takes."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict

from .. import ingestion
from ..outputlock import output_lock
from ..spec import FingerprintSpec
from ..wording import plural, quoted
from .common import (
    EXIT_NOTHING_USABLE,
    add_format_options,
    add_io_log,
    add_reader_options,
    add_verb,
    at_least_one,
    default_of,
    format_options,
    nothing_read,
    parse_size,
)
from .count import assumed_format_note

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
        "or index onto it is refused (index waits). A run that stores no molecule (an empty "
        f"input, or every record rejected) exits {EXIT_NOTHING_USABLE}, saying the commonest "
        "reason; its store is written anyway, empty, with the rejects in STORE/rejects.tsv.",
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
        "(info, search, substructure, analogs, lookup and serve take the set as one store; "
        "its shards' indexes are written here: `molsift index` refuses a set; docs/scale-out.md)",
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
    # once the run is done (an input or output refused is its own error), before its summary
    for path in dict.fromkeys(args.inputs):  # each file once, as `molsift count` says it
        assumed_format_note(path, args.format)
    if args.json:
        print(json.dumps({**asdict(report), "read_amplification": report.read_amplification}))
    elif not args.quiet:
        print(report.summary())
        if report.rejected:
            print(f"rejected records: {report.store}/rejects.tsv")
        if report.dropped:
            print(f"duplicates left out: {report.store}/duplicates.tsv")
    if args.shards and 0 < report.molecules < args.shards:  # asked for more than it holds
        empty = args.shards - report.molecules
        print(
            f"molsift: note: {args.shards:,} shards for {plural(report.molecules, 'molecule')}: "
            f"{empty:,} of them are empty (the set answers as one store; --shards "
            f"{report.molecules:,} or fewer would do)",
            file=sys.stderr,
        )
    if report.molecules == 0:
        return nothing_stored(report)
    return 0


def nothing_stored(report: ingestion.IngestReport) -> int:
    """Says in one line on stderr that the run stored no molecule and why: the input held no
    record, or every record was rejected, with the commonest reason (of the first
    `ingestion.REASON_ROWS` listed) and where the rejects are; that the empty store is kept;
    and, where the reason is the SMILES field's, that the SMILES may be in another column (a
    CSV read by the wrong column or delimiter, a table read as SMILES). Returns
    EXIT_NOTHING_USABLE. (Every record rejected was a generic line naming no reason.)"""
    kept = f"the store {report.store} is kept, holding no molecule"
    why = nothing_read(report.records_in)
    if report.records_in == 0:
        why += f"; {kept}"
    else:
        reasons = ingestion.reject_reasons(report.store)
        hint = ""
        if reasons:
            reason, n = reasons.most_common(1)[0]
            listed = sum(reasons.values())
            if report.records_in == 1:
                why += f" for {quoted(reason, 120)}"
            else:
                of = f" of the first {listed:,}" if listed < report.rejected else ""
                most = " (the commonest reason)" if len(reasons) > 1 else ""
                why += f", {n:,}{of} for {quoted(reason, 120)}{most}"
            if "SMILES" in reason or "field" in reason:
                hint = f"; {_column_hint(report)}"
        rejects = os.path.join(report.store, "rejects.tsv")
        why += f"; each reject is listed in {rejects} ({kept}){hint}"
    print(
        f"molsift: error: nothing usable: no molecule stored: {why}; exit status "
        f"{EXIT_NOTHING_USABLE}",
        file=sys.stderr,
    )
    return EXIT_NOTHING_USABLE


def _column_hint(report: ingestion.IngestReport) -> str:
    """What to try when the SMILES field was not a SMILES: another column or delimiter for a
    CSV, the CSV options for a table read as a SMILES file (the SMILES is a line's first
    field there)."""
    formats = {i.get("format") for i in report.inputs}
    if formats == {"csv"}:
        return "is the SMILES in another column? give --smiles-col NAME (and --delimiter , or tab)"
    return (
        "is the SMILES not each line's first field? for a table give --format csv "
        "--smiles-col NAME (and --delimiter , or tab)"
    )


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
