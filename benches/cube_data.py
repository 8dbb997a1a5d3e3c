"""Real cube files from a real quantum-chemistry program: PySCF (`pyscf.tools.cubegen`)
densities, electrostatic potentials and orbitals of small molecules (RHF/6-31G*), at any grid
size. `benches/cube.py` and `tests/data/cube/make.py` use it; PySCF is a peer for those, not
a dependency of molsift (`pip install pyscf`).

    .venv/bin/python benches/cube_data.py OUTDIR --points 80 --kinds density orbital mep
"""

from __future__ import annotations

import argparse
import os
import time

MOLECULES = {
    "water": "O 0 0 0.1173; H 0 0.7572 -0.4692; H 0 -0.7572 -0.4692",
    "formaldehyde": "C 0 0 -0.5288; O 0 0 0.6740; H 0 0.9343 -1.1057; H 0 -0.9343 -1.1057",
}
KINDS = ("density", "mep", "orbital")


def scf(name: str):
    from pyscf import gto, scf

    mol = gto.M(atom=MOLECULES[name], basis="6-31g*", verbose=0)
    mf = scf.RHF(mol).run()
    return mol, mf


def write_pyscf_cube(path: str, name: str, kind: str, points: int, mf_cache: dict) -> float:
    """Writes one cube with PySCF's own writer; returns the seconds PySCF took."""
    from pyscf.tools import cubegen

    if name not in mf_cache:
        mf_cache[name] = scf(name)
    mol, mf = mf_cache[name]
    t = time.perf_counter()
    n = dict(nx=points, ny=points, nz=points)
    if kind == "density":
        cubegen.density(mol, path, mf.make_rdm1(), **n)
    elif kind == "mep":
        cubegen.mep(mol, path, mf.make_rdm1(), **n)
    elif kind == "orbital":
        homo = int(mol.nelectron // 2 - 1)
        cubegen.orbital(mol, path, mf.mo_coeff[:, homo], **n)
    else:
        raise ValueError(f"kind must be one of {KINDS}")
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("outdir")
    ap.add_argument("--points", type=int, nargs="+", default=[80])
    ap.add_argument("--molecules", nargs="+", default=["water"], choices=sorted(MOLECULES))
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    cache: dict = {}
    for points in args.points:
        for name in args.molecules:
            for kind in args.kinds:
                path = os.path.join(args.outdir, f"{name}_{kind}_{points}.cube")
                s = write_pyscf_cube(path, name, kind, points, cache)
                print(f"{path}\t{os.path.getsize(path):,} bytes\t{s:.1f} s")


if __name__ == "__main__":
    main()
