"""Concurrent runs on one path: searches while `ingest --overwrite` replaces the store (each
answer must be the old store's or the new store's, or a clear error); readers of every verb
(info, search, lookup, lookup --ids, substructure, analogs, the server's exact search) while
each rewrite of the one store runs (`ingest --overwrite`, `upgrade --overwrite` from version-1
stores, `index --pattern`, `index --analogs`): each answer is one generation's; several
`molsift index` of each kind on one store at once (each succeeds or fails cleanly; afterwards
`info` passes and search and the rebuilt index's search answer right), and several ingests to
one output path (one wins, or all succeed leaving one valid store; never a corrupt store, never
a file outside the store deleted)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .common import (
    BUNDLED_SMI,
    DELETED,
    DIFFERENT,
    FAIL,
    LEFTOVERS,
    OK,
    WRONG,
    Case,
    check_status,
    cli_env,
    hidden_siblings,
    judge_exit,
    kill_marked,
    last_line,
    molsift_cmd,
    run_cli,
    text,
    wait_until,
)

KIND = "concurrency"
QUERY = ["-q", "CC(=O)Nc1ccc(O)cc1", "-q", "c1ccc2sc(SSc3nc4ccccc4s3)nc2c1", "-k", "5"]


def _lib(workdir: Path, name: str, first: int, n: int) -> Path:
    path = workdir / name
    path.write_bytes(
        b"".join(BUNDLED_SMI.read_bytes().splitlines(keepends=True)[first : first + n])
    )
    return path


def _popen(args, cwd, marker) -> subprocess.Popen:
    return subprocess.Popen(
        molsift_cmd() + [str(a) for a in args],
        cwd=cwd,
        env=cli_env(marker),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )


def _finish(p: subprocess.Popen, timeout=300) -> subprocess.CompletedProcess:
    try:
        out, err = p.communicate(timeout=timeout)
        return subprocess.CompletedProcess(p.args, p.returncode, out, err)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return subprocess.CompletedProcess(p.args, None, out, err)


def _judge_all(label: str, done, path: Path) -> list[Case]:
    """One case per finished concurrent run: ok, refused cleanly, or FAIL."""
    return [
        judge_exit(KIND, f"{label} run {i}", proc, [path.name])
        or Case(KIND, f"{label} run {i}", OK)
        for i, proc in enumerate(done)
    ]


def _search(store: Path, cwd) -> subprocess.CompletedProcess:
    return run_cli(["search", store.name, *QUERY], cwd=cwd, timeout=60)


def search_during_overwrite(workdir: Path, rounds: int, searches: int = 6) -> list[Case]:
    """Each round: ingest A (1500 molecules), then `ingest B --overwrite` (other 1500) while
    `searches` searches run one after another; each search is the old answer, the new one, or a
    clear error."""
    a = _lib(workdir, "cA.smi", 0, 1500)
    b = _lib(workdir, "cB.smi", 1500, 1500)
    store = workdir / "race.store"
    shutil.rmtree(store, ignore_errors=True)
    answers = {}
    for name, lib in (("old", a), ("new", b)):
        proc = run_cli(
            ["ingest", lib.name, "-o", store.name, "-q", "-j", "2", "--overwrite"], cwd=workdir
        )
        assert proc.returncode == 0, text(proc.stderr)
        answers[name] = text(_search(store, workdir).stdout)
    cases = []
    for r in range(rounds):
        libs = (a, b) if r % 2 == 0 else (b, a)
        run_cli(
            ["ingest", libs[0].name, "-o", store.name, "-q", "-j", "2", "--overwrite"], cwd=workdir
        )
        marker = f"faultsc{os.getpid()}r{r}"
        writer = _popen(
            ["ingest", libs[1].name, "-o", store.name, "-q", "-j", "2", "--overwrite"],
            workdir,
            marker,
        )
        results = []
        while writer.poll() is None or len(results) < 2:
            results.append(_search(store, workdir))
            if len(results) >= searches and writer.poll() is not None:
                break
        w = _finish(writer)
        bad = check_status(KIND, f"overwrite round {r} ingest", w, allowed=(0,))
        cases.append(bad or Case(KIND, f"overwrite round {r} ingest", OK))
        for i, proc in enumerate(results):
            case = f"overwrite round {r} search {i}"
            judged = judge_exit(KIND, case, proc, [store.name])
            if judged:
                cases.append(judged)
            elif text(proc.stdout) not in answers.values():
                cases.append(
                    Case(
                        KIND,
                        case,
                        FAIL,
                        DIFFERENT,
                        "answer is neither the old store's nor the new store's",
                    )
                )
            else:
                cases.append(Case(KIND, case, OK))
        kill_marked(marker)
    return cases


#: each rewrite of the one store: its command for generation `gen` (0 or 1) of `target` (`v1`:
#: the two version-1 stores `upgrade` reads, by generation); an index rebuilt is the same
#: generation
REWRITES = {
    "ingest --overwrite": lambda target, gen, libs, v1: [
        "ingest", libs[gen], "-o", target, "-q", "-j", "1", "--overwrite"],
    "upgrade --overwrite": lambda target, gen, libs, v1: [
        "upgrade", v1[gen], "-o", target, "--overwrite"],
    "index --pattern": lambda target, gen, libs, v1: ["index", target, "--pattern", "-j", "1"],
    "index --analogs": lambda target, gen, libs, v1: ["index", target, "--analogs", "-j", "1"],
}  # fmt: skip


#: a writer running molsift command lines one after another (JSON on argv), stopping at the
#: first that fails (its stderr passed on)
_SERIAL = (
    "import json, subprocess, sys\n"
    "for args in json.loads(sys.argv[1]):\n"
    "    p = subprocess.run([sys.executable, '-m', 'molsift', *args], stderr=subprocess.PIPE)\n"
    "    if p.returncode:\n"
    "        sys.stderr.buffer.write(p.stderr)\n"
    "        sys.exit(p.returncode)\n"
)


def readers_during_rewrites(workdir: Path, rounds: int, rewrites: int = 4) -> list[Case]:
    """For each rewrite of a store: the store at generation 0, then `rewrites` rewrites in a
    row (generations 1, 0, 1, ...; a rebuilt index is the same generation) while readers of
    every verb run one after another; each reader's outcome (exit status and output, as the
    corrupter compares them) must be one of the generations': the store is swapped whole, so a
    reader never finds it missing, half-built or unreadable."""
    from .corrupter import V1_INGEST, _outcome, commands, run_command

    libs = [_lib(workdir, f"rw{g}.smi", 600 * g, 600) for g in (0, 1)]
    one = [workdir / f"rw{g}.store" for g in (0, 1)]  # ingest's
    v1 = [workdir / f"rw{g}.v1.store" for g in (0, 1)]
    upgraded = [workdir / f"rw{g}.upgraded.store" for g in (0, 1)]
    for g in (0, 1):
        if not (one[g] / "manifest.json").exists():
            proc = run_cli(["ingest", libs[g], "-o", one[g], "-q", "-j", "2"])
            assert proc.returncode == 0, text(proc.stderr)
        if not (v1[g] / "manifest.json").exists():
            proc = run_cli([V1_INGEST, libs[g], v1[g], 2048], program=[sys.executable, "-c"])
            assert proc.returncode == 0, text(proc.stderr)
        if not (upgraded[g] / "manifest.json").exists():
            proc = run_cli(["upgrade", v1[g], "-o", upgraded[g]])
            assert proc.returncode == 0, text(proc.stderr)
    ids = workdir / "rw.ids"
    ids.write_text("".join(ln.split()[-1] + "\n" for ln in libs[0].read_text().splitlines()[::97]))
    cases = []
    for kind, command in REWRITES.items():
        gens = {"ingest --overwrite": one, "upgrade --overwrite": upgraded}.get(kind, one[:1])
        target = workdir / "rw-target.store"
        verbs = commands(target, ids)
        expected = {verb: set() for verb in verbs}
        for g in gens:
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(g, target)
            for verb, args in verbs.items():
                expected[verb].add(_outcome(verb, run_command(args), target))
        for r in range(rounds):
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(gens[0], target)
            marker = f"faultsrw{os.getpid()}r{r}"
            # the quick rewrites (upgrade, the analog index) run more times
            n = rewrites if kind in ("ingest --overwrite", "index --pattern") else 4 * rewrites
            lines = [[str(a) for a in command(target, (i + 1) % 2, libs, v1)] for i in range(n)]
            writer = subprocess.Popen(
                [sys.executable, "-c", _SERIAL, json.dumps(lines)],
                cwd=workdir,
                env=cli_env(marker),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
            )
            done, turn = [], 0
            while writer.poll() is None or turn < len(verbs):
                verb = list(verbs)[turn % len(verbs)]
                done.append((verb, run_command(verbs[verb])))
                turn += 1
            w = _finish(writer)
            label = f"{kind} round {r}"
            bad = check_status(KIND, f"{label} writer", w, allowed=(0,))
            cases.append(bad or Case(KIND, f"{label} writer", OK))
            for i, (verb, proc) in enumerate(done):
                case = f"{label} {verb} {i}"
                bad = check_status(KIND, case, proc, allowed=(0, 1, 2))
                if bad:
                    cases.append(bad)
                elif _outcome(verb, proc, target) in expected[verb]:
                    cases.append(Case(KIND, case, OK))
                else:  # a store swapped whole is never missing, half-built or refused
                    cases.append(
                        Case(
                            KIND,
                            case,
                            FAIL,
                            DIFFERENT,
                            f"exit {proc.returncode}, an answer no generation gives: "
                            f"{last_line(text(proc.stderr) or text(proc.stdout))}",
                        )
                    )
            kill_marked(marker)
    return cases


#: each index a version-2 store may have rebuilt, and the verb that reads it (corrupter.commands)
INDEXES = {"--analogs": "analogs", "--pattern": "substructure"}


def concurrent_index(workdir: Path, rounds: int, runs: int = 3) -> list[Case]:
    """`runs` `molsift index` of each kind (`--analogs`, `--pattern`) on one store at once;
    then info must pass, and search and the rebuilt index's search answer as before."""
    from .corrupter import commands, run_command

    lib = _lib(workdir, "cI.smi", 0, 1500)
    base = workdir / "ci-base.store"
    if not (base / "manifest.json").exists():
        proc = run_cli(["ingest", lib.name, "-o", base.name, "-q", "-j", "2"], cwd=workdir)
        assert proc.returncode == 0, text(proc.stderr)
    store = workdir / "ci.store"
    expected = {}
    for flag, verb in INDEXES.items():
        proc = run_command(commands(base, base, "v2")[verb])
        assert proc.returncode == 0, text(proc.stderr)
        expected[flag] = text(proc.stdout).replace(str(base), "STORE")
    searched = text(_search(base, workdir).stdout)
    cases = []
    for r in range(rounds):
        for flag, verb in INDEXES.items():
            shutil.rmtree(store, ignore_errors=True)
            shutil.copytree(base, store)
            procs = [
                _popen(["index", store.name, flag, "-j", "1"], workdir, f"faultsi{os.getpid()}")
                for _ in range(runs)
            ]
            done = [_finish(p) for p in procs]
            label = f"index {flag} round {r}"
            cases += _judge_all(label, done, store)
            info = run_cli(["info", store.name], cwd=workdir)
            search = _search(store, workdir)
            rebuilt = run_command(commands(store, store, "v2")[verb])
            case = f"{label} final store"
            extra = sorted(set(os.listdir(store)) - set(os.listdir(base)))
            if info.returncode != 0:
                cases.append(
                    Case(KIND, case, FAIL, WRONG, f"info fails: {text(info.stderr).strip()[:160]}")
                )
            elif search.returncode != 0 or text(search.stdout) != searched:
                cases.append(
                    Case(KIND, case, FAIL, WRONG, "search answers differently after the index")
                )
            elif rebuilt.returncode != 0 or (
                text(rebuilt.stdout).replace(str(store), "STORE") != expected[flag]
            ):
                cases.append(
                    Case(KIND, case, FAIL, WRONG, f"{verb} answers differently after the index")
                )
            elif extra or hidden_siblings(store):
                left = extra + hidden_siblings(store)
                cases.append(Case(KIND, case, FAIL, LEFTOVERS, f"left behind: {left}"))
            else:
                cases.append(Case(KIND, case, OK))
            if not any(p.returncode == 0 for p in done):
                why = "every concurrent index failed"
                cases.append(Case(KIND, f"{label} any succeeded", FAIL, WRONG, why))
    return cases


def concurrent_ingest(workdir: Path, rounds: int, runs: int = 3) -> list[Case]:
    """`runs` ingests of different libraries to one output path at once (with and without
    --overwrite); a file beside the output must survive; the final store must be one of them."""
    libs = [_lib(workdir, f"cJ{i}.smi", 400 * i, 400) for i in range(runs)]
    out = workdir / "cj.store"  # the same path every round
    neighbour = workdir / "cj.neighbour.txt"
    cases = []
    for r in range(rounds):
        overwrite = r % 2 == 1
        shutil.rmtree(out, ignore_errors=True)
        neighbour.write_text("not molsift's")
        flag = ["--overwrite"] if overwrite else []
        procs = [
            _popen(
                ["ingest", lib.name, "-o", out.name, "-q", "-j", "1", *flag],
                workdir,
                f"faultsj{os.getpid()}",
            )
            for lib in libs
        ]
        done = [_finish(p) for p in procs]
        label = f"ingest round {r}{' --overwrite' if overwrite else ''}"
        cases += _judge_all(label, done, out)
        case = f"{label} final store"
        winners = [i for i, p in enumerate(done) if p.returncode == 0]
        info = run_cli(["info", out.name], cwd=workdir)
        ids = _ids_in_input_order(out)
        match = [
            i
            for i, lib in enumerate(libs)
            if ids == [ln.split()[1].decode() for ln in lib.read_bytes().splitlines()]
        ]
        wait_until(lambda: not hidden_siblings(out), 10, 0.25)
        if not neighbour.exists() or not all(lib.exists() for lib in libs):
            cases.append(
                Case(KIND, case, FAIL, DELETED, "a file beside the output or an input was deleted")
            )
        elif not winners:
            cases.append(Case(KIND, case, FAIL, WRONG, "no ingest succeeded"))
        elif not overwrite and len(winners) != 1:
            cases.append(
                Case(
                    KIND,
                    case,
                    FAIL,
                    WRONG,
                    f"{len(winners)} ingests without --overwrite all report success on one path",
                )
            )
        elif info.returncode != 0:
            cases.append(
                Case(KIND, case, FAIL, WRONG, f"info fails: {text(info.stderr).strip()[:160]}")
            )
        elif not match or (not overwrite and match[0] not in winners):
            cases.append(
                Case(
                    KIND,
                    case,
                    FAIL,
                    WRONG,
                    "the store holds none of the inputs' molecules"
                    if not match
                    else "the store is not the winner's",
                )
            )
        elif hidden_siblings(out):
            cases.append(Case(KIND, case, FAIL, LEFTOVERS, f"left behind: {hidden_siblings(out)}"))
        else:
            cases.append(Case(KIND, case, OK))
    return cases


def _ids_in_input_order(store: Path) -> list[str]:
    """The store's record ids in input order (store order mapped through `input_ranks`); none
    when it does not open."""
    import numpy as np

    import molsift

    try:
        s = molsift.open_store(store)
    except (molsift.StoreError, OSError):
        return []
    ids = list(s.ids)
    return [ids[i] for i in np.argsort(s.input_ranks, kind="stable")]


def run(workdir: Path, long: bool, log=print) -> list[Case]:
    workdir.mkdir(parents=True, exist_ok=True)
    cases = []
    for fn, rounds in (
        (search_during_overwrite, 20 if long else 2),
        (readers_during_rewrites, 4 if long else 1),
        (concurrent_index, 10 if long else 1),
        (concurrent_ingest, 10 if long else 2),
    ):
        for c in fn(workdir, rounds):
            log(c)
            cases.append(c)
    return cases
