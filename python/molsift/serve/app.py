"""The ASGI app: the routers (our API v1, Arthor's and SmallWorld's shapes), one JSON access-log
line per request (endpoint, db, type, ms, hits, status), request bodies bounded (every body,
chunked too: 413 as soon as the limit is passed, and the connection closed), a response header
that could not be sent (a line break in it) answered 500 instead of a dropped connection, `//`
in paths read as `/`, and every error answered as JSON `{"error": message}` with a 4xx status
(5xx only for busy, timed out or a fault of ours, never with a traceback). The connection
limits (header and idle timeouts) are the HTTP layer's: server.py."""

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
        parts = []
        for err in e.errors():
            where = ".".join(str(x) for x in err.get("loc", ()) if x not in ("query", "body"))
            parts.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
        return _error(400, "; ".join(parts) or "bad parameters")

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, e: HTTPException):
        return _error(e.status_code, str(e.detail))

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
    outer = CollapseSlashes(AccessLog(FastGets(app, fast), out, limits, catalog, activity))
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
