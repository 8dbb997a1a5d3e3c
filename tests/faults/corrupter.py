"""The store corrupter: builds one small store of each format the code reads (the one store,
version 2 with every index, as `molsift ingest` writes it; and version 1 with its column,
substructure and analog indexes, the staging format that only `molsift upgrade` reads, made by
`molsift.ingestion.ingest(..., version=1)`) and their donors once, then damages every file of a
copy (truncate, flip bits with several seeds, zero a 4 KiB page, delete, swap in a donor's
file: the same molecules in another input order, which gives files of equal size, the next
molecules, the same molecules at `--bits 1024`; change version fields). On the one store it
runs every verb that reads a store: `info`, `search` (-t and -k), `lookup` (SMILES and
`--ids`), `substructure`, `analogs`, and the server's exact search (`serve_probe.py`); on
version 1, `upgrade`. A case passes only when the command fails with one clear `molsift:
error:` line naming the file, or prints (and exits with) exactly what it prints for the
undamaged store (for `upgrade`: writes a store identical, file for file, to the undamaged
store's upgrade; a refused upgrade leaves nothing at its output); `info` must refuse every
store whose bytes changed."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

from .common import (
    BUNDLED_SMI,
    DIFFERENT,
    FAIL,
    LEFTOVERS,
    OK,
    REFUSED,
    UNCLEAR,
    Case,
    check_status,
    clear_error,
    run_cli,
    text,
)

KIND = "corrupter"
QUERIES = [
    "CC(=O)Nc1ccc(O)cc1",
    "CC1=CC(=O)C=CC1=O",
    "c1ccc2sc(SSc3nc4ccccc4s3)nc2c1",
    "O=[N+]([O-])c1ccccc1",
]
MOLECULES = 300
SUBSTRUCTURE = ["-q", "c1ccccc1", "-q", "[N+](=O)[O-]", "-q", "[#7;R]", "-q", "C(=O)N"]
ANALOGS = ["-q", "CC(=O)Nc1ccc(O)cc1", "-q", "c1ccccc1CCO", "--dist", "2", "-k", "10"]
#: the store formats the code reads: "v2" the one store (every verb), "v1" the staging format
#: (only `molsift upgrade` reads it)
FORMATS = ("v2", "v1")
DONORS = ("shuffled", "other", "bits1024")
VERSION_FILES = ("manifest.json", "columns.json", "pattern.json", "analogs.json", "planes.json")


def _lines() -> list[bytes]:
    return BUNDLED_SMI.read_bytes().splitlines(keepends=True)


def build_stores(workdir: Path) -> dict[str, Path]:
    """For each format F: `F:base` (300 NCI molecules), `F:shuffled` (the same molecules in
    another input order: most files of equal size), `F:other` (the next 300), `F:bits1024`
    (base's molecules, 1024 bits); plus `ids` (a file of ids for `lookup --ids`). Version 2 is
    `molsift ingest`'s store (every index); version 1 is `ingest(..., version=1)`'s, with its
    column, substructure and analog indexes."""
    workdir.mkdir(parents=True, exist_ok=True)
    lines = _lines()
    base = lines[:MOLECULES]
    shuffled = base[:]
    random.Random(5).shuffle(shuffled)
    inputs = {
        "base": (base, 2048),
        "shuffled": (shuffled, 2048),
        "other": (lines[MOLECULES : 2 * MOLECULES], 2048),
        "bits1024": (base, 1024),
    }
    stores: dict[str, Path] = {}
    for name, (body, bits) in inputs.items():
        smi = workdir / f"{name}.smi"
        smi.write_bytes(b"".join(body))
        v2, v1 = workdir / f"{name}.store", workdir / f"{name}.v1.store"
        stores[f"v2:{name}"], stores[f"v1:{name}"] = v2, v1
        if not (v2 / "manifest.json").exists():
            args = ["ingest", smi, "-o", v2, "-q", "-j", "1", "--bits", bits]
            proc = run_cli(args, timeout=300)
            if proc.returncode != 0:
                raise RuntimeError(f"cannot build the {name} store: {text(proc.stderr)}")
        if not (v1 / "manifest.json").exists():
            proc = run_cli([V1_INGEST, smi, v1, bits], timeout=300, program=[sys.executable, "-c"])
            if proc.returncode != 0:
                raise RuntimeError(f"cannot build the {name} version-1 store: {text(proc.stderr)}")
    ids = workdir / "ids.txt"
    ids.write_text("".join(ln.split()[-1].decode() + "\n" for ln in base[:: MOLECULES // 6]))
    ids.write_text(ids.read_text() + "no-such-id\n")
    stores["ids"] = ids
    return stores


#: a version-1 store with every index (the staging format; no CLI writes it): SMI OUT BITS
V1_INGEST = (
    "import sys\n"
    "from molsift import FingerprintSpec, ingestion\n"
    "ingestion.ingest(sys.argv[1], sys.argv[2], workers=1, progress=False, version=1,\n"
    "    fingerprint=FingerprintSpec(bits=int(sys.argv[3])), pattern=True, analogs=True)\n"
)


def upgraded(store: Path) -> Path:
    """Where the corrupter's `upgrade` of `store` writes (removed before and after each run)."""
    return store.parent / f"{store.name}.upgraded"


def commands(store: Path, ids: Path, fmt: str = "v2") -> dict[str, list]:
    """Every verb that reads a store of format `fmt`, by name: its molsift arguments (or
    `probe` arguments, run by serve_probe). Version 1 is read only by `upgrade`."""
    if fmt == "v1":
        return {"upgrade": ["upgrade", store, "-o", upgraded(store)]}
    qs = [x for q in QUERIES for x in ("-q", q)]
    return {
        "info": ["info", store],
        "search -t": ["search", store, *qs, "-t", "0.3"],
        "search -k": ["search", store, *qs, "-k", "7"],
        "lookup": ["lookup", store, *qs, "-q", "CCO"],
        "lookup --ids": ["lookup", store, "--ids", ids],
        "substructure": ["substructure", store, *SUBSTRUCTURE, "-j", "1"],
        "analogs": ["analogs", store, *ANALOGS],
        "serve exact": ["probe", store, *QUERIES, "CCO"],
    }


def run_command(args: list, timeout: float = 60) -> subprocess.CompletedProcess:
    """One verb of `commands`: the molsift CLI, or the server probe (run from tests/); an
    upgrade's output is removed first (what it wrote is read by `_outcome`)."""
    if args[0] == "upgrade":
        shutil.rmtree(args[-1], ignore_errors=True)
    if args[0] != "probe":
        return run_cli(args, timeout=timeout)
    probe = [sys.executable, "-m", "faults.serve_probe"]
    return run_cli(args[1:], Path(__file__).resolve().parent.parent, timeout, program=probe)


def _normal(verb: str, out: str, store: Path) -> str:
    """A command's output without the store's path (the server's: its database name), and for
    info without the lines that name the path or say which indexes are present."""
    out = out.replace(str(store), "STORE")
    if verb == "serve exact":
        from molsift.serve.catalog import default_name

        name = default_name(str(store))
        out = out.replace(f'"{name}"', '"NAME"').replace(f"'{name}'", "'NAME'")
    if verb == "info":
        drop = ("store ", "search ", "substructure ", "analogs ")
        out = "\n".join(ln for ln in out.splitlines() if not ln.startswith(drop))
    return out


def _outcome(verb: str, proc, store: Path) -> tuple:
    """What a run is compared by: exit status and output (stdout; for an error, exit 2, its
    error lines too; for `upgrade`, the store it wrote: each file's name and bytes)."""
    out = _normal(verb, text(proc.stdout), store)
    if verb == "upgrade":
        out = _listing(upgraded(store))
    err = ""
    if proc.returncode == 2:
        err = "\n".join(
            ln for ln in _normal(verb, text(proc.stderr), store).splitlines() if "error" in ln
        )
    return proc.returncode, out, err


def _listing(store: Path) -> str:
    """A written store as text: each file's name and SHA-256 of its bytes (empty when none)."""
    if not store.is_dir():
        return ""
    return "\n".join(
        f"{p.name} {hashlib.sha256(p.read_bytes()).hexdigest()}" for p in sorted(store.iterdir())
    )


def baseline(stores: dict[str, Path]) -> dict[str, dict[str, tuple]]:
    """Per format, per verb: the outcome on the undamaged store, where every verb must
    succeed (a lookup or analogs that finds nothing exits 1)."""
    result: dict[str, dict[str, tuple]] = {}
    for fmt in FORMATS:
        base = stores[f"{fmt}:base"]
        result[fmt] = {}
        for verb, args in commands(base, stores["ids"], fmt).items():
            proc = run_command(args)
            bad = check_status(KIND, verb, proc, allowed=(0, 1))
            if bad:
                raise RuntimeError(f"{verb} on the undamaged {fmt} store: {text(proc.stderr)}")
            result[fmt][verb] = _outcome(verb, proc, base)
            if verb == "upgrade":
                shutil.rmtree(upgraded(base), ignore_errors=True)
                if not result[fmt][verb][1]:
                    raise RuntimeError(f"upgrade of the undamaged {fmt} store wrote nothing")
    return result


# ---------------------------------------------------------------- corruptions


def _flip(path: Path, seed: int, n: int) -> None:
    b = bytearray(path.read_bytes())
    if not b:
        return
    rng = random.Random(f"{path.name}:{seed}")
    for _ in range(n):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(b))


def _zero_page(path: Path, where: float) -> None:
    """Zeroes the 4 KiB page at `where` (0 to 1) of the file (a whole short file)."""
    b = bytearray(path.read_bytes())
    start = (int(len(b) * where) // 4096) * 4096
    b[start : start + 4096] = bytes(len(b[start : start + 4096]))
    path.write_bytes(bytes(b))


def _truncate(path: Path, fraction: float) -> None:
    size = path.stat().st_size
    os.truncate(path, int(size * fraction) if fraction < 1 else max(0, size - 1))


def _swap(path: Path, donor: Path) -> None:
    src = donor / path.name
    if src.exists():
        shutil.copyfile(src, path)
    else:
        path.unlink()


def _set_version(path: Path, value) -> None:
    doc = json.loads(path.read_text())
    key = "format_version" if "format_version" in doc else "version"
    doc[key] = value
    path.write_text(json.dumps(doc, indent=2))


def corruptions(long: bool) -> list[tuple[str, object]]:
    """(name, how) pairs; how(path, donors) damages one file of a store copy (donors: the
    donor stores of the same format, by name)."""
    seeds = range(3) if long else range(1)
    out = [
        ("truncate-half", lambda p, d: _truncate(p, 0.5)),
        ("truncate-last-byte", lambda p, d: _truncate(p, 1.0)),
        ("truncate-empty", lambda p, d: _truncate(p, 0.0)),
        ("delete", lambda p, d: p.unlink()),
        ("zero-first-page", lambda p, d: _zero_page(p, 0.0)),
        ("zero-middle-page", lambda p, d: _zero_page(p, 0.5)),
    ]
    out += [(f"swap-{name}", lambda p, d, name=name: _swap(p, d[name])) for name in DONORS]
    for seed in seeds:
        out.append((f"flip1-seed{seed}", lambda p, d, seed=seed: _flip(p, seed, 1)))
        out.append((f"flip8-seed{seed}", lambda p, d, seed=seed: _flip(p, seed, 8)))
    return out


VERSIONS = ["1", -1, 0, 2, 2**40, None]


def all_specs(files: dict[str, list[str]], long: bool) -> list[tuple[str, str, str]]:
    """(format, file, corruption) for every file of each format's store x every corruption,
    plus version edits of the JSON headers."""
    specs = []
    for fmt, names in files.items():
        specs += [(fmt, f, name) for f in names for name, _ in corruptions(long)]
        for f in VERSION_FILES:
            if f in names:
                specs += [(fmt, f, f"version={v!r}") for v in VERSIONS]
    return specs


def short_specs(files: dict[str, list[str]]) -> list[tuple[str, str, str]]:
    """The short run: every file of each format once, the corruptions taken in turn, plus a
    version edit of each JSON header."""
    names = [name for name, _ in corruptions(False)]
    specs, k = [], 0
    for fmt, listed in files.items():
        for f in listed:
            specs.append((fmt, f, names[k % len(names)]))
            k += 1
        for i, f in enumerate(x for x in VERSION_FILES if x in listed):
            specs.append((fmt, f, f"version={VERSIONS[(i + 3) % len(VERSIONS)]!r}"))
    return specs


def _damage(copy: Path, filename: str, corruption: str, donors) -> None:
    path = copy / filename
    if corruption.startswith("version="):
        _set_version(path, eval(corruption.split("=", 1)[1]))
        return
    dict(corruptions(True))[corruption](path, donors)


def judge(case: str, verb: str, proc, expected: tuple, copy: Path, names: list[str]) -> Case:
    """ok: the undamaged store's outcome; refused cleanly: exit 2 with one error line naming
    the file; else FAIL."""
    bad = check_status(KIND, case, proc, allowed=(0, 1, 2))
    if bad:
        return bad
    got = _outcome(verb, proc, copy)
    if got == expected:
        return Case(KIND, case, OK)
    if proc.returncode == 2:
        if verb == "upgrade" and os.path.lexists(upgraded(copy)):
            return Case(KIND, case, FAIL, LEFTOVERS, "a refused upgrade left its output behind")
        why = clear_error(proc, names)
        return Case(KIND, case, FAIL, UNCLEAR, why) if why else Case(KIND, case, REFUSED)
    if verb == "upgrade":
        differ = sorted(set(got[1].splitlines()) ^ set(expected[1].splitlines()))
        files = sorted({ln.split()[0] for ln in differ})
        why = f"exit {proc.returncode}, a store unlike the undamaged store's upgrade: {files}"
        return Case(KIND, case, FAIL, DIFFERENT, why)
    return Case(
        KIND,
        case,
        FAIL,
        DIFFERENT,
        f"exit {proc.returncode} with output differing from the undamaged store's: "
        f"{_first_difference(got[1], expected[1])}",
    )


def run_spec(
    workdir: Path, stores, expected: dict, fmt: str, filename: str, corruption: str
) -> list[Case]:
    name = f"{fmt}/{filename}:{corruption}"
    copy = workdir / f"damaged-{fmt}.store"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(stores[f"{fmt}:base"], copy)
    original = (copy / filename).read_bytes()
    donors = {d: stores[f"{fmt}:{d}"] for d in DONORS}
    _damage(copy, filename, corruption, donors)
    target = copy / filename
    if target.exists() and target.read_bytes() == original:
        # the corruption leaves these bytes as they were (an empty file): a line appended
        # instead, so that every file is damaged
        with open(target, "ab") as fh:
            fh.write(b"damaged\n")
        name += " (same bytes: a line appended instead)"
    same_json = _same_json(target, original)
    # a manifest from elsewhere may rightly be reported as a mismatch of the files it lists
    names = [filename] + ([copy.name] if filename == "manifest.json" else [])
    cases = []
    for verb, args in commands(copy, stores["ids"], fmt).items():
        proc = run_command(args)
        case = f"{name} {verb}"
        if verb == "info" and proc.returncode == 0 and not same_json:
            got = Case(
                KIND, case, FAIL, DIFFERENT, "info exits 0 (checks passed) on a damaged store"
            )
        else:
            got = judge(case, verb, proc, expected[fmt][verb], copy, names)
        cases.append(got)
    shutil.rmtree(copy, ignore_errors=True)
    shutil.rmtree(upgraded(copy), ignore_errors=True)
    return cases


def _same_json(path: Path, original: bytes) -> bool:
    """True when a JSON header was changed only in whitespace (the same document)."""
    if path.suffix != ".json" or not path.exists():
        return False
    try:
        return json.loads(path.read_bytes()) == json.loads(original)
    except ValueError:
        return False


def _first_difference(got: str, want: str) -> str:
    g, w = got.splitlines(), want.splitlines()
    for i, (a, b) in enumerate(zip(g, w)):
        if a != b:
            return f"line {i + 1}: {a[:70]!r} instead of {b[:70]!r}"
    return f"{len(g)} lines instead of {len(w)}"


def store_files(stores) -> dict[str, list[str]]:
    """Each format's files, as its base store holds them."""
    return {fmt: sorted(os.listdir(stores[f"{fmt}:base"])) for fmt in FORMATS}


def run(workdir: Path, long: bool, log=print) -> list[Case]:
    stores = build_stores(workdir)
    expected = baseline(stores)
    cases = []
    specs = all_specs(store_files(stores), True) if long else short_specs(store_files(stores))
    for spec in specs:
        for c in run_spec(workdir, stores, expected, *spec):
            log(c)
            cases.append(c)
    return cases
