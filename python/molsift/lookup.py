"""Exact lookup in a version-2 store: "is this molecule in my library, and where?". Queries
are canonicalized as ingest canonicalized the store (RDKit's `MolFromSmiles`, `MolToSmiles`),
in worker processes for large batches (canonicalization is the cost: about 5,000 molecules/s
per core; the index probe and the block decode that confirms it take microseconds), then
probed in Rust (`molsift_store::v2::StoreV2::lookup`)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

import numpy as np

#: queries per task when canonicalizing in worker processes
CHUNK = 20_000


def canonical(smiles: str) -> str | None:
    """The canonical SMILES ingest would store for `smiles`, or None if RDKit cannot read it
    (or it is empty: RDKit reads "" as a molecule of no atoms, which no store holds)."""
    from .chem import to_mol, to_smiles

    if not smiles.strip():
        return None
    mol, _ = to_mol(smiles)
    return None if mol is None else to_smiles(mol)


def _canonical_chunk(chunk: list[str]) -> list[str | None]:
    from rdkit import RDLogger

    RDLogger.DisableLog("rdApp.*")
    return [canonical(s) for s in chunk]


def canonicalize(queries: list[str], workers: int | None = None) -> list[str | None]:
    """Canonical SMILES of each query (None where unparsable), on `workers` processes for
    batches larger than one chunk (default: all cores)."""
    from .parallel import check_workers

    workers = check_workers(workers) or os.cpu_count() or 1
    if workers <= 1 or len(queries) <= CHUNK:
        return _canonical_chunk(queries)
    from .parallel.pool import PoolExecutor

    chunks = [queries[i : i + CHUNK] for i in range(0, len(queries), CHUNK)]
    # no more processes than chunks; the one process engine (spawned with the allocator, dying
    # with this process, the worker count checked against memory, a worker's failure raised here)
    out: list[str | None] = []
    for part in PoolExecutor(min(workers, len(chunks))).map_ordered(_canonical_chunk, chunks):
        out.extend(part)
    return out


def lookup_all(store, smiles: Iterable[str], workers: int | None = None) -> Iterator[tuple]:
    """(query, canonical SMILES or None, store positions) for each query, in order."""
    from .sets.mpi import shared

    queries = [str(s) for s in smiles]
    # under mpirun over a set the ranks share the canonicalization (`shared`)
    canon = shared(store, queries, lambda mine: canonicalize(mine, workers))
    probe = [c for c in canon if c is not None]
    found = iter(store._core.lookup(probe))
    for q, c in zip(queries, canon):
        yield q, c, (next(found) if c is not None else [])


def lookup(store, smiles, workers: int | None = None) -> np.ndarray:
    """First store position of each query, -1 when absent; QueryError if one is unparsable."""
    from .substructure.query import QueryError

    single = isinstance(smiles, str)
    out = []
    for q, c, pos in lookup_all(store, [smiles] if single else smiles, workers):
        if c is None:
            raise QueryError(f"RDKit could not parse the query SMILES {q!r}")
        out.append(pos[0] if pos else -1)
    return np.array(out, dtype=np.int64)
