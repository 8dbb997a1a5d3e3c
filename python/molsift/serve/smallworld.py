"""SmallWorld's API as its clients use it (../shared/data/service-clients.md): `GET
/search/submit` (a Server-Sent Events stream whose last `data:` line carries the `hlid` of the
result set), `GET /search/view` (DataTables server-side JSON; or the batch form
`?smi=S1&smi=S2...&db=DB&fmt=json|tsv`, search and view in one request), `GET /search/export`
(TSV), `GET /search/config` and `GET /search/maps`. SmallWorld ranks by graph edit distance; until
molsift's analog search lands, the answer is the molecules ranked by ECFP4-like Tanimoto
similarity (the store's Morgan radius-2 fingerprint), and every answer says so (`note`):
`ecfp4` holds that score, the graph-distance columns (`dist`, `topodist`, `mces`, ...) are
null, never invented. A bad database is HTTP 400 (as SmallWorld), an unknown `hlid` 404."""

from __future__ import annotations

import io
import itertools
import json
import threading
import time
from collections import OrderedDict

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from . import queries
from .catalog import Catalog
from .encode import JSON
from .fast import FastRoutes
from .limits import Limits, ServiceError

NOTE = (
    "ranked by Tanimoto similarity of Morgan radius-2 fingerprints (ECFP4-like); graph "
    "edit distances are not computed by this server yet"
)
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


class HitLists:
    """Result sets by `hlid` (integers, as clients parse them), the most recent KEEP kept."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._lists: OrderedDict[int, tuple] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, db, query: str, result) -> int:
        with self._lock:
            hlid = next(self._ids)
            self._lists[hlid] = (db, query, result)
            while len(self._lists) > KEEP:
                self._lists.popitem(last=False)
            return hlid

    def get(self, hlid: str | None):
        try:
            key = int(hlid or "")
        except ValueError:
            raise ServiceError(
                400, f"hlid={hlid!r}: give the number /search/submit returned"
            ) from None
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
        db = catalog.get(name or "")
        if db is None:
            raise ServiceError(
                400, f"db={name!r}: no such database; this server has {', '.join(catalog.names())}"
            )
        return db

    @api.get("/submit", summary="Search (SmallWorld; Server-Sent Events)")
    async def submit(request: Request, smi: str | None = None, db: str | None = None):
        began = time.perf_counter()
        base = database(db)
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

    def rows(base, query, result, start: int, length: int) -> list:
        out = []
        positions = [int(p) for p in result.positions[start : start + length]]
        texts = zip(base.store.smiles.take(positions), base.store.ids.take(positions))
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
        start, length = queries.check_page(start or 0, 10 if length is None else length, limits)
        smiles = q.getlist("smi")
        if smiles:
            return await batch(request.scope.setdefault("state", {}), q, smiles, length)
        draw = queries.number(q, "draw", int) or 0
        base, query, result = lists.get(q.get("hlid"))
        n = len(result.positions)
        return JSON(
            {
                "draw": draw,
                "recordsTotal": n,
                "recordsFiltered": n,
                "data": rows(base, query, result, start, length),
                "note": NOTE,
            }
        )

    async def batch(state: dict, q, smiles: list, length: int):
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
            req = queries.check(base, "similarity", smi, None, length or 1, limits)
            found.append((req.query, await searcher.answer(base, req)))
        log["hits"] = sum(min(length, len(r.positions)) for _, r in found)
        if fmt == "tsv":
            buf = io.StringIO()
            buf.write("SMILES ID\tdist\tecfp4\tdaylight\ttopodist\tmces\tquery\n")
            for query, result in found:
                texts = queries.smiles_ids(base, result.positions[:length])
                for text, score in zip(texts, result.scores[:length]):
                    buf.write(f"{text}\t\t{score}\t\t\t\t{query}\n")
            return Response(buf.getvalue(), media_type="text/tab-separated-values")
        data = []
        for query, result in found:
            data.extend(rows(base, query, result, 0, length))
        return JSON(
            {"recordsTotal": len(data), "recordsFiltered": len(data), "data": data, "note": NOTE}
        )

    @api.get("/export", summary="A result set as TSV (SmallWorld)")
    def export(hlid: str | None = None) -> Response:
        base, _query, result = lists.get(hlid)
        buf = io.StringIO()
        buf.write("SMILES ID\tdist\tecfp4\tdaylight\ttopodist\tmces\n")
        for text, score in zip(queries.smiles_ids(base, result.positions), result.scores):
            buf.write(f"{text}\t\t{score}\t\t\t\n")
        return Response(
            buf.getvalue(),
            media_type="text/tab-separated-values",
            headers={"Content-Disposition": f'attachment; filename="hits-{hlid}.tsv"'},
        )

    @api.get("/config", summary="Scores offered (SmallWorld)")
    def config() -> dict:
        return {"ScoreFuncs": [{"name": "ECFP4", "note": NOTE}], "note": NOTE}

    @api.get("/maps", summary="Databases (SmallWorld)")
    def maps() -> list:
        return [
            {
                "name": db.name,
                "numEntries": db.molecules,
                "numMapped": db.molecules,
                "numUnmapped": 0,
                "numSkipped": db.store.counts["rejected"],
                "status": "Available",
            }
            for db in catalog
        ]

    return api


#: /search/view's query parameters, for the OpenAPI schema (DataTables' own are accepted and
#: ignored: the rows come in rank order)
VIEW_PARAMETERS = queries.query_parameters(
    ("hlid", "integer", "the result set /search/submit returned"),
    ("start", "integer", "first row (default 0)"),
    ("length", "integer", "rows (default 10); per query in the batch form"),
    ("draw", "integer", "DataTables' counter, echoed"),
    ("smi", "string", "batch form, instead of hlid: a query SMILES, up to 20 times"),
    ("db", "string", "batch form: the database"),
    ("fmt", "string", "batch form: json (default) or tsv"),
)
