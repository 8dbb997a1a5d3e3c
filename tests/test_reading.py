"""Issue 21: every way of reading a plain file (`--io auto|mmap|pread|uring|direct`) counts and
reads exactly what the memory-mapped path does, on edge-case files whose sizes are not whole
direct-I/O blocks; `auto` decides by the page cache; a filesystem refusing O_DIRECT (ramfs) and
a kernel refusing io_uring fall back cleanly and say so; `molsift count` starts without
importing the rest of molsift."""

from __future__ import annotations

import gzip
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

import molsift
from molsift import _core

WAYS = ("mmap", "pread", "uring", "direct", "auto")
SHARED_MOSES = Path(__file__).resolve().parents[2] / "shared/data/moses_train.csv.gz"


def tricky_lines(n: int, seed: int) -> bytes:
    """Lines of every kind a record count must tell apart: records, blank, whitespace-only,
    comments, CRLF, indented records, long lines; no final newline."""
    rng = random.Random(seed)
    kinds = [
        b"CCO x%d\n",
        b"c1ccccc1 %d\n",
        b"\n",
        b"   \n",
        b"\t\r\n",
        b"# comment %d\n",
        b"  #c\n",
        b"  N %d\n",
        b"\tO\r\n",
        b"C" * 300 + b" long%d\n",
        b" " * 5000 + b"\n",
    ]
    out = []
    for i in range(n):
        k = rng.choice(kinds)
        out.append(k % i if b"%d" in k else k)
    return b"".join(out).rstrip(b"\n")


def tricky_sdf(n: int, seed: int) -> bytes:
    """SDF blocks with terminators followed by spaces, tabs or CR, lookalikes that are not
    terminators, and a last block without one."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        out.append(b"mol%d\n  body line\n" % i + b"x" * rng.randrange(0, 3000) + b"\n")
        out.append(rng.choice([b"$$$$\n", b"$$$$  \n", b"$$$$\t\r\n", b"$$$$\r\n"]))
        if rng.random() < 0.1:
            out.append(rng.choice([b" $$$$\n", b"$$$$x\n", b"$$$\n"]))
    out.append(b"last\nblock without terminator\n")
    return b"".join(out)


@pytest.fixture(scope="module")
def edge_files(tmp_path_factory, bundled_smi, rdkit_sdf) -> list[tuple[Path, str]]:
    """(file, format): small and over 8 MiB (so that `auto` does not just map them), none a
    whole number of 4 KiB blocks."""
    d = tmp_path_factory.mktemp("edge")
    files = [(bundled_smi, "smiles"), (rdkit_sdf, "sdf")]
    for seed, n in ((1, 3000), (2, 60_000)):
        p = d / f"tricky{seed}.smi"
        p.write_bytes(tricky_lines(n, seed))
        files.append((p, "smiles"))
    p = d / "tricky.sdf"
    p.write_bytes(tricky_sdf(6000, 3))
    files.append((p, "sdf"))
    if SHARED_MOSES.exists():
        p = d / "moses_head.csv"
        with gzip.open(SHARED_MOSES, "rb") as f:
            p.write_bytes(f.read(12 << 20).rsplit(b"\n", 1)[0] + b"\nC")
        files.append((p, "csv"))
    for p, _ in files:
        assert p.stat().st_size % 4096, p
    return files


def test_every_way_counts_what_the_map_counts(edge_files):
    for path, fmt in edge_files:
        ref = _core.count_records(str(path), fmt, threads=3, io="mmap")
        assert ref["io"] == "mmap"
        for way in WAYS:
            for threads in (1, 2, 5):
                got = _core.count_records(str(path), fmt, threads=threads, io=way)
                assert got["records"] == ref["records"], (path.name, way, threads)
                assert got["bytes"] == ref["bytes"]
                if way != "auto":
                    assert got["io"] == way and got["io_reason"] == "", (path.name, got)
                if way == "direct":  # whole blocks, never less than the file, about once
                    assert ref["bytes"] <= got["bytes_read"] <= 1.01 * ref["bytes"] + 4096 * 8


def test_the_bundled_counts_are_the_records_read(edge_files):
    """The mapped count itself is checked against the records the readers yield."""
    for path, fmt in edge_files[:4]:
        assert _core.count_records(str(path), fmt, io="mmap")["records"] == len(
            list(molsift.read_records(path, format=fmt))
        )


@pytest.mark.parametrize("way", WAYS)
def test_every_way_reads_the_same_records_by_slabs(edge_files, way):
    for path, fmt in edge_files:
        size = path.stat().st_size
        whole = list(molsift.read_records(path, format=fmt, io="pread"))
        for slabs, buffer in ((1, 1 << 20), (3, 4096), (7, 100_000)):
            got, methods = [], set()
            for start, end in _core.split_slabs(size, slabs):
                src = _core.RecordSource(
                    str(path), fmt, slab=(start, end), buffer_size=buffer, io=way,
                    header=fmt == "csv",
                )  # fmt: skip
                while batch := src.next_batch(5000):
                    got.extend(batch)
                methods.add(src.counters()["io"])
            first = [(r[1], r[2], r[3]) for r in got[:3]]
            assert len(got) == len(whole), (path.name, way, slabs)
            assert [r[3] for r in got] == [r[3] for r in whole], (path.name, way, slabs)
            assert first == [(r[1], r[2], r[3]) for r in whole[:3]]
            if way != "auto":
                assert methods == {way}


def _drop_from_cache(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def test_auto_maps_a_cached_file_and_reads_a_cold_one_buffered(tmp_path):
    """Issue 40, defect 17: `auto` read a cold file direct, the slowest way on this machine
    kind (0.87 GB/s against 1.73-1.81 for the buffered ways); it now reads it by pread with the
    kernel's read-ahead, the fastest buffered way in benches/count.py here."""
    fs = subprocess.run(["stat", "-f", "-c", "%T", str(tmp_path)], capture_output=True, text=True)
    if fs.stdout.strip() in ("tmpfs", "ramfs"):
        pytest.skip(f"{tmp_path} is on {fs.stdout.strip()}: its pages cannot leave the cache")
    path = tmp_path / "big.smi"
    path.write_bytes(b"CCO\n" * (3 << 20))  # 12 MiB: over auto's 8 MiB
    path.read_bytes()
    warm = _core.count_records(str(path), "smiles", threads=2)
    assert (warm["io"], warm["records"]) == ("mmap", 3 << 20)
    assert "cached" in warm["io_reason"]
    _drop_from_cache(path)
    cold = _core.count_records(str(path), "smiles", threads=2)
    assert (cold["io"], cold["records"]) == ("pread", 3 << 20), cold
    assert "0% cached" in cold["io_reason"]
    # the slab reader: pread when cached, and when cold
    _drop_from_cache(path)
    src = _core.RecordSource(str(path), "smiles", slab=(0, path.stat().st_size))
    src.next_batch(10)
    assert src.counters()["io"] == "pread"
    path.read_bytes()
    src = _core.RecordSource(str(path), "smiles", slab=(0, path.stat().st_size))
    assert src.counters()["io"] == "pread"
    # direct is still there when asked for
    _drop_from_cache(path)
    assert _core.count_records(str(path), "smiles", threads=2, io="direct")["io"] == "direct"


def test_small_files_are_mapped_by_auto(bundled_smi):
    r = _core.count_records(str(bundled_smi), "smiles", io="auto")
    assert (r["io"], r["io_reason"]) == ("mmap", "auto: under 8 MiB")


@pytest.fixture
def ramfs(tmp_path):
    """A ramfs mount: a filesystem that refuses O_DIRECT (tmpfs takes it since Linux 6.6)."""
    where = tmp_path / "ramfs"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "ramfs", "none", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a ramfs here (needs root): {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def test_a_filesystem_refusing_o_direct_falls_back_to_buffered_reads(ramfs, bundled_smi):
    path = ramfs / "lib.smi"
    path.write_bytes(bundled_smi.read_bytes())
    with pytest.raises(OSError):
        os.close(os.open(path, os.O_RDONLY | os.O_DIRECT))  # the premise: ramfs refuses it
    r = _core.count_records(str(path), "smiles", threads=2, io="direct")
    assert (r["records"], r["io"]) == (4999, "uring")
    assert "refused O_DIRECT" in r["io_reason"] and "uring instead" in r["io_reason"]
    src = _core.RecordSource(str(path), "smiles", slab=(0, path.stat().st_size), io="direct")
    assert len(src.next_batch(10_000)) == 4999
    assert src.counters()["io"] == "uring"
    proc = subprocess.run(
        [sys.executable, "-m", "molsift", "count", str(path), "--io", "direct"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and proc.stdout.startswith("4999\t")
    assert "read by uring (direct asked, the filesystem refused O_DIRECT" in proc.stderr


@pytest.fixture
def io_uring_disabled():
    """io_uring refused for this process's children, as seccomp or the sysctl do (root)."""
    knob = Path("/proc/sys/kernel/io_uring_disabled")
    try:
        before = knob.read_text()
        knob.write_text("2")
    except OSError as exc:
        pytest.skip(f"cannot disable io_uring here (needs root, Linux 6.6+): {exc}")
    try:
        yield
    finally:
        knob.write_text(before)


def test_a_kernel_refusing_io_uring_falls_back_to_pread(io_uring_disabled, edge_files):
    path, fmt = edge_files[2]
    ref = _core.count_records(str(path), fmt, io="mmap")["records"]
    r = _core.count_records(str(path), fmt, threads=2, io="uring")
    assert (r["records"], r["io"]) == (ref, "pread")
    assert "io_uring unavailable" in r["io_reason"]
    d = _core.count_records(str(path), fmt, threads=2, io="direct")
    assert (d["records"], d["io"]) == (ref, "direct")
    assert "one direct read at a time" in d["io_reason"]
    src = _core.RecordSource(str(path), fmt, slab=(0, path.stat().st_size), io="uring")
    n = 0
    while batch := src.next_batch(10_000):
        n += len(batch)
    assert (n, src.counters()["io"]) == (ref, "pread")


def test_bad_io_names_are_refused(bundled_smi):
    with pytest.raises(ValueError, match="io must be one of auto, mmap, pread, uring, direct"):
        molsift.count_records(bundled_smi, io="fast")
    with pytest.raises(ValueError, match="io must be one of"):
        _core.RecordSource(str(bundled_smi), "smiles", io="fast")
    proc = subprocess.run(
        [sys.executable, "-m", "molsift", "count", str(bundled_smi), "--io", "fast"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "invalid choice: 'fast'" in proc.stderr


def test_count_imports_nothing_it_does_not_need(bundled_smi):
    """`molsift count` starts counting a few milliseconds after Python: none of the heavy
    modules the other verbs use is imported on its way."""
    code = (
        "import sys\n"
        "from molsift.cli import main\n"
        f"assert main(['count', {str(bundled_smi)!r}, '--io', 'pread']) == 0\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(proc.stdout.split("\n")[-2].split())
    assert "molsift.inputs.counting" in loaded
    heavy = {
        "argparse",
        "numpy",
        "rdkit",
        "typing",
        "inspect",
        "dataclasses",
        "molsift.ingestion",
        "molsift.store",
        "molsift.inputs.files",
        "molsift.cli.ingest",
        "molsift.spec",
    }
    assert not heavy & loaded, sorted(heavy & loaded)


@pytest.mark.parametrize(
    "words",
    [
        ["lib.smi"],
        ["lib.smi", "-j", "3"],
        ["--threads", "2", "lib.smi", "--json"],
        ["lib.smi", "--io", "direct", "--format", "csv", "--no-header"],
        ["--header", "lib.smi", "--io", "mmap", "-j", "1", "--format", "sdf"],
    ],
)
def test_count_fast_arguments_equal_argparse(words):
    """`molsift count` reads its usual command lines without argparse: the same values."""
    from molsift.cli import build_parser
    from molsift.cli.count import fast_args

    fast = vars(fast_args(words))
    slow = vars(build_parser("count").parse_args(["count", *words]))
    assert fast.pop("func") is slow.pop("func")
    assert fast == slow


@pytest.mark.parametrize(
    "words",
    [
        [],
        ["-h"],
        ["lib.smi", "--help"],
        ["lib.smi", "other.smi"],
        ["lib.smi", "-j"],
        ["lib.smi", "-j", "two"],
        ["lib.smi", "-j", "-1"],
        ["lib.smi", "-j", "0"],  # argparse refuses it in words (it reached the core as 0)
        ["lib.smi", "--io", "fast"],
        ["lib.smi", "--io=direct"],
        ["lib.smi", "-j4"],
        ["lib.smi", "--smiles-col", "s"],
        ["lib.smi", "--io-log", "log.json"],
        ["-"],
        ["--", "lib.smi"],
    ],
)
def test_count_leaves_other_command_lines_to_argparse(words):
    from molsift.cli.count import fast_args

    assert fast_args(words) is None


@pytest.mark.parametrize("threads", ["1000000000", "99999999999999999999"])
@pytest.mark.parametrize("form", ["-j", "--threads="])
def test_count_with_more_threads_than_can_run_gives_the_same_count(tmp_path, threads, form):
    """`molsift count FILE -j 1000000000` made the core list a billion slabs (a 16 GB
    allocation: the core's abort with a backtrace, or minutes of swapping), and
    `-j 99999999999999999999` was OverflowError's traceback, exit status 1. More threads than
    the file has bytes or than the kernel runs (kernel.threads-max) count the same as fewer."""
    path = tmp_path / "small.smi"
    path.write_bytes(b"".join(b"C%d\n" % i for i in range(300)))
    words = [form, threads] if form == "-j" else [form + threads]
    proc = subprocess.run(
        ["bash", "-c", 'ulimit -v 4000000; exec "$@"', "bash", sys.executable, "-m", "molsift",
         "count", str(path), *words],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == f"300\t{path}\n" and "Traceback" not in proc.stderr, proc.stderr


def _count(*words, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "molsift", "count", *words], cwd=cwd,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_count_says_when_an_unknown_suffix_is_read_as_smiles(tmp_path):
    """`molsift count x.cube` counted a cube file's lines as SMILES records without a word
    (exit 0, 777 "records"): a name whose suffix is no input format's is still read as SMILES,
    as every verb reads it, and a note on stderr says so; a known suffix, or --format, says
    nothing more."""
    lines = b"".join(b"C%d x\n" % i for i in range(7))
    for name in ("grid.cube", "lib.dat.gz", "library"):
        data = gzip.compress(lines) if name.endswith(".gz") else lines
        (tmp_path / name).write_bytes(data)
        proc = _count(name, cwd=tmp_path)
        assert proc.returncode == 0 and proc.stdout == f"7\t{name}\n", proc.stderr
        first = proc.stderr.splitlines()[0]
        suffix = {"grid.cube": "its suffix '.cube'", "lib.dat.gz": "its suffix '.dat'",
                  "library": "its name, without a suffix,"}[name]  # fmt: skip
        assert first == (
            f"molsift: note: {name}: read as SMILES (one record a line): {suffix} names no input "
            "format (SMILES .smi/.txt, CSV .csv/.tsv, SDF .sdf/.sd/.mol); give --format to read "
            "it as another"
        ), proc.stderr
        proc = _count(name, "--format", "smiles", cwd=tmp_path)
        assert proc.returncode == 0 and "note" not in proc.stderr, proc.stderr
    (tmp_path / "lib.smi").write_bytes(lines)
    proc = _count("lib.smi", "--json", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    proc = _count("missing.cube", cwd=tmp_path)  # no note for a file that is not there
    assert proc.returncode == 2 and proc.stderr == "molsift: error: missing.cube: no such file\n"


def test_header_is_refused_for_sdf(tmp_path, rdkit_sdf):
    """`molsift count lib.sdf --header` ignored --header (an SDF record's first line is its
    title): refused in one line, exit status 2, as every reader of the file refuses it;
    --no-header, what SDF is, is taken."""
    sdf = tmp_path / "lib.sdf"
    sdf.write_bytes(Path(rdkit_sdf).read_bytes())
    want = molsift.count_records(sdf)["records"]
    assert want > 1
    for words, name in ((["lib.sdf", "--header"], "lib.sdf"),
                        (["lib.sdf", "--header", "--json"], "lib.sdf"),
                        (["--header", "lib.smi", "--format", "sdf"], "lib.smi")):  # fmt: skip
        (tmp_path / "lib.smi").write_bytes(sdf.read_bytes())
        proc = _count(*words, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stdout == "", proc.stdout
        assert proc.stderr == (
            f"molsift: error: {name}: --header applies to line files (SMILES/CSV), not SDF\n"
        ), proc.stderr
    proc = _count("lib.sdf", "--no-header", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == f"{want}\tlib.sdf\n", proc.stderr
    with pytest.raises(ValueError, match="--header applies to line files"):
        molsift.count_records(sdf, header=True)
