"""Gaussian cube files (volumetric grids of CP2K, Gaussian, PySCF, ORCA): read and written in
parallel by the Rust core (`crates/cube`), exactly.

    >>> import molsift
    >>> cube = molsift.read_cube("density.cube")             # doctest: +SKIP
    >>> cube.values.shape, cube.units, cube.voxel_volume        # doctest: +SKIP
    >>> molsift.write_cube("copy.cube", cube, layout="cp2k")    # doctest: +SKIP

- `model.py`: the `Cube` (values, origin, axes, atoms, units, comments, orbitals).
- `io.py`: `read_cube` / `write_cube` on this machine (threads in Rust).
- `mpi.py`: `read_cube(path, comm=comm)` with MPI-IO collective reads (each rank a block of
  x-planes) and the collective `.npy` write of `molsift cube convert` under `mpirun`.
- `formats.py`: `.npy` (with a `.json` header beside it) and HDF5 (h5py), to and from.
- `analysis.py`: statistics, differences and slice pictures (`molsift cube stats|diff|slice`).
"""

from .io import read_cube, write_cube
from .model import Cube

__all__ = ["Cube", "read_cube", "write_cube"]
