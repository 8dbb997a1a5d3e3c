"""SVG depictions of SMILES for `/api/v1/depict` (a substructure query's matches highlighted
when asked), bounded on every side: at most `max_depict_chars` characters (the SMILES and the
query each) and `max_depict_atoms` heavy atoms (413), drawn in at most
`max_depict_concurrent` worker processes of their own (drawer.py: RDKit holds the interpreter
lock while it draws, so drawing in the server's threads would stop every search), a slot waited
for at most `queue_wait_s` (503), a drawing past `depict_timeout_s` ended by killing its worker
(504; a new one starts for the next request), and answers cached in a least-recently-used
cache of at most `depict_cache_bytes` (a results page asks for the same molecules again as
users page back and forth)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import subprocess
import sys
from collections import OrderedDict

from .limits import Limits, ServiceError

log = logging.getLogger("molsift.serve")
#: seconds a new worker may take to load RDKit (not counted in a drawing's time limit)
START_S = 60.0
#: the longest answer line a worker may write (an SVG of the largest molecule drawn is far less)
LINE_LIMIT = 64 << 20


class _Cache:
    """Answers by (smiles, width, height, highlight, smarts): the SVG, or the refusal (status,
    message); the least recently used dropped beyond `budget` bytes."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0
        self._items: OrderedDict[tuple, tuple[int, str]] = OrderedDict()

    @staticmethod
    def _size(key: tuple, value: tuple[int, str]) -> int:
        return len(key[0]) + len(key[3]) + len(value[1]) + 100

    def get(self, key: tuple) -> tuple[int, str] | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: tuple, value: tuple[int, str]) -> None:
        size = self._size(key, value)
        if size > self.budget or key in self._items:
            return
        self._items[key] = value
        self.used += size
        while self.used > self.budget:
            old_key, old = self._items.popitem(last=False)
            self.used -= self._size(old_key, old)


class _Worker:
    """One drawing process."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, max_atoms: int) -> _Worker:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "molsift.serve.drawer", str(max_atoms),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            limit=LINE_LIMIT, start_new_session=True,
        )  # fmt: skip
        worker = cls(proc)
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), START_S)
            if not json.loads(line or b"{}").get("ready"):
                raise RuntimeError("it did not say it was ready")
        except (asyncio.TimeoutError, ValueError, RuntimeError) as exc:
            worker.kill()
            log.error("the drawing worker did not start: %s", exc)
            raise ServiceError(503, "the drawing worker did not start: retry") from None
        except BaseException:  # the request was cancelled: no worker left behind
            worker.kill()
            raise
        return worker

    async def draw(
        self, smiles: str, width: int, height: int, highlight: str = "", smarts: bool = False
    ) -> dict:
        """The worker's answer; asyncio.TimeoutError is the caller's to handle (as any await's
        cancellation)."""
        request = json.dumps(
            {"smiles": smiles, "width": width, "height": height, "highlight": highlight,
             "smarts": smarts}
        )  # fmt: skip
        self.proc.stdin.write(request.encode() + b"\n")
        await self.proc.stdin.drain()
        line = await self.proc.stdout.readline()
        if not line:
            raise EOFError("the drawing worker stopped")
        return json.loads(line)

    def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()


class Depicter:
    """Draws SVGs within the limits; created with the app, its workers started on first use
    (inside the running event loop)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._cache = _Cache(limits.depict_cache_bytes)
        self._slots: asyncio.Semaphore | None = None
        self._idle: list[_Worker] = []

    def _check(self, smiles: str, width: int, height: int, highlight: str = "") -> None:
        if not (50 <= width <= 1000 and 50 <= height <= 1000):
            raise ServiceError(400, "width and height: give 50 to 1000 pixels")
        if not smiles.strip():
            raise ServiceError(400, "smiles is empty: give a SMILES")
        most = self.limits.max_depict_chars
        if len(smiles) > most:
            raise ServiceError(
                413, f"smiles is {len(smiles):,} characters; depictions take at most {most:,}"
            )
        if len(highlight) > most:
            raise ServiceError(
                413, f"highlight is {len(highlight):,} characters; depictions take at most "
                f"{most:,}",
            )  # fmt: skip

    async def svg(
        self,
        smiles: str,
        width: int = 250,
        height: int = 200,
        highlight: str | None = None,
        smarts: bool = False,
    ) -> str:
        """The SVG of `smiles`, with the atoms and bonds the substructure query `highlight`
        matches (SMILES, else SMARTS; SMARTS only with `smarts`) highlighted; ServiceError 400
        when RDKit cannot read either or the size is odd, 413 for a SMILES or molecule over the
        limits, 503 when every worker is busy past the queue wait, 504 when the drawing outlasts
        the time limit."""
        highlight = (highlight or "").strip()
        self._check(smiles, width, height, highlight)
        key = (smiles, width, height, highlight, bool(smarts) and bool(highlight))
        found = self._cache.get(key)
        if found is None:
            found = await self._draw(key)
        status, text = found
        if status != 200:
            raise ServiceError(status, text)
        return text

    async def _draw(self, key: tuple) -> tuple[int, str]:
        limits = self.limits
        if self._slots is None:
            self._slots = asyncio.Semaphore(limits.max_depict_concurrent)
        try:
            await asyncio.wait_for(self._slots.acquire(), limits.queue_wait_s)
        except asyncio.TimeoutError:
            raise ServiceError(
                503,
                f"the server is busy ({limits.max_depict_concurrent} depictions running): retry",
            ) from None
        worker = None
        try:
            found = self._cache.get(key)  # drawn by another request while this one waited
            if found is not None:
                return found
            worker = (
                self._idle.pop() if self._idle else await _Worker.start(limits.max_depict_atoms)
            )
            try:
                answer = await asyncio.wait_for(worker.draw(*key), limits.depict_timeout_s)
            except asyncio.TimeoutError:
                worker.kill()
                worker = None
                raise ServiceError(
                    504, f"the depiction took longer than the time limit "
                    f"({limits.depict_timeout_s:g} s)",
                ) from None  # fmt: skip
            except (EOFError, OSError, ValueError) as exc:
                worker.kill()
                worker = None
                log.error("depiction of %r failed: %s", key[0][:100], exc)
                raise ServiceError(
                    500, "the drawing worker failed (logged on the server)"
                ) from None
            except BaseException:  # cancelled mid-drawing: its answer would be the next one's
                worker.kill()
                worker = None
                raise
            found = (200, answer["svg"]) if "svg" in answer else (answer["status"], answer["error"])
            self._cache.put(key, found)
            return found
        finally:
            if worker is not None:
                self._idle.append(worker)
            self._slots.release()

    def close(self) -> None:
        """Ends the idle workers (busy ones end when their request does, or with the server)."""
        for worker in self._idle:
            worker.kill()
        self._idle.clear()
