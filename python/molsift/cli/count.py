"""`molsift count FILE`: records (not lines) of a SMILES, CSV or SDF file, at memory speed when
the file is cached and at the device's speed when it is not (`--io`)."""

from __future__ import annotations

import sys

from ..inputs.counting import IO_METHODS, count_records

EXAMPLES = (
    "molsift count data/nci_first_5k.smi",
    "molsift count moses.csv.gz --json          # one streaming decoder for gzip/zstd",
    "molsift count lib.sdf -j 4",
    "molsift count data/nci_first_5k.smi --io direct  # bypass the page cache (O_DIRECT)",
)


def io_help() -> str:
    """The --io help, quoting the core's own thresholds and read sizes."""
    from .._core import IO_AUTO_CACHED, IO_AUTO_MAP_BELOW, IO_CHUNK, IO_DEPTH

    return (
        "how to read a plain file (default %(default)s): auto maps it when at least "
        f"{IO_AUTO_CACHED * 100:.0f}%% of it is in the page cache or it is under "
        f"{IO_AUTO_MAP_BELOW >> 20} MiB, else reads it by pread with read-ahead (a cold file "
        "too: never direct); mmap: memory map; pread: one read at a time per "
        f"thread, read-ahead advised; uring: {IO_DEPTH} buffered reads of {IO_CHUNK >> 20} MiB "
        "in flight per thread (io_uring); direct: the same with O_DIRECT, bypassing the page "
        "cache (for a file larger than memory that must not evict the cache). A filesystem "
        "refusing O_DIRECT gets uring, a kernel refusing io_uring gets pread; the report says "
        "which way ran and why"
    )


def add_parser(subparsers):
    from .common import add_format_options, add_io_log, add_verb, at_least_one, default_of

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
        type=at_least_one,
        default=default_of(count_records, "threads"),
        metavar="N",
        help="threads, N >= 1 (default: all cores)",
    )
    p.add_argument(
        "--io", choices=IO_METHODS, default=default_of(count_records, "io"), help=io_help()
    )
    p.add_argument("--json", action="store_true", help="print the counters as JSON")
    add_format_options(p, columns=False)  # a record is counted whatever its fields
    add_io_log(p)
    return p


# The options `fast_args` reads, with the value each takes: a whole number, one of a list, or
# none (a flag: the value it sets).
FAST_OPTIONS = {
    "-j": ("threads", int),
    "--threads": ("threads", int),
    "--io": ("io", IO_METHODS),
    "--format": ("format", ("smiles", "csv", "sdf")),
    "--json": ("json", True),
    "--header": ("header", True),
    "--no-header": ("header", False),
}


def fast_args(words: list[str]):
    """The usual command lines of `molsift count` (a file, -j/--threads N, --io WAY,
    --format F, --json, --header/--no-header), read without argparse, whose import is a
    third of count's start-up; None for anything else (help, an error, another option, `=`
    forms), which argparse then reads. tests/test_cli.py checks both give the same values."""
    from types import SimpleNamespace

    args = {"file": None, "threads": None, "io": "auto", "json": False, "format": None,
            "header": None}  # fmt: skip
    at = 0
    while at < len(words):
        word = words[at]
        if word in FAST_OPTIONS:
            dest, value = FAST_OPTIONS[word]
            if isinstance(value, bool):
                args[dest] = value
            else:
                at += 1
                if at == len(words):
                    return None
                given = words[at]
                if value is int:
                    if not given.isdigit() or int(given) < 1:  # argparse says why
                        return None
                    args[dest] = int(given)
                elif given in value:
                    args[dest] = given
                else:
                    return None
        elif word.startswith("-") or args["file"] is not None:
            return None
        else:
            args["file"] = word
        at += 1
    if args["file"] is None:
        return None
    return SimpleNamespace(verb="count", io_log=None, func=run, **args)


def useful_threads(threads: int | None) -> int | None:
    """-j N as the core takes it: at most `sys.maxsize` (`-j 99999999999999999999` was
    OverflowError's traceback; the core cuts a file into at most one slab a byte and
    `molsift_io::MAX_SLABS`, and threads the system will not start leave their slabs to the
    others, so the count is the same as with any N); None (all cores) as it is."""
    return None if threads is None else min(threads, sys.maxsize)


def assumed_format_note(path: str, format: str | None) -> None:
    """Says on stderr (`molsift: note: ...`) that the input `path` is read as SMILES only
    because its suffix names no format (`lib.dat`, `q.cube`; no --format given), by rank 0
    alone under mpirun: count's, ingest's and the query files' one note (here, where `molsift
    count` imports nothing heavy)."""
    from ..inputs.counting import assumed_format
    from ..parallel import speaks_for_the_run

    note = assumed_format(path, format)
    if note and speaks_for_the_run():
        print(f"molsift: note: {note}", file=sys.stderr)


def run(args) -> int:
    r = count_records(
        args.file,
        format=args.format,
        threads=useful_threads(args.threads),
        header=args.header,
        io=args.io,
    )
    assumed_format_note(args.file, args.format)  # once the file is known to be one
    if args.json:
        import json

        print(json.dumps(r))
        return 0
    gbs = r["bytes"] / r["seconds"] / 1e9 if r["seconds"] else 0.0
    amp = r["bytes_read"] / r["bytes"] if r["bytes"] else 0.0
    print(f"{r['records']}\t{args.file}")
    print(
        f"{r['bytes']:,} bytes ({r['format']}, {r['compression']}) in {r['seconds']:.3f} s:"
        f" {gbs:.2f} GB/s, {r['read_calls']:,} read calls, read amplification {amp:.4f}x;"
        f" read by {r['io']}" + (f" ({r['io_reason']})" if r["io_reason"] else ""),
        file=sys.stderr,
    )
    return 0
