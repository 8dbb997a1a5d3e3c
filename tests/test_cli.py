"""The command line as a user meets it: help for every verb, count, ingest, info, and one-line
errors with exit status 2."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest


def molsift(*args, check=True):
    proc = subprocess.run(
        [sys.executable, "-m", "molsift", *map(str, args)], capture_output=True, text=True
    )
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
    assert (
        "molecules" in info
        and re.search(r"all \d+ files verified", info)
        and "CC1=CC(=O)C=CC1=O" in info
    )


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


def test_exit_codes_are_documented_in_help():
    """Issue 14, defect 7: the exit codes, 3 (nothing usable) among them, are in `--help`."""
    out = molsift("--help").stdout
    assert "exit status:" in out and "nothing usable" in out
    assert all(f"\n  {code} " in out for code in (0, 1, 2, 3, 130))


@pytest.mark.parametrize(
    "args, message",
    [
        (["-k", "0"], "must be at least 1"),
        (["-k", "-3"], "must be at least 1"),
        (["-t", "1.5"], "between 0 and 1"),
        (["-t", "-0.1"], "between 0 and 1"),
        (["-t", "x"], "not a number"),
    ],
)
def test_search_k_0_and_threshold_out_of_range_are_refused(tmp_path, args, message):
    """Issue 14, defect 8: `-k 0` silently returned 10 hits."""
    proc = molsift("search", tmp_path / "no.store", "-q", "CCO", *args, check=False)
    assert proc.returncode == 2 and message in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("verb", ["ingest", "screen"])
def test_max_record_bytes_help_equals_the_readers_default(verb):
    """Issue 14, defect 8: the help said 1 MiB, the reader used 64 KiB for SMILES lines."""
    from molsift import _core
    from molsift.cli import build_parser, size_text

    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices[verb]
    helps = {a.dest: a.help for a in sub._actions}
    assert size_text(_core.DEFAULT_MAX_LINE_RECORD_BYTES) == "64KiB"
    assert (
        f"default {size_text(_core.DEFAULT_MAX_LINE_RECORD_BYTES)} for SMILES"
        in helps["max_record_bytes"]
    )
    assert f"{size_text(_core.DEFAULT_MAX_SDF_RECORD_BYTES)} for SDF" in helps["max_record_bytes"]
    assert f"default {size_text(_core.DEFAULT_READ_BUFFER)}" in helps["read_buffer"]


def test_oversized_record_reason_says_the_id_is_unknown(tmp_path):
    """Issue 14, defect 8: an over-long record was rejected under its line number as its id.
    It keeps its id when the record's first --max-record-bytes hold it, else the reason says
    that the id is unknown."""
    src = tmp_path / "long.smi"
    src.write_text("CCO ok\n" + "C" * 200 + " long_one\n" + "CCN named " + "x" * 200 + "\n")
    proc = molsift("ingest", src, "-o", tmp_path / "s", "--max-record-bytes", "100", "-q")
    rows = [r.split("\t") for r in (tmp_path / "s" / "rejects.tsv").read_text().splitlines()[1:]]
    assert rows[0][1] == "2" and rows[0][3] == "2" and "id is unknown" in rows[0][4], rows
    assert (
        rows[1][1] == "3" and rows[1][3] == "named" and "read from the record's start" in rows[1][4]
    )
    assert proc.returncode == 0


def test_count_reports_the_read_calls_of_a_compressed_stream(tmp_path, bundled_smi):
    """Issue 14, defect 8: `count` said "0 read calls" for gzip input. The calls and bytes are
    those made on the compressed file."""
    import gzip

    gz = tmp_path / "nci.smi.gz"
    gz.write_bytes(gzip.compress(bundled_smi.read_bytes()))
    counters = json.loads(molsift("count", gz, "--json").stdout)
    assert counters["records"] == 4999 and counters["compression"] == "gzip"
    assert counters["read_calls"] >= 2 and counters["bytes_read"] == gz.stat().st_size
    proc = molsift("count", gz)
    assert (
        f"{counters['read_calls']:,} read calls" in proc.stderr
        and " 0 read calls" not in proc.stderr
    )


def test_parquet_output_round_trips(tmp_path, bundled_smi):
    """Issue 14, defect 8: `-o hits.parquet` needed pyarrow, which setup did not install."""
    pq = pytest.importorskip("pyarrow.parquet", reason="scripts/setup.sh installs pyarrow")
    molsift("ingest", bundled_smi, "-o", tmp_path / "s", "-q")
    molsift(
        "search",
        tmp_path / "s",
        "-q",
        "CC(=O)Nc1ccc(O)cc1",
        "-k",
        "5",
        "-o",
        tmp_path / "h.parquet",
    )
    tsv = molsift("search", tmp_path / "s", "-q", "CC(=O)Nc1ccc(O)cc1", "-k", "5").stdout
    table = pq.read_table(tmp_path / "h.parquet").to_pylist()
    rows = [line.split("\t") for line in tsv.splitlines()[1:]]
    assert len(table) == len(rows) == 5
    assert [
        (r["query_id"], r["target_id"], f"{r['score']:.6f}", r["target_smiles"]) for r in table
    ] == [tuple(r) for r in rows]


def test_output_piped_into_head_is_not_a_traceback(tmp_path, bundled_smi):
    """`molsift info STORE | head -3` printed a BrokenPipeError traceback."""
    store = tmp_path / "s.store"
    molsift("ingest", bundled_smi, "-o", store, "-q")
    # about 400 KB of output, far more than a pipe holds: the writes after head exits fail
    r = subprocess.run(
        f"{sys.executable} -m molsift info {store} -n 5000 | head -1; exit ${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
    )
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr
    assert r.returncode == 141, r.returncode
