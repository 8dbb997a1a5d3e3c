"""`molsift index STORE`: (re)build the one store's substructure index (`--pattern`) or its
analog index (`--analogs`: distinct skeletons and their molecules), or both. A store set is
refused in one line: ingest writes its shards' indexes, and set.json records each shard. Each
index's size is said as ingest and `molsift info` count it: every file of the index the store's
manifest lists."""

from __future__ import annotations

from .common import add_io_log, add_verb, at_least_one

EXAMPLES = (
    "molsift index nci.store           # both indexes again (e.g. after an RDKit upgrade)",
    "molsift index nci.store --pattern -j 8  # the substructure index (after ingest --no-pattern)",
    "molsift index nci.store --analogs -j 8  # the analog index (after ingest --no-analogs)",
)


def add_parser(subparsers):
    p = add_verb(
        subparsers,
        "index",
        help="(re)build a store's substructure index (--pattern) or its analog index "
        "(--analogs); both without either (or with both)",
        description="(Re)build the one store's substructure index (--pattern) or its analog "
        "index (--analogs), or both when neither or both are given (ingest builds both; this "
        "is for a store ingested with --no-pattern or --no-analogs, or after an RDKit upgrade). "
        "While another molsift writes the store (ingest, upgrade, index), waits for it to end.",
        examples=EXAMPLES,
    )
    p.add_argument("store")
    p.add_argument(
        "--pattern",
        action="store_true",
        help="build the substructure index (RDKit pattern fingerprints and atom features as "
        "compressed bit planes, and each molecule's graph for the exact match, from the "
        "stored SMILES)",
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
        type=at_least_one,
        metavar="N",
        help="worker processes for --pattern, threads for --analogs, N >= 1 (default: all cores; "
        "under mpirun, the ranks for --pattern)",
    )
    add_io_log(p)
    return p


def run(args) -> int:
    import os

    from ..outputlock import output_lock
    from ..sets import is_set
    from ..store import open_store

    # a set, or a shard of one: ingest writes every shard's indexes and set.json records each
    # shard, so a shard indexed alone would no longer match it (the set would refuse it)
    parent = os.path.dirname(os.path.abspath(args.store))
    whole = is_set(args.store)
    what = "a store set" if whole else f"a shard of the store set {parent}"
    if whole or is_set(parent):
        raise ValueError(
            f"{args.store}: {what}: its indexes are written by ingest, and `molsift index` takes "
            "one store (a shard indexed alone no longer matches set.json); to add an index left "
            "out with --no-pattern or --no-analogs, ingest the set again (--overwrite) without "
            "that flag"
        )
    with output_lock(args.store, "index", wait=True):  # one writer of the store at a time
        # the one store (a version-1 store is refused), once its writer is done: an index of
        # a store that an ingest is still writing waits for it (tests/test_store_safety.py)
        return _index(args, len(open_store(args.store, verify=False)))


def _index(args, molecules: int) -> int:
    # both flags are both indexes, as neither is (they were refused: "not both")
    both = args.pattern == args.analogs
    if args.pattern or both:
        from ..substructure import build_pattern_index

        build_pattern_index(args.store, workers=args.workers)
        size = _written(args.store, "pattern.")
        each = f" ({size / molecules:.1f} B/molecule)" if molecules else ""
        print(f"substructure index written to {args.store}: {size:,} bytes{each}")
    if args.analogs or both:
        return _analogs(args, molecules)
    return 0


def _analogs(args, molecules: int) -> int:
    import os

    from ..analogs.search import index_analogs
    from ..progress import Progress, counter

    threads = args.workers or os.cpu_count() or 1
    with Progress("skeletons", total=molecules) as bar:
        header = index_analogs(args.store, threads, progress=counter(bar))
    size = _written(args.store, "analogs.")  # analogs.json too, as ingest counts it
    n = header["molecules"]
    each = f" ({size / n:.1f} B/molecule)" if n else ""  # none for a store of no molecules
    print(
        f"analog index written to {args.store}: {header['skeletons']:,} distinct skeletons for "
        f"{header['indexed']:,} molecules ({header['failed']:,} without a skeleton, listed in "
        f"analogs.failed.tsv), {size:,} bytes{each}"
    )
    return 0


def _written(store: str, prefix: str) -> int:
    """The bytes of the index just written (its files named `prefix...`) as the store's
    manifest now lists them, counted as ingest and `molsift info` count them
    (`store.index_bytes`; the screen planes alone, or the analog files without analogs.json,
    were said before, so the three verbs gave three sizes)."""
    import json
    import os

    from ..store import file_bytes, index_bytes

    with open(os.path.join(store, "manifest.json"), "rb") as fh:
        return index_bytes(file_bytes(json.loads(fh.read())), prefix)
