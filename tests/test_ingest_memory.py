"""`molsift ingest --memory SIZE` (`budget.py`): the write buffers cut from the budget leave
the store's bytes as they are, and a library that needs more than the budget is refused in one
line, before the indexes are built, with nothing left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from golden import digest
from test_ingest import store_files

import molsift
from molsift import budget
from molsift.budget import Budget, OverBudget, check, set_needs, store_needs
from molsift.limits import machine_memory


def _tiny_buffers(monkeypatch):
    """Write buffers of one byte: every similarity-plane pass one plane, every graph window
    one block (the smallest each build takes)."""
    monkeypatch.setattr(Budget, "plane_budget", property(lambda self: 1))
    monkeypatch.setattr(Budget, "window_bytes", property(lambda self: 1))


def test_buffers_cut_from_the_budget_give_the_same_store(tmp_path, bundled_smi, monkeypatch):
    whole = molsift.ingest(bundled_smi, tmp_path / "whole", workers=2, progress=False)
    _tiny_buffers(monkeypatch)
    small = molsift.ingest(
        bundled_smi, tmp_path / "small", workers=2, memory=1 << 30, progress=False
    )
    assert small.molecules == whole.molecules
    assert store_files(tmp_path / "small") == store_files(tmp_path / "whole")
    provenance = json.loads((tmp_path / "small" / "manifest.json").read_text())["provenance"]
    assert provenance["memory"] == 1 << 30


def test_a_set_written_with_tiny_buffers_has_the_same_shards(tmp_path, bundled_smi, monkeypatch):
    molsift.ingest(bundled_smi, tmp_path / "whole.set", workers=2, shards=2, progress=False)
    _tiny_buffers(monkeypatch)
    molsift.ingest(
        bundled_smi, tmp_path / "small.set", workers=2, shards=2, memory=2 << 30, progress=False
    )

    def shards(path):
        out = {}
        for shard in sorted(p for p in path.iterdir() if p.is_dir()):
            files = digest(shard)
            files.pop("manifest.json")
            out[shard.name] = files
        return out

    got, want = shards(tmp_path / "small.set"), shards(tmp_path / "whole.set")
    assert len(want) == 2 and got == want


def test_too_little_memory_for_any_store_is_refused_before_any_work(tmp_path, bundled_smi):
    with pytest.raises(OverBudget, match=r"any library needs about 160 MiB .* \(--memory\)"):
        molsift.ingest(bundled_smi, tmp_path / "s", memory=1 << 20, progress=False)
    assert list(tmp_path.iterdir()) == []
    # the budget said as given, not rounded up to a MiB
    for memory, said in ((1 << 10, "1 KiB"), (1000, "1,000 bytes"), (3 << 19, "2 MiB")):
        with pytest.raises(OverBudget, match=f"more than the {said} ingest may use"):
            molsift.ingest(bundled_smi, tmp_path / "s", memory=memory, progress=False)
    for bad in (0, -5, 1.5, True):
        with pytest.raises(ValueError, match="memory must be a number of bytes"):
            molsift.ingest(bundled_smi, tmp_path / "s", memory=bad, progress=False)


def test_a_library_too_large_for_the_budget_is_refused_once_counted(tmp_path, bundled_smi):
    """Past the fixed start, the molecules decide: refused after the merge, in one line from
    the command line (exit 2), no store and no work directory left."""
    memory = store_needs(0) + 1000
    out = tmp_path / "s"
    run = subprocess.run(
        [sys.executable, "-m", "molsift", "ingest", str(bundled_smi), "-o", str(out), "-q",
         "-j", "2", "--memory", str(memory)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr
    assert "molecules need about 160 MiB of memory to write the one store" in lines[0]
    assert "--memory" in lines[0]
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == []


def test_the_refusal_names_the_shards_that_fit():
    n = 200_000_000
    memory = 12 << 30
    with pytest.raises(OverBudget) as e:
        check(n, Budget(memory), None, 2, 9999)
    text = str(e.value)
    k = int(text.split("--shards ")[1].split(")")[0])
    assert set_needs(n, k, 2) <= memory < set_needs(n, k - 1, 2)
    assert text.startswith("200,000,000 molecules need about 18.8 GiB")
    # written as a set already, too few shards: the count that fits
    with pytest.raises(OverBudget, match=f"--shards {k}"):
        check(n, Budget(memory), 2, 2, 9999)
    check(n, Budget(memory), k, 2, 9999)  # fits: no error
    # no count of shards fits two writers' share of the places: fewer at once, or MPI
    with pytest.raises(OverBudget, match="write fewer shards at once"):
        check(n, Budget(set_needs(n, 9999, 2) - 1), 4, 2, 9999)


def test_buffers_follow_the_budget_within_their_bounds():
    assert Budget(8 << 30).plane_budget == budget.MAX_PLANE_BUDGET
    assert Budget(800 << 20).plane_budget == 100 << 20
    assert Budget(1 << 20).plane_budget == 1 << 20
    assert Budget(32 << 30).window_bytes == molsift._core.PATTERN_WINDOW_BYTES
    assert Budget(320 << 20).window_bytes == 10 << 20
    assert Budget(10 << 30).split(4).memory == (10 << 30) // 4
    assert (
        0
        < budget.default_memory()
        < machine_memory()
        <= os.sysconf("SC_PAGE_SIZE") * (os.sysconf("SC_PHYS_PAGES"))
    )


def test_cli_help_shows_memory():
    run = subprocess.run(
        [sys.executable, "-m", "molsift", "ingest", "--help"], capture_output=True, text=True
    )
    assert "--memory SIZE" in run.stdout and "--memory 2G" in run.stdout
