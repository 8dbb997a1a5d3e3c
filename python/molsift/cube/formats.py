"""Cube grids in other containers, and back: `.npy` (memory-mappable; the header goes in a
`.json` file beside it, `grid.npy` -> `grid.npy.json`) and HDF5 (h5py: dataset `values`, the
header in its attributes). `load` reads any of the three by its suffix, `save` writes them
(under temporary names, then renamed) after sweeping what killed writes of the same output
left behind (`sweep_leftovers`)."""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any

import numpy as np

from .. import _core
from .model import Cube

SUFFIXES = {".cube": "cube", ".cub": "cube", ".npy": "npy", ".h5": "hdf5", ".hdf5": "hdf5"}


def kind_of(path: str | os.PathLike) -> str:
    """ "cube", "npy" or "hdf5" from the file name's suffix."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    kind = SUFFIXES.get(suffix)
    if kind is None:
        raise ValueError(
            f"{os.fspath(path)}: unknown suffix {suffix!r}: use .cube, .npy, or .h5/.hdf5"
        )
    return kind


def header_json(cube: Cube) -> dict[str, Any]:
    """The cube's header as JSON-able data (the `.npy` side file, HDF5 attributes)."""
    h = cube.header()
    h["format"] = "molsift-cube-header"
    h["version"] = 1
    return h


def to_npy(cube: Cube, path: str | os.PathLike) -> None:
    """Writes `path` (.npy, the values) and `path.json` (the header), each under a temporary
    name then renamed."""
    path = os.fspath(path)
    tmp = temporary_name(path)
    with open(tmp, "wb") as f:
        np.lib.format.write_array(f, np.ascontiguousarray(cube.values), allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())
    write_side_header(cube, path)
    os.replace(tmp, path)


def temporary_name(path: str) -> str:
    """The temporary name a write of `path` uses beside it: molsift's one form,
    `.NAME.tmp-PID-NANOS@HOST` (crates/store replace.rs), whose creator a sweep can tell."""
    return os.fspath(_core.temporary_sibling(path, "tmp"))


# host-less temporaries: `.NAME.tmp-PID` (the .cube writer, crates/cube write.rs) and
# `NAME.tmp-PID` (.npy, .json and HDF5 writes of molsift before temporary_name)
_HOSTLESS = re.compile(r"\.?(?P<name>.+)\.tmp-(?P<pid>[0-9]+)")
HOSTLESS_MIN_AGE_S = 60.0


def sweep_leftovers(path: str | os.PathLike) -> list[str]:
    """Removes the temporaries that killed writes of `path` (and of its `.json` header) left
    beside it, returns their names. Named ones (`temporary_name`) go when their process on this
    host is gone (crates/store's rule, `_core.sweep_leftovers`); host-less ones when no process
    of their PID is alive here and they have not changed for `HOSTLESS_MIN_AGE_S` (the name
    cannot tell a writer on another host of a shared file system). Others are left alone."""
    path = os.fspath(path)
    removed = [os.fspath(p) for p in _core.sweep_leftovers(path)]
    removed += [os.fspath(p) for p in _core.sweep_leftovers(f"{path}.json")]
    folder = os.path.dirname(path) or "."
    wanted = {os.path.basename(path), os.path.basename(path) + ".json"}
    try:
        with os.scandir(folder) as it:
            entries = list(it)
    except OSError:  # no such folder, not readable: the write itself will say so
        return removed
    for entry in entries:
        m = _HOSTLESS.fullmatch(entry.name)
        if not m or m["name"] not in wanted or _alive(int(m["pid"])):
            continue
        try:
            if time.time() - entry.stat(follow_symlinks=False).st_mtime < HOSTLESS_MIN_AGE_S:
                continue
            if entry.is_file(follow_symlinks=False):
                os.remove(entry.path)
                removed.append(entry.path)
        except OSError:  # swept by another run at the same moment, or not ours to remove
            continue
    return removed


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def write_side_header(cube: Cube, npy_path: str) -> None:
    """The `.json` header beside a `.npy` file."""
    tmp = temporary_name(f"{npy_path}.json")
    with open(tmp, "w") as f:
        json.dump(header_json(cube), f, indent=1)
        f.write("\n")
    os.replace(tmp, f"{npy_path}.json")


def _from_json(header: dict[str, Any], values: np.ndarray, where: str) -> Cube:
    if not isinstance(header, dict) or header.get("format") != "molsift-cube-header":
        raise ValueError(f"{where} is not a molsift cube header")
    try:  # a field missing or of the wrong kind was a KeyError's or TypeError's traceback
        n = [abs(int(x)) for x in header["shape_fields"]]
        nval = int(header["nval"])
        want = tuple(n) + ((nval,) if nval > 1 else ())
        if tuple(values.shape) != want:
            raise ValueError(f"values have shape {values.shape}, the header says {want}")
        return Cube.from_header(header, values)
    except KeyError as exc:
        raise ValueError(f"{where}: not a molsift cube header: no field {exc}") from None
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None


NPY_MAGIC = b"\x93NUMPY"


def read_npy(path: str | os.PathLike, mmap: bool = True) -> Cube:
    """A cube from `path` (.npy) and `path.json`; the values memory-mapped unless `mmap=False`."""
    from .io import readable

    path = readable(path)  # before its header: a missing .npy was said to lack its .json
    side = f"{path}.json"
    if not os.path.exists(side):
        raise ValueError(f"{path}: no header beside it ({side}); write .npy files with molsift")
    try:  # numpy's and json's messages named no file
        with open(side, "rb") as f:
            header = json.load(f)
    except ValueError as exc:
        raise ValueError(f"{side}: not a molsift cube header (not JSON: {exc})") from None
    with open(path, "rb") as f:
        if f.read(len(NPY_MAGIC)) != NPY_MAGIC:
            raise ValueError(f"{path}: not a .npy file (it does not start with numpy's magic)")
    try:
        values = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(f"{path}: not a .npy file numpy can read ({exc})") from None
    return _from_json(header, values, side)


def _h5py():
    try:
        import h5py
    except ImportError:
        raise ValueError(
            "HDF5 files need h5py: pip install h5py (or molsift[hdf5]); .npy needs nothing"
        ) from None
    return h5py


def to_hdf5(cube: Cube, path: str | os.PathLike, dataset: str = "values") -> None:
    """Writes an HDF5 file (h5py) with the values as `dataset` and the header as its JSON
    attribute `cube_header`, under a temporary name then renamed."""
    h5py = _h5py()

    path = os.fspath(path)
    tmp = temporary_name(path)
    with h5py.File(tmp, "w") as f:
        d = f.create_dataset(dataset, data=cube.values)
        d.attrs["cube_header"] = json.dumps(header_json(cube))
        d.attrs["units"] = cube.units
    os.replace(tmp, path)


def read_hdf5(path: str | os.PathLike, dataset: str = "values") -> Cube:
    """A cube from an HDF5 file written by `to_hdf5`."""
    h5py = _h5py()

    from .io import readable

    path = readable(path)
    try:
        f = h5py.File(path, "r")
    except OSError as exc:  # h5py's message named no file
        raise ValueError(f"{path}: not an HDF5 file h5py can read ({exc})") from None
    with f:
        if dataset not in f:
            raise ValueError(f"{path}: no dataset {dataset!r}")
        d = f[dataset]
        if "cube_header" not in d.attrs:
            raise ValueError(f"{path}: dataset {dataset!r} has no cube_header attribute")
        header = json.loads(d.attrs["cube_header"])
        values = d[...]
    return _from_json(header, values, path)


def load(path: str | os.PathLike, dtype: Any = None, workers: int | None = None) -> Cube:
    """A cube from a .cube, .npy (with its .json) or HDF5 file, its values of type `dtype`
    (None: float64 from a .cube, a .npy's or HDF5 file's own type; another type than theirs
    converts them in memory: they were memory-mapped, and were once returned unconverted)."""
    from .io import readable

    kind = kind_of(readable(path))  # a directory was said to have an unknown suffix
    if kind == "cube":
        from .io import read_cube

        return read_cube(path, dtype=dtype or "float64", workers=workers)
    cube = read_npy(path) if kind == "npy" else read_hdf5(path)
    if dtype is not None and cube.values.dtype != np.dtype(dtype):
        cube.values = np.asarray(cube.values, dtype=dtype)
    return cube


def save(
    cube: Cube, path: str | os.PathLike, layout: str = "cp2k", workers: int | None = None
) -> None:
    """Writes a cube to a .cube, .npy (+ .json) or HDF5 file, by the suffix, after sweeping
    the temporaries that killed writes of the same file left behind."""
    kind = kind_of(path)
    sweep_leftovers(path)
    if kind == "cube":
        from .io import write_cube

        values = cube.values
        if not isinstance(values, np.ndarray) or not values.flags.c_contiguous:
            cube.values = np.ascontiguousarray(values)
        write_cube(path, cube, layout=layout, workers=workers)
    elif kind == "npy":
        to_npy(cube, path)
    else:
        to_hdf5(cube, path)
