"""What every checker shares: the `Case` result, running the CLI in a subprocess (tagged with a
marker so its processes can be found later), and the checks of a command's stderr and exit."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import procs  # tests/procs.py: tests/ is on the path under pytest and for `python -m faults`

ROOT = Path(__file__).resolve().parents[2]
BUNDLED_SMI = ROOT / "data" / "nci_first_5k.smi"
MOSES = ROOT.parent / "shared" / "data" / "moses_train.csv.gz"
MARKER_ENV = "MOLSIFT_FAULTS_MARKER"

OK, REFUSED, FAIL = "ok", "refused-cleanly", "FAIL"

# failure types, the rows of the table (RELIABILITY.md)
TRACEBACK = "traceback/panic"
ABORT = "whole-run abort from one record"
BAD_STATUS = "exit status outside 0/2/3"
COUNTS = "counts do not add up"
REJECT_ROW = "reject row without source/line/offset"
UNCLEAR = "error not one clear line naming the file"
DIFFERENT = "different result from a damaged store"
LOST = "lost/duplicated records"
ORPHANS = "orphan processes"
LEFTOVERS = "leftover work directories"
DELETED = "files outside a store deleted"
WRONG = "wrong final result"
HANG = "hang (timeout)"


@dataclass
class Case:
    """One checked case: `outcome` is OK, REFUSED or FAIL; a FAIL has a `failure` type (one of
    the constants above) and a `reason` in words."""

    kind: str
    case: str
    outcome: str
    failure: str = ""
    reason: str = ""

    def __str__(self) -> str:
        tail = f" [{self.failure}] {self.reason}" if self.outcome == FAIL else ""
        return f"{self.kind:12} {self.case:60} {self.outcome}{tail}"


def rdkit_data(*parts: str) -> Path:
    import rdkit

    return Path(rdkit.__file__).parent.joinpath("Data", *parts)


def molsift_cmd() -> list[str]:
    return [sys.executable, "-m", "molsift"]


def cli_env(marker: str = "") -> dict:
    env = dict(os.environ, MOLSIFT_WORKERS=os.environ.get("MOLSIFT_WORKERS", "2"))
    env.pop("RUST_BACKTRACE", None)  # a panic must show as a panic, not as a long backtrace
    if marker:
        env[MARKER_ENV] = marker
    return env


_RUNS = itertools.count()


def run_cli(
    args: list[str],
    cwd=None,
    timeout: float = 120,
    marker: str = "",
    stdin=subprocess.DEVNULL,
    program: list[str] | None = None,
) -> subprocess.CompletedProcess:
    """`molsift ARGS` (or `program ARGS`) to completion; a timeout comes back as returncode
    None, after every process of the run (found by its marker, a fresh one when none is given)
    is killed."""
    marker = marker or f"faultsrun{os.getpid()}n{next(_RUNS)}"
    try:
        return subprocess.run(
            (program or molsift_cmd()) + [str(a) for a in args],
            cwd=cwd,
            env=cli_env(marker),
            capture_output=True,
            stdin=stdin,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        kill_marked(marker)
        return subprocess.CompletedProcess(exc.cmd, None, exc.stdout or b"", exc.stderr or b"")


def start_cli(args: list[str], cwd=None, marker: str = "") -> subprocess.Popen:
    """`molsift ARGS` started in its own process group, stdout/stderr to DEVNULL/PIPE."""
    return subprocess.Popen(
        molsift_cmd() + [str(a) for a in args],
        cwd=cwd,
        env=cli_env(marker),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def text(b) -> str:
    return b.decode("utf-8", "replace") if isinstance(b, bytes) else (b or "")


CRASH = re.compile(
    r"Traceback \(most recent call last\)|panicked at|RUST_BACKTRACE|"
    r"PanicException|Fatal Python error|Segmentation fault|core dumped"
)


def crash_in(stderr: str) -> str | None:
    """The first line of a Python traceback or Rust panic in `stderr`, or None."""
    m = CRASH.search(stderr)
    if not m:
        return None
    lines = [ln for ln in stderr[m.start() :].splitlines() if ln.strip()]
    last = [ln for ln in lines if not ln.startswith(" ")]
    return (last[-1] if last else lines[0])[:200]


def check_status(kind: str, case: str, proc, allowed=(0, 2, 3)) -> Case | None:
    """A FAIL for a hang, a crash in stderr or an exit status outside `allowed`, else None."""
    if proc.returncode is None:
        return Case(kind, case, FAIL, HANG, "did not finish in time")
    err = text(proc.stderr)
    crash = crash_in(err)
    if crash:
        return Case(kind, case, FAIL, TRACEBACK, crash)
    if proc.returncode not in allowed:
        return Case(kind, case, FAIL, BAD_STATUS, f"exit {proc.returncode}: {last_line(err)}")
    return None


def last_line(s: str) -> str:
    lines = [ln for ln in text(s).splitlines() if ln.strip()]
    return lines[-1][:200] if lines else ""


def clear_error(proc, names: list[str]) -> str | None:
    """None when the command failed with one `molsift: error: ...` line naming one of `names`
    (file names), else what is wrong."""
    err = [ln for ln in text(proc.stderr).splitlines() if ln.strip()]
    errors = [ln for ln in err if ln.startswith("molsift: error:") or ln.startswith("molsift ")]
    if not errors:
        return f"no 'molsift: error:' line (stderr ends {last_line(proc.stderr)!r})"
    if names and not any(n in errors[-1] for n in names):
        return f"error does not name {names[0]}: {errors[-1][:160]!r}"
    return None


def judge_exit(kind: str, case: str, proc, names: list[str], allowed=(0, 2)) -> Case | None:
    """The case when `proc` did not succeed: a FAIL (hang, crash, status outside `allowed`, an
    error that is not one clear line naming one of `names`) or REFUSED; None for exit 0."""
    bad = check_status(kind, case, proc, allowed)
    if bad:
        return bad
    if proc.returncode == 0:
        return None
    why = clear_error(proc, names)
    return Case(kind, case, FAIL, UNCLEAR, why) if why else Case(kind, case, REFUSED)


def wait_until(pred, timeout: float, step: float = 0.1) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


def marked_pids(marker: str) -> list[int]:
    """Live processes whose environment or command line carries `marker` (not zombies)."""
    found = []
    for p in procs.table().values():
        if p.pid == os.getpid() or p.state == "Z":
            continue
        env = procs.environ(p.pid).get(MARKER_ENV.encode())
        if marker.encode() in procs.cmdline(p.pid) or env == marker.encode():
            found.append(p.pid)
    return found


def kill_marked(marker: str) -> None:
    """Cleans up after a case: SIGKILL to every process carrying `marker`."""
    import signal

    for pid in marked_pids(marker):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def hidden_siblings(path: Path) -> list[str]:
    """Hidden work files or directories `.NAME.*` next to `path` (temporary names of molsift)."""
    path = Path(path)
    return sorted(p for p in os.listdir(path.parent) if p.startswith(f".{path.name}."))


def summarize(cases: list[Case]) -> dict:
    return {"cases": len(cases), "failures": sum(c.outcome == FAIL for c in cases)}
