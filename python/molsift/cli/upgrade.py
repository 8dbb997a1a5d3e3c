"""`molsift upgrade STORE -o NEW`: write the version-2 form of a version-1 store, with every
index (exact lookup, substructure, analogs) over the new store's positions."""

from __future__ import annotations

import os
import sys
import time

from .common import add_io_log, add_verb, at_least_one

EXAMPLES = (
    "molsift upgrade old.store -o new.store   # a version-1 store (ingest writes version 2)",
    "molsift upgrade big.store -o big.v2.store -j 8 --overwrite",
)


def add_parser(subparsers):
    p = add_verb(
        subparsers,
        "upgrade",
        help="rewrite a version-1 store as version 2 (smaller; every search reads it)",
        description="Write the version-2 form of a version-1 store: molecules in canonical "
        "SMILES order, SMILES and ids in compressed blocks, the fingerprints once as "
        "compressed bit planes, the exact-match index, and the substructure and analog "
        "indexes over the new positions (the substructure index carried over from the old "
        "store's without parsing a molecule again when it has one, else computed from the "
        "stored SMILES, as the analog index is). The new "
        "store appears only when complete; the old one is left as it is. A second run onto "
        "the same output, while one writes it, is refused.",
        examples=EXAMPLES,
    )
    p.add_argument("store", help="the version-1 store")
    p.add_argument("-o", "--output", required=True, help="where to write the version-2 store")
    p.add_argument(
        "-j",
        "--threads",
        type=at_least_one,
        metavar="N",
        help="compression threads and index workers, N >= 1 (default: all cores)",
    )
    p.add_argument(
        "--no-indexes",
        action="store_true",
        help="leave out the substructure and analog indexes (`molsift index NEW --pattern` "
        "or `--analogs` adds them later)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace a store already at the output")
    add_io_log(p)
    return p


def run(args) -> int:
    from ..outputlock import output_lock
    from ..sets import is_set
    from ..store import format_version, upgrade

    if not args.output:  # it was "molsift: error: : No such file or directory (os error 2)"
        raise ValueError("-o: an empty path: name the version-2 store to write (-o NEW.store)")
    if is_set(args.store):  # not "no manifest.json": a set's shards are version-2 stores
        raise ValueError(
            f"{args.store}: a store set, whose shards ingest wrote as version-2 stores: "
            "nothing to upgrade; every verb reads it as it is"
        )
    if format_version(args.store) == 2:  # the reader's own words would name another version
        raise ValueError(
            f"{args.store}: already a version-2 store (at {os.path.abspath(args.store)}): "
            "nothing to upgrade; search and lookup read it as it is"
        )
    if args.threads is not None and not args.no_indexes:  # the indexes' worker processes:
        from ..parallel.processes import check_worker_count  # refused before the store is written

        check_worker_count(args.threads)
    start = time.perf_counter()
    with output_lock(args.output, "upgrade"):  # a second run onto -o is refused, not broken
        threads = args.threads or os.cpu_count() or 1
        new = upgrade(
            args.store,
            args.output,
            overwrite=args.overwrite,
            threads=threads,
            workers=threads,
            indexes=not args.no_indexes,
        )
    sizes = new.file_sizes()
    n = max(1, len(new))
    print(
        f"molsift: wrote {args.output}: {len(new):,} molecules, "
        f"{sum(sizes.values()) / n:.1f} bytes/molecule, in {time.perf_counter() - start:.1f} s",
        file=sys.stderr,
    )
    return 0
