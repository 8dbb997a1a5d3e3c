"""The `Cube`: a grid of values with its geometry (origin, axes, units), its atoms, its two
comment lines and, for orbital cubes, the orbital indices; and its conversion to and from
the header dict of the Rust glue (`_core.cube_header`, `_core.cube_write`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

BOHR_IN_ANGSTROM = 0.529177210903  # CODATA 2018

ATOM_DTYPE = np.dtype([("number", "<i8"), ("charge", "<f8"), ("position", "<f8", (3,))])


@dataclass
class Cube:
    """A cube file's contents.

    `values` has shape `(n1, n2, n3)`, or `(n1, n2, n3, nval)` for files with several values
    per point (orbital cubes), C order: the file's order (z fastest). `axes[i]` is the step
    vector along axis i; `origin` and `atoms["position"]` are in `units` ("bohr" or
    "angstrom": the sign of the first point count in the file). `orbitals` lists the orbital
    indices of a file with a negative atom count. Read from a block of an MPI job,
    `x_range` is the block's x-planes `(start, stop)` and `shape` is the whole grid's."""

    values: np.ndarray
    origin: np.ndarray
    axes: np.ndarray
    atoms: np.ndarray = field(default_factory=lambda: np.zeros(0, ATOM_DTYPE))
    units: str = "bohr"
    comments: tuple[str, str] = ("", "")
    orbitals: tuple[int, ...] = ()
    nval_field: int | None = None
    x_range: tuple[int, int] | None = None
    full_shape: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        self.origin = np.asarray(self.origin, dtype=np.float64).reshape(3)
        self.axes = np.asarray(self.axes, dtype=np.float64).reshape(3, 3)
        if self.units not in ("bohr", "angstrom"):
            raise ValueError(f"units must be 'bohr' or 'angstrom', not {self.units!r}")
        if self.values.ndim not in (3, 4):
            raise ValueError(f"values must have 3 or 4 dimensions, not {self.values.ndim}")
        self.comments = tuple(self.comments)  # type: ignore[assignment]
        if len(self.comments) != 2 or any("\n" in c or "\r" in c for c in self.comments):
            raise ValueError("a cube has exactly two comment lines, without line breaks")

    @property
    def shape(self) -> tuple[int, int, int]:
        """Grid points along the three axes (the whole grid's, for an MPI block)."""
        full = self.full_shape or self.values.shape
        return (int(full[0]), int(full[1]), int(full[2]))

    @property
    def nval(self) -> int:
        """Values per grid point."""
        full = self.full_shape or self.values.shape
        return 1 if len(full) == 3 else int(full[3])

    @property
    def voxel_volume(self) -> float:
        """Volume of one voxel, |det(axes)|, in `units` cubed."""
        return float(abs(np.linalg.det(self.axes)))

    @property
    def voxel_volume_bohr3(self) -> float:
        """Volume of one voxel in bohr^3 (values of densities are in e/bohr^3 in every
        writer's convention, whatever the length unit of the geometry)."""
        scale = 1.0 if self.units == "bohr" else 1.0 / BOHR_IN_ANGSTROM
        return self.voxel_volume * scale**3

    def header(self) -> dict[str, Any]:
        """The header dict the Rust writer takes."""
        nval = self.nval
        sign = -1 if self.units == "angstrom" else 1
        if self.orbitals and len(self.orbitals) != nval:
            raise ValueError(f"{len(self.orbitals)} orbital indices for {nval} values per point")
        natoms = len(self.atoms)
        n1, n2, n3 = self.shape
        nval_field = self.nval_field
        if nval > 1 and not self.orbitals and nval_field is None:
            nval_field = nval
        return {
            "comments": list(self.comments),
            "natoms_field": -natoms if self.orbitals else natoms,
            "origin": [float(x) for x in self.origin],
            "nval_field": nval_field,
            "shape_fields": [sign * n1, n2, n3],
            "axes": [[float(x) for x in row] for row in self.axes],
            "units": self.units,
            "atoms": [
                (int(a["number"]), float(a["charge"]), *(float(x) for x in a["position"]))
                for a in self.atoms
            ],
            "orbitals": [int(o) for o in self.orbitals],
            "nval": nval,
        }

    @classmethod
    def from_header(cls, header: dict[str, Any], values: np.ndarray, **extra: Any) -> Cube:
        """A cube from a header dict (`_core.cube_header`) and its values."""
        atoms = np.zeros(len(header["atoms"]), ATOM_DTYPE)
        for i, (number, charge, x, y, z) in enumerate(header["atoms"]):
            atoms[i] = (number, charge, (x, y, z))
        # the orbital line is only written for a negative atom count
        orbitals = tuple(header["orbitals"]) if header["natoms_field"] < 0 else ()
        fields = {
            "values": values,
            "origin": np.array(header["origin"]),
            "axes": np.array(header["axes"]),
            "atoms": atoms,
            "units": header["units"],
            "comments": tuple(header["comments"]),
            "orbitals": orbitals,
            "nval_field": header["nval_field"],
        }
        fields.update(extra)
        return cls(**fields)
