"""The molecules' graph records (the exact-match form of the substructure index), many at a
time: each molecule's record is read in Rust from RDKit's binary form of the molecule
(`Mol.ToBinary()`, one C++ call: `crates/substructure/src/pickle.rs`) instead of RDKit's Python
calls atom by atom (`program.graph_record`, about 15x slower). A molecule whose binary form
holds something the reader does not know gets `graph_record`'s record; and before a process
uses the reader at all, it checks that the reader and `graph_record` give the same bytes for
every probe molecule below (charges, radicals, isotopes, fused and bridged rings, stereo,
dative bonds, map numbers, salts): an RDKit whose form differs keeps the slow, exact path."""

from __future__ import annotations

import logging

from .. import _core
from .program import graph_record

log = logging.getLogger(__name__)

#: molecules the reader is checked on (against `graph_record`) once per process
PROBES = (
    "c1ccccc1C(=O)[O-]",
    "CC(=O)Nc1ccc(O)cc1",
    "C[C@H](N)C(=O)O",
    "F/C=C/Cl",
    "[Na+].[Cl-]",
    "O=[N+]([O-])c1ccc2[nH]ccc2c1",
    "c1ccc2cc3ccccc3cc2c1",
    "C1CC2CCC1C2",
    "C12C3C4C1C5C2C3C45",
    "C1CCCCCCCCCCCC1",
    "CS(=O)(=O)N1CCOCC1",
    "C#N",
    "[CH2]C",
    "[O]O",
    "[13CH4]",
    "[2H]OC",
    "[H][H]",
    "*C(=O)O",
    "[CH3:1]C",
    "N->[Pt](Cl)Cl",
    "[Se]1C=CC=C1",
    "Cn1cnc2c1c(=O)n(C)c(=O)n2C",
    "",
)

_CHECKED: list[bool] = []


def reader_agrees() -> bool:
    """Whether the Rust reader gives `graph_record`'s bytes for every probe (checked once per
    process; a disagreement is logged and the reader is not used)."""
    if not _CHECKED:
        from rdkit import Chem, RDLogger

        RDLogger.DisableLog("rdApp.*")
        mols = [Chem.MolFromSmiles(s) for s in PROBES]
        fast = _core.graph_records_from_pickles([m.ToBinary() for m in mols])
        # the plain molecules (the first twelve) must be read, and every read one equal
        bad = [
            s
            for k, (s, m, r) in enumerate(zip(PROBES, mols, fast))
            if (r is None and k < 12) or (r is not None and r != graph_record(m))
        ]
        if bad:
            log.warning(
                "the graph records read from RDKit's binary form differ from RDKit's own for"
                " %s; using RDKit's Python calls (slower)",
                ", ".join(map(repr, bad)),
            )
        _CHECKED.append(not bad)
    return _CHECKED[0]


def graph_records(mols: list) -> list[bytes]:
    """The graph record of each molecule (None: not parsed, an empty record)."""
    if not reader_agrees():
        return [graph_record(m) for m in mols]
    fast = _core.graph_records_from_pickles([None if m is None else m.ToBinary() for m in mols])
    return [graph_record(m) if r is None else r for m, r in zip(mols, fast)]
