"""What ingest may hold in memory (`molsift ingest --memory SIZE`): the write buffers cut from
that budget, and the memory a store (or a store set) of n molecules needs on the process that
writes it, checked once the workers' parts are merged and the molecules counted, before the
indexes are written, so that a library too large for one store is refused in one line with
the set of shards that fits, not killed by the kernel an hour later.

Where the root's memory goes (all of MOSES, 1,584,663 molecules, `ingest -j 2`, resident
anonymous memory sampled by phase, `benches/ingest_memory.py`; BENCHMARKS.md "--memory"): the
merged runs hold the store order (4 bytes a molecule); the one store's write its exact-match
entries (16 a distinct SMILES), the planes' sort (about 20) and up to `plane_budget` of plane
payload; the substructure index a window of graph records and a batch of screen planes; the
analog index an entry a molecule (34) and the deletions' hashes (4 bytes a distinct one, about
5.4 a molecule), its filter built from them a piece at a time. The parts are read where
they lie, each molecule found from the parts' first positions and the molecules `--dedupe` left
out: a shard's writer holds nothing per molecule of the whole set but a record offset every 64
(1/8 byte). Every buffer that grows with the library beyond these is cut from the budget: the
similarity planes are built `plane_budget` bytes of payload a pass, the graph blocks compressed
a window of `window_bytes` of records at a time. The bytes of the store are the same for any
budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _core
from .limits import machine_memory

#: Bytes a molecule that the largest phase of writing one store holds, with a margin: the one
#: store's write, 94 measured (the slope of the root's peak between 400,000 molecules of MOSES
#: and all of it, `benches/ingest_memory.py`; the analog index's phase 83).
STORE_BYTES_PER_MOLECULE = 100
#: Bytes a molecule of the whole set that every writer of a store set's shards holds besides
#: its shard's (a record offset every 64 molecules, with a margin). The root holds nothing per
#: molecule (the cuts are found by binary searches over the runs; each shard merges its own
#: slice): 26 MiB flat on all of MOSES in 4 shards (`benches/ingest_memory.py --shards 4`).
SET_BYTES_PER_MOLECULE = 1
#: What a process holds before any of it (Python, RDKit, numpy, the runtime: about 130 MiB on
#: the root of an ingest of MOSES before its first index), with a margin.
BASE = 160 << 20
#: The most plane payload a pass of the similarity planes' build holds (the format's default).
MAX_PLANE_BUDGET = 1 << 30


class OverBudget(ValueError):
    """A library that needs more memory than ingest may use (`--memory`)."""


def default_memory() -> int:
    """Three quarters of the memory this process may count on (`limits.machine_memory`: the
    machine's, its cgroup's limit or `ulimit -v`, the least)."""
    return machine_memory() * 3 // 4


@dataclass(frozen=True)
class Budget:
    """The memory ingest may hold (`memory` bytes) and the write buffers cut from it."""

    memory: int

    @property
    def plane_budget(self) -> int:
        """Bytes of plane payload a pass of the similarity planes' build (an eighth)."""
        return max(1 << 20, min(MAX_PLANE_BUDGET, self.memory // 8))

    @property
    def window_bytes(self) -> int:
        """Bytes of graph records a window of the substructure index's compression (a 32nd)."""
        return max(1 << 16, min(_core.PATTERN_WINDOW_BYTES, self.memory // 32))

    def split(self, writers: int) -> Budget:
        """Each of `writers` processes writing at once gets an equal share."""
        return Budget(max(1, self.memory // max(1, writers)))


def store_needs(n: int) -> int:
    """Bytes one process needs to write the one store of `n` molecules, every index."""
    return BASE + STORE_BYTES_PER_MOLECULE * n


def set_needs(n: int, shards: int, writers: int) -> int:
    """Bytes all processes need at once to write a set of `shards` shards of `n` molecules,
    `writers` shards at a time (each writer: its shard's store and the set's places; the root:
    nothing per molecule)."""
    shard = -(-n // shards)
    per_writer = BASE + SET_BYTES_PER_MOLECULE * n + STORE_BYTES_PER_MOLECULE * shard
    return BASE + min(writers, shards) * per_writer


def size_text(n: int) -> str:
    """Bytes as people read them: '512 MiB', '3.2 GiB', and below a MiB '64 KiB', '1,000 bytes'
    (a small --memory said as given, not as '1 MiB')."""
    if n >= 1 << 30:
        return f"{n / 2**30:,.1f} GiB"
    if n >= 1 << 20:
        return f"{round(n / 2**20):,} MiB"
    return f"{round(n / 2**10):,} KiB" if n >= 1 << 10 else f"{n:,} bytes"


def check(n: int, budget: Budget, shards: int | None, writers: int, max_shards: int) -> None:
    """Raises OverBudget, in one line, when writing `n` molecules (a set of `shards` shards
    written `writers` at a time, or the one store) needs more than `budget`; says what fits."""
    need = store_needs(n) if shards is None else set_needs(n, shards, writers)
    if need <= budget.memory:
        return
    what = "the one store" if shards is None else f"a set of {shards} shards"
    fits = next(
        (
            k
            for k in range(shards or 2, max_shards + 1)
            if set_needs(n, k, writers) <= budget.memory
        ),
        None,
    )
    if fits is not None:
        hint = f"write a store set of {fits} shards (--shards {fits}) or allow more (--memory)"
    elif shards is not None and writers > 1:
        hint = "allow more (--memory), write fewer shards at once (-j), or use MPI ranks"
    else:
        hint = "allow more (--memory)"
    many = f"{n:,} molecules need" if n else "any library needs"
    raise OverBudget(
        f"{many} about {size_text(need)} of memory to write {what} with every index, more than "
        f"the {size_text(budget.memory)} ingest may use (--memory): {hint}"
    )
