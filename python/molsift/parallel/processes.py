"""`ProcessWorkers`: molsift's one engine for worker processes on this machine. Ingest, screen
(on one machine, and the workers of each MPI rank with `-j`) and every later job run on it.

- Workers are started with the spawn method from `allocator.spawn_context()`, inside
  `allocator.preloaded()` (RDKit work runs on tcmalloc when it is installed; the caller's
  LD_PRELOAD is put back once they have started), after `bootstrap`'s check of the user's
  `__main__` guard.
- Each worker dies with the process that started it (`lifetime.die_with_parent`), so a killed
  run never leaves workers behind.
- A worker builds its job once (`make_job(ctx)`: load a scorer, open a reader), runs it on every
  task it takes from one shared, bounded queue (an idle worker takes the next task; the feeder
  never races ahead of the workers), sends messages to the parent as it goes (`ctx.send`), and
  ends with the job's stats.
- Messages are handled in the parent by one thread per outbox (a group of workers: screen's
  writer groups) or, with `threads=False`, in the calling thread between `poll()` calls (an MPI
  rank forwarding its workers' buffers).
- Abort on error: the first failure (a worker's exception, a worker that died, the task feed, a
  message handler) stops the run; the other workers are killed and `WorkerError` says what
  happened, with the worker's exception as `cause` when it could be sent (a worker that ran out
  of memory exits with `limits.WORKER_OUT_OF_MEMORY` instead, said in words with the limit).
- Progress: each worker sets its own slot of a shared array (`ctx.progress(n)`: no messages);
  `on_tick(sum)` sees the total a few times a second.
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import threading
import time
import traceback
from collections.abc import Iterable
from typing import Any, Callable

from .._core import MolsiftError
from ..limits import WORKER_OUT_OF_MEMORY, address_space_limit, memory_message, out_of_memory

#: Seconds between checks of the workers (deaths, progress) while waiting.
TICK = 0.2

#: MiB of memory a worker holds once started, before any work (a spawned interpreter with
#: molsift and RDKit imported: 45 MiB resident, measured), rounded down: more workers than the
#: machine's memory holds at this size are refused before any starts
WORKER_MIB = 40


def check_worker_count(workers: int) -> None:
    """Raises ValueError when `workers` processes cannot all start in this machine's memory
    (`-j 100000`): refused in one line before the first starts, not found out by the kernel."""
    from ..budget import size_text
    from ..limits import machine_memory

    need, have = workers * WORKER_MIB << 20, machine_memory()
    if need > have:
        raise ValueError(
            f"{workers:,} worker processes need at least {size_text(need)} of memory"
            f" ({WORKER_MIB} MiB each as they start) and this machine has {size_text(have)}:"
            f" ask for at most {have // (WORKER_MIB << 20):,}"
        )


class WorkerError(MolsiftError):
    """A run on worker processes failed. `text` says where and why; `resumable` is False when
    running again cannot get past it (molsift's own errors: a damaged input); `cause` is the
    exception raised in the worker, when it could be pickled."""

    def __init__(self, text: str, resumable: bool = False, cause: BaseException | None = None):
        super().__init__(text)
        self.text = text
        self.resumable = resumable
        self.cause = cause


def describe_failure(exc: BaseException) -> tuple[str, bool]:
    """(text, resumable) of an exception in a worker or the task feed: molsift's own errors (a
    damaged input, a missing column) are their one-line message, and running again will not
    get past them; anything else is unexpected, shown with its traceback."""
    if isinstance(exc, MolsiftError):
        return str(exc), False
    return traceback.format_exc(), True


def _picklable(exc: BaseException) -> BaseException | None:
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # an exception holding unpicklable state: its text is sent instead
        return None


class WorkerContext:
    """What a job sees of the engine inside its worker process."""

    def __init__(self, worker: int, outbox, slots):
        self.worker = worker
        self._outbox = outbox
        self._slots = slots

    def send(self, message: Any) -> None:
        """Hands `message` to the parent's handler of this worker's outbox (blocks while the
        outbox is full: the handler is behind)."""
        self._outbox.put(("msg", self.worker, message))

    def progress(self, done: float) -> None:
        """Sets this worker's progress (units done so far, e.g. records)."""
        self._slots[self.worker] = done

    def queue_depth(self) -> int:
        """Messages of this worker's outbox not yet taken by the parent."""
        try:
            return self._outbox.qsize()
        except NotImplementedError:  # macOS
            return 0


def _worker_main(worker: int, make_job, tasks, outbox, slots, parent: int) -> None:
    """One worker process: builds its job, runs it on tasks until `None`, sends its stats."""
    from .lifetime import die_with_parent

    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    job = None
    try:
        job = make_job(WorkerContext(worker, outbox, slots))
        while True:
            task = tasks.get()
            if task is None:
                break
            job.run(task)
        stats = job.finish()
        outbox.put(("done", worker, stats))
    except BaseException as exc:
        if _ran_out(exc):  # sending the error needs a thread: none can start now
            raise SystemExit(WORKER_OUT_OF_MEMORY) from None
        text, resumable = describe_failure(exc)
        outbox.put(("error", worker, text, resumable, _picklable(exc)))
        raise SystemExit(1) from None
    finally:
        close = getattr(job, "close", None)
        if close is not None:
            close()


def _ran_out(exc: BaseException) -> bool:
    try:
        return out_of_memory(exc) is not None
    except MemoryError:  # even telling failed
        return True


def _death_text(name: str, exitcode: int) -> str:
    """Why a worker process ended without saying why: out of memory in words, with the
    address-space limit (a library that cannot be loaded under `ulimit -v` may end the process
    itself: OpenBLAS does), or its exit code."""
    if exitcode == WORKER_OUT_OF_MEMORY:
        return memory_message(f"worker process {name} ran out")
    text = f"worker process {name} died (exit code {exitcode})"
    limit = address_space_limit()
    if limit is not None:
        text += (
            f"; the address-space limit (ulimit -v) is {limit / 2**20:,.0f} MiB: memory may "
            "have run out"
        )
    return text


class ProcessWorkers:
    """`workers` worker processes running jobs made by `make_job(ctx)` (a picklable callable;
    the job has `run(task)`, `finish() -> stats` and optionally `close()`).

    `outboxes` groups the workers (lists of worker indices; default one group of all); each
    group's messages are handled in order by one thread. `name` is the process name, with `{w}`
    for the worker's index; `handler_name` names a message handler in errors."""

    def __init__(
        self,
        workers: int,
        make_job: Callable[[WorkerContext], Any],
        *,
        outboxes: list[list[int]] | None = None,
        name: str = "molsift-worker-{w}",
        handler_name: str = "handler",
        messages_per_worker: int = 2,
    ):
        from ..allocator import spawn_context  # runs bootstrap's __main__-guard check

        check_worker_count(workers)
        self.size = workers
        self.groups = outboxes or [list(range(workers))]
        self.handler_name = handler_name
        ctx = spawn_context()
        self._tasks = ctx.Queue(maxsize=2 * workers)
        self._outboxes = [ctx.Queue(maxsize=messages_per_worker * len(g)) for g in self.groups]
        self._slots = ctx.Array("d", workers, lock=False)
        box_of = {w: i for i, g in enumerate(self.groups) for w in g}
        self._procs = [
            ctx.Process(
                target=_worker_main,
                name=name.format(w=w),
                args=(
                    w,
                    make_job,
                    self._tasks,
                    self._outboxes[box_of[w]],
                    self._slots,
                    os.getpid(),
                ),
            )
            for w in range(workers)
        ]
        self._abort = threading.Event()
        self._errors: list[tuple[str, bool, BaseException | None]] = []
        self.stats: dict[int, Any] = {}

    # ------------------------------------------------------------ parent side

    def done(self) -> float:
        """The sum of the workers' progress slots."""
        return sum(self._slots[w] for w in range(self.size))

    def _fail(self, text: str, resumable: bool, cause: BaseException | None = None) -> None:
        self._errors.append((text, resumable, cause))
        self._abort.set()

    def _feed(self, tasks: Iterable[Any]) -> None:
        try:
            for task in tasks:
                while not self._abort.is_set():
                    try:
                        self._tasks.put(task, timeout=TICK)
                        break
                    except queue.Full:
                        continue
                if self._abort.is_set():
                    return
            for _ in range(self.size):
                self._tasks.put(None)
        except BaseException as exc:
            text, resumable = describe_failure(exc)
            self._fail(f"reading the input failed: {text}", resumable, _picklable(exc))

    def _take(self, box: int, message: tuple, on_message) -> bool:
        """Handles one message of outbox `box`; True when it was a worker's last."""
        kind, worker = message[0], message[1]
        if kind == "msg":
            on_message(box, message[2])
            return False
        if kind == "done":
            self.stats[worker] = message[2]
        else:
            self._fail(f"worker {worker} failed: {message[2]}", message[3], message[4])
        return True

    def _handle(self, box: int, on_message) -> None:
        """One outbox's handler thread: its workers' messages, in order, until all are done."""
        left = len(self.groups[box])
        try:
            while left and not self._abort.is_set():
                try:
                    message = self._outboxes[box].get(timeout=TICK)
                except queue.Empty:
                    continue
                left -= self._take(box, message, on_message)
        except BaseException as exc:
            text, resumable = describe_failure(exc)
            self._fail(f"{self.handler_name} {box} failed: {text}", resumable)

    def _check_deaths(self, handlers_run: bool) -> None:
        """A worker that exited with an error without saying why fails the run. Its own error
        message may still be on its way: handler threads get half a second to take it; handled
        in this thread, deaths count only once every outbox is empty."""
        for p in self._procs:
            if p.exitcode not in (None, 0) and not self._abort.is_set():
                if handlers_run:
                    time.sleep(0.5)
                elif not all(box.empty() for box in self._outboxes):
                    return
                if not self._errors:
                    self._fail(_death_text(p.name, p.exitcode), True)
                self._abort.set()

    def run(
        self,
        tasks: Iterable[Any],
        on_message: Callable[[int, Any], None],
        *,
        on_tick: Callable[[float], None] | None = None,
        threads: bool = True,
        poll: Callable[[], None] | None = None,
    ) -> list[Any]:
        """Runs every task of `tasks` (an iterable read by a feeder thread) on the workers;
        `on_message(outbox, message)` handles what they send. Returns the workers' stats in
        worker order, or raises `WorkerError` (the other workers are then killed)."""
        from ..allocator import preloaded

        with preloaded():  # the workers start on the allocator; LD_PRELOAD is put back
            for p in self._procs:
                p.start()
        feeder = threading.Thread(target=self._feed, args=(tasks,), daemon=True)
        feeder.start()
        handlers = []
        if threads:
            handlers = [
                threading.Thread(target=self._handle, args=(b, on_message), daemon=True)
                for b in range(len(self.groups))
            ]
            for t in handlers:
                t.start()
        try:
            if threads:
                while any(t.is_alive() for t in handlers):
                    time.sleep(TICK)
                    self._tick(on_tick, threads)
            else:
                self._handle_here(on_message, on_tick, poll)
            self._tick(on_tick, threads)
        finally:
            self._stop(handlers)
        if self._errors:
            raise WorkerError(*self._errors[0])
        return [self.stats[w] for w in sorted(self.stats)]

    def _tick(self, on_tick, handlers_run: bool) -> None:
        if on_tick is not None:
            on_tick(self.done())
        self._check_deaths(handlers_run)

    def _handle_here(self, on_message, on_tick, poll) -> None:
        """Every outbox handled in this thread; `poll` runs while none has a message."""
        left = self.size
        last = time.monotonic()
        try:
            while left and not self._abort.is_set():
                got = False
                for box, outbox in enumerate(self._outboxes):
                    try:
                        message = outbox.get(timeout=0.002)
                    except queue.Empty:
                        continue
                    got = True
                    left -= self._take(box, message, on_message)
                if not got and poll is not None:
                    poll()
                if time.monotonic() - last >= TICK:
                    last = time.monotonic()
                    self._tick(on_tick, False)
        except BaseException as exc:
            text, resumable = describe_failure(exc)
            self._fail(f"{self.handler_name} failed: {text}", resumable)

    def _stop(self, handlers: list[threading.Thread]) -> None:
        """Ends the run: on failure the workers are killed; every process and thread joined."""
        if self._abort.is_set() or any(t.is_alive() for t in handlers):
            self._abort.set()
            self._tasks.cancel_join_thread()  # no worker reads it any more: exit without flushing
            for p in self._procs:
                if p.is_alive():
                    p.kill()
        for p in self._procs:
            p.join()
        for t in handlers:
            t.join()
