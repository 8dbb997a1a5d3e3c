"""Writing a store set from ingest's staging store (`molsift ingest ... --shards K`): the
staging store sorted once into the store order and cut into K consecutive ranges (never
between equal canonical SMILES: a shard may be empty), each range written as a complete one
store (`molsift_store::v2::write_shard`), its substructure index carried over from the
staging store's rows and graphs (or computed when the staging store has none), its analog
index built; then the set's rejects, `--dedupe` list and `set.json`, last."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np

from .. import _core
from .manifest import FORMAT, VERSION, file_entry, shard_name, write_manifest

#: the most shards a set may have (a name has four digits)
MAX_SHARDS = 9999


def check_shards(shards) -> int:
    if not isinstance(shards, int) or isinstance(shards, bool) or not 1 <= shards <= MAX_SHARDS:
        raise ValueError(f"shards must be an integer from 1 to {MAX_SHARDS}, not {shards!r}")
    return shards


def write_set(
    src: str,
    dst: str,
    shards: int,
    *,
    threads: int = 1,
    workers: int | None = None,
    pattern: bool = True,
    analogs: bool = True,
    progress: bool | None = None,
) -> dict:
    """Writes at `dst` (a new path in a work directory) the set of `shards` shards of the
    version-1 staging store `src`; returns its manifest. The caller moves `dst` into place."""
    from ..store import open_core, open_version_1

    check_shards(shards)
    os.makedirs(dst)
    bounds, raw = _core.write_set_shards(src, dst, shards, threads=threads)
    order = np.frombuffer(raw, dtype="<u4")
    carry = False
    if pattern:
        from ..substructure.build import meaning

        old = open_version_1(src)
        if old.has_pattern_index:
            index = old._core.pattern_index()
            carry = index.has_graphs() and json.loads(index.meaning_json()) == meaning()
    entries = []
    for s in range(shards):
        path = os.path.join(dst, shard_name(s))
        first, end = bounds[s], bounds[s + 1]
        if pattern and carry:
            _core.carry_pattern_index(
                src, path, threads=workers or threads, source=order[first:end].tobytes()
            )
        elif pattern:
            from ..substructure.build import build_pattern_index

            build_pattern_index(path, workers=workers, progress=progress)
        if analogs:
            from ..analogs.search import index_analogs

            index_analogs(path, workers)
        core = open_core(path)
        n = len(core)
        entries.append(
            {
                "name": shard_name(s),
                "offset": first,
                "molecules": n,
                "first_smiles": core.smiles(0) if n else None,
                "last_smiles": core.smiles(n - 1) if n else None,
                "manifest_checksum": json.loads(core.manifest_json())["checksum"],
            }
        )
    staging = json.loads(open_core(src).manifest_json())
    shutil.copyfile(os.path.join(src, "rejects.tsv"), os.path.join(dst, "rejects.tsv"))
    files = {name: file_entry(os.path.join(dst, name))
             for name in ("rejects.tsv", "duplicates.tsv")
             if os.path.exists(os.path.join(dst, name))}  # fmt: skip
    provenance = dict(staging.get("provenance") or {})
    provenance.pop("staging", None)
    manifest = {
        "format": FORMAT,
        "format_version": VERSION,
        "created_by": f"molsift {_core.__version__}",
        "fingerprint": staging["fingerprint"],
        "counts": staging["counts"],
        "provenance": provenance,
        "shards": entries,
        "files": files,
    }
    write_manifest(dst, manifest)
    return manifest
