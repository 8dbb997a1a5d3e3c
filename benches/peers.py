"""Runs a peer (a plain RDKit loop) in several processes at once: the machine's own scaling,
the reference the per-core figures of benches/ingest.py and benches/screen.py are read against."""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections.abc import Sequence
from typing import Any, Callable


def _import_rdkit() -> None:
    from rdkit import Chem  # noqa: F401  (the import is the point: done before the clock)
    from rdkit.Chem import QED, rdFingerprintGenerator  # noqa: F401
    from rdkit.Chem.FilterCatalog import FilterCatalog  # noqa: F401


def timed_in_processes(
    fn: Callable[[Any], Any], shares: Sequence[Any], preload: str | None = None
) -> tuple[float, list[Any]]:
    """`fn` on every share, one process per share, all at once. The processes are started and
    have imported RDKit before the clock starts; with `preload` (a shared library, e.g. the
    tcmalloc molsift's workers run on) they start with it in LD_PRELOAD. Returns (wall seconds,
    results in order)."""
    procs = len(shares)
    before = os.environ.get("LD_PRELOAD")
    if preload:
        os.environ["LD_PRELOAD"] = preload
    try:
        with mp.get_context("spawn").Pool(procs, initializer=_import_rdkit) as pool:
            pool.map(time.sleep, [0.2] * procs, chunksize=1)  # every worker up and initialized
            start = time.perf_counter()
            results = pool.map(fn, shares, chunksize=1)
            return time.perf_counter() - start, results
    finally:
        if before is None:
            os.environ.pop("LD_PRELOAD", None)
        else:
            os.environ["LD_PRELOAD"] = before
