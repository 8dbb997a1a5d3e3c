"""`molsift profile -- CMD`: run any program (and its children, exec'ed programs and MPI ranks)
under the LD_PRELOAD tracer, then merge the per-process logs into one job log."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .log import IoLogError
from .merge import merge_process_logs, process_logs, write_log

LIB_NAME = "libmolsift_iotrace.so"


def preload_library() -> str:
    """Path of the tracer library ($MOLSIFT_IOTRACE_LIB, else the one scripts/setup.sh built)."""
    path = os.environ.get("MOLSIFT_IOTRACE_LIB") or str(
        Path(__file__).resolve().parent.parent / "_lib" / LIB_NAME
    )
    if not os.path.isfile(path):
        raise IoLogError(
            f"{path}: the I/O tracer library is not built; run `bash scripts/setup.sh`"
            " (or just `bash crates/iotrace/build.sh`)"
        )
    return path


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


def default_log_name(command: Sequence[str]) -> str:
    return f"{os.path.basename(command[0]) or 'command'}.iolog.json"


def profile(
    command: Sequence[str], log: str | None = None, keep_process_logs: bool = False
) -> ProfileResult:
    """Run COMMAND traced; write the merged log to LOG. The program's exit status is returned,
    never changed. Raises FileNotFoundError when COMMAND cannot be found."""
    if not command:
        raise ValueError("molsift profile: give a command after --, e.g. molsift profile -- ./app")
    log = os.path.abspath(log or default_log_name(command))
    lib = preload_library()
    workdir = tempfile.mkdtemp(prefix=".molsift-iotrace-", dir=os.path.dirname(log))
    env = dict(os.environ, MOLSIFT_IOTRACE_DIR=workdir)
    env["LD_PRELOAD"] = ":".join(x for x in (lib, os.environ.get("LD_PRELOAD")) if x)
    start = time.time()
    try:
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
            kept = log + ".processes"
            shutil.rmtree(kept, ignore_errors=True)
            shutil.move(workdir, kept)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return ProfileResult(returncode, log, len(doc["processes"]), problems)


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
