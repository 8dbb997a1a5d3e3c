"""Our own API, version 1 (documented by the app's OpenAPI schema at /docs and docs/serve.md):

* `GET /api/v1/databases`: the served databases, their sizes and the search types each answers,
  and `max_length`, the most rows a page may ask for;
* `GET|POST /api/v1/search`: `db`, `query`, `type` (similarity, substructure, smarts, exact,
  analogs), `threshold` and `k` (similarity), `dist`, `k` and the per-kind limits `tdn` ...
  `lup` (analogs, as `store.analogs` takes them: dist 2 and no limits by default), `start`,
  `length`, `fmt` (json, tsv, csv, ndjson). Every format answers the same page of hits (rank,
  position, id, SMILES, score; analogs add distance, the edits by kind and mut): JSON with the
  total and the search time, tsv/csv as downloads, ndjson one JSON object per line;
* `GET /api/v1/depict?smiles=...`: an SVG drawn by RDKit, with `highlight=QUERY` (and
  `smarts=true`) the query's matches highlighted (depict.py: cached, bounded in size, time and
  drawings at once)."""

from __future__ import annotations

import csv
import io

import orjson
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel

from ..analogs.skeleton import KINDS
from . import queries
from .catalog import Catalog
from .encode import JSON
from .fast import FastRoutes
from .limits import Limits, ServiceError

FORMATS = ("json", "tsv", "csv", "ndjson")


class SearchBody(BaseModel):
    """The POST form of a search (the same fields as the GET parameters)."""

    db: str | None = None
    query: str | None = None
    type: str | None = None
    threshold: float | None = None
    k: int | None = None
    start: int | None = None
    length: int | None = None
    fmt: str | None = None
    dist: int | None = None
    tdn: int | None = None
    tup: int | None = None
    rdn: int | None = None
    rup: int | None = None
    ldn: int | None = None
    lup: int | None = None


def router(
    catalog: Catalog, searcher: queries.Searcher, limits: Limits, fast: FastRoutes
) -> APIRouter:
    api = APIRouter(prefix="/api/v1")

    def database(name: str | None):
        if not name:
            if len(catalog) == 1:
                return next(iter(catalog))
            raise ServiceError(400, f"db is missing: one of {', '.join(catalog.names())}")
        return catalog.require(name)

    @api.get("/databases", summary="The served databases")
    def databases() -> dict:
        return {
            "databases": [{**db.describe(), "types": queries.types(db)} for db in catalog],
            # the most rows a page may ask for (--max-length): the search page's download
            "max_length": limits.max_length,
        }

    async def run(state: dict, p: SearchBody):
        db = database(p.db)
        caps = {kind: getattr(p, kind) for kind in KINDS if getattr(p, kind) is not None}
        req = queries.check(db, p.type, p.query, p.threshold, p.k, limits, p.dist, caps)
        fmt = (p.fmt or "json").lower()
        if fmt not in FORMATS:
            raise ServiceError(400, f"fmt={p.fmt!r}: use one of {', '.join(FORMATS)}")
        start, length = queries.check_page(p.start, p.length, limits)
        state["log"] = log = {"db": db.name, "type": req.type}
        result = await searcher.answer(db, req, (start, start + length))
        log["hits"] = len(result.positions)
        rows = queries.page(db, result, start, length)
        if fmt == "ndjson":
            lines = b"".join(orjson.dumps(row) + b"\n" for row in rows)
            return Response(lines, media_type="application/x-ndjson")
        if fmt in ("tsv", "csv"):
            return _table(rows, fmt, result)
        body = {
            "db": db.name,
            "query": req.query,
            "type": req.type,
            "threshold": req.threshold,
            "k": req.k,
            "total": len(result.positions),
            "truncated": result.truncated,
            "start": start,
            "length": len(rows),
            "ms": round(result.ms, 3),
            "hits": rows,
        }
        if req.type == "analogs":
            body.update(dist=req.dist, limits=dict(req.caps), partial=result.partial)
        return JSON(body)

    async def search_params(q, state: dict):
        """The GET form: parameters read here (FastAPI's dependency solver took 0.28 ms a
        request in a profile of the server); documented for OpenAPI by PARAMETERS."""
        number = queries.number
        body = SearchBody.model_construct(
            db=q.get("db"),
            query=q.get("query"),
            type=q.get("type"),
            threshold=number(q, "threshold", float),
            k=number(q, "k", int),
            start=number(q, "start", int),
            length=number(q, "length", int),
            fmt=q.get("fmt"),
        )
        body.dist, caps = queries.analog_limits(q, None)
        for kind, n in caps.items():
            setattr(body, kind, n)
        return await run(state, body)

    fast.get("/api/v1/search", search_params)

    @api.get("/search", summary="Search a database", openapi_extra={"parameters": PARAMETERS})
    async def search_get(request: Request):
        return await search_params(request.query_params, request.scope.setdefault("state", {}))

    @api.post("/search", summary="Search a database (JSON body)")
    async def search_post(request: Request, body: SearchBody):
        return await run(request.scope.setdefault("state", {}), body)

    @api.get("/depict", summary="An SVG of a SMILES")
    async def depict_get(
        request: Request,
        smiles: str,
        width: int = 250,
        height: int = 200,
        highlight: str | None = Query(
            None,
            description="a substructure query (SMILES, else SMARTS) whose matches are "
            "drawn highlighted, read as type=substructure reads it",
        ),
        smarts: bool = Query(False, description="read highlight as SMARTS (type=smarts)"),
    ) -> Response:
        return Response(
            await request.app.state.depicter.svg(smiles, width, height, highlight, smarts),
            media_type="image/svg+xml",
            headers={"Cache-Control": "public, max-age=86400"},
        )

    return api


#: the GET search's query parameters, for the OpenAPI schema
PARAMETERS = queries.query_parameters(
    ("db", "string", "database name (GET /api/v1/databases); optional with one database"),
    ("query", "string", "SMILES (SMARTS for type=smarts)"),
    ("type", "string", "similarity (default), substructure, smarts, exact or analogs"),
    ("threshold", "number", "similarity: least Tanimoto score, 0 to 1 (0.7 without k)"),
    ("k", "integer", "similarity: the k best; analogs: the k best (the walk stops there)"),
    ("dist", "integer", "analogs: the most edits between skeletons, 0 to 8 (default 2)"),
    *(
        (kind, "integer", f"analogs: the most {kind} edits, 0 to 254 (default: no limit)")
        for kind in KINDS
    ),
    ("start", "integer", "first row of the page (default 0)"),
    ("length", "integer", "rows in the page (default 100)"),
    ("fmt", "string", "json (default), tsv, csv or ndjson (one JSON object a line): the page"),
)


def _table(rows: list[dict], fmt: str, result: queries.Result) -> Response:
    cols = ["rank", "position", "id", "smiles"] + (["score"] if result.scores is not None else [])
    cols += list(result.columns or ())
    buf = io.StringIO()
    w = csv.writer(buf, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow([r[c] for c in cols])
    media = "text/tab-separated-values" if fmt == "tsv" else "text/csv"
    return Response(
        buf.getvalue(),
        media_type=media,
        headers={"Content-Disposition": f'attachment; filename="hits.{fmt}"'},
    )
