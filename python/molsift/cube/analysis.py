"""What users compute from a grid: statistics (min, max, mean, integral = sum x voxel volume,
electrons for a density), differences of two grids on the same geometry, and a picture of
one plane with the atoms marked (matplotlib)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .model import Cube

PLANES = {"xy": 2, "xz": 1, "yz": 0}  # plane -> the axis its index runs along


def stats(cube: Cube) -> list[dict[str, Any]]:
    """One dict per value per point (one for most files): min, max, mean, sum, integral
    (sum x voxel volume in the file's units cubed) and electrons (sum x voxel volume in
    bohr^3: the number of electrons when the values are a density in e/bohr^3, as CP2K,
    Gaussian and PySCF write densities), with the voxel volume and point count."""
    v = cube.values if cube.values.ndim == 4 else cube.values[..., None]
    out = []
    for k in range(v.shape[3]):
        a = v[..., k]
        total = float(np.sum(a, dtype=np.float64))
        out.append(
            {
                "value": k + 1,
                "orbital": cube.orbitals[k] if cube.orbitals else None,
                "points": int(a.size),
                "min": float(a.min()),
                "max": float(a.max()),
                "mean": total / a.size,
                "sum": total,
                "voxel_volume": cube.voxel_volume,
                "units": cube.units,
                "integral": total * cube.voxel_volume,
                "electrons": total * cube.voxel_volume_bohr3,
            }
        )
    return out


def same_grid(a: Cube, b: Cube, rtol: float = 1e-6) -> str | None:
    """None when `a` and `b` share shape, units, origin and axes; else every one that differs,
    with both values, in one line ("shape 20x20x20 and 16x16x16; origin ...")."""
    differ = []
    if a.values.shape != b.values.shape:
        differ.append(f"shape {_shape(a)} and {_shape(b)}")
    if a.units != b.units:
        differ.append(f"units {a.units} and {b.units}")
    scale = max(1.0, float(np.abs(a.axes).max()), float(np.abs(b.axes).max()))
    if not np.allclose(a.origin, b.origin, rtol=0, atol=rtol * scale):
        differ.append("origin " + _both(a.origin, b.origin))
    for i, name in enumerate("xyz"):
        if not np.allclose(a.axes[i], b.axes[i], rtol=0, atol=rtol * scale):
            differ.append(f"{name} axis step " + _both(a.axes[i], b.axes[i]))
    return "; ".join(differ) or None


def _shape(cube: Cube) -> str:
    text = "x".join(str(n) for n in cube.values.shape[:3])
    return text + (f" x {cube.values.shape[3]} values" if cube.values.ndim == 4 else "")


def _both(u: np.ndarray, v: np.ndarray) -> str:
    """The two triples as "(x y z) and (x y z)", in six significant digits or as many more
    as show them apart."""
    for digits in range(6, 18):
        one, other = (" ".join(f"{float(x):.{digits}g}" for x in w) for w in (u, v))
        if one != other:
            break
    return f"({one}) and ({other})"


def diff(a: Cube, b: Cube, names: tuple[str, str] | None = None) -> Cube:
    """`a - b` on the same grid, with `a`'s geometry and atoms (density differences). Cubes
    on different grids are a ValueError saying what differs, naming their files when `names`
    (a's, b's) are given."""
    why = same_grid(a, b)
    if why is not None:
        who = f"{names[0]} and {names[1]} are" if names else "the two cubes are"
        raise ValueError(f"{who} not on the same grid: {why}")
    return Cube(
        values=np.subtract(a.values, b.values, dtype=np.float64),
        origin=a.origin,
        axes=a.axes,
        atoms=a.atoms,
        units=a.units,
        comments=(
            a.comments[0],
            f"difference: {a.comments[1].strip()} minus {b.comments[1].strip()}"[:200],
        ),
        orbitals=a.orbitals,
        nval_field=a.nval_field,
    )


def plane(cube: Cube, which: str, index: int, value: int = 0) -> np.ndarray:
    """The 2-D slice `which` ("xy", "xz", "yz") at grid `index` along the remaining axis."""
    if which not in PLANES:
        raise ValueError(f"plane must be one of {', '.join(PLANES)}, not {which!r}")
    axis = PLANES[which]
    n = cube.values.shape[axis]
    if not 0 <= index < n:
        raise ValueError(f"index {index} is outside 0..{n - 1} along the {'xyz'[axis]} axis")
    v = cube.values if cube.values.ndim == 3 else cube.values[..., value]
    return np.take(v, index, axis=axis)


def picture_format(path: str) -> str:
    """The picture format `path` names by its suffix ("png" when it has none); a ValueError
    naming the file when matplotlib writes no such format (was matplotlib's message alone,
    after the cube was read)."""
    from matplotlib.backend_bases import FigureCanvasBase

    fmt = os.path.splitext(path)[1][1:].lower() or "png"
    known = FigureCanvasBase.get_supported_filetypes()
    if fmt not in known:
        raise ValueError(
            f"{path}: cannot draw a .{fmt} picture; give .png (or one of {', '.join(known)})"
        )
    return fmt


def slice_png(
    cube: Cube,
    out: str,
    which: str = "xy",
    index: int | None = None,
    value: int = 0,
    log: bool = False,
    title: str | None = None,
) -> dict[str, Any]:
    """Draws one plane (default: the middle one) as a PNG (or the format `out`'s suffix names)
    with the atoms near it marked, written under a temporary name then renamed. Returns what
    was drawn (plane, index, coordinate of the plane, min and max)."""
    fmt = picture_format(out)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    axis = PLANES.get(which)
    if axis is None:
        raise ValueError(f"plane must be one of {', '.join(PLANES)}, not {which!r}")
    if index is None:
        index = cube.values.shape[axis] // 2
    data = plane(cube, which, index, value)
    u, w = [i for i in range(3) if i != axis]
    # in-plane coordinates of the grid (axes assumed orthogonal for the picture's extent)
    step_u = float(np.linalg.norm(cube.axes[u]))
    step_w = float(np.linalg.norm(cube.axes[w]))
    extent = [
        cube.origin[u],
        cube.origin[u] + step_u * (data.shape[0] - 1),
        cube.origin[w],
        cube.origin[w] + step_w * (data.shape[1] - 1),
    ]
    shown = data.T
    label = "value"
    if log:
        shown = np.log10(np.maximum(np.abs(shown), 1e-12))
        label = "log10 |value|"
    fig, ax = plt.subplots(figsize=(6, 5), dpi=120)
    im = ax.imshow(
        shown, origin="lower", extent=extent, cmap="viridis" if log else "RdBu_r", aspect="equal"
    )
    if not log:
        lim = float(np.abs(data).max()) or 1.0
        im.set_clim(-lim, lim) if data.min() < 0 else im.set_clim(0, lim)
    fig.colorbar(im, ax=ax, label=label)
    at = cube.origin[axis] + float(np.linalg.norm(cube.axes[axis])) * index
    tol = float(np.linalg.norm(cube.axes[axis])) * 2
    for a in cube.atoms:
        p = a["position"]
        near = abs(p[axis] - at) <= max(tol, 1.0)
        ax.plot(p[u], p[w], "o", ms=9 if near else 5, mfc="white" if near else "none", mec="black")
        ax.annotate(
            _symbol(int(a["number"])),
            (p[u], p[w]),
            xytext=(4, 4),
            textcoords="offset points",
            fontsize=8,
        )
    names = "xyz"
    ax.set_xlabel(f"{names[u]} ({cube.units})")
    ax.set_ylabel(f"{names[w]} ({cube.units})")
    ax.set_title(title or f"{which} plane {index} ({names[axis]} = {at:.3f} {cube.units})")
    fig.tight_layout()
    from .formats import temporary_name

    tmp = temporary_name(os.fspath(out))  # a kill or a full disk never leaves half a picture
    try:
        fig.savefig(tmp, format=fmt)
        os.replace(tmp, out)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.remove(tmp)
    return {
        "plane": which,
        "index": index,
        "coordinate": at,
        "min": float(data.min()),
        "max": float(data.max()),
    }


_SYMBOLS = [
    "X",
    "H",
    "He",
    "Li",
    "Be",
    "B",
    "C",
    "N",
    "O",
    "F",
    "Ne",
    "Na",
    "Mg",
    "Al",
    "Si",
    "P",
    "S",
    "Cl",
    "Ar",
    "K",
    "Ca",
    "Sc",
    "Ti",
    "V",
    "Cr",
    "Mn",
    "Fe",
    "Co",
    "Ni",
    "Cu",
    "Zn",
    "Ga",
    "Ge",
    "As",
    "Se",
    "Br",
    "Kr",
]


def _symbol(z: int) -> str:
    return _SYMBOLS[z] if 0 <= z < len(_SYMBOLS) else str(z)
