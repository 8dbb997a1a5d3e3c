"""The killer: kill -9 of `ingest`, `index --pattern`, `index --analogs` and `screen` (the CLI's
main process) at a seeded random moment, then the next run (`ingest --overwrite` again, `index`
again, `screen --resume` with the library path as typed, relative), and checks: the final result
equals an uninterrupted run's (store files byte for byte, the manifest but for its timings;
every screened record exactly once, same rows), no process of either run left alive 10 s after
the next run, and no leftover work files (hidden `.NAME.*` siblings, `.partial` files, stray
files inside the store). Ingest is also killed as it enters each of its phases after the
workers' (the substructure planes written after the merge of the parts' runs, the write of the
one store, its substructure index, its analog index), and right after a kill its output must be
exactly what was there before (the previous store, byte for byte, or nothing) or the complete
new store: never a store that opens half-written."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import time
from pathlib import Path

import procs

from .common import (
    BUNDLED_SMI,
    FAIL,
    LEFTOVERS,
    LOST,
    OK,
    ORPHANS,
    WRONG,
    Case,
    check_status,
    hidden_siblings,
    kill_marked,
    marked_pids,
    run_cli,
    start_cli,
    text,
    wait_until,
)

KIND = "killer"
SETTLE_S = 10.0
#: ingest's phases after the workers', each seen in its work directory (`.OUT.ingest-PID-*`):
#: the substructure planes written once the parts' runs are merged (`pattern.planes`), the one
#: store written from the parts (under a temporary name, then `store`), its substructure index
#: (`pattern.*` appearing in `store`), its analog index (`analogs.*`)
PHASES = ("planes", "store", "pattern", "analogs")
#: tries at killing a run in a given phase (a short phase may pass between two looks)
PHASE_TRIES = 4


def _lib(workdir: Path, n: int, first: int = 0) -> Path:
    path = workdir / (f"lib{n}.smi" if not first else f"lib{first}-{first + n}.smi")
    if not path.exists():
        lines = BUNDLED_SMI.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[first : first + n]))
    return path


#: manifest keys that differ between two runs writing the same store (timings, the checksum)
TIMINGS = ("seconds", "parse_seconds", "checksum")


def _manifest(path: Path) -> object:
    """A manifest without what differs between two runs that write the same store: timings
    (`seconds`, ingest's `parse_seconds`) and the manifest's own checksum."""

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in TIMINGS}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    return strip(json.loads(path.read_bytes()))


def _same_store(got: Path, want: Path) -> str:
    """ "" when `got` holds exactly `want`'s files with the same bytes (the manifest compared
    without its timings), else what differs."""
    names = sorted(os.listdir(want))
    if not got.is_dir():
        return f"{got.name} is not a directory"
    extra = sorted(set(os.listdir(got)) - set(names))
    if extra:
        return f"files left inside the store: {extra}"
    for name in names:
        g, w = got / name, want / name
        if not g.exists():
            return f"{name} missing"
        if name == "manifest.json":
            try:
                same = _manifest(g) == _manifest(w)
            except ValueError:
                same = False
            if not same:
                return "manifest.json differs (timings aside)"
        elif g.read_bytes() != w.read_bytes():
            return f"{name} differs"
    return ""


class Verb:
    """How one verb is started, finished after a kill, and compared with its reference run."""

    name = ""
    phases: tuple = ()

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.ref = None
        self.ref_seconds = 1.0

    def reference(self) -> None:
        raise NotImplementedError

    def after_kill(self, out: Path) -> str:
        """What is wrong with `out` right after the kill ("" when nothing)."""
        return ""

    def phase(self, out: Path, pid: int) -> str:
        """The last of `phases` the run `pid` writing `out` has entered ("" before the
        first)."""
        return ""


class Ingest(Verb):
    """Ingest of 2,000 molecules. Even seeds, the start-up moment and the phases find a
    previous store at the output (600 other molecules; the first run then passes
    --overwrite); odd seeds, nothing."""

    name = "ingest"
    phases = PHASES

    def args(self, out: Path, overwrite: bool) -> list:
        return ["ingest", "lib2000.smi", "-o", out.name, "-q", "-j", "2"] + (
            ["--overwrite"] if overwrite else []
        )

    def reference(self) -> None:
        _lib(self.workdir, 2000)
        self.prev = self.workdir / "prev-ingest.store"
        if not (self.prev / "manifest.json").exists():
            lib = _lib(self.workdir, 600, 2000)
            proc = run_cli(
                ["ingest", lib.name, "-o", self.prev.name, "-q", "-j", "2"],
                cwd=self.workdir,
                timeout=300,
            )
            assert proc.returncode == 0, text(proc.stderr)
        self.ref = self.workdir / "ref-ingest.store"
        shutil.rmtree(self.ref, ignore_errors=True)
        t = time.monotonic()
        proc = run_cli(self.args(self.ref, False), cwd=self.workdir, timeout=300)
        self.ref_seconds = time.monotonic() - t
        assert proc.returncode == 0, text(proc.stderr)

    def prepare(self, out: Path, seed) -> None:
        shutil.rmtree(out, ignore_errors=True)
        self.previous = not (isinstance(seed, int) and seed % 2 == 1)
        if self.previous:
            shutil.copytree(self.prev, out)

    def first(self, out: Path) -> list:
        return self.args(out, self.previous)

    def next(self, out: Path) -> list:
        return self.args(out, True)

    def compare(self, out: Path) -> str:
        return _same_store(out, self.ref)

    def after_kill(self, out: Path) -> str:
        if not os.path.lexists(out):
            return "the previous store is gone" if self.previous else ""
        if not _same_store(out, self.ref):
            return ""  # the kill came after the new store was moved into place
        if self.previous:
            why = _same_store(out, self.prev)
            return f"neither the previous store intact nor the new one: {why}" if why else ""
        return "a store that is not the complete new one is at the output"

    def phase(self, out: Path, pid: int) -> str:
        seen = ""
        for work in out.parent.glob(f".{out.name}.ingest-{pid}-*"):
            with contextlib.suppress(OSError):
                inside = os.listdir(work)
                if any(n.startswith("pattern.planes") for n in inside):
                    seen = "planes"
                if any(n.startswith(".store.") for n in inside):
                    seen = "store"
                if "store" in inside:
                    seen = "store"
                    inside = os.listdir(work / "store")
                    if any("pattern" in n for n in inside):
                        seen = "pattern"
                    if any("analogs" in n for n in inside):
                        seen = "analogs"
        return seen


class Index(Verb):
    """`index --pattern` or `index --analogs` (`kind`) of a one store of 5,000 molecules
    ingested without that index."""

    kind = ""

    def reference(self) -> None:
        _lib(self.workdir, 5000)
        self.base = self.workdir / f"no{self.kind}.store"
        if not (self.base / "manifest.json").exists():
            args = ["ingest", "lib5000.smi", "-o", self.base.name, "-q", "-j", "2"]
            proc = run_cli(
                [*args, f"--no-{self.kind}"],
                cwd=self.workdir,
                timeout=300,
            )
            assert proc.returncode == 0, text(proc.stderr)
        self.ref = self.workdir / f"ref-{self.name}.store"
        shutil.rmtree(self.ref, ignore_errors=True)
        shutil.copytree(self.base, self.ref)
        t = time.monotonic()
        proc = run_cli(self.first(self.ref), cwd=self.workdir, timeout=300)
        self.ref_seconds = time.monotonic() - t
        assert proc.returncode == 0, text(proc.stderr)

    def prepare(self, out: Path, seed) -> None:
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(self.base, out)

    def first(self, out: Path) -> list:
        return ["index", out.name, f"--{self.kind}", "-j", "2"]

    next = first

    def compare(self, out: Path) -> str:
        proc = run_cli(["info", out.name], cwd=self.workdir, timeout=60)
        if proc.returncode != 0:
            return f"info fails after the re-run: {text(proc.stderr).strip()[:160]}"
        return _same_store(out, self.ref)


class IndexPattern(Index):
    name = "index-pattern"
    kind = "pattern"


class IndexAnalogs(Index):
    name = "index-analogs"
    kind = "analogs"


class Screen(Verb):
    name = "screen"

    def args(self, out: Path, resume: bool) -> list:
        return ["screen", "lib1000.smi", "--scorer", "filter", "-o", out.name, "-q", "-j", "2"] + (
            ["--resume"] if resume else []
        )

    def reference(self) -> None:
        _lib(self.workdir, 1000)
        self.ref = self.workdir / "ref-screen.csv"
        _remove_screen(self.ref)
        t = time.monotonic()
        proc = run_cli(self.args(self.ref, False), cwd=self.workdir, timeout=300)
        self.ref_seconds = time.monotonic() - t
        assert proc.returncode == 0, text(proc.stderr)

    def prepare(self, out: Path, seed) -> None:
        _remove_screen(out)

    def first(self, out: Path) -> list:
        return self.args(out, False)

    def next(self, out: Path) -> list:
        return self.args(out, True)

    def compare(self, out: Path) -> str:
        for suffix in ("", ".rejects.tsv"):
            got, want = Path(f"{out}{suffix}"), Path(f"{self.ref}{suffix}")
            if not got.exists():
                return f"{got.name} missing after --resume"
            g, w = got.read_bytes().splitlines(), want.read_bytes().splitlines()
            if g[:1] != w[:1]:
                return f"{got.name}: header {g[:1]} instead of {w[:1]}"
            if sorted(g[1:]) != sorted(w[1:]):
                ids = [r.split(b",", 1)[0] for r in g[1:]]
                dup = len(ids) - len(set(ids))
                return (
                    f"{got.name}: {len(g) - 1} rows ({dup} duplicated ids) instead of {len(w) - 1}"
                )
        return ""


def _remove_screen(out: Path) -> None:
    for p in out.parent.glob(out.name + "*"):
        shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink()


def _leftovers(out: Path) -> list[str]:
    left = hidden_siblings(out)
    left += [p.name for p in out.parent.glob(out.name + "*.partial")]
    if out.is_dir():
        left += [f"{out.name}/{p}" for p in os.listdir(out) if p.startswith(".")]
    return left


VERBS = {
    "ingest": Ingest,
    "index-pattern": IndexPattern,
    "index-analogs": IndexAnalogs,
    "screen": Screen,
}


def _start_and_kill(verb: Verb, out: Path, marker: str, at_spawn: bool, phase: str, delay: float):
    """Starts the verb's first run and kills it (SIGKILL to the CLI's main process) at its
    moment: 0.1 s after two child processes started, as the run enters `phase`, or `delay`
    seconds after the start. Returns the killed process."""
    proc = start_cli(verb.first(out), cwd=verb.workdir, marker=marker)
    if at_spawn:
        # past reading their start-up data from the parent, not yet running tasks
        wait_until(lambda: len(marked_pids(marker)) >= 3 or proc.poll() is not None, 30, 0.01)
        time.sleep(0.1)
    elif phase:
        later = verb.phases[verb.phases.index(phase) :]
        wait_until(
            lambda: verb.phase(out, proc.pid) in later or proc.poll() is not None, 300, 0.002
        )
    else:
        time.sleep(delay)
    with contextlib.suppress(OSError):
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return proc


def kill_case(verb: Verb, seed, at_spawn: bool = False) -> list[Case]:
    """One kill -9 at a seeded moment (`seed` an int), or, `at_spawn`, 0.1 s after the run has
    started two child processes (workers still starting up), or (`seed` one of the verb's
    `phases`) as soon as the run is seen entering that phase; then the checks of the output
    right after the kill, the next run, and the checks of its result."""
    phase = seed if seed in verb.phases else ""
    rng = random.Random(f"{verb.name}:{seed}")
    delay = rng.uniform(0.05, 1.1 * verb.ref_seconds)
    name = (
        f"{verb.name} kill@spawn"
        if at_spawn
        else f"{verb.name} kill@{phase}"
        if phase
        else f"{verb.name} kill@{delay:.2f}s seed{seed}"
    )
    out = verb.workdir / f"killed-{verb.name}{'' if verb.name != 'screen' else '.csv'}"
    tag = "s" if at_spawn else seed
    m1, m2 = f"faultsk{os.getpid()}x{verb.name}{tag}a", f"faultsk{os.getpid()}x{verb.name}{tag}b"
    cases = []
    for attempt in range(PHASE_TRIES if phase else 1):
        verb.prepare(out, "spawn" if at_spawn else seed)
        proc = _start_and_kill(verb, out, m1, at_spawn, phase, delay)
        if not phase:
            break
        # the kill must land in the phase it is named after; a short phase may have passed
        # between two looks: then the run is tried again (the next sweeps what it left)
        seen = verb.phase(out, proc.pid)
        if seen == phase:
            cases.append(Case(KIND, f"{name} landed", OK))
            break
        if attempt == PHASE_TRIES - 1:
            cases.append(
                Case(
                    KIND,
                    f"{name} landed",
                    FAIL,
                    WRONG,
                    f"{PHASE_TRIES} kills missed the phase (the last in phase "
                    f"{seen or 'none'!r}, exit {proc.returncode})",
                )
            )
    # work files present right after the kill: the kill landed while the run was writing
    name += " (mid-write)" if _leftovers(out) else " (before/after writing)"
    why = verb.after_kill(out)
    cases.append(
        Case(KIND, f"{name} after the kill", FAIL, WRONG, why)
        if why
        else Case(KIND, f"{name} after the kill", OK)
    )
    nxt = run_cli(verb.next(out), cwd=verb.workdir, timeout=300, marker=m2)
    if verb.name == "screen" and nxt.returncode == 2 and b"no run to resume" in nxt.stderr:
        nxt = run_cli(verb.args(out, False), cwd=verb.workdir, timeout=300, marker=m2)
    bad = check_status(KIND, f"{name} next run", nxt, allowed=(0,))
    if bad:
        last_line = text(nxt.stderr).strip().splitlines()[-1][:160] if nxt.stderr.strip() else ""
        bad.reason = f"{bad.reason} ({last_line})"
        if bad.failure != "traceback/panic":
            bad.failure = WRONG
        cases.append(bad)
    else:
        why = verb.compare(out)
        cases.append(
            Case(KIND, f"{name} result", FAIL, LOST if verb.name == "screen" else WRONG, why)
            if why
            else Case(KIND, f"{name} result", OK)
        )
    alive = not wait_until(lambda: not marked_pids(m1) and not marked_pids(m2), SETTLE_S, 0.25)
    if alive:
        pids = marked_pids(m1) + marked_pids(m2)
        cases.append(
            Case(
                KIND,
                f"{name} orphans",
                FAIL,
                ORPHANS,
                f"{len(marked_pids(m1))} process(es) of the killed run and "
                f"{len(marked_pids(m2))} of the next alive {SETTLE_S:.0f} s after the "
                f"next run: {_cmdlines(pids)}",
            )
        )
    else:
        cases.append(Case(KIND, f"{name} orphans", OK))
    left = []
    wait_until(lambda: not _leftovers(out), 0 if alive else SETTLE_S, 0.25)
    left = _leftovers(out)
    cases.append(
        Case(KIND, f"{name} leftovers", FAIL, LEFTOVERS, f"left behind: {left}")
        if left
        else Case(KIND, f"{name} leftovers", OK)
    )
    kill_marked(m1)
    kill_marked(m2)
    for p in out.parent.glob(f".{out.name}.*"):
        shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink()
    return cases


def _cmdlines(pids: list[int]) -> str:
    """The command lines of the first four of `pids` that are alive, 70 characters each."""
    words = [procs.cmdline(pid).replace(b"\0", b" ") for pid in pids[:4]]
    return "; ".join(w.decode("utf-8", "replace")[:70] for w in words if w)


def run(workdir: Path, long: bool, log=print, verbs=tuple(VERBS)) -> list[Case]:
    workdir.mkdir(parents=True, exist_ok=True)
    cases = []
    for name in verbs:
        verb = VERBS[name](workdir)
        verb.reference()
        moments = [(seed, False) for seed in range(20 if long else 2)]
        if name != "index-analogs":  # the analog index is built by threads, not processes
            moments += [(0, True)] * (3 if long else 1)
        moments += [(p, False) for p in verb.phases for _ in range(2 if long else 1)]
        for seed, at_spawn in moments:
            for c in kill_case(verb, seed, at_spawn):
                log(c)
                cases.append(c)
    return cases
