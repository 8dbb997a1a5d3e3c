"""What one request may ask and how much of the server it may hold: the `Limits` (query length,
page size, k, hits kept, body and header bytes, time limits, connections, depiction size), and
the `Gate` searches pass through. A search waits for a slot (then 503), runs in a worker
process (serve/light.py, serve/heavy.py; killed at the time limit) or, for a set searched by MPI
ranks, in a worker thread of the gate, and is answered 504 when it takes longer than the time
limit; then a thread's cancel flag is set, and a search that checks it (the substructure match,
the analog walk: `molsift.cancel`) stops there. A search that cannot stop keeps its slot until
it ends: the number of searches running never exceeds the bound. Light searches (similarity,
exact) and heavy ones (substructure, SMARTS, analogs from `heavy_dist` edits, and any search of
a query longer than `light_query_chars`, whose reading by RDKit alone may hold the interpreter
lock for a while) have separate slots, so heavy searches never make light ones wait. `Activity`
tells whether one connection alone is asking (then a small light search may run on the event
loop: queries.Searcher.inline)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..cancel import new_flag

#: search types that run in the heavy slots (analogs from `Limits.heavy_dist` edits too)
HEAVY_TYPES = frozenset({"substructure", "smarts"})


class ServiceError(Exception):
    """An answer other than 200: HTTP status and a message for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def response(self):
        """The answer: `{"error": message}` with the status."""
        from .encode import JSON

        return JSON({"error": self.message}, status_code=self.status)


def _cores() -> int:
    return max(1, os.cpu_count() or 1)


@dataclass
class Limits:
    """Bounds of the service (the CLI's options; docs/serve.md, "Limits")."""

    max_query_chars: int = 4096
    max_length: int = 10_000  # rows in one page
    max_k: int = 100_000
    max_hits: int = 1_000_000  # substructure hits kept for paging
    max_body_bytes: int = 65_536  # every request body, chunked or not
    timeout_s: float = 30.0
    max_concurrent: int = field(default_factory=_cores)  # light searches at once
    max_heavy: int = field(default_factory=lambda: max(1, _cores() // 2))  # heavy ones
    heavy_dist: int = 3  # analog searches from this many edits are heavy
    light_query_chars: int = 200  # a longer query's search is heavy, whatever its kind
    # a light search runs on the event loop, without a worker, while one connection alone is
    # asking and that store's recent light searches took under this many ms (0: never)
    inline_ms: float = 2.0
    queue_wait_s: float = 10.0
    # depiction (/api/v1/depict): drawn in worker processes of their own
    max_depict_concurrent: int = 2
    depict_timeout_s: float = 5.0
    max_depict_chars: int = 2000
    max_depict_atoms: int = 300
    depict_cache_bytes: int = 64 << 20
    # connections (the HTTP protocol layer, serve/server.py)
    read_timeout_s: float = 10.0  # a request's headers and body must arrive within this
    keep_alive_s: float = 5.0  # an idle kept-alive connection is closed after this
    max_header_bytes: int = 32_768
    max_connections: int = 1000

    def heavy(self, kind: str, dist: int | None = None, query_chars: int = 0) -> bool:
        """Whether a search of `kind` (at `dist` edits, for analogs) of a query of
        `query_chars` characters takes a heavy slot."""
        if query_chars > self.light_query_chars:  # RDKit's read of it could take long
            return True
        if kind == "analogs":
            return dist is None or dist >= self.heavy_dist
        return kind in HEAVY_TYPES


_current = threading.local()


def current_flag():
    """The cancel flag of the search running in this worker thread (None outside a gate): set
    once its answer has been given up (the time limit passed)."""
    return getattr(_current, "flag", None)


class Activity:
    """Who is asking: the requests under way and whether more than one connection sent one
    lately. A light search runs on the event loop (queries.Searcher) only while the server is
    otherwise idle: no other request under way and, for `WINDOW_S`, no request from a second
    connection or one that began while another was under way. One client asking one search
    after another gets its answers without a worker's round trip; concurrent clients keep the
    workers, whose searches overlap on the cores."""

    #: seconds after two connections' requests met during which searches stay in the workers
    WINDOW_S = 0.05

    def __init__(self) -> None:
        self.under_way = 0
        self._last = None
        self._shared_until = 0.0

    def begin(self, connection, now: float) -> None:
        """A request from `connection` (the ASGI scope's client address) begins at `now`
        (time.monotonic)."""
        if self.under_way or (self._last is not None and connection != self._last):
            self._shared_until = now + self.WINDOW_S
        self._last = connection
        self.under_way += 1

    def end(self) -> None:
        self.under_way -= 1

    def alone(self, now: float) -> bool:
        """Whether the request under way is the only one, from the one connection asking."""
        return self.under_way <= 1 and now >= self._shared_until


class _Slots:
    """`size` slots and a thread pool of as many threads, for one kind of work; `held`: the
    slots taken (counted on the event loop, which takes and frees them)."""

    def __init__(self, size: int, name: str, what: str) -> None:
        self.size = size
        self.what = what
        self.sem = asyncio.Semaphore(size)
        self.held = 0
        self.pool = ThreadPoolExecutor(size, thread_name_prefix=name)

    def free(self) -> None:
        """Gives a slot back."""
        self.held -= 1
        self.sem.release()


class Gate:
    """At most `limits.max_concurrent` light and `limits.max_heavy` heavy searches at once,
    each in a thread of its kind's own pool (as many threads as slots); created inside the
    running event loop (or before it: the semaphores bind on first use)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._light = _Slots(limits.max_concurrent, "search", "searches")
        self._heavy = _Slots(
            limits.max_heavy, "heavy-search", "heavy searches (substructure, SMARTS, analogs)"
        )

    def idle(self) -> bool:
        """Whether no light search holds a slot."""
        return self._light.held == 0

    async def _acquire(self, slots: _Slots) -> None:
        """A slot of `slots`, or ServiceError 503 when none frees within the queue wait."""
        if slots.sem.locked():
            try:
                await asyncio.wait_for(slots.sem.acquire(), self.limits.queue_wait_s)
            except asyncio.TimeoutError:
                raise ServiceError(
                    503, f"the server is busy ({slots.size} {slots.what} running): retry"
                ) from None
        else:
            await slots.sem.acquire()  # a free slot: taken at once
        slots.held += 1

    @contextlib.asynccontextmanager
    async def slot(self, heavy: bool = False):
        """A slot of its kind held for the block (503 as `run`): for a search that runs
        elsewhere (a heavy search in a worker process, serve/heavy.py, whose time limit the
        server keeps: it kills the worker then)."""
        slots = self._heavy if heavy else self._light
        await self._acquire(slots)
        try:
            yield
        finally:
            slots.free()

    async def run(self, fn, *args, heavy: bool = False):
        """`fn(*args)` in a worker thread once a slot of its kind is free; ServiceError 503 when
        none frees within the queue wait, 504 when the search outlasts the time limit (its
        cancel flag, `current_flag()` in the thread, is set then)."""
        slots = self._heavy if heavy else self._light
        await self._acquire(slots)
        flag = new_flag()

        def call():
            _current.flag = flag
            try:
                return fn(*args)
            finally:
                _current.flag = None

        task = asyncio.get_running_loop().run_in_executor(slots.pool, call)

        def done(t) -> None:
            # the slot frees when the thread is done, not when a timed-out client is answered
            slots.free()
            if not t.cancelled():
                t.exception()  # retrieved: a search stopped after its 504 is no error

        task.add_done_callback(done)
        try:
            async with asyncio.timeout(self.limits.timeout_s):
                return await asyncio.shield(task)
        except TimeoutError:
            flag.set()
            raise ServiceError(
                504, f"the search took longer than the time limit ({self.limits.timeout_s:g} s)"
            ) from None
