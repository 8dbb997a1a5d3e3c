"""The substructure index (pattern planes and molecule graphs) of a store: the same bytes for
any worker or rank count, added to an older store by `molsift index --pattern`, refused when
missing, damaged or built for other screening bits, and never half-written: a killed build
leaves the store as it was."""

from __future__ import annotations

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

HEADER, PLANES, GRAPHS = _core.PATTERN_FILES


@pytest.fixture(scope="module")
def plain_store(tmp_path_factory, bundled_smi) -> Path:
    """The NCI store without a substructure index."""
    out = tmp_path_factory.mktemp("plain") / "nci.store"
    molsift.ingest(bundled_smi, out, workers=1, pattern=False, index=False, progress=False)
    return out


def copy_store(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def planes_of(store: Path) -> bytes:
    return (store / PLANES).read_bytes()


def graphs_of(store: Path) -> bytes:
    return (store / GRAPHS).read_bytes()


@pytest.fixture(scope="module")
def serial_graphs(serial_planes, plain_store, tmp_path_factory) -> bytes:
    store = copy_store(plain_store, tmp_path_factory.mktemp("serial-g") / "s.store")
    from molsift.substructure import build_pattern_index

    build_pattern_index(store, workers=1, progress=False)
    data = graphs_of(store)
    n = len(molsift.open_store(store))
    assert data[:8] == b"MSGRAPH1" and int.from_bytes(data[8:16], "little") == n
    return data


@pytest.fixture(scope="module")
def serial_planes(plain_store, tmp_path_factory) -> bytes:
    store = copy_store(plain_store, tmp_path_factory.mktemp("serial") / "s.store")
    from molsift.substructure import build_pattern_index

    size = build_pattern_index(store, workers=1, progress=False)
    assert size == len(planes_of(store)) > 0
    return planes_of(store)


def test_index_is_the_same_for_any_worker_count(
    plain_store, serial_planes, serial_graphs, tmp_path
):
    store = copy_store(plain_store, tmp_path / "j2.store")
    proc = subprocess.run(
        [sys.executable, "-m", "molsift", "index", str(store), "--pattern", "-j", "2"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert planes_of(store) == serial_planes
    assert graphs_of(store) == serial_graphs
    opened = molsift.open_store(store)  # every checksum, the new files' too
    assert opened.has_pattern_index


@pytest.mark.mpi
def test_index_is_the_same_under_mpirun(plain_store, serial_planes, serial_graphs, tmp_path):
    store = copy_store(plain_store, tmp_path / "mpi.store")
    proc = run_mpi(2, ["index", str(store), "--pattern"])
    assert proc.returncode == 0, proc.stderr
    assert planes_of(store) == serial_planes
    assert graphs_of(store) == serial_graphs
    assert molsift.open_store(store).has_pattern_index


def test_ingest_builds_it_by_default(bundled_smi, serial_planes, tmp_path):
    out = tmp_path / "d.store"
    report = molsift.ingest(bundled_smi, out, workers=2, progress=False)
    assert report.pattern_bytes == len(serial_planes)
    assert planes_of(out) == serial_planes
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


def test_a_damaged_plane_is_an_error_not_a_wrong_answer(plain_store, serial_planes, tmp_path):
    store = copy_store(plain_store, tmp_path / "bad.store")
    from molsift.substructure import build_pattern_index, parse_query

    build_pattern_index(store, workers=1, progress=False)
    bits = parse_query("c1ccccc1").bits
    plane = len(serial_planes) // _core.Store(str(store), full=False).pattern_index().bits
    data = bytearray(planes_of(store))
    data[bits[0] * plane] ^= 0x01
    (store / PLANES).write_bytes(bytes(data))
    with pytest.raises(molsift.StoreError, match="checksum"):
        molsift.open_store(store)  # the full check
    with pytest.raises(molsift.StoreError, match=f"plane {bits[0]}"):
        molsift.open_store(store, verify=False).substructure("c1ccccc1")


def test_a_damaged_graph_is_an_error_not_a_wrong_answer(plain_store, tmp_path):
    store = copy_store(plain_store, tmp_path / "badg.store")
    from molsift.substructure import build_pattern_index

    build_pattern_index(store, workers=1, progress=False)
    good = molsift.open_store(store).substructure("c1ccccc1", workers=1)
    assert len(good) > 0
    data = bytearray(graphs_of(store))
    data[-5] ^= 0x04  # a bond's type or ring flag of the last molecule
    (store / GRAPHS).write_bytes(bytes(data))
    with pytest.raises(molsift.StoreError, match="checksum"):
        molsift.open_store(store)  # the full check
    with pytest.raises(molsift.StoreError, match=f"{GRAPHS}.*checksum"):
        molsift.open_store(store, verify=False).substructure("c1ccccc1", workers=1)


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
    while not any(p.name.startswith(f".{PLANES}") for p in store.iterdir()):
        assert proc.poll() is None and time.time() < deadline, "the build never started"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    opened = molsift.open_store(store)  # still a valid store, without the index
    assert not opened.has_pattern_index
    assert {p.name: p.read_bytes() for p in store.iterdir() if p.name in before} == before
    from molsift.substructure import build_pattern_index

    build_pattern_index(store, workers=1, progress=False)
    assert molsift.open_store(store).has_pattern_index
    assert not [p for p in store.iterdir() if p.name.startswith(".")], "leftovers not swept"


def test_overwrite_replaces_a_store_with_a_substructure_index(bundled_smi, tmp_path):
    out = tmp_path / "o.store"
    molsift.ingest(bundled_smi, out, workers=1, index=False, progress=False)
    assert (out / HEADER).exists()
    molsift.ingest(bundled_smi, out, workers=1, index=False, overwrite=True, progress=False)
    assert molsift.open_store(out).has_pattern_index
