"""The substructure index of a store (`pattern.json`, the compact screen `pattern.screen.u8`
and the graph blocks `pattern.graphs.zst`): the same bytes for any worker or rank count and
the same as ingest writes, added to a store ingested without it by `molsift index --pattern`,
refused when missing, damaged (an error naming the file, never a wrong answer) or built for
other screening bits, and never half-written: a killed build leaves the store as it was."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_mpi

import molsift
from molsift import _core

HEADER = _core.PATTERN_FILES[0]
SCREEN, GRAPHS = _core.PATTERN_COMPACT_FILES


@pytest.fixture(scope="module")
def plain_store(tmp_path_factory, bundled_smi) -> Path:
    """The NCI store without a substructure index (nor an analog index)."""
    out = tmp_path_factory.mktemp("plain") / "nci.store"
    molsift.ingest(bundled_smi, out, workers=1, pattern=False, analogs=False, progress=False)
    return out


def copy_store(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def index_of(store: Path) -> dict:
    """The index's three files, {name: bytes}."""
    return {name: (store / name).read_bytes() for name in (HEADER, SCREEN, GRAPHS)}


def flip(path: Path, at: int, mask: int) -> None:
    """One byte of `path` changed in place (its size kept)."""
    data = bytearray(path.read_bytes())
    data[at] ^= mask
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def serial_index(plain_store, tmp_path_factory) -> dict:
    store = copy_store(plain_store, tmp_path_factory.mktemp("serial") / "s.store")
    from molsift.substructure import build_pattern_index

    size = build_pattern_index(store, workers=1, progress=False)
    index = index_of(store)
    assert size == len(index[SCREEN]) > 0
    n = len(molsift.open_store(store))
    graphs = index[GRAPHS]
    assert graphs[:8] == b"MSGRAPHZ" and int.from_bytes(graphs[8:16], "little") == n
    header = json.loads(index[HEADER])
    assert header["format"] == "molsift-pattern-index" and header["version"] == 2
    assert header["molecules"] == n and header["kept"]
    return index


def test_index_is_the_same_for_any_worker_count(plain_store, serial_index, tmp_path):
    store = copy_store(plain_store, tmp_path / "j2.store")
    proc = subprocess.run(
        [sys.executable, "-m", "molsift", "index", str(store), "--pattern", "-j", "2"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert index_of(store) == serial_index
    opened = molsift.open_store(store)  # every checksum, the new files' too
    assert opened.has_pattern_index


@pytest.mark.mpi
def test_index_is_the_same_under_mpirun(plain_store, serial_index, tmp_path):
    store = copy_store(plain_store, tmp_path / "mpi.store")
    proc = run_mpi(2, ["index", str(store), "--pattern"])
    assert proc.returncode == 0, proc.stderr
    assert index_of(store) == serial_index
    assert molsift.open_store(store).has_pattern_index


def test_ingest_builds_it_by_default(bundled_smi, serial_index, tmp_path):
    out = tmp_path / "d.store"
    report = molsift.ingest(bundled_smi, out, workers=2, analogs=False, progress=False)
    assert report.pattern_bytes == sum(len(data) for data in serial_index.values())
    assert index_of(out) == serial_index
    assert "substructure index" in report.summary()


def test_a_store_without_it_says_how_to_build_it(plain_store):
    store = molsift.open_store(plain_store)
    assert not store.has_pattern_index
    with pytest.raises(molsift.StoreError, match=r"molsift index .* --pattern"):
        store.substructure("c1ccccc1")
    proc = subprocess.run(
        [sys.executable, "-m", "molsift", "substructure", str(plain_store), "-q", "c1ccccc1"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "--pattern" in proc.stderr and "Traceback" not in proc.stderr


@pytest.fixture(scope="module")
def indexed_store(plain_store, tmp_path_factory) -> Path:
    """The NCI store with its substructure index, to copy and damage."""
    store = copy_store(plain_store, tmp_path_factory.mktemp("indexed") / "i.store")
    from molsift.substructure import build_pattern_index

    build_pattern_index(store, workers=1, progress=False)
    return store


# Pyridine: a query with kept screen planes (benzene's bits are all held by more than half of
# NCI, so its screen reads no plane).
PYRIDINE = "c1ccncc1"


def rarest_kept_plane(store: Path, query: str) -> dict:
    """The kept plane (`bit`, `start`, `bytes`) a screen for `query` reads first."""
    from molsift.substructure import parse_query

    header = json.loads((store / HEADER).read_text())
    kept = {k["bit"]: k for k in header["kept"]}
    bits = [b for b in parse_query(query).bits if b in kept]
    assert bits, "the query reads no plane of the screen"
    return kept[min(bits, key=lambda b: (header["bit_counts"][b], b))]


def test_a_damaged_plane_is_an_error_not_a_wrong_answer(indexed_store, tmp_path):
    store = copy_store(indexed_store, tmp_path / "bad.store")
    good = molsift.open_store(store).substructure(PYRIDINE, workers=1)
    assert len(good) > 0
    plane = rarest_kept_plane(store, PYRIDINE)
    flip(store / SCREEN, plane["start"] + plane["bytes"] - 1, 0x01)  # its last container byte
    with pytest.raises(molsift.StoreError, match=f"{SCREEN}.*checksum"):
        molsift.open_store(store)  # the full check
    with pytest.raises(molsift.StoreError, match=f"{SCREEN}.*plane of bit {plane['bit']}"):
        molsift.open_store(store, verify=False).substructure(PYRIDINE, workers=1)


def test_a_damaged_graph_is_an_error_not_a_wrong_answer(indexed_store, tmp_path):
    store = copy_store(indexed_store, tmp_path / "badg.store")
    good = molsift.open_store(store).substructure("c1ccccc1", workers=1)
    assert len(good) > 0
    flip(store / GRAPHS, -5, 0x04)  # in the last block's frame
    with pytest.raises(molsift.StoreError, match=f"{GRAPHS}.*checksum"):
        molsift.open_store(store)  # the full check
    with pytest.raises(molsift.StoreError, match=f"{GRAPHS}.*checksum"):
        molsift.open_store(store, verify=False).substructure("c1ccccc1", workers=1)


def test_a_damaged_header_is_an_error_not_a_wrong_answer(indexed_store, tmp_path):
    """pattern.json with one kept plane's checksum changed (its size kept: the plane now looks
    damaged) is refused by name, as is any truncated index file."""
    store = copy_store(indexed_store, tmp_path / "badh.store")
    plane = rarest_kept_plane(store, PYRIDINE)
    text = (store / HEADER).read_text()
    old = f'"xxh3": "{plane["xxh3"]}"'
    assert text.count(old) == 1
    new = f'"xxh3": "{int(plane["xxh3"], 16) ^ 1:016x}"'
    (store / HEADER).write_text(text.replace(old, new))
    for verify in (True, False):
        with pytest.raises(molsift.StoreError, match=f"{HEADER}.*checksum"):
            molsift.open_store(store, verify=verify).substructure(PYRIDINE, workers=1)
    for name in (HEADER, SCREEN, GRAPHS):
        cut = copy_store(indexed_store, tmp_path / f"cut-{name}.store")
        (cut / name).write_bytes((cut / name).read_bytes()[:-1])
        for verify in (True, False):
            with pytest.raises(molsift.StoreError, match=f"{name}: truncated"):
                molsift.open_store(cut, verify=verify).substructure(PYRIDINE, workers=1)


def test_an_index_built_for_other_bits_is_refused(plain_store, tmp_path, monkeypatch):
    store = copy_store(plain_store, tmp_path / "other.store")
    from molsift.substructure import build

    real = build.meaning
    monkeypatch.setattr(build, "meaning", lambda: {**real(), "features": {"version": -1}})
    build.build_pattern_index(store, workers=1, progress=False)
    monkeypatch.setattr(build, "meaning", real)
    with pytest.raises(molsift.StoreError, match="rebuild it"):
        molsift.open_store(store).substructure("CCO")


def test_a_killed_build_leaves_the_store_as_it_was(plain_store, tmp_path):
    store = copy_store(plain_store, tmp_path / "killed.store")
    before = {p.name: p.read_bytes() for p in store.iterdir()}
    proc = subprocess.Popen(
        [sys.executable, "-m", "molsift", "index", str(store), "--pattern", "-j", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 60
    # the build's files under their temporary names (`.NAME.KIND-PID-NANOS@HOST`)
    while not any(p.name.startswith(".pattern.") for p in store.iterdir()):
        assert proc.poll() is None and time.time() < deadline, "the build never started"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    opened = molsift.open_store(store)  # still a valid store, without the index
    assert not opened.has_pattern_index
    assert {p.name: p.read_bytes() for p in store.iterdir() if p.name in before} == before
    assert not {HEADER, SCREEN, GRAPHS} & {p.name for p in store.iterdir()}
    from molsift.substructure import build_pattern_index

    build_pattern_index(store, workers=1, progress=False)
    assert molsift.open_store(store).has_pattern_index
    assert not [p for p in store.iterdir() if p.name.startswith(".")], "leftovers not swept"


def test_overwrite_replaces_a_store_with_a_substructure_index(bundled_smi, tmp_path):
    out = tmp_path / "o.store"
    molsift.ingest(bundled_smi, out, workers=1, analogs=False, progress=False)
    assert (out / HEADER).exists() and (out / SCREEN).exists()
    molsift.ingest(bundled_smi, out, workers=1, analogs=False, overwrite=True, progress=False)
    assert molsift.open_store(out).has_pattern_index


def test_a_parts_rows_and_graph_records_are_read_only_when_they_agree(tmp_path):
    """`read_part_files`, what the staged index and MPI ingest's slices both read a part's
    screening rows and graph records through: a part without molecules reads as none; rows,
    record lengths and records that do not add up are refused naming the part."""
    import numpy as np

    from molsift.substructure.build import WORDS_PER_ROW, read_part_files

    part = str(tmp_path / "part-0")

    def write(rows: int, lengths: list[int], record_bytes: int) -> None:
        np.zeros(rows * WORDS_PER_ROW, dtype="<u8").tofile(part + ".rows.u64")
        np.asarray(lengths, dtype="<u4").tofile(part + ".glen.u32")
        Path(part + ".grec.bin").write_bytes(b"\x01" * record_bytes)

    write(0, [], 0)
    rows, lengths = read_part_files(part)
    assert rows.shape == (0, WORDS_PER_ROW) and len(lengths) == 0
    write(2, [3, 4], 7)
    rows, lengths = read_part_files(part)
    assert rows.shape == (2, WORDS_PER_ROW) and lengths.tolist() == [3, 4]
    for bad in ((1, [3, 4], 7), (2, [3, 4], 6), (0, [3], 3), (2, [], 0)):
        write(*bad)
        with pytest.raises(molsift.StoreError, match="part-0: its screening rows and graph"):
            read_part_files(part)
