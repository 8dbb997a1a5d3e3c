"""What several verbs share: the exit codes, sizes (`64KiB`), the input-format options,
`--io-log`, defaults taken from the library, the help layout (description, examples), the
check of an output path (`check_output`), and the queries, skipped-query lines and closing
line of the query verbs."""

from __future__ import annotations

import argparse
import itertools
import os
import re
import sys

from ..limits import MAX_SECONDS  # the longest time limit: a year
from ..wording import plural, quoted, size_text
from .exits import (  # noqa: F401  (re-exported: the verbs take them from here)
    EXIT_CODES,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_NOTHING_USABLE,
    EXIT_PIPE_CLOSED,
    IO_LOG_HELP,
)

TYPE_CHECKING = False  # typing costs milliseconds at start-up: imported for the checkers only
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from typing import Any

    from ..inputs.queries import Query

QUERIES_HELP = (
    "queries from a file, read as any input is (SMILES, CSV with a smiles column, SDF; gzip or "
    "zstd too; the format options below): in a SMILES file a query per line, optionally "
    "followed by its name (default: its line number; in a CSV the --id-col column), blank "
    "lines and lines starting with # skipped; a record that cannot be read (longer than the "
    "reader's limit, not UTF-8) is skipped and named on stderr"
)
SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kb": 1000,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mb": 1000**2,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gb": 1000**3,
    "gib": 1 << 30,
}


class HelpFormatter(argparse.HelpFormatter):
    """Wraps one-paragraph descriptions to the terminal; text with line breaks (the examples,
    the exit codes) is shown as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def add_verb(
    subparsers, name: str, *, help: str, examples: Sequence[str], **kwargs: Any
) -> argparse.ArgumentParser:
    """A verb's parser whose help ends with its example command lines (a comment after
    two spaces and `#` is aligned with the others)."""
    split = [[part.strip() for part in line.partition("  #")[::2]] for line in examples]
    width = max((len(command) for command, comment in split if comment), default=0)
    epilog = "examples:\n" + "\n".join(
        f"  {command:<{width}}  # {comment}" if comment else f"  {command}"
        for command, comment in split
    )
    return subparsers.add_parser(
        name, help=help, epilog=epilog, formatter_class=HelpFormatter, **kwargs
    )


def default_of(function: Callable, parameter: str) -> Any:
    """The default of `function`'s `parameter` (a class: of its `__init__`): a command-line
    default is the library's own, never a copy of it (tests/test_cli.py checks every help text
    against these). Read from the code object, not by `inspect`, which costs `molsift count`
    10 ms of start-up."""
    fn = getattr(function, "__wrapped__", function)
    fn = fn.__init__ if isinstance(fn, type) else fn
    kwdefaults = fn.__kwdefaults__ or {}
    if parameter in kwdefaults:
        return kwdefaults[parameter]
    names = fn.__code__.co_varnames[: fn.__code__.co_argcount]
    defaults = fn.__defaults__ or ()
    at = names.index(parameter) - (len(names) - len(defaults))
    if at < 0:
        raise ValueError(f"{fn.__qualname__}: {parameter} has no default")
    return defaults[at]


def at_least_one(text: str, hint: str = "") -> int:
    """A whole number >= 1 from the command line (`hint` is added to the error)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}{hint}")
    return n


def hit_count(text: str, hint: str = "") -> int:
    """A number of hits (-k, --max-hits): a whole number >= 1 (`at_least_one`); one larger than
    any store (`-k 99999999999999999999`) means every hit, and is taken as `sys.maxsize`, which
    the core's 64-bit counts hold (a larger one was an OverflowError and a traceback)."""
    return min(at_least_one(text, hint), sys.maxsize)


def seconds(text: str) -> float:
    """A positive number of seconds from the command line, at most MAX_SECONDS."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"must be a positive number of seconds, at most {MAX_SECONDS} (a year), got {text}"
        )
    return value


def in_range(text: str, low: float, high: float, what: str) -> float:
    """A number from the command line from `low` to `high` (whole when `low` is an int); `what`
    says in the error what it must be."""
    convert = int if isinstance(low, int) else float
    try:
        n = convert(text)
    except ValueError:
        kind = "a whole number" if convert is int else "a number"
        raise argparse.ArgumentTypeError(f"not {kind}: {text!r}") from None
    if not low <= n <= high:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text}")
    return n


def parse_size(text: str) -> int:
    """'4096', '64K', '64KiB', '1M', '1MB' -> bytes (K/M/G without B are binary)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in SIZE_UNITS:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 4096, 64K, 1MiB)")
    value = int(float(m.group(1)) * SIZE_UNITS[m.group(2).lower()])
    if value < 1:
        raise argparse.ArgumentTypeError(f"size must be at least 1 byte: {text!r}")
    return value


def add_reader_options(p: argparse.ArgumentParser, metavar: str | None = None) -> None:
    """--read-buffer, --max-record-bytes and --io; None is passed on, and the Rust reader's
    defaults (shown in the help, from the core: one place for the numbers) apply."""
    from .._core import (
        DEFAULT_MAX_LINE_RECORD_BYTES,
        DEFAULT_MAX_SDF_RECORD_BYTES,
        DEFAULT_READ_BUFFER,
        IO_AUTO_MAP_BELOW,
    )
    from ..inputs.counting import IO_METHODS

    p.add_argument(
        "--read-buffer",
        type=parse_size,
        metavar=metavar,
        help=f"bytes per read call (default {size_text(DEFAULT_READ_BUFFER)})",
    )
    p.add_argument(
        "--max-record-bytes",
        type=parse_size,
        help=f"longer records are rejected (default {size_text(DEFAULT_MAX_LINE_RECORD_BYTES)} "
        f"for SMILES and CSV lines, {size_text(DEFAULT_MAX_SDF_RECORD_BYTES)} for SDF blocks)",
    )
    p.add_argument(
        "--io",
        choices=IO_METHODS,
        help="how each slab of a plain file is read (default: auto: by pread when the slab is "
        f"cached or under {IO_AUTO_MAP_BELOW >> 20} MiB, and by pread with read-ahead when "
        "not, cold slabs too; the choices are those of molsift count --io)",
    )


def add_format_options(
    p: argparse.ArgumentParser, columns: bool = True, what: str = "input"
) -> None:
    """How to read an input (`what`: the query verbs' `--queries file`): --format,
    --header/--no-header, and (unless `columns` is false: a verb that reads no field, as
    `count`) the CSV columns and delimiter."""
    g = p.add_argument_group(f"{what} format (guessed from the file name when not given)")
    g.add_argument("--format", choices=["smiles", "csv", "sdf"], help="record format")
    g.add_argument(
        "--header",
        dest="header",
        action="store_true",
        default=None,
        help="the first line is a header (SMILES and CSV files, not SDF; default: guessed "
        "from the first line, and a CSV has one)",
    )
    g.add_argument("--no-header", dest="header", action="store_false")
    if not columns:
        return
    g.add_argument(
        "--smiles-col", help="CSV: name of the SMILES column (default: 'smiles', any case)"
    )
    g.add_argument("--id-col", help="CSV: name of the id column (default: ids are line numbers)")
    g.add_argument("--delimiter", choices=[",", "tab"], help="CSV delimiter (default: guessed)")


def format_options(args: argparse.Namespace) -> dict[str, Any]:
    """The input-format options as the library takes them (`format=`, `header=`, ...)."""
    return {
        "format": args.format,
        "header": args.header,
        "smiles_col": args.smiles_col,
        "id_col": args.id_col,
        "delimiter": "\t" if args.delimiter == "tab" else args.delimiter,
    }


def query_file_options(args: argparse.Namespace) -> dict[str, Any]:
    """`format_options` of a query verb's --queries file; ValueError when one is given without
    --queries (it would be ignored: -q's text is a SMILES, no record to read)."""
    options = format_options(args)
    given = [f"--{k.replace('_', '-')}" for k, v in options.items() if v is not None]
    if given and not args.queries:
        raise ValueError(f"{given[0]} says how to read the --queries file: give --queries FILE")
    return options


def add_io_log(p: argparse.ArgumentParser) -> None:
    """--io-log is global (before the verb) and also taken after it."""
    p.add_argument("--io-log", metavar="FILE", default=argparse.SUPPRESS, help=IO_LOG_HELP)


def nothing_read(records_in: int) -> str:
    """Why a run produced nothing, in the words of ingest's and screen's error: the input held
    no record, or every record was rejected."""
    if records_in == 0:
        return "the input holds no records (empty, or only blank and comment lines)"
    if records_in == 1:
        return "the one record was rejected"
    return f"all {records_in:,} records were rejected"


def nothing_usable(records_in: int, where: str) -> int:
    """Says loudly that a run produced nothing (in every verb's words for an error: `molsift:
    error:`) and returns EXIT_NOTHING_USABLE."""
    why = nothing_read(records_in)
    if records_in:
        why += f" (reason{'' if records_in == 1 else 's'} in {where})"
    print(
        f"molsift: error: nothing usable: {why}; exit status {EXIT_NOTHING_USABLE}",
        file=sys.stderr,
    )
    return EXIT_NOTHING_USABLE


def check_output(path: str | None) -> None:
    """Refuses an output file that cannot be written, before any work: `path` is a directory,
    or its directory does not exist or may not be written to. Every verb whose -o names a file
    calls this first; the ValueError is one line and exit status 2. None or '' (standard
    output) passes."""
    if not path:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        why = "it is a directory"
    elif not os.path.exists(folder):
        why = f"no such directory {folder}"
    elif not os.path.isdir(folder):
        why = f"{folder} is not a directory"
    elif not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        why = "permission denied"
    else:
        return
    raise ValueError(f"{path}: cannot write the output: {why}")


def output_file(path: str | None) -> str | None:
    """A query verb's -o: None (standard output) for no -o, `-o ''` and `-o -` (which made a
    file named `-`), else the path."""
    return None if path in (None, "", "-") else path


#: suffixes of other formats than a hit table's: refused rather than filled with TSV text
OTHER_FORMATS = (".csv", ".json", ".jsonl", ".ndjson", ".xlsx", ".xls", ".sdf", ".sd", ".smi",
                 ".h5", ".hdf5", ".arrow", ".feather", ".gz", ".zst", ".pq")  # fmt: skip


def same_file(a: str, b: str) -> bool:
    """Whether `a` and `b` name one existing file, however spelled (`./x`, a hard link)."""
    return os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b)


def check_hits_output(
    path: str | None,
    verb: str,
    parquet: bool = True,
    reads: dict[str, str | None] | None = None,
    store: str | None = None,
) -> None:
    """`check_output`, and a hit table's format from its name: Parquet for `.parquet` (where
    the verb writes it), else tab-separated text; a name of another format (`.csv`, `.json`,
    ...; `.parquet` where the verb writes no Parquet) is refused before any work, rather than
    filled with TSV text under that name; Parquet without pyarrow is refused too. So is an
    output that is a file the verb reads (`reads`: option -> path, `{"--queries": FILE}`: it
    was emptied before its queries were read, or replaced by the hits) or that lies inside the
    `store` it searches (`-o STORE/rejects.tsv` overwrote the store's own file: it no longer
    opened)."""
    check_output(path)
    if not path:
        return
    for option, read in (reads or {}).items():
        if read and same_file(path, read):
            raise ValueError(
                f"{path}: the output is the {option} file, which would be overwritten: "
                "write the hits to another file"
            )
    if store and os.path.realpath(path).startswith(os.path.realpath(store) + os.sep):
        raise ValueError(
            f"{path}: is inside the store {store}, which molsift {verb} reads: write the hits "
            "outside it"
        )
    name = os.path.basename(path).lower()
    other = [s for s in OTHER_FORMATS if name.endswith(s)]
    if not parquet and name.endswith(".parquet"):
        other = [".parquet"]
    if other:
        formats = "tab-separated text (e.g. -o hits.tsv)" + (
            " or Parquet (-o hits.parquet)" if parquet else ""
        )
        raise ValueError(f"{path}: molsift {verb} writes {formats}, not {other[0]}")
    if name.endswith(".parquet"):  # before the search, not once its hits are in
        try:
            import pyarrow.parquet  # noqa: F401
        except ImportError:
            raise ValueError("Parquet output needs pyarrow (pip install pyarrow)") from None


def query_source(args: argparse.Namespace) -> Iterator[Query]:
    """The queries of a query verb in order: each `-q` (its text is its id), then every record
    of the `--queries` file as the input model reads it (`inputs.read_queries`: SMILES, CSV,
    SDF, gzip/zstd, the reader's record-size limit, the format options `query_file_options`;
    the id is the name after a SMILES, the CSV column of --id-col or an SDF title, else the
    line number). A record the reader rejects comes with its
    `problem`, for the verb to report (`report_skipped`) and count. A missing file, or one that
    holds no queries (`query_file`), is an error here, before any query."""
    from ..inputs.queries import Query

    options = query_file_options(args)
    given = [Query(text, text) for text in args.query or []]
    return itertools.chain(given, query_file(args.queries, **options) if args.queries else ())


def query_file(path: str, what: str = "queries", **options: Any) -> Iterator[Query]:
    """Every record of a query file (`--queries`, lookup's `--ids`), read lazily as
    `inputs.read_queries` reads it (`options`: its format options), every query verb's one
    way in; a file that holds no record at all (empty, or only blank, comment or header
    lines) is refused here, before any output, with ValueError 'PATH holds no `what`' (it
    gave an empty table and exit 0, as if every query had been answered). A file whose
    records are all unreadable is not empty: those are skipped and named by the verb."""
    from ..inputs.queries import read_queries

    records = read_queries(path, **options)
    first = next(records, None)
    if first is None:
        raise ValueError(
            f"{path} holds no {what} (it is empty, or holds only blank, comment or header lines)"
        )
    from .count import assumed_format_note

    assumed_format_note(path, options.get("format"))  # once the file is known to be one
    return itertools.chain((first,), records)


def lone_query(args: argparse.Namespace, check: Callable[[str], object]) -> None:
    """A query verb's one `-q`, given alone (no other -q, no --queries), checked by `check`
    (the verb's own reading of a query; ValueError when it cannot be searched) before the store
    is opened and anything is written: a bad one is the run's error, one `molsift: error:`
    line naming the query and the reason (exit 2, no table written to -o), as search says it.
    It was a skip line, '0 of 1 query answered' and an empty table in substructure and analogs.
    Among other queries a bad one is skipped and named, and the others answered."""
    if args.queries or len(args.query or ()) != 1:
        return
    text = args.query[0]
    try:
        check(text)
    except ValueError as exc:
        message = str(exc)
        named = not text.strip() or quoted(text) in message or repr(text) in message
        if not named:  # `invalid query SMILES 'X': ...`, `empty query: give a SMILES` name it
            message = f"query {quoted(text)}: {message}"
        raise ValueError(message) from None


def report_skipped(where: str, query_id: str, reason: str) -> None:
    """The stderr line of a query that is skipped (`where`: 'PATH:LINE: ' or '')."""
    print(f"molsift: {where}query {quoted(query_id)} skipped: {reason}", file=sys.stderr)


def start_chemistry(store=None) -> None:
    """Imports RDKit (about 40 ms, once a process) and makes `store`'s fingerprint generator
    (about 9 ms) before a query verb starts its clock, so that the closing line's time is the
    queries' own (read, parsed, fingerprinted and searched), not the toolkit's start: a single
    query once read `50 ms/query` for 2 ms of work."""
    from rdkit import Chem  # noqa: F401

    if getattr(store, "fingerprint_spec", None) is not None:
        from ..search import fingerprinter_for

        fingerprinter_for(store)


def query_summary(queries: int, failed: int, hits: int, seconds: float) -> int:
    """Prints the closing line of a query verb on stderr; the exit status (EXIT_ERROR when a
    query failed)."""
    answered = queries - failed
    print(
        f"molsift: {answered:,} of {plural(queries, 'query', 'queries')} answered, "
        f"{plural(hits, 'hit')} in "
        f"{seconds * 1000:.1f} ms ({seconds * 1000 / max(1, answered):.1f} ms/query)",
        file=sys.stderr,
    )
    return EXIT_ERROR if failed else 0
