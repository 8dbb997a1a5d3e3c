"""The I/O profiler (issue 4): `molsift profile` counts every call exactly and never changes the
program it runs; `molsift insights` names DL_POLY's redundant opens and Docker-HT's read
amplification. The C programs in tests/tracer/ are compiled here with gcc (mpicc for MPI); the
tracer itself (crates/tracer) is built into molsift's extension module."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, molsift_cmd

from molsift.profiler import find_insights, load_log

SOURCES = ROOT / "tests" / "tracer"
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
}


@pytest.fixture(scope="session")
def build(tmp_path_factory):
    """build(name, mpi=False) -> path of tests/tracer/NAME.c compiled into a session folder."""
    out = tmp_path_factory.mktemp("tracer-bin")

    def compile_program(name: str, mpi: bool = False) -> str:
        exe = out / name
        if not exe.exists():
            cc = "mpicc" if mpi else "gcc"
            if shutil.which(cc) is None:
                pytest.skip(f"{cc} not installed")
            subprocess.run(
                [cc, "-O1", "-w", "-o", str(exe), str(SOURCES / f"{name}.c"), "-lpthread"],
                check=True,
            )
        return str(exe)

    return compile_program


def profile(log: Path, command: list, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ, **MPI_ENV)
    return subprocess.run(
        [*molsift_cmd(), "profile", "-o", str(log), "--", *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        **kwargs,
    )


def insights(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*molsift_cmd(), "insights", *args], capture_output=True, text=True, timeout=120
    )


def records(log, name: str, module: str = "POSIX"):
    return [r for r in log.records if r.module == module and os.path.basename(r.file) == name]


def by_code(findings, code: str, file_name: str | None = None):
    return [
        f
        for f in findings
        if f.code == code
        and (file_name is None or (f.file and os.path.basename(f.file) == file_name))
    ]


# ---- counts match reality ----
def test_every_counter_exact(build, tmp_path):
    """tests/tracer/known_io.c, counted by hand (Darshan's rules: a request is sequential when it
    starts past the last byte of the previous one, consecutive when it starts right after it;
    the first request of a file is neither)."""
    exe = build("known_io")
    plain_dir, traced_dir = tmp_path / "plain", tmp_path / "traced"
    plain_dir.mkdir()
    traced_dir.mkdir()
    plain = subprocess.run([exe, str(plain_dir), "7"])
    traced = profile(tmp_path / "known.json", [exe, str(traced_dir), "7"])
    assert plain.returncode == traced.returncode == 7, traced.stderr
    for name in ("a.dat", "b.txt", "c_child.dat", "d.dat", "e.dat"):  # same files, same bytes
        assert (plain_dir / name).read_bytes() == (traced_dir / name).read_bytes(), name

    log = load_log(tmp_path / "known.json")
    parent = [p for p in log.processes if p.forked_from is None]
    child = [p for p in log.processes if p.forked_from is not None]
    assert len(parent) == 1 and len(child) == 1 and child[0].forked_from == parent[0].pid
    assert (parent[0].failed_opens, parent[0].failed_stats) == (1, 1)
    assert parent[0].ended_by == "exit" and child[0].ended_by == "exit"

    [a] = records(log, "a.dat")
    block = os.stat(traced_dir / "a.dat").st_blksize
    assert a.counters.pop("MAX_READ_TIME_SIZE") in (100, 4000, 10, 0)
    assert a.counters.pop("MAX_WRITE_TIME_SIZE") in (50, 2000, 10, 300)
    assert a.counters == {
        "OPENS": 3,  # write, read, openat (a dup is not an open)
        "DUPS": 1,
        "SEEKS": 2,
        "MMAPS": 1,
        "FSYNCS": 1,
        "FDSYNCS": 1,
        "STATS": 5,  # fstat, stat, lstat, access, statx (the failed stat is elsewhere)
        "READS": 6,  # 100, 100, pread 4000, readv 100, 0 at end of file, 10 via the dup
        "WRITES": 6,  # 50, 50, 50, pwrite 2000, 10, writev 300
        "BYTES_READ": 4310,
        "BYTES_WRITTEN": 2460,
        "MAX_BYTE_READ": 6095,  # the 0-byte read at 6096 (Darshan: offset + 0 - 1)
        "MAX_BYTE_WRITTEN": 6095,  # 4096 + 2000 - 1
        "SEQ_READS": 3,
        "CONSEC_READS": 1,
        "SEQ_WRITES": 4,
        "CONSEC_WRITES": 3,
        "RW_SWITCHES": 1,
        "MEM_NOT_ALIGNED": 1,  # the write from buf + 1
        "FILE_NOT_ALIGNED": sum(
            1 for off in (0, 50, 100, 4096, 0, 10, 0, 100, 2048, 200, 6096, 0) if off % block
        ),  # 7 with 4096-byte blocks
        "MEM_ALIGNMENT": 8,
        "FILE_ALIGNMENT": block,
        "SIZE_READ_0_100": 5,
        "SIZE_READ_1K_10K": 1,
        "SIZE_WRITE_0_100": 4,
        "SIZE_WRITE_100_1K": 1,
        "SIZE_WRITE_1K_10K": 1,
    }
    assert a.file_size == 6096
    f = a.fcounters
    assert (
        0 < f["F_OPEN_START_TIMESTAMP"] < f["F_WRITE_START_TIMESTAMP"] <= f["F_WRITE_END_TIMESTAMP"]
    )
    assert f["F_WRITE_END_TIMESTAMP"] < f["F_READ_START_TIMESTAMP"] <= f["F_READ_END_TIMESTAMP"]
    assert f["F_READ_END_TIMESTAMP"] <= f["F_CLOSE_END_TIMESTAMP"] <= parent[0].wall_seconds
    assert f["F_MAX_READ_TIME"] <= f["F_READ_TIME"] and f["F_MAX_WRITE_TIME"] <= f["F_WRITE_TIME"]
    assert f["F_META_TIME"] > 0

    [directory] = [r for r in log.records if r.file == str(traced_dir)]
    assert directory.counters == {"OPENS": 1}  # open(".", O_DIRECTORY) for openat
    assert records(log, "e.dat")[0].counters == {"OPENS": 1}  # creat

    assert records(log, "b.txt") == []  # STDIO only: glibc's own read/write calls are not counted
    [b] = records(log, "b.txt", "STDIO")
    assert b.counters.pop("MAX_WRITE_TIME_SIZE") in (1000, 6, 1, 50)
    assert b.counters == {
        "OPENS": 2,
        "SEEKS": 1,
        "FLUSHES": 1,
        "WRITES": 5,
        "BYTES_WRITTEN": 1063,  # fwrite 1000, fprintf 6, fputs 6, fputc 1, fwrite 50
        "READS": 1,
        "BYTES_READ": 1013,  # one fread; fgets at end of file counts nothing
        "MAX_BYTE_WRITTEN": 1012,
        "MAX_BYTE_READ": 1012,
        "MAX_READ_TIME_SIZE": 1013,
        "SEQ_WRITES": 3,
        "CONSEC_WRITES": 3,
        "RW_SWITCHES": 1,
        "SIZE_WRITE_0_100": 4,
        "SIZE_WRITE_100_1K": 1,
        "SIZE_READ_100_1K": 1,
    }

    [c] = records(log, "c_child.dat")  # in the child's log only
    assert c.process is child[0]
    assert (c.c("OPENS"), c.c("WRITES"), c.c("BYTES_WRITTEN"), c.c("SIZE_WRITE_100_1K")) == (
        1,
        1,
        123,
        1,
    )

    [d] = records(log, "d.dat")  # 4 threads x 1000 pwrites of 64 bytes; their order is not fixed
    assert (d.c("OPENS"), d.c("WRITES"), d.c("BYTES_WRITTEN"), d.c("SIZE_WRITE_0_100")) == (
        1,
        4000,
        256000,
        4000,
    )
    assert d.c("MAX_BYTE_WRITTEN") == 255999
    assert d.c("FILE_NOT_ALIGNED") == sum(
        1 for t in range(4) for i in range(1000) if (t * 64000 + i * 64) % d.c("FILE_ALIGNMENT")
    )
    for r in log.records:  # the time histograms hold every byte
        assert sum(r.heat_read) == r.c("BYTES_READ") and sum(r.heat_write) == r.c("BYTES_WRITTEN")


def test_python_program(tmp_path):
    """A Python program (buffering=0, so each write() is one call) that forks and os._exit()s."""
    script = tmp_path / "prog.py"
    script.write_text(
        "import os, sys\n"
        "d = sys.argv[1]\n"
        "with open(os.path.join(d, 'py.dat'), 'wb', buffering=0) as f:\n"
        "    for _ in range(3):\n"
        "        f.write(b'x' * 100)\n"
        "with open(os.path.join(d, 'py.dat'), 'rb', buffering=0) as f:\n"
        "    data = f.read(1000)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    with open(os.path.join(d, 'child.dat'), 'wb', buffering=0) as f:\n"
        "        f.write(b'y' * 42)\n"
        "    os._exit(5)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print(len(data), os.waitstatus_to_exitcode(status))\n"
        "sys.exit(9)\n"
    )
    plain = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True
    )
    traced = profile(tmp_path / "py.json", [sys.executable, str(script), str(tmp_path)])
    assert plain.returncode == traced.returncode == 9
    assert plain.stdout == traced.stdout == "300 5\n"
    log = load_log(tmp_path / "py.json")
    [py] = records(log, "py.dat")
    assert (
        py.c("OPENS"),
        py.c("WRITES"),
        py.c("BYTES_WRITTEN"),
        py.c("READS"),
        py.c("BYTES_READ"),
    ) == (2, 3, 300, 1, 300)
    assert (
        py.c("SEQ_WRITES"),
        py.c("CONSEC_WRITES"),
        py.c("SIZE_WRITE_0_100"),
        py.c("SIZE_READ_100_1K"),
    ) == (2, 2, 3, 1)
    [child] = records(log, "child.dat")
    assert child.process.ended_by == "_exit" and child.process.forked_from == py.process.pid
    assert (child.c("WRITES"), child.c("BYTES_WRITTEN")) == (1, 42)


# ---- robustness: the program's behaviour and exit status never change ----
@pytest.mark.parametrize("mode,status", [("abort", -6), ("segv", -11), ("fork", 4)])
def test_exit_status_and_crash_logs(build, tmp_path, mode, status):
    exe = build("exits")
    plain = subprocess.run([exe, mode, str(tmp_path / "plain.out")])
    traced = profile(tmp_path / "log.json", [exe, mode, str(tmp_path / "traced.out")])
    assert plain.returncode == traced.returncode == status
    assert (tmp_path / "plain.out").read_bytes() == (tmp_path / "traced.out").read_bytes()
    log = load_log(tmp_path / "log.json")  # a crashing program still leaves its log
    written = {
        (p.ended_by, r.c("BYTES_WRITTEN"))
        for p in log.processes
        for r in log.records
        if r.process is p and r.file.endswith("traced.out")
    }
    expected = {
        "abort": {("signal 6", 10)},
        "segv": {("signal 11", 10)},
        "fork": {("exit", 10), ("_exit", 5)},
    }[mode]
    assert written == expected


def test_fork_while_threads_do_io(build, tmp_path):
    exe = build("threads_fork")
    r = profile(tmp_path / "log.json", [exe, str(tmp_path)])
    assert r.returncode == 5, r.stderr  # every child's status came back, nothing hung
    log = load_log(tmp_path / "log.json")
    children = [p for p in log.processes if p.forked_from is not None]
    assert len(children) == 50 and {p.ended_by for p in children} == {"_exit"}
    mine = {
        (r.process.pid, r.file) for r in log.records if "/child" in r.file and r.c("WRITES") == 1
    }
    assert len(mine) == 50 and {pid for pid, _ in mine} == {p.pid for p in children}
    [shared] = [r for r in log.records if r.file.endswith("shared.dat")]  # parent only
    assert shared.c("WRITES") > 0 and shared.process.forked_from is None


def test_command_not_found_and_missing_tracer(tmp_path):
    r = profile(tmp_path / "x.json", ["/no/such/program"])
    assert r.returncode == 127 and "molsift: error: /no/such/program: command not found" in r.stderr
    for var in ("MOLSIFT_TRACER_LIB", "MOLSIFT_IOTRACE_LIB"):  # the new name and its older one
        env = dict(os.environ, **{var: str(tmp_path / "missing.so")})
        r = subprocess.run(
            [*molsift_cmd(), "profile", "--", "true"], env=env, capture_output=True, text=True
        )
        assert r.returncode == 2
        assert (
            f"molsift: error: {tmp_path / 'missing.so'}: no such I/O tracer library"
            f" (given by ${var})" in r.stderr
        )


def test_the_built_in_tracer_is_written_beside_the_logs_and_removed(tmp_path):
    """No file to build or install: the library comes out of the extension module, is
    preloaded from the run's log directory, and goes away with it."""
    out = tmp_path / "out"
    out.mkdir()
    r = profile(out / "sh.json", ["sh", "-c", 'echo "$LD_PRELOAD" > ../preload.txt'], cwd=out)
    assert r.returncode == 0, r.stderr
    preloaded = (tmp_path / "preload.txt").read_text().split(":")[0].strip()
    assert preloaded.startswith(str(out / ".molsift-profile-"))
    assert preloaded.endswith("/libmolsift_tracer.so")
    assert sorted(p.name for p in out.iterdir()) == ["sh.json"]
    assert load_log(out / "sh.json").processes  # the shell was traced


@pytest.mark.parametrize(
    "content,problem",
    [
        (None, "no such I/O log"),
        (b"", "empty file"),
        (b'{"format": "molsift-iolog", "version": 1, "processes": [', "not valid JSON"),
        (b'{"format": "something-else", "version": 1, "processes": []}', "not a molsift I/O log"),
        (b'{"format": "molsift-iolog", "version": 99, "processes": []}', "version 99"),
        (
            b'{"format": "molsift-iolog", "version": 1, "processes": [{"pid": 1}]}',
            "corrupt I/O log",
        ),
        (b"\x00\x01garbage", "neither JSON nor a Darshan log"),
        (b"[1, 2]", "not a molsift I/O log (a JSON array; a log is one JSON object)"),
    ],
)
def test_missing_or_corrupt_log(tmp_path, content, problem):
    path = tmp_path / "run.iolog.json"
    if content is not None:
        path.write_bytes(content)
    r = insights(str(path))
    assert r.returncode == 2
    assert r.stderr.startswith(f"molsift: error: {path}: ") and problem in r.stderr, r.stderr


# ---- DL_POLY: redundant opens ----
def _mpi_ready():
    if shutil.which("mpirun") is None or shutil.which("mpicc") is None:
        pytest.skip("Open MPI (mpirun, mpicc) not installed (scripts/test.sh installs it)")


@pytest.mark.mpi
def test_dlpoly_history_redundant_opens(build, tmp_path):
    """4 ranks, 25 steps: before the fix every rank opens, fstats, seeks and closes HISTORY at
    every step and only rank 0 writes; after it only rank 0 opens the file."""
    _mpi_ready()
    exe = build("dlpoly_history", mpi=True)
    mpirun = ["mpirun", "-n", "4", "--oversubscribe", "--bind-to", "none", exe]
    for case in ("before", "fixed"):
        (tmp_path / case).mkdir()
        extra = ["--fixed"] if case == "fixed" else []
        r = profile(tmp_path / f"{case}.json", [*mpirun, str(tmp_path / case), "25", *extra])
        assert r.returncode == 0, r.stderr
        assert (tmp_path / case / "HISTORY").stat().st_size == 25 * 4096

    before = find_insights(load_log(tmp_path / "before.json"))
    [finding] = by_code(before, "R01", "HISTORY")
    assert finding.numbers["opens_per_rank"] == {f"rank {k}": 25 for k in range(4)}
    assert finding.numbers["idle_openers"] == ["rank 1", "rank 2", "rank 3"]
    assert finding.numbers["redundant_opens"] == 75
    text = " ".join(insights(str(tmp_path / "before.json")).stdout.split())  # unwrapped
    assert "redundant opens" in text and "HISTORY was opened 100 times" in text
    assert "rank 0: 25, rank 1: 25, rank 2: 25, rank 3: 25" in text

    fixed_log = load_log(tmp_path / "fixed.json")
    assert {r.rank: r.c("OPENS") for r in records(fixed_log, "HISTORY")} == {0: 25}
    assert by_code(find_insights(fixed_log), "R01") == []


# ---- Docker-HT: read amplification ----
@pytest.fixture(scope="module")
def shared_file(tmp_path_factory):
    """A 256 MiB SMILES-like file: 64 slabs of 4 MiB."""
    path = tmp_path_factory.mktemp("slabs") / "library.smi"
    block = b"".join(b"C" * (20 + i % 50) + b" id%d\n" % i for i in range(1000))
    copies = (256 << 20) // len(block) + 1
    with open(path, "wb") as fh:
        for _ in range(copies // 64 + 1):
            fh.write(block * 64)
    return path, (copies // 64 + 1) * 64 * 1000


@pytest.mark.parametrize("buffer_mib,flagged", [(20, True), (1, False)])
def test_docker_ht_read_amplification(build, shared_file, tmp_path, buffer_mib, flagged):
    """64 ranks read one shared file by slabs. The ranks are 64 processes that the program forks
    and execs with OMPI_COMM_WORLD_RANK set (8 at a time), as mpirun would start them: 64 real
    MPI ranks on 2 cores would spend most of the test starting up."""
    path, lines = shared_file
    exe = build("slab_reader")
    log_path = tmp_path / "slabs.json"
    r = profile(log_path, [exe, str(path), "64", str(buffer_mib << 20)])
    assert r.returncode == 0, r.stderr
    assert sum(int(line.split()[3]) for line in r.stdout.splitlines()) == lines  # same records
    log = load_log(log_path)
    assert log.ranks == list(range(64))
    reads = records(log, "library.smi")
    read = sum(x.c("BYTES_READ") for x in reads)
    size = path.stat().st_size
    assert {x.file_size for x in reads} == {size}
    found = by_code(find_insights(log), "R03", "library.smi")
    if not flagged:
        assert found == [] and read / size < 1.5
        return
    [finding] = found
    assert finding.numbers["readers"] == 64 and finding.numbers["bytes_read"] == read
    assert finding.numbers["amplification"] == pytest.approx(read / size) and read / size > 4
    assert finding.severity == "HIGH"
    assert by_code(find_insights(log, {"read_amplification": read / size + 0.1}), "R03") == []
    j = json.loads(insights(str(log_path), "--format", "json").stdout)
    assert any(f["code"] == "R03" for f in j["findings"]) and j["summary"]["bytes_read"] >= read


# ---- formats, Darshan logs, the writer-group hook ----
def test_html_has_pictures(build, tmp_path):
    pytest.importorskip("matplotlib")
    exe = build("known_io")
    (tmp_path / "w").mkdir()
    profile(tmp_path / "k.json", [exe, str(tmp_path / "w"), "0"])
    out = tmp_path / "k.html"
    r = insights(str(tmp_path / "k.json"), "--format", "html", "-o", str(out))
    assert r.returncode == 0, r.stderr
    page = out.read_text()
    assert page.count("src='data:image/png;base64,iVBOR") == 2  # timeline, size histograms
    assert "many tiny writes" in page and "d.dat" in page


def test_darshan_log_gives_the_same_findings():
    darshan = pytest.importorskip("darshan")
    path = Path(darshan.__file__).parent / "examples" / "example_logs" / "example.darshan"
    r = insights(str(path), "--format", "json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    report = darshan.DarshanReport(str(path), read_all=True)
    expected = sum(
        int(report.records[m].to_df()["counters"][f"{m}_BYTES_READ"].sum())
        for m in ("POSIX", "STDIO")
    )
    assert out["summary"]["kind"] == "darshan" and out["summary"]["bytes_read"] == expected
    assert out["summary"]["processes"] == report.metadata["job"]["nprocs"]


def test_corrupt_darshan_log(tmp_path):
    darshan = pytest.importorskip("darshan")
    src = Path(darshan.__file__).parent / "examples" / "example_logs" / "example.darshan"
    bad = tmp_path / "bad.darshan"
    data = bytearray(src.read_bytes()[:200])
    data[16:200] = b"\xff" * 184  # a Darshan header whose body is garbage
    bad.write_bytes(bytes(data))
    r = insights(str(bad))
    assert r.returncode == 2 and r.stderr.startswith(f"molsift: error: {bad}: corrupt"), r.stderr
    bad.write_bytes(src.read_bytes()[:3000])  # truncated: pydarshan reads part of it
    r = insights(str(bad))
    assert r.returncode == 2 and r.stderr.startswith(f"molsift: error: {bad}: corrupt"), r.stderr


def test_writer_group_imbalance_hook(tmp_path):
    """A molsift run's log can carry its writer groups (job.molsift.writer_groups)."""

    def log_with(seconds):
        doc = {
            "format": "molsift-iolog",
            "version": 1,
            "processes": [],
            "job": {
                "molsift": {
                    "writer_groups": [
                        {"group": i, "ranks": [i], "seconds": s} for i, s in enumerate(seconds)
                    ]
                }
            },
        }
        path = tmp_path / f"run{len(seconds)}{seconds[0]}.json"
        path.write_text(json.dumps(doc))
        return load_log(path)

    [f] = by_code(find_insights(log_with([10.0, 4.0, 9.5])), "R05")
    assert f.numbers["seconds_per_group"] == {"0": 10.0, "1": 4.0, "2": 9.5}
    assert by_code(find_insights(log_with([10.0, 9.0])), "R05") == []


def test_thresholds_documented():
    """docs/insights.md lists every threshold with the value the rules use."""
    import re

    from molsift.profiler import THRESHOLDS

    doc = (ROOT / "docs" / "insights.md").read_text()
    for name, value in THRESHOLDS.items():
        m = re.search(rf"`{name}` = ([0-9.]+)", doc)
        assert m and float(m.group(1)) == value, name


# ---- a demanding user's wrong thresholds and outputs ----
@pytest.fixture
def small_log(tmp_path) -> Path:
    """The log of one traced `true`: one process, no rank."""
    log = tmp_path / "true.json"
    r = profile(log, ["true"])
    assert r.returncode == 0, r.stderr
    return log


@pytest.mark.parametrize(
    "given, said",
    [
        ("read_amplification", "give the value too, e.g. -t read_amplification=1.5"),
        ("read_amplification=", "give the value too, e.g. -t read_amplification=1.5"),
        ("read_amplification=abc", "the value must be a number >= 0 (the default is 1.5)"),
        ("read_amplification=-1", "the value must be a number >= 0 (the default is 1.5)"),
        ("read_amplification=nan", "the value must be a number >= 0 (the default is 1.5)"),
        ("min_bytes", "give the value too, e.g. -t min_bytes=1048576"),
        ("no_such=2", "no threshold 'no_such'; NAME=VALUE with NAME one of small_bytes, "),
    ],
)
def test_a_wrong_threshold_says_what_is_wrong(small_log, given, said):
    """`-t read_amplification` (a known name without its value) was called an unknown
    threshold; `=abc` was float()'s "could not convert string to float: 'abc'", naming no
    option; a negative or NaN value was taken."""
    r = insights(str(small_log), "-t", given)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"molsift: error: -t {given!r}: {said}"), r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    r = insights(str(small_log), "-t", "read_amplification = 2")  # spaces are read through
    assert r.returncode == 0, r.stderr


def test_insights_output_format_follows_its_name_and_is_written_by_renaming(small_log):
    """`-o run.html` without --format was filled with text, `--format json -o run.html` was
    taken, and `-o LOG` overwrote the log being read with the findings; the summary said
    "1 process(es), 0 rank(s)" and "finding(s)"."""
    folder = small_log.parent
    r = insights(str(small_log), "-o", str(folder / "run.html"))
    assert r.returncode == 0, r.stderr
    assert (folder / "run.html").read_text().startswith("<!doctype html>")
    r = insights(str(small_log), "-o", str(folder / "run.json"))
    found = json.loads((folder / "run.json").read_text())
    assert found["summary"]["processes"] == 1
    n = len(found["findings"])
    assert r.stderr == (
        f"molsift insights: {n} finding{'' if n == 1 else 's'} written to {folder / 'run.json'}\n"
    )
    r = insights(str(small_log), "--format", "json", "-o", str(folder / "other.html"))
    assert r.returncode == 2 and not (folder / "other.html").exists(), r.stderr
    assert "other.html: a .html name for --format json: give --format html" in r.stderr
    before = small_log.read_bytes()
    r = insights(str(small_log), "-o", str(small_log))
    assert r.returncode == 2 and small_log.read_bytes() == before, r.stderr
    assert (
        r.stderr == f"molsift: error: {small_log}: is the log being read; choose another output\n"
    )
    assert sorted(p.name for p in folder.iterdir()) == ["run.html", "run.json", "true.json"]
    text = insights(str(small_log)).stdout
    assert "  1 process, 0 ranks, " in text and "(s)" not in text and "(es)" not in text, text


def test_profile_says_it_once_and_in_the_singular(tmp_path):
    """Was "molsift: error: molsift profile: give a command after --", and "1 process(es)
    traced"."""
    r = profile(tmp_path / "true.json", ["true"])
    assert r.returncode == 0 and "molsift profile: 1 process traced, log in" in r.stderr
    r = subprocess.run(
        [*molsift_cmd(), "profile", "-o", str(tmp_path / "p.json")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 2
    assert r.stderr == "molsift: error: give a command after --, e.g. molsift profile -- ./app\n"


def test_findings_count_in_the_singular(tmp_path):
    """P17 said "1 rank(s)/process(es) spent more than 30 s", R03 "by 1 reader(s)"."""
    doc = {
        "format": "molsift-iolog",
        "version": 1,
        "processes": [
            {
                "pid": 7,
                "records": [
                    {
                        "module": "POSIX",
                        "file": "/data/lib.smi",
                        "file_size": 1 << 20,
                        "counters": {"READS": 40, "BYTES_READ": 40 << 20},
                        "fcounters": {"F_META_TIME": 45.0},
                    }
                ],
            }
        ],
    }
    path = tmp_path / "one.json"
    path.write_text(json.dumps(doc))
    found = find_insights(load_log(path))
    [slow] = by_code(found, "P17")
    assert slow.message.startswith("1 process spent more than 30 s"), slow.message
    [amp] = by_code(found, "R03")
    assert " by 1 reader, " in amp.message and "(s)" not in amp.message, amp.message


def test_profile_of_a_program_killed_by_sigkill_dies_of_sigkill_too(tmp_path):
    """A program killed by SIGKILL (the OOM killer's signal) made molsift profile say "molsift:
    error: Invalid argument" and exit 2 (no handler can be set for SIGKILL), breaking its
    promise to exit with the program's status: molsift now dies of SIGKILL as well."""
    r = profile(tmp_path / "killed.json", ["sh", "-c", "kill -9 $$"])
    assert r.returncode == -9, (r.returncode, r.stderr)
    assert "error" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert "traced, log in" in r.stderr and (tmp_path / "killed.json").exists()


def test_every_threshold_may_be_zero(tmp_path):
    """`-t NAME=0` is a threshold insights takes (a number >= 0), but `-t tiny_writes=0` on a
    file only read, `-t min_bytes=0` on a run that moved no byte and
    `-t misaligned_requests_absolute=0` on one that made no request were ZeroDivisionError's
    traceback and exit status 1; so were 0-second ranks on a shared file."""
    from molsift.profiler import THRESHOLDS

    def process(pid, rank, records):
        return {"pid": pid, "rank": rank, "records": records}

    def record(file, counters):
        return {"module": "POSIX", "file": file, "file_size": 100, "counters": counters}

    logs = {
        "nothing": [process(1, None, [])],
        "read only": [process(1, None, [record("/d/in.smi", {"OPENS": 1, "READS": 2})])],
        "idle ranks": [  # two ranks touch a shared file, with no byte and no second in I/O
            process(1, 0, [record("/d/shared.dat", {"READS": 1})]),
            process(2, 1, [record("/d/shared.dat", {"READS": 1})]),
        ],
    }
    zeros = [word for name in THRESHOLDS for word in ("-t", f"{name}=0")]
    for what, processes in logs.items():
        log = tmp_path / f"{what.replace(' ', '_')}.json"
        doc = {"format": "molsift-iolog", "version": 1, "processes": processes}
        log.write_text(json.dumps(doc))
        for name in THRESHOLDS:
            find_insights(load_log(log), {name: 0.0})  # one at a time
        for fmt in ("text", "json", "html"):
            r = insights(str(log), *zeros, "--format", fmt)
            assert r.returncode == 0, (what, fmt, r.stderr[-2000:])
            assert "Traceback" not in r.stderr, (what, r.stderr)
        text = insights(str(log), *zeros).stdout
        assert " 0 stat/access calls" not in text and " 0 of those opens" not in text, text


@pytest.mark.parametrize("folder", ["my runs", "run:1"])
def test_profile_in_a_folder_ld_preload_cannot_name(tmp_path, folder):
    """`molsift profile -- CMD` in a folder whose path holds a space or a colon (or with -o LOG
    in one) was refused, "LD_PRELOAD cannot name a path holding a space or a colon", naming a
    temporary path of molsift's own: the tracer library is now preloaded from a temporary
    folder elsewhere, said on stderr, the logs still go beside LOG, and nothing is left."""
    import tempfile

    out = tmp_path / folder
    out.mkdir()
    before = set(os.listdir(tempfile.gettempdir()))
    r = subprocess.run(
        [*molsift_cmd(), "profile", "--", "sh", "-c", "echo x > /dev/null"],
        cwd=out, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "the tracer is preloaded from " in r.stderr and "1 process traced, " in r.stderr
    assert sorted(os.listdir(out)) == ["sh.iolog.json"]
    assert load_log(out / "sh.iolog.json").processes
    left = {n for n in set(os.listdir(tempfile.gettempdir())) - before if "molsift" in n}
    assert not left, left


def test_profile_refuses_to_replace_a_file_that_is_no_log(tmp_path):
    """`molsift profile -o existing.smi -- true` replaced the file with the log (and so did the
    default CMD.iolog.json). A file that is not a molsift I/O log is refused before the program
    runs (one line, exit 2, the file as it was) unless --overwrite; an earlier log, an empty
    file or no file at all are written as before."""
    data = tmp_path / "existing.smi"
    data.write_text("CCO ethanol\n")
    r = profile(data, ["touch", str(tmp_path / "ran")])
    assert r.returncode == 2 and data.read_text() == "CCO ethanol\n", r.stderr
    assert r.stderr == (
        f"molsift: error: {data}: exists and is not a molsift I/O log, which molsift profile "
        "would replace: give -o another name, or --overwrite to replace it\n"
    )
    assert not (tmp_path / "ran").exists()  # refused before the program ran
    default = tmp_path / "true.iolog.json"
    default.write_text('{"not": "a log"}')
    r = subprocess.run(
        [*molsift_cmd(), "profile", "--", "true"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 2 and default.read_text() == '{"not": "a log"}', r.stderr
    assert r.stderr.startswith("molsift: error: true.iolog.json: exists and is not a molsift")
    assert "give -o LOG, or --overwrite" in r.stderr and r.stderr.count("\n") == 1
    log = tmp_path / "run.json"
    for given in ("", "earlier log"):  # an empty file, then the log just written
        if not given:
            log.write_text("")
        r = profile(log, ["true"])
        assert r.returncode == 0 and load_log(log).processes, r.stderr
    r = subprocess.run(
        [*molsift_cmd(), "profile", "-o", str(data), "--overwrite", "--", "true"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0 and load_log(data).processes, r.stderr


def test_insights_o_dash_is_standard_output(tmp_path):
    """`molsift insights LOG -o -` wrote a file named `-` and said "written to -"; every other
    verb takes `-o -` for standard output."""
    log = tmp_path / "one.json"
    log.write_text(json.dumps({"format": "molsift-iolog", "version": 1, "processes": []}))
    for fmt, start in (("text", f"{log}: molsift I/O log"), ("json", "{")):
        r = subprocess.run(
            [*molsift_cmd(), "insights", str(log), "-o", "-", "--format", fmt],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert r.returncode == 0 and r.stdout.startswith(start), r.stderr
        assert r.stderr == "" and sorted(os.listdir(tmp_path)) == ["one.json"]


def test_size_thresholds_choose_the_bins_they_count(tmp_path):
    """`-t small_bytes=N` and `-t tiny_write_bytes=N` changed only the words: the rules counted
    fixed bins, so `-t small_bytes=0` said "3,000 write requests ... were at most 0 bytes".
    They count the request-size bins that end at or below the threshold, and say the bound
    they counted (the bin edge, when the threshold falls between two)."""
    counters = {"OPENS": 1, "WRITES": 3000, "BYTES_WRITTEN": 3000 * 50,
                "SIZE_WRITE_0_100": 2000, "SIZE_WRITE_1K_10K": 1000}  # fmt: skip
    record = {"module": "POSIX", "file": "/d/out.txt", "file_size": 1, "counters": counters}
    path = tmp_path / "w.json"
    doc = {"format": "molsift-iolog", "version": 1, "processes": [{"pid": 1, "records": [record]}]}
    path.write_text(json.dumps(doc))
    log = load_log(path)

    def found(code, **thresholds):
        return by_code(find_insights(log, thresholds), code)

    [small] = found("P06")
    assert small.numbers["small"] == 3000 and " were at most 1.0 MiB. " in small.message
    [small] = found("P06", small_bytes=1000)
    assert small.numbers["small"] == 2000 and small.numbers["at_most"] == 100
    said = "2,000 write requests (67% of 3,000) were at most 100 bytes (the largest request-size"
    assert small.message.startswith(said) and "within small_bytes = 1,000 bytes)" in small.message
    assert found("P06", small_bytes=0) == [] and found("R04", tiny_write_bytes=99) == []
    [tiny] = found("R04")
    assert tiny.numbers["tiny_writes"] == 2000 and "2,000 write calls of at most 1.0 KiB (" in (
        tiny.message
    )
    [tiny] = found("R04", tiny_write_bytes=10240)
    assert tiny.numbers["tiny_writes"] == 3000 and "3,000 write calls of at most 10.0 KiB (" in (
        tiny.message
    )
    r = insights(str(path), "-t", "small_bytes=0", "-t", "tiny_write_bytes=0")
    assert r.returncode == 0 and "at most 0 bytes" not in r.stdout, r.stdout
    assert "P06" not in r.stdout and "R04" not in r.stdout, r.stdout
    assert ", 1 open, 0 stats, " in r.stdout, r.stdout  # was "1 opens"
    from molsift.iolog import SIZE_BIN_EDGES, SIZE_BINS
    from molsift.profiler.insights import bins_up_to

    assert len(SIZE_BIN_EDGES) == len(SIZE_BINS) - 1
    assert [bins_up_to(n) for n in (0, 99, 100, 1023, 1024, 1 << 20, 1 << 40)] == [
        (0, 0), (0, 0), (1, 100), (1, 100), (2, 1024), (5, 1 << 20), (9, 1 << 30)
    ]  # fmt: skip


def test_keep_process_logs_refuses_a_folder_that_holds_other_things(tmp_path):
    """`molsift profile --keep-process-logs -o L -- CMD` deleted an existing L.processes/
    whatever it held. One that holds anything but an earlier profile's process logs (a file of
    another name, a folder), or a file at that name, is refused before the program runs (one
    line, exit 2, left as it was) unless --overwrite; an earlier profile's folder is replaced
    as before."""
    log, kept = tmp_path / "run.json", tmp_path / "run.json.processes"

    def keep(*options):
        return subprocess.run(
            [*molsift_cmd(), "profile", "--keep-process-logs", *options, "-o", str(log), "--",
             "touch", str(tmp_path / "ran")],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    kept.mkdir()
    (kept / "notes.txt").write_text("mine\n")
    r = keep()
    assert r.returncode == 2, r.stderr
    assert r.stderr == (
        f"molsift: error: {kept}: is a folder that holds other things than process logs "
        "('notes.txt'), which --keep-process-logs would replace: give -o another name, or "
        "--overwrite to replace it\n"
    )
    assert (kept / "notes.txt").read_text() == "mine\n" and not (tmp_path / "ran").exists()
    assert not log.exists()
    (kept / "notes.txt").unlink()
    (kept / "sub").mkdir()
    r = keep()
    assert r.returncode == 2 and "('sub')" in r.stderr and (kept / "sub").is_dir(), r.stderr
    (kept / "sub").rmdir()
    kept.rmdir()
    kept.write_text("a file\n")
    r = keep()
    assert r.returncode == 2 and f"{kept}: is not a folder" in r.stderr, r.stderr
    assert kept.read_text() == "a file\n" and not (tmp_path / "ran").exists()
    # --overwrite replaces it; then the folder holds process logs only, and is replaced again
    r = keep("--overwrite")
    assert r.returncode == 0 and (tmp_path / "ran").exists(), r.stderr
    first = sorted(os.listdir(kept))
    assert first and all(n.startswith("proc-") and n.endswith(".json") for n in first), first
    (kept / (first[0] + ".tmp")).write_text("{")  # a process's half-written log
    r = keep()
    assert r.returncode == 0, r.stderr
    again = sorted(os.listdir(kept))
    assert again and not set(again) & {*first, first[0] + ".tmp"}, (first, again)
