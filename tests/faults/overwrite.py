"""Overwrite safety: `ingest proj/lib.smi -o proj --overwrite` onto an ordinary directory that
holds the input and a README must fail with a clear error and delete nothing; `-o FILE
--overwrite` onto a regular file must fail cleanly and leave nothing behind; `--overwrite` of a
real store must work (the new store, no leftovers)."""

from __future__ import annotations

import shutil
from pathlib import Path

from .common import (
    BUNDLED_SMI,
    DELETED,
    FAIL,
    LEFTOVERS,
    OK,
    REFUSED,
    UNCLEAR,
    WRONG,
    Case,
    check_status,
    clear_error,
    hidden_siblings,
    run_cli,
    text,
)

KIND = "overwrite"


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _lib(path: Path, first: int = 0, n: int = 100) -> Path:
    path.write_bytes(
        b"".join(BUNDLED_SMI.read_bytes().splitlines(keepends=True)[first : first + n])
    )
    return path


def _refused(case: str, proc, names, before, after, left) -> Case:
    bad = check_status(KIND, case, proc, allowed=(0, 2))
    if bad:
        return bad
    lost = sorted(set(before) - set(after)) + sorted(
        k for k in before if k in after and after[k] != before[k]
    )
    if lost:
        return Case(
            KIND, case, FAIL, DELETED, f"exit {proc.returncode}; deleted or changed: {lost[:5]}"
        )
    if proc.returncode == 0:
        return Case(KIND, case, FAIL, WRONG, "exit 0: wrote a store over something that is not one")
    why = clear_error(proc, names)
    if why:
        return Case(KIND, case, FAIL, UNCLEAR, why)
    if left:
        return Case(KIND, case, FAIL, LEFTOVERS, f"left behind: {left}")
    return Case(KIND, case, REFUSED)


def ordinary_directory(workdir: Path) -> Case:
    proj = workdir / "proj"
    shutil.rmtree(proj, ignore_errors=True)
    proj.mkdir(parents=True)
    _lib(proj / "lib.smi")
    (proj / "README").write_text("my project\n")
    (proj / "notes").mkdir()
    (proj / "notes" / "a.txt").write_text("keep me\n")
    before = _snapshot(proj)
    proc = run_cli(
        ["ingest", "proj/lib.smi", "-o", "proj", "--overwrite", "-q", "-j", "1"], cwd=workdir
    )
    after = _snapshot(proj)
    extra = sorted(set(after) - set(before))
    return _refused(
        "ingest proj/lib.smi -o proj --overwrite",
        proc,
        ["proj"],
        before,
        after,
        hidden_siblings(proj) + extra,
    )


def regular_file(workdir: Path) -> Case:
    target = workdir / "notes.txt"
    target.write_text("a regular file, not a store\n")
    lib = _lib(workdir / "ow.smi")
    before = {"notes.txt": target.read_bytes(), "ow.smi": lib.read_bytes()}
    proc = run_cli(
        ["ingest", lib.name, "-o", target.name, "--overwrite", "-q", "-j", "1"], cwd=workdir
    )
    after = {k: (workdir / k).read_bytes() for k in before if (workdir / k).is_file()}
    return _refused(
        "ingest -o regular_file --overwrite",
        proc,
        ["notes.txt"],
        before,
        after,
        hidden_siblings(target),
    )


def real_store(workdir: Path) -> Case:
    case = "ingest -o existing_store --overwrite"
    a, b = _lib(workdir / "owA.smi", 0, 100), _lib(workdir / "owB.smi", 100, 120)
    store = workdir / "ow.store"
    shutil.rmtree(store, ignore_errors=True)
    first = run_cli(["ingest", a.name, "-o", store.name, "-q", "-j", "1"], cwd=workdir)
    if first.returncode != 0:
        return Case(KIND, case, FAIL, WRONG, f"first ingest failed: {text(first.stderr)[-160:]}")
    proc = run_cli(
        ["ingest", b.name, "-o", store.name, "--overwrite", "-q", "-j", "1"], cwd=workdir
    )
    bad = check_status(KIND, case, proc, allowed=(0,))
    if bad:
        return bad
    info = run_cli(["info", store.name, "--json"], cwd=workdir)
    if info.returncode != 0:
        return Case(
            KIND, case, FAIL, WRONG, f"info fails on the new store: {text(info.stderr)[-160:]}"
        )
    import json

    if json.loads(text(info.stdout))["counts"]["molecules"] != 120:
        return Case(KIND, case, FAIL, WRONG, "the store was not replaced by the new one")
    if hidden_siblings(store) or not a.exists() or not b.exists():
        return Case(KIND, case, FAIL, LEFTOVERS, f"left behind: {hidden_siblings(store)}")
    return Case(KIND, case, OK)


def store_inside_project(workdir: Path) -> Case:
    """--overwrite of a store nested in a project directory replaces only the store."""
    case = "ingest -o proj2/lib.store --overwrite (store inside a project)"
    proj = workdir / "proj2"
    shutil.rmtree(proj, ignore_errors=True)
    proj.mkdir()
    lib = _lib(proj / "lib.smi")
    (proj / "README").write_text("mine\n")
    first = run_cli(
        ["ingest", "proj2/lib.smi", "-o", "proj2/lib.store", "-q", "-j", "1"], cwd=workdir
    )
    before = {k: v for k, v in _snapshot(proj).items() if not k.startswith("lib.store")}
    proc = run_cli(
        ["ingest", "proj2/lib.smi", "-o", "proj2/lib.store", "--overwrite", "-q", "-j", "1"],
        cwd=workdir,
    )
    after = {k: v for k, v in _snapshot(proj).items() if not k.startswith("lib.store")}
    bad = (
        check_status(KIND, case, proc, allowed=(0,))
        if first.returncode == 0
        else Case(KIND, case, FAIL, WRONG, "first ingest failed")
    )
    if bad:
        return bad
    if before != after or not lib.exists():
        return Case(KIND, case, FAIL, DELETED, "files beside the store were deleted or changed")
    return Case(KIND, case, OK)


CHECKS = {
    "ordinary_directory": ordinary_directory,
    "regular_file": regular_file,
    "real_store": real_store,
    "store_inside_project": store_inside_project,
}


def run(workdir: Path, long: bool, log=print) -> list[Case]:
    workdir.mkdir(parents=True, exist_ok=True)
    cases = []
    for fn in CHECKS.values():
        c = fn(workdir)
        log(c)
        cases.append(c)
    return cases
