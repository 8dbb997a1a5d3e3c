"""What the substructure index stores of each molecule, many at a time: its graph record (the
exact-match form), the facts its screening features count and its RDKit pattern fingerprint,
read in Rust from RDKit's binary form of the molecule (`Mol.ToBinary()`, one C++ call:
`crates/substructure/src/pickle.rs` and `pattern.rs`) instead of RDKit's Python calls atom by
atom (`program.graph_record`, about 10x slower), its bulk calls (`features._facts_fast`, about
3x) and its substructure matcher (`Chem.PatternFingerprint`, whose patterns `RDKIT_PATTERNS`
lists and whose embeddings are enumerated in Rust). A molecule whose binary form holds
something the reader does not know gets RDKit's values; and before a process uses the reader
at all, it checks that the reader gives the same record, feature bits and pattern bits as RDKit
for every probe molecule below (charges, radicals, isotopes, fused and bridged rings, stereo,
dative bonds, map numbers, salts): where they differ (another RDKit), the slow, exact path
stays, part by part."""

from __future__ import annotations

import logging

from .. import _core
from .features import molecule_features
from .program import graph_record
from .query import PATTERN_BITS

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

#: RDKit's pattern fingerprint's patterns, in its order (Code/GraphMol/Fingerprints/
#: PatternFingerprints.cpp): the embeddings of each are what its bits hash
RDKIT_PATTERNS = (
    "[*]~[*]",
    "[*]~[*]~[*]",
    "[R]~1~[R]~[R]~1",
    "[*]~[*](~[*])~[*]",
    "[R]~1[R]~[R]~[R]~1",
    "[*]~[*]~[*](~[*])~[*]",
    "[R]~1~[R]~[R]~[R]~[R]~1",
    "[R]~1~[R]~[R]~[R]~[R]~[R]~1",
    "[R](@[R])(@[R])~[R]~[R](@[R])(@[R])",
    "[R](@[R])(@[R])~[R]@[R]~[R](@[R])(@[R])",
    "[*]~[R](@[R])@[R](@[R])~[*]",
    "[*]~[R](@[R])@[R]@[R](@[R])~[*]",
    "[*]",
)

# RDKit's query descriptions of those patterns' atoms and bonds -> the kinds pattern.rs knows
_ATOM_KINDS = {"AtomNull": 0, "AtomInNRings -1 = val": 1}
_BOND_KINDS = {"BondNull": 0, "BondInRing 1 = val": 1, "SingleOrAromaticBond 1 = val": 2}


def pattern_graphs() -> list | None:
    """`RDKIT_PATTERNS` as RDKit parses them, for `_core.screen_from_pickles`: per pattern
    (atom kinds, (begin, end, bond kind) in RDKit's bond order); None when a query is not one
    of the kinds the Rust side knows."""
    from rdkit import Chem

    out = []
    try:
        for smarts in RDKIT_PATTERNS:
            m = Chem.MolFromSmarts(smarts)
            atoms = [_ATOM_KINDS[a.DescribeQuery().strip()] for a in m.GetAtoms()]
            bonds = [
                (b.GetBeginAtomIdx(), b.GetEndAtomIdx(), _BOND_KINDS[b.DescribeQuery().strip()])
                for b in m.GetBonds()
            ]
            out.append((atoms, bonds))
    except KeyError:
        return None
    return out


#: (the records and facts agree with RDKit's, the patterns (or None: not to be used))
_CHECKED: list[tuple[bool, list | None]] = []


def agreement() -> tuple[bool, list | None]:
    """Whether the Rust reader gives `graph_record`'s bytes and `molecule_features`' bits for
    every probe, and the pattern graphs when it gives RDKit's pattern fingerprint for every
    probe too (checked once per process; a disagreement is logged and that part of the reader
    is not used)."""
    if not _CHECKED:
        from rdkit import Chem, RDLogger

        from .build import _packer

        RDLogger.DisableLog("rdApp.*")
        mols = [Chem.MolFromSmiles(s) for s in PROBES]
        patterns = pattern_graphs()
        fast = _read(mols, patterns)
        pack = _packer()
        # the plain molecules (the first twelve) must be read, and every read one equal
        bad, bad_fp = [], []
        for k, (s, m, (r, f, fp)) in enumerate(zip(PROBES, mols, fast)):
            if (
                (k < 12 and (r is None or f is None))
                or (r is not None and r != graph_record(m))
                or (f is not None and molecule_features(m, f) != molecule_features(m))
            ):
                bad.append(s)
            rdkit_fp = pack(Chem.PatternFingerprint(m, fpSize=PATTERN_BITS))
            if (k < 12 and fp is None) or (fp is not None and fp != rdkit_fp):
                bad_fp.append(s)
        for what, which in (("graph records or screen facts", bad), ("pattern bits", bad_fp)):
            if which:
                log.warning(
                    "the %s read from RDKit's binary form differ from RDKit's own for %s;"
                    " using RDKit's calls for them (slower)", what, ", ".join(map(repr, which))
                )  # fmt: skip
        _CHECKED.append((not bad, None if bad_fp or patterns is None else patterns))
    return _CHECKED[0]


def _read(mols: list, patterns: list | None) -> list:
    """`_core.screen_from_pickles` of the molecules (None: not parsed)."""
    pickles = [None if m is None else m.ToBinary() for m in mols]
    return _core.screen_from_pickles(pickles, patterns, PATTERN_BITS)


def screen_inputs(mols: list) -> tuple[list[bytes], list, list]:
    """Each molecule's graph record, its screen facts for `features.molecule_features` and its
    packed pattern fingerprint (None where the caller computes them from the molecule: not
    read, not parsed, or that part of the reader not in use)."""
    agree, patterns = agreement()
    n = len(mols)
    if not agree and patterns is None:
        return [graph_record(m) for m in mols], [None] * n, [None] * n
    fast = _read(mols, patterns)
    if not agree:
        return [graph_record(m) for m in mols], [None] * n, [fp for *_, fp in fast]
    out = [graph_record(m) if r is None else r for m, (r, _f, _p) in zip(mols, fast)]
    return out, [f for _r, f, _p in fast], [fp for *_, fp in fast]
