"""`read_cube` and `write_cube` on one machine: numpy allocates the grid, the Rust core
(`_core.cube_read`, `_core.cube_write`) fills it from the file or writes it out with
`workers` threads. Under MPI (`comm=`) reading goes through `mpi.py`."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .. import _core
from .model import Cube

DTYPES = ("float64", "float32")
LAYOUTS = ("cp2k", "gaussian")


def _workers(workers: int | None) -> int:
    from ..parallel import check_workers, default_workers

    if check_workers(workers) is None:
        return default_workers()
    return int(workers)


def _dtype(dtype: Any) -> str:
    name = np.dtype(dtype).name
    if name not in DTYPES:
        raise ValueError(f"dtype must be float64 or float32, not {name}")
    return name


def readable(path: str | os.PathLike) -> str:
    """`path` when it is a regular file; else `InputError` saying what it is, in the words
    every input's error uses (a directory was "No such device (os error 19)")."""
    from ..inputs.counting import _not_a_file

    path = os.fspath(path)
    if not os.path.isfile(path):
        raise _core.InputError(f"{path}: {_not_a_file(path)}")
    return path


def read_header(path: str | os.PathLike) -> dict[str, Any]:
    """The header of a cube file as a dict (no values read): comments, origin, axes, units,
    atoms, orbitals, shape, nval, value_count, values_offset, file_bytes, and row_bytes when
    every row of values takes the same bytes (the fixed layout)."""
    return _core.cube_header(readable(path))


def read_cube(
    path: str | os.PathLike,
    dtype: Any = "float64",
    workers: int | None = None,
    *,
    comm: Any = None,
    slabs: int = 0,
    stats: dict | None = None,
) -> Cube:
    """Reads a cube file. Values are exactly those of Python's `float()` on each number (for
    float32: the nearest float32 of the decimal, rounded once). `workers` threads (default:
    all cores) parse slabs of the file. With `comm` (an mpi4py communicator, every rank
    calling), each rank reads its own block of x-planes with MPI-IO collective reads and gets
    a `Cube` whose `values` are that block and `x_range` its planes.

    A malformed file raises `InputError` naming the file, line and byte offset: a truncated
    value area, too many or too few values, a non-number, NaN or infinity, a header that lies
    about its counts. `stats`, if given, receives what the reader did (fixed layout or
    counting path, slabs, threads, bytes)."""
    dtype = _dtype(dtype)
    if comm is not None:
        from .mpi import read_cube_block

        return read_cube_block(path, comm, dtype=dtype, stats=stats)
    path = readable(path)
    header = _core.cube_header(path)
    shape = tuple(header["shape"]) + ((header["nval"],) if header["nval"] > 1 else ())
    values = np.empty(shape, dtype=dtype)
    done = _core.cube_read(
        path,
        values.ctypes.data,
        values.nbytes,
        dtype,
        threads=_workers(workers),
        slabs=slabs,
    )
    if stats is not None:
        stats.update(done)
    return Cube.from_header(header, values)


def write_cube(
    path: str | os.PathLike,
    cube: Cube,
    layout: str = "cp2k",
    workers: int | None = None,
    *,
    sync: bool = True,
) -> int:
    """Writes `cube` as a cube file and returns its size in bytes. `layout` "cp2k" writes
    CP2K's `6E13.5` numbers (`0.12345E-01`, five significant digits); "gaussian" writes
    Gaussian's and PySCF's `%13.5E` (`1.23456E-01`, six). Either way every (x, y) row of
    values starts a new line, six values per line, so every row has the same bytes and
    `workers` threads write rows at their offsets. The file is written under a temporary name,
    synced (unless `sync=False`) and renamed: a crash never leaves a partial file under `path`."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    if cube.x_range is not None and cube.values.shape[0] != cube.shape[0]:
        raise ValueError("this cube holds one MPI rank's block; gather it before writing")
    values = cube.values
    if values.dtype.name not in DTYPES:
        values = values.astype(np.float64)
    values = np.ascontiguousarray(values)
    nbytes, _ = _core.cube_write(
        os.fspath(path),
        cube.header(),
        values.ctypes.data,
        values.nbytes,
        values.dtype.name,
        layout=layout,
        threads=_workers(workers),
        sync=sync,
    )
    return int(nbytes)
