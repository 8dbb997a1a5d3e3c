"""`molsift analogs STORE -q SMILES --dist D`: analog search by graph edit distance (the
molecules whose skeletons are at most D edits from the query's, docs/analogs.md), streamed
distance by distance (the hits at distance 1 are written before distance 2 is searched) to
stdout (TSV), a TSV file or a Parquet file."""

from __future__ import annotations

import os
import sys
import time

from .common import (
    QUERIES_HELP,
    add_format_options,
    add_io_log,
    add_verb,
    at_least_one,
    check_hits_output,
    hit_count,
    lone_query,
    output_file,
    query_source,
    query_summary,
    report_skipped,
    start_chemistry,
)

EXAMPLES = (
    "molsift analogs nci.store -q 'c1ccccc1CCO' --dist 2  # nearest skeletons first",
    "molsift analogs nci.store -q 'c1ccc2[nH]ccc2c1' --dist 3 -k 100 --timeout 5",
    "molsift analogs nci.store -q 'CC(=O)Nc1ccccc1' --dist 2 --rup 0 --rdn 0  # keep the rings",
    "molsift analogs big.store --queries leads.smi --dist 2 -k 50 -j 4 -o analogs.parquet",
)
# the edit kinds as analogs/skeleton.py orders them, written out: importing that module here
# would add about 5 ms to the start of every verb (the parser imports each verb module)
KINDS = ("tdn", "tup", "rdn", "rup", "ldn", "lup")
COLUMNS = ("query", "distance", "tanimoto", *KINDS, "mut", "position", "id", "smiles")
TYPES = {"distance": "int64", "tanimoto": "float64", **{k: "int64" for k in (*KINDS, "mut")}}
KIND_HELP = {
    "tdn": "terminal deletions (an atom of degree 1 and its bond)",
    "tup": "terminal insertions (a new atom bonded to one atom)",
    "rdn": "ring deletions (a bond on a cycle)",
    "rup": "ring insertions (a bond between two atoms of one component)",
    "ldn": "linker deletions (an atom of degree 2 removed, its neighbours joined)",
    "lup": "linker insertions (a new atom in the middle of a bond)",
}


def add_parser(subparsers):
    p = add_verb(
        subparsers,
        "analogs",
        help="analog search by graph edit distance between skeletons (SmallWorld's search)",
        description="Find the molecules whose skeletons (heavy atoms and bonds, every label "
        "removed) are at most --dist edits from the query's. An edit adds or removes a terminal "
        "atom, a ring bond or a linker atom (docs/analogs.md). The search is exact: a "
        "breadth-first walk from the query over every edit, looked up in the store's analog "
        "index (`molsift index STORE --analogs`). Hits come nearest first, each distance as "
        "soon as it has been searched, ranked by distance, then Morgan Tanimoto to the query, "
        "then position. Output: TSV query, distance, tanimoto, the edits by kind of one "
        "shortest path, mut (the hit's atoms whose element differs from the query atom they "
        "come from along that path; -1 where unknown), position, id, smiles.",
        examples=EXAMPLES,
    )
    p.add_argument("store")
    p.add_argument("-q", "--query", action="append", metavar="SMILES", help="a query (repeatable)")
    p.add_argument("--queries", metavar="FILE", help=QUERIES_HELP)
    p.add_argument(
        "--dist",
        type=int,
        default=2,
        metavar="D",
        help="the most edits (default 2; each edit costs about 100 times the one before: "
        "3 takes seconds to minutes, so pair it with -k or --timeout)",
    )
    p.add_argument(
        "-k",
        type=hit_count,
        metavar="K",
        help="the K best hits: the walk stops at the distance where K molecules are reached",
    )
    for kind, what in KIND_HELP.items():
        p.add_argument(
            f"--{kind}",
            type=int,
            metavar="N",
            help=f"at most N {what} (default: no limit)",
        )
    p.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="stop each query after this many seconds; its hits are complete up to the last "
        "distance finished, and a note on stderr says so",
    )
    p.add_argument(
        "-j",
        "--threads",
        type=at_least_one,
        metavar="N",
        help="threads each distance of the walk is divided among, N >= 1, the same hits for any N "
        "(default: all cores; 1 a rank under mpirun, where the ranks of a node divide it)",
    )
    p.add_argument(
        "-o",
        "--output",
        help="write hits here (.parquet for Parquet; -o -: stdout, the default)",
    )
    add_format_options(p, what="--queries file")
    add_io_log(p)
    return p


def run(args) -> int:
    from ..analogs.search import _index, _query, check_dist, check_timeout, parse_limits
    from ..sets.mpi import for_ranks
    from ..store import open_store
    from .substructure import _Writer

    if not args.query and not args.queries:
        raise ValueError("give a query: -q SMILES or --queries FILE")
    check_dist(args.dist, "--dist")  # the library's checks, before any output
    check_timeout(args.timeout, "--timeout")
    limits = {k: getattr(args, k) for k in KINDS if getattr(args, k) is not None}
    parse_limits(limits)  # a bad limit: one error before any query
    output = output_file(args.output)  # no -o, -o '' or -o -: stdout
    check_hits_output(output, "analogs", reads={"--queries": args.queries}, store=args.store)
    lone_query(args, lambda text: _query(None, text))  # a lone bad -q: the run's one error
    store = open_store(args.store, verify=False)
    if not store.has_analog_index:
        raise ValueError(store.missing_index("analogs"))
    if not hasattr(store, "shards"):
        # an index that cannot be opened (damaged, of an older format): its one error before
        # any output (a set's shards open theirs as their ranks walk them)
        _index(store)
    queries = for_ranks(store, args, lambda: query_source(args))
    threads = args.threads or (1 if getattr(store, "_ranks", None) else os.cpu_count() or 1)
    writer = _Writer(output, COLUMNS, TYPES)
    asked = failed = hits_total = 0
    start_chemistry(store)
    start = time.perf_counter()
    try:
        for given in queries:
            asked += 1
            where, name = given.where, given.id
            if given.problem is not None:
                report_skipped(where, name, given.problem)
                failed += 1
                continue
            found = 0
            try:
                for level in store.iter_analogs(
                    given.text,
                    max_dist=args.dist,
                    k=args.k,
                    limits=limits,
                    timeout=args.timeout,
                    threads=threads,
                ):
                    cols = level.columns
                    positions = cols["position"].tolist()
                    ids, smiles = store.ids.take(positions), store.smiles.take(positions)
                    rows = zip(
                        [name] * len(positions),
                        cols["distance"].tolist(),
                        [round(t, 6) for t in cols["tanimoto"].tolist()],
                        *(cols[k].tolist() for k in KINDS),
                        cols["mut"].tolist(),
                        positions,
                        ids,
                        smiles,
                    )
                    writer.rows(list(rows))
                    found += len(positions)
                    if level.partial:
                        print(
                            f"molsift: {where}query {name!r}: --timeout {args.timeout} s ended "
                            f"the search; hits are complete up to distance {level.complete_to}",
                            file=sys.stderr,
                        )
            except ValueError as exc:  # skipped and named as search names one
                report_skipped(where, name, str(exc))
                failed += 1
                continue
            hits_total += found
    finally:
        writer.close()
    return query_summary(asked, failed, hits_total, time.perf_counter() - start)
