"""Ingest under real `mpirun -n 1..4 --oversubscribe`: the same counts and byte-identical
fingerprints (after sorting by id) as a single-process ingest, for plain and gzip input; for
plain input the same one store (format version 2, every index) byte for byte."""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import run_mpi
from golden import digest

import molsift

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def serial_store(tmp_path_factory, bundled_smi):
    out = tmp_path_factory.mktemp("serial") / "s"
    molsift.ingest(bundled_smi, out, workers=1, progress=False)
    return molsift.open_store(out)


def by_id(store):
    order = np.argsort(np.array(list(store.ids)), kind="stable")
    return np.ascontiguousarray(store.fingerprints[order]), [store.ids[i] for i in order]


@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_mpi_ingest_matches_serial(tmp_path, bundled_smi, serial_store, ranks):
    out = tmp_path / "mpi.store"
    proc = run_mpi(ranks, ["ingest", str(bundled_smi), "-o", str(out), "--json"])
    assert proc.returncode == 0, proc.stderr
    store = molsift.open_store(out)
    assert store.counts == serial_store.counts
    assert store.manifest["provenance"]["workers"] == ranks
    assert store.manifest["provenance"]["executor"] == "mpi"
    fps, ids = by_id(store)
    ref_fps, ref_ids = by_id(serial_store)
    assert ids == ref_ids
    assert fps.tobytes() == ref_fps.tobytes()
    # parts are merged in input order, so the store is identical, not only equal after sorting:
    # every file, the manifest without its provenance
    assert list(store.ids) == list(serial_store.ids)
    assert digest(out) == digest(Path(serial_store.path))


@pytest.mark.parametrize("ranks", [2, 3])
def test_mpi_ingest_of_gzip_input(tmp_path, bundled_smi, serial_store, ranks):
    gz = tmp_path / "nci.smi.gz"
    with open(bundled_smi, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    out = tmp_path / "mpi.store"
    proc = run_mpi(ranks, ["ingest", str(gz), "-o", str(out), "-q", "--chunk-records", "500"])
    assert proc.returncode == 0, proc.stderr
    store = molsift.open_store(out)
    assert store.counts == serial_store.counts
    assert np.array_equal(store.fingerprints, serial_store.fingerprints)
    # every file but the manifest and rejects.tsv (both name the input) the serial store's
    files, ref = digest(out), digest(Path(serial_store.path))
    for d in (files, ref):
        del d["manifest.json"], d["rejects.tsv"]
    assert files == ref


def test_mpi_error_is_reported_not_hung(tmp_path):
    proc = run_mpi(
        2, ["ingest", str(tmp_path / "missing.smi"), "-o", str(tmp_path / "s")], timeout=120
    )
    assert proc.returncode != 0
    assert "missing.smi" in proc.stderr


def test_mpirun_without_mpi4py_says_so_in_one_line(tmp_path, bundled_smi):
    """A Python without mpi4py (molsift installed without its `mpi` extra) under mpirun: each
    rank says in one line what is missing and how to install it, no traceback, exit 1."""
    import subprocess

    from conftest import molsift_cmd, mpi_env, mpirun_cmd

    fake = tmp_path / "nompi" / "mpi4py"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        'raise ModuleNotFoundError("No module named \'mpi4py\'", name="mpi4py")\n'
    )
    env = mpi_env()
    env["PYTHONPATH"] = os.pathsep.join([str(fake.parent), env.get("PYTHONPATH", "")])
    store = tmp_path / "s"
    molsift.ingest(bundled_smi, store, workers=1, progress=False)
    for args in (["search", str(store), "-q", "CCO", "-k", "3"],
                 ["ingest", str(bundled_smi), "-o", str(tmp_path / "t")]):  # fmt: skip
        proc = subprocess.run(mpirun_cmd(2) + molsift_cmd() + args, env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert proc.returncode != 0, args
        assert "Traceback" not in proc.stderr, proc.stderr
        said = [ln for ln in proc.stderr.splitlines() if ln.startswith("molsift: error:")]
        assert said, proc.stderr
        assert "mpi4py cannot be imported" in said[0] and "molsift[mpi]" in said[0]
        assert proc.stderr.count("mpi4py cannot be imported") == 2, proc.stderr  # one per rank


def test_mpi_ingest_onto_an_output_being_written_is_refused_on_every_rank(tmp_path, bundled_smi):
    """Issue 40, defect 13, under mpirun: rank 0 finds the output's lock held and every rank
    stops with the same one-line error naming the holder (no rank left waiting)."""
    import os

    from molsift.outputlock import output_lock

    out = tmp_path / "s.store"
    with output_lock(str(out), "ingest"):  # this test process plays the first writer
        proc = run_mpi(2, ["ingest", str(bundled_smi), "-o", str(out), "-q"], timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert f"another molsift (pid {os.getpid()}, molsift ingest) is writing {out}" in proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()
