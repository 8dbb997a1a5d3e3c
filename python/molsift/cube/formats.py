"""Cube grids in other containers, and back: `.npy` (memory-mappable; the header goes in a
`.json` file beside it, `grid.npy` -> `grid.npy.json`) and HDF5 (h5py: dataset `values`, the
header in its attributes). `load` reads any of the three by its suffix."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

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
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as f:
        np.lib.format.write_array(f, np.ascontiguousarray(cube.values), allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())
    write_side_header(cube, path)
    os.replace(tmp, path)


def write_side_header(cube: Cube, npy_path: str) -> None:
    """The `.json` header beside a `.npy` file."""
    tmp = f"{npy_path}.json.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(header_json(cube), f, indent=1)
        f.write("\n")
    os.replace(tmp, f"{npy_path}.json")


def _from_json(header: dict[str, Any], values: np.ndarray, where: str) -> Cube:
    if header.get("format") != "molsift-cube-header":
        raise ValueError(f"{where} is not a molsift cube header")
    n = [abs(int(x)) for x in header["shape_fields"]]
    nval = int(header["nval"])
    want = tuple(n) + ((nval,) if nval > 1 else ())
    if tuple(values.shape) != want:
        raise ValueError(f"{where}: values have shape {values.shape}, the header says {want}")
    return Cube.from_header(header, values)


def read_npy(path: str | os.PathLike, mmap: bool = True) -> Cube:
    """A cube from `path` (.npy) and `path.json`; the values memory-mapped unless `mmap=False`."""
    path = os.fspath(path)
    side = f"{path}.json"
    if not os.path.exists(side):
        raise ValueError(f"{path}: no header beside it ({side}); write .npy files with molsift")
    with open(side) as f:
        header = json.load(f)
    values = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
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
    tmp = f"{path}.tmp-{os.getpid()}"
    with h5py.File(tmp, "w") as f:
        d = f.create_dataset(dataset, data=cube.values)
        d.attrs["cube_header"] = json.dumps(header_json(cube))
        d.attrs["units"] = cube.units
    os.replace(tmp, path)


def read_hdf5(path: str | os.PathLike, dataset: str = "values") -> Cube:
    """A cube from an HDF5 file written by `to_hdf5`."""
    h5py = _h5py()

    path = os.fspath(path)
    with h5py.File(path, "r") as f:
        if dataset not in f:
            raise ValueError(f"{path}: no dataset {dataset!r}")
        d = f[dataset]
        if "cube_header" not in d.attrs:
            raise ValueError(f"{path}: dataset {dataset!r} has no cube_header attribute")
        header = json.loads(d.attrs["cube_header"])
        values = d[...]
    return _from_json(header, values, path)


def load(path: str | os.PathLike, dtype: Any = "float64", workers: int | None = None) -> Cube:
    """A cube from a .cube, .npy (with its .json) or HDF5 file."""
    kind = kind_of(path)
    if kind == "cube":
        from .io import read_cube

        return read_cube(path, dtype=dtype, workers=workers)
    if kind == "npy":
        return read_npy(path)
    return read_hdf5(path)


def save(
    cube: Cube, path: str | os.PathLike, layout: str = "cp2k", workers: int | None = None
) -> None:
    """Writes a cube to a .cube, .npy (+ .json) or HDF5 file, by the suffix."""
    kind = kind_of(path)
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
