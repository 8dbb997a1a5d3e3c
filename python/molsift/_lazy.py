"""Owns lazy exports: a package's public names that import their module on first use, so that
`import molsift` (and `molsift count`) load no more than they need."""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # typing costs milliseconds at start-up: imported for the checkers only
if TYPE_CHECKING:
    from collections.abc import Callable


def lazy_getattr(package: str, modules: dict[str, str], namespace: dict) -> Callable[[str], object]:
    """A module `__getattr__` for `package`: `name` is taken from its submodule
    `modules[name]`, imported then, and kept in `namespace` (the package's globals) so that the
    next use finds it directly."""

    def __getattr__(name: str) -> object:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f".{module}", package), name)
        namespace[name] = value
        return value

    return __getattr__
