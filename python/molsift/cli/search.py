"""`molsift search STORE -q SMILES -t 0.7 -k 10`: exact Tanimoto search with chemfp's options;
hits to stdout (TSV), a TSV file or a Parquet file."""

from __future__ import annotations

import sys
import time

from .. import search
from ..wording import plural
from .common import (
    QUERIES_HELP,
    add_format_options,
    add_io_log,
    add_verb,
    at_least_one,
    check_hits_output,
    default_of,
    hit_count,
    in_range,
    lone_query,
    output_file,
    query_file,
    query_file_options,
    report_skipped,
    start_chemistry,
)
from .exits import EXIT_ERROR

DEFAULT_K = 10  # hits per query when neither -k nor -t is given
EXAMPLES = (
    "molsift search nci.store -q 'CC(=O)Nc1ccc(O)cc1' -k 5",
    "molsift search nci.store --queries actives.smi -t 0.7 -o hits.tsv",
    "molsift search nci.store -q 'c1ccccc1O' -k 10 -o hits.parquet   # Parquet (pyarrow)",
    "molsift search big.store --queries actives.sdf -t 0.8 -k 100 -j 8",
)


def k_nearest(text: str) -> int:
    """-k: a whole number of hits, at least 1 (more than the store holds: every hit)."""
    return hit_count(text, " (leave -k out to keep every hit above -t)")


def tanimoto_threshold(text: str) -> float:
    """-t: a Tanimoto score, 0 to 1."""
    return in_range(text, 0.0, 1.0, "between 0 and 1 (a Tanimoto score)")


def add_parser(subparsers):
    p = add_verb(
        subparsers,
        "search",
        help="exact Tanimoto similarity search (threshold and/or top-k)",
        description="Search a store with chemfp's conventions. Hits are exact "
        "(RDKit's scores), best first: score descending, then store position "
        "ascending. Output: TSV query_id, target_id, score, target_smiles.",
        examples=EXAMPLES,
    )
    p.add_argument("store")
    p.add_argument(
        "-q", "--query", action="append", metavar="SMILES", help="a query SMILES (repeatable)"
    )
    p.add_argument("--queries", metavar="FILE", help=QUERIES_HELP)
    p.add_argument(
        "-t", "--threshold", type=tanimoto_threshold, help="minimum Tanimoto score (0..1)"
    )
    p.add_argument(
        "-k",
        "--k-nearest",
        type=k_nearest,
        help=f"the k best hits, k >= 1 (default {DEFAULT_K} when no -t)",
    )
    p.add_argument(
        "-j",
        "--threads",
        type=at_least_one,
        default=default_of(search.search_batch, "threads"),
        metavar="N",
        help="threads, N >= 1 (default %(default)s)",
    )
    p.add_argument(
        "-o",
        "--output",
        help="write hits here (.parquet for Parquet; -o -: stdout, the default)",
    )
    add_format_options(p, what="--queries file")
    add_io_log(p)
    return p


def read_queries(args) -> list[tuple]:
    """(id, query) pairs from -q SMILES and --queries FILE; bad records of the file are reported
    on stderr and skipped (counted in `args.skipped`: the exit status is then 2, as substructure
    and analogs answer a query they skip), never fatal."""
    options = query_file_options(args)  # refused without --queries, before any query
    queries, bad = [], []
    for i, smi in enumerate(args.query or []):
        qid = f"q{i + 1}" if len(args.query) > 1 else "query"
        # a -q RDKit cannot read is skipped and named, as substructure and analogs skip one (it
        # stopped every other -q): checked here, searched as text (the ranks share its parse)
        try:
            search.query_mol(smi)
        except ValueError as exc:
            bad.append((qid, str(exc)))
        else:
            queries.append((qid, smi))
    if bad and not queries and not args.queries:  # nothing left to search: the error itself
        raise ValueError(bad[0][1])
    for qid, why in bad:
        report_skipped("", qid, why)
    args.skipped = len(bad)
    if args.queries:  # as every query verb reads it (`query_file`: an empty one is refused)
        from ..inputs import read_molecules

        records = query_file(args.queries, **options)
        found = read_molecules(args.queries, skip_bad=True, records=records)
        for bad in found.skipped:
            report_skipped(f"{bad.path}:{bad.line}: ", bad.id, bad.reason)
        queries += [(m.id, m.mol) for m in found.molecules]
        args.skipped += len(found.skipped)
    if args.skipped:
        print(
            f"molsift: {args.skipped:,} of "
            f"{plural(args.skipped + len(queries), 'query', 'queries')} skipped",
            file=sys.stderr,
        )
    return queries


def run(args) -> int:
    from ..sets.mpi import for_ranks
    from ..store import open_store

    if not args.query and not args.queries:
        raise ValueError("give a query: -q SMILES or --queries FILE")
    k = args.k_nearest if args.k_nearest or args.threshold is not None else DEFAULT_K
    output = output_file(args.output)  # no -o, -o '' or -o -: stdout
    check_hits_output(output, "search", reads={"--queries": args.queries}, store=args.store)
    lone_query(args, search.query_mol)  # a lone bad -q: the run's one error, before the store
    store = open_store(args.store, verify=False)
    queries = for_ranks(store, args, lambda: read_queries(args))
    start_chemistry(store)
    start = time.perf_counter()
    results = store.search_batch(
        [q for _, q in queries], threshold=args.threshold, k=k, threads=args.threads
    )
    seconds = time.perf_counter() - start
    rows = search.hit_rows(store, [qid for qid, _ in queries], results)
    try:
        search.write_hits(rows, output)
    except ImportError as exc:  # Parquet without pyarrow
        raise ValueError(str(exc)) from exc
    touched = results[0].stats.get("bytes_touched", 0) if results else 0  # summed over the batch
    print(
        f"molsift: {plural(len(queries), 'query', 'queries')}, {plural(len(rows), 'hit')} in "
        f"{seconds * 1000:.1f} ms ({seconds * 1000 / max(1, len(queries)):.2f} ms/query, "
        # asked for: a batch runs at most a thread a query, a query at most a thread a block
        f"{'up to ' if args.threads > 1 else ''}{plural(args.threads, 'thread')});"
        f" {touched / max(1, len(queries)):,.0f} bytes of fingerprints and columns read per query",
        file=sys.stderr,
    )
    return EXIT_ERROR if getattr(args, "skipped", 0) else 0
