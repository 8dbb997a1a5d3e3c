"""Arthor's API as its clients use it (../shared/data/service-clients.md): `GET /dt/data` (the
databases) and `GET /dt/{db}/search?query&type&start&length&draw&fmt=json`, several databases
as `{db1,db2}` (each searched once, however often named). Every row has five fields,
`[rank, "SMILES ID", SMILES, ID, db]`: what arthorian-quest 0.2.3 reads as
`[idx, smiles_id, empty, something, db]` and its 2025 fork as
`[rank, index, smiles, identifier, source]` (docs/serve.md says what each makes of it).
Similarity ranks every molecule (recordsTotal is the databases' size) and gives each row's
Tanimoto score in `scores` beside `data` (no client reads a score in a row); substructure and
SMARTS give all hits (`hasMore` is false: the count is known when the answer is sent). A
`length` over the server's cap is clamped, and `warning` says so. Errors keep Arthor's shape
with a `message`, and an HTTP status: 400 for a bad query or parameter, 404 for an unknown
database, 503 when busy."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request

from . import queries
from .catalog import Catalog
from .encode import JSON
from .fast import FastRoutes
from .limits import Limits, ServiceError

TYPES = {
    "similarity": "similarity",
    "substructure": "substructure",
    "smarts": "smarts",
    "sma": "smarts",
}
#: similarity ranks are computed this deep at least (then cached for the next pages)
MIN_DEPTH = 1000


def router(
    catalog: Catalog, searcher: queries.Searcher, limits: Limits, fast: FastRoutes
) -> APIRouter:
    api = APIRouter(tags=["Arthor-compatible"])

    @api.get("/dt/data", summary="Databases (Arthor)")
    def data() -> list:
        out = []
        for db in catalog:
            types = (["SIM"] if "similarity" in db.types else []) + (
                ["SUB"] if "substructure" in db.types else []
            )
            out.append(
                {"displayName": db.name, "idxTypes": types, "size": db.molecules, "name": db.name}
            )
        return out

    async def search(q, state: dict, dbs: str):
        """A search of the databases named in the path; parameters read here (one code path
        for the fast GET and the documented route)."""
        began = time.perf_counter()
        query = q.get("query")
        draw = 0
        try:
            draw = queries.number(q, "draw", int) or 0
            kind_name = q.get("type") or "Similarity"
            kind = TYPES.get(kind_name.lower())
            if kind is None:
                raise ServiceError(
                    400, f"type={kind_name!r}: use Similarity, Substructure, SMARTS or SMA"
                )
            fmt = q.get("fmt") or "json"
            if fmt.lower() != "json":
                raise ServiceError(400, f"fmt={fmt!r}: this server answers fmt=json")
            start = queries.number(q, "start", int)
            length = queries.number(q, "length", int)
            length = 10 if length is None else length
            warnings = []
            if length > limits.max_length:  # clients ask for 1000 or 10000 rows: clamped, said
                warnings.append(
                    f"length={length} is over this server's limit: "
                    f"{limits.max_length:,} rows at most"
                )
                length = limits.max_length
            start, length = queries.check_page(start, length, limits)
            # a database named twice is searched once (its hits would be counted twice)
            names = list(dict.fromkeys(n.strip() for n in dbs.strip("{}").split(",") if n.strip()))
            if not names:
                raise ServiceError(400, "no database named in the path")
            found = [catalog.require(name) for name in names]
            state["log"] = log = {"db": ",".join(names), "type": kind}
            depth = max(MIN_DEPTH, 1 << (start + length - 1).bit_length())
            results = []
            for db in found:
                k = min(depth, limits.max_k) if kind == "similarity" else None
                req = queries.check(db, kind, query, None, k, limits)
                result = await searcher.answer(db, req, (start, start + length))
                results.append((db, result))
        except ServiceError as e:
            return JSON(
                {
                    "draw": draw,
                    "query": query,
                    "data": [],
                    "recordsTotal": 0,
                    "recordsFiltered": 0,
                    "hasMore": False,
                    "message": e.message,
                    "error": e.message,
                },
                status_code=e.status,
            )
        merged = _merge(results, kind)
        total = sum(db.molecules for db, _ in results) if kind == "similarity" else len(merged)
        rows, scores = [], []
        page = _texts(merged[start : start + length], results)
        for rank, (db, score, smiles, ident) in enumerate(page):
            rows.append([start + rank + 1, f"{smiles} {ident}", smiles, ident, db.name])
            scores.append(score)
        log["hits"] = len(merged)
        body = {
            "draw": draw,
            "query": query,
            "data": rows,
            "recordsTotal": total,
            "recordsFiltered": total,
            "hasMore": False,
            "time": round(time.perf_counter() - began, 6),
        }
        if kind == "similarity":
            body["scores"] = scores
        if any(r.truncated for _, r in results):
            warnings.append(f"only the first {limits.max_hits:,} hits of a database are kept")
        if warnings:
            body["warning"] = "; ".join(warnings)
        return JSON(body)

    fast.get("/dt/([^/]+)/search", search)

    @api.get(
        "/dt/{dbs}/search", summary="Search (Arthor)", openapi_extra={"parameters": PARAMETERS}
    )
    async def search_get(request: Request, dbs: str):
        return await search(request.query_params, request.scope.setdefault("state", {}), dbs)

    return api


#: the search's query parameters, for the OpenAPI schema
PARAMETERS = queries.query_parameters(
    ("query", "string", "SMILES (SMARTS for type=SMARTS or SMA)"),
    ("type", "string", "Similarity (default), Substructure, SMARTS or SMA"),
    ("start", "integer", "first row (default 0)"),
    ("length", "integer", "rows (default 10; over the limit: clamped, and `warning` says so)"),
    ("draw", "integer", "DataTables' counter, echoed"),
    ("fmt", "string", "json (the only one)"),
)


def _texts(hits: list, results: list) -> list:
    """(db, score, SMILES, ID) of each hit: each database's page of texts read in one call per
    column, or taken from its result's texts (read by its search's worker)."""
    by_db: dict = {}
    for db, pos, _score in hits:
        by_db.setdefault(id(db), (db, []))[1].append(pos)
    result_of = {id(db): result for db, result in results}
    texts = {}
    for db, positions in by_db.values():
        texts[id(db)] = zip(*queries.texts(db, positions, result_of[id(db)]))
    return [(db, score, *next(texts[id(db)])) for db, _pos, score in hits]


def _merge(results, kind: str) -> list:
    """(db, position, score) of every database's hits: by score then database order for
    similarity, database after database otherwise."""
    out = []
    for order, (db, r) in enumerate(results):
        for i, pos in enumerate(r.positions):
            out.append((order, db, int(pos), r.scores[i] if r.scores is not None else None))
    if kind == "similarity":
        out.sort(key=lambda x: (-x[3], x[0], x[2]))
    return [(db, pos, score) for _, db, pos, score in out]
