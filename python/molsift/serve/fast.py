"""The hot GET searches answered below the framework. A GET whose path one of the registered
patterns matches is handed to its handler with the query string read once; the handler's
response is sent straight back, skipping FastAPI's middleware stack, router and parameter
solver (about 0.3 ms of Python a request on MOSES, measured with py-spy; BENCHMARKS.md). The same
handlers sit behind FastAPI routes too, which document them in the OpenAPI schema: one code path,
two doors. Everything else (other methods, other paths) goes to the app unchanged."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from starlette.datastructures import QueryParams
from starlette.responses import Response

from .limits import ServiceError

#: handler(query parameters, scope["state"] for the access log, *path groups) -> response
Handler = Callable[..., Awaitable[Response]]


class FastRoutes:
    """The registered (path pattern, handler) pairs, filled by the routers."""

    def __init__(self) -> None:
        self.routes: list[tuple[re.Pattern, Handler]] = []

    def get(self, pattern: str, handler: Handler) -> None:
        """Answer GETs whose whole path matches `pattern` (a regex; its groups are passed to the
        handler after the parameters and the state)."""
        self.routes.append((re.compile(pattern), handler))


class FastGets:
    """ASGI middleware: the registered GETs answered here, everything else passed on. A
    ServiceError from a handler is answered as the app answers it (`{"error": message}`)."""

    def __init__(self, app, routes: FastRoutes) -> None:
        self.app = app
        self.routes = routes.routes

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "GET":
            path = scope["path"]
            for pattern, handler in self.routes:
                found = pattern.fullmatch(path)
                if found is not None:
                    params = QueryParams(scope["query_string"])
                    try:
                        response = await handler(
                            params, scope.setdefault("state", {}), *found.groups()
                        )
                    except ServiceError as e:
                        response = e.response()
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)
