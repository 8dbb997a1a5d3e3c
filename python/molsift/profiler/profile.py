"""`molsift profile -- CMD`: run any program (and its children, exec'ed programs and MPI ranks)
under the LD_PRELOAD tracer, then merge the per-process logs into one job log.

The tracer library travels inside molsift's extension module (crates/tracer embeds it at build
time) and is written next to the per-process logs at each run, rather than shipped as a file of
the package: every process of `molsift profile -- mpirun ...`, on any node, must open it by the
path in LD_PRELOAD, and the log directory is the one place all of them are known to reach (they
write their logs there), whereas the installed package may sit on one node only; and the file
preloaded is always the one built with the molsift that runs, never a missing or stale copy.
A log directory whose path LD_PRELOAD cannot name (a space or a colon in it) keeps the logs;
the library then goes to a temporary folder of this host, and `molsift profile` says so."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from .._core import TRACER_LIBRARY_NAME, tracer_library, write_file
from ..iolog import IoLogError, is_molsift_log, write_log
from ..wording import quoted
from .merge import merge_process_logs, process_logs

LIB_NAME = TRACER_LIBRARY_NAME  # libmolsift_tracer.so
# A tracer library to preload instead of the built-in one (MOLSIFT_IOTRACE_LIB: its older name).
LIB_ENV, OLD_LIB_ENV = "MOLSIFT_TRACER_LIB", "MOLSIFT_IOTRACE_LIB"


def write_tracer_library(directory: str) -> str:
    """Writes the built-in tracer library into DIRECTORY; returns its path."""
    path = os.path.join(directory, LIB_NAME)
    tmp = f"{path}.tmp{os.getpid()}"
    write_file(tmp, tracer_library())
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)
    return path


def preload_library(directory: str, elsewhere: str | None = None) -> str:
    """The tracer library to preload: $MOLSIFT_TRACER_LIB (or $MOLSIFT_IOTRACE_LIB) when set,
    else the built-in one written into DIRECTORY, or into ELSEWHERE when DIRECTORY's path holds
    a space or a colon, which LD_PRELOAD cannot name."""
    given = next((name for name in (LIB_ENV, OLD_LIB_ENV) if os.environ.get(name)), None)
    if given is None:
        if elsewhere is not None and not _preloadable(os.path.abspath(directory)):
            directory = elsewhere
        path = os.path.abspath(write_tracer_library(directory))
    else:
        path = os.path.abspath(os.environ[given])
        if not os.path.isfile(path):
            raise IoLogError(f"{path}: no such I/O tracer library (given by ${given})")
    if not _preloadable(path):
        raise IoLogError(
            f"{path}: LD_PRELOAD cannot name a path holding a space or a colon"
            + (f" (given by ${given})" if given else "")
        )
    return path


def _preloadable(path: str) -> bool:
    """Whether LD_PRELOAD can name `path`: it splits its list at spaces and colons."""
    return not any(c in path for c in " :")


class CommandError(ValueError):
    """The command could not be started; `status` is what a shell would exit with (127, 126)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


@dataclass
class ProfileResult:
    """What `profile` did: the program's status, where the log went, and what could not be read."""

    returncode: int  # negative: killed by that signal, as subprocess reports it
    log: str
    processes: int
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how the run differed from the usual one


def default_log_name(command: Sequence[str]) -> str:
    return f"{os.path.basename(command[0]) or 'command'}.iolog.json"


def check_log_output(log: str, given: bool = True, overwrite: bool = False) -> None:
    """Refuses, before the program runs, a LOG that would replace something else than an
    earlier log: a file that exists and is not a molsift I/O log (`-o lib.smi` was replaced by
    the log), unless `overwrite`; and anything that is not a regular file (a device such as
    /dev/null, a pipe). A missing or empty file, or an earlier log, may be written (running
    the same `molsift profile -o run.json -- CMD` again replaces its log). `given`: LOG came
    from -o (else it is the default name, CMD.iolog.json)."""
    if not os.path.lexists(log):
        return
    how = "give -o another name" if given else "give -o LOG"
    if not os.path.isfile(log):
        raise ValueError(f"{log}: is not a regular file, which molsift profile cannot write: {how}")
    if overwrite or os.path.getsize(log) == 0 or is_molsift_log(log):
        return
    raise ValueError(
        f"{log}: exists and is not a molsift I/O log, which molsift profile would replace: "
        f"{how}, or --overwrite to replace it"
    )


#: the names of a process log (`proc-<pid>-<start ns>.json`, crates/tracer/tracer.c) and of
#: one a process left half-written (`.json.tmp`): what a kept LOG.processes/ folder holds
PROCESS_LOG_NAME = re.compile(r"proc-\d+-\d+\.json(\.tmp)?")


def check_process_logs_folder(folder: str, overwrite: bool = False) -> None:
    """Refuses, before the program runs, a LOG.processes that --keep-process-logs would
    replace (it was deleted whatever it held) when it holds anything but the process logs of
    an earlier profile: another file, a folder, a link; or when it is no folder. Unless
    `overwrite`. A missing or empty folder, or one of process logs, may be replaced."""
    if not os.path.lexists(folder):
        return
    if os.path.islink(folder) or not os.path.isdir(folder):
        what = "a link" if os.path.islink(folder) else "not a folder"
        others = None
    else:
        others = sorted(
            e.name
            for e in os.scandir(folder)
            if not (PROCESS_LOG_NAME.fullmatch(e.name) and e.is_file(follow_symlinks=False))
        )
        if not others:
            return
        what = f"a folder that holds other things than process logs ({quoted(others[0])}"
        what += f" and {len(others) - 1:,} more)" if len(others) > 1 else ")"
    if overwrite:
        return
    raise ValueError(
        f"{folder}: is {what}, which --keep-process-logs would replace: give -o another "
        "name, or --overwrite to replace it"
    )


def profile(
    command: Sequence[str],
    log: str | None = None,
    keep_process_logs: bool = False,
    overwrite: bool = False,
) -> ProfileResult:
    """Run COMMAND traced; write the merged log to LOG. The program's exit status is returned,
    never changed. Raises FileNotFoundError when COMMAND cannot be found; ValueError, before
    the program runs, when LOG is a file that is not an I/O log (`check_log_output`), or
    with `keep_process_logs` LOG.processes holds other files than process logs
    (`check_process_logs_folder`), and `overwrite` is false."""
    if not command:
        raise ValueError("give a command after --, e.g. molsift profile -- ./app")
    name = log or default_log_name(command)
    check_log_output(name, given=bool(log), overwrite=overwrite)
    if keep_process_logs:
        check_process_logs_folder(name + ".processes", overwrite)
    log = os.path.abspath(name)
    workdir = tempfile.mkdtemp(prefix=".molsift-profile-", dir=os.path.dirname(log))
    start = time.time()
    notes = []
    libdir = None  # the library's own folder, when the log's cannot be preloaded from
    try:
        if not _preloadable(workdir):  # `molsift profile -- CMD` in ~/My Runs/ was refused
            libdir = tempfile.mkdtemp(prefix=".molsift-tracer-")
        lib = preload_library(workdir, elsewhere=libdir)
        if libdir is not None and lib.startswith(libdir + os.sep):
            notes.append(
                f"the tracer is preloaded from {libdir}: LD_PRELOAD cannot name "
                f"{os.path.dirname(log)}, whose path holds a space or a colon; processes on "
                "other hosts will not be traced (give -o LOG in another folder to trace them)"
            )
        env = dict(os.environ, MOLSIFT_TRACER_DIR=workdir)
        env["LD_PRELOAD"] = ":".join(x for x in (lib, os.environ.get("LD_PRELOAD")) if x)
        returncode = _run(command, env)
        job = {
            "tool": "molsift profile",
            "command": list(command),
            "cwd": os.getcwd(),
            "hostname": socket.gethostname(),
            "start_time": start,
            "wall_seconds": time.time() - start,
            "returncode": returncode,
        }
        doc, problems = merge_process_logs(process_logs(workdir), job)
        write_log(doc, log)
    finally:
        if keep_process_logs:
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(workdir, LIB_NAME))  # keep the logs, not the library
            kept = log + ".processes"
            if os.path.islink(kept) or os.path.isfile(kept):  # with --overwrite
                os.remove(kept)  # (rmtree left them, and the logs went into the link's folder)
            shutil.rmtree(kept, ignore_errors=True)
            shutil.move(workdir, kept)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
        if libdir is not None:
            shutil.rmtree(libdir, ignore_errors=True)
    return ProfileResult(returncode, log, len(doc["processes"]), problems, notes)


def _run(command: Sequence[str], env: dict) -> int:
    """Run and wait; SIGTERM/SIGHUP sent to molsift are passed on, SIGINT from the terminal
    already reaches the program (same process group), so molsift itself ignores it meanwhile."""
    try:
        proc = subprocess.Popen(list(command), env=env)
    except FileNotFoundError:
        raise CommandError(f"{command[0]}: command not found", 127) from None
    except OSError as exc:
        raise CommandError(f"{command[0]}: cannot run it: {exc.strerror}", 126) from None
    forwarded = (signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.signal(s, lambda sig, _frame: proc.send_signal(sig)) for s in forwarded}
    old[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return proc.wait()
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
