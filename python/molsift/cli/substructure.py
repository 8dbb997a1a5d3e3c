"""`molsift substructure STORE -q QUERY`: which molecules contain a SMILES or SMARTS query
(exactly RDKit's `HasSubstructMatch`), hits streamed in store order to stdout (TSV), a TSV file
or a Parquet file; `--count` for the number of hits only."""

from __future__ import annotations

import contextlib
import sys
import time

from ..tsv import row as tsv_row
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
    "molsift substructure nci.store --smarts -q 'c1ccc2[nH][cR1][cR1]c2c1'  # N-H indoles",
    "molsift substructure nci.store -q '[CX3](=O)[OX2H1]' --count  # carboxylic acids (SMARTS)",
    "molsift substructure chiral.store -q 'C[C@H](N)C(=O)O' --chirality --max-hits 10"
    "  # that stereocentre as drawn (nci.store, the bundled sample, has no stereocentres)",
    "molsift substructure big.store --queries scaffolds.txt -j 8 -o hits.parquet",
)
HIT_COLUMNS = ("query", "position", "id", "smiles")
COUNT_COLUMNS = ("query", "count")


def add_parser(subparsers):
    p = add_verb(
        subparsers,
        "substructure",
        help="substructure search (SMILES or SMARTS), exactly RDKit's HasSubstructMatch",
        description="Find the molecules of a store that contain a query. A query is read as "
        "SMILES (RDKit's MolFromSmiles) unless --smarts is given or it is not SMILES, then as "
        "SMARTS. The store's pattern planes screen out what cannot match; the rest is "
        "matched exactly on the index's molecule graphs (properties computed by RDKit, "
        "matched in Rust on -j threads), or by RDKit's HasSubstructMatch on worker processes "
        "for what the graph matcher cannot express (--chirality, a few rare primitives). "
        "Hits are RDKit's, in store order, as soon as they are confirmed. Output: TSV "
        "query, position, id, smiles (or query, count with --count).",
        examples=EXAMPLES,
    )
    p.add_argument("store")
    p.add_argument(
        "-q", "--query", action="append", metavar="QUERY", help="a SMILES or SMARTS (repeatable)"
    )
    p.add_argument("--queries", metavar="FILE", help=QUERIES_HELP)
    p.add_argument("--smarts", action="store_true", help="read every query as SMARTS")
    p.add_argument(
        "--chirality",
        action="store_true",
        help="match tetrahedral and double-bond stereo (RDKit's useChirality)",
    )
    p.add_argument(
        "--max-hits",
        type=hit_count,
        metavar="N",
        help="stop each query after its first N hits in store order (default: all hits)",
    )
    p.add_argument("--count", action="store_true", help="print the number of hits per query only")
    p.add_argument(
        "-j",
        "--workers",
        type=at_least_one,
        metavar="N",
        help="threads (graph matcher) or worker processes (RDKit) for the exact match, N >= 1 "
        "(default: all cores; few survivors are matched in this process)",
    )
    p.add_argument(
        "-o",
        "--output",
        help="write hits here (.parquet for Parquet; -o -: stdout, the default)",
    )
    add_format_options(p, what="--queries file")
    add_io_log(p)
    return p


class _Writer:
    """Hit rows to TSV (streamed) or Parquet (one row group per call of `rows`). Parquet column
    types: `types[name]` ("int64", "float64" or "string"); by default int64 for position and
    count, string for the rest."""

    def __init__(self, path: str | None, columns: tuple[str, ...], types: dict | None = None):
        self.columns = columns
        self.types = {c: "int64" if c in ("position", "count") else "string" for c in columns}
        self.types.update(types or {})
        self.parquet = path is not None and path.lower().endswith(".parquet")  # as -o is checked
        self._stack = contextlib.ExitStack()
        if self.parquet:
            try:
                import pyarrow  # noqa: F401
            except ImportError:
                raise ValueError("Parquet output needs pyarrow (pip install pyarrow)") from None
            self._path, self._pq = path, None
        else:
            from ..iostats import open_counted

            self._out = self._stack.enter_context(open_counted(path, "w")) if path else sys.stdout
            self._out.write("\t".join(columns) + "\n")

    def rows(self, rows: list[tuple]) -> None:
        if not rows:
            return
        if self.parquet:
            import pyarrow as pa
            import pyarrow.parquet as pq

            cols = list(zip(*rows))
            table = pa.table(
                {
                    name: pa.array(list(c), getattr(pa, self.types[name])())
                    for name, c in zip(self.columns, cols)
                }
            )
            if self._pq is None:
                self._pq = pq.ParquetWriter(self._path, table.schema)
            self._pq.write_table(table)
        else:
            self._out.write("".join(map(tsv_row, rows)))
            self._out.flush()

    def close(self) -> None:
        if self.parquet:
            if self._pq is None:  # no row at all: an empty table with the columns
                import pyarrow as pa
                import pyarrow.parquet as pq

                types = {c: getattr(pa, self.types[c])() for c in self.columns}
                pq.write_table(pa.table({c: pa.array([], types[c]) for c in self.columns}),
                               self._path)  # fmt: skip
            else:
                self._pq.close()
        self._stack.close()


def run(args) -> int:
    from ..sets.mpi import for_ranks, prepared
    from ..store import open_store
    from ..substructure import QueryError, last_stats, parse_query
    from ..substructure.search import iter_hit_arrays

    if not args.query and not args.queries:
        raise ValueError("give a query: -q QUERY or --queries FILE")

    def check(text: str) -> None:  # a lone bad -q: the run's one error, as search says it
        try:
            parse_query(text, smarts=args.smarts, chirality=args.chirality)
        except QueryError as exc:
            raise ValueError(exc.reason) from None  # named by lone_query

    output = output_file(args.output)  # no -o, -o '' or -o -: stdout
    check_hits_output(output, "substructure", reads={"--queries": args.queries}, store=args.store)
    lone_query(args, check)
    store = open_store(args.store, verify=False)
    store._pattern_index()  # no index: one clear error before any query
    queries = for_ranks(store, args, lambda: query_source(args))
    writer = _Writer(output, COUNT_COLUMNS if args.count else HIT_COLUMNS)
    asked = failed = hits_total = 0
    start_chemistry()
    start = time.perf_counter()
    show = sys.stderr.isatty()

    def parse(given):
        if given.problem is not None:
            return None
        return parse_query(given.text, smarts=args.smarts, chirality=args.chirality)

    try:
        # under mpirun over a set the ranks share the queries' parsing (`prepared`)
        for given, query, error in prepared(store, queries, parse):
            asked += 1
            where, name = given.where, given.id
            if given.problem is not None:
                report_skipped(where, name, given.problem)
                failed += 1
                continue
            if isinstance(error, QueryError):  # skipped and named as search names one
                report_skipped(where, name, error.reason)
                failed += 1
                continue
            if error is not None:
                raise error
            if query.note:
                print(f"molsift: {where}note: {query.note}", file=sys.stderr)
            if query.always_false:
                print(f"molsift: {where}query {name!r}: {query.always_false}", file=sys.stderr)
            found = 0
            for hits in iter_hit_arrays(store, query, max_hits=args.max_hits, workers=args.workers):
                found += len(hits)
                if not args.count:
                    positions = hits.tolist()
                    ids, smiles = store.ids.take(positions), store.smiles.take(positions)
                    writer.rows([(name, *row) for row in zip(positions, ids, smiles)])
                if show:
                    s = last_stats()
                    print(
                        f"\rmolsift: {name[:30]}: {found:,} hits, "
                        f"{s.get('matched', 0):,} of {s['candidates']:,} survivors matched",
                        end="",
                        file=sys.stderr,
                    )
            if show:
                print("\r\033[K", end="", file=sys.stderr)
            if args.count:
                writer.rows([(name, found)])
            stats = last_stats()
            if stats.get("stopped_early"):
                print(
                    f"molsift: {where}query {name!r}: stopped at --max-hits {args.max_hits} "
                    "(more molecules may match)",
                    file=sys.stderr,
                )
            hits_total += found
    finally:
        writer.close()
        store.close()
    return query_summary(asked, failed, hits_total, time.perf_counter() - start)
