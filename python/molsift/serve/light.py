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
import os
import pickle
import threading

from . import heavy
from .heavy import _LEN, START_S, _local, _unwrap, _write
from .limits import Limits, ServiceError

log = logging.getLogger("molsift.serve")


class _Worker(heavy._Worker):
    """One light worker (heavy.py's, with `--light`); requests written to its stdin, answers
    read from its stdout by the asking event loop."""

    def __init__(self, databases: list, limits: Limits) -> None:
        super().__init__(databases, limits, light=True)

    def start(self) -> _Worker:
        """Sends the stores and waits for ready (blocking: a thread's); then its answers are
        read without blocking."""
        self.ready()
        os.set_blocking(self.proc.stdout.fileno(), False)
        return self

    async def ask_in_loop(self, frame):
        """Writes `frame` and reads one answer frame in the running loop."""
        _write(self.proc.stdin, frame)  # a small request: the pipe takes it at once
        loop = asyncio.get_running_loop()
        fd = self.proc.stdout.fileno()
        done = loop.create_future()
        buf = bytearray()

        def readable() -> None:
            try:
                chunk = os.read(fd, 1 << 20)
            except BlockingIOError:
                return
            except OSError as exc:
                if not done.done():
                    done.set_exception(exc)
                return
            if not chunk:
                if not done.done():
                    done.set_exception(EOFError("the light search worker stopped"))
                return
            buf.extend(chunk)
            if len(buf) >= _LEN.size:
                (n,) = _LEN.unpack_from(buf)
                if len(buf) >= _LEN.size + n and not done.done():
                    done.set_result(pickle.loads(memoryview(buf)[_LEN.size : _LEN.size + n]))

        loop.add_reader(fd, readable)
        try:
            return await done
        finally:
            loop.remove_reader(fd)


class LightWorkers:
    """The light searches' worker processes of a server, reused while they live. Callers hold a
    light slot of the gate, so at most `max_concurrent` search at once."""

    def __init__(self, catalog, limits: Limits) -> None:
        self.limits = limits
        self._databases = [(db.name, db.path) for db in catalog if _local(db)]
        self._served = {name for name, _ in self._databases}
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def serves(self, db) -> bool:
        return db.name in self._served and _local(db)

    async def _take(self) -> _Worker:
        while True:
            with self._lock:
                worker = self._idle.pop() if self._idle else None
            if worker is None:
                break
            if worker.alive():
                return worker
            worker.kill()
        worker = _Worker(self._databases, self.limits)
        loop = asyncio.get_running_loop()
        try:
            return await asyncio.wait_for(loop.run_in_executor(None, worker.start), START_S)
        except (asyncio.TimeoutError, RuntimeError) as exc:
            worker.kill()
            log.error("a light search worker did not start: %s", exc)
            raise ServiceError(503, "the search worker did not start: retry") from None
        except BaseException:
            worker.kill()
            raise

    async def search(self, req):
        """The queries.Result of a checked request, searched in a worker."""
        worker = await self._take()
        try:
            async with asyncio.timeout(self.limits.timeout_s):
                reply = await worker.ask_in_loop(("search", req))
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
