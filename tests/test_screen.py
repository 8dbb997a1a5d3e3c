"""`molsift screen`: every input record lands exactly once in the results or the rejects, on
worker processes and on real MPI ranks (ranks x writer groups x write buffer x read buffer),
after kill -9 at random moments and inside writes, with each scorer; plus the report."""

from __future__ import annotations

import contextlib
import csv
import gzip
import json
import os
import random
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import procs
import pytest
from conftest import BUNDLED_SMI, molsift_cmd, run_mpi

MATRIX_RANKS = [1, 2, 3, 4, 7]
MATRIX_WRITERS = [1, 2, 3]
SIZES = ["1K", "1M"]


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    """Every 8th line of the bundled data (three RDKit rejects among them), plus a syntax error,
    a blank line and a comment: 626 records, ids unique."""
    lines = BUNDLED_SMI.read_text().splitlines()
    picked = lines[1::8]
    picked[10:10] = ["C1CC(xyz bad_syntax", "", "# a comment line"]
    path = tmp_path_factory.mktemp("screen") / "library.smi"
    path.write_text("\n".join(picked) + "\n")
    return path


def expected_ids(path: Path) -> Counter:
    """Ids of the records of a SMILES file, read independently of molsift."""
    ids = Counter()
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            ids[line.split()[1]] += 1
    return ids


def result_ids(output: Path) -> tuple:
    with open(output, newline="") as f:
        rows = list(csv.DictReader(f))
    with open(str(output) + ".rejects.tsv") as f:
        rejects = list(csv.DictReader(f, delimiter="\t"))
    return Counter(r["id"] for r in rows), Counter(r["id"] for r in rejects), rows, rejects


def check_exactly_once(library: Path, output: Path) -> tuple:
    rows, rejects, row_list, reject_list = result_ids(output)
    assert not (rows & rejects), "a record is both a row and a reject"
    assert rows + rejects == expected_ids(library)
    report = json.loads((Path(str(output) + ".run") / "report.json").read_text())
    assert report["records_in"] == sum(expected_ids(library).values())
    assert report["rows"] == sum(rows.values()) and report["rejected"] == sum(rejects.values())
    return row_list, reject_list, report


def screen(args, env=None, check=True, timeout=300) -> subprocess.CompletedProcess:
    r = subprocess.run(
        [*molsift_cmd(), "screen", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    if check:
        assert r.returncode == 0, r.stderr
    return r


def test_local_filter_rows_rejects_and_columns(library, tmp_path):
    out = tmp_path / "hits.csv"
    screen(
        [
            library,
            "--scorer",
            "filter",
            "-o",
            out,
            "-j",
            "2",
            "--writers",
            "2",
            "--write-buffer",
            "2K",
            "-q",
        ]
    )
    rows, rejects, report = check_exactly_once(library, out)
    assert list(rows[0]) == [
        "id",
        "smiles",
        "mw",
        "clogp",
        "hbd",
        "hba",
        "rotb",
        "tpsa",
        "qed",
        "pains",
        "pains_name",
        "pass",
    ]
    assert len(rejects) == 4  # the syntax error and three valence errors
    bad = next(r for r in rejects if r["id"] == "bad_syntax")
    assert bad["line"] == "11" and "syntax error" in bad["reason"]
    text = library.read_bytes()
    for r in rejects:  # offsets and lines point at the record
        off = int(r["offset"])
        assert text[off:].split(b"\n", 1)[0].split()[1].decode() == r["id"]
        assert text[:off].count(b"\n") + 1 == int(r["line"])
    from rdkit import Chem
    from rdkit.Chem import QED, Descriptors

    for row in rows[:25]:  # values are RDKit's
        mol = Chem.MolFromSmiles(row["smiles"])
        assert float(row["mw"]) == pytest.approx(Descriptors.MolWt(mol), rel=1e-5)
        assert float(row["qed"]) == pytest.approx(QED.qed(mol), rel=1e-5)
        assert row["pass"] == (
            "1"
            if float(row["mw"]) <= 500
            and float(row["clogp"]) <= 5
            and int(row["hbd"]) <= 5
            and int(row["hba"]) <= 10
            and int(row["rotb"]) <= 10
            and float(row["tpsa"]) <= 140
            and int(row["pains"]) == 0
            else "0"
        )
    assert report["groups"] == [1, 1]
    # every byte read once, plus at most a few KiB past each of the 16 slab ends to finish a record
    size = library.stat().st_size
    assert size <= report["bytes_read"] <= size + 16 * 8192
    assert not os.path.exists(str(out) + ".partial")


def test_similarity_scores_equal_rdkit(library, tmp_path):
    from rdkit import Chem, DataStructs
    from rdkit.Chem import rdFingerprintGenerator

    refs = ["c1ccccc1C(=O)O", "CCN(CC)CCOC(=O)c1ccc(N)cc1", "CC(C)Cc1ccc(C(C)C(=O)O)cc1"]
    out = tmp_path / "sim.csv"
    screen(
        [
            library,
            "--scorer",
            "similarity",
            *[arg for r in refs for arg in ("--ref", r)],
            "-o",
            out,
            "-j",
            "2",
            "-q",
        ]
    )
    rows, _, _ = check_exactly_once(library, out)
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    ref_fps = [gen.GetFingerprint(Chem.MolFromSmiles(r)) for r in refs]
    for row in rows:
        sims = DataStructs.BulkTanimotoSimilarity(
            gen.GetFingerprint(Chem.MolFromSmiles(row["smiles"])), ref_fps
        )
        assert float(row["max_tanimoto"]) == pytest.approx(max(sims), abs=1e-6)
        assert sims[int(row["nearest_ref"][3:]) - 1] == pytest.approx(max(sims), abs=1e-6)


def test_python_scorer_and_gzip_input(library, tmp_path):
    (tmp_path / "myscore.py").write_text(
        "from molsift.scorers import Reject\n"
        "def heavy(mol):\n"
        "    if mol.GetNumHeavyAtoms() > 30:\n"
        "        raise Reject('too big for this test')\n"
        "    return {'heavy': mol.GetNumHeavyAtoms(), 'rings': mol.GetRingInfo().NumRings()}\n"
        "heavy.columns = ('heavy', 'rings')\n"
    )
    gz = tmp_path / "library.smi.gz"
    gz.write_bytes(gzip.compress(library.read_bytes()))
    out = tmp_path / "py.csv"
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    screen(
        [
            gz,
            "--scorer",
            "python:myscore:heavy",
            "-o",
            out,
            "-j",
            "2",
            "--chunk-records",
            "100",
            "-q",
        ],
        env=env,
    )
    rows, rejects, _ = (*result_ids(out)[2:], None)
    ids = Counter(r["id"] for r in rows) + Counter(r["id"] for r in rejects)
    assert ids == expected_ids(library)
    assert all(int(r["heavy"]) <= 30 for r in rows)
    assert any(r["reason"] == "too big for this test" for r in rejects)


def test_errors_are_clear(library, tmp_path):
    out = tmp_path / "e.csv"
    r = screen([library, "--scorer", "nope", "-o", out], check=False)
    assert r.returncode == 2 and "unknown scorer 'nope'" in r.stderr
    r = screen([library, "--scorer", "filter", "-o", out, "--resume"], check=False)
    assert r.returncode == 2 and "no run to resume" in r.stderr
    r = screen([tmp_path / "missing.smi", "--scorer", "filter", "-o", out], check=False)
    assert r.returncode == 2 and "missing.smi: no such file" in r.stderr
    screen([library, "--scorer", "filter", "-o", out, "-j", "1", "-q"])
    r = screen([library, "--scorer", "filter", "-o", out], check=False)
    assert r.returncode == 2 and "already exists" in r.stderr
    r = screen([library, "--scorer", "filter", "-o", out, "--resume", "-q"])  # already complete
    check_exactly_once(library, out)


def test_unparsable_ref_is_refused_up_front_as_a_bad_refs_record_is(library, tmp_path):
    """A bad --ref failed in a worker: its traceback, "run again with --resume" (which cannot
    help), and a .partial and a run directory left behind. Now one line before any work, as a
    bad record of --refs FILE is."""
    out = tmp_path / "p.csv"
    r = screen(
        [library, "--scorer", "similarity", "--ref", "CCO", "--ref", "xx", "-o", out, "-j", "1"],
        check=False,
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == (
        "molsift: error: --ref 'xx': reference 'ref2': RDKit could not parse the SMILES "
        "(syntax error)"
    )
    refs = tmp_path / "refs.smi"
    refs.write_text("xx bad\n")
    r = screen([library, "--scorer", "similarity", "--refs", refs, "-o", out], check=False)
    assert r.returncode == 2 and f"{refs}:1: reference 'bad'" in r.stderr
    assert list(tmp_path.iterdir()) == [refs]  # no output, .partial or run directory
    # a garbage line's 842-character "id" was quoted whole in the one-line error
    refs.write_text("xx " + "y" * 842 + "\n")
    r = screen([library, "--scorer", "similarity", "--refs", refs, "-o", out], check=False)
    assert r.returncode == 2 and "'... (842 characters): RDKit could not parse" in r.stderr
    assert len(r.stderr) < 300, r.stderr


def test_the_apis_similarity_scorer_reads_its_references_when_made():
    """`SimilarityScorer` given to the Python API's `screen`: an unreadable or empty reference
    is a ValueError when the scorer is made, not a worker's failure mid-run."""
    from molsift.scorers.similarity import SimilarityScorer

    assert SimilarityScorer([("a", "CCO")]).refs == [("a", "CCO")]
    for smi, why in (("xx", "could not parse"), ("", "an empty SMILES")):
        with pytest.raises(ValueError, match=why) as e:
            SimilarityScorer([("a", "CCO"), ("b", smi)])
        assert str(e.value).startswith(f"reference 'b' ({smi!r}): ")


def state_gen(out: Path) -> int:
    """The generation of a run's committed state (-1 before there is one)."""
    try:
        return json.loads(Path(f"{out}.run/state.json").read_text())["gen"]
    except (OSError, ValueError, KeyError):
        return -1


def wait_for_takeover(out: Path, gen: int, proc: subprocess.Popen) -> int:
    """Waits (up to 2 minutes) until the run `proc` started has taken over the state, i.e. its
    generation passed `gen`, or `proc` ended; returns the generation then. A kill after this
    lands while the run works, not before it began (a slow start on a loaded machine)."""
    deadline = time.time() + 120
    while state_gen(out) <= gen and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    return state_gen(out)


def test_truncated_gzip_is_one_clear_error_not_a_traceback_or_a_hang(tmp_path):
    """Found by tests/faults: the reader's traceback was printed, and with 5,000 records the run
    then hung for good at exit (the task queue's feeder flushing to killed workers)."""
    whole = gzip.compress(BUNDLED_SMI.read_bytes())
    lib = tmp_path / "lib.smi.gz"
    lib.write_bytes(whole[: len(whole) // 2])
    r = subprocess.run(
        [
            *molsift_cmd(),
            "screen",
            str(lib),
            "--scorer",
            "filter",
            "-o",
            str(tmp_path / "o.csv"),
            "-j",
            "2",
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert (
        r.stderr.startswith("molsift: error: reading the input failed: ") and str(lib) in r.stderr
    )
    assert "incomplete" in r.stderr or "corrupt" in r.stderr, r.stderr


def test_csv_without_smiles_column_is_one_clear_error(tmp_path):
    lib = tmp_path / "lib.csv"
    lib.write_text("name,value\nabc,1\n")
    r = subprocess.run(
        [
            *molsift_cmd(),
            "screen",
            str(lib),
            "--scorer",
            "filter",
            "-o",
            str(tmp_path / "o.csv"),
            "-j",
            "2",
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert 'column "smiles" not found' in r.stderr and str(lib) in r.stderr, r.stderr
    assert "run again with --resume" not in r.stderr  # resuming cannot get past it
    # refused before the run: it failed every worker ("worker 0 failed: ..."), said "--resume
    # finishes the run once the input can be read" (it cannot: the column is an option, fixed
    # in the plan) and left o.csv.partial and a run directory behind
    assert r.stderr.startswith(f"molsift: error: {lib}: bad header line"), r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lib.csv"]


def test_kill9_at_random_moments_then_resume(tmp_path):
    """Ten kill -9 at random moments (the whole run: its workers die with it), each followed by
    --resume, then a last --resume to the end: every record exactly once. The library is the
    bundled data three times over (ids made unique), so that ten kills land before the end."""
    out = tmp_path / "k.csv"
    library = tmp_path / "lib3.smi"
    with open(library, "w") as f:
        for copy in range(3):
            for line in BUNDLED_SMI.read_text().splitlines():
                smi, rid = line.split()[:2]
                f.write(f"{smi}\t{rid}-{copy}\n")
    args = [
        library,
        "--scorer",
        "filter",
        "-o",
        out,
        "-j",
        "2",
        "--writers",
        "2",
        "--write-buffer",
        "1K",
        "-q",
    ]
    rng = random.Random(7)
    kills, gen = 0, 0  # a fresh run writes generation 0, then takes it over as generation 1
    proc = subprocess.Popen([*molsift_cmd(), "screen", *map(str, args)], stderr=subprocess.PIPE)
    for _ in range(10):
        gen = wait_for_takeover(out, gen, proc)
        time.sleep(rng.uniform(0.2, 1.2))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
        proc = subprocess.Popen(
            [*molsift_cmd(), "screen", *map(str, args), "--resume"], stderr=subprocess.PIPE
        )
    assert proc.wait(timeout=300) == 0, proc.stderr.read().decode()
    _, _, report = check_exactly_once(library, out)
    assert kills == 10 and report["restarts"] == 10, (kills, report["restarts"])


@pytest.mark.parametrize("point", ["mid-write:3", "before-commit:2", "mid-write:1"])
def test_kill9_inside_a_write_then_resume(library, tmp_path, point):
    """SIGKILL in the middle of a pwrite (half the rows written) or between the write and its
    commit: the bytes are not committed, the resume removes them (truncation or compaction)."""
    out = tmp_path / "w.csv"
    args = [
        library,
        "--scorer",
        "filter",
        "-o",
        out,
        "-j",
        "2",
        "--writers",
        "2",
        "--write-buffer",
        "1K",
        "-q",
    ]
    r = screen(args, env=dict(os.environ, MOLSIFT_FAILPOINT=point), check=False)
    assert r.returncode == -9
    assert not out.exists()
    screen([*args, "--resume"])
    check_exactly_once(library, out)


def test_resume_compacts_a_hole(tmp_path):
    """A reservation cut by a kill between two committed writes leaves a hole: the resume
    copies the committed bytes without it and keeps the journal's counts."""
    from molsift.screen.journal import consolidate, new_state
    from molsift.screen.layout import RunFiles, write_json_atomic

    files = RunFiles(str(tmp_path / "o.csv"), str(tmp_path / "o.csv.run"))
    os.makedirs(files.run_dir)
    Path(files.rows_partial).write_bytes(b"h\nA\nB\nXXGARBAGE\nC\n")
    Path(files.rejects_partial).write_bytes(b"r\n")
    write_json_atomic(files.state, new_state(2, 2))
    lines = [
        {
            "w": 0,
            "src": "w0",
            "n": 2,
            "r": 0,
            "p": {"0": {"k": 2, "o": 5, "l": 2, "d": 0}},
            "rows": [2, 4],
        },
        {
            "w": 1,
            "src": "w1",
            "n": 1,
            "r": 0,
            "p": {"1": {"k": 1, "o": 9, "l": 5, "d": 1}},
            "rows": [16, 2],
        },
    ]
    with open(files.journal(0, 0), "w") as f:
        f.write(json.dumps(lines[0]) + "\n" + json.dumps(lines[1]) + "\n" + '{"torn')
    state = consolidate(files)
    assert Path(files.rows_partial).read_bytes() == b"h\nA\nB\nC\n"
    assert state["ends"]["rows"] == 8 and state["totals"] == {"rows": 3, "rejects": 0}
    assert state["progress"]["0"]["k"] == 2 and state["progress"]["1"]["d"] == 1
    assert state["compactions"] == 1 and state["gen"] == 1


@pytest.mark.parametrize("ranks", MATRIX_RANKS)
def test_mpi_matrix(library, tmp_path, ranks):
    """Ranks x writer groups x write buffer x read buffer with real mpirun: exactly one row or
    reject per record every time. More writers than ranks run as many as the ranks (the report
    says so): one such run per rank count, not every buffer size again (the same run)."""
    for writers in MATRIX_WRITERS:
        clamped = writers > ranks
        if clamped and writers != max(MATRIX_WRITERS):
            continue
        for wbuf in SIZES[:1] if clamped else SIZES:
            for rbuf in SIZES[:1] if clamped else SIZES:
                out = tmp_path / f"m-{writers}-{wbuf}-{rbuf}.csv"
                r = run_mpi(
                    ranks,
                    [
                        "screen",
                        str(library),
                        "--scorer",
                        "filter",
                        "-o",
                        str(out),
                        "--writers",
                        str(writers),
                        "--write-buffer",
                        wbuf,
                        "--read-buffer",
                        rbuf,
                        "-q",
                    ],
                )
                assert r.returncode == 0, r.stderr[-3000:]
                _, _, report = check_exactly_once(library, out)
                assert report["executor"] == "mpi" and report["workers"] == ranks
                assert report["writers"] == min(writers, ranks)


def test_mpi_unequal_groups_flush_per_rank(library, tmp_path):
    """7 ranks in 3 writer groups of 3, 2 and 2 ranks: buffers are per rank, so each rank
    flushes according to its own output only (Docker-HT sized them per group, and groups of
    unequal size filled at different rates). Each writer writes exactly its members' flushes."""
    out = tmp_path / "u.csv"
    r = run_mpi(
        7,
        [
            "screen",
            str(library),
            "--scorer",
            "filter",
            "-o",
            str(out),
            "--writers",
            "3",
            "--write-buffer",
            "2K",
            "-q",
        ],
    )
    assert r.returncode == 0, r.stderr[-3000:]
    _, _, report = check_exactly_once(library, out)
    assert report["groups"] == [3, 2, 2]
    cap = report["write_buffer"]
    for w in report["per_worker"]:
        # every flush but the last holds at least `cap` bytes and at most one row more
        assert (w["flushes"] - 1) * cap <= w["flush_bytes"] <= w["flushes"] * (cap + 600)
    flushes = {w["rank"]: w["flushes"] for w in report["per_worker"]}
    members = [[0, 1, 2], [3, 4], [5, 6]]
    assert [wr["writes"] for wr in report["per_writer"]] == [
        sum(flushes[m] for m in g) for g in members
    ]


def test_report_png(library, tmp_path):
    out = tmp_path / "r.csv"
    screen([library, "--scorer", "filter", "-o", out, "-j", "2", "-q"])
    r = subprocess.run(
        [*molsift_cmd(), "report", str(out) + ".run"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    png = Path(str(out) + ".run") / "report.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"{sum(expected_ids(library).values())} records" in r.stdout


def test_fingerprint_set_matches_rdkit_and_checks_lengths():
    from rdkit import Chem, DataStructs
    from rdkit.Chem import rdFingerprintGenerator

    from molsift import _core

    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=1024)
    fps = [
        gen.GetFingerprint(Chem.MolFromSmiles(s))
        for s in ("CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1")
    ]
    rows = [DataStructs.BitVectToBinaryText(f) for f in fps]
    fset = _core.FingerprintSet(rows)
    q = gen.GetFingerprint(Chem.MolFromSmiles("Oc1ccccc1C"))
    expected = DataStructs.BulkTanimotoSimilarity(q, fps)
    qb = DataStructs.BitVectToBinaryText(q)
    assert [_core.FingerprintSet([r]).best(qb) for r in rows] == [(0, s) for s in expected]
    assert fset.best(qb) == (
        expected.index(max(expected)),
        max(expected),
    )
    with pytest.raises(ValueError, match="query has 8 bytes"):
        fset.best(b"\0" * 8)
    with pytest.raises(ValueError, match="fingerprint 1 has 16 bytes"):
        _core.FingerprintSet([b"\0" * 8, b"\0" * 16])


def test_sdf_input_with_standardize(rdkit_sdf, tmp_path):
    """SDF records, standardized before scoring: salts lose their counter-ion."""
    out = tmp_path / "sdf.csv"
    screen([rdkit_sdf, "--scorer", "filter", "-o", out, "-j", "2", "--standardize", "-q"])
    rows, rejects, _, _ = result_ids(out)
    # this file's title lines are blank: ids are then the line of each block's first line
    starts = [
        1,
        *[i + 2 for i, line in enumerate(rdkit_sdf.read_text().splitlines()) if line == "$$$$"][
            :-1
        ],
    ]
    assert rows + rejects == Counter(str(n) for n in starts) and len(starts) == 200
    with open(out, newline="") as f:
        assert all("." not in r["smiles"] for r in csv.DictReader(f))  # largest fragment kept


def test_mpi_ranks_run_local_workers(library, tmp_path):
    """`mpirun -n 2 molsift screen -j 2`: every rank runs 2 worker processes (4 in all) and
    forwards their buffers to its writer group as its own; exactly once with 1 and 2 groups."""
    for writers in (1, 2):
        out = tmp_path / f"j-{writers}.csv"
        r = run_mpi(
            2,
            [
                "screen",
                str(library),
                "--scorer",
                "filter",
                "-o",
                str(out),
                "-j",
                "2",
                "--writers",
                str(writers),
                "--write-buffer",
                "2K",
                "-q",
            ],
        )
        assert r.returncode == 0, r.stderr[-3000:]
        _, _, report = check_exactly_once(library, out)
        assert report["executor"] == "mpi" and report["workers"] == 4
        assert sorted((w["rank"], w["worker"]) for w in report["per_worker"]) == [
            (0, 0),
            (0, 1),
            (1, 0),
            (1, 1),
        ]
        assert sum(w["records"] for w in report["per_worker"]) == report["records_in"]
        assert report["writers"] == writers
        timelines = sorted(p.name for p in (Path(str(out) + ".run") / "timeline").iterdir())
        assert any(n.endswith("-rank1-worker1.jsonl") for n in timelines), timelines


def test_mpi_kill9_of_a_rank_then_resume(tmp_path):
    """Under real mpirun (3 ranks, 2 writer groups, 1 KiB buffers): kill -9 one rank at a random
    moment (a node dying), four times, each followed by mpirun ... --resume; the last resume
    runs to the end: every record of the bundled data (4 copies) exactly once."""
    from conftest import mpi_env, mpirun_cmd

    library = tmp_path / "lib4.smi"
    library.write_text(BUNDLED_SMI.read_text() * 4)  # long enough to outlive four kills
    out = tmp_path / "mk.csv"
    args = [
        "screen",
        str(library),
        "--scorer",
        "filter",
        "-o",
        str(out),
        "--writers",
        "2",
        "--write-buffer",
        "1K",
        "-q",
    ]
    env = mpi_env()
    rng = random.Random(11)
    kills, gen = 0, 0  # a fresh run writes generation 0, then takes it over as generation 1
    for attempt in range(5):
        cmd = mpirun_cmd(3) + molsift_cmd() + args + (["--resume"] if attempt else [])
        proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
        )
        if attempt < 4:
            gen = wait_for_takeover(out, gen, proc)  # MPI start-up can take seconds
            time.sleep(rng.uniform(0.5, 2.0))
            ranks = [p for p in procs.descendants(proc.pid) if b"molsift" in procs.cmdline(p)]
            if proc.poll() is None and ranks:
                os.kill(rng.choice(ranks), signal.SIGKILL)
                kills += 1
            try:
                proc.wait(timeout=60)  # mpirun sees the rank die and ends the job
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)  # anything left of that job
                proc.wait()
            gen = max(gen, state_gen(out))  # the next launch must take over after this one
        else:
            assert proc.wait(timeout=300) == 0, proc.stderr.read().decode()[-3000:]
    _, _, report = check_exactly_once(library, out)
    assert kills == 4 and report["executor"] == "mpi" and report["restarts"] == 4, (
        kills,
        report["restarts"],
    )


def test_resume_with_a_relative_library_path(library, tmp_path):
    """Issue 14, defect 2: a run started as `molsift screen lib.smi ...` (a relative path, the
    README's own example) was refused by `--resume`: "this run screens lib.smi, not lib.smi"."""
    work = tmp_path / "cwd"
    work.mkdir()
    (work / "lib.smi").write_bytes(library.read_bytes())
    args = [
        "lib.smi",
        "--scorer",
        "filter",
        "-o",
        "props.csv",
        "-j",
        "2",
        "--write-buffer",
        "1K",
        "-q",
    ]
    run = lambda extra, env=None: subprocess.run(  # noqa: E731
        [*molsift_cmd(), "screen", *args, *extra],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    r = run([], env=dict(os.environ, MOLSIFT_FAILPOINT="mid-write:2"))
    assert r.returncode == -9 and not (work / "props.csv").exists()
    r = run(["--resume"])
    assert r.returncode == 0, r.stderr
    check_exactly_once(library, work / "props.csv")
    _, rejects = result_ids(work / "props.csv")[2:]
    assert {row["source"] for row in rejects} == {"lib.smi"}  # as typed, as before


def test_hint_after_a_worker_crash_leads_to_a_resume_that_works(library, tmp_path):
    """The hint printed when a worker dies ("run again with --resume") works with a relative
    library path: the worker of the first attempt dies, --resume finishes the run."""
    work = tmp_path / "cwd"
    work.mkdir()
    (work / "lib.smi").write_bytes(library.read_bytes())
    (work / "crashy.py").write_text(
        "import os\n"
        "def score(mol):\n"
        "    if not os.path.exists('crashed.once'):\n"
        "        open('crashed.once', 'w').close()\n"
        "        os._exit(7)\n"
        "    return mol.GetNumAtoms()\n"
    )
    env = dict(os.environ, PYTHONPATH=str(work))
    args = ["lib.smi", "--scorer", "python:crashy:score", "-o", "n.csv", "-j", "2", "-q"]
    r = subprocess.run(
        [*molsift_cmd(), "screen", *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2 and "run again with --resume" in r.stderr, r.stderr
    r = subprocess.run(
        [*molsift_cmd(), "screen", *args, "--resume"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    check_exactly_once(library, work / "n.csv")


def test_old_plan_with_a_relative_path_resumes(library, tmp_path):
    """A run planned before plans held absolute paths (its plan names the library as typed)
    still resumes from the directory it was started in."""
    work = tmp_path / "cwd"
    work.mkdir()
    (work / "lib.smi").write_bytes(library.read_bytes())
    args = ["lib.smi", "--scorer", "filter", "-o", "p.csv", "-j", "2", "--write-buffer", "1K", "-q"]
    r = subprocess.run(
        [*molsift_cmd(), "screen", *args],
        cwd=work,
        capture_output=True,
        text=True,
        env=dict(os.environ, MOLSIFT_FAILPOINT="mid-write:2"),
        timeout=300,
    )
    assert r.returncode == -9
    plan_path = work / "p.csv.run" / "plan.json"
    plan = json.loads(plan_path.read_text())
    plan["input"]["path"] = "lib.smi"
    plan.pop("source_name")
    plan_path.write_text(json.dumps(plan))
    r = subprocess.run(
        [*molsift_cmd(), "screen", *args, "--resume"],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    check_exactly_once(library, work / "p.csv")


def test_screen_rejects_an_id_with_a_lone_cr(tmp_path):
    """Issue 14, defect 6, for screen: the record is a reject with a clear reason, never fatal,
    and no result row holds a line break."""
    lib = tmp_path / "cr.smi"
    lib.write_bytes(b"CCO id\rmore\nCCN ok1\nCCCl ok2\n")
    out = tmp_path / "cr.csv"
    screen([lib, "--scorer", "filter", "-o", out, "-j", "2", "-q"])
    rows, rejects, _, reject_list = result_ids(out)
    assert rows == Counter(["ok1", "ok2"]) and sum(rejects.values()) == 1
    assert "control character" in reject_list[0]["reason"] and reject_list[0]["line"] == "1"
    report = json.loads((tmp_path / "cr.csv.run" / "report.json").read_text())
    assert (report["records_in"], report["rows"], report["rejected"]) == (3, 2, 1)


@pytest.mark.parametrize(
    "content, why", [(b"", "no records"), (b"\x00\x01\xff\n" * 50, "rejected")]
)
def test_screen_with_nothing_usable_exits_3(tmp_path, content, why):
    """Issue 14, defect 7, for screen: an empty input or one whose every record is rejected
    exits 3 (saying so), with the result and rejects files still written."""
    lib = tmp_path / "in.smi"
    lib.write_bytes(content)
    out = tmp_path / "out.csv"
    r = screen([lib, "--scorer", "filter", "-o", out, "-q"], check=False)
    assert r.returncode == 3 and "nothing usable" in r.stderr and why in r.stderr, r.stderr
    assert out.exists() and Path(str(out) + ".rejects.tsv").exists()


def test_resume_refuses_a_library_edited_to_the_same_size_and_mtime(tmp_path):
    """Issue 40, defect 9: a run of 1,500 records killed after about 1,000 rows were committed,
    its library then edited in place (`C` made `N` at the start of every line: same size, same
    mtime): --resume finished with exit 0 and a mix of the old file's rows and the new one's.
    It must refuse the changed file in one line naming it; the untouched run then resumes."""
    library = tmp_path / "lib.smi"
    original = "".join(BUNDLED_SMI.read_text().splitlines(keepends=True)[:1500])
    library.write_text(original)
    out = tmp_path / "o.csv"
    args = [library, "--scorer", "filter", "-o", out, "-j", "2", "--write-buffer", "8K", "-q"]
    r = screen(args, env=dict(os.environ, MOLSIFT_FAILPOINT="before-commit:10"), check=False)
    assert r.returncode == -9 and not out.exists()
    before = library.stat()
    edited = "".join(
        "N" + line[1:] if line.startswith("C") else line
        for line in original.splitlines(keepends=True)
    )
    assert len(edited) == len(original) and edited != original
    library.write_text(edited)
    os.utime(library, ns=(before.st_atime_ns, before.st_mtime_ns))
    r = screen([*args, "--resume"], check=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("molsift: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert f"{library} changed since the run started" in r.stderr, r.stderr
    assert not out.exists()
    library.write_text(original)  # the file the run was planned on: the resume goes on
    screen([*args, "--resume"])
    check_exactly_once(library, out)


# ---- a demanding user's wrong inputs, options and outputs ----
def test_summary_and_report_say_one_in_the_singular(tmp_path):
    """The summary said "on 1 worker(s)" and "1 writer group(s)", `molsift report` "on 1
    processes worker(s)" and "I/O of 2 process(es)"."""
    lib = tmp_path / "lib.smi"
    lib.write_text("CCO a\nCCN b\n")
    out = tmp_path / "o.csv"
    r = screen([lib, "--scorer", "filter", "-o", out, "-j", "1"])
    assert " on 1 worker (processes, " in r.stdout and ", 1 writer group of [1]" in r.stdout
    assert "(s)" not in r.stdout and "(es)" not in r.stdout, r.stdout
    r = subprocess.run(
        [*molsift_cmd(), "report", f"{out}.run"], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert " on 1 worker (processes), 1 writer group [1]" in r.stdout, r.stdout
    assert "I/O of 2 processes" in r.stdout and "(s)" not in r.stdout and "(es)" not in r.stdout
    assert sorted(p.name for p in Path(f"{out}.run").iterdir() if "tmp" in p.name) == []


@pytest.mark.parametrize(
    "option, said",
    [
        (["--slabs", "0"], "argument --slabs: must be at least 1, got 0"),
        (["--slabs", "-3"], "argument --slabs: must be at least 1, got -3"),
        (["--chunk-records", "0"], "argument --chunk-records: must be at least 1, got 0"),
        (["--chunk-records", "-1"], "argument --chunk-records: must be at least 1, got -1"),
        (["--resume", "--overwrite"], "--resume finishes the earlier run and --overwrite"),
    ],
)
def test_run_options_out_of_range_are_one_line(tmp_path, option, said):
    """--slabs -3 was an OverflowError's traceback; --chunk-records 0 screened a gzip input's
    200 records into nothing ("the input holds no records", exit 3), -1 was a traceback;
    --slabs 0 was taken silently; --resume with --overwrite resumed, silently."""
    lib = tmp_path / "lib.smi.gz"
    lib.write_bytes(gzip.compress(b"CCO a\nCCN b\n"))
    out = tmp_path / "o.csv"
    r = screen([lib, "--scorer", "filter", "-o", out, "-j", "1", "-q", *option], check=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert said in r.stderr.strip().splitlines()[-1], r.stderr  # the usage, then one line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lib.smi.gz"]


def test_the_apis_run_options_out_of_range_are_value_errors(tmp_path):
    from molsift.scorers.filter import FilterScorer
    from molsift.screen import screen as screen_api

    lib = tmp_path / "lib.smi"
    lib.write_text("CCO a\n")
    for option in ({"chunk_records": 0}, {"slabs": -1}, {"writers": 0}):
        name = next(iter(option))
        with pytest.raises(ValueError, match=f"{name} must be at least 1"):
            screen_api(lib, tmp_path / "o.csv", FilterScorer(), workers=1, **option)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lib.smi"]


def test_overwrite_never_deletes_the_library_nor_the_results_before_the_input_is_read(tmp_path):
    """`screen LIB -o LIB --overwrite` deleted the library, then said it did not exist (and
    without --overwrite suggested passing it); `screen MISTYPED -o OUT --overwrite` deleted
    OUT's earlier results and run, then said the library did not exist."""
    lib = tmp_path / "lib.smi"
    lib.write_text("CCO a\nCCN b\n")
    for extra in ([], ["--overwrite"]):
        r = screen([lib, "--scorer", "filter", "-o", lib, "-q", *extra], check=False)
        assert r.returncode == 2, r.stderr
        assert r.stderr == (
            f"molsift: error: {lib}: is the library being screened; choose another output\n"
        )
        assert lib.read_text() == "CCO a\nCCN b\n"
    out = tmp_path / "o.csv"
    screen([lib, "--scorer", "filter", "-o", out, "-j", "1", "-q"])
    kept = {p.name: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    r = screen(
        [tmp_path / "lbi.smi", "--scorer", "filter", "-o", out, "-q", "--overwrite"], check=False
    )
    assert r.returncode == 2 and r.stderr.endswith("lbi.smi: no such file\n"), r.stderr
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == kept
    check_exactly_once(lib, out)
    # a --run-dir that is a file: said so (was "RUN/timeline: Not a directory")
    r = screen(
        [lib, "--scorer", "filter", "-o", tmp_path / "n.csv", "-q", "--run-dir", lib], check=False
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr == f"molsift: error: {lib}: not a directory; choose another --run-dir\n"


def test_similarity_refs_file_without_molecules_is_named(tmp_path):
    """`--refs empty.smi` said "scorer similarity needs reference molecules: --refs FILE or
    --ref SMILES", as if none was given; the API's `SimilarityScorer([])` ran, every record
    rejected for "query has 256 bytes, the set's fingerprints 8"."""
    from molsift.scorers.similarity import SimilarityScorer

    lib = tmp_path / "lib.smi"
    lib.write_text("CCO a\n")
    refs = tmp_path / "refs.smi"
    refs.write_text("# no molecule here\n\n")
    out = tmp_path / "o.csv"
    r = screen([lib, "--scorer", "similarity", "--refs", refs, "-o", out, "-q"], check=False)
    assert r.returncode == 2, r.stderr
    assert r.stderr == (
        f"molsift: error: --refs {refs}: no reference molecules in it (empty, or only blank "
        "and comment lines)\n"
    )
    with pytest.raises(ValueError, match="needs at least one reference molecule"):
        SimilarityScorer([])


def _fake_run_dir(root: Path, lines: dict) -> Path:
    """A run directory with a plan, a report and the timeline files `lines` gives."""
    run = root / "o.csv.run"
    (run / "timeline").mkdir(parents=True)
    (run / "plan.json").write_text("{}")
    for name, rows in lines.items():
        text = "".join(json.dumps(r) + "\n" for r in rows)
        (run / "timeline" / name).write_text(text)
    return run


def test_report_names_a_damaged_run_file(tmp_path):
    """report.json not JSON: json's message naming no file; lacking a key, or a timeline line
    lacking one: a KeyError's traceback."""
    from molsift.screen.report import load_timeline, read_report

    sample = {"kind": "sample", "t": 1.0, "worker": 0, "rank": 0, "records": 5}
    run = _fake_run_dir(tmp_path, {"g1-worker0.jsonl": [sample, {"kind": "sample", "t": 2.0}]})
    report = run / "report.json"
    report.write_text("{garbage")
    with pytest.raises(ValueError, match=rf"^{report}: not a run report \(not JSON: "):
        read_report(str(run))
    report.write_text('{"x": 1}')
    with pytest.raises(ValueError, match=rf"^{report}: not a run report of this molsift"):
        read_report(str(run))
    line = run / "timeline" / "g1-worker0.jsonl"
    with pytest.raises(ValueError, match=rf"^{line}:2: not a timeline line \(no 'records'\)"):
        load_timeline(str(run))
    r = subprocess.run(
        [*molsift_cmd(), "report", str(run)], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 2 and r.stderr.startswith(f"molsift: error: {report}: "), r.stderr


def test_report_keeps_workers_apart_in_a_directory_named_like_rank(tmp_path):
    """`"rank" in path` looked at the whole path: in /home/frank/ every worker's samples were
    one line, "rank 0"."""
    from molsift.screen.report import load_timeline

    root = tmp_path / "frank"
    samples = {
        f"g1-worker{w}.jsonl": [
            {"kind": "sample", "t": t, "worker": w, "rank": 0, "records": 10 * t} for t in (1, 2)
        ]
        for w in (0, 1)
    }
    run = _fake_run_dir(root, samples)
    by, writes = load_timeline(str(run))
    assert sorted(by) == ["worker 0", "worker 1"] and writes == []


def test_report_draws_a_png_under_a_png_name_only(library, tmp_path):
    """`-o timeline.csv` was filled with PNG bytes."""
    out = tmp_path / "r.csv"
    screen([library, "--scorer", "filter", "-o", out, "-j", "1", "-q"])
    r = subprocess.run(
        [*molsift_cmd(), "report", f"{out}.run", "-o", str(tmp_path / "t.csv")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    said = "molsift report draws a PNG (e.g. -o timeline.png)"
    assert r.stderr == f"molsift: error: {tmp_path / 't.csv'}: {said}\n"
    assert not (tmp_path / "t.csv").exists()


# ----------------------------------------- more writer groups than workers: said, not silent


def test_more_writers_than_workers_is_said_on_stderr(library, tmp_path):
    """`molsift screen LIB --writers 99 -j 1` ran with one writer group, which only the report
    showed: the run still takes as many groups as there are workers (as under mpirun with
    more writers than ranks: test_mpi_matrix), and now says so first, in one line; a count
    that fits says nothing."""
    out = tmp_path / "w.csv"
    r = screen([library, "--scorer", "filter", "-o", out, "-j", "1", "--writers", "99", "-q"])
    assert r.stderr == "molsift: note: --writers 99 > 1 worker: using 1 writer group\n", r.stderr
    _, _, report = check_exactly_once(library, out)
    assert report["writers"] == 1 and report["groups"] == [1]
    fits = tmp_path / "f.csv"
    r = screen([library, "--scorer", "filter", "-o", fits, "-j", "2", "--writers", "2", "-q"])
    assert "note" not in r.stderr, r.stderr
    from molsift.screen.run import writers_note  # and under mpirun, of its ranks

    assert writers_note(4, 3, "MPI rank") == "--writers 4 > 3 MPI ranks: using 3 writer groups"
    assert writers_note(3, 3, "MPI rank") is None


# ------------------------------- a resume keeps the run's options: a different one is refused


def test_resume_refuses_run_options_that_differ_from_the_runs(library, tmp_path):
    """`molsift screen LIB ... --writers 2` killed, then `--resume --writers 3` (or another
    --write-buffer, --chunk-records, --standardize, ...) went on with the run's values without a
    word. A resumed run keeps its plan's options, as it keeps its scorer: a given one that
    differs is refused in one line naming it and both values, before anything is touched; left
    out, or given as the run's, it is the run's; -j is the resume's own."""
    out = tmp_path / "r.csv"
    args = [library, "--scorer", "filter", "-o", out, "-j", "2", "--writers", "2",
            "--write-buffer", "1K", "-q"]  # fmt: skip
    r = screen(args, env=dict(os.environ, MOLSIFT_FAILPOINT="mid-write:2"), check=False)
    assert r.returncode == -9 and not out.exists()
    run_dir = Path(f"{out}.run")
    before = sorted((p.name, p.stat().st_size) for p in run_dir.iterdir())
    base = [library, "--scorer", "filter", "-o", out, "-q", "--resume"]
    for extra, said in (
        (["--writers", "3"], "--writers 3 (the run's: --writers 2)"),
        (["--write-buffer", "2K", "--standardize"],
         "--write-buffer 2KiB (the run's: --write-buffer 1KiB), --standardize (the run's: no "
         "--standardize)"),
        (["--chunk-records", "9", "--io", "pread"],
         "--io pread (the run's: --io auto), --chunk-records 9 (the run's: --chunk-records "
         "2000)"),
        (["--slabs", "3", "--header"], "--slabs 3 (the run's: no --slabs (the default)), "
         "--header (the run's: --no-header)"),
    ):  # fmt: skip
        r = screen([*base, *extra], check=False)
        assert r.returncode == 2, r.stderr
        assert r.stderr == (
            "molsift: error: --resume: a resumed run keeps the options it was started with: "
            f"{said}; leave them out (or give the run's), or start again with --overwrite\n"
        ), r.stderr
        assert sorted((p.name, p.stat().st_size) for p in run_dir.iterdir()) == before
    # the run's own values given again (and another -j) are taken, and the run finishes
    screen([*base, "--writers", "2", "--write-buffer", "1024", "--io", "auto",
                "--format", "smiles", "-j", "3"])  # fmt: skip
    _, _, report = check_exactly_once(library, out)
    assert report["writers"] == 2 and report["workers"] == 3 and report["restarts"] == 1
    from molsift.scorers import scorer_class
    from molsift.screen import ScreenError, run

    with pytest.raises(ScreenError, match=r"--writers 5 \(the run's: --writers 2\);"):
        run.screen(str(library), str(out), scorer_class("filter")(), writers=5, resume=True)


def test_resume_refuses_a_scorer_given_other_options(library, tmp_path):
    """`screen LIB --scorer filter --filter-max-mw 500` killed, then `--resume` with
    `--filter-max-mw 400` (or `--scorer similarity` with other references) scored the rest of
    the library by the new rule into the same result file: the scorer's name and columns were
    checked, not its options. The plan records them (`Scorer.options`): other ones are refused
    in one line naming each and both values; the prescreen, which changes only the speed, is
    not an option of the scores; the run's own options finish the run."""
    out = tmp_path / "r.csv"
    args = [library, "--scorer", "filter", "-o", out, "-j", "2", "--write-buffer", "1K", "-q"]
    r = screen(args, env=dict(os.environ, MOLSIFT_FAILPOINT="mid-write:2"), check=False)
    assert r.returncode == -9 and not out.exists()
    run_dir = Path(f"{out}.run")
    before = sorted((p.name, p.stat().st_size) for p in run_dir.iterdir())
    base = [library, "--scorer", "filter", "-o", out, "-q", "--resume"]
    r = screen([*base, "--filter-max-mw", "400", "--filter-min-qed", "0.5"], check=False)
    assert r.returncode == 2 and r.stderr == (
        "molsift: error: --resume: the run's scorer 'filter' was given other options: "
        "max_mw 400.0 (the run's: 500.0); min_qed 0.5 (the run's: 0.0); give the run's, or "
        "start again with --overwrite\n"
    ), r.stderr
    assert sorted((p.name, p.stat().st_size) for p in run_dir.iterdir()) == before
    screen([*base, "--filter-max-mw", "500", "--filter-no-prescreen"])
    check_exactly_once(library, out)

    from molsift.scorers import scorer_class
    from molsift.screen import ScreenError, run

    sim = scorer_class("similarity")
    out2 = tmp_path / "s.csv"
    args = [library, "--scorer", "similarity", "--ref", "c1ccccc1O", "-o", out2, "-j", "2",
            "--write-buffer", "1K", "-q"]  # fmt: skip
    r = screen(args, env=dict(os.environ, MOLSIFT_FAILPOINT="mid-write:2"), check=False)
    assert r.returncode == -9
    with pytest.raises(ScreenError, match=r"refs \[\[\"ref1\", \"CCO\"\]\] \(the run's: "):
        run.screen(str(library), str(out2), sim([("ref1", "CCO")]), resume=True)
    run.screen(str(library), str(out2), sim([("ref1", "c1ccccc1O")]), resume=True)
    check_exactly_once(library, out2)


def test_python_scorer_columns_and_values_that_break_the_csv(library, tmp_path):
    """A user function's `columns = "score"` was read letter by letter (header
    id,smiles,s,c,o,r,e over rows of one value); a column named `id` made an ambiguous header;
    one value for two columns made ragged rows; a value with a line break failed the whole run
    ("internal error: ... holds 600 rows, the journal 300"). Now: one name, a clear error, a
    scorer error, and a reject whose reason says so, every record once."""
    (tmp_path / "userscore.py").write_text(
        "def one(mol):\n"
        "    return mol.GetNumAtoms()\n"
        "one.columns = 'atoms'\n"
        "def clash(mol):\n"
        "    return (1, 2)\n"
        "clash.columns = ('id', 'x')\n"
        "def twice(mol):\n"
        "    return (1, 2)\n"
        "twice.columns = ('x', 'x')\n"
        "def scalar(mol):\n"
        "    return 1\n"
        "scalar.columns = ('a', 'b')\n"
        "def lines(mol):\n"
        "    return 'a,b\\nc' if mol.GetNumAtoms() % 2 else 'ok'\n"
    )
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    out = tmp_path / "one.csv"
    screen([library, "--scorer", "python:userscore:one", "-o", out, "-j", "1", "-q"], env=env)
    rows, _, report = check_exactly_once(library, out)
    assert list(rows[0]) == ["id", "smiles", "atoms"] and report["rows"] > 0
    for name, message in [
        ("clash", "column 'id' is the result's own"),
        ("twice", "repeat a name"),
    ]:
        r = screen(
            [library, "--scorer", f"python:userscore:{name}", "-o", tmp_path / f"{name}.csv"],
            env=env,
            check=False,
        )
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr
    out = tmp_path / "scalar.csv"
    r = screen(
        [library, "--scorer", "python:userscore:scalar", "-o", out, "-j", "1", "-q"],
        env=env,
        check=False,
    )
    assert r.returncode == 3, r.stderr
    _, rejects, _ = check_exactly_once(library, out)
    assert "returned one value for 2 columns" in rejects[-1]["reason"]
    out = tmp_path / "lines.csv"
    screen([library, "--scorer", "python:userscore:lines", "-o", out, "-j", "2", "-q"], env=env)
    rows, rejects, _ = check_exactly_once(library, out)
    assert rows and all(r["score"] == "ok" for r in rows)
    assert any("a value holds a line break" in r["reason"] for r in rejects)
