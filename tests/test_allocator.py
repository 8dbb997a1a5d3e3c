"""allocator.py: `molsift ingest` and `molsift screen` run their RDKit work on tcmalloc when it
is installed (the command restarts itself with it preloaded; spawned workers inherit it), on the
system allocator with MOLSIFT_ALLOCATOR=system, and the results are the same either way."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import time
from pathlib import Path

import procs
import pytest
from conftest import BUNDLED_SMI, molsift_cmd
from golden import digest

from molsift import allocator

PROBE = """
import os

def seen_allocator(mol):
    with open("/proc/self/maps") as f:
        maps = f.read()
    found = [name for name in ("tcmalloc", "jemalloc") if f"lib{name}" in maps]
    return [found[0] if found else "system", os.getpid()]

seen_allocator.columns = ("allocator", "pid")
"""


def test_choice_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("MOLSIFT_ALLOCATOR", "system")
    assert allocator.library() is None
    monkeypatch.setenv("MOLSIFT_ALLOCATOR", "hoard")
    with pytest.raises(ValueError, match="expected auto, tcmalloc, jemalloc, system"):
        allocator.library()
    monkeypatch.setenv("MOLSIFT_ALLOCATOR", str(tmp_path / "missing.so"))
    with pytest.raises(ValueError, match="no such file"):
        allocator.library()
    assert allocator._with("/a.so /b.so", "/b.so") == "/b.so:/a.so"


def _tcmalloc():
    env = dict(os.environ, MOLSIFT_ALLOCATOR="auto")
    lib = subprocess.run(
        [
            *molsift_cmd()[:1],
            "-c",
            "from molsift import allocator; print(allocator.library() or '')",
        ],
        capture_output=True,
        text=True,
        env=env,
    ).stdout.strip()
    if "tcmalloc" not in lib:
        pytest.skip("tcmalloc not installed (scripts/setup.sh installs libtcmalloc-minimal4)")


@pytest.mark.parametrize("workers", [1, 2])
def test_screen_workers_run_on_tcmalloc_unless_told_otherwise(tmp_path, workers):
    _tcmalloc()
    (tmp_path / "probe_alloc.py").write_text(PROBE)
    lib = tmp_path / "lib.smi"
    lib.write_text("\n".join(BUNDLED_SMI.read_text().splitlines()[:40]) + "\n")
    for choice, want in (("auto", "tcmalloc"), ("system", "system")):
        out = tmp_path / f"{choice}.csv"
        env = dict(
            os.environ,
            MOLSIFT_ALLOCATOR=choice,
            PYTHONPATH=f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        )
        r = subprocess.run(
            [
                *molsift_cmd(),
                "screen",
                str(lib),
                "--scorer",
                "python:probe_alloc:seen_allocator",
                "-o",
                str(out),
                "-j",
                str(workers),
                "-q",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert r.returncode == 0, r.stderr
        with open(out, newline="") as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == 40 and {row["allocator"] for row in rows} == {want}
        report = json.loads((Path(str(out) + ".run") / "report.json").read_text())
        assert report["allocator"] == want


def test_ingest_on_either_allocator_writes_the_same_store(tmp_path):
    _tcmalloc()
    lib = tmp_path / "lib.smi"
    lib.write_text("\n".join(BUNDLED_SMI.read_text().splitlines()[:300]) + "\n")
    files = {}
    for choice, workers, want in (
        ("auto", 1, "tcmalloc"),
        ("auto", 2, "tcmalloc"),
        ("system", 2, "system"),
    ):
        store = tmp_path / f"{choice}-{workers}.store"
        r = subprocess.run(
            [*molsift_cmd(), "ingest", str(lib), "-o", str(store), "-j", str(workers), "--json"],
            capture_output=True,
            text=True,
            timeout=300,
            env=dict(os.environ, MOLSIFT_ALLOCATOR=choice),
        )
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout.strip().splitlines()[-1])["allocator"] == want
        # every file of the one store (its indexes too), the manifest without its provenance
        files[(choice, workers)] = digest(store)
    assert {"smiles.blocks", "planes.data.u8", "pattern.screen.u8", "analogs.json"} <= set(
        files[("auto", 1)]
    )
    assert files[("auto", 1)] == files[("auto", 2)] == files[("system", 2)]


def test_workers_started_from_the_api_leave_the_callers_environment_alone(tmp_path, monkeypatch):
    """The allocator is in LD_PRELOAD only while molsift starts its workers: a program that
    calls the API and then starts processes of its own does not pass tcmalloc on to them (it
    once stayed in os.environ, so a later `MOLSIFT_ALLOCATOR=system` run inherited it)."""
    _tcmalloc()
    import molsift

    monkeypatch.setenv("MOLSIFT_ALLOCATOR", "auto")
    lib = tmp_path / "lib.smi"
    lib.write_text("\n".join(BUNDLED_SMI.read_text().splitlines()[:50]) + "\n")
    for before in (None, "/nonexistent/libmine.so"):
        if before is None:
            monkeypatch.delenv("LD_PRELOAD", raising=False)
        else:
            monkeypatch.setenv("LD_PRELOAD", before)
        report = molsift.ingest(lib, tmp_path / f"{before is None}.store", workers=2)
        assert report.allocator == "tcmalloc"
        assert os.environ.get("LD_PRELOAD") == before


def test_serve_and_its_search_workers_run_on_tcmalloc_unless_told_otherwise(tmp_path):
    """`molsift serve` restarts itself on the allocator as the other RDKit verbs do, and its
    search workers (light and heavy, serve/heavy.py) start on it: a similarity search's query
    parse and fingerprint run there (about 12% of a light worker's CPU a request, BENCHMARKS.md);
    with MOLSIFT_ALLOCATOR=system none of them does."""
    import urllib.request

    from servers import free_socket

    _tcmalloc()
    lib = tmp_path / "lib.smi"
    lib.write_text("\n".join(BUNDLED_SMI.read_text().splitlines()[:60]) + "\n")
    store = tmp_path / "lib.store"
    r = subprocess.run(
        [*molsift_cmd(), "ingest", str(lib), "-o", str(store), "-q"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    for choice, want in (("auto", "tcmalloc"), ("system", "system")):
        with free_socket() as s:
            port = s.getsockname()[1]
        server = subprocess.Popen(
            [*molsift_cmd(), "serve", "--name", f"lib={store}", "--host", "127.0.0.1",
             "--port", str(port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=dict(os.environ, MOLSIFT_ALLOCATOR=choice),
        )  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}/api/v1"
            deadline = time.monotonic() + 60
            while True:
                try:
                    urllib.request.urlopen(f"{base}/databases", timeout=5).read()
                    break
                except OSError:
                    assert server.poll() is None and time.monotonic() < deadline
                    time.sleep(0.2)
            for kind in ("similarity", "substructure"):  # a light worker, then a heavy one
                with urllib.request.urlopen(
                    f"{base}/search?type={kind}&query=c1ccccc1", timeout=60
                ) as resp:
                    assert json.loads(resp.read())["type"] == kind
            workers = procs.children(server.pid)
            assert len(workers) == 2  # one light worker, one heavy
            assert {allocator.loaded_by(p) for p in [server.pid, *workers]} == {want}
        finally:
            server.terminate()
            server.wait(30)
