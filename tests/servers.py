"""Live servers for tests: `molsift serve`'s app on uvicorn on a free loopback port, in a thread
of the test process, and a urllib client whose errors are answers too; `asgi_get`, one request
through an app in this process, with no server at all."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request


def free_socket() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    return s


class Live:
    """A uvicorn server of `app` on a free loopback port, in a thread."""

    def __init__(self, app):
        self.app = app
        self.sock = free_socket()
        self.port = self.sock.getsockname()[1]
        import uvicorn

        from molsift.serve.server import config

        # the HTTP layer `molsift serve` runs (serve/server.py: its connection limits too)
        cfg = config(app, log_level="error", access_log=False, lifespan="off")
        self.server = uvicorn.Server(cfg)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.thread.start()
        deadline = time.time() + 30
        while not self.server.started:
            assert time.time() < deadline, "server did not start"
            time.sleep(0.02)

    def url(self, path: str, **params) -> str:
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        return f"http://127.0.0.1:{self.port}{path}" + (f"?{query}" if query else "")

    def stop(self):
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()
        # the searches' worker processes (the lifespan that would end them is off here)
        for name in ("heavy_workers", "light_workers"):
            workers = getattr(self.app, name, None)
            if workers is not None:
                workers.close()


def fetch(url: str, data: bytes | None = None, headers: dict | None = None):
    """(status, content type, body) of a request; errors are answers too."""
    req = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.headers.get("content-type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("content-type", ""), e.read()


def asgi_get(app, path: str, **params) -> tuple[int, bytes]:
    """One GET through an ASGI app in this process (no HTTP, no port): status and body."""
    scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(),
             "query_string": urllib.parse.urlencode(params).encode(), "headers": [],
             "root_path": "", "scheme": "http", "server": ("127.0.0.1", 80),
             "client": ("127.0.0.1", 1), "http_version": "1.1"}  # fmt: skip
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], body


def without_timings(body: bytes):
    """A JSON answer without its timing fields (`ms`, `time`, at any depth): what two servers
    answering the same request must agree on."""

    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in ("ms", "time")}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    return strip(json.loads(body))
