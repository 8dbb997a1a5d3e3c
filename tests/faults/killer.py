"""The killer: kill -9 of `ingest`, `index` and `screen` (the CLI's main process) at a seeded
random moment, then the next run (`ingest --overwrite` again, `index` again, `screen --resume`
with the library path as typed, relative), and checks: the final result equals an uninterrupted
run's (store files byte for byte; every screened record exactly once, same rows), no process of
either run left alive 10 s after the next run, and no leftover work files (hidden `.NAME.*`
siblings, `.partial` files, stray files inside the store)."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import time
from pathlib import Path

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
DATA_FILES = [
    "fingerprints.u64",
    "popcounts.u16",
    "smiles.txt",
    "smiles.offsets.u64",
    "ids.txt",
    "ids.offsets.u64",
    "source_lines.u64",
    "rejects.tsv",
]
INDEX_FILES = ["columns.json", "columns.planes.u64", "columns.order.u64"]
SETTLE_S = 10.0


def _lib(workdir: Path, n: int) -> Path:
    path = workdir / f"lib{n}.smi"
    if not path.exists():
        path.write_bytes(b"".join(BUNDLED_SMI.read_bytes().splitlines(keepends=True)[:n]))
    return path


class Verb:
    """How one verb is started, finished after a kill, and compared with its reference run."""

    name = ""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.ref = None
        self.ref_seconds = 1.0

    def reference(self) -> None:
        raise NotImplementedError


class Ingest(Verb):
    name = "ingest"

    def args(self, out: Path, overwrite: bool) -> list:
        return ["ingest", "lib2000.smi", "-o", out.name, "-q", "-j", "2"] + (
            ["--overwrite"] if overwrite else []
        )

    def reference(self) -> None:
        _lib(self.workdir, 2000)
        self.ref = self.workdir / "ref-ingest.store"
        shutil.rmtree(self.ref, ignore_errors=True)
        t = time.monotonic()
        proc = run_cli(self.args(self.ref, False), cwd=self.workdir, timeout=300)
        self.ref_seconds = time.monotonic() - t
        assert proc.returncode == 0, text(proc.stderr)

    def prepare(self, out: Path) -> None:
        shutil.rmtree(out, ignore_errors=True)

    def first(self, out: Path) -> list:
        return self.args(out, False)

    def next(self, out: Path) -> list:
        return self.args(out, True)

    def compare(self, out: Path) -> str:
        return _same_files(out, self.ref, DATA_FILES + INDEX_FILES) or _same_listing(out, self.ref)


class Index(Verb):
    name = "index"

    def reference(self) -> None:
        _lib(self.workdir, 5000)
        self.base = self.workdir / "noindex.store"
        if not (self.base / "manifest.json").exists():
            proc = run_cli(
                ["ingest", "lib5000.smi", "-o", self.base.name, "-q", "-j", "2", "--no-index"],
                cwd=self.workdir,
                timeout=300,
            )
            assert proc.returncode == 0, text(proc.stderr)
        self.ref = self.workdir / "ref-index.store"
        shutil.rmtree(self.ref, ignore_errors=True)
        shutil.copytree(self.base, self.ref)
        t = time.monotonic()
        proc = run_cli(["index", self.ref.name], cwd=self.workdir, timeout=300)
        self.ref_seconds = time.monotonic() - t
        assert proc.returncode == 0, text(proc.stderr)

    def prepare(self, out: Path) -> None:
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(self.base, out)

    def first(self, out: Path) -> list:
        return ["index", out.name]

    next = first

    def compare(self, out: Path) -> str:
        proc = run_cli(["info", out.name], cwd=self.workdir, timeout=60)
        if proc.returncode != 0:
            return f"info fails after the re-run: {text(proc.stderr).strip()[:160]}"
        return _same_files(out, self.ref, DATA_FILES + INDEX_FILES) or _same_listing(out, self.ref)


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

    def prepare(self, out: Path) -> None:
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


def _same_files(got: Path, want: Path, names: list[str]) -> str:
    for name in names:
        g, w = got / name, want / name
        if not g.exists():
            return f"{name} missing after the re-run"
        if g.read_bytes() != w.read_bytes():
            return f"{name} differs from the uninterrupted run's"
    return ""


def _same_listing(got: Path, want: Path) -> str:
    extra = sorted(set(os.listdir(got)) - set(os.listdir(want)))
    return f"files left inside the store: {extra}" if extra else ""


def _leftovers(out: Path) -> list[str]:
    left = hidden_siblings(out)
    left += [p.name for p in out.parent.glob(out.name + "*.partial")]
    if out.is_dir():
        left += [f"{out.name}/{p}" for p in os.listdir(out) if p.startswith(".")]
    return left


VERBS = {"ingest": Ingest, "index": Index, "screen": Screen}


def kill_case(verb: Verb, seed: int, at_spawn: bool = False) -> list[Case]:
    """One kill -9 at a seeded moment (or, `at_spawn`, 0.1 s after the run has started two child
    processes: workers still starting up), the next run, and the checks."""
    rng = random.Random(f"{verb.name}:{seed}")
    delay = rng.uniform(0.05, 1.1 * verb.ref_seconds)
    name = f"{verb.name} kill@spawn" if at_spawn else f"{verb.name} kill@{delay:.2f}s seed{seed}"
    out = verb.workdir / f"killed-{verb.name}{'' if verb.name != 'screen' else '.csv'}"
    verb.prepare(out)
    tag = "s" if at_spawn else seed
    m1, m2 = f"faultsk{os.getpid()}x{verb.name}{tag}a", f"faultsk{os.getpid()}x{verb.name}{tag}b"
    proc = start_cli(verb.first(out), cwd=verb.workdir, marker=m1)
    if at_spawn:
        # past reading their start-up data from the parent, not yet running tasks
        wait_until(lambda: len(marked_pids(m1)) >= 3 or proc.poll() is not None, 30, 0.01)
        time.sleep(0.1)
    else:
        time.sleep(delay)
    with contextlib.suppress(OSError):
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # work files present right after the kill: the kill landed while the run was writing
    name += " (mid-write)" if _leftovers(out) else " (before/after writing)"
    nxt = run_cli(verb.next(out), cwd=verb.workdir, timeout=300, marker=m2)
    if verb.name == "screen" and nxt.returncode == 2 and b"no run to resume" in nxt.stderr:
        nxt = run_cli(verb.args(out, False), cwd=verb.workdir, timeout=300, marker=m2)
    cases = []
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
    out = []
    for pid in pids[:4]:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                out.append(fh.read().replace(b"\0", b" ").decode("utf-8", "replace")[:70])
        except OSError:
            pass
    return "; ".join(out)


def run(workdir: Path, long: bool, log=print, verbs=("ingest", "index", "screen")) -> list[Case]:
    workdir.mkdir(parents=True, exist_ok=True)
    cases = []
    for name in verbs:
        verb = VERBS[name](workdir)
        verb.reference()
        moments = [(seed, False) for seed in range(20 if long else 2)]
        if name != "index":  # index has no child processes
            moments += [(0, True)] * (3 if long else 1)
        for seed, at_spawn in moments:
            for c in kill_case(verb, seed, at_spawn):
                log(c)
                cases.append(c)
    return cases
