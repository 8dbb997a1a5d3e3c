"""The stores a server answers from: each opened once at start-up under a name the server's
configuration gives (a request names a database, never a path), with what it can answer, and
warmed: everything a search opens lazily (the searcher, the fingerprinter, the substructure and
analog indexes) opened here, so that searches of one store run at once in several threads
without racing to open it. No search holds a lock of the store: RDKit parses and fingerprints
separate molecules safely from several threads, and the Rust searches share the open indexes."""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass
class Database:
    """One served store."""

    name: str
    path: str
    store: object
    #: held by some callers around a query's RDKit preparation (parse, fingerprint: a
    #: millisecond); never around a search, and not needed for safety (see the module's doc)
    chem_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def version(self) -> int:
        """The store format version (of a set: its shards', the one store's)."""
        shards = getattr(self.store, "shards", None)
        if shards:
            return int(shards[0].manifest["format_version"])
        return int(self.store.manifest["format_version"])

    @property
    def molecules(self) -> int:
        return len(self.store)

    @property
    def types(self) -> list[str]:
        """The search types this store answers."""
        out = ["similarity"]
        if self.store.has_pattern_index:
            out += ["substructure", "smarts"]
        return [*out, "exact"]

    def describe(self) -> dict:
        spec = self.store.manifest["fingerprint"]
        return {
            "name": self.name,
            "molecules": self.molecules,
            "format_version": self.version,
            "types": self.types,
            "fingerprint": {"kind": spec.get("kind"), "bits": spec.get("bits")},
            # a store set (`molsift ingest --shards`): how many shards answer
            **({"shards": len(self.store.shards)} if hasattr(self.store, "shards") else {}),
        }


def default_name(path: str) -> str:
    """A store's name when none is given: its folder name without `.store` (`.set`)."""
    base = Path(os.path.normpath(path)).name
    for suffix in (".v2.store", ".store", ".set"):
        if base.endswith(suffix) and len(base) > len(suffix):
            base = base[: -len(suffix)]
            break
    return base


class Catalog:
    """Named databases, opened once (and warmed: the searcher and fingerprinter built)."""

    def __init__(self) -> None:
        self._dbs: dict[str, Database] = {}

    def add(self, name: str, path: str, verify: bool = False) -> Database:
        """Opens the store at `path` as `name`; ValueError for a bad or repeated name."""
        from .. import open_store

        if not NAME.match(name):
            raise ValueError(
                f"database name {name!r}: use letters, digits, '_', '.', '-' (at most 64, "
                "starting with a letter or digit)"
            )
        if name in self._dbs:
            raise ValueError(f"database name {name!r} given twice")
        store = open_store(path, verify=verify)
        db = Database(name=name, path=os.fspath(path), store=store)
        _warm(db)
        self._dbs[name] = db
        return db

    def get(self, name: str) -> Database | None:
        return self._dbs.get(name)

    def require(self, name: str) -> Database:
        """The database `name`, or ServiceError 404 listing the ones there are."""
        from .limits import ServiceError

        db = self._dbs.get(name)
        if db is None:
            raise ServiceError(404, f"no database {name!r}: this server has {', '.join(self._dbs)}")
        return db

    def names(self) -> list[str]:
        return list(self._dbs)

    def __iter__(self):
        return iter(self._dbs.values())

    def __len__(self) -> int:
        return len(self._dbs)

    def close(self) -> None:
        for db in self._dbs.values():
            close = getattr(db.store, "close", None)
            if close is not None:
                close()


def _warm(db: Database) -> None:
    """Opens what the first requests would otherwise open at once from several threads: the
    searcher, the query fingerprinter, the substructure and analog indexes."""
    from ..search import fingerprinter_for

    store = db.store
    store._searcher()
    fingerprinter_for(store)
    if store.has_pattern_index:
        store._pattern_index()
    if getattr(store, "has_analog_index", False):
        from ..analogs.search import _index

        for one in getattr(store, "shards", [store]):  # a set: each shard's
            _index(one)
