"""Owns the one check made before molsift starts worker processes: they are started with
"spawn", which runs the user's script again in every worker, so a script that calls molsift at
its top level, outside `if __name__ == "__main__":`, would fail with multiprocessing's
bootstrapping traceback in every worker. `check_can_spawn()` stops such a script before any
worker starts, with one sentence on stderr (SpawnError, a SystemExit: no traceback)."""

from __future__ import annotations

import ast
import functools
import sys

GUARD = 'if __name__ == "__main__":'


class SpawnError(SystemExit):
    """Worker processes cannot be started from here; the message says what to change. A
    SystemExit, since it is raised only in a script's top-level code, which it ends with that
    one sentence (exit status 1) instead of a traceback per worker."""


def _message(script: str, line: int | None) -> str:
    where = f"{script}, line {line}" if line else script
    return (
        f"molsift: error: molsift starts worker processes, which import your script {where} "
        f"again: put the code that calls molsift under `{GUARD}` (see README.md, Python)"
    )


@functools.lru_cache(maxsize=16)
def _guarded_lines(path: str) -> frozenset | None:
    """Lines of `path` inside an `if __name__ == "__main__":` block; None if unreadable."""
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
    except (OSError, SyntaxError, ValueError):
        return None
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return frozenset(lines)


def _main_script() -> str | None:
    """The script run as `__main__` that spawned workers would run again, or None (interactive,
    `python -c`, `python -m package`: multiprocessing does not re-run those)."""
    main = sys.modules.get("__main__")
    spec_name = getattr(getattr(main, "__spec__", None), "name", None) or ""
    if spec_name == "__main__" or spec_name.endswith(".__main__"):
        return None
    path = getattr(main, "__file__", None)
    return path if path and path.endswith(".py") else None


def check_can_spawn() -> None:
    """Raises SpawnError (exit with one sentence) when starting worker processes now would fail
    or run the user's script again: in a worker that is still importing the script (no guard),
    or in the main process when molsift is called from the script's top level outside the
    `__main__` guard."""
    import multiprocessing.process as mpp

    if getattr(mpp.current_process(), "_inheriting", False):  # a spawned worker importing main
        raise SpawnError(_message(_main_script() or "the main script", None))
    script = _main_script()
    if script is None:
        return
    guarded = _guarded_lines(script)
    if guarded is None:
        return
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__") == "__main__" and frame.f_code.co_name == "<module>":
            if frame.f_lineno not in guarded:
                raise SpawnError(_message(script, frame.f_lineno))
            return
        frame = frame.f_back
