"""Light searches (similarity, exact, analogs of a few edits) in worker processes whose answers
the event loop reads itself: no thread of the server takes Python's interpreter lock for them.

Why: a light search in one of the server's threads parses its query with RDKit, fingerprints it
and lists its hits holding the interpreter lock, and after the Rust search it waits to take the
lock back from the event loop, which holds it while it serves other requests: under load the
answers waited for the loop and the loop for them. A worker process (`python -m
molsift.serve.heavy --light`: the heavy workers' program, at the server's priority) does all of
that with a lock of its own; the server writes the request to its pipe and reads the answer
when the loop sees it readable (`add_reader`), in whichever event loop asks.

At most `limits.max_concurrent` workers (the gate's light slots), started on first use (a start,
about a second, is not counted in a search's time limit); a search past the time limit is
answered 504 and its worker killed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pickle
import threading

from . import heavy
from .heavy import START_S, _local, _unwrap
from .limits import Limits, ServiceError

log = logging.getLogger("molsift.serve")


class LightWorkers:
    """The light searches' worker processes of a server, reused while they live. Callers hold a
    light slot of the gate, so at most `max_concurrent` search at once."""

    def __init__(self, catalog, limits: Limits) -> None:
        self.limits = limits
        self._databases = [(db.name, db.path) for db in catalog if _local(db)]
        self._served = {name for name, _ in self._databases}
        self._generations = {db.name: heavy.generation(db.store) for db in catalog if _local(db)}
        self._idle: list[heavy._Worker] = []
        self._lock = threading.Lock()

    def serves(self, db) -> bool:
        return db.name in self._served and _local(db)

    async def _take(self) -> heavy._Worker:
        while True:
            with self._lock:
                worker = self._idle.pop() if self._idle else None
            if worker is None:
                break
            if worker.alive():
                return worker
            worker.kill()
        worker = heavy._Worker(self._databases, self.limits, light=True)
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(loop.run_in_executor(None, worker.ready), START_S)
        except (asyncio.TimeoutError, RuntimeError) as exc:
            worker.kill()
            log.error("a light search worker did not start: %s", exc)
            raise ServiceError(503, "the search worker did not start: retry") from None
        except BaseException:
            worker.kill()
            raise
        heavy.check_generations(worker, self._generations, self._served)
        return worker

    async def search(self, req):
        """The queries.Result of a checked request, searched in a worker."""
        worker = await self._take()
        try:
            async with asyncio.timeout(self.limits.timeout_s):
                reply = await worker.ask(("search", req))
        except TimeoutError:
            worker.kill()
            raise ServiceError(
                504, f"the search took longer than the time limit ({self.limits.timeout_s:g} s)"
            ) from None
        except (EOFError, OSError, pickle.UnpicklingError) as exc:
            worker.kill()
            log.error("a light search worker failed: %s", exc)
            raise ServiceError(500, "the search worker failed (logged on the server)") from None
        except BaseException:  # cancelled mid-search: its answer would be the next request's
            worker.kill()
            raise
        with self._lock:
            self._idle.append(worker)
        return _unwrap(reply)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
