"""Regression tests for issue 14's store defects, each named after the bug it pins: overwrite
deleting what is not a store (1), silent wrong answers from a damaged store (3), search racing
`ingest --overwrite` (4), orphans, leftovers and colliding index builds (5), and manifest
versions reported as "version 0" or a corrupt ids.txt not named (8)."""

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

import pytest
from conftest import molsift_run

import molsift
from molsift import _core

QUERIES = ["CC(=O)Nc1ccc(O)cc1", "c1ccccc1O", "CCN(CC)CC"]


def small_library(path: Path, bundled_smi: Path, start: int, n: int) -> Path:
    with open(bundled_smi) as f:
        lines = [ln for ln in f if ln.strip()][start : start + n]
    path.write_text("".join(lines))
    return path


@pytest.fixture(scope="module")
def indexed_store(tmp_path_factory, bundled_smi):
    """A 400-molecule store with its column index, and its undamaged search output."""
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
    shutil.copy(lib, store / "smiles.txt")  # an input named like a store file, inside the store
    r = molsift_run("ingest", store / "smiles.txt", "-o", store, "--overwrite", "-q")
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


STORE_FILES = sorted(
    set(_core.STORE_FILES.values()) | {"columns.json", "columns.planes.u64", "columns.order.u64"}
)


@pytest.mark.parametrize("name", STORE_FILES)
def test_damaged_store_is_refused_or_answers_the_same(indexed_store, tmp_path, name):
    """Flipped bits in any file: `info` refuses naming the file; `search` refuses naming it or
    prints exactly the undamaged store's hits (never a wrong score, id or SMILES)."""
    good = search_output(indexed_store, "-k", "5")
    assert good.returncode == 0, good.stderr
    for seed in range(3):
        bad = tmp_path / f"bad{seed}"
        shutil.copytree(indexed_store, bad)
        damage(bad / name, seed)
        info = molsift_run("info", bad)
        assert_clean_refusal(info, name)
        for extra in (["-k", "5"], ["-t", "0.3"]):
            ref = search_output(indexed_store, *extra).stdout
            r = search_output(bad, *extra)
            if r.returncode == 0:
                assert r.stdout == ref, f"{name} seed {seed}: a damaged store answered differently"
            else:
                assert_clean_refusal(r, name)


def test_corrupt_order_file_is_an_error_not_a_traceback(indexed_store, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(indexed_store, bad)
    data = bytearray((bad / "columns.order.u64").read_bytes())
    data[0:8] = (10**9).to_bytes(8, "little")  # a store position far out of range
    (bad / "columns.order.u64").write_bytes(bytes(data))
    assert_clean_refusal(search_output(bad, "-k", "5"), "columns.order.u64")


def test_corrupt_offsets_never_print_a_wrong_smiles(indexed_store, tmp_path):
    """A shifted offset would make SMILES span lines: refused, naming the offsets file."""
    for name in ("smiles.offsets.u64", "ids.offsets.u64"):
        bad = tmp_path / name
        shutil.copytree(indexed_store, bad)
        data = bytearray((bad / name).read_bytes())
        data[8 * 3 : 8 * 4] = (int.from_bytes(data[8 * 3 : 8 * 4], "little") + 5).to_bytes(
            8, "little"
        )
        (bad / name).write_bytes(bytes(data))
        store = molsift.open_store(bad, verify=False)
        with pytest.raises(molsift.StoreError, match=name):
            list(store.smiles if name.startswith("smiles") else store.ids)


def test_info_checks_the_column_index(indexed_store, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(indexed_store, bad)
    damage(bad / "columns.planes.u64", 7, flips=1)
    assert_clean_refusal(molsift_run("info", bad), "columns.planes.u64")
    ok = molsift_run("info", indexed_store)
    assert ok.returncode == 0 and "all 15 files verified" in ok.stdout, ok.stdout


def test_deleted_index_file_is_refused(indexed_store, tmp_path):
    for name in ("columns.json", "columns.planes.u64", "columns.order.u64", "ids.txt"):
        bad = tmp_path / name
        shutil.copytree(indexed_store, bad)
        (bad / name).unlink()
        assert_clean_refusal(search_output(bad, "-k", "3"), name)


@pytest.mark.parametrize("version", ['"1"', "-1", str(2**40), "null"])
def test_manifest_version_is_reported_as_written(indexed_store, tmp_path, version):
    bad = tmp_path / "bad"
    shutil.copytree(indexed_store, bad)
    text = (bad / "manifest.json").read_text()
    (bad / "manifest.json").write_text(
        text.replace('"format_version": 1', f'"format_version": {version}')
    )
    r = molsift_run("info", bad)
    assert_clean_refusal(r, str(bad))
    assert f"store format version {version} is not supported" in r.stderr, r.stderr


def test_corrupt_ids_names_the_file(indexed_store, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(indexed_store, bad)
    data = bytearray((bad / "ids.txt").read_bytes())
    data[0] = 0xFF  # not UTF-8
    (bad / "ids.txt").write_bytes(bytes(data))
    store = molsift.open_store(bad, verify=False)
    with pytest.raises(molsift.StoreError, match=r"ids\.txt"):
        store.ids[0]


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
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


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


def test_concurrent_index_builds_all_succeed(indexed_store, tmp_path):
    store = tmp_path / "s.store"
    shutil.copytree(indexed_store, store)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "molsift", "index", store],
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
    # a killed index run's temporary file is swept by the next one
    host = os.uname().nodename
    (store / f".columns.planes.u64.tmp-999999999-1@{host}").write_bytes(b"x" * 100)
    assert molsift_run("index", store).returncode == 0
    assert sorted(n for n in os.listdir(store) if n.startswith(".")) == []
    assert search_output(store, "-k", "5").stdout == search_output(indexed_store, "-k", "5").stdout


# ------------------------------------------------------------- issue 40, defect 13: two writers


def test_a_second_writer_onto_one_output_is_refused_and_the_first_finishes(tmp_path, bundled_smi):
    """Issue 40, defect 13: two `ingest --overwrite` onto one `-o` (scripts/demo.sh run twice),
    the second started while the first worked: the first failed with `.pattern.planes.u64.tmp-...:
    No such file or directory`. The second (an ingest, an upgrade onto it) is refused in one
    line naming the first; an index of it waits for its turn; the first finishes."""
    lib = tmp_path / "lib.smi"
    lib.write_text(Path(bundled_smi).read_text())
    source = tmp_path / "small.store"
    small = small_library(tmp_path / "small.smi", bundled_smi, 0, 30)
    assert molsift_run("ingest", small, "-o", source, "-q", "-j", "1").returncode == 0
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
        [sys.executable, "-m", "molsift", "index", out], stderr=subprocess.PIPE, text=True
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


def test_ingest_overwrite_swaps_the_store_in_only_when_every_index_is_written(
    tmp_path, bundled_smi, monkeypatch
):
    """Issue 40, defect 10: a killed `ingest --overwrite --dedupe` during its substructure-index
    phase had already replaced the old store with one that passed `info` and lacked the index.
    Here the substructure index fails half-way: the old store must still be there, whole."""
    from molsift import ingestion

    old = small_library(tmp_path / "old.smi", bundled_smi, 0, 40)
    new = small_library(tmp_path / "new.smi", bundled_smi, 40, 60)
    store = tmp_path / "s.store"
    molsift.ingest(old, store, workers=1, progress=False, analogs=True)
    before = {p.name: p.read_bytes() for p in store.iterdir()}

    def fail_half_way(path, *args):
        (Path(path) / ".pattern.planes.u64.tmp-1-1@x").write_bytes(b"half")
        raise OSError(28, "No space left on device")

    # the substructure index, written from the workers' rows after the merge
    monkeypatch.setattr(ingestion, "_index_from_parts", fail_half_way)
    with pytest.raises(OSError):
        molsift.ingest(new, store, workers=1, progress=False, overwrite=True, dedupe=True)
    assert {p.name: p.read_bytes() for p in store.iterdir()} == before
    assert sorted(os.listdir(tmp_path)) == ["new.smi", "old.smi", "s.store"]
    assert len(molsift.open_store(store)) == 40


def test_a_store_with_an_analog_index_can_be_overwritten(tmp_path, bundled_smi):
    """`ingest --overwrite` refused a store with an analog index ("analogs.failed.tsv is not a
    file of a molsift store"): the overwrite rule did not know the analog index's files."""
    lib = small_library(tmp_path / "lib.smi", bundled_smi, 0, 30)
    store = tmp_path / "s.store"
    for _ in range(2):
        r = molsift_run("ingest", lib, "-o", store, "-q", "-j", "1", "--analogs", "--overwrite")
        assert r.returncode == 0, r.stderr


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
    from Python without their checksum check."""
    lib = small_library(tmp_path / "lib.smi", bundled_smi, 0, 300)
    store = tmp_path / "s.store"
    molsift.ingest(lib, store, workers=1, progress=False, analogs=True, pattern=False)
    args = ("analogs", store, "-q", "CC(=O)Nc1ccc(O)cc1", "--dist", "2", "-k", "10")
    assert molsift_run(*args).returncode == 0
    fps = store / "fingerprints.u64"
    data = bytearray(fps.read_bytes())
    middle = len(data) // 2 // 4096 * 4096
    data[middle : middle + 4096] = bytes(4096)
    fps.write_bytes(bytes(data))
    assert_clean_refusal(molsift_run(*args), "fingerprints.u64")
    with pytest.raises(molsift.StoreError, match=r"fingerprints\.u64"):
        molsift.open_store(store, verify=False).fingerprints
