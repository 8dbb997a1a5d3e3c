"""Cube files (`molsift.read_cube`, `write_cube`, `molsift cube`): values bit for bit equal to
a plain whitespace-split parse for every layout and slab count, write-then-read byte identity,
the writer's numbers against C's and Fortran's formatting, and bad input named by file, line
and byte offset. Real files: PySCF's writer, ASE's, molsift's CP2K layout, Gaussian-style
orbital cubes (tests/data/cube/make.py)."""

from __future__ import annotations

import os
import random
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

import molsift
from molsift import _core
from molsift.cube import Cube, read_cube, write_cube
from molsift.cube.analysis import diff, stats
from molsift.cube.formats import read_hdf5, read_npy, to_hdf5, to_npy
from molsift.cube.io import read_header

DATA = Path(__file__).parent / "data" / "cube"
FILES = sorted(DATA.glob("*.cube"))
FIXED = [p for p in FILES if not p.name.endswith(".ase.cube")]


def reference(path: Path) -> tuple[dict, np.ndarray]:
    """The header, and the values by numpy on the whitespace-split text after the header."""
    h = read_header(path)
    text = path.read_bytes()
    lines = text.split(b"\n")
    tokens = b" ".join(lines[h["header_lines"] :]).split()
    return h, np.array([float(t) for t in tokens], dtype=np.float64)


def read_raw(path, dtype="float64", threads=1, slabs=0, fixed=True) -> tuple[np.ndarray, dict]:
    h = read_header(path)
    out = np.empty(h["value_count"], dtype=dtype)
    st = _core.cube_read(str(path), out.ctypes.data, out.nbytes, dtype, threads, slabs, fixed)
    return out, st


def bits(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1).view(np.uint64 if a.dtype == np.float64 else np.uint32)


def test_bundled_files_are_what_make_py_says():
    assert {p.name for p in FILES} == {
        "formaldehyde_mep_16.cube",
        "water_density_12.ase.cube",
        "water_density_20.cp2k.cube",
        "water_density_20.cube",
        "water_mos_12.cube",
        "water_orbital_16.cube",
    }
    assert DATA.joinpath("water_density_20.cube").read_text().splitlines()[1].startswith("PySCF")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_values_equal_reference_bit_for_bit(path):
    h, ref = reference(path)
    cube = read_cube(path, workers=2)
    want_shape = tuple(h["shape"]) + ((h["nval"],) if h["nval"] > 1 else ())
    assert cube.values.shape == want_shape
    assert np.array_equal(bits(cube.values), bits(ref))
    f32 = read_cube(path, dtype="float32").values
    assert f32.dtype == np.float32
    assert np.array_equal(bits(f32), bits(ref.astype(np.float32)))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_slab_count_and_both_paths(path):
    _, ref = reference(path)
    for fixed in (True, False):
        for slabs in range(1, 17):
            for threads in (1, 3):
                got, st = read_raw(path, threads=threads, slabs=slabs, fixed=fixed)
                assert np.array_equal(bits(got), bits(ref)), (fixed, slabs, threads)
                if not fixed:
                    assert st["fixed"] is False


def test_layout_detection():
    for path in FIXED:
        assert read_header(path)["row_bytes"], path.name
        _, st = read_raw(path)
        assert st["fixed"] is True
    ase = DATA / "water_density_12.ase.cube"
    assert read_header(ase)["row_bytes"] is None
    _, st = read_raw(ase)
    assert st["fixed"] is False


@pytest.mark.parametrize(
    "name,layout",
    [
        ("water_density_20.cube", "gaussian"),
        ("formaldehyde_mep_16.cube", "gaussian"),
        ("water_orbital_16.cube", "gaussian"),
        ("water_mos_12.cube", "gaussian"),
        ("water_density_20.cp2k.cube", "cp2k"),
    ],
)
def test_write_then_read_gives_the_same_bytes(tmp_path, name, layout):
    src = DATA / name
    cube = read_cube(src)
    for workers in (1, 3):
        out = tmp_path / f"{workers}.cube"
        size = write_cube(out, cube, layout=layout, workers=workers)
        assert out.read_bytes() == src.read_bytes()
        assert size == src.stat().st_size
    assert not [p for p in os.listdir(tmp_path) if "tmp" in p]


def test_cp2k_layout_follows_the_spec():
    lines = (DATA / "water_density_20.cp2k.cube").read_text().splitlines()
    assert lines[0] == "-Quickstep-"
    values = lines[9:]  # 2 comments, origin, 3 axes, 3 atoms
    # 20 values per row: lines of 6, 6, 6 and 2, each value 13 columns of Fortran E13.5
    assert [len(v) for v in values[:4]] == [78, 78, 78, 26]
    cells = [v[i : i + 13] for v in values for i in range(0, len(v), 13)]
    assert len(cells) == 8000
    assert all(re.fullmatch(r" {1,2}-?0\.\d{5}E[+-]\d\d", c) and len(c) == 13 for c in cells)


def fortran_e13_5(v: float) -> str:
    """Fortran's E13.5 by hand from Python's correctly rounded %.4E (five digits)."""
    if v == 0:
        body = "0.00000E+00"
        return ("-" + body if np.signbit(v) else body).rjust(13)
    m, e = f"{abs(v):.4E}".split("E")
    digits = m.replace(".", "")
    exp = int(e) + 1
    body = f"0.{digits}" + (f"E{exp:+03d}" if abs(exp) < 100 else f"{exp:+04d}")
    return (("-" if v < 0 else "") + body).rjust(13)


def test_writer_numbers_match_c_and_fortran_formatting():
    rng = random.Random(7)
    values = [0.0, -0.0, 1.0, -1.0, 0.5, 0.00390625, 2.5e-5, 9.999995, 9.9999949, 1e-100, 1e100,
              1.2345e-101, 5e-324, 1.7976931348623157e308, 0.125, 0.0078125 * 3]  # fmt: skip
    for _ in range(20000):
        values.append(rng.uniform(-1, 1) * 10 ** rng.uniform(-40, 40))
        # exact binary ties at the rounding digit
        values.append(rng.randrange(1, 2**20) / 2 ** rng.randrange(1, 30))
        # one digit more than written, ending in 5: within 1e-12 of a decimal tie
        for n in (5, 6):
            digits = rng.randrange(10 ** (n - 1), 10**n)
            values.append(float(f"-{digits}5e{rng.randrange(-40, 40)}"))
    for v in values:
        assert _core.cube_format_value(v, "gaussian") == f"{v:13.5E}", v
        assert _core.cube_format_value(v, "cp2k") == fortran_e13_5(v), v


def test_written_values_read_back_within_format_precision(tmp_path):
    rng = np.random.default_rng(3)
    v = rng.standard_normal((5, 4, 7)) * 10.0 ** rng.integers(-30, 30, (5, 4, 7))
    cube = Cube(values=v, origin=[0, 0, 0], axes=np.eye(3) * 0.2, comments=("a", "b"))
    for layout, digits in (("gaussian", 6), ("cp2k", 5)):
        write_cube(tmp_path / "x.cube", cube, layout=layout)
        back = read_cube(tmp_path / "x.cube").values
        want = np.array([float(f"{x:.{digits - 1}e}") for x in v.reshape(-1)]).reshape(v.shape)
        assert np.array_equal(back, want), layout


def number_forms() -> str:
    text = (
        "c1\nc2\n    0    0.0 0.0 0.0\n    1 1.0 0 0\n    1 0 1.0 0\n    8 0 0 1.0\n"
        "  0.12345-100  0.12345+101 1.0D-03 -2.5d+2 +7 .5\n  5. 1e3\n"
    )
    return text


def write(tmp_path: Path, text: str | bytes, name: str = "t.cube") -> Path:
    p = tmp_path / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


def test_fortran_and_other_number_forms(tmp_path):
    p = write(tmp_path, number_forms())
    got = read_cube(p).values.reshape(-1)
    assert got.tolist() == [0.12345e-100, 0.12345e101, 1e-3, -250.0, 7.0, 0.5, 5.0, 1000.0]


def test_crlf_file_reads_the_same(tmp_path):
    src = DATA / "water_density_20.cube"
    crlf = write(tmp_path, src.read_bytes().replace(b"\n", b"\r\n"))
    a = read_cube(src).values
    b = read_cube(crlf).values
    assert np.array_equal(bits(a), bits(b))
    cube = read_cube(crlf)
    assert cube.comments == read_cube(src).comments


def test_angstrom_units_and_wrapped_orbital_lines(tmp_path):
    v = np.arange(2 * 3 * 2 * 12, dtype=np.float64).reshape(2, 3, 2, 12) / 7.0
    atoms = np.zeros(1, dtype=molsift.cube.model.ATOM_DTYPE)
    atoms[0] = (6, 6.0, (0.1, 0.2, 0.3))
    cube = Cube(values=v, origin=[1, 2, 3], axes=np.diag([0.1, 0.2, 0.3]), atoms=atoms,
                units="angstrom", comments=("x", "y"), orbitals=tuple(range(10, 22)))  # fmt: skip
    p = tmp_path / "mo.cube"
    write_cube(p, cube, layout="gaussian")
    lines = p.read_text().splitlines()
    assert lines[2].split()[0] == "-1" and lines[3].split()[0] == "-2"
    assert lines[7].split() == ["12", *map(str, range(10, 19))]  # count first, 10 per line
    assert lines[8].split() == ["19", "20", "21"]
    back = read_cube(p)
    assert back.units == "angstrom" and back.orbitals == tuple(range(10, 22))
    assert back.values.shape == (2, 3, 2, 12)
    assert np.allclose(back.values, v, rtol=1e-5)
    assert back.voxel_volume_bohr3 == pytest.approx(0.006 / 0.529177210903**3)
    write_cube(tmp_path / "again.cube", back, layout="gaussian")
    assert (tmp_path / "again.cube").read_bytes() == p.read_bytes()


HEADER = (
    "c1\nc2\n    1    0.0 0.0 0.0\n    2 1.0 0 0\n    2 0 1.0 0\n    3 0 0 1.0\n    1 0.0 0 0 0\n"
)


def bad(tmp_path, text, *, fixed=True) -> str:
    p = write(tmp_path, text)
    with pytest.raises(molsift.InputError) as e:
        read_raw(p, fixed=fixed) if not fixed else read_cube(p)
    msg = str(e.value)
    assert str(p) in msg
    return msg


def where(text: str, token: str) -> tuple[int, int]:
    off = text.index(token)
    return text.count("\n", 0, off) + 1, off


def test_bad_values_are_named_by_line_and_byte(tmp_path):
    good = HEADER + "1 2 3\n4 5 6\n7 8 9\n10 11 12\n"
    assert read_cube(write(tmp_path, good)).values.reshape(-1).tolist() == list(range(1, 13))
    for token, what in (("abc", "not a number"), ("NaN", "non-finite"), ("-inf", "non-finite"),
                        ("1e999", "out of the range"), ("1.5.2", "not a number"),
                        ("\x00", "unexpected byte")):  # fmt: skip
        text = HEADER + f"1 2 3\n4 5 6\n7 {token} 9\n10 11 12\n"
        for fixed in (True, False):
            msg = bad(tmp_path, text, fixed=fixed)
            line, off = where(text, token)
            assert f"line {line}, byte {off}" in msg and what in msg, msg


def test_a_bad_token_is_named_before_a_wrong_count(tmp_path):
    text = HEADER + "1 2 3\n4 5 6\n7 8-9\n10 11 12\n"  # two numbers run together
    for fixed in (True, False):
        msg = bad(tmp_path, text, fixed=fixed)
        line, off = where(text, "8-9")
        assert f'line {line}, byte {off}: not a number: "8-9"' in msg, msg


def test_counts_that_do_not_add_up(tmp_path):
    truncated = HEADER + "1 2 3\n4 5 6\n7 8"
    msg = bad(tmp_path, truncated)
    assert "too few values" in msg and "8 values" in msg and "12" in msg and "truncated" in msg
    assert f"byte {len(truncated)}" in msg
    extra = HEADER + "1 2 3\n4 5 6\n7 8 9\n10 11 12\n13\n"
    msg = bad(tmp_path, extra)
    line, off = where(extra, "13")
    assert "too many values" in msg and f"line {line}, byte {off}" in msg
    # a header that lies: 3 atoms announced, 1 given, values read as atoms
    lies = HEADER.replace("    1    0.0", "    3    0.0") + "1 2 3 4 5\n"
    with pytest.raises(molsift.InputError, match=r"header line 9 .*atom 2: .*is missing|header"):
        read_cube(write(tmp_path, lies))
    nval = HEADER.replace("    1    0.0 0.0 0.0\n", "   -1    0.0 0.0 0.0    3\n") + "    2 5 6\n"
    with pytest.raises(molsift.InputError, match="3 values per point but the orbital line lists 2"):
        read_cube(write(tmp_path, nval + "1 2 3\n"))


def test_bad_headers(tmp_path):
    cases = {
        "": "ends before the first comment line",
        "c1\nc2\n": "ends before the origin line",
        "c1\nc2\n x 0 0 0\n": "atom count is not a number",
        "c1\nc2\n 1 0 0\n": "origin z is missing",
        "c1\nc2\n 1 0 0 0\n 0 1 0 0\n": "point count 0",
        "c1\nc2\n 1 0 0 0\n 2 1 0 0\n 2 0 1 0\n 2 0 0 1\n": "ends before atom line 1",
        "c1\nc2\n 0 0 0 0 0\n": "values per point must be at least 1",
        "c1\nc2\n 0 0 0 nan\n": "not finite",
    }
    for text, reason in cases.items():
        p = write(tmp_path, text)
        with pytest.raises(molsift.InputError, match=re.escape(reason)) as e:
            read_cube(p)
        assert str(p) in str(e.value) and "header line" in str(e.value)


def test_npy_hdf5_round_trip(tmp_path):
    cube = read_cube(DATA / "water_mos_12.cube")
    to_npy(cube, tmp_path / "g.npy")
    back = read_npy(tmp_path / "g.npy")
    assert np.array_equal(back.values, cube.values) and back.orbitals == cube.orbitals
    assert isinstance(back.values, np.memmap)
    pytest.importorskip("h5py")
    to_hdf5(cube, tmp_path / "g.h5")
    back = read_hdf5(tmp_path / "g.h5")
    assert np.array_equal(back.values, cube.values)
    write_cube(tmp_path / "g.cube", back, layout="gaussian")
    assert (tmp_path / "g.cube").read_bytes() == (DATA / "water_mos_12.cube").read_bytes()


def test_stats_and_diff():
    d = read_cube(DATA / "water_density_20.cube")
    s = stats(d)[0]
    v = d.values
    assert s["min"] == v.min() and s["max"] == v.max() and s["points"] == 8000
    assert s["integral"] == pytest.approx(v.sum() * abs(np.linalg.det(d.axes)))
    assert s["electrons"] == pytest.approx(s["integral"])  # bohr
    c = read_cube(DATA / "water_density_20.cp2k.cube")
    delta = diff(d, c)
    assert np.array_equal(delta.values, d.values - c.values)
    assert np.abs(delta.values).max() <= 5e-5 * 1.0000001 * max(1.0, np.abs(v).max())
    with pytest.raises(ValueError, match="not on the same grid"):
        diff(d, read_cube(DATA / "water_orbital_16.cube"))


def molsift_cli(*args, cwd=None) -> subprocess.CompletedProcess:
    from conftest import molsift_cmd

    return subprocess.run([*molsift_cmd(), *args], capture_output=True, text=True, cwd=cwd)


def test_cli(tmp_path):
    src = DATA / "water_density_20.cube"
    p = molsift_cli("cube", "info", str(src))
    assert p.returncode == 0 and "20x20x20 points" in p.stdout and "fixed: 264 bytes" in p.stdout
    p = molsift_cli("cube", "convert", str(src), "-o", str(tmp_path / "d.npy"))
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "d.npy.json").exists()
    p = molsift_cli("cube", "convert", str(tmp_path / "d.npy"), "-o", str(tmp_path / "d.cube"),
                    "--layout", "gaussian")  # fmt: skip
    assert p.returncode == 0 and (tmp_path / "d.cube").read_bytes() == src.read_bytes()
    p = molsift_cli("cube", "stats", str(src), "--json")
    assert p.returncode == 0
    import json

    assert json.loads(p.stdout)[0]["points"] == 8000
    p = molsift_cli("cube", "diff", str(src), str(src), "-o", str(tmp_path / "z.cube"))
    assert p.returncode == 0 and not read_cube(tmp_path / "z.cube").values.any()
    p = molsift_cli("cube", "slice", str(DATA / "water_mos_12.cube"), "--plane", "xz",
                    "--value", "2", "-o", str(tmp_path / "s.png"))  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "s.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    broken = write(tmp_path, HEADER + "1 2 x\n", "broken.cube")
    p = molsift_cli("cube", "stats", str(broken))
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0
    assert f"broken.cube: line 8, byte {len(HEADER) + 4}: not a number" in p.stderr


MPI_SCRIPT = r"""
import sys, numpy as np
from mpi4py import MPI
import molsift.cube as mc
from molsift.cube.mpi import gather_values
comm = MPI.COMM_WORLD
for path in sys.argv[1:]:
    st = {}
    block = mc.read_cube(path, comm=comm, stats=st)
    whole = gather_values(block, comm)
    if comm.Get_rank() == 0:
        serial = mc.read_cube(path).values
        ok = whole.shape == serial.shape and np.array_equal(
            whole.reshape(-1).view(np.uint64), serial.reshape(-1).view(np.uint64))
        amp = st["bytes_read"] / st["file_bytes"]
        print(path, ok, st["fixed"], f"{amp:.4f}", flush=True)
"""


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_mpi_read_and_convert_match_serial(tmp_path, ranks):
    from conftest import mpi_env, mpirun_cmd

    script = tmp_path / "read.py"
    script.write_text(MPI_SCRIPT)
    import sys

    # a free-form file with ragged lines and runs of whitespace: numbers cut by every share end
    src = DATA / "water_density_20.cube"
    h = read_header(src)
    lines = src.read_text().splitlines(keepends=True)
    rng = random.Random(ranks)
    ragged = "".join(lines[: h["header_lines"]])
    for v in reference(src)[1]:
        ragged += repr(float(v)) + (" " * rng.randrange(1, 4) if rng.random() < 0.8 else "\n")
    (tmp_path / "ragged.cube").write_text(ragged + "\n")
    paths = [*map(str, FILES), str(tmp_path / "ragged.cube")]
    proc = subprocess.run(
        [*mpirun_cmd(ranks), sys.executable, str(script), *paths],
        env=mpi_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()]
    assert len(rows) == len(paths)
    for path, ok, fixed, amp in rows:
        assert ok == "True", path
        assert (fixed == "True") == (not path.endswith((".ase.cube", "ragged.cube")))
        # each rank reads its own bytes: the value area once in the fixed layout; on the counting
        # path a share each plus 65 bytes around it (to finish numbers cut by the share's end)
        size = Path(path).stat().st_size
        limit = 1.0 if fixed == "True" else 1.0 + ranks * 65 / size
        assert float(amp) <= limit + 1e-4, (path, amp)
    from conftest import run_mpi

    src = DATA / "water_mos_12.cube"
    proc = run_mpi(ranks, ["cube", "convert", str(src), "-o", str(tmp_path / "m.npy")])
    assert proc.returncode == 0, proc.stderr
    to_npy(read_cube(src), tmp_path / "serial.npy")
    assert (tmp_path / "m.npy").read_bytes() == (tmp_path / "serial.npy").read_bytes()
    assert (tmp_path / "m.npy.json").read_text() == (tmp_path / "serial.npy.json").read_text()


@pytest.mark.mpi
def test_mpi_bad_file_fails_on_every_rank(tmp_path):
    from conftest import run_mpi

    broken = write(tmp_path, (DATA / "water_density_20.cube").read_text().replace(
        "E-01", "E-0x", 1))  # fmt: skip
    proc = run_mpi(3, ["cube", "convert", str(broken), "-o", str(tmp_path / "b.npy")], timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "not a number" in proc.stderr and str(broken) in proc.stderr
    assert not (tmp_path / "b.npy").exists()


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    cube = read_cube(DATA / "water_density_20.cube")
    out = tmp_path / "out.cube"
    write_cube(out, cube)
    before = out.read_bytes()
    bad_values = cube.values.copy()
    bad_values[7, 3, 11] = np.nan
    broken = Cube(values=bad_values, origin=cube.origin, axes=cube.axes, atoms=cube.atoms,
                  comments=cube.comments)  # fmt: skip
    with pytest.raises(ValueError, match=r"value 2871 \(flat C-order index\) is not finite"):
        write_cube(out, broken, workers=3)
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.cube"]
    with pytest.raises(ValueError, match="not finite"):
        write_cube(tmp_path / "new.cube", broken)
    assert not (tmp_path / "new.cube").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.cube"]


def test_convert_sweeps_the_temporaries_of_killed_converts(tmp_path):
    """Issue 40, defect 11: kill -9 of `molsift cube convert` left `OUT.npy.tmp-PID` (23-33 MB)
    and later converts onto the same output never removed it. A convert now sweeps those of dead
    processes (molsift's named temporaries at once, host-less ones once a minute old) and keeps
    those of live processes."""
    import socket
    import time

    dead = subprocess.Popen(["true"])
    dead.wait()  # a PID whose process is gone
    host = socket.gethostname().replace("/", "_").replace("@", "_")
    old = time.time() - 3600
    leftovers = {
        f"d.npy.tmp-{dead.pid}": old,  # what the issue found (an earlier molsift's .npy write)
        f"d.npy.json.tmp-{dead.pid}": old,
        f".d.npy.tmp-{dead.pid}-12345@{host}": None,  # molsift's named temporary
        f".d.npy.json.tmp-{dead.pid}-12345@{host}": None,
    }
    kept = {
        f"d.npy.tmp-{os.getpid()}": old,  # a live process: maybe still writing
        f".d.npy.tmp-{os.getpid()}-12345@{host}": None,
        f".d.npy.tmp-{dead.pid}": None,  # host-less and fresh: maybe another host's
        f".other.npy.tmp-{dead.pid}-12345@{host}": None,  # another output's
    }
    for name, mtime in {**leftovers, **kept}.items():
        (tmp_path / name).write_bytes(b"\x93NUMPY leftover")
        if mtime:
            os.utime(tmp_path / name, (mtime, mtime))
    src = DATA / "water_density_20.cube"
    p = molsift_cli("cube", "convert", str(src), "-o", str(tmp_path / "d.npy"))
    assert p.returncode == 0, p.stderr
    names = {p.name for p in tmp_path.iterdir()}
    assert names == {"d.npy", "d.npy.json", *kept}, names
    assert np.array_equal(np.load(tmp_path / "d.npy"), read_cube(src).values)


# ---- a demanding user's wrong files ----
def test_missing_file_or_a_directory_is_said_in_words(tmp_path):
    """`cube info MISSING` said "No such file or directory (os error 2)", `cube info DIR` "No
    such device (os error 19)", `cube stats DIR` "unknown suffix ''", `cube stats MISSING.npy`
    that its .json header was missing."""
    for action, path, why in (
        ("info", tmp_path / "none.cube", "no such file"),
        ("info", tmp_path, "is a directory, not a file"),
        ("stats", tmp_path, "is a directory, not a file"),
        ("stats", tmp_path / "none.npy", "no such file"),
        ("stats", tmp_path / "none.h5", "no such file"),
    ):
        p = molsift_cli("cube", action, str(path))
        assert p.returncode == 2, p.stderr
        assert p.stderr == f"molsift: error: {path}: {why}\n", p.stderr


def test_info_of_a_npy_or_hdf5_file_says_where_its_header_is(tmp_path):
    """`cube info x.npy` read the .npy's bytes as a cube's header: "the first comment line is
    not text (UTF-8)"."""
    from molsift.cube.formats import save

    cube = read_cube(DATA / "water_mos_12.cube")
    for name, why in (("w.npy", "a .npy file's is the .json beside it"), ("w.h5", "an HDF5")):
        path = tmp_path / name
        if name.endswith(".h5"):
            pytest.importorskip("h5py")
        save(cube, path)
        p = molsift_cli("cube", "info", str(path))
        assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
        assert f"{path}: cube info reads a .cube file's header; {why}" in p.stderr, p.stderr


def test_dtype_converts_npy_and_hdf5_values(tmp_path):
    """`cube convert x.npy -o y.npy --dtype float32` wrote float64: --dtype was read only for
    .cube inputs. Without --dtype a file keeps its own type."""
    from molsift.cube.formats import load, save

    cube = read_cube(DATA / "water_mos_12.cube")
    for suffix in ("npy", "h5"):
        if suffix == "h5":
            pytest.importorskip("h5py")
        src = tmp_path / f"w.{suffix}"
        save(cube, src)
        for extra, want in (([], np.float64), (["--dtype", "float32"], np.float32)):
            out = tmp_path / f"out{len(extra)}.{suffix}"
            p = molsift_cli("cube", "convert", str(src), "-o", str(out), *extra)
            assert p.returncode == 0, p.stderr
            got = load(out).values
            assert got.dtype == want and np.array_equal(got, cube.values.astype(want))


def test_damaged_npy_and_hdf5_files_are_named(tmp_path):
    """A .npy that is not one said numpy's "This file contains pickled (object) data ...", its
    .json header not JSON json's message, an HDF5 file not one h5py's "Unable to synchronously
    open file (file signature not found)": none named the file. A header lacking a field was
    a KeyError's traceback."""
    cube = read_cube(DATA / "water_density_20.cube")
    good = tmp_path / "good.npy"
    to_npy(cube, good)
    junk = b"\x00\x01 not numpy nor json nor hdf5 \xff" * 20
    npy = tmp_path / "junk.npy"
    npy.write_bytes(junk)
    side = tmp_path / "junk.npy.json"
    side.write_bytes(junk)
    with pytest.raises(ValueError, match=rf"^{side}: not a molsift cube header \(not JSON: "):
        read_npy(npy)
    side.write_text((tmp_path / "good.npy.json").read_text())
    with pytest.raises(ValueError, match=rf"^{npy}: not a \.npy file"):
        read_npy(npy)
    side.write_text('{"format": "molsift-cube-header", "nval": 1}')
    npy.write_bytes(good.read_bytes())
    with pytest.raises(ValueError, match=rf"^{side}: not a molsift cube header: no field "):
        read_npy(npy)
    pytest.importorskip("h5py")
    h5 = tmp_path / "junk.h5"
    h5.write_bytes(junk)
    with pytest.raises(ValueError, match=rf"^{h5}: not an HDF5 file h5py can read "):
        read_hdf5(h5)
    p = molsift_cli("cube", "stats", str(h5))
    assert p.returncode == 2 and p.stderr.startswith(f"molsift: error: {h5}: "), p.stderr


def test_slice_names_a_picture_format_it_cannot_draw_and_writes_by_renaming(tmp_path):
    """`-o s.txt` was matplotlib's "Format 'txt' is not supported ..." naming no file, said after
    the cube was read; the picture was written in place (a kill left half a PNG). The info of a
    one-value cube said "1 value(s)"."""
    src = DATA / "water_density_20.cube"
    p = molsift_cli("cube", "slice", str(src), "-o", str(tmp_path / "s.txt"))
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith(f"molsift: error: {tmp_path / 's.txt'}: cannot draw a .txt ")
    p = molsift_cli("cube", "slice", str(src), "-o", str(tmp_path / "s.svg"))
    assert p.returncode == 0, p.stderr
    assert b"<svg" in (tmp_path / "s.svg").read_bytes()[:400]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.svg"]  # no temporary left
    p = molsift_cli("cube", "info", str(src))
    assert "20x20x20 points x 1 value = 8,000 values" in p.stdout, p.stdout


def test_an_output_that_is_an_input_is_refused_and_the_input_kept(tmp_path):
    """`cube convert x.cube -o x.cube` replaced the file with its own rewrite (five significant
    digits in the cp2k layout where PySCF wrote six) and `cube diff a b -o a` replaced `a` by
    the difference, both with exit status 0; a .npy output whose .json header was a directory
    left two temporaries and an error naming one of them."""
    a = tmp_path / "a.cube"
    a.write_bytes((DATA / "water_density_20.cube").read_bytes())
    b = DATA / "water_density_20.cp2k.cube"
    os.link(a, tmp_path / "same.cube")
    before = a.read_bytes()
    for args, output in (
        (["convert", str(a)], str(a)),
        (["convert", str(a)], str(tmp_path / "." / "a.cube")),
        (["convert", str(a)], str(tmp_path / "same.cube")),
        (["diff", str(a), str(b)], str(a)),
        (["diff", str(b), str(a)], str(a)),
    ):
        p = molsift_cli("cube", *args, "-o", output)
        assert p.returncode == 2, (args, output, p.stderr)
        assert p.stderr == (
            f"molsift: error: {output}: is an input of this command; choose another output\n"
        )
        assert a.read_bytes() == before
    (tmp_path / "d.npy.json").mkdir()
    p = molsift_cli("cube", "convert", str(a), "-o", str(tmp_path / "d.npy"))
    assert p.returncode == 2 and p.stderr == (
        f"molsift: error: {tmp_path / 'd.npy.json'}: cannot write the output: it is a directory\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.cube", "d.npy.json", "same.cube"]
    p = molsift_cli("cube", "convert", str(a), "-o", str(tmp_path / "c.cube"))
    assert p.returncode == 0 and a.read_bytes() == before, p.stderr


def test_more_workers_than_64_bits_hold_are_all_there_is_work_for(tmp_path):
    """`molsift cube stats FILE -j 99999999999999999999` (and every action's -j) was
    OverflowError's traceback, exit status 1: such a number is taken as the most threads."""
    src = DATA / "water_density_20.cube"
    huge = "99999999999999999999"
    p = molsift_cli("cube", "stats", str(src), "-j", huge, "--json")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert p.stdout == molsift_cli("cube", "stats", str(src), "-j", "1", "--json").stdout
    p = molsift_cli("cube", "convert", str(src), "-o", str(tmp_path / "c.cube"),
                    "--layout", "gaussian", "-j", huge)  # fmt: skip
    assert p.returncode == 0 and (tmp_path / "c.cube").read_bytes() == src.read_bytes(), p.stderr
    p = molsift_cli("cube", "stats", str(src), "-j", "0")
    assert p.returncode == 2 and "must be at least 1, got 0" in p.stderr, p.stderr


def test_diff_of_cubes_on_other_grids_names_both_files_and_what_differs(tmp_path):
    """`cube diff a.cube b.cube` on other grids said "the two cubes are not on the same grid:
    shapes differ: (20, 20, 20) and (16, 16, 16)", naming neither file, and only the first
    difference (the origin and axes that differed too went unsaid)."""
    a, b = DATA / "water_density_20.cube", DATA / "water_orbital_16.cube"
    p = molsift_cli("cube", "diff", str(a), str(b), "-o", str(tmp_path / "d.cube"))
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert p.stderr.startswith(
        f"molsift: error: {a} and {b} are not on the same grid: shape 20x20x20 and 16x16x16; "
    ), p.stderr
    assert "x axis step (0.315789 0 0) and (0.4 0 0)" in p.stderr, p.stderr
    assert not (tmp_path / "d.cube").exists()
    # the same shape, another origin: the origin is said, in digits that show the difference
    cube = read_cube(a)
    origin = cube.origin + np.array([0, 0, 1e-3])
    moved = Cube(values=cube.values, origin=origin, axes=cube.axes, atoms=cube.atoms,
                 comments=cube.comments)  # fmt: skip
    write_cube(tmp_path / "moved.cube", moved, layout="gaussian")
    out = str(tmp_path / "d.cube")
    p = molsift_cli("cube", "diff", str(a), str(tmp_path / "moved.cube"), "-o", out)
    assert p.returncode == 2, p.stderr
    assert p.stderr == (
        f"molsift: error: {a} and {tmp_path / 'moved.cube'} are not on the same grid: "
        "origin (-3 -4.4309 -3.88666) and (-3 -4.4309 -3.88566)\n"
    ), p.stderr
    with pytest.raises(ValueError, match=r"^the two cubes are not on the same grid: origin"):
        diff(cube, moved)


def test_info_of_a_cut_short_cube_says_so_and_that_it_reads_the_header_only(tmp_path):
    """`cube info` of a fixed-layout cube cut short in its values exited 0 calling its layout
    "free-form (read by counting first)". It reads the header only (its help says so now): the
    layout line says what the first row and the file's size show, and the last line that the
    values were not checked and which command reads them."""
    src = DATA / "water_density_20.cube"
    whole = src.read_bytes()
    cut = write(tmp_path, whole[: len(whole) // 2], "cut.cube")
    p = molsift_cli("cube", "info", str(cut))
    assert p.returncode == 0, p.stderr
    area = len(whole) // 2 - 426
    assert (
        "values    from byte 426 (line 10); not fixed: 400 rows of the first row's 264 bytes "
        f"would make 105,600 bytes of values, the file holds {area:,} ({105_600 - area:,} "
        "fewer: cut short?); read by counting\n"
    ) in p.stdout, p.stdout
    assert "free-form" not in p.stdout
    assert p.stdout.endswith(
        f"checked   the header only; `molsift cube stats {cut}` reads every value\n"
    ), p.stdout
    p = molsift_cli("cube", "stats", str(cut))
    assert p.returncode == 2 and "is it truncated?" in p.stderr, p.stderr
    # cut within the first row, or before it
    for size, says in (
        (440, "the file ends at byte 440 within the first row of values (1 of its 20): truncated"),
        (426, "none: the file ends at byte 426, before the first value"),
    ):
        p = molsift_cli("cube", "info", str(write(tmp_path, whole[:size], "cut.cube")))
        assert p.returncode == 0 and f"(line 10); {says}\n" in p.stdout, p.stdout
    # a whole file is fixed; a free-form one (ASE's, no last line end) is not said to be cut
    p = molsift_cli("cube", "info", str(src))
    assert "(line 10); fixed: 264 bytes and 4 lines per row" in p.stdout, p.stdout
    p = molsift_cli("cube", "info", str(DATA / "water_density_12.ase.cube"))
    assert "(1 fewer); read by counting" in p.stdout and "cut short" not in p.stdout, p.stdout
    p = molsift_cli("cube", "info", "--help")
    assert "Header only: the values are not read nor checked" in " ".join(p.stdout.split())


def test_info_json_says_it_checked_the_header_only_and_what_the_size_shows(tmp_path):
    """`cube info --json` printed the header alone: nothing said that the values were not
    checked, nor what the text's `values` line says of a file cut short. It now adds checked:
    "header" and the layout the text shows (the same words in layout_note), with the value
    area's bytes, those rows of the first row's bytes would make, and cut_short."""
    import json

    src = DATA / "water_density_20.cube"
    whole = src.read_bytes()

    def info(path):
        p = molsift_cli("cube", "info", str(path), "--json")
        assert p.returncode == 0, p.stderr
        text = molsift_cli("cube", "info", str(path)).stdout
        got = json.loads(p.stdout)
        assert f"(line 10); {got['layout_note']}\n" in text, (got, text)
        return got

    got = info(src)
    header = json.loads(json.dumps(read_header(src)))  # the header's own fields, as they were
    assert {k: v for k, v in got.items() if k in header} == header
    area = len(whole) - 426
    assert got["checked"] == "header"
    assert got["layout"] == "fixed" and got["cut_short"] is False
    assert got["values_bytes"] == area == got["expected_values_bytes"] == 105_600
    got = info(write(tmp_path, whole[: len(whole) // 2], "cut.cube"))
    assert got["checked"] == "header" and got["layout"] == "not fixed"
    assert got["cut_short"] is True and got["layout_note"].endswith("cut short?); read by counting")
    assert (got["values_bytes"], got["expected_values_bytes"]) == (len(whole) // 2 - 426, 105_600)
    for size, layout in ((440, "truncated"), (426, "none")):
        got = info(write(tmp_path, whole[:size], "cut.cube"))
        assert (got["layout"], got["cut_short"], got["checked"]) == (layout, True, "header")
        assert got["values_bytes"] == size - 426 and got["expected_values_bytes"] is None
    got = info(DATA / "water_density_12.ase.cube")  # free-form, one byte short: not cut
    assert got["layout"] == "not fixed" and got["cut_short"] is False, got
