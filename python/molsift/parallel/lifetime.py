"""Worker lifetime: `die_with_parent()`, the one mechanism by which every process molsift starts
(ingest's pool workers, screen's workers, docking children) dies with the process that started
it, so a `kill -9` of a run never leaves workers (or, through them, multiprocessing's resource
tracker) behind."""

from __future__ import annotations

import os
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int | None = None) -> None:
    """Linux: this process gets SIGKILL when its parent dies (prctl PR_SET_PDEATHSIG). `parent`
    is the PID it was started by (default: the current parent); if that process is already gone,
    this process exits at once. Elsewhere it does nothing."""
    parent = os.getppid() if parent is None else parent
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)
