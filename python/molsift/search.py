"""Similarity search over a store: a query (SMILES, RDKit Mol, on-bit list or packed fingerprint)
becomes a fingerprint with the store's own spec, then the Rust searcher answers it exactly from
the store's column index (or a row scan for very dense queries). Hits come best first: score
descending, then store index ascending. `write_hits` writes them as `molsift search` does (TSV
or Parquet). numpy is imported at first use: the command line imports this module to build its
options, and verbs that never search start without it."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

HIT_COLUMNS = ("query_id", "target_id", "score", "target_smiles")  # one row per hit


@dataclass
class Hits:
    """Hits of one query: store positions and Tanimoto scores, best first."""

    indices: np.ndarray
    scores: np.ndarray
    stats: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.indices)

    def __iter__(self):
        return iter(zip(self.indices.tolist(), self.scores.tolist()))


def _check(threshold: float | None, k: int | None) -> None:
    from .arguments import is_real, is_whole

    if threshold is None and k is None:
        raise ValueError("give a threshold (threshold=), the k nearest (k=), or both")
    if threshold is not None and not is_real(threshold):
        raise TypeError(f"threshold must be a number, not {type(threshold).__name__}")
    if k is not None and not is_whole(k):
        raise TypeError(f"k must be an integer, not {type(k).__name__}")
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be between 0 and 1, got {threshold}")
    if k is not None and k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


def fingerprinter_for(store):
    """A Fingerprinter with the store's fingerprint spec (kind, radius, bits), made once per open
    store (building RDKit's generator costs more than fingerprinting a query)."""
    fp = getattr(store, "_fingerprinter", None)
    if fp is None:
        from .chem import Fingerprinter

        fp = Fingerprinter(store.fingerprint_spec)
        store._fingerprinter = fp
    return fp


def query_mol(smiles: str):
    """The molecule of a similarity query's SMILES, read without stereo (the bits read none);
    ValueError for an empty SMILES or one RDKit cannot parse."""
    from .chem import to_mol_unstereo
    from .wording import quoted

    if not smiles.strip():  # RDKit reads "" as a molecule of no atoms
        raise ValueError("empty query: give a SMILES")
    mol, reason = to_mol_unstereo(smiles)
    if mol is None:
        raise ValueError(f"invalid query SMILES {quoted(smiles)}: {reason}")
    return mol


def query_on_bits(store, query: Any, fingerprinter=None) -> list[int]:
    """On-bits of a query: SMILES text, an RDKit Mol, a sequence of on-bit indices, or a packed
    uint64 fingerprint row (the store's fingerprint size in bits / 64 words). Raises ValueError
    for a SMILES RDKit cannot parse or an empty one, a negative on-bit, or a packed row of
    another length; TypeError for a query of none of these kinds."""
    import numpy as np

    from .arguments import is_whole

    if isinstance(query, str):
        query = query_mol(query)
    if isinstance(query, np.ndarray) and query.dtype == np.uint64:
        words = store.fingerprint_spec.bits // 64
        if query.ndim != 1 or len(query) != words:
            raise ValueError(
                f"a packed fingerprint row of this store has {words} uint64 words, "
                f"got shape {query.shape}"
            )
        bits = np.unpackbits(query.astype("<u8").view(np.uint8), bitorder="little")
        return np.flatnonzero(bits).tolist()
    if hasattr(query, "GetNumAtoms"):  # an RDKit Mol
        fp = fingerprinter or fingerprinter_for(store)
        return fp.on_bits(query)
    if isinstance(query, (bytes, bytearray)) or not isinstance(query, Iterable):
        raise TypeError(
            "query must be a SMILES, an RDKit Mol, a sequence of on-bit indices or a packed "
            f"uint64 fingerprint row, not {type(query).__name__}"
        )
    bits = []
    for b in query:
        if not is_whole(b):
            raise TypeError(f"on-bit indices must be integers, got {b!r}")
        if b < 0:
            raise ValueError(f"on-bit {int(b)} is negative")
        bits.append(int(b))
    return bits


def _hits(indices, scores, stats) -> Hits:
    import numpy as np

    return Hits(np.asarray(indices, dtype=np.int64), np.asarray(scores, dtype=np.float64), stats)


def search(
    store, query: Any, threshold: float | None = None, k: int | None = None, threads: int = 1
) -> Hits:
    """Exact Tanimoto search of one query: hits at or above `threshold`, the `k` best, or the k
    best at or above the threshold."""
    from .parallel import check_workers

    _check(threshold, k)
    check_workers(threads, "threads")
    indices, scores, stats = store._searcher().search(
        query_on_bits(store, query), threshold, k, threads
    )
    return _hits(indices, scores, stats)


def search_batch(
    store,
    queries: Sequence[Any],
    threshold: float | None = None,
    k: int | None = None,
    threads: int = 1,
) -> list[Hits]:
    """As `search` for many queries at once (threads share the queries); result i answers
    queries[i]. The stats of each result are those summed over the batch."""
    from .parallel import check_workers
    from .sets.mpi import prepared

    if isinstance(queries, str):  # its characters would be searched one by one
        raise TypeError("queries must be a sequence of queries, not one SMILES: use search()")
    _check(threshold, k)
    check_workers(threads, "threads")
    fp = fingerprinter_for(store)
    on_bits = []
    for _, bits, error in prepared(store, queries, lambda q: query_on_bits(store, q, fp)):
        if error is not None:
            raise error
        on_bits.append(bits)
    results, stats = store._searcher().search_batch(on_bits, threshold, k, threads)
    return [_hits(i, s, stats) for i, s in results]


def hit_rows(store, query_ids: Sequence[str], results: Sequence[Hits]) -> list[tuple]:
    """One (query_id, target_id, score, target_smiles) row per hit (HIT_COLUMNS), queries in
    order and each query's hits best first; `results[i]` answers the query `query_ids[i]`."""
    pairs = [(qid, i, score) for qid, hits in zip(query_ids, results) for i, score in hits]
    # each column read in one call (a block decoded once for the hits it holds)
    positions = [i for _, i, _ in pairs]
    ids, smiles = store.ids.take(positions), store.smiles.take(positions)
    return [(qid, ident, score, smi) for (qid, _, score), ident, smi in zip(pairs, ids, smiles)]


def write_hits(rows: Iterable[tuple], path: str | os.PathLike | None = None) -> None:
    """Writes hit rows (HIT_COLUMNS) to `path`: Parquet when it ends in `.parquet` (any case; needs
    pyarrow; ImportError without it), else tab-separated text with a header row and scores to
    6 decimals (an id holding a tab quoted: `tsv.field`); `None` writes the TSV to stdout."""
    if path is not None and os.fspath(path).lower().endswith(".parquet"):
        _write_parquet(list(rows), path)
        return
    from .iostats import open_counted
    from .tsv import field

    with open_counted(path, "w") if path is not None else contextlib.nullcontext(sys.stdout) as out:
        out.write("\t".join(HIT_COLUMNS) + "\n")
        for qid, tid, score, smi in rows:
            out.write(f"{field(qid)}\t{field(tid)}\t{score:.6f}\t{smi}\n")


def _write_parquet(rows: list[tuple], path: str | os.PathLike) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError("Parquet output needs pyarrow (pip install pyarrow)") from exc
    cols = list(zip(*rows)) if rows else [[] for _ in HIT_COLUMNS]
    query_id, target_id, score, target_smiles = (list(c) for c in cols)
    table = pa.table(
        {
            "query_id": query_id,
            "target_id": target_id,
            "score": pa.array(score, pa.float64()),
            "target_smiles": target_smiles,
        }
    )
    pq.write_table(table, path)
