"""SmallWorld's API as its clients use it (../shared/data/service-clients.md): `GET
/search/submit` (a Server-Sent Events stream whose last `data:` line carries the `hlid` of the
result set), `GET /search/view` (DataTables server-side JSON; or the batch form
`?smi=S1&smi=S2...&db=DB&fmt=json|tsv`, search and view in one request), `GET /search/export`
(TSV), `GET /search/config` and `GET /search/maps` (an object keyed by database name, as
smallworld-api reads it). `/search/submit` searches one `smi` (several: 400, naming the batch
form); a `length` over the server's cap on `/search/view` is clamped, and the answer's `warning`
says so (the batch TSV: an `X-Warning` header). SmallWorld ranks by graph edit distance: on a
store with an analog index (`molsift index STORE --analogs`) `/search/submit` answers with
molsift's exact analog search (`dist` and the per-kind limits `tdn` ... `lup`, 10 each by
default as SmallWorld's), streaming a `MORE` event as each distance completes, and the rows
carry `dist`, `ecfp4` (Morgan Tanimoto), the edits by kind and `mut` (molsift's element changes:
the hit's atoms whose element differs from the query atom they come from, docs/analogs.md).
On other stores the answer is the
molecules ranked by ECFP4-like Tanimoto similarity. Every answer says which (`note`); columns
molsift does not compute (`topodist`, `mces`, `maj`, ...) are null, never invented. A bad
database is HTTP 400 (as SmallWorld), an unknown `hlid` 404."""

from __future__ import annotations

import asyncio
import io
import json
import re
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from ..analogs.skeleton import KINDS
from . import queries
from .catalog import Catalog
from .encode import JSON
from .fast import FastRoutes
from .heavy import Stale
from .limits import Limits, ServiceError

NOTE = (
    "ranked by Tanimoto similarity of Morgan radius-2 fingerprints (ECFP4-like); no graph edit "
    "distance in this answer (analog search answers /search/submit on databases with an analog "
    "index)"
)
ANALOG_NOTE = (
    "ranked by graph edit distance between skeletons (molsift's exact analog search, "
    "docs/analogs.md), then ECFP4-like Tanimoto; mut counts the hit's atoms whose element differs "
    "from the query atom they come from along the path (molsift's mapping, docs/analogs.md); "
    "alignment, daylight, topodist, mces, maj, min, hyb and sub are not computed"
)
#: SmallWorld's per-kind limits when a request gives none
DEFAULT_KIND_LIMIT = 10
#: the distance searched when a request gives none
DEFAULT_DIST = 4
#: the 17 DataTables columns SmallWorld clients send, in order
COLUMNS = (
    "alignment",
    "dist",
    "ecfp4",
    "daylight",
    "topodist",
    "mces",
    "tdn",
    "tup",
    "rdn",
    "rup",
    "ldn",
    "lup",
    "mut",
    "maj",
    "min",
    "hyb",
    "sub",
)
#: hits kept per result set (SmallWorld's default view is the nearest few thousand)
DEPTH = 10_000
#: result sets kept
KEEP = 1000
#: queries in one batch view (`smi` given several times), as SmallWorld allows
MAX_BATCH = 20


@dataclass
class AnalogHits:
    """An analog result set as it grows (one distance at a time): positions, Tanimoto scores,
    distances and edits by kind in rank order; `partial` once the time limit ended it."""

    positions: list = field(default_factory=list)
    scores: list = field(default_factory=list)
    dist: list = field(default_factory=list)
    counts: list = field(default_factory=list)
    mut: list = field(default_factory=list)
    partial: bool = False

    def extend(self, level) -> None:
        cols = level.columns
        self.positions += cols["position"].tolist()
        self.scores += cols["tanimoto"].tolist()
        self.dist += cols["distance"].tolist()
        self.counts += list(zip(*(cols[k].tolist() for k in KINDS)))
        self.mut += [m if m >= 0 else None for m in cols["mut"].tolist()]


def has_analogs(db) -> bool:
    return bool(getattr(db.store, "has_analog_index", False))


#: an hlid as a request writes it: up to 19 ASCII digits (a 63-bit integer)
HLID = re.compile(r"[0-9]{1,19}")


def hlid_of(text: str | None) -> int:
    """The result-set id written in `text` (ASCII digits only, nothing around them), or
    ServiceError 400."""
    if text is None or not HLID.fullmatch(text):
        raise ServiceError(400, f"hlid={text!r}: give the number /search/submit returned")
    return int(text)


class HitLists:
    """Result sets by `hlid`, the most recent KEEP kept. An hlid is an integer, as clients
    parse it, of 63 random bits (`secrets`): one client cannot name, or guess, another's."""

    def __init__(self) -> None:
        self._lists: OrderedDict[int, tuple] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, db, query: str, result) -> int:
        with self._lock:
            hlid = 0
            while hlid == 0 or hlid in self._lists:
                hlid = secrets.randbits(63)
            self._lists[hlid] = (db, query, result)
            while len(self._lists) > KEEP:
                self._lists.popitem(last=False)
            return hlid

    def get(self, hlid: str | None):
        key = hlid_of(hlid)
        with self._lock:
            found = self._lists.get(key)
        if found is None:
            raise ServiceError(404, f"hlid={key}: no such result set (or it expired): search again")
        return found


def _event(payload: dict) -> str:
    return "data:" + json.dumps(payload, separators=(",", ":")) + "\n\n"


def router(
    catalog: Catalog, searcher: queries.Searcher, limits: Limits, _fast: FastRoutes
) -> APIRouter:
    api = APIRouter(prefix="/search", tags=["SmallWorld-compatible"])
    lists = HitLists()

    def database(name: str | None):
        if not name:
            raise ServiceError(400, f"db is missing: one of {', '.join(catalog.names())}")
        db = catalog.get(name)
        if db is None:
            raise ServiceError(
                400, f"db={name!r}: no such database; this server has {', '.join(catalog.names())}"
            )
        return db

    @api.get("/submit", summary="Search (SmallWorld; Server-Sent Events)")
    async def submit(request: Request, smi: str | None = None, db: str | None = None):
        began = time.perf_counter()
        several = request.query_params.getlist("smi")
        if len(several) > 1:
            raise ServiceError(
                400,
                f"{len(several)} smi parameters: /search/submit searches one query; send one "
                "each, or use the batch form /search/view?smi=S1&smi=S2...&db=DB (up to "
                f"{MAX_BATCH})",
            )
        base = database(db)
        if has_analogs(base):
            return await analog_submit(request, base, smi, began)
        request.state.log = {"db": base.name, "type": "similarity"}
        try:
            req = queries.check(base, "similarity", smi, None, min(DEPTH, limits.max_k), limits)
            result = await searcher.answer(base, req)
        except ServiceError as e:
            if e.status != 400:
                raise
            miss = {"status": "MISS", "hlid": -1, "message": e.message, "note": NOTE}
            return StreamingResponse(iter([_event(miss)]), media_type="text/event-stream")
        hlid = lists.add(base, req.query, result)
        request.state.log["hits"] = len(result.positions)
        n = len(result.positions)
        elapsed = round(time.perf_counter() - began, 3)
        events = [
            _event({"status": "FIRST", "hlid": hlid, "numHits": 0, "elap": 0, "note": NOTE}),
            _event({"status": "END", "hlid": hlid, "numHits": n, "elap": elapsed, "note": NOTE}),
        ]
        return StreamingResponse(iter(events), media_type="text/event-stream")

    def analog_request(base, q, smi: str | None) -> tuple[str, int, dict]:
        """(query, dist, limits) of an analog submit (checked as /api/v1/search checks
        type=analogs, with SmallWorld's defaults), or ServiceError 400."""
        from ..chem import to_mol

        dist, caps = queries.analog_limits(q, DEFAULT_KIND_LIMIT)
        dist = DEFAULT_DIST if dist is None else dist
        req = queries.check(base, "analogs", smi, None, None, limits, dist, caps)
        if len(req.query) > limits.light_query_chars and searcher.in_process(base, True):
            # read by the worker process that walks it: RDKit's read of a long query could hold
            # the interpreter lock (and here, the event loop) for a while
            return req.query, req.dist, dict(req.caps)
        with base.chem_lock:
            mol, reason = to_mol(req.query)
        if mol is None or mol.GetNumHeavyAtoms() == 0:
            why = reason or "no heavy atom"
            raise ServiceError(400, f"invalid query SMILES {req.query!r}: {why}")
        return req.query, req.dist, dict(req.caps)

    async def analog_submit(request: Request, base, smi: str | None, began: float):
        """Analog search behind the gate, a `MORE` event per completed distance, then `END`
        (with `partial` when the time limit ended it)."""
        request.state.log = log = {"db": base.name, "type": "analogs"}
        try:
            query, dist, caps = analog_request(base, request.query_params, smi)
        except ServiceError as e:
            if e.status != 400:
                raise
            miss = {"status": "MISS", "hlid": -1, "message": e.message, "note": ANALOG_NOTE}
            return StreamingResponse(iter([_event(miss)]), media_type="text/event-stream")
        hits = AnalogHits()
        hlid = lists.add(base, query, hits)
        loop = asyncio.get_running_loop()
        levels: asyncio.Queue = asyncio.Queue()

        def work() -> None:
            # bounded by the walk's own timeout, inside the gate's limit
            for level in queries.analog_levels(base, query, dist, caps, limits, DEPTH):
                loop.call_soon_threadsafe(levels.put_nowait, level)

        async def run() -> None:
            heavy = limits.heavy("analogs", dist, len(query))
            try:
                walked = False
                if searcher.in_process(base, heavy):  # a worker process walks it
                    try:
                        async with searcher.gate.slot(heavy=True):
                            await searcher.workers.levels(
                                base, query, dist, caps, DEPTH,
                                lambda level: loop.call_soon_threadsafe(levels.put_nowait, level),
                            )  # fmt: skip
                        walked = True
                    except Stale:  # the store was replaced on disk: walked here (before a level)
                        pass
                if not walked:
                    await searcher.gate.run(work, heavy=heavy)
                await levels.put(None)
            except Exception as e:  # every failure ends the stream with its message
                await levels.put(e)

        task = asyncio.ensure_future(run())

        def event(status: str, **extra) -> str:
            elapsed = round(time.perf_counter() - began, 3)
            return _event({"status": status, "hlid": hlid, "numHits": len(hits.positions),
                           "elap": elapsed, **extra, "note": ANALOG_NOTE})  # fmt: skip

        async def stream():
            yield event("FIRST")
            while True:
                item = await levels.get()
                if item is None:
                    break
                if isinstance(item, Exception):
                    message = getattr(item, "message", None) or str(item)
                    if hits.positions:
                        yield event("END", partial=True, message=message)
                    else:
                        miss = {"status": "MISS", "hlid": -1, "message": message}
                        yield _event({**miss, "note": ANALOG_NOTE})
                    await task
                    return
                hits.extend(item)
                hits.partial = hits.partial or item.partial
                yield event("MORE", dist=item.complete_to)
            await task
            log["hits"] = len(hits.positions)
            yield event("END", partial=hits.partial)

        return StreamingResponse(stream(), media_type="text/event-stream")

    def rows(base, query, result, start: int, length: int) -> list:
        out = []
        positions = [int(p) for p in result.positions[start : start + length]]
        texts = zip(*queries.texts(base, positions, result))
        for rank, (pos, (smiles, ident)) in enumerate(zip(positions, texts), start):
            first = {
                "hitSmiles": f"{smiles} {ident}",
                "qryMappedSmiles": query,
                "hitMappedSmiles": smiles,
                "atomScore": None,
                "atomMap": None,
                "id": ident,
                "anonIdx": pos,
                "mw": None,
                "mf": None,
                "note": NOTE,
            }
            values = {name: None for name in COLUMNS[1:]}
            values["ecfp4"] = result.scores[rank]
            if isinstance(result, AnalogHits):
                first["note"] = ANALOG_NOTE
                values["dist"] = result.dist[rank]
                values.update(zip(KINDS, result.counts[rank]))
                values["mut"] = result.mut[rank]
            out.append([first, *values.values()])
        return out

    @api.get(
        "/view",
        summary="A page of a result set, or the batch form: search and view at once (SmallWorld)",
        openapi_extra={"parameters": VIEW_PARAMETERS},
    )
    async def view(request: Request):
        q = request.query_params
        start = queries.number(q, "start", int)
        length = queries.number(q, "length", int)
        length = 10 if length is None else length
        # a length over the cap is clamped, not refused (clients ask for 20000), and said
        clamped = {}
        if length > limits.max_length:
            clamped = {
                "length": limits.max_length,
                "warning": f"length={length} is over this server's limit: "
                f"{limits.max_length:,} rows at most",
            }
            length = limits.max_length
        start, length = queries.check_page(start or 0, length, limits)
        smiles = q.getlist("smi")
        if smiles:
            return await batch(request.scope.setdefault("state", {}), q, smiles, length, clamped)
        draw = queries.number(q, "draw", int) or 0
        base, query, result = lists.get(q.get("hlid"))
        n = len(result.positions)
        return JSON(
            {
                "draw": draw,
                "recordsTotal": n,
                "recordsFiltered": n,
                "data": rows(base, query, result, start, length),
                "note": ANALOG_NOTE if isinstance(result, AnalogHits) else NOTE,
                **clamped,
            }
        )

    async def batch(state: dict, q, smiles: list, length: int, clamped: dict):
        """`/search/view?smi=S1&smi=S2...&db=DB&fmt=json|tsv`: each query searched, its
        `length` best rows (the view's rows, or the export's TSV lines with the query added as
        the last column), query after query."""
        if len(smiles) > MAX_BATCH:
            raise ServiceError(400, f"{len(smiles)} smi parameters; the limit is {MAX_BATCH}")
        fmt = (q.get("fmt") or "json").lower()
        if fmt not in ("json", "tsv"):
            raise ServiceError(400, f"fmt={q.get('fmt')!r}: use json or tsv")
        base = database(q.get("db"))
        state["log"] = log = {"db": base.name, "type": "similarity"}
        found = []
        for smi in smiles:
            # k: the rows asked for (a --max-length over the most k is not a bad request)
            k = max(1, min(length, limits.max_k))
            req = queries.check(base, "similarity", smi, None, k, limits)
            found.append((req.query, await searcher.answer(base, req, (0, length))))
        log["hits"] = sum(min(length, len(r.positions)) for _, r in found)
        if fmt == "tsv":
            buf = io.StringIO()
            buf.write("SMILES ID\tdist\tecfp4\tdaylight\ttopodist\tmces\tquery\n")
            for query, result in found:
                texts = queries.smiles_ids(base, result.positions[:length], result)
                for text, score in zip(texts, result.scores[:length]):
                    buf.write(f"{text}\t\t{score}\t\t\t\t{query}\n")
            headers = {"X-Warning": clamped["warning"]} if clamped else None
            return Response(buf.getvalue(), media_type="text/tab-separated-values", headers=headers)
        data = []
        for query, result in found:
            data.extend(rows(base, query, result, 0, length))
        n = len(data)
        return JSON(
            {"recordsTotal": n, "recordsFiltered": n, "data": data, "note": NOTE, **clamped}
        )

    @api.get("/export", summary="A result set as TSV (SmallWorld)")
    def export(hlid: str | None = None) -> Response:
        base, _query, result = lists.get(hlid)
        buf = io.StringIO()
        buf.write("SMILES ID\tdist\tecfp4\tdaylight\ttopodist\tmces\n")
        dists = getattr(result, "dist", None) or [""] * len(result.positions)
        texts = queries.smiles_ids(base, result.positions)
        for text, score, d in zip(texts, result.scores, dists):
            buf.write(f"{text}\t{d}\t{score}\t\t\t\n")
        return Response(
            buf.getvalue(),
            media_type="text/tab-separated-values",
            headers={"Content-Disposition": f'attachment; filename="hits-{hlid_of(hlid)}.tsv"'},
        )

    @api.get("/config", summary="Scores offered (SmallWorld)")
    def config() -> dict:
        return {"ScoreFuncs": [{"name": "ECFP4", "note": NOTE}], "note": NOTE}

    @api.get("/maps", summary="Databases (SmallWorld): an object keyed by database name")
    def maps() -> dict:
        return {
            db.name: {
                "name": db.name,
                "numEntries": db.molecules,
                "numMapped": db.molecules,
                "numUnmapped": 0,
                "numSkipped": db.store.counts["rejected"],
                "status": "Available",
            }
            for db in catalog
        }

    return api


#: /search/view's query parameters, for the OpenAPI schema (DataTables' own are accepted and
#: ignored: the rows come in rank order)
VIEW_PARAMETERS = queries.query_parameters(
    ("hlid", "integer", "the result set /search/submit returned"),
    ("start", "integer", "first row (default 0)"),
    (
        "length",
        "integer",
        "rows (default 10; over the limit: clamped, and `warning` says so); "
        "per query in the batch form",
    ),
    ("draw", "integer", "DataTables' counter, echoed"),
    ("smi", "string", "batch form, instead of hlid: a query SMILES, up to 20 times"),
    ("db", "string", "batch form: the database"),
    ("fmt", "string", "batch form: json (default) or tsv"),
)
