"""Runs one search against one database and pages its hits: similarity (threshold and/or k),
substructure, SMARTS, exact (canonical SMILES lookup, version-2 stores). Checks the parameters
first (ServiceError 400/413 with a message naming the parameter); a query RDKit cannot read is
a 400 too. Recent results are kept (a small LRU), so paging through them does not search again."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from .catalog import Database
from .limits import Gate, Limits, ServiceError

TYPES = ("similarity", "substructure", "smarts", "exact")
#: similarity threshold when neither a threshold nor k is given
DEFAULT_THRESHOLD = 0.7
#: results kept for paging
CACHE_SIZE = 64


@dataclass(frozen=True)
class Request:
    """A checked search request."""

    db: str
    type: str
    query: str
    threshold: float | None
    k: int | None


@dataclass
class Result:
    """All hits of a search (store positions; scores for similarity), best or first first."""

    positions: list
    scores: list | None
    truncated: bool
    ms: float


def check(
    db: Database,
    type_: str | None,
    query: str | None,
    threshold: float | None,
    k: int | None,
    limits: Limits,
) -> Request:
    """The request, or ServiceError naming what is wrong."""
    kind = (type_ or "similarity").lower()
    if kind not in TYPES:
        raise ServiceError(400, f"type={type_!r}: use one of {', '.join(TYPES)}")
    if kind not in db.types:  # every store answers exact and similarity
        why = "needs a substructure index (molsift index STORE --pattern)"
        raise ServiceError(400, f"database {db.name!r} cannot answer type={kind}: it {why}")
    if query is None or not query.strip():
        raise ServiceError(400, "query is empty: give a SMILES (or SMARTS for type=smarts)")
    query = query.strip()
    if len(query) > limits.max_query_chars:
        raise ServiceError(
            413, f"query is {len(query):,} characters; the limit is {limits.max_query_chars:,}"
        )
    if kind == "similarity":
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise ServiceError(400, f"threshold={threshold}: give a value from 0 to 1")
        if k is not None and not 1 <= k <= limits.max_k:
            raise ServiceError(400, f"k={k}: give a value from 1 to {limits.max_k:,}")
        if threshold is None and k is None:
            threshold = DEFAULT_THRESHOLD
    else:
        threshold = k = None
    return Request(db.name, kind, query, threshold, k)


class Searcher:
    """Runs checked requests (in a worker thread behind the gate: limits.Gate) and keeps recent
    results."""

    def __init__(self, limits: Limits, gate: Gate) -> None:
        self.limits = limits
        self.gate = gate
        self._cache: OrderedDict[Request, Result] = OrderedDict()
        self._lock = threading.Lock()

    def cached(self, req: Request) -> Result | None:
        with self._lock:
            hit = self._cache.get(req)
            if hit is not None:
                self._cache.move_to_end(req)
            return hit

    async def answer(self, db: Database, req: Request) -> Result:
        """The result of `req`: from the cache, or searched in a worker thread behind the gate."""
        return self.cached(req) or await self.gate.run(self.run, db, req)

    def run(self, db: Database, req: Request) -> Result:
        hit = self.cached(req)
        if hit is not None:
            return hit
        start = time.perf_counter()
        positions, scores, truncated = _search(db, req, self.limits)
        result = Result(positions, scores, truncated, (time.perf_counter() - start) * 1e3)
        with self._lock:
            self._cache[req] = result
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return result


def _search(db: Database, req: Request, limits: Limits) -> tuple[list, list | None, bool]:
    from ..substructure.query import QueryError

    store = db.store
    try:
        if req.type == "similarity":
            from ..search import query_on_bits

            with db.chem_lock:
                bits = query_on_bits(store, req.query)
            hits = store.search(bits, threshold=req.threshold, k=req.k)
            return hits.indices.tolist(), hits.scores.tolist(), False
        if req.type in ("substructure", "smarts"):
            with db.chem_lock:
                pos = store.substructure(
                    req.query, smarts=req.type == "smarts", max_hits=limits.max_hits + 1
                )
            out = pos.tolist()
            return out[: limits.max_hits], None, len(out) > limits.max_hits
        from ..lookup import lookup_all

        with db.chem_lock:
            _q, canon, positions = next(lookup_all(store, [req.query], workers=1))
        if canon is None:
            raise ServiceError(400, f"invalid SMILES {req.query!r}: RDKit could not read it")
        return sorted(int(p) for p in positions), None, False
    except (ValueError, QueryError) as e:
        raise ServiceError(400, f"invalid query {req.query!r}: {e}") from None


def page(db: Database, result: Result, start: int, length: int) -> list[dict]:
    """Rows `start .. start + length` of a result: rank, store position, id, SMILES, score."""
    positions = [int(p) for p in result.positions[start : start + length]]
    ids, smiles = db.store.ids.take(positions), db.store.smiles.take(positions)
    rows = []
    for j, pos in enumerate(positions):
        row = {"rank": start + j + 1, "position": pos, "id": ids[j], "smiles": smiles[j]}
        if result.scores is not None:
            row["score"] = result.scores[start + j]
        rows.append(row)
    return rows


def smiles_ids(db: Database, positions) -> list[str]:
    """ "SMILES ID" of each store position (as Arthor and SmallWorld show a hit), read in one
    call per column."""
    pairs = zip(db.store.smiles.take(positions), db.store.ids.take(positions))
    return [f"{smi} {ident}" for smi, ident in pairs]


def check_page(start: int | None, length: int | None, limits: Limits) -> tuple[int, int]:
    """(start, length) with defaults 0 and 100, or ServiceError."""
    start = 0 if start is None else start
    length = 100 if length is None else length
    if start < 0:
        raise ServiceError(400, f"start={start}: give 0 or more")
    if not 0 <= length <= limits.max_length:
        raise ServiceError(400, f"length={length}: give a value from 0 to {limits.max_length:,}")
    return start, length


def number(params, name: str, kind):
    """Query parameter `name` as `kind` (int or float), None when absent; ServiceError 400
    naming it when it is not a number of that kind."""
    text = params.get(name)
    if text is None or text == "":
        return None
    try:
        return kind(text)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise ServiceError(400, f"{name}={text!r}: give {what}") from None


def query_parameters(*rows: tuple[str, str, str]) -> list[dict]:
    """OpenAPI entries of optional query parameters, one per (name, type, description), for
    the endpoints that read their parameters themselves."""
    return [
        {
            "name": name,
            "in": "query",
            "required": False,
            "schema": {"type": kind},
            "description": text,
        }
        for name, kind, text in rows
    ]
