"""The command line as a user meets it: help for every verb, count, ingest, info, and one-line
errors with exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def molsift(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "molsift", *map(str, args)], capture_output=True, text=True)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.parametrize("verb", [[], ["count"], ["ingest"], ["info"]])
def test_help(verb):
    out = molsift(*verb, "--help").stdout
    assert "usage: molsift" in out


def test_count_prints_records_and_amplification(bundled_smi):
    proc = molsift("count", bundled_smi)
    assert proc.stdout.split("\t")[0] == "4999"
    assert "read amplification" in proc.stderr
    counters = json.loads(molsift("count", bundled_smi, "--json").stdout)
    assert counters["records"] == 4999 and counters["bytes_read"] >= counters["bytes"]


def test_ingest_then_info(tmp_path, bundled_smi):
    out = tmp_path / "s"
    proc = molsift("ingest", bundled_smi, "-o", out)
    assert "records in 4,999 = molecules stored" in proc.stdout
    assert "read amplification" in proc.stdout
    info = molsift("info", out).stdout
    assert "molecules" in info and "all files verified" in info and "CC1=CC(=O)C=CC1=O" in info


def test_errors_are_one_line_with_exit_2(tmp_path):
    proc = molsift("ingest", tmp_path / "none.smi", "-o", tmp_path / "s", check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("molsift: error:") and "none.smi" in proc.stderr
    (tmp_path / "s").mkdir()
    proc = molsift("info", tmp_path / "s", check=False)
    assert proc.returncode == 2 and "not a molsift store" in proc.stderr


def test_corrupted_store_is_refused(tmp_path, bundled_smi):
    out = tmp_path / "s"
    molsift("ingest", bundled_smi, "-o", out, "-q")
    fps = out / "fingerprints.u64"
    data = bytearray(fps.read_bytes())
    data[12345] ^= 1
    fps.write_bytes(bytes(data))
    proc = molsift("info", out, check=False)
    assert proc.returncode == 2 and "corrupted" in proc.stderr and "fingerprints.u64" in proc.stderr
    with open(fps, "r+b") as f:
        f.truncate(len(data) - 256)
    proc = molsift("info", out, "--no-verify", check=False)
    assert proc.returncode == 2 and "truncated" in proc.stderr
