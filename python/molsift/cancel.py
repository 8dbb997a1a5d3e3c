"""Cancel flags: what a caller sets to stop a search that is running in another thread (a
server whose client was answered 504). `new_flag()` makes one: the Rust kernels' own
(`_core.CancelFlag`, read inside the graph matcher and the analog walk, so that one long
molecule or walk stops too) when the built extension has it, else a `threading.Event`, which
the Python loops read between batches. Either has `set()` and `is_set()`; `kernel_flag(flag)`
is what to hand to a Rust call (None for an Event). A search that sees its flag set raises
`Cancelled`."""

from __future__ import annotations

import threading

from . import _core

#: the Rust flag type, None when the built extension predates it
KernelFlag = getattr(_core, "CancelFlag", None)


class _Cancelled(Exception):
    """A search stopped because its cancel flag was set."""


#: raised by a search whose flag was set (the extension's own class when it has one, so that
#: the Rust kernels' stop and the Python loops' stop are one exception)
Cancelled: type[Exception] = getattr(_core, "Cancelled", _Cancelled)


def new_flag():
    """A new, unset cancel flag."""
    return KernelFlag() if KernelFlag is not None else threading.Event()


def kernel_flag(flag):
    """`flag` when the Rust kernels can read it, else None."""
    if flag is not None and KernelFlag is not None and isinstance(flag, KernelFlag):
        return flag
    return None


def check(flag) -> None:
    """Raises Cancelled when `flag` (or None) is set."""
    if flag is not None and flag.is_set():
        raise Cancelled("the search was cancelled")
