"""The store corrupter: builds one small store (with its column index) and two donors (other
molecules; --bits 1024) once, then damages every file of a copy (truncate, flip bytes with
several seeds, delete, swap in the donors' file, change version fields) and runs `info` and
`search` (-t and -k) and `substructure` (SMILES and SMARTS queries). A case passes only when
each command fails with one clear `molsift: error:` line naming the file, or prints exactly what
it prints for the undamaged store. `lookup` does not exist yet: not run."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

from .common import BUNDLED_SMI, DIFFERENT, FAIL, OK, Case, judge_exit, run_cli, text

KIND = "corrupter"
QUERIES = [
    "CC(=O)Nc1ccc(O)cc1",
    "CC1=CC(=O)C=CC1=O",
    "c1ccc2sc(SSc3nc4ccccc4s3)nc2c1",
    "O=[N+]([O-])c1ccccc1",
]
MOLECULES = 300
SUBSTRUCTURE = ["-q", "c1ccccc1", "-q", "[N+](=O)[O-]", "-q", "[#7;R]", "-q", "C(=O)N"]


def _subset(path: Path, first: int, n: int) -> None:
    lines = BUNDLED_SMI.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[first : first + n]))


def build_stores(workdir: Path) -> dict[str, Path]:
    """base (300 NCI molecules), other (the next 300), bits1024 (base's molecules, 1024 bits)."""
    workdir.mkdir(parents=True, exist_ok=True)
    a, b = workdir / "a.smi", workdir / "b.smi"
    _subset(a, 0, MOLECULES)
    _subset(b, MOLECULES, MOLECULES)
    stores = {
        "base": workdir / "base.store",
        "other": workdir / "other.store",
        "bits1024": workdir / "bits1024.store",
    }
    for name, (inp, extra) in {
        "base": (a, []),
        "other": (b, []),
        "bits1024": (a, ["--bits", "1024"]),
    }.items():
        if not (stores[name] / "manifest.json").exists():
            proc = run_cli(
                ["ingest", inp, "-o", stores[name], "-q", "-j", "1", *extra], timeout=120
            )
            if proc.returncode != 0:
                raise RuntimeError(f"cannot build the {name} store: {text(proc.stderr)}")
    return stores


def commands(store: Path) -> dict[str, list]:
    qs = [x for q in QUERIES for x in ("-q", q)]
    return {
        "info": ["info", store],
        "search -t": ["search", store, *qs, "-t", "0.3"],
        "search -k": ["search", store, *qs, "-k", "7"],
        "substructure": ["substructure", store, *SUBSTRUCTURE, "-j", "1"],
    }


def _normal(verb: str, out: str, store: Path) -> str:
    """info's output without the lines that name the path or the column index's presence."""
    out = out.replace(str(store), "STORE")
    if verb == "info":
        drop = ("store ", "search ", "substructure ")
        out = "\n".join(ln for ln in out.splitlines() if not ln.startswith(drop))
    return out


def baseline(stores: dict[str, Path]) -> dict[str, str]:
    base = stores["base"]
    result = {}
    for verb, args in commands(base).items():
        proc = run_cli(args, timeout=60)
        if proc.returncode != 0:
            raise RuntimeError(f"{verb} fails on the undamaged store: {text(proc.stderr)}")
        result[verb] = _normal(verb, text(proc.stdout), base)
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
    """(name, how) pairs; how(path, stores) damages one file of a store copy."""
    seeds = range(5) if long else range(1)
    out = [
        ("truncate-half", lambda p, s: _truncate(p, 0.5)),
        ("truncate-last-byte", lambda p, s: _truncate(p, 1.0)),
        ("truncate-empty", lambda p, s: _truncate(p, 0.0)),
        ("delete", lambda p, s: p.unlink()),
        ("swap-other", lambda p, s: _swap(p, s["other"])),
        ("swap-bits1024", lambda p, s: _swap(p, s["bits1024"])),
    ]
    for seed in seeds:
        out.append((f"flip1-seed{seed}", lambda p, s, seed=seed: _flip(p, seed, 1)))
        out.append((f"flip8-seed{seed}", lambda p, s, seed=seed: _flip(p, seed, 8)))
    return out


VERSIONS = ["1", -1, 0, 2, 2**40, None]


def all_specs(files: list[str], long: bool) -> list[tuple[str, str]]:
    """(file, corruption) for every file of the store x every corruption, plus version edits of
    the two JSON headers."""
    specs = [(f, name) for f in files for name, _ in corruptions(long)]
    for f in ("manifest.json", "columns.json", "pattern.json"):
        if f in files:
            specs += [(f, f"version={v!r}") for v in VERSIONS]
    return specs


def short_specs(files: list[str]) -> list[tuple[str, str]]:
    """The short run: every file once, the corruptions taken in turn, plus two version edits."""
    names = [name for name, _ in corruptions(False)]
    return [(f, names[i % len(names)]) for i, f in enumerate(files)] + [
        ("manifest.json", "version=2"),
        ("columns.json", "version=-1"),
        ("pattern.json", "version=2"),
    ]


def _damage(copy: Path, filename: str, corruption: str, stores) -> None:
    path = copy / filename
    if corruption.startswith("version="):
        _set_version(path, eval(corruption.split("=", 1)[1]))
        return
    dict(corruptions(True))[corruption](path, stores)


def run_spec(
    workdir: Path, stores, expected: dict[str, str], filename: str, corruption: str
) -> list[Case]:
    name = f"{filename}:{corruption}"
    copy = workdir / "damaged.store"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(stores["base"], copy)
    original = (copy / filename).read_bytes()
    _damage(copy, filename, corruption, stores)
    target = copy / filename
    if target.exists() and target.read_bytes() == original:
        return [Case(KIND, f"{name} (no change: same bytes)", OK)]
    damaged_index_gone = filename == "columns.json" and corruption == "delete"
    same_json = _same_json(target, original)
    cases = []
    for verb, args in commands(copy).items():
        proc = run_cli(args, timeout=60)
        case = f"{name} {verb}"
        # a manifest from elsewhere may rightly be reported as a mismatch of the files it lists
        judged = judge_exit(
            KIND, case, proc, [filename] + ([str(copy)] if filename == "manifest.json" else [])
        )
        if judged:
            cases.append(judged)
        elif verb == "info" and not damaged_index_gone and not same_json:
            cases.append(
                Case(
                    KIND,
                    case,
                    FAIL,
                    DIFFERENT,
                    "info exits 0 (checks passed) on a store with a damaged file",
                )
            )
        elif _normal(verb, text(proc.stdout), copy) != expected[verb]:
            cases.append(
                Case(
                    KIND,
                    case,
                    FAIL,
                    DIFFERENT,
                    f"exit 0 with output differing from the undamaged store's: "
                    f"{_first_difference(_normal(verb, text(proc.stdout), copy), expected[verb])}",
                )
            )
        else:
            cases.append(Case(KIND, case, OK))
    shutil.rmtree(copy, ignore_errors=True)
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


def store_files(stores) -> list[str]:
    return sorted(os.listdir(stores["base"]))


def run(workdir: Path, long: bool, log=print) -> list[Case]:
    stores = build_stores(workdir)
    expected = baseline(stores)
    cases = []
    files = store_files(stores)
    for filename, corruption in all_specs(files, True) if long else short_specs(files):
        for c in run_spec(workdir, stores, expected, filename, corruption):
            log(c)
            cases.append(c)
    return cases
