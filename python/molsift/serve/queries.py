"""Runs one search against one database and pages its hits: similarity (threshold and/or k),
substructure, SMARTS, exact (canonical SMILES lookup, version-2 stores), analogs (graph edit
distance `dist` with per-kind limits, stores with an analog index: `store.analogs`). Checks the
parameters first (ServiceError 400/413 with a message naming the parameter); a query RDKit
cannot read is a 400 too. Recent results are kept (a small LRU), so paging through them does
not search again."""

from __future__ import annotations

import statistics
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass

from ..analogs.skeleton import KINDS
from ..wording import quoted
from .catalog import Database
from .heavy import Stale
from .limits import Activity, Gate, Limits, ServiceError, current_flag

TYPES = ("similarity", "substructure", "smarts", "exact", "analogs")
#: similarity threshold when neither a threshold nor k is given
DEFAULT_THRESHOLD = 0.7
#: analogs: the distance searched when none is given (store.analogs' default)
DEFAULT_DIST = 2
#: results kept for paging
CACHE_SIZE = 64
#: a search on the event loop (Searcher.inline): of INLINE_TYPES; similarity of k at most
#: INLINE_K, or of a threshold at least INLINE_THRESHOLD without k; a page of at most INLINE_ROWS
#: rows; once that store's last RECENT searches of those kinds (at least RECENT_MIN) took under
#: `Limits.inline_ms` at the median
INLINE_TYPES = ("similarity", "exact")
INLINE_K = 1000
INLINE_THRESHOLD = 0.5
INLINE_ROWS = 100
RECENT = 32
RECENT_MIN = 8
#: the largest whole number a parameter may be (a signed 64-bit integer, as JSON answers and
#: numpy carry it)
MAX_INT = 2**63 - 1


@dataclass(frozen=True)
class Request:
    """A checked search request."""

    db: str
    type: str
    query: str
    threshold: float | None
    k: int | None
    #: analogs: the largest distance and the per-kind limits ((kind, n), ...; absent: none)
    dist: int | None = None
    caps: tuple = ()


@dataclass
class Result:
    """All hits of a search (store positions, a list or an int64 array; scores: Tanimoto for
    similarity and analogs), best or first first; analogs add `columns` (distance, edits by
    kind, mut) and `partial` (the time limit ended the walk)."""

    positions: list
    scores: list | None
    truncated: bool
    ms: float
    columns: dict | None = None
    partial: bool = False
    #: store position -> (SMILES, id) of the hits of the page asked for, read where the search
    #: ran (a worker process), so that the server's event loop does not decode their blocks
    texts: dict | None = None

    def read_texts(self, db: Database, span: tuple[int, int]) -> Result:
        """Fills `texts` for hits `span[0] .. span[1]` (a page's rows); returns self."""
        positions = [int(p) for p in self.positions[span[0] : span[1]]]
        if positions:
            self.texts = dict(zip(positions, zip(*texts(db, positions))))
        return self


def types(db: Database) -> list[str]:
    """The search types `db` answers: its store's (catalog.Database.types), and analogs when it
    has an analog index."""
    return [*db.types, *(["analogs"] if _has_analogs(db) else [])]


def _has_analogs(db: Database) -> bool:
    return bool(getattr(db.store, "has_analog_index", False))


def analog_limits(params, default: int | None) -> tuple[int | None, dict]:
    """(dist, per-kind limits) read from query parameters `dist`, `tdn` ... `lup`: None for an
    absent dist; a kind not given gets `default` (None: no limit). ServiceError 400 naming a
    value that is not a whole number (ranges are checked by `check`)."""
    caps = {}
    for kind in KINDS:
        n = number(params, kind, int)
        n = default if n is None else n
        if n is not None:
            caps[kind] = n
    return number(params, "dist", int), caps


def check(
    db: Database,
    type_: str | None,
    query: str | None,
    threshold: float | None,
    k: int | None,
    limits: Limits,
    dist: int | None = None,
    caps: dict | None = None,
) -> Request:
    """The request, or ServiceError naming what is wrong. `dist` (default 2) and `caps` (the
    most edits of each kind, none by default) are read for analogs only, as `store.analogs`
    takes them."""
    kind = (type_ or "similarity").lower()
    if kind not in TYPES:
        raise ServiceError(400, f"type={type_!r}: use one of {', '.join(TYPES)}")
    if kind not in types(db):  # every store answers exact and similarity
        flag = "--analogs" if kind == "analogs" else "--pattern"
        what = "an analog" if kind == "analogs" else "a substructure"
        why = f"needs {what} index (molsift index STORE {flag})"
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
    elif kind == "analogs":
        from ..analogs.search import MAX_DIST

        threshold = None
        if k is not None and not 1 <= k <= limits.max_k:
            raise ServiceError(400, f"k={k}: give a value from 1 to {limits.max_k:,}")
        dist = DEFAULT_DIST if dist is None else dist
        if not 0 <= dist <= MAX_DIST:
            raise ServiceError(400, f"dist={dist}: give a value from 0 to {MAX_DIST}")
        for name, n in (caps or {}).items():
            if name not in KINDS or not 0 <= n <= 254:
                raise ServiceError(400, f"{name}={n}: give a value from 0 to 254")
        return Request(db.name, kind, query, None, k, dist, tuple(sorted((caps or {}).items())))
    else:
        threshold = k = None
    return Request(db.name, kind, query, threshold, k)


class Searcher:
    """Runs checked requests behind the gate (limits.Gate: light and heavy slots, a time
    limit) and keeps recent results. Light searches run in `light` (light.LightWorkers) worker
    processes, heavy ones in `workers`' (heavy.HeavyWorkers), a 504 killing the search's
    process; a store neither serves (a set searched by MPI ranks) is searched in the gate's
    threads, stopped by the cancel flag after a 504. A light search the server can afford to
    run on its event loop (`inline`: the server otherwise idle, `activity`; a small search of a
    store whose recent light searches were fast) runs there, without a worker's round trip."""

    def __init__(
        self, limits: Limits, gate: Gate, workers=None, light=None, activity: Activity | None = None
    ) -> None:
        self.limits = limits
        self.gate = gate
        self.workers = workers
        self.light = light
        self.activity = activity
        self._cache: OrderedDict[Request, Result] = OrderedDict()
        self._lock = threading.Lock()
        #: database name -> ms of its last RECENT light searches (in workers or inline)
        self._recent: dict[str, deque] = {}

    def cached(self, req: Request) -> Result | None:
        with self._lock:
            hit = self._cache.get(req)
            if hit is not None:
                self._cache.move_to_end(req)
            return hit

    def _keep(self, req: Request, result: Result) -> Result:
        with self._lock:
            self._cache[req] = result
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return result

    def in_process(self, db: Database, heavy: bool) -> bool:
        """Whether a search of `db` of this weight runs in a worker process."""
        return heavy and self.workers is not None and self.workers.serves(db)

    async def answer(self, db: Database, req: Request, span: tuple[int, int] = (0, 0)) -> Result:
        """The result of `req`: from the cache, or searched behind the gate. A search in a
        worker process reads the texts of hits `span[0] .. span[1]` there too (the page asked
        for: Result.texts)."""
        hit = self.cached(req)
        if hit is not None:
            return hit
        heavy = self.limits.heavy(req.type, req.dist, len(req.query))
        try:
            if self.in_process(db, heavy):
                async with self.gate.slot(heavy=True):
                    hit = self.cached(req)  # searched by another request while this one waited
                    return hit or self._keep(req, await self.workers.search(req, span))
            if not heavy and self.light is not None and self.light.serves(db):
                if self.inline(db, req, span):
                    return self._keep(req, self._timed(db, req, compute(db, req, self.limits)))
                async with self.gate.slot():
                    hit = self.cached(req)
                    if hit is not None:
                        return hit
                    return self._keep(req, self._timed(db, req, await self.light.search(req, span)))
        except Stale:  # the store was replaced on disk: searched here, in the server's generation
            pass
        return await self.gate.run(self.run, db, req, heavy=heavy)

    def inline(self, db: Database, req: Request, span: tuple[int, int]) -> bool:
        """Whether light search `req` (a page of hits `span`) runs on the event loop: the server
        otherwise idle (one request under way, from the one connection asking lately, no light
        slot held), a similarity search of k <= INLINE_K or of a threshold >= INLINE_THRESHOLD
        without k, or an exact one, a page of <= INLINE_ROWS rows, and the median of that store's
        last light searches under `limits.inline_ms`. Such a search cannot be stopped at the time
        limit; these bounds keep it to about a millisecond or two on the loop."""
        if self.limits.inline_ms <= 0 or self.activity is None or span[1] - span[0] > INLINE_ROWS:
            return False
        if req.type == "similarity":
            small = req.k <= INLINE_K if req.k is not None else req.threshold >= INLINE_THRESHOLD
            if not small:
                return False
        elif req.type not in INLINE_TYPES:
            return False
        recent = self._recent.get(db.name)
        if recent is None or len(recent) < RECENT_MIN:
            return False
        if statistics.median(recent) >= self.limits.inline_ms:
            return False
        return self.gate.idle() and self.activity.alone(time.monotonic())

    def _timed(self, db: Database, req: Request, result: Result) -> Result:
        """Notes `result`'s search time among `db`'s recent light searches of the kinds that
        may run on the loop (similarity, exact; not the narrow analog walks); returns it."""
        if req.type in INLINE_TYPES:
            self._recent.setdefault(db.name, deque(maxlen=RECENT)).append(result.ms)
        return result

    def run(self, db: Database, req: Request) -> Result:
        hit = self.cached(req)
        return hit or self._keep(req, compute(db, req, self.limits))


def compute(db: Database, req: Request, limits: Limits) -> Result:
    """Searches `req` in this thread (stopped by `current_flag()` once set)."""
    start = time.perf_counter()
    if req.type == "analogs":
        result = _analogs(db, req, limits)
    else:
        positions, scores, truncated = _search(db, req, limits)
        result = Result(positions, scores, truncated, 0.0)
    result.ms = (time.perf_counter() - start) * 1e3
    return result


def analog_levels(db: Database, query: str, dist: int, caps: dict, limits: Limits, k: int):
    """`iter_analogs` of a checked analog request (SmallWorld's submit: one Analogs per
    distance, the best `k`), ended by its own timeout inside the gate's limit and by
    `current_flag()`."""
    from ..analogs.search import iter_analogs

    try:
        yield from iter_analogs(
            db.store, query, max_dist=dist, k=k, limits=caps, timeout=0.8 * limits.timeout_s,
            lock=db.chem_lock, cancel=current_flag(),
        )  # fmt: skip
    except ValueError as e:  # the query, read here when the server did not read it first
        raise ServiceError(400, invalid(query, e)) from None


def invalid(query: str, error: Exception) -> str:
    """The message of a query the search could not read, naming the query once (the readers'
    own messages often name it already: `invalid query SMILES 'X': ...`, `query 'X': ...`)."""
    text = str(error)
    if text.startswith("invalid query"):
        return text
    if text.startswith(("query '", 'query "')):  # the reader's naming (a long query shortened)
        return f"invalid {text}"
    return f"invalid query {quoted(query, 80)}: {text}"


def _search(db: Database, req: Request, limits: Limits) -> tuple[list, list | None, bool]:
    from ..substructure.query import QueryError

    store = db.store
    try:
        if req.type == "similarity":
            from ..search import query_on_bits

            bits = query_on_bits(store, req.query)
            hits = store.search(bits, threshold=req.threshold, k=req.k)
            return hits.indices.tolist(), hits.scores.tolist(), False
        if req.type in ("substructure", "smarts"):
            from ..substructure.search import substructure

            # stopped by the gate's cancel flag once its answer was given up (504)
            pos = substructure(
                store, req.query, smarts=req.type == "smarts", max_hits=limits.max_hits + 1,
                cancel=current_flag(),
            )  # fmt: skip
            # kept as an array: no Python int per hit (a fragment's 300,000 hits were ms of the
            # interpreter lock), and from a worker process one copy of its bytes
            return pos[: limits.max_hits], None, len(pos) > limits.max_hits
        from ..lookup import lookup_all

        _q, canon, positions = next(lookup_all(store, [req.query], workers=1))
        if canon is None:
            raise ServiceError(400, f"invalid SMILES {req.query!r}: RDKit could not read it")
        return sorted(int(p) for p in positions), None, False
    except (ValueError, QueryError) as e:
        raise ServiceError(400, invalid(req.query, e)) from None


def _analogs(db: Database, req: Request, limits: Limits) -> Result:
    """`store.analogs` of a checked request: at most `limits.max_hits` hits kept (truncated
    beyond), the walk ended by its own timeout inside the gate's limit (partial then)."""
    from ..analogs.search import analogs

    k = req.k if req.k is not None else limits.max_hits + 1
    try:
        found = analogs(
            db.store, req.query, max_dist=req.dist, k=k, limits=dict(req.caps),
            timeout=0.8 * limits.timeout_s, lock=db.chem_lock, cancel=current_flag(),
        )  # fmt: skip
    except ValueError as e:
        raise ServiceError(400, invalid(req.query, e)) from None
    n = min(len(found), limits.max_hits)
    columns = {name: found[name][:n].tolist() for name in ANALOG_COLUMNS}
    return Result(
        found["position"][:n].tolist(), found["tanimoto"][:n].tolist(), len(found) > n, 0.0,
        columns, found.partial,
    )  # fmt: skip


#: the columns an analog hit adds to a row (python/molsift/analogs/search.py's)
ANALOG_COLUMNS = ("distance", *KINDS, "mut")


def page(db: Database, result: Result, start: int, length: int) -> list[dict]:
    """Rows `start .. start + length` of a result: rank, store position, id, SMILES, score;
    analogs add distance, the edits by kind and mut (-1: unknown)."""
    positions = [int(p) for p in result.positions[start : start + length]]
    smiles, ids = texts(db, positions, result)
    rows = []
    for j, pos in enumerate(positions):
        row = {"rank": start + j + 1, "position": pos, "id": ids[j], "smiles": smiles[j]}
        if result.scores is not None:
            row["score"] = result.scores[start + j]
        if result.columns is not None:
            for name, values in result.columns.items():
                row[name] = values[start + j]
        rows.append(row)
    return rows


def texts(db: Database, positions: list, result=None) -> tuple[list, list]:
    """(SMILES, ids) of store positions `positions` (ints): from `result.texts` when it holds
    them all, else read in one call per column."""
    have = getattr(result, "texts", None)
    if have is not None and all(p in have for p in positions):
        pairs = [have[p] for p in positions]
        return [smi for smi, _ in pairs], [ident for _, ident in pairs]
    return db.store.smiles.take(positions), db.store.ids.take(positions)


def smiles_ids(db: Database, positions, result=None) -> list[str]:
    """ "SMILES ID" of each store position (as Arthor and SmallWorld show a hit), read in one
    call per column (or from `result.texts`)."""
    smiles, ids = texts(db, [int(p) for p in positions], result)
    return [f"{smi} {ident}" for smi, ident in zip(smiles, ids)]


def check_page(start: int | None, length: int | None, limits: Limits) -> tuple[int, int]:
    """(start, length) with defaults 0 and 100, or ServiceError."""
    start = 0 if start is None else start
    length = 100 if length is None else length
    if not 0 <= start <= MAX_INT:
        raise ServiceError(400, f"start={start}: give a value from 0 to {MAX_INT}")
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
        value = kind(text)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise ServiceError(400, f"{name}={text!r}: give {what}") from None
    if kind is int and not -MAX_INT - 1 <= value <= MAX_INT:  # JSON and numpy take 64 bits
        raise ServiceError(400, f"{name}={text!r}: out of range (a signed 64-bit integer)")
    return value


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
