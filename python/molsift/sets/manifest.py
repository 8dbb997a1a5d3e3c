"""The set manifest, `set.json`: what a store set holds and how to check it.

    {"format": "molsift-set", "format_version": 1, "created_by": "molsift X",
     "fingerprint": {...}, "counts": {...}, "provenance": {...},
     "shards": [{"name": "shard-0000", "offset": 0, "molecules": 12, "first_smiles": "C",
                 "last_smiles": "CCO", "manifest_checksum": "..."}, ...],
     "files": {"rejects.tsv": {"bytes": 70, "blake2b": "..."}},
     "checksum": "..."}

`counts` are those of the whole ingest (records in, rejected, duplicates, dropped: the shards
count only their own molecules); each shard's `manifest_checksum` is the checksum its own
manifest states, so a shard swapped for another store's is refused by name; `checksum` is a
BLAKE2b of the manifest without it."""

from __future__ import annotations

import hashlib
import json
import os

from .. import _core

SET_FILE = "set.json"
FORMAT = "molsift-set"
VERSION = 1


def is_set(path) -> bool:
    """True when `path` is a directory holding a set manifest."""
    return os.path.isfile(os.path.join(os.fspath(path), SET_FILE))


def shard_name(index: int) -> str:
    return f"shard-{index:04d}"


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _body(manifest: dict) -> bytes:
    rest = {k: v for k, v in manifest.items() if k != "checksum"}
    return json.dumps(rest, sort_keys=True, separators=(",", ":")).encode()


def file_entry(path: str) -> dict:
    with open(path, "rb") as fh:
        data = fh.read()
    return {"bytes": len(data), "blake2b": _digest(data)}


def write_manifest(directory: str, manifest: dict) -> None:
    """Seals `manifest` with its checksum and writes it as `set.json` (temporary name, fsync,
    rename: a set without it never opens)."""
    manifest = dict(manifest, checksum=_digest(_body(manifest)))
    path = os.path.join(directory, SET_FILE)
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(manifest, fh, indent=1)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_manifest(directory: str) -> dict:
    """The set manifest of `directory`, checked (format, version, its own checksum, the shard
    list's shape), or StoreError naming the file and what is wrong."""
    path = os.path.join(directory, SET_FILE)
    try:
        with open(path, "rb") as fh:
            manifest = json.loads(fh.read())
    except OSError as exc:
        raise _core.StoreError(f"{path}: cannot read the set manifest: {exc.strerror}") from None
    except ValueError as exc:
        raise _core.StoreError(f"{path}: not JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise _core.StoreError(f"{path}: not a molsift set manifest")
    if manifest.get("format_version") != VERSION:
        raise _core.StoreError(
            f"{path}: set format version {manifest.get('format_version')!r}; this molsift "
            f"reads version {VERSION}"
        )
    if manifest.get("checksum") != _digest(_body(manifest)):
        raise _core.StoreError(f"{path}: checksum does not match its content (damaged)")
    offset = 0
    for i, shard in enumerate(manifest.get("shards") or []):
        if shard.get("name") != shard_name(i) or shard.get("offset") != offset:
            raise _core.StoreError(f"{path}: shard {i} is out of order")
        offset += shard["molecules"]
    if not manifest.get("shards") or offset != manifest["counts"]["molecules"]:
        raise _core.StoreError(f"{path}: its shards do not add up to its molecules")
    return manifest


def check_file(directory: str, manifest: dict, name: str) -> str:
    """The path of the set-level file `name`, checked against the manifest's entry."""
    path = os.path.join(directory, name)
    want = manifest["files"].get(name)
    if want is None:
        raise _core.StoreError(f"{path}: not a file of this set")
    try:
        got = file_entry(path)
    except OSError as exc:
        raise _core.StoreError(f"{path}: {exc.strerror}") from None
    if got != want:
        raise _core.StoreError(f"{path}: size or checksum does not match the set manifest")
    return path
