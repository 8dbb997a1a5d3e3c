"""`molsift profile [-o LOG] -- CMD ARGS`: run any program under the LD_PRELOAD I/O tracer and
merge its processes' logs into one; exits with the program's status."""

from __future__ import annotations

import argparse
import sys

from .common import add_verb, check_output

EXAMPLES = (
    "molsift profile -o run.iolog.json -- mpirun -n 4 ./md_app input   # every rank",
    "molsift profile -- python train.py                     # -> python.iolog.json",
    "molsift profile --keep-process-logs -o dock.json -- ./dock.sh",
)


def add_parser(subparsers):
    p = add_verb(
        subparsers,
        "profile",
        help="run any program under the I/O tracer, write its I/O log",
        usage="molsift profile [-o LOG] [--overwrite] [--keep-process-logs] -- CMD [ARGS ...]",
        description="Run CMD with the LD_PRELOAD I/O tracer: it and every process it "
        "starts (fork, exec, MPI ranks) count their POSIX and STDIO calls per file. "
        "The per-process logs are merged into LOG (docs/io-log-format.md). Exits "
        "with CMD's exit status.",
        examples=EXAMPLES,
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="LOG",
        help="log to write (default: CMD.iolog.json); an earlier I/O log there is replaced, "
        "any other file is refused",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a file at LOG that is not an I/O log (and, with --keep-process-logs, a "
        "LOG.processes that holds other files than process logs)",
    )
    p.add_argument(
        "--keep-process-logs",
        action="store_true",
        help="also keep the per-process logs, in LOG.processes/ (an earlier one is replaced "
        "when it holds only process logs; one holding anything else is refused)",
    )
    p.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="CMD",
        help="the program and its arguments, after --",
    )
    return p


def run(args) -> int:
    from ..profiler.profile import CommandError, profile

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    check_output(args.output)
    try:
        result = profile(
            command,
            args.output,
            keep_process_logs=args.keep_process_logs,
            overwrite=args.overwrite,
        )
    except CommandError as exc:
        print(f"molsift: error: {exc}", file=sys.stderr)
        return exc.status
    for note in result.notes:
        print(f"molsift profile: {note}", file=sys.stderr)
    for problem in result.problems:
        print(f"molsift profile: skipped a process log: {problem}", file=sys.stderr)
    traced = f"{result.processes:,} process{'' if result.processes == 1 else 'es'}"
    print(
        f"molsift profile: {traced} traced, log in {result.log} "
        f"(read it with: molsift insights {result.log})",
        file=sys.stderr,
    )
    return exit_like(result.returncode)


def exit_like(returncode: int) -> int:
    """The program's status; killed by a signal, molsift dies of the same signal. SIGKILL and
    SIGSTOP keep their default action and take no handler: setting one was OSError(EINVAL),
    so a program killed by SIGKILL (the OOM killer's signal) made molsift say "molsift: error:
    Invalid argument" and exit 2."""
    if returncode >= 0:
        return returncode
    import os
    import signal

    sys.stdout.flush()
    sys.stderr.flush()
    if -returncode not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(-returncode, signal.SIG_DFL)
    os.kill(os.getpid(), -returncode)
    return 128 - returncode  # the signal did not end us (e.g. SIGCHLD-like): the shell's convention
