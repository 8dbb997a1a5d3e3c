"""One writer per output: `output_lock(OUT, verb)` holds an advisory lock (`fcntl.flock`) on
`.NAME.lock` beside the output for a whole `molsift ingest`, `index` or `upgrade`, so that a
second run onto the same output is refused in one line naming the first (its pid and verb)
instead of breaking it halfway (issue 40: two `ingest --overwrite` onto one `-o`). With
`wait=True` (`index`: rebuilding a store's index again is harmless) it waits for its turn
instead, saying so once.

The lock file holds its owner's pid, host and verb; the owner removes it when done (under the
lock, so a waiting run never locks a removed file). A killed owner's lock is released by the
kernel, and its file is taken over by the next run. Under `mpirun` rank 0 takes the lock and
every rank raises its answer. Where no lock file can be made (a read-only directory) or the file
system has no locks, the run goes on without one."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import sys
import time
from collections.abc import Iterator


class OutputBusy(ValueError):
    """Another molsift is writing the output."""


def lock_path(output: str) -> str:
    """`DIR/.NAME.lock` beside `output`."""
    output = os.path.abspath(output).rstrip(os.sep)
    return os.path.join(os.path.dirname(output), f".{os.path.basename(output)}.lock")


@contextlib.contextmanager
def output_lock(output: str, verb: str, wait: bool = False) -> Iterator[None]:
    """Holds the lock of `output` for the body of the `with`; when another process holds it,
    raises `OutputBusy` (a one-line message naming the holder), or with `wait` says on stderr
    that it waits and waits. Under mpirun, rank 0 locks."""
    comm = _world()
    held, error = None, None
    if comm is None or comm.Get_rank() == 0:
        try:
            held = _acquire(output, verb, wait)
        except OutputBusy as exc:
            error = exc
    if comm is not None:
        error = comm.bcast(error, root=0)
    if error is not None:
        raise OutputBusy(str(error))
    try:
        yield
    finally:
        if held is not None:
            _release(*held)


def _world():
    """MPI_COMM_WORLD under mpirun with more than one rank, else None."""
    from .parallel import launched_under_mpi

    if not launched_under_mpi():
        return None
    from .parallel.mpi import world

    comm = world()
    return comm if comm.Get_size() > 1 else None


def _acquire(output: str, verb: str, wait: bool) -> tuple[int, str] | None:
    """(fd, path) of the lock taken, None when no lock can be had here (go on without)."""
    import fcntl

    path = lock_path(output)
    said = False
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError:  # read-only directory, no such directory (the run itself will say)
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                busy = f"another molsift{_holder(fd)} is writing {output}"
                if not wait:
                    raise OutputBusy(
                        f"{busy}: wait for it to end or choose another output"
                    ) from None
                if not said:
                    print(f"molsift: {busy}; waiting for it to end", file=sys.stderr, flush=True)
                    said = True
                fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException as exc:
            os.close(fd)
            if isinstance(exc, OSError) and exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP):
                return None  # a file system without locks
            raise
        if _same_file(fd, path):
            break
        os.close(fd)  # its owner removed it between our open and our lock: take the new one
    owner = {"pid": os.getpid(), "host": socket.gethostname(), "verb": verb, "since": time.time()}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(owner).encode() + b"\n", 0)
    return fd, path


def _same_file(fd: int, path: str) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    own = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


def _holder(fd: int) -> str:
    """' (pid N, molsift VERB[, on HOST])' from a held lock file, as far as it says."""
    try:
        owner = json.loads(os.pread(fd, 4096, 0) or b"{}")
        text = f"pid {int(owner['pid'])}, molsift {owner['verb']}"
    except (ValueError, KeyError, TypeError, OSError):  # its owner writes it a moment later
        return ""
    if owner.get("host") not in (None, socket.gethostname()):
        text += f", on {owner['host']}"
    return f" ({text})"


def _release(fd: int, path: str) -> None:
    """Removes the lock file while holding it, then lets it go."""
    with contextlib.suppress(OSError):
        os.unlink(path)
    os.close(fd)
