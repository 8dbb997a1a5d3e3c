"""The `molsift` command line: `molsift <verb> --help`. One module per verb holds its options
(`add_parser`) and its handler (`run`); `common.py` what several share. Library errors become
one friendly line on stderr and exit status 2 (the exit codes: EXIT_CODES); nothing here does
real work itself."""

from __future__ import annotations

import sys

from ..wording import plural
from .exits import EXIT_CODES, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_PIPE_CLOSED, IO_LOG_HELP

TYPE_CHECKING = False  # argparse costs `molsift count` 14 ms: imported where a parser is built
if TYPE_CHECKING:
    import argparse

__all__ = ["EXIT_CODES", "build_parser", "main"]

# One module per verb, in help order. A command line naming its verb first imports only that
# verb's module (`molsift count` starts counting a few milliseconds after Python starts).
VERBS = (
    "count",
    "ingest",
    "search",
    "substructure",
    "analogs",
    "lookup",
    "screen",
    "report",
    "index",
    "info",
    "upgrade",
    "serve",
    "profile",
    "insights",
    "cube",
)
RDKIT_VERBS = (
    "ingest",
    "lookup",
    "screen",
    "substructure",
    "index",
    "serve",
)  # restarted once on tcmalloc (allocator.py)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; `only`: with that verb alone (what `main` builds when the
    command line names its verb first)."""
    import argparse
    from importlib import import_module

    from .. import __version__
    from .common import HelpFormatter

    parser = argparse.ArgumentParser(
        prog="molsift",
        description="Store, search and screen ultra-large compound libraries.",
        epilog=EXIT_CODES,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"molsift {__version__}")
    parser.add_argument("--io-log", metavar="FILE", help=IO_LOG_HELP)
    subparsers = parser.add_subparsers(dest="verb", metavar="<verb>", required=True)
    for name in (only,) if only else VERBS:
        verb = import_module(f".{name}", __name__)
        verb.add_parser(subparsers).set_defaults(func=verb.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs one command line; returns its exit status. Memory that runs out anywhere (numpy's
    or RDKit's libraries that cannot be loaded under `ulimit -v`) is one line, status 2."""
    import os

    from ..limits import fit_to_limit, memory_message, out_of_memory

    fit_to_limit()
    # said when even the words cannot be put together any more (memory ran out while handling)
    last_words = memory_message("a memory allocation failed").encode()
    try:
        return _run(argv)
    except BaseException as exc:  # BaseException: the Rust core's panics are not Exceptions
        try:
            message = out_of_memory(exc)
            if message is None:
                raise
            print(f"molsift: error: {message}", file=sys.stderr)
        except MemoryError:
            os.write(2, b"molsift: error: " + last_words + b"\n")
        return EXIT_ERROR


def _run(argv: list[str] | None) -> int:
    import time

    from .._core import MolsiftError

    words = sys.argv[1:] if argv is None else argv
    args = None
    if words[:1] == ["count"]:  # its usual command lines, without importing argparse
        from .count import fast_args

        args = fast_args(words[1:])
    if args is None:
        only = words[0] if words and words[0] in VERBS else None
        args = build_parser(only).parse_args(argv)
    if argv is None and args.verb in RDKIT_VERBS:
        from .. import allocator

        allocator.reexec(sys.argv[1:])  # returns only when no restart was needed
    start = time.time()
    if args.io_log:
        from ..iostats import collect_from_workers
        from .common import check_output

        try:
            try:
                check_output(args.io_log)  # before any work, as -o is: not after the results
            except ValueError as exc:  # named as the option it is (it said "the output")
                text = str(exc).replace("cannot write the output", "cannot write the I/O log")
                raise ValueError(f"--io-log {text}") from None
            check_io_log(args)
        except ValueError as exc:
            print(f"molsift: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
        collect_from_workers()
    try:
        status = args.func(args)
        if args.io_log:
            _write_io_log(args, start, status)
        return status
    except (MolsiftError, ValueError) as exc:
        ranks = sys.modules.get("molsift.sets.mpi")  # imported only by verbs that search sets
        if (
            ranks is not None and ranks.searching_ranks()
        ):  # one rank's error (a damaged shard): the others must not wait
            from ..parallel.mpi import abort_job

            print(f"molsift: error: {_in_words(exc)}", file=sys.__stderr__ or sys.stderr)
            abort_job(EXIT_ERROR, show_traceback=False)
        # one write: under mpirun every rank that meets an error before the ranks split the
        # work says it, and lines printed in two writes ran together
        sys.stderr.write(f"molsift: error: {_in_words(exc)}\n")
        sys.stderr.flush()
        if args.io_log and not _under_mpi():  # ranks may not all get here: no gather
            _write_io_log(args, start, EXIT_ERROR)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("molsift: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader of our output went away (`| head`): stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PIPE_CLOSED
    except OSError as exc:  # a full disk, a file that went away: one line with the file
        from ..limits import out_of_memory

        if out_of_memory(exc) is not None:  # memory ran out (ENOMEM): said by main, with the limit
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"molsift: error: {where}{exc.strerror or exc}", file=sys.stderr)
        _abort_other_ranks()
        return EXIT_ERROR
    except Exception as exc:
        from ..parallel.mpi import MPIUnavailable  # here: `count` imports no more than it needs

        if isinstance(exc, MPIUnavailable):  # every rank says it; none can abort the others
            sys.stderr.write(f"molsift: error: {exc}\n")  # one write: ranks' lines stay whole
            sys.stderr.flush()
            return EXIT_ERROR
        _abort_other_ranks()
        raise


#: the parsed arguments that name a file or directory a verb reads or writes, in words
PATH_ARGS = {
    "file": "the input",
    "inputs": "an input",
    "input": "the input",
    "a": "an input",  # cube diff A B
    "b": "an input",
    "library": "the library",
    "store": "the store",
    "stores": "a store",
    "name": "a store",  # serve --name NAME=STORE
    "queries": "the --queries file",
    "ids": "the --ids file",
    "refs": "the --refs file",
    "vina_receptor": "the --vina-receptor file",
    "vina_box": "the --vina-box file",
    "log": "the log",  # insights LOG
    "output": "the output (-o)",
    "run_dir": "the run directory",
    "scratch": "the --scratch directory",
    "access_log": "the --access-log file",
}
#: directories that hold others' files too: only the path itself clashes, not what is inside
SHARED_DIRS = {"scratch"}


def check_io_log(args) -> None:
    """Refuses, before any work, `--io-log -` (it wrote a file named `-`: the log is no
    stream), and an --io-log that is a file the verb reads or writes (`molsift count nci.smi
    --io-log nci.smi` replaced the input with the log, exit 0) or lies inside a store or run
    directory it reads or writes (`--io-log nci.store/x.json` added a file to the store): a
    ValueError naming the log and what it would replace."""
    import os

    from .common import same_file

    log = args.io_log
    if log == "-":  # it made a file named `-`
        raise ValueError(
            "--io-log -: the I/O log is JSON written at the end of the run, and standard "
            "output is the verb's own: give the log a file name (--io-log run.json)"
        )
    for what, path, inside in _paths_of(args):
        if not path or path == "-":
            continue
        # the same name however spelled (the log is not written yet), or one file
        if os.path.realpath(path) == os.path.realpath(log) or same_file(path, log):
            named = "" if path == log else f" ({path})"
            raise ValueError(
                f"{log}: the --io-log file is {what}{named}, which the log would replace: "
                "write the log to another file"
            )
        if inside and any(
            where(log).startswith(where(path) + os.sep)
            for where in (os.path.abspath, os.path.realpath)
        ):
            raise ValueError(
                f"{log}: the --io-log file is inside {path}, {what}: write the log outside it"
            )


def _paths_of(args):
    """(what it is, in words; path; whether a log inside it clashes) of every file and
    directory the verb of `args` reads or writes: its path arguments (PATH_ARGS; a value that
    is no string, as cube slice's --log flag, is none), and what follows from them (a
    screening run's other outputs and run directory, profile's log and the existing files its
    command names)."""
    import os

    of = f"of molsift {args.verb}"
    for attr, what in PATH_ARGS.items():
        values = getattr(args, attr, None)
        for value in values if isinstance(values, list) else [values]:
            if isinstance(value, str):
                path = value.partition("=")[2] if attr == "name" else value
                yield f"{what} {of}", path, attr not in SHARED_DIRS
    if args.verb == "screen" and getattr(args, "output", None):
        from ..screen.layout import RunFiles

        files = RunFiles.of(args.output, args.run_dir)
        yield f"the run directory {of}", files.run_dir, True
        for path in (files.rows_partial, files.rejects, files.rejects_partial, files.poses):
            yield f"an output {of}", path, False
    if args.verb == "profile":
        from ..profiler.profile import default_log_name

        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        log = args.output or (default_log_name(command) if command else None)
        if log:
            yield f"the log {of}", log, False
            if args.keep_process_logs:
                yield f"the process logs' folder {of}", log + ".processes", True
        for word in command:  # only what exists: the program's other words are no paths
            if os.path.exists(word):
                yield "a file the command that molsift profile runs names", word, False


def _in_words(exc: Exception) -> str:
    """A library error's message, with the address-space limit when it says memory ran out."""
    from ..limits import memory_message, memory_symptom

    text = str(exc)
    if memory_symptom(text) and "ulimit -v" not in text:  # not said yet (a worker's death is)
        return memory_message(text)
    return text


def _under_mpi() -> bool:
    from ..parallel import launched_under_mpi

    return launched_under_mpi()


def _write_io_log(args, start: float, status: int) -> None:
    """The log of this run (docs/io-log-format.md): this process's counters and those of its
    workers; under mpirun, every rank's, written by rank 0."""
    from ..iostats import all_records, job_log, write_log

    comm = None
    if _under_mpi():
        from ..parallel.mpi import world

        comm = world() if world().Get_size() > 1 else None
    records = all_records(comm)
    if records is None:  # not rank 0
        return
    write_log(job_log(f"molsift {args.verb}", records, start, returncode=status), args.io_log)
    print(
        f"molsift: I/O log of {plural(len(records), 'process', 'processes')} written to "
        f"{args.io_log} "
        f"(read it with: molsift insights {args.io_log})",
        file=sys.stderr,
    )


def _abort_other_ranks() -> None:
    """An unexpected error on one MPI rank must not leave the others waiting forever."""
    if _under_mpi():
        from ..parallel.mpi import abort_job

        abort_job()
