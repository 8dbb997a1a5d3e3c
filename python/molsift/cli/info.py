"""`molsift info STORE`: check a store (manifest, sizes, checksums) and show what it holds."""

from __future__ import annotations

import json
import os

from ..wording import noun, plural
from .common import add_io_log, add_verb, in_range

EXAMPLES = (
    "molsift info nci.store",
    "molsift info nci.store -n 20 --no-verify   # sizes checked, checksums skipped",
    "molsift info nci.store --json              # the manifest, with bytes per file and molecule",
)


def add_parser(subparsers):
    p = add_verb(
        subparsers,
        "info",
        help="show what is in a store",
        description="Check a store (manifest, sizes, checksums) and show it.",
        examples=EXAMPLES,
    )
    p.add_argument("store")
    p.add_argument(
        "-n",
        "--head",
        type=lambda text: int(in_range(text, 0, 1 << 62, "a number of molecules, 0 or more")),
        default=5,
        help="molecules to show, with --json too (default %(default)s)",
    )
    p.add_argument(
        "--no-verify", action="store_true", help="skip the checksums (sizes still checked)"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the manifest as JSON, with the bytes of each file per molecule and the "
        "first -n molecules (first_molecules: position, id, canonical SMILES)",
    )
    add_io_log(p)
    return p


def run(args) -> int:
    from .. import _core
    from ..store import file_bytes, index_bytes, open_store

    store = open_store(args.store, verify=not args.no_verify)
    if hasattr(store, "shards"):
        return _set_info(store, args)
    m = store.manifest
    per = m["counts"]["molecules"]
    by_file = file_bytes(m)
    size = sum(by_file.values())  # the whole store, as ingest reports it
    if args.json:
        sizes = {
            "bytes": size,
            "bytes_per_molecule": _ratio(size, per),
            "files": {
                name: {"bytes": b, "bytes_per_molecule": _ratio(b, per)}
                for name, b in sorted(by_file.items())
            },
        }
        shard = _shard_of_set(args.store)
        doc = {**m, "sizes": sizes, **({"set": shard} if shard else {})}
        print(json.dumps({**doc, "first_molecules": _first(store, args.head)}, indent=2))
        return 0
    c, fp = m["counts"], m["fingerprint"]
    checked = f"all {plural(len(by_file) + 1, 'file')} verified (manifest included)"
    print(f"store       {store.path}")
    shard = _shard_of_set(args.store)
    if shard:  # a shard read alone: its positions are the set's less its offset
        first = shard["offset"]
        print(
            f"set         {shard['name']} of the set {shard['path']}: its molecules are the"
            f" set's positions {first:,} to {first + shard['molecules'] - 1:,}"
            f" (molsift info {shard['path']})"
        )
    print(f"format      {m['format']} v{m['format_version']} ({m['created_by']})")
    dropped = f", duplicates left out {c['dropped']:,}" if c.get("dropped") else ""
    print(
        f"molecules   {c['molecules']:,}  "
        f"(records in {c['records_in']:,}, rejected {c['rejected']:,}{dropped})"
    )
    dups = c.get("duplicates")
    if dups is None:
        print("duplicates  not counted (store written before molsift counted them)")
    elif c.get("dropped"):
        print(f"duplicates  {dups:,}, left out and listed in {store.path}/duplicates.tsv")
    else:
        print(f"duplicates  {dups:,} (molecules whose canonical SMILES an earlier one had)")
    print(f"fingerprint {fp['kind']} {fp['bits']} bits {json.dumps(fp['params'])}")
    print(f"size        {size:,} bytes{_each(size, c['molecules'])}")
    print(f"checksums   {'not checked (--no-verify)' if args.no_verify else checked}")
    # open_store opens the one store only (version 2): its planes are the similarity index
    print("search      compressed bit planes (the fingerprints themselves)")
    per = c["molecules"]
    compact = _core.PATTERN_COMPACT_FILES[0] in m["files"]
    # the whole index first (pattern.json too), as ingest and `molsift index` count it
    whole = index_bytes(by_file, "pattern.")
    whole_text = f"{whole:,} bytes{_each(whole, per)}: "
    if store.has_pattern_index and compact:
        screen, graphs = (m["files"][f]["bytes"] for f in _core.PATTERN_COMPACT_FILES)
        print(
            f"substructure index present ({whole_text}{screen:,} bytes of compressed screen planes"
            f"{_each(screen, per)}; {graphs:,} bytes of molecule graphs in zstd blocks"
            f"{_each(graphs, per)})"
        )
    elif store.has_pattern_index:
        planes = m["files"][_core.PATTERN_FILES[1]]["bytes"]
        graphs = m["files"].get(_core.PATTERN_FILES[2], {}).get("bytes", 0)
        print(
            f"substructure index present ({whole_text}{planes:,} bytes of pattern planes"
            f"{_each(planes, per)}; "
            + (
                f"{graphs:,} bytes of molecule graphs{_each(graphs, per)})"
                if graphs
                else "no molecule graphs: RDKit matches every candidate; rebuild with "
                "molsift index STORE --pattern)"
            )
        )
    else:
        print("substructure no index (molsift index STORE --pattern)")
    if store.has_analog_index:
        files = sum(e["bytes"] for name, e in m["files"].items() if name.startswith("analogs."))
        from ..analogs.search import _index

        try:  # the index as a search opens it; its count left out when it cannot be opened
            distinct = f"{plural(len(_index(store)), 'distinct skeleton')}; "
        except _core.MolsiftError:
            distinct = ""
        print(
            f"analogs     index present ({distinct}{files:,} bytes{_each(files, per)}; "
            "molsift analogs)"
        )
    else:
        print("analogs     no index (molsift index STORE --analogs)")
    print("lookup      exact-match index present (molsift lookup)")
    if per:
        print("\nbytes per molecule, by file:")
        for name, e in sorted(m["files"].items()):
            print(f"  {name:<24} {e['bytes'] / per:>8.3f}")
    else:  # no molecules: bytes per molecule would be the bytes themselves
        print("\nbytes by file (no molecules):")
        for name, e in sorted(m["files"].items()):
            print(f"  {name:<24} {e['bytes']:>8,}")
    _print_first(store, args.head)
    if c["rejected"]:
        print(f"\nrejected records are listed in {store.rejects_path}")
    return 0


def _set_info(store, args) -> int:
    """`molsift info SET`: the set's counts, and each shard's positions and bytes."""
    from ..store import file_bytes

    m = store.manifest
    sizes = [sum(file_bytes(s.manifest).values()) for s in store.shards]
    # the whole set, its own files too (rejects.tsv, duplicates.tsv), as ingest reports it
    by_file = file_bytes(m, [s.manifest for s in store.shards])
    total = sum(by_file.values())
    per = len(store)
    if args.json:  # each file's bytes, as a store's --json has them (shard files: shard-N/FILE)
        shards = [dict(rec, bytes=b) for rec, b in zip(m["shards"], sizes)]
        files = {
            name: {"bytes": b, "bytes_per_molecule": _ratio(b, per)}
            for name, b in sorted(by_file.items())
        }
        print(json.dumps({**m, "shards": shards, "sizes": {
            "bytes": total, "bytes_per_molecule": _ratio(total, per), "files": files},
            "first_molecules": _first(store, args.head)}, indent=2))  # fmt: skip
        return 0
    c, fp = m["counts"], m["fingerprint"]
    print(f"set         {store.path}")
    print(f"format      {m['format']} v{m['format_version']} ({m['created_by']})")
    dropped = f", duplicates left out {c['dropped']:,}" if c.get("dropped") else ""
    print(
        f"molecules   {c['molecules']:,}  "
        f"(records in {c['records_in']:,}, rejected {c['rejected']:,}{dropped})"
    )
    if c.get("dropped"):  # as a store's: where the left-out records are (set.json lists it)
        print(f"duplicates  {c['duplicates']:,}, left out and listed in "
              f"{os.path.join(store.path, 'duplicates.tsv')}")  # fmt: skip
    elif c.get("duplicates") is not None:
        print(
            f"duplicates  {c['duplicates']:,} (molecules whose canonical SMILES an earlier one had)"
        )
    print(f"fingerprint {fp['kind']} {fp['bits']} bits {json.dumps(fp['params'])}")
    print(f"size        {total:,} bytes{_each(total, per)}")
    files = sum(len(s.manifest["files"]) + 1 for s in store.shards) + len(m["files"]) + 1
    checked = (
        "not checked (--no-verify)" if args.no_verify else f"all {plural(files, 'file')} verified"
    )
    print(f"checksums   {checked}")
    flags = (("--no-pattern", store.has_pattern_index), ("--no-analogs", store.has_analog_index))
    missing = " and ".join(flag for flag, has in flags if not has)
    # `molsift index` refuses a set: say what adds the index instead
    how = f" (ingest the set again, --overwrite, without {missing})" if missing else ""
    print(f"indexes     substructure {'in every shard' if store.has_pattern_index else 'missing'}, "
          f"analogs {'in every shard' if store.has_analog_index else 'missing'}{how}")  # fmt: skip
    print(f"\n{plural(len(store.shards), 'shard')} (set positions first..last):")
    for rec, b in zip(m["shards"], sizes):
        n = rec["molecules"]
        span = f"{rec['offset']:,}..{rec['offset'] + n - 1:,}" if n else "(empty)"
        print(f"  {rec['name']}  {n:>12,} {noun(n, 'molecule'):<9}  {span:<24} {b:>14,} bytes")
    # as a store's info lists them: each file of the shards summed over the set, by its name
    summed: dict[str, int] = {}
    for name, b in by_file.items():
        base = name.rsplit("/", 1)[-1]
        summed[base] = summed.get(base, 0) + b
    print("\nbytes per molecule, by file (summed over the shards):" if per else
          "\nbytes by file, summed over the shards (no molecules):")  # fmt: skip
    for name, b in sorted(summed.items()):
        print(f"  {name:<24} {b / per:>8.3f}" if per else f"  {name:<24} {b:>8,}")
    _print_first(store, args.head)
    if c["rejected"]:  # as a store's info says it: the set's rejects.tsv holds them all
        print(f"\nrejected records are listed in {os.path.join(store.path, 'rejects.tsv')}")
    return 0


def _print_first(store, n: int) -> None:
    """The text's `first N molecules` list (a store's and a set's)."""
    rows = _first(store, n)
    if rows:
        print(
            f"\nfirst {plural(len(rows), 'molecule')} (position, id, canonical SMILES; stored in "
            "SMILES order):"
        )
        for r in rows:
            print(f"{r['position']:>8}  {r['id']:<12} {r['smiles']}")


def _first(store, n: int) -> list[dict]:
    """The first `n` molecules in store order, as the text's `first N molecules` lists them
    (position, id, canonical SMILES): --json left -n out."""
    return [
        {"position": i, "id": store.ids[i], "smiles": store.smiles[i]}
        for i in range(min(n, len(store)))
    ]


def _ratio(size: int, molecules: int) -> float | None:
    """Bytes per molecule for --json: None (null) for a store of no molecules."""
    return round(size / molecules, 3) if molecules else None


def _each(size: int, molecules: int) -> str:
    """', N bytes/molecule' after a size; nothing for a store of no molecules (an empty store
    said "74,491 bytes, 74491.0 bytes/molecule")."""
    return f", {size / molecules:.1f} bytes/molecule" if molecules else ""


def _shard_of_set(path: str) -> dict | None:
    """The set record of the store at `path` when it is a shard of a set (its directory's
    parent holds a set manifest that lists it), with the set's `path`; else None."""
    from .._core import StoreError
    from ..sets import is_set
    from ..sets.manifest import read_manifest

    parent = os.path.dirname(os.path.abspath(path))
    name = os.path.basename(os.path.abspath(path))
    if not is_set(parent):
        return None
    try:
        records = read_manifest(parent)["shards"]
    except StoreError:  # a damaged set manifest: `molsift info SET` says what is wrong with it
        return None
    return next(({**r, "path": parent} for r in records if r["name"] == name), None)
