"""`molsift lookup STORE -q SMILES | --queries FILE | --ids FILE`: is each molecule (or id) in
the store, and where? Rows to stdout or -o (TSV): query (the query's id, as the other query
verbs write it: its name in the --queries file, else its line number; a -q's SMILES; the id
looked up with --ids), found, ids, positions, canonical SMILES. Exit 0 when every query was
found, 1 when some were not (as grep), 2 on an error."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator

from ..tsv import row as tsv_row
from ..wording import plural
from .common import (
    EXIT_NOT_FOUND,
    QUERIES_HELP,
    add_format_options,
    add_io_log,
    add_verb,
    at_least_one,
    check_hits_output,
    output_file,
    query_file,
    query_file_options,
    query_source,
    report_skipped,
    start_chemistry,
)

#: queries read, canonicalized and probed at a time (memory stays bounded for any file)
BATCH = 200_000
EXAMPLES = (
    "molsift lookup nci.store -q 'O=C1C=CC(=O)C(C)=C1'   # any SMILES of a molecule finds it",
    "molsift lookup nci.store --queries mine.smi -o found.tsv -j 8",
    "molsift lookup nci.store --ids wanted.tsv   # ids: the first word of each line",
)
HEADER = "query\tfound\tids\tpositions\tcanonical_smiles\n"


def add_parser(subparsers):
    p = add_verb(
        subparsers,
        "lookup",
        help="exact lookup: is this molecule (or id) in the store, and where?",
        description="Look molecules up by structure (each query SMILES is canonicalized as "
        "ingest canonicalized the store, so any valid SMILES of a molecule finds it) or by id. "
        "Needs a version-2 store (molsift upgrade STORE -o NEW). Output (TSV): query (its id, "
        "as the other query verbs write it: the name after it in the --queries file, else its "
        "line number; the SMILES of a -q; the id looked up with --ids), found "
        "(yes, no, or invalid: a SMILES RDKit cannot read, or a record the reader rejects, "
        "which is also named on stderr), the ids and store positions "
        "of every copy, the canonical SMILES. Exit status 0 when all were found, 1 when some "
        "were not, 2 on an error.",
        examples=EXAMPLES,
    )
    p.add_argument("store")
    p.add_argument(
        "-q", "--query", action="append", metavar="SMILES", help="a query SMILES (repeatable)"
    )
    p.add_argument("--queries", metavar="FILE", help=QUERIES_HELP)
    p.add_argument(
        "--ids",
        metavar="FILE",
        help="ids to look up, one per line: its first word (the file is read as a SMILES file "
        "is, gzip or zstd too, bad records skipped and named on stderr)",
    )
    p.add_argument(
        "-j",
        "--workers",
        type=at_least_one,
        default=None,
        metavar="N",
        help="processes canonicalizing the queries, N >= 1 (default: all cores)",
    )
    p.add_argument("-o", "--output", help="write the rows here (-o -: stdout, the default)")
    add_format_options(p, what="--queries file")
    add_io_log(p)
    return p


def _batches(items: Iterator) -> Iterator[list]:
    batch: list = []
    for item in items:
        batch.append(item)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def run(args) -> int:
    from ..lookup import lookup_all
    from ..sets.mpi import for_ranks, root_status
    from ..store import open_store

    given = sum(bool(x) for x in (args.query, args.queries, args.ids))
    if given != 1:
        raise ValueError("give one kind of query: -q SMILES, --queries FILE or --ids FILE")
    # no -o, -o '' or -o -: stdout, as every query verb has it (`-o -` made a file named `-`)
    args.output = output_file(args.output)
    check_hits_output(
        args.output,
        "lookup",
        parquet=False,
        reads={"--queries": args.queries, "--ids": args.ids},
        store=args.store,
    )
    if args.workers is not None:  # -j 100000: refused in one line, as screen and ingest do
        from ..parallel.processes import check_worker_count

        check_worker_count(args.workers)
    store = open_store(args.store, verify=False)
    if args.ids:  # one id per line, whatever the file's name: never a CSV header or SDF
        query_file_options(args)  # refused: the format options read no --ids file
        queries = for_ranks(
            store, args, lambda: query_file(args.ids, "ids", format="smiles", header=False)
        )
    else:
        queries = for_ranks(store, args, lambda: query_source(args))
    counts = {"yes": 0, "no": 0, "invalid": 0, "rejected": 0}
    start_chemistry()
    start = time.perf_counter()
    with contextlib.ExitStack() as stack:
        out = (
            stack.enter_context(open(args.output, "w", encoding="utf-8"))
            if args.output
            else sys.stdout
        )
        out.write(HEADER)
        for batch in _batches(queries):
            usable = [q.text for q in batch if q.problem is None]
            if args.ids:
                answers = iter(zip(usable, [""] * len(usable), store._core.lookup_ids(usable)))
            else:
                answers = iter(lookup_all(store, usable, args.workers))
            for q in batch:
                # the query column: the id looked up, else the query's id, as search,
                # substructure and analogs write it (a -q's id is its SMILES)
                label = q.text if args.ids else q.id
                if q.problem is not None:
                    report_skipped(q.where, q.id, q.problem)
                    _row(out, store, _printable(label), None, [], counts, rejected=True)
                    continue
                _text, canonical, positions = next(answers)
                _row(out, store, label, canonical, positions, counts)
    seconds = time.perf_counter() - start
    total = sum(counts.values())
    print(
        f"molsift: {plural(total, 'query', 'queries')}: {counts['yes']:,} found, "
        f"{counts['no']:,} not found"
        + (f", {counts['invalid']:,} unparsable" if counts["invalid"] else "")
        + (f", {counts['rejected']:,} rejected (named above)" if counts["rejected"] else "")
        + f" in {seconds:.2f} s ({total / max(seconds, 1e-9):,.0f} queries/s)",
        file=sys.stderr,
    )
    return root_status(store, 0 if counts["yes"] == total else EXIT_NOT_FOUND)


def _row(out, store, query: str, canonical, positions, counts: dict, rejected=False) -> None:
    """One output row. `canonical` is the query's canonical SMILES, None for an unparsable
    SMILES, or "" for an id query (the SMILES column then shows the stored molecule's). A
    record the reader `rejected` is an `invalid` row too (counted apart)."""
    found = "yes" if positions else ("invalid" if canonical is None else "no")
    counts["rejected" if rejected else found] += 1
    ids = ",".join(store.ids.take([int(p) for p in positions]))
    where = ",".join(str(int(p)) for p in positions)
    smiles = canonical or (store.smiles[int(positions[0])] if positions else "")
    out.write(tsv_row((query, found, ids, where, smiles)))


def _printable(text: str) -> str:
    """A rejected record's text as a row can hold it: without NULs, tabs or line breaks."""
    return "".join(c for c in text if c.isprintable())
