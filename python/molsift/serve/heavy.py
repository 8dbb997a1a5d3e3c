"""Heavy searches (substructure, SMARTS, analog walks of `heavy_dist` edits and more) in worker
processes of their own (`python -m molsift.serve.heavy`), at most `max_heavy` of them, each
searching one request at a time.

Why processes: a heavy search's Python and RDKit parts (the query's parse and analysis, the
candidates' bookkeeping, the walk's ranking) hold the interpreter lock, and the light searches
(similarity, exact) that arrive meanwhile waited for it: their p99 was several times their median
beside a stream of substructure searches (benches/serve.py, the mix). In a process of its own a
heavy search holds no lock the light ones need; the workers run at a lower CPU priority (nice
+`HEAVY_NICE`), so that on a machine whose cores are all busy the light searches run first and
the heavy ones take the time left; and a search past the time limit is ended by killing its
worker (504), with a fresh worker started at once for the next heavy search. A worker's start
(RDKit, the stores opened and warmed: about a second) is not counted in a search's time limit.
The light searches' workers (serve/light.py) run this same program with `--light`: not niced.

Stores searched by MPI ranks (`mpirun -n R molsift serve SET`) keep the server's own threads:
their searches are collectives of the ranks (sets/mpi.py).

Protocol, on the worker's stdin and a copy of its stdout (its fd 1 itself goes to stderr, so that
nothing a library prints reaches the frames): frames of an 8-byte little-endian length, then a
pickle (the server's own children: trusted). First to the worker: (databases [(name, path)],
Limits); it answers ("ready", {name: generation}) (the stores it opened: `generation`; a worker
that opened another generation than the server's is not used, `Stale`). Then per request:
("search", (queries.Request, (start, stop))), answered ("result", queries.Result) with the texts
of hits `start .. stop` read (`Result.texts`); or ("levels", (db, query, dist, caps, k)),
answered ("level", Analogs) for each distance walked, then ("end",). Any request may be answered
("error", status, message) (a ServiceError), ("store", message) (a store that failed its checks)
or ("failed", text)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
from collections.abc import Callable

from .limits import Limits, ServiceError

log = logging.getLogger("molsift.serve")
#: the workers' niceness over the server's (lower CPU priority than the light searches)
HEAVY_NICE = 10
#: seconds a new worker may take to import RDKit and open the stores (not in a time limit)
START_S = 120.0
_LEN = struct.Struct("<Q")


def _write(out, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_LEN.pack(len(data)) + data)
    out.flush()


def _read(inp):
    """The next frame, or None when the stream has ended."""
    head = inp.read(_LEN.size)
    if len(head) < _LEN.size:
        return None
    (n,) = _LEN.unpack(head)
    return pickle.loads(inp.read(n))


# -- the worker process ---------------------------------------------------------------------


def _answer(catalog, limits: Limits, kind: str, args, out) -> None:
    """Runs one request in this worker; its answer frames written to `out`. The time limit is
    the server's: it kills this process then (no cancel flag here, whose stop would race the
    kill and answer the search's end as a failure rather than a 504)."""
    from .._core import StoreError
    from . import queries

    try:
        if kind == "search":
            req, span = args
            db = catalog.require(req.db)
            _write(out, ("result", queries.compute(db, req, limits).read_texts(db, span)))
        else:
            name, query, dist, caps, k = args
            db = catalog.require(name)
            for level in queries.analog_levels(db, query, dist, caps, limits, k):
                _write(out, ("level", level))
            _write(out, ("end",))
    except ServiceError as e:
        _write(out, ("error", e.status, e.message))
    except StoreError as e:
        _write(out, ("store", str(e)))
    except Exception as e:  # an answer, never a dead worker
        _write(out, ("failed", f"{type(e).__name__}: {e}"))


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server ends it (stdin closed, or killed)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what a library prints goes to stderr, never into the frames
    if "--light" not in sys.argv[1:]:  # serve/light.py's workers keep the server's priority
        with contextlib.suppress(OSError):
            os.nice(HEAVY_NICE)
    inp = sys.stdin.buffer
    first = _read(inp)
    if first is None:
        return 0
    databases, limits = first
    from .catalog import Catalog

    catalog = Catalog()
    for name, path in databases:
        catalog.add(name, path)  # opened and warmed as the server's own
    _write(out, ("ready", {db.name: generation(db.store) for db in catalog}))
    while (frame := _read(inp)) is not None:
        _answer(catalog, limits, frame[0], frame[1], out)
    return 0


# -- the server's side ----------------------------------------------------------------------


class Stale(Exception):
    """A worker opened another generation of a store than the server's (the store was replaced
    on disk since the server opened it): the search runs in the server instead, which answers
    from the generation it opened (a worker's positions with the server's rows would mix two)."""


def generation(store) -> list:
    """What tells one generation of a store (or of a set's shards) from another: the manifests'
    checksums."""
    shards = getattr(store, "shards", None)
    return [s.manifest.get("checksum") for s in (shards if shards else [store])]


def check_generations(worker: _Worker, expected: dict, served: set) -> None:
    """Raises Stale (after killing `worker` and taking the stores it differs on out of `served`)
    when `worker` opened a store of another generation than `expected` (name: generation)."""
    differ = {n for n, g in expected.items() if worker.generations.get(n) != g}
    if differ:
        worker.kill()
        served.difference_update(differ)
        log.warning(
            "store(s) %s replaced on disk since the server opened them: searched in the server "
            "from now on (restart it to serve the new files)",
            ", ".join(sorted(differ)),
        )
        raise Stale(", ".join(sorted(differ)))


class _Worker:
    """One worker process. Its start is read in a thread (blocking); then a request is written
    to its stdin and its answer read by the asking event loop when the pipe is readable
    (`add_reader`, any loop: the server's, or a test's one-request loops), with no thread of
    the server in between to take the interpreter lock; a killed worker ends the read."""

    def __init__(self, databases: list, limits: Limits, light: bool = False) -> None:
        from ..allocator import preload_env

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "molsift.serve.heavy", *(["--light"] if light else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True,
            env=preload_env(),  # RDKit's parse on the faster allocator, as ingest's (allocator.py)
        )  # fmt: skip
        self._first = (databases, limits)

    def ready(self) -> _Worker:
        """Sends the stores and waits for the worker's ready (blocking; a thread's)."""
        try:
            _write(self.proc.stdin, self._first)
            answer = _read(self.proc.stdout)
        except OSError as exc:
            answer = exc
        if not (isinstance(answer, tuple) and len(answer) == 2 and answer[0] == "ready"):
            self.kill()
            raise RuntimeError(f"it answered {answer!r}")
        self.generations = answer[1]
        os.set_blocking(self.proc.stdout.fileno(), False)  # read by the loop from now on
        return self

    async def ask(self, frame, each: Callable | None = None):
        """Sends a request and reads its answer in the running loop; `each(level)` for every
        level frame before it."""
        _write(self.proc.stdin, frame)  # a small request: the pipe takes it at once
        loop = asyncio.get_running_loop()
        fd = self.proc.stdout.fileno()
        done = loop.create_future()
        buf = bytearray()

        def finish(result=None, error=None) -> None:
            if not done.done():
                done.set_exception(error) if error is not None else done.set_result(result)

        def readable() -> None:
            try:
                chunk = os.read(fd, 1 << 20)
            except BlockingIOError:
                return
            except OSError as exc:
                return finish(error=exc)
            if not chunk:
                return finish(error=EOFError("the search worker stopped"))
            buf.extend(chunk)
            while len(buf) >= _LEN.size and not done.done():
                (n,) = _LEN.unpack_from(buf)
                if len(buf) < _LEN.size + n:
                    return
                try:
                    reply = pickle.loads(memoryview(buf)[_LEN.size : _LEN.size + n])
                except Exception as exc:  # a frame that cannot be read: the worker is lost
                    return finish(error=pickle.UnpicklingError(str(exc)))
                del buf[: _LEN.size + n]
                if reply[0] == "level" and each is not None:
                    each(reply[1])
                else:
                    finish(reply)

        loop.add_reader(fd, readable)
        try:
            return await done
        finally:
            loop.remove_reader(fd)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(1.0)  # reaped (a killed process ends at once)
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                pipe.close()


class SearchWorkers:
    """The worker processes of one kind of search of a server: started on first use, reused
    while they live. Callers hold a slot of the gate of that kind (limits.Gate.slot), so at most
    `slots` search at once. HeavyWorkers (which also walks `levels`) and light.LightWorkers
    differ in the attributes below."""

    #: workers started with `--light`: at the server's own priority, as many as the light slots
    light = False
    #: what the answers and the log call such a worker
    what = "heavy search"
    #: a spare started at once when a worker is killed (timed out, cancelled or broken)
    spares = True

    def __init__(self, catalog, limits: Limits) -> None:
        self.limits = limits
        self.slots = limits.max_concurrent if self.light else limits.max_heavy
        self._databases = [(db.name, db.path) for db in catalog if _local(db)]
        self._served = {name for name, _ in self._databases}
        self._generations = {db.name: generation(db.store) for db in catalog if _local(db)}
        self._idle: list[_Worker] = []
        self._spares: list[concurrent.futures.Future] = []
        self._lock = threading.Lock()  # the lists, from the event loop and close()
        # workers are started here (their ready read blocking), spares included
        self._pool = concurrent.futures.ThreadPoolExecutor(
            2 * self.slots, thread_name_prefix="search-start"
        )

    def serves(self, db) -> bool:
        """Whether `db`'s searches run here (a store this process searches itself, of the
        generation the server opened)."""
        return db.name in self._served and _local(db)

    def _start(self) -> concurrent.futures.Future:
        worker = _Worker(self._databases, self.limits, light=self.light)
        return self._pool.submit(worker.ready)

    async def _take(self) -> _Worker:
        while True:
            with self._lock:
                worker = self._idle.pop() if self._idle else None
                spare = self._spares.pop() if worker is None and self._spares else None
            if worker is not None:
                if worker.alive():
                    return worker
                worker.kill()
                continue
            started = spare or self._start()
            try:
                worker = await asyncio.wait_for(asyncio.wrap_future(started), START_S)
            except asyncio.TimeoutError:
                started.add_done_callback(_kill_when_started)
                log.error("a %s worker did not start within %g s", self.what, START_S)
                raise ServiceError(503, f"the {self.what} worker did not start: retry") from None
            except RuntimeError as exc:
                if spare is not None:  # a spare that failed: start one now
                    continue
                log.error("a %s worker did not start: %s", self.what, exc)
                raise ServiceError(503, f"the {self.what} worker did not start: retry") from None
            except BaseException:  # the request was cancelled: no worker left behind
                started.add_done_callback(_kill_when_started)
                raise
            check_generations(worker, self._generations, self._served)
            return worker

    def _lose(self, worker: _Worker) -> None:
        """Kills `worker` (timed out, cancelled or broken) and, with `spares`, starts a spare
        for the next."""
        worker.kill()
        if not self.spares:
            return
        with self._lock:
            if len(self._spares) < self.slots:
                self._spares.append(self._start())

    async def _ask(self, frame, each: Callable | None = None):
        """Sends one request and reads its answer within the time limit (504 after it: the
        worker is killed, which ends the search)."""
        worker = await self._take()
        try:
            async with asyncio.timeout(self.limits.timeout_s):
                reply = await worker.ask(frame, each)
        except TimeoutError:
            self._lose(worker)
            raise ServiceError(
                504, f"the search took longer than the time limit ({self.limits.timeout_s:g} s)"
            ) from None
        except (EOFError, OSError, pickle.UnpicklingError) as exc:
            self._lose(worker)
            log.error("a %s worker failed: %s", self.what, exc)
            raise ServiceError(
                500, f"the {self.what} worker failed (logged on the server)"
            ) from None
        except BaseException:  # cancelled mid-search: its answer would be the next request's
            self._lose(worker)
            raise
        with self._lock:
            self._idle.append(worker)
        return _unwrap(reply)

    async def search(self, req, span: tuple[int, int] = (0, 0)):
        """The queries.Result of a checked request, searched in a worker, which reads the texts
        of hits `span[0] .. span[1]` too (queries.Result.texts)."""
        return await self._ask(("search", (req, span)))

    def close(self) -> None:
        """Ends the idle workers and the spares (a busy one ends with its request, or when the
        server's end closes its pipe)."""
        with self._lock:
            idle, self._idle = self._idle, []
            spares, self._spares = self._spares, []
        for worker in idle:
            worker.kill()
        for spare in spares:
            spare.add_done_callback(_kill_when_started)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def __del__(self) -> None:  # an app dropped without its lifespan's end (tests)
        with contextlib.suppress(Exception):
            self.close()


class HeavyWorkers(SearchWorkers):
    """The heavy searches' worker processes (niced), a spare started at once when one is
    killed; they also walk SmallWorld's analog searches distance by distance (`levels`)."""

    async def levels(self, db, query: str, dist: int, caps: dict, k: int, each: Callable) -> None:
        """An analog walk in a worker (queries.analog_levels): `each(level)`, called on the event
        loop, with each distance's Analogs as it arrives."""
        await self._ask(("levels", (db.name, query, dist, caps, k)), each)


def _kill_when_started(started: concurrent.futures.Future) -> None:
    if not started.cancelled() and started.exception() is None:
        started.result().kill()


def _local(db) -> bool:
    """A store this process searches itself (not one fanned out to MPI ranks)."""
    return getattr(db.store, "_ranks", None) is None


def _unwrap(reply):
    kind = reply[0]
    if kind in ("result", "end"):
        return reply[1] if kind == "result" else None
    if kind == "error":
        raise ServiceError(reply[1], reply[2])
    if kind == "store":
        from .._core import StoreError

        raise StoreError(reply[1])
    log.error("a heavy search failed in its worker: %s", reply[1] if len(reply) > 1 else reply)
    raise ServiceError(500, "the search failed (logged on the server)")


if __name__ == "__main__":
    sys.exit(main())
