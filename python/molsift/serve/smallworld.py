"""SmallWorld's API as its clients use it (../shared/data/service-clients.md): `GET
/search/submit` (a Server-Sent Events stream whose last `data:` line carries the `hlid` of the
result set), `GET /search/view` (DataTables server-side JSON), `GET /search/export` (TSV),
`GET /search/config` and `GET /search/maps`. SmallWorld ranks by graph edit distance; until
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
from fastapi.responses import JSONResponse, Response, StreamingResponse

from . import queries
from .catalog import Catalog
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
        for rank in range(start, min(len(result.positions), start + length)):
            pos = int(result.positions[rank])
            smiles, ident = base.store.smiles[pos], base.store.ids[pos]
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

    @api.get("/view", summary="A page of a result set (SmallWorld; DataTables JSON)")
    def view(hlid: str | None = None, start: int = 0, length: int = 10, draw: int = 0):
        start, length = queries.check_page(start, length, limits)
        base, query, result = lists.get(hlid)
        n = len(result.positions)
        return JSONResponse(
            {
                "draw": draw,
                "recordsTotal": n,
                "recordsFiltered": n,
                "data": rows(base, query, result, start, length),
                "note": NOTE,
            }
        )

    @api.get("/export", summary="A result set as TSV (SmallWorld)")
    def export(hlid: str | None = None) -> Response:
        base, _query, result = lists.get(hlid)
        buf = io.StringIO()
        buf.write("SMILES ID\tdist\tecfp4\tdaylight\ttopodist\tmces\n")
        for pos, score in zip(result.positions, result.scores):
            buf.write(f"{base.store.smiles[pos]} {base.store.ids[pos]}\t\t{score}\t\t\t\n")
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
