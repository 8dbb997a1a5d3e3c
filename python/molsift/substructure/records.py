"""The molecules' graph records (the exact-match form of the substructure index) and the facts
their screening features count, many at a time: each molecule's are read in Rust from RDKit's
binary form of the molecule (`Mol.ToBinary()`, one C++ call: `crates/substructure/src/pickle.rs`)
instead of RDKit's Python calls atom by atom (`program.graph_record`, about 10x slower) and its
bulk calls (`features._facts_fast`, about 3x). A molecule whose binary form holds something the
reader does not know gets those calls' values; and before a process uses the reader at all, it
checks that the reader gives the same record and the same feature bits as those calls for
every probe molecule below (charges, radicals, isotopes, fused and bridged rings, stereo,
dative bonds, map numbers, salts): an RDKit whose form differs keeps the slow, exact path."""

from __future__ import annotations

import logging

from .. import _core
from .features import molecule_features
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
    """Whether the Rust reader gives `graph_record`'s bytes and `molecule_features`' bits for
    every probe (checked once per process; a disagreement is logged and the reader is not
    used)."""
    if not _CHECKED:
        from rdkit import Chem, RDLogger

        RDLogger.DisableLog("rdApp.*")
        mols = [Chem.MolFromSmiles(s) for s in PROBES]
        fast = _core.screen_from_pickles([m.ToBinary() for m in mols])
        # the plain molecules (the first twelve) must be read, and every read one equal
        bad = [
            s
            for k, (s, m, (r, f)) in enumerate(zip(PROBES, mols, fast))
            if (k < 12 and (r is None or f is None))
            or (r is not None and r != graph_record(m))
            or (f is not None and molecule_features(m, f) != molecule_features(m))
        ]
        if bad:
            log.warning(
                "the graph records or screen facts read from RDKit's binary form differ from"
                " RDKit's own for %s; using RDKit's Python calls (slower)",
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


def screen_inputs(mols: list) -> tuple[list[bytes], list]:
    """Each molecule's graph record, and its screen facts for `features.molecule_features`
    (None where the caller's molecule gives them: not read, or not parsed)."""
    if not reader_agrees():
        return [graph_record(m) for m in mols], [None] * len(mols)
    fast = _core.screen_from_pickles([None if m is None else m.ToBinary() for m in mols])
    out = [graph_record(m) if r is None else r for m, (r, _f) in zip(mols, fast)]
    return out, [f for _r, f in fast]
