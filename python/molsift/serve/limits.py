"""What one request may ask (query length, page size, k, hits kept) and how many heavy searches
run at once: a search waits for a slot (then 503), runs in a worker thread, and is answered
with 504 when it takes longer than the time limit (the thread finishes its work and frees its
slot then: the number of searches running never exceeds the bound)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field


class ServiceError(Exception):
    """An answer other than 200: HTTP status and a message for the client."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


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
    """At most `limits.max_concurrent` searches at once; created inside the running event loop."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._slots = asyncio.Semaphore(limits.max_concurrent)

    async def run(self, fn, *args):
        """`fn(*args)` in a worker thread once a slot is free; ServiceError 503 when none frees
        within the queue wait, 504 when the search outlasts the time limit."""
        try:
            await asyncio.wait_for(self._slots.acquire(), self.limits.queue_wait_s)
        except asyncio.TimeoutError:
            raise ServiceError(
                503, f"the server is busy ({self.limits.max_concurrent} searches running): retry"
            ) from None
        task = asyncio.ensure_future(asyncio.to_thread(fn, *args))
        task.add_done_callback(lambda _t: self._slots.release())
        try:
            return await asyncio.wait_for(asyncio.shield(task), self.limits.timeout_s)
        except asyncio.TimeoutError:
            raise ServiceError(
                504, f"the search took longer than the time limit ({self.limits.timeout_s:g} s)"
            ) from None
