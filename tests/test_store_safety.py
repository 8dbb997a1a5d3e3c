"""Regression tests for issue 14's store defects, each named after the bug it pins, on the one
store `molsift ingest` writes (format version 2, every index): overwrite deleting what is not a
store (1), silent wrong answers from a damaged store (3), search racing `ingest --overwrite`
(4), orphans, leftovers and colliding index builds (5), and manifest versions reported as
"version 0" or a corrupt ids column not named (8); and issue 40's two writers onto one output,
stores swapped in before every index was written, and analogs ranked by damaged fingerprints."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import procs
import pytest
from conftest import ONE_STORE_FILES, molsift_run

import molsift

#: the one store's files (conftest.py); test_the_damage_tests_cover_every_file checks them
STORE_FILES = ONE_STORE_FILES
QUERIES = ["CC(=O)Nc1ccc(O)cc1", "c1ccccc1O", "CCN(CC)CC"]
SUBSTRUCTURE = ["substructure", "-q", "c1ccccc1O", "-q", "[N+](=O)[O-]", "-j", "1"]
ANALOGS = ["analogs", "-q", "CC(=O)Nc1ccc(O)cc1", "--dist", "2", "-k", "10"]


def small_library(path: Path, bundled_smi: Path, start: int, n: int) -> Path:
    with open(bundled_smi) as f:
        lines = [ln for ln in f if ln.strip()][start : start + n]
    path.write_text("".join(lines))
    return path


@pytest.fixture(scope="module")
def indexed_store(tmp_path_factory, bundled_smi):
    """A 400-molecule one store (version 2) with every index, as `molsift ingest` writes it."""
    d = tmp_path_factory.mktemp("safety")
    lib = small_library(d / "lib.smi", bundled_smi, 0, 400)
    out = d / "lib.store"
    molsift.ingest(lib, out, workers=1, progress=False)
    return out


def search_output(store: Path, *extra) -> subprocess.CompletedProcess:
    args = ["search", store]
    for q in QUERIES:
        args += ["-q", q]
    return molsift_run(*args, *extra)


def assert_clean_refusal(r: subprocess.CompletedProcess, name: str) -> None:
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "panicked" not in r.stderr, r.stderr
    assert r.stderr.startswith("molsift: error: ") and name in r.stderr, r.stderr


# ------------------------------------------------------------------ defect 1: --overwrite


def test_overwrite_of_a_plain_directory_deletes_nothing(tmp_path, bundled_smi):
    proj = tmp_path / "proj"
    proj.mkdir()
    small_library(proj / "lib.smi", bundled_smi, 0, 50)
    (proj / "README").write_text("my notes\n")
    before = sorted(os.listdir(proj))
    r = molsift_run("ingest", proj / "lib.smi", "-o", proj, "--overwrite", "-q")
    assert_clean_refusal(r, str(proj))
    assert "replaces only a molsift store" in r.stderr
    assert sorted(os.listdir(proj)) == before
    assert (proj / "README").read_text() == "my notes\n"
    assert sorted(os.listdir(tmp_path)) == ["proj"]  # no temporary leftovers


def test_overwrite_of_a_regular_file_is_refused_and_leaves_nothing(tmp_path, bundled_smi):
    lib = small_library(tmp_path / "lib.smi", bundled_smi, 0, 50)
    target = tmp_path / "results.txt"
    target.write_text("keep me\n")
    r = molsift_run("ingest", lib, "-o", target, "--overwrite", "-q")
    assert_clean_refusal(r, str(target))
    assert target.read_text() == "keep me\n"
    assert sorted(os.listdir(tmp_path)) == ["lib.smi", "results.txt"]


def test_overwrite_of_a_store_holding_the_input_is_refused(tmp_path, bundled_smi):
    lib = small_library(tmp_path / "lib.smi", bundled_smi, 0, 50)
    store = tmp_path / "s.store"
    assert molsift_run("ingest", lib, "-o", store, "-q").returncode == 0
    shutil.copy(lib, store / "smiles.blocks")  # an input named like a store file, inside it
    r = molsift_run("ingest", store / "smiles.blocks", "-o", store, "--overwrite", "-q")
    assert_clean_refusal(r, "holds the input")


def test_overwrite_replaces_a_store(tmp_path, bundled_smi):
    a = small_library(tmp_path / "a.smi", bundled_smi, 0, 50)
    b = small_library(tmp_path / "b.smi", bundled_smi, 50, 70)
    store = tmp_path / "s.store"
    assert molsift_run("ingest", a, "-o", store, "-q").returncode == 0
    assert molsift_run("ingest", b, "-o", store, "-q", "--overwrite").returncode == 0
    assert len(molsift.open_store(store)) == 70
    assert sorted(os.listdir(tmp_path)) == ["a.smi", "b.smi", "s.store"]


def test_screen_never_deletes_a_run_dir_that_is_not_a_run(tmp_path, bundled_smi):
    lib = small_library(tmp_path / "lib.smi", bundled_smi, 0, 40)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep\n")
    for extra in ([], ["--overwrite"]):
        r = molsift_run(
            "screen",
            lib,
            "--scorer",
            "filter",
            "-o",
            tmp_path / "o.csv",
            "-j",
            "1",
            "-q",
            "--run-dir",
            mine,
            *extra,
        )
        assert_clean_refusal(r, str(mine))
        assert (mine / "notes.txt").read_text() == "keep\n"


# ------------------------------------------------------------------ defect 3: damaged stores


def damage(path: Path, seed: int, flips: int = 8) -> None:
    data = bytearray(path.read_bytes())
    rnd = random.Random(seed)
    for _ in range(flips):
        i = rnd.randrange(len(data))
        data[i] ^= 1 << rnd.randrange(8)
    path.write_bytes(bytes(data))


def test_the_damage_tests_cover_every_file(indexed_store):
    assert sorted(os.listdir(indexed_store)) == STORE_FILES


@pytest.mark.parametrize("name", STORE_FILES)
def test_damaged_store_is_refused_or_answers_the_same(indexed_store, tmp_path, name):
    """Flipped bits in any file: `info` refuses naming the file; `search` refuses naming it or
    prints exactly the undamaged store's hits (never a wrong score, id or SMILES)."""
    good = search_output(indexed_store, "-k", "5")
    assert good.returncode == 0, good.stderr
    refs = {
        extra: search_output(indexed_store, *extra).stdout for extra in (("-k", "5"), ("-t", "0.3"))
    }
    for seed in range(3):
        bad = tmp_path / f"bad{seed}"
        shutil.copytree(indexed_store, bad)
        if (bad / name).stat().st_size == 0:  # an empty file (no failed analogs): one line more
            (bad / name).write_text("damaged\n")
        else:
            damage(bad / name, seed)
        info = molsift_run("info", bad)
        assert_clean_refusal(info, name)
        for extra, ref in refs.items():
            r = search_output(bad, *extra)
            if r.returncode == 0:
                assert r.stdout == ref, f"{name} seed {seed}: a damaged store answered differently"
            else:
                assert_clean_refusal(r, name)


def set_packed_base(path: Path, base: int) -> None:
    """Sets the base of a packed-integer file (width, 7 zero bytes, n, base, values): every
    value it holds moves by the same amount, here far out of range."""
    data = bytearray(path.read_bytes())
    data[16:24] = base.to_bytes(8, "little")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name", ["planes.order", "input_order.packed"])
def test_corrupt_order_file_is_an_error_not_a_traceback(indexed_store, tmp_path, name):
    """A permutation naming store positions far out of range (the sorted order of the planes,
    or the input order a hit's id is found by): refused, naming the file."""
    bad = tmp_path / "bad"
    shutil.copytree(indexed_store, bad)
    set_packed_base(bad / name, 10**9)
    assert_clean_refusal(search_output(bad, "-k", "5"), name)


def shift_first_offsets(path: Path) -> None:
    """Moves the second block offset of a text column (`MSTEXT01` header of 40 bytes, the
    dictionary padded to 8 bytes, then the blocks' offsets) by 5 bytes: block 0 and 1 read
    across their boundary."""
    data = bytearray(path.read_bytes())
    assert data[:8] == b"MSTEXT01"
    dictionary = int.from_bytes(data[24:32], "little")
    at = 40 + (dictionary + 7) // 8 * 8 + 8
    value = int.from_bytes(data[at : at + 8], "little") + 5
    data[at : at + 8] = value.to_bytes(8, "little")
    path.write_bytes(bytes(data))


def test_corrupt_offsets_never_print_a_wrong_smiles(indexed_store, tmp_path):
    """A shifted block offset would make SMILES or ids span blocks: refused, naming the column
    (the reader checks the file before the first string it reads)."""
    for name in ("smiles.blocks", "ids.blocks"):
        bad = tmp_path / name
        shutil.copytree(indexed_store, bad)
        shift_first_offsets(bad / name)
        store = molsift.open_store(bad, verify=False)
        with pytest.raises(molsift.StoreError, match=name):
            list(store.smiles if name.startswith("smiles") else store.ids)


def test_info_checks_the_planes(indexed_store, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(indexed_store, bad)
    damage(bad / "planes.data.u8", 7, flips=1)
    assert_clean_refusal(molsift_run("info", bad), "planes.data.u8")
    ok = molsift_run("info", indexed_store)
    n = len(os.listdir(indexed_store))
    assert ok.returncode == 0 and f"all {n} files verified" in ok.stdout, ok.stdout


def test_deleted_store_file_is_refused(indexed_store, tmp_path):
    names = [n for n in STORE_FILES if n.startswith("planes.")]
    for name in [*names, "ids.blocks", "smiles.blocks", "input_order.packed"]:
        bad = tmp_path / name
        shutil.copytree(indexed_store, bad)
        (bad / name).unlink()
        assert_clean_refusal(search_output(bad, "-k", "3"), name)


@pytest.mark.parametrize(
    "version",
    [
        '"1"',
        "-1",
        str(2**40),
        "null",
    ],
)
def test_manifest_version_is_reported_as_written(indexed_store, tmp_path, version):
    bad = tmp_path / "bad"
    shutil.copytree(indexed_store, bad)
    text = (bad / "manifest.json").read_text()
    assert '"format_version": 2,' in text
    (bad / "manifest.json").write_text(
        text.replace('"format_version": 2', f'"format_version": {version}')
    )
    r = molsift_run("info", bad)
    assert_clean_refusal(r, str(bad))
    assert f"store format version {version} is not supported" in r.stderr, r.stderr


def test_an_unsupported_version_names_the_version_molsift_reads(indexed_store, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(indexed_store, bad)
    text = (bad / "manifest.json").read_text()
    (bad / "manifest.json").write_text(text.replace('"format_version": 2', '"format_version": 3'))
    r = molsift_run("info", bad)
    assert_clean_refusal(r, str(bad))
    assert "reads version 2" in r.stderr, r.stderr


def test_a_version_1_store_is_refused_naming_upgrade(tmp_path, bundled_smi):
    """Version 1 (the staging format) is read only by `molsift upgrade`: every other verb
    refuses it in one line that says so."""
    from molsift import ingestion

    lib = small_library(tmp_path / "lib.smi", bundled_smi, 0, 30)
    old = tmp_path / "old.store"
    ingestion.ingest(lib, old, workers=1, progress=False, version=1)
    for args in (("info", old), ("search", old, "-q", QUERIES[0], "-k", "3")):
        r = molsift_run(*args)
        assert_clean_refusal(r, "molsift upgrade")
        assert r.stderr.count("\n") == 1, r.stderr
    assert molsift_run("upgrade", old, "-o", tmp_path / "new.store").returncode == 0
    assert search_output(tmp_path / "new.store", "-k", "3").returncode == 0


def test_corrupt_ids_names_the_file(indexed_store, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(indexed_store, bad)
    data = bytearray((bad / "ids.blocks").read_bytes())
    data[-1] ^= 0xFF  # the last block's check value
    (bad / "ids.blocks").write_bytes(bytes(data))
    store = molsift.open_store(bad, verify=False)
    with pytest.raises(molsift.StoreError, match=r"ids\.blocks"):
        list(store.ids)


def test_store_without_manifest_checksum_is_refused(indexed_store, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(indexed_store, bad)
    m = json.loads((bad / "manifest.json").read_text())
    m["fingerprint"]["params"]["radius"] = 3  # a silent change of meaning, caught by the checksum
    (bad / "manifest.json").write_text(json.dumps(m, indent=2))
    assert_clean_refusal(molsift_run("info", bad), "manifest.json")


# ------------------------------------------------------------------ defect 4: search vs overwrite

RACE_SCRIPT = """
import os, sys, molsift
path, stop, out = sys.argv[1], sys.argv[2], sys.argv[3]
rounds = 0
with open(out, "w") as f:
    while rounds == 0 or not os.path.exists(stop):  # until the writer is done
        rounds += 1
        try:
            s = molsift.open_store(path, verify=False)
            hits = s.search_batch(sys.argv[4:], k=3)
            answer = [[(s.ids[i], round(score, 6), s.smiles[i]) for i, score in h] for h in hits]
            print(repr(answer), file=f)
        except molsift.StoreError as e:
            print("ERROR", e, file=f)
        f.flush()
"""


def race_answers(out: Path) -> list:
    return out.read_text().splitlines() if out.exists() else []


def test_search_during_overwrite_sees_one_store(tmp_path, bundled_smi):
    """Searches while `ingest --overwrite` swaps two different stores in: every answer is
    exactly one store's answer (ids, scores and SMILES of one generation)."""
    a = small_library(tmp_path / "a.smi", bundled_smi, 0, 300)
    b = small_library(tmp_path / "b.smi", bundled_smi, 300, 300)
    store = tmp_path / "s.store"
    answers = []
    for i, lib in enumerate((a, b)):
        assert (
            molsift_run("ingest", lib, "-o", store, "-q", "-j", "1", "--overwrite").returncode == 0
        )
        subprocess.run(
            [sys.executable, "-c", RACE_SCRIPT, store, store, tmp_path / f"ans{i}", *QUERIES],
            check=True,
        )
        answers += race_answers(tmp_path / f"ans{i}")
    assert len(answers) == 2 and answers[0] != answers[1]
    stop, out = tmp_path / "stop", tmp_path / "race.txt"
    reader = subprocess.Popen(
        [sys.executable, "-c", RACE_SCRIPT, store, stop, out, *QUERIES],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 120
    while not race_answers(out) and time.time() < deadline:  # the reader is searching
        time.sleep(0.1)
    overwrites = 0
    while overwrites < 6 or (set(race_answers(out)) < set(answers) and overwrites < 30):
        lib = (a, b)[overwrites % 2]
        r = molsift_run("ingest", lib, "-o", store, "-q", "-j", "1", "--overwrite")
        assert r.returncode == 0, r.stderr
        overwrites += 1
    stop.write_text("")
    _, err = reader.communicate(timeout=300)
    assert reader.returncode == 0 and "Traceback" not in err, err
    lines = race_answers(out)
    errors = [ln for ln in lines if ln.startswith("ERROR")]
    assert not errors, errors[:3]
    assert set(lines) == set(answers), "every answer is one store's, and both were seen"
    assert len(lines) >= 20, len(lines)


# ------------------------------------------------------------------ defect 5: orphans, leftovers


def processes_with(marker: str) -> list:
    """The processes whose environment holds `marker` ("NAME=value")."""
    name, value = marker.encode().split(b"=", 1)
    return [pid for pid in procs.pids() if procs.environ(pid).get(name) == value]


def test_kill9_of_ingest_leaves_no_orphans_and_the_next_run_no_leftovers(tmp_path, bundled_smi):
    lib = tmp_path / "lib.smi"
    text = Path(bundled_smi).read_text()
    lib.write_text(text * 20)
    out = tmp_path / "lib.store"
    marker = f"MOLSIFT_TEST_RUN={uuid.uuid4().hex}"
    env = dict(os.environ, **dict([marker.split("=")]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "molsift", "ingest", lib, "-o", out, "-j", "2", "-q"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 120
    while time.time() < deadline and len(processes_with(marker)) < 3:  # main + 2 workers
        time.sleep(0.2)
    assert len(processes_with(marker)) >= 3
    # kill mid-work: once a worker has finished a part (a fixed sleep could land after the end)
    while time.time() < deadline and not list(tmp_path.glob(".lib.store.ingest-*/part-*")):
        time.sleep(0.05)
    assert proc.poll() is None, "the ingest finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 10
    while time.time() < deadline and processes_with(marker):
        time.sleep(0.2)
    assert processes_with(marker) == []  # workers and the resource tracker died with it
    leftovers = [n for n in os.listdir(tmp_path) if n.startswith(".lib.store.")]
    assert leftovers  # the killed run's work directory, for the next run to sweep
    r = molsift_run(
        "ingest",
        small_library(tmp_path / "small.smi", bundled_smi, 0, 30),
        "-o",
        out,
        "-q",
        "-j",
        "1",
    )
    assert r.returncode == 0, r.stderr
    assert sorted(n for n in os.listdir(tmp_path) if n.startswith(".")) == []


def test_failed_ingest_removes_its_work_directory(tmp_path, bundled_smi):
    lib = small_library(tmp_path / "lib.smi", bundled_smi, 0, 30)
    out = tmp_path / "s.store"
    r = molsift_run("ingest", lib, "-o", out, "-q", "--bits", "100")  # not a multiple of 64
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert os.listdir(tmp_path) == ["lib.smi"]


@pytest.mark.parametrize(
    ("flag", "verb"),
    [("--pattern", SUBSTRUCTURE), ("--analogs", ANALOGS)],
    ids=["pattern", "analogs"],
)
def test_concurrent_index_builds_all_succeed(indexed_store, tmp_path, flag, verb):
    """Four `molsift index` of one kind on one store at once: each waits for the one before,
    all succeed, and the store answers as before (search, and the rebuilt index's search)."""
    store = tmp_path / "s.store"
    shutil.copytree(indexed_store, store)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "molsift", "index", store, flag, "-j", "1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    assert molsift_run("info", store).returncode == 0
    assert sorted(n for n in os.listdir(store) if n.startswith(".")) == []
    assert sorted(os.listdir(store)) == STORE_FILES
    if flag == "--pattern":
        # a killed index run's temporary file is swept by the next one
        host = os.uname().nodename
        (store / f".pattern.screen.u8.tmp-999999999-1@{host}").write_bytes(b"x" * 100)
        assert molsift_run("index", store, flag, "-j", "1").returncode == 0
        assert sorted(n for n in os.listdir(store) if n.startswith(".")) == []
    assert search_output(store, "-k", "5").stdout == search_output(indexed_store, "-k", "5").stdout
    got, want = (
        molsift_run(verb[0], store, *verb[1:]),
        molsift_run(verb[0], indexed_store, *verb[1:]),
    )
    assert got.returncode == want.returncode == 0, got.stderr + want.stderr
    assert got.stdout.replace(str(store), "S") == want.stdout.replace(str(indexed_store), "S")


# ------------------------------------------------------------- issue 40, defect 13: two writers


def test_a_second_writer_onto_one_output_is_refused_and_the_first_finishes(tmp_path, bundled_smi):
    """Issue 40, defect 13: two `ingest --overwrite` onto one `-o` (scripts/demo.sh run twice),
    the second started while the first worked: the first failed with `.pattern.planes.u64.tmp-...:
    No such file or directory`. The second (an ingest, an upgrade onto it) is refused in one
    line naming the first; an index of it waits for its turn; the first finishes."""
    from molsift import ingestion

    lib = tmp_path / "lib.smi"
    lib.write_text(Path(bundled_smi).read_text())
    source = tmp_path / "small.store"  # a version-1 store, for `upgrade` onto the output
    small = small_library(tmp_path / "small.smi", bundled_smi, 0, 30)
    ingestion.ingest(small, source, workers=1, progress=False, version=1)
    out = tmp_path / "s.store"
    first = subprocess.Popen(
        [sys.executable, "-m", "molsift", "ingest", lib, "-o", out, "--overwrite", "-q", "-j", "1"],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 120
    while not any(n.startswith(".s.store.") for n in os.listdir(tmp_path)):  # it is at work
        assert first.poll() is None and time.time() < deadline, "the first ingest did not start"
        time.sleep(0.05)
    index = subprocess.Popen(
        [sys.executable, "-m", "molsift", "index", out, "--analogs", "-j", "1"],
        stderr=subprocess.PIPE,
        text=True,
    )
    for second in (
        ["ingest", small, "-o", out, "--overwrite", "-q", "-j", "1"],
        ["upgrade", source, "-o", out, "--overwrite"],
    ):
        r = molsift_run(*second)
        assert first.poll() is None, "the first ingest ended before the second one started"
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert r.stderr.startswith(
            f"molsift: error: another molsift (pid {first.pid}, molsift ingest) is writing {out}"
        ), r.stderr
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    _, err = index.communicate(timeout=300)
    assert index.returncode == 0, err
    assert "waiting for it to end" in err or not err, err  # it may have started after the end
    assert molsift_run("info", out).returncode == 0
    assert sorted(n for n in os.listdir(tmp_path) if n.startswith(".")) == []  # no lock left


#: where ingest may fail after the workers: the substructure rows transposed into planes, the
#: one store's substructure index written from them, the one store's analog index; (module,
#: class or None, name, which argument is the directory the phase writes into)
FAILURE_POINTS = {
    "one store": ("molsift.store", None, "write_complete", 1),
    "substructure planes": ("molsift.substructure.build", "PatternParts", "__init__", 1),
    "substructure index": ("molsift.substructure.build", "PatternParts", "write_index", 1),
    "analog index": ("molsift.analogs.search", None, "index_analogs", 0),
}


@pytest.mark.parametrize("where", list(FAILURE_POINTS))
def test_ingest_overwrite_swaps_the_store_in_only_when_every_index_is_written(
    tmp_path, bundled_smi, monkeypatch, where
):
    """Issue 40, defect 10: a killed `ingest --overwrite --dedupe` during its substructure-index
    phase had already replaced the old store with one that passed `info` and lacked the index.
    Here an index fails half-way (in each phase that writes one): the old store must still be
    there, whole."""
    import importlib

    old = small_library(tmp_path / "old.smi", bundled_smi, 0, 40)
    new = small_library(tmp_path / "new.smi", bundled_smi, 40, 60)
    store = tmp_path / "s.store"
    molsift.ingest(old, store, workers=1, progress=False)
    before = {p.name: p.read_bytes() for p in store.iterdir()}
    called = []
    module, owner, name, arg = FAILURE_POINTS[where]

    def fail_half_way(*args, **kwargs):
        called.append(where)
        path = Path(args[arg])
        path = path if path.is_dir() else path.parent  # the planes' file: its directory
        (path / ".pattern.planes.u64.tmp-1-1@x").write_bytes(b"half")
        raise OSError(28, "No space left on device")

    target = importlib.import_module(module)
    monkeypatch.setattr(getattr(target, owner) if owner else target, name, fail_half_way)
    with pytest.raises(OSError):
        molsift.ingest(new, store, workers=1, progress=False, overwrite=True, dedupe=True)
    assert called == [where]
    assert {p.name: p.read_bytes() for p in store.iterdir()} == before
    assert sorted(os.listdir(tmp_path)) == ["new.smi", "old.smi", "s.store"]
    assert len(molsift.open_store(store)) == 40


def test_a_store_with_an_analog_index_can_be_overwritten(tmp_path, bundled_smi):
    """`ingest --overwrite` refused a store with an analog index ("analogs.failed.tsv is not a
    file of a molsift store"): the overwrite rule did not know the analog index's files."""
    lib = small_library(tmp_path / "lib.smi", bundled_smi, 0, 30)
    store = tmp_path / "s.store"
    for _ in range(2):
        r = molsift_run("ingest", lib, "-o", store, "-q", "-j", "1", "--overwrite")
        assert r.returncode == 0, r.stderr
        assert (store / "analogs.json").exists()


def test_a_disk_that_fills_during_ingest_leaves_no_store(tmp_path, bundled_smi):
    """Issue 40, defect 10: a disk that filled during ingest's column-index build (a 6 MB
    tmpfs) exited 2 yet left a store that passed `info` and answered, with a 4.5 MB temporary
    inside. Now: exit 2, one line, nothing at the output and nothing left beside it."""
    where = tmp_path / "small"
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=6m", "none", str(where)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.decode().strip()}")
    try:
        out = where / "nci.store"
        r = molsift_run("ingest", bundled_smi, "-o", out, "-q", "-j", "2")
        assert r.returncode == 2, (r.returncode, r.stderr[-400:])
        assert "No space left on device" in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert os.listdir(where) == [], os.listdir(where)
    finally:
        subprocess.run(["umount", str(where)], capture_output=True)


def test_analogs_never_rank_by_a_damaged_fingerprint_file(tmp_path, bundled_smi):
    """The long corrupter run (issue 40) found `analogs` on a version-1 store ranking its hits
    by Tanimoto over a damaged or swapped fingerprints.u64, exit 0: the mapped arrays were read
    from Python without their checksum check. The one store's fingerprints are its planes."""
    lib = small_library(tmp_path / "lib.smi", bundled_smi, 0, 300)
    store = tmp_path / "s.store"
    molsift.ingest(lib, store, workers=1, progress=False, analogs=True, pattern=False)
    args = ("analogs", store, "-q", "CC(=O)Nc1ccc(O)cc1", "--dist", "2", "-k", "10")
    assert molsift_run(*args).returncode == 0
    planes = store / "planes.data.u8"
    data = bytearray(planes.read_bytes())
    middle = len(data) // 2 // 4096 * 4096
    data[middle : middle + 4096] = bytes(len(data[middle : middle + 4096]))
    assert bytes(data) != planes.read_bytes()
    planes.write_bytes(bytes(data))
    assert_clean_refusal(molsift_run(*args), "planes.data.u8")
    with pytest.raises(molsift.StoreError, match=r"planes\.data\.u8"):
        molsift.open_store(store, verify=False).fingerprints
