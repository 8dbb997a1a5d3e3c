"""Regenerates the cube files of this folder (committed; the tests never run PySCF or ASE):

    .venv/bin/python tests/data/cube/make.py

- `water_density_20.cube`, `formaldehyde_mep_16.cube`, `water_orbital_16.cube`: written by
  PySCF's own writer (`pyscf.tools.cubegen`, RHF/6-31G*), `%13.5E` values, every row a new
  line.
- `water_density_20.cp2k.cube`: the same grid written by molsift in CP2K's layout (`6E13.5`:
  `0.12345E-01`), row length 20 (three full lines and one of two values per row).
- `water_mos_12.cube`: two orbitals (HOMO and LUMO) per point, a negative atom count and the
  orbital line, as Gaussian writes orbital cubes (written by molsift, `gaussian` layout).
- `../../../data/water_density_16.cube` (the repo's bundled data, used by `molsift cube --help`'s
  examples): PySCF's density of water at 16^3.
- `water_density_12.ase.cube`: written by ASE (`ase.io.write`), free-form values: no fixed
  layout, read by the counting path.
"""

from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "benches"))


def main() -> None:
    from cube_data import scf, write_pyscf_cube
    from pyscf.tools import cubegen

    import molsift.cube as mc

    cache: dict = {}
    write_pyscf_cube(os.path.join(HERE, "water_density_20.cube"), "water", "density", 20, cache)
    write_pyscf_cube(
        os.path.join(HERE, "formaldehyde_mep_16.cube"), "formaldehyde", "mep", 16, cache
    )
    write_pyscf_cube(os.path.join(HERE, "water_orbital_16.cube"), "water", "orbital", 16, cache)
    bundled = os.path.join(HERE, "..", "..", "..", "data", "water_density_16.cube")
    write_pyscf_cube(bundled, "water", "density", 16, cache)  # data/: the help examples' file
    density = mc.read_cube(os.path.join(HERE, "water_density_20.cube"))
    density.comments = ("-Quickstep-", " ELECTRON DENSITY (molsift, CP2K layout)")
    mc.write_cube(os.path.join(HERE, "water_density_20.cp2k.cube"), density, layout="cp2k")

    mol, mf = scf("water")
    homo = mol.nelectron // 2 - 1
    grid = cubegen.Cube(mol, 12, 12, 12)
    coords = grid.get_coords()
    ao = mol.eval_gto("GTOval", coords)
    mos = (ao @ mf.mo_coeff[:, [homo, homo + 1]]).reshape(12, 12, 12, 2)
    base = mc.read_cube(os.path.join(HERE, "water_orbital_16.cube"))
    axes = grid.box / np.array([[11], [11], [11]])
    cube = mc.Cube(
        values=mos,
        origin=grid.boxorig,
        axes=axes,
        atoms=base.atoms,
        comments=("water HOMO and LUMO (RHF/6-31G*, PySCF)", "MO coefficients"),
        orbitals=(int(homo + 1), int(homo + 2)),
    )
    mc.write_cube(os.path.join(HERE, "water_mos_12.cube"), cube, layout="gaussian")

    from ase.io.cube import write_cube as ase_write_cube
    from pyscf.tools.cubegen import Cube as PCube

    small = PCube(mol, 12, 12, 12)
    from pyscf.dft import numint

    dens = numint.eval_rho(mol, mol.eval_gto("GTOval", small.get_coords()), mf.make_rdm1())
    from ase import Atoms

    bohr = 0.529177210903
    atoms = Atoms(
        numbers=mol.atom_charges(), positions=mol.atom_coords() * bohr, cell=small.box * bohr
    )
    with open(os.path.join(HERE, "water_density_12.ase.cube"), "w") as f:
        ase_write_cube(f, atoms, dens.reshape(12, 12, 12), origin=small.boxorig * bohr)
    for name in sorted(os.listdir(HERE)):
        if name.endswith(".cube"):
            print(name, os.path.getsize(os.path.join(HERE, name)))


if __name__ == "__main__":
    main()
