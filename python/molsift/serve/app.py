"""The ASGI app: the routers (our API v1, Arthor's and SmallWorld's shapes), one JSON access-log
line per request (endpoint, db, type, ms, hits, status), request bodies bounded (every body,
chunked too: 413 as soon as the limit is passed, and the connection closed), a response header
that could not be sent (a line break in it) answered 500 instead of a dropped connection, `//`
in paths read as `/`, HEAD answered as GET without the body (a 405 says what is allowed, in
`Allow`), and every error answered as JSON `{"error": message}` with a 4xx status (5xx only
for busy, timed out or a fault of ours, never with a traceback). The connection limits (header
and idle timeouts) are the HTTP layer's: server.py."""

from __future__ import annotations

import contextlib
import logging
import re
import sys
import time
from pathlib import Path

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.routing import Match, Mount

from .. import __version__
from .._core import StoreError
from . import api_v1, arthor, queries, smallworld
from .catalog import Catalog
from .depict import Depicter
from .fast import FastGets, FastRoutes
from .heavy import HeavyWorkers
from .light import LightWorkers
from .limits import Activity, Gate, Limits, ServiceError

log = logging.getLogger("molsift.serve")
#: the search page: HTML, CSS and JavaScript shipped in the package
PAGE = Path(__file__).parent / "page"
#: Swagger UI 5 for /docs (FastAPI's schema is OpenAPI 3.1), vendored from npm at build time by
#: scripts/vendor_js.sh (the search page's editor too: page/vendor/jsme)
SWAGGER = PAGE / "vendor" / "swagger-ui"


def _error(status: int, message: str):
    return ServiceError(status, message).response()


def _damaged(catalog: Catalog, exc: StoreError):
    """A store that fails its checks while answering (a damaged or changed file): 500 with the
    file and the reason, each store's path written as its database name (requests never see
    paths); one line in the server's log, no traceback."""
    text = str(exc)
    for db in catalog:
        text = text.replace(db.path.rstrip("/") + "/", f"{db.name}:").replace(db.path, db.name)
    log.error("store check failed: %s", exc)
    return _error(500, f"the store cannot answer: {text} (run `molsift info` on it)")


#: where a request's value was found, as FastAPI names it first in an error's `loc`
PLACES = ("query", "body", "path", "header", "cookie")


def _invalid(err: dict) -> str:
    """One of FastAPI's validation errors in words: the field named (`query` too: the search's
    field, not the place), a missing or non-object JSON body said as such."""
    loc = list(err.get("loc", ()))
    place = loc.pop(0) if loc and loc[0] in PLACES else None
    kind, msg = err.get("type"), str(err.get("msg"))
    if place == "body" and kind == "json_invalid":
        why = (err.get("ctx") or {}).get("error")
        return f"the body is not JSON{f' ({why})' if why else ''}"
    if place == "body" and not loc and kind in ("missing", "model_attributes_type"):
        return "the body must be a JSON object of the fields (Content-Type: application/json)"
    where = ".".join(str(x) for x in loc)
    return f"{where}: {msg}" if where else msg


#: the methods a 405's `Allow` may name
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def _allowed(request: Request) -> list[str]:
    """The methods the routes of `request`'s path answer (HEAD wherever GET: HeadAsGet); the
    static files' (GET, HEAD) for a path no route matches but a mount."""
    methods = set()
    for method in METHODS:
        scope = {**request.scope, "method": method}
        for route in request.app.routes:
            if not isinstance(route, Mount) and route.matches(scope)[0] == Match.FULL:
                methods.add(method)
    if "GET" in methods or not methods:
        methods |= {"GET", "HEAD"}
    return sorted(methods)


def create_app(catalog: Catalog, limits: Limits, access_log=None):
    """The ASGI app for `catalog`; `access_log` is a text stream for the JSON lines (default
    stderr)."""
    depicter = Depicter(limits)
    workers = HeavyWorkers(catalog, limits)
    light = LightWorkers(catalog, limits)

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        yield
        depicter.close()
        workers.close()
        light.close()

    app = FastAPI(
        lifespan=lifespan,
        title="molsift",
        version=__version__,
        description="Similarity, substructure, SMARTS and exact search over molsift stores.",
        docs_url=None,  # served below from the package's own copy of Swagger UI (no CDN)
        redoc_url=None,
    )
    app.state.depicter = depicter
    activity = Activity()
    searcher = queries.Searcher(limits, Gate(limits), workers, light, activity)
    fast = FastRoutes()
    for module in (api_v1, arthor, smallworld):
        app.include_router(module.router(catalog, searcher, limits, fast))
    app.mount("/static", StaticFiles(directory=PAGE), name="static")
    if SWAGGER.is_dir():
        app.mount("/docs-static", StaticFiles(directory=SWAGGER), name="docs-static")

    @app.get("/docs", include_in_schema=False)
    def docs():
        if not (SWAGGER / "swagger-ui-bundle.js").is_file():
            return HTMLResponse(
                "<!doctype html><title>molsift API</title><p>Swagger UI is not installed with "
                "this copy of molsift (scripts/vendor_js.sh vendors it). The API's schema is at "
                '<a href="openapi.json">/openapi.json</a>; docs/serve.md describes it.</p>'
            )
        return get_swagger_ui_html(
            openapi_url="openapi.json",
            title="molsift API",
            swagger_js_url="docs-static/swagger-ui-bundle.js",
            swagger_css_url="docs-static/swagger-ui.css",
            swagger_favicon_url="docs-static/favicon-32x32.png",
        )

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(PAGE / "index.html", media_type="text/html")

    @app.exception_handler(ServiceError)
    async def service_error(_request: Request, e: ServiceError):
        return e.response()

    @app.exception_handler(RequestValidationError)
    async def bad_parameters(_request: Request, e: RequestValidationError):
        return _error(400, "; ".join(_invalid(err) for err in e.errors()) or "bad parameters")

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, e: HTTPException):
        response = _error(e.status_code, str(e.detail))
        response.headers.update(e.headers or {})
        if e.status_code == 405:  # Allow: every method of the path's routes (HEAD as GET)
            response.headers["Allow"] = ", ".join(_allowed(request))
        return response

    @app.exception_handler(StoreError)
    async def store_fault(_request: Request, e: StoreError):
        return _damaged(catalog, e)

    @app.exception_handler(Exception)
    async def fault(request: Request, _e: Exception):
        log.exception("request %s failed", request.url.path)
        return _error(500, "internal error (logged on the server)")

    # our layers wrap FastAPI from outside, so that the fast GETs skip its whole middleware
    # stack (error, telemetry and body-size layers, exception handlers, router)
    out = access_log if access_log is not None else sys.stderr
    outer = CollapseSlashes(
        AccessLog(HeadAsGet(FastGets(app, fast)), out, limits, catalog, activity)
    )
    outer.limits = limits  # for the HTTP layer (server.py)
    outer.light_workers = light  # both ended by the lifespan, or by whoever runs the app without
    outer.heavy_workers = workers
    return outer


class BodyTooLarge(HTTPException):
    """A request body over the limit, found as it is read (a chunked body has no length to check
    first): raised from `receive`, answered 413 by the app's handler of HTTPException."""


class BadHeader(Exception):
    """A response header that cannot be sent (a line break or control byte in it)."""


#: bytes a header name or value must not hold (uvicorn refuses them and drops the connection)
HEADER_NAME_BAD = re.compile(rb'[\x00-\x1f\x7f()<>@,;:\\\[\]={} \t"/?]')
HEADER_VALUE_BAD = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")


class AccessLog:
    """One JSON line per HTTP request (time, method, endpoint, status, ms, and the db, type and
    hits a search handler left in `request.state.log`); request bodies over the limit answered
    413 (before the app reads them when a length is given, as soon as the limit is passed while
    reading otherwise), and a connection whose request body was not read to its end closed after
    the answer (not read on); a fault of ours answered 500 JSON, without a traceback, and so is
    a response header that cannot be sent. Plain ASGI (no per-request task or body copy, unlike
    `@app.middleware`)."""

    def __init__(
        self, app, out, limits: Limits, catalog: Catalog, activity: Activity | None = None
    ) -> None:
        self.app = app
        self.out = out
        self.limits = limits
        self.catalog = catalog
        self.activity = activity if activity is not None else Activity()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        self.activity.begin(scope.get("client"), time.monotonic())
        try:
            await self._answer(scope, receive, send, start)
        finally:
            self.activity.end()

    async def _answer(self, scope, receive, send, start: float) -> None:
        scope.setdefault("state", {})
        status = [0]
        most = self.limits.max_body_bytes
        headers = dict(scope.get("headers") or ())
        length = headers.get(b"content-length")
        # bytes read, and whether the body has been read to its end (or there is none)
        body = [0, length in (None, b"0") and b"transfer-encoding" not in headers]

        async def receiving():
            message = await receive()
            if message["type"] == "http.request":
                body[0] += len(message.get("body", b""))
                body[1] = not message.get("more_body", False)
                if body[0] > most:
                    raise BodyTooLarge(413, f"request body over {most:,} bytes")
            return message

        async def sending(message):
            if message["type"] == "http.response.start":
                out = list(message.get("headers") or ())
                for name, value in out:
                    if HEADER_NAME_BAD.search(name) or HEADER_VALUE_BAD.search(value):
                        raise BadHeader(f"response header {name[:40]!r} cannot be sent")
                if not body[1]:  # a body left unread: answer, then close (do not read it on)
                    message = {**message, "headers": [*out, (b"connection", b"close")]}
                status[0] = message["status"]
            await send(message)

        if length is not None and (not length.isdigit() or int(length) > most):
            await _error(413, f"request body over {most:,} bytes")(scope, receiving, sending)
        else:
            try:
                await self.app(scope, receiving, sending)
            except StoreError as exc:  # a damaged store: named, not a fault of ours
                if not status[0]:
                    await _damaged(self.catalog, exc)(scope, receiving, sending)
            except Exception:  # a fault of ours: logged, answered without a traceback
                log.exception("request %s failed", scope.get("path"))
                if not status[0]:
                    await _error(500, "internal error (logged on the server)")(
                        scope, receiving, sending
                    )
        entry = {
            "time": round(time.time(), 3),
            "method": scope.get("method"),
            "endpoint": scope.get("path"),
            "status": status[0],
            "ms": round((time.perf_counter() - start) * 1e3, 3),
        }
        entry.update(scope["state"].get("log", {}))
        try:
            self.out.write(orjson.dumps(entry).decode() + "\n")
            self.out.flush()
        except (OSError, ValueError):
            pass


class HeadAsGet:
    """HEAD is answered as GET is, without the body (HTTP requires it of every GET; FastAPI's
    routes take GET only, and answered HEAD 405): the GET's status and headers, its length
    included."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "HEAD":
            await self.app(scope, receive, send)
            return

        async def head_only(message):
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, head_only)


class CollapseSlashes:
    """`//dt/data` is `/dt/data`: some clients join a base URL ending in `/` to a path starting
    with one."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "")
        if scope["type"] == "http" and "//" in path:
            scope = dict(scope)
            scope["path"] = re.sub("/{2,}", "/", path)
            scope["raw_path"] = scope["path"].encode()
        await self.app(scope, receive, send)
