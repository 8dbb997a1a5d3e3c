"""`molsift lookup STORE -q SMILES | --queries FILE | --ids FILE`: is each molecule (or id) in
the store, and where? Rows to stdout or -o (TSV): query, found, ids, positions, canonical
SMILES. Exit 0 when every query was found, 1 when some were not (as grep), 2 on an error."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator

from .common import EXIT_NOT_FOUND, add_io_log, add_verb

#: queries read, canonicalized and probed at a time (memory stays bounded for any file)
BATCH = 200_000
EXAMPLES = (
    "molsift lookup nci.v2.store -q 'O=C1C=CC(=O)C(C)=C1'   # any SMILES of a molecule finds it",
    "molsift lookup nci.v2.store --queries mine.smi -o found.tsv -j 8",
    "molsift lookup nci.v2.store --ids wanted.tsv   # ids: the first column",
)
HEADER = "query\tfound\tids\tpositions\tcanonical_smiles\n"


def add_parser(subparsers):
    p = add_verb(
        subparsers,
        "lookup",
        help="exact lookup: is this molecule (or id) in the store, and where?",
        description="Look molecules up by structure (each query SMILES is canonicalized as "
        "ingest canonicalized the store, so any valid SMILES of a molecule finds it) or by id. "
        "Needs a version-2 store (molsift upgrade STORE -o NEW). Output (TSV): query, found "
        "(yes, no, or invalid for a SMILES RDKit cannot read), the ids and store positions "
        "of every copy, the canonical SMILES. Exit status 0 when all were found, 1 when some "
        "were not, 2 on an error.",
        examples=EXAMPLES,
    )
    p.add_argument("store")
    p.add_argument(
        "-q", "--query", action="append", metavar="SMILES", help="a query SMILES (repeatable)"
    )
    p.add_argument(
        "--queries", metavar="FILE", help="queries, one SMILES per line (the first word)"
    )
    p.add_argument(
        "--ids", metavar="FILE", help="ids to look up, one per line (the first tab-separated field)"
    )
    p.add_argument(
        "-j",
        "--workers",
        type=int,
        default=None,
        help="processes canonicalizing the queries (default: all cores)",
    )
    p.add_argument("-o", "--output", help="write the rows here instead of stdout")
    add_io_log(p)
    return p


def _lines(path: str, first_word: bool) -> Iterator[str]:
    """The first word (SMILES) or first tab-separated field (ids) of each non-empty line."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            text = line.strip()
            if not text:
                continue
            yield text.split()[0] if first_word else text.split("\t")[0]


def _batches(items: Iterator[str]) -> Iterator[list[str]]:
    batch: list[str] = []
    for item in items:
        batch.append(item)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def run(args) -> int:
    from ..lookup import lookup_all
    from ..store import open_store

    given = sum(bool(x) for x in (args.query, args.queries, args.ids))
    if given != 1:
        raise ValueError("give one kind of query: -q SMILES, --queries FILE or --ids FILE")
    for path in (args.queries, args.ids):
        if path and not os.path.isfile(path):
            raise ValueError(f"{path}: no such file")
    store = open_store(args.store, verify=False)
    if not hasattr(store, "lookup"):
        raise ValueError(
            f"{args.store} is a version-1 store, which has no exact-match index: "
            f"write its version-2 form with `molsift upgrade {args.store} -o NEW.store`"
        )
    counts = {"yes": 0, "no": 0, "invalid": 0}
    start = time.perf_counter()
    with contextlib.ExitStack() as stack:
        out = (
            stack.enter_context(open(args.output, "w", encoding="utf-8"))
            if args.output
            else sys.stdout
        )
        out.write(HEADER)
        if args.ids:
            for batch in _batches(_lines(args.ids, first_word=False)):
                for q, positions in zip(batch, store._core.lookup_ids(batch)):
                    _row(out, store, q, "", positions, counts)
        else:
            source = iter(args.query) if args.query else _lines(args.queries, first_word=True)
            for batch in _batches(source):
                for q, canonical, positions in lookup_all(store, batch, args.workers):
                    _row(out, store, q, canonical, positions, counts)
    seconds = time.perf_counter() - start
    total = sum(counts.values())
    print(
        f"molsift: {total:,} queries: {counts['yes']:,} found, {counts['no']:,} not found"
        + (f", {counts['invalid']:,} unparsable" if counts["invalid"] else "")
        + f" in {seconds:.2f} s ({total / max(seconds, 1e-9):,.0f} queries/s)",
        file=sys.stderr,
    )
    return 0 if counts["yes"] == total else EXIT_NOT_FOUND


def _row(out, store, query: str, canonical: str | None, positions, counts: dict) -> None:
    """One output row. `canonical` is the query's canonical SMILES, None for an unparsable
    SMILES, or "" for an id query (the SMILES column then shows the stored molecule's)."""
    found = "yes" if positions else ("invalid" if canonical is None else "no")
    counts[found] += 1
    ids = ",".join(store.ids[int(p)] for p in positions)
    where = ",".join(str(int(p)) for p in positions)
    smiles = canonical or (store.smiles[int(positions[0])] if positions else "")
    out.write(f"{query}\t{found}\t{ids}\t{where}\t{smiles}\n")
