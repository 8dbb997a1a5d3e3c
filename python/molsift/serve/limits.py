"""What one request may ask (query length, page size, k, hits kept) and how many heavy searches
run at once: a search waits for a slot (then 503), runs in a worker thread, and is answered
with 504 when it takes longer than the time limit (the thread finishes its work and frees its
slot then: the number of searches running never exceeds the bound)."""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field


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


@dataclass
class Limits:
    """Bounds of the service (the CLI's options)."""

    max_query_chars: int = 4096
    max_length: int = 10_000  # rows in one page
    max_k: int = 100_000
    max_hits: int = 1_000_000  # substructure hits kept for paging
    max_body_bytes: int = 65_536
    timeout_s: float = 30.0
    max_concurrent: int = field(default_factory=lambda: max(1, os.cpu_count() or 1))
    queue_wait_s: float = 10.0


class Gate:
    """At most `limits.max_concurrent` searches at once, each in a thread of the gate's own pool
    (as many threads as slots); created inside the running event loop."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._slots = asyncio.Semaphore(limits.max_concurrent)
        self._pool = ThreadPoolExecutor(limits.max_concurrent, thread_name_prefix="search")

    async def run(self, fn, *args):
        """`fn(*args)` in a worker thread once a slot is free; ServiceError 503 when none frees
        within the queue wait, 504 when the search outlasts the time limit."""
        if self._slots.locked():
            try:
                await asyncio.wait_for(self._slots.acquire(), self.limits.queue_wait_s)
            except asyncio.TimeoutError:
                raise ServiceError(
                    503,
                    f"the server is busy ({self.limits.max_concurrent} searches running): retry",
                ) from None
        else:
            await self._slots.acquire()  # a free slot: taken at once
        task = asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)
        # the slot frees when the thread is done, not when a timed-out client is answered
        task.add_done_callback(lambda _t: self._slots.release())
        try:
            async with asyncio.timeout(self.limits.timeout_s):
                return await asyncio.shield(task)
        except TimeoutError:
            raise ServiceError(
                504, f"the search took longer than the time limit ({self.limits.timeout_s:g} s)"
            ) from None
