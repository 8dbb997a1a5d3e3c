"""Which memory allocator molsift's RDKit work runs on, and putting a faster one in place.

RDKit makes many small allocations per molecule; with glibc's malloc they cost about a third of
parse + canonical SMILES + fingerprint. tcmalloc (Debian package libtcmalloc-minimal4, which
scripts/setup.sh installs) or jemalloc, loaded with LD_PRELOAD, compute the same results faster.
An allocator can only be preloaded when a process starts, so:

- `reexec(argv)`: the commands that run RDKit (`molsift ingest`, `screen`, `lookup`,
  `substructure`, `index`, `serve`: cli's RDKIT_VERBS) restart themselves once with the
  allocator preloaded (same PID, so MPI ranks are unaffected); LD_PRELOAD is then set back to
  what it was, so programs molsift starts later do not inherit it;
- `preload_env()`: the environment of one program started on the allocator (the server's
  search workers, serve/heavy.py);
- `spawn_context()` and `preloaded()`: the multiprocessing context molsift starts its own
  workers from, and the block they are started in: the allocator is in LD_PRELOAD in
  os.environ while the block runs, so the workers (spawned Python processes) start with it,
  and LD_PRELOAD is set back after it, so a program that calls molsift's API and later
  starts other processes does not pass the allocator on to them.

MOLSIFT_ALLOCATOR chooses: `auto` (default: tcmalloc, else jemalloc, else the system's),
`tcmalloc`, `jemalloc`, `system` (never preload), or a path to a shared library.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Iterable

_CANDIDATES = {
    "tcmalloc": ("libtcmalloc_minimal.so.4", "libtcmalloc.so.4"),
    "jemalloc": ("libjemalloc.so.2",),
}
_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
)
_REEXEC_MARK = "_MOLSIFT_ALLOCATOR_REEXEC"  # holds the LD_PRELOAD from before the restart


def library() -> str | None:
    """Path of the allocator to preload, or None (system allocator chosen, or none installed)."""
    choice = os.environ.get("MOLSIFT_ALLOCATOR", "auto").strip() or "auto"
    if choice == "system":
        return None
    if "/" in choice:
        if not os.path.isfile(choice):
            raise ValueError(f"MOLSIFT_ALLOCATOR={choice}: no such file")
        return choice
    if choice != "auto" and choice not in _CANDIDATES:
        raise ValueError(
            f"MOLSIFT_ALLOCATOR={choice}: expected auto, tcmalloc, jemalloc, system "
            "or a path to a shared library"
        )
    for name in _CANDIDATES if choice == "auto" else (choice,):
        for lib in _CANDIDATES[name]:
            for d in _DIRS:
                path = os.path.join(d, lib)
                if os.path.isfile(path):
                    return path
    return None


@functools.cache  # fixed when the process starts
def loaded() -> str:
    """The allocator this process runs on: 'tcmalloc', 'jemalloc' or 'system'."""
    return loaded_by("self")


def loaded_by(pid: int | str) -> str:
    """The allocator process `pid` runs on (its /proc maps, read at each call: a pid may be
    reused), as `loaded` names it."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            maps = f.read()
    except OSError:
        return "system"
    for name in _CANDIDATES:
        if f"lib{name}" in maps:
            return name
    return "system"


def _with(preload: str, lib: str) -> str:
    parts = [p for p in preload.replace(" ", ":").split(":") if p]
    return ":".join([lib] + [p for p in parts if p != lib])


def spawn_context():
    """The "spawn" multiprocessing context for molsift's workers: start them inside
    `preloaded()` so that they run on the allocator. Raises bootstrap.SpawnError (one
    sentence) when the user's script lacks its `__main__` guard."""
    import multiprocessing as mp

    from .bootstrap import check_can_spawn

    check_can_spawn()
    return mp.get_context("spawn")


@contextlib.contextmanager
def preloaded():
    """The allocator added to LD_PRELOAD in os.environ while the block runs (processes
    started in it run on the allocator), then LD_PRELOAD as it was before."""
    lib = library()
    if lib is None:
        yield
        return
    before = os.environ.get("LD_PRELOAD")
    os.environ["LD_PRELOAD"] = _with(before or "", lib)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("LD_PRELOAD", None)
        else:
            os.environ["LD_PRELOAD"] = before


def preload_env() -> dict[str, str]:
    """A copy of os.environ with the allocator added to LD_PRELOAD (as it is when none is
    chosen): the environment of one program started on it, os.environ itself unchanged (safe
    when threads start processes at once, unlike `preloaded()`)."""
    return _env_with(library())


def _env_with(lib: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if lib is not None:
        env["LD_PRELOAD"] = _with(env.get("LD_PRELOAD", ""), lib)
    return env


def describe(names: Iterable[str]) -> str:
    """What a run's processes ran on, from their `loaded()` answers: e.g. 'tcmalloc'."""
    return ",".join(sorted(set(names)))


def reexec(argv: list[str], script: str | None = None) -> None:
    """Restarts `python -m molsift argv` (or `python script argv`) with the allocator preloaded,
    unless this process has it already (or none is chosen); after a restart, puts LD_PRELOAD
    back as it was."""
    if _REEXEC_MARK in os.environ:
        before = os.environ.pop(_REEXEC_MARK)
        if before:
            os.environ["LD_PRELOAD"] = before
        else:
            os.environ.pop("LD_PRELOAD", None)
        return
    lib = library()
    if lib is None or loaded() != "system":
        return
    env = _env_with(lib)
    env[_REEXEC_MARK] = os.environ.get("LD_PRELOAD", "")
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        program = [script] if script else ["-m", "molsift"]
        os.execve(sys.executable, [sys.executable, *program, *argv], env)
    except OSError:  # cannot restart: go on with the system allocator
        return
