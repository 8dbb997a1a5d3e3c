"""The HTTP layer `molsift serve` runs on: uvicorn with httptools, and connections bounded where
the app cannot see them. A request's head and body must arrive within `read_timeout_s` of its
first byte (of the connection's opening, for a new one), else the answer is 408 and the
connection is closed: an idle socket, or a client sending its headers a byte at a time
(slowloris), holds a connection that long at most. A kept-alive connection is closed after
`keep_alive_s` idle; a head over `max_header_bytes` is answered 431, a connection beyond
`max_connections` 503, each as JSON `{"error": message}` and closed. A connection the server
closes is closed lingering: its answer is followed by a FIN, and what the client still sends is
read and dropped, up to LINGER_S seconds and LINGER_BYTES bytes, so that a client still sending
a body (one over the limit, answered 413) reads the answer instead of a reset. `config(app)` is
the uvicorn configuration the CLI and the tests' live servers use."""

from __future__ import annotations

import asyncio

import orjson
import uvicorn
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from .limits import Limits

#: seconds, and bytes, a closed connection is read (and dropped) on after the server's FIN
LINGER_S = 2.0
LINGER_BYTES = 1 << 20


class _Lingering:
    """The transport as uvicorn sees it, but `close()` half-closes (the answer, then a FIN)
    and reads on, dropping what comes, until the client closes, LINGER_S pass or LINGER_BYTES
    come (`dropped`)."""

    def __init__(self, transport, loop) -> None:
        self._transport = transport
        self._loop = loop
        self._closing = False
        self._timer: asyncio.TimerHandle | None = None
        self._dropped = 0

    def __getattr__(self, name: str):
        return getattr(self._transport, name)

    def is_closing(self) -> bool:
        return self._closing or self._transport.is_closing()

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        transport = self._transport
        if transport.is_closing():  # closed by the client or the loop already
            return
        try:
            if transport.can_write_eof():
                transport.write_eof()
                transport.resume_reading()
                self._timer = self._loop.call_later(LINGER_S, transport.close)
                return
        except (OSError, RuntimeError):
            pass
        transport.close()

    def dropped(self, n: int) -> None:
        """Counts `n` bytes read and dropped while lingering; closes past LINGER_BYTES."""
        self._dropped += n
        if self._dropped > LINGER_BYTES:
            self._transport.close()

    def closed(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class BoundedHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol with the read deadline, head size and connection count of
    `limits` (a subclass per server sets it: `protocol_for`)."""

    limits: Limits = Limits()

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(_Lingering(transport, self.loop))
        self._deadline: asyncio.TimerHandle | None = None
        self._head = 0  # bytes received while a request's head is incomplete
        self._in_head = True  # waiting for a request's head, or reading it
        self._heads = 0  # request heads completed on this connection
        if len(self.connections) > self.limits.max_connections:
            self._refuse(503, f"the server has {self.limits.max_connections:,} connections: retry")
            return
        self._arm()

    def _arm(self) -> None:
        if self._deadline is None:
            self._deadline = self.loop.call_later(self.limits.read_timeout_s, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self.cycle is None or self.cycle.response_complete:  # no answer under way
            what = "headers" if self._in_head else "body"
            self._refuse(
                408, f"the request's {what} did not arrive within {self.limits.read_timeout_s:g} s"
            )
        else:
            self.transport.close()

    def _refuse(self, status: int, message: str) -> None:
        """Answers `status` with `{"error": message}` and closes the connection."""
        body = orjson.dumps({"error": message})
        head = (
            STATUS_LINE[status]
            + b"content-type: application/json\r\n"
            + b"content-length: %d\r\n" % len(body)
            + b"connection: close\r\n\r\n"
        )
        self._disarm()
        if not self.transport.is_closing():
            self.transport.write(head + body)
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():  # lingering after the answer: dropped
            self.transport.dropped(len(data))
            return
        if self._in_head:
            self._arm()  # the first bytes of the next request on a kept-alive connection
        heads = self._heads
        super().data_received(data)
        # counted while no head completes (bytes of a chunk that ended one are its body's)
        if self._in_head and heads == self._heads and not self.transport.is_closing():
            self._head += len(data)
            if self._head > self.limits.max_header_bytes:
                self._refuse(431, f"request headers over {self.limits.max_header_bytes:,} bytes")

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._heads += 1
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        self._in_head = True
        self._head = 0
        super().on_message_complete()

    def connection_lost(self, exc) -> None:
        self._disarm()
        super().connection_lost(exc)
        self.transport.closed()


def protocol_for(limits: Limits) -> type[BoundedHttpTools]:
    """The protocol class of a server with `limits`."""
    return type("BoundedHttpTools", (BoundedHttpTools,), {"limits": limits})


def config(app, **kw) -> uvicorn.Config:
    """uvicorn's configuration for `app` (from `create_app`, whose limits it reads), with the
    bounded protocol and the keep-alive timeout; `kw` (host, port, log_level, ...) passed on."""
    limits = getattr(app, "limits", None) or Limits()
    return uvicorn.Config(
        app, http=protocol_for(limits), timeout_keep_alive=limits.keep_alive_s, **kw
    )
