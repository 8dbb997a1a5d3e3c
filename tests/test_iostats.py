"""molsift's built-in I/O counters (issue 4, item 2): exact counts for a known read, the same
counters as the LD_PRELOAD tracer for the same calls, `--io-log` on count, ingest and search
(worker processes and MPI ranks included), and a screening run's RUN_DIR/io.json, read by
`molsift insights` with its writer groups."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import BUNDLED_SMI, ROOT, molsift_cmd, run_mpi

from molsift import _core
from molsift.profiler import load_log

NO_TIMING = {"MAX_READ_TIME_SIZE", "MAX_WRITE_TIME_SIZE"}  # which request was slowest varies


def molsift(*args: str, env=None, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        molsift_cmd() + list(args), capture_output=True, text=True, timeout=300, env=env, **kwargs
    )
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module")
def small_smi(tmp_path_factory):
    """200 molecules of the bundled file."""
    path = tmp_path_factory.mktemp("iostats") / "small.smi"
    path.write_text("".join(BUNDLED_SMI.read_text().splitlines(keepends=True)[:200]))
    return path


def records_of(log, name: str):
    return [r for r in log.records if os.path.basename(r.file) == name]


# ---- exact counts ----
def test_slab_read_with_a_1k_buffer_counts_every_request(tmp_path):
    """10,000 bytes of 8-byte lines in one slab, 1 KiB buffer: nine reads of 1024 bytes and one
    of 784, each starting right after the previous one (the first is neither sequential nor
    consecutive, as in Darshan); no read past the end, since the last line ends the slab."""
    path = tmp_path / "lines.smi"
    path.write_bytes(b"CCCCCCC\n" * 1250)
    src = _core.RecordSource(str(path), "smiles", slab=(0, 10_000), first_line=0, buffer_size=1024)
    n = 0
    while batch := src.next_batch(300):
        n += len(batch)
    c = _core.iostats_counters(str(path))
    c.pop("MAX_READ_TIME_SIZE")
    block = os.stat(path).st_blksize
    assert n == 1250
    assert c == {
        "OPENS": 1,
        "READS": 10,
        "BYTES_READ": 10_000,
        "SIZE_READ_100_1K": 10,
        "SEQ_READS": 9,
        "CONSEC_READS": 9,
        "MAX_BYTE_READ": 9999,
        "FILE_NOT_ALIGNED": sum(1 for i in range(10) if (1024 * i) % block),
    }
    # the reader's own counters (what `molsift screen` reports) are the same requests
    assert (src.counters()["read_calls"], src.counters()["bytes_read"]) == (10, 10_000)


def test_slabs_and_count_add_up(tmp_path):
    """Three slabs read with 1 KiB requests count what the readers say they read; counting the
    file by memory map adds one open, one stat and one mmap, and no read."""
    path = tmp_path / "lib.smi"
    path.write_bytes(b"".join(b"C%s x%d\n" % (b"C" * (i % 9), i) for i in range(2000)))
    size = path.stat().st_size
    calls = nbytes = 0
    for start, end in _core.split_slabs(size, 3):
        src = _core.RecordSource(
            str(path), "smiles", slab=(start, end), first_line=0, buffer_size=1024
        )
        while src.next_batch(500):
            pass
        calls += src.counters()["read_calls"]
        nbytes += src.counters()["bytes_read"]
    c = _core.iostats_counters(str(path))
    assert (c["OPENS"], c["READS"], c["BYTES_READ"]) == (3, calls, nbytes)
    assert c["READS"] == sum(v for k, v in c.items() if k.startswith("SIZE_READ_"))
    assert _core.count_records(str(path), "smiles", threads=2)["records"] == 2000
    c2 = _core.iostats_counters(str(path))
    assert (c2["OPENS"], c2["STATS"], c2["MMAPS"], c2["READS"]) == (4, 1, 1, calls)


def test_builtin_counters_equal_the_tracers(tmp_path):
    """tests/tracer/builtin_known_io.py (writes, appends, seeks, syncs, stats, slab reads with a
    1 KiB buffer, count by mmap, a gzip stream, a store written, merged and verified) under
    `molsift profile`: for every file, the built-in counters equal the LD_PRELOAD tracer's."""
    work = tmp_path / "files"
    work.mkdir()
    script = ROOT / "tests" / "tracer" / "builtin_known_io.py"
    molsift(
        "profile",
        "-o",
        str(tmp_path / "trace.json"),
        "--",
        sys.executable,
        str(script),
        str(work),
        str(tmp_path / "builtin.json"),
    )
    traced = {
        r.file: r
        for r in load_log(str(tmp_path / "trace.json")).records
        if r.module == "POSIX" and r.file.startswith(str(work))
    }
    builtin = json.loads((tmp_path / "builtin.json").read_text())
    assert builtin["counted_by"] == "molsift"
    mine = {r["file"]: r for r in builtin["records"] if r["file"].startswith(str(work))}
    assert len(mine) >= 40 and set(mine) == set(traced)
    for path, r in mine.items():
        ours = {k: v for k, v in r["counters"].items() if k not in NO_TIMING}
        theirs = {k: v for k, v in traced[path].counters.items() if k not in NO_TIMING}
        assert ours == theirs, path
        assert r["file_size"] == traced[path].file_size, path
    a = mine[str(work / "a.dat")]["counters"]
    assert (a["READS"], a["WRITES"], a["SEEKS"], a["FSYNCS"], a["FDSYNCS"], a["STATS"]) == (
        4,
        4,
        2,
        1,
        1,
        2,
    )


def test_a_fork_child_counts_from_zero(tmp_path):
    """As the tracer: a fork child has its own record (forked_from), and a file its parent
    opened keeps being counted in the child, from zero; the parent's counts do not change."""
    path, out = tmp_path / "f.dat", tmp_path / "child.json"
    f = _core.CountedFile(str(path), os.O_RDWR | os.O_CREAT, 0o644)
    f.pwrite(b"x" * 100, 0)
    pid = os.fork()
    if pid == 0:
        try:
            f.pwrite(b"y" * 10, 100)
            _core.write_file(str(out), _core.iostats_process().encode())
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    child = json.loads(out.read_text())
    assert (child["pid"], child["forked_from"]) == (pid, os.getpid())
    [r] = [r for r in child["records"] if r["file"] == str(path)]
    assert (r["counters"]["WRITES"], r["counters"]["BYTES_WRITTEN"]) == (1, 10)
    assert _core.iostats_counters(str(path))["WRITES"] == 1
    f.close()


def test_recording_can_be_turned_off(tmp_path, small_smi):
    env = dict(os.environ, MOLSIFT_IOSTATS="0")
    log = tmp_path / "off.json"
    molsift("--io-log", str(log), "count", str(small_smi), env=env)
    [proc] = json.loads(log.read_text())["processes"]
    assert proc["records"] == []


# ---- --io-log ----
def test_io_log_of_count_ingest_and_search(tmp_path, small_smi):
    count_log, ingest_log, search_log = (
        tmp_path / f"{v}.json" for v in ("count", "ingest", "search")
    )
    molsift("--io-log", str(count_log), "count", str(small_smi))
    log = load_log(str(count_log))
    assert log.job["tool"] == "molsift count" and log.job["returncode"] == 0
    [f] = [r for r in log.records if r.file == str(small_smi)]
    assert f.c("MMAPS") == 1 and f.c("STATS") >= 1 and f.file_size == small_smi.stat().st_size

    store = tmp_path / "small.store"
    molsift(
        "ingest", str(small_smi), "-o", str(store), "-j", "2", "-q", "--io-log", str(ingest_log)
    )
    log = load_log(str(ingest_log))
    main = [p for p in log.processes if p.ended_by == "exit"]
    workers = [p for p in log.processes if p.ended_by == "running"]
    assert len(main) == 1 and 1 <= len(workers) <= 2
    parts = [r for r in log.records if "/.part-" in r.file and r.c("WRITES")]  # under tmp names
    assert parts and {r.process.pid for r in parts} <= {w.pid for w in workers}
    read = sum(
        r.c("BYTES_READ") for r in log.records if r.file == str(small_smi) and r.process in workers
    )
    assert read >= small_smi.stat().st_size  # every slab, by the workers
    # the store is built whole in the ingest's work directory, then moved into place
    staged = re.compile(r"/\.small\.store\.ingest-[^/]+/(store/|\.store\.tmp-)")
    final = [r for r in log.records if staged.search(r.file)]
    assert any(r.c("WRITES") for r in final) and all(r.process in main for r in final)
    # the one store (format version 2) among them, written from the merged staging store
    assert any(r.file.endswith("/input_order.packed") and r.c("WRITES") for r in final)

    molsift("--io-log", str(search_log), "search", str(store), "-q", "CCO", "-k", "3")
    log = load_log(str(search_log))
    # the one store's fingerprints, compressed planes: opened once and mapped, never read()
    planes = records_of(log, "planes.data.u8")
    assert len(planes) == 1 and planes[0].c("OPENS") == 1
    assert planes[0].c("MMAPS") >= 1 and planes[0].c("READS") == 0
    for path in (count_log, ingest_log, search_log):
        out = molsift("insights", str(path), "--format", "json")
        assert "findings" in json.loads(out.stdout)


def test_io_log_of_mpi_ranks(tmp_path, small_smi):
    log_path = tmp_path / "mpi.json"
    proc = run_mpi(
        2,
        [
            "--io-log",
            str(log_path),
            "ingest",
            str(small_smi),
            "-o",
            str(tmp_path / "m.store"),
            "-q",
        ],
    )
    assert proc.returncode == 0, proc.stderr
    log = load_log(str(log_path))
    assert sorted(p.rank for p in log.processes) == [0, 1]
    for rank in (0, 1):
        assert any(
            r.c("BYTES_READ") for r in log.records if r.rank == rank and r.file == str(small_smi)
        )


# ---- screen: RUN_DIR/io.json, the report, the writer groups ----
def test_screen_run_dir_gets_its_io_log(tmp_path, small_smi):
    out = tmp_path / "props.csv"
    extra = tmp_path / "screen.iolog.json"
    molsift(
        "screen",
        str(small_smi),
        "--scorer",
        "filter",
        "-o",
        str(out),
        "-j",
        "2",
        "--writers",
        "2",
        "--write-buffer",
        "4K",
        "-q",
        "--io-log",
        str(extra),
    )
    run_dir = tmp_path / "props.csv.run"
    log = load_log(str(run_dir / "io.json"))
    assert log.job["tool"] == "molsift screen"
    assert len(log.processes) == 3  # this process and two workers
    groups = log.job["molsift"]["writer_groups"]
    assert [g["group"] for g in groups] == [0, 1] and [g["ranks"] for g in groups] == [[0], [1]]
    report = json.loads((run_dir / "report.json").read_text())
    assert sum(g["bytes"] for g in groups) == sum(w["bytes"] for w in report["per_writer"])
    io = report["io"]
    lib = io["library"]
    assert lib["file"] == str(small_smi) and lib["bytes_read"] >= small_smi.stat().st_size
    # the report's one read amplification is the library's as the I/O counters saw it
    assert "read_amplification" not in lib
    assert report["read_amplification"] == pytest.approx(
        lib["bytes_read"] / small_smi.stat().st_size
    )
    assert report["bytes_read"] == lib["bytes_read"] and report["read_calls"] == lib["reads"]
    rows = [r for r in log.records if r.file == str(out) + ".partial"]
    assert sum(r.c("BYTES_WRITTEN") for r in rows) == out.stat().st_size  # header and rows
    assert io["bytes_written"] == sum(r.c("BYTES_WRITTEN") for r in log.records)
    assert io["opens"] == sum(r.c("OPENS") for r in log.records)
    # molsift insights reads the run's log unchanged, writer groups included
    found = json.loads(
        molsift(
            "insights",
            str(run_dir / "io.json"),
            "--format",
            "json",
            "-t",
            "writer_group_imbalance=0",
        ).stdout
    )
    # (R05 fires exactly when the groups' seconds differ: on a 5,000-molecule run both can
    # round to the same figure, so the rule is asserted as the log says, then on a copy of the
    # log whose groups took known, unequal times)
    secs = [float(g.get("seconds", 0.0)) for g in groups]
    fires = max(secs) > 0 and min(secs) < max(secs)
    assert any(f["code"] == "R05" for f in found["findings"]) == fires
    doc = json.loads((run_dir / "io.json").read_text())
    for g, s in zip(doc["job"]["molsift"]["writer_groups"], (0.5, 1.0)):
        g["seconds"] = s
    uneven = tmp_path / "uneven.json"
    uneven.write_text(json.dumps(doc))
    found = json.loads(
        molsift(
            "insights", str(uneven), "--format", "json", "-t", "writer_group_imbalance=0.4"
        ).stdout
    )
    r05 = [f for f in found["findings"] if f["code"] == "R05"]
    assert len(r05) == 1 and r05[0]["numbers"]["seconds_per_group"] == {"0": 0.5, "1": 1.0}
    # --io-log of the same run: every process, and the writer groups too
    assert len(load_log(str(extra)).processes) == 3
    assert load_log(str(extra)).job["molsift"]["writer_groups"] == groups
    text = molsift("report", str(run_dir)).stdout
    assert "I/O of 3 processes" in text and (run_dir / "report.png").stat().st_size > 0


def test_insights_on_molsifts_own_ingest_log_has_no_redundant_opens(tmp_path):
    """Issue 14, defect 8: `insights` on molsift's own ingest log reported redundant opens of
    molsift's temporary store directory, which is opened only to fsync it after renames."""
    from molsift.profiler import find_insights

    log = tmp_path / "ingest.json"
    proc = subprocess.run(
        [
            *molsift_cmd(),
            "--io-log",
            str(log),
            "ingest",
            str(BUNDLED_SMI),
            "-o",
            str(tmp_path / "nci.store"),
            "-j",
            "2",
            "-q",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    doc = load_log(str(log))
    synced_dirs = [
        r
        for p in json.loads(log.read_text())["processes"]
        for r in p["records"]
        if ".nci.store." in r["file"] and r["counters"].get("FSYNCS")
    ]
    assert synced_dirs, "the log should show the work directories opened to fsync them"
    assert [f for f in find_insights(doc) if f.code == "R01"] == []


# ---- --io-log never replaces what the verb reads or writes ----
def test_io_log_refuses_a_file_or_store_the_verb_reads_or_writes(tmp_path, small_smi, capsys):
    """`molsift count nci.smi --io-log nci.smi` replaced the input with the log and exited 0;
    `--io-log STORE/x.json` added a file to the store, `--io-log OUT` replaced the verb's -o,
    `screen ... --io-log OUT.rejects.tsv` the rejects. Each is refused before any work: one
    line naming the log and what it is, exit status 2, every file as it was."""
    from types import SimpleNamespace

    from molsift.cli import main

    smi = tmp_path / "nci.smi"
    smi.write_bytes(small_smi.read_bytes())
    before = smi.read_bytes()
    r = subprocess.run(
        [*molsift_cmd(), "count", "nci.smi", "--io-log", "nci.smi"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode == 2 and smi.read_bytes() == before, r.stderr
    assert r.stderr == (
        "molsift: error: nci.smi: the --io-log file is the input of molsift count, which the "
        "log would replace: write the log to another file\n"
    )
    store = tmp_path / "nci.store"  # any directory given as a store: refused before it is read
    store.mkdir()
    log = tmp_path / "run.iolog.json"
    log.write_text("{}")  # an earlier file under the log's name is no clash
    cases = {
        ("--io-log", f"{tmp_path}/./nci.smi", "count", str(smi)): f"the input of molsift count "
        f"({smi})",
        ("--io-log", str(store / "x.json"), "info", str(store)): f"inside {store}, the store of "
        "molsift info",
        ("insights", str(log), "-o", str(tmp_path / "f.txt"), "--io-log", str(tmp_path / "f.txt")):
        "the output (-o) of molsift insights",
        ("insights", str(log), "--io-log", str(log)): "the log of molsift insights",
        ("screen", str(smi), "--scorer", "filter", "-o", str(tmp_path / "o.csv"), "--io-log",
         str(tmp_path / "o.csv.rejects.tsv")): "an output of molsift screen",
        ("--io-log", str(store / "io.json"), "report", str(store)): f"inside {store}, the run "
        "directory of molsift report",
    }  # fmt: skip
    for words, said in cases.items():
        assert main(list(words)) == 2, words
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err and err.startswith("molsift: error: "), err
    assert smi.read_bytes() == before and log.read_text() == "{}" and not os.listdir(store)
    assert sorted(os.listdir(tmp_path)) == ["nci.smi", "nci.store", "run.iolog.json"]
    # what is not the verb's: a log beside its input, in a --scratch folder, a run's own name
    from molsift.cli import check_io_log

    args = SimpleNamespace(
        verb="ingest", io_log=str(tmp_path / "ingest.json"), inputs=[str(smi)],
        output=str(store), scratch=str(tmp_path),
    )  # fmt: skip
    check_io_log(args)
    screen = {"verb": "screen", "library": str(smi), "output": str(tmp_path / "o.csv"),
              "run_dir": None, "io_log": str(tmp_path / "o.csv.iolog.json")}  # fmt: skip
    check_io_log(SimpleNamespace(**screen))
    with pytest.raises(ValueError, match=r"inside .*o\.csv\.run, the run directory of molsift"):
        check_io_log(SimpleNamespace(**dict(screen, io_log=str(tmp_path / "o.csv.run/x"))))
    molsift("count", str(smi), "--io-log", str(tmp_path / "count.json"))
    assert load_log(str(tmp_path / "count.json")).processes


# ---- molsift report on damaged run files ----
def test_report_on_damaged_run_files_is_one_line_naming_the_file(tmp_path, small_smi):
    """A non-number "t" in the timeline or `"time": null` in report.json was a TypeError's
    traceback (exit 1); an empty timeline was "molsift: error: max() arg is an empty
    sequence", naming no file, after a matplotlib UserWarning. Now one line naming the file
    and what is wrong, exit 2, nothing else on stderr; and `-o -` writes the PNG to stdout
    (the totals to stderr), not to a file named `-`."""
    import shutil

    out = tmp_path / "props.csv"
    molsift("screen", str(small_smi), "--scorer", "filter", "-o", str(out), "-j", "1", "-q")
    run = tmp_path / "props.csv.run"
    [samples] = (run / "timeline").glob("g1-worker*.jsonl")

    def damaged(name: str, edit):
        copy = tmp_path / name
        shutil.copytree(run, copy)
        edit(copy)
        return copy

    def bad_t(d):
        path = d / "timeline" / samples.name
        lines = path.read_text().splitlines(keepends=True)
        lines[0] = re.sub(r'"t": [0-9.e+]+', '"t": "x"', lines[0])
        path.write_text("".join(lines))

    def edit_report(key, value):
        def edit(d):
            doc = json.loads((d / "report.json").read_text())
            doc[key] = value(doc[key])
            (d / "report.json").write_text(json.dumps(doc))

        return edit

    def empty_timeline(d):
        for path in (d / "timeline").iterdir():
            path.write_text("")

    cases = {
        "t": (bad_t, f"timeline/{samples.name}:1: not a timeline line ('t' is \"x\", not a "
              "number)"),
        "time": (edit_report("time", lambda t: None), "report.json: not a run report of this "
                 "molsift ('time' is null, not an object of times)"),
        "score": (edit_report("time", lambda t: dict(t, score_s="1s")), "report.json: not a run "
                  "report of this molsift ('time.score_s' is \"1s\", not a number)"),
        "empty": (empty_timeline, "timeline: the timeline holds no sample and no write event "
                  "(its files are empty): nothing to draw"),
    }  # fmt: skip
    for name, (edit, said) in cases.items():
        d = damaged(name, edit)
        r = subprocess.run(
            [*molsift_cmd(), "report", str(d)], capture_output=True, text=True, timeout=120
        )
        assert (r.returncode, r.stderr) == (2, f"molsift: error: {d}/{said}\n"), name
        assert not (d / "report.png").exists()
    r = subprocess.run(
        [*molsift_cmd(), "report", str(run), "-o", "-"],
        capture_output=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode == 0 and r.stdout.startswith(b"\x89PNG\r\n\x1a\n"), r.stderr
    assert b" records = " in r.stderr and b"Warning" not in r.stderr, r.stderr
    assert not (tmp_path / "-").exists() and not (run / "report.png").exists()
