"""A query's fingerprint read the fast way (`chem.to_mol_unstereo`: RDKit's parse less its stereo
perception; `Fingerprinter.on_bits` from RDKit's binary form in Rust) is RDKit's own: the Morgan
bits of `Chem.MolFromSmiles` and `GetOnBits`, on SMILES as users write them (not canonical),
enumerated stereoisomers, isotopes, explicit H atoms, and SMILES that do not parse."""

from __future__ import annotations

import gzip
import itertools

import pytest
from conftest import ROOT, SHARED_DATA

from molsift.chem import Fingerprinter, to_mol, to_mol_unstereo

Chem = pytest.importorskip("rdkit.Chem")

ODD = [
    "[2H]C([2H])([2H])O",
    "[H][H]",
    "[H+]",
    "[H-].[Na+]",
    "[CH3:1]C(=O)O",
    "[C@@H](F)(Cl)Br",
    "[H]/N=C/C",
    "[H]C(=O)O",
    "[H][C@](F)(Cl)Br",
    "F/C=C/F",
    "F/C=C\\F",
    "C[C@H](C)C",  # a chiral tag on an atom that is not a centre: perception clears it
    "[13CH3][C@@H](N)C(=O)O",
    "c1ccccc1",
    "C1=CC=CC=C1",
    "[nH]1cccc1",
    "[Na+].[Cl-]",
    "",
]
BAD = ["CC(C)(C)(C)(C)C", "c1ccccc1c", "C1CC", "N(=O)=O=O", "C((", "Xx"]


def _reference(smiles: str, gen):
    mol = Chem.MolFromSmiles(smiles)
    return None if mol is None else list(gen.GetFingerprint(mol).GetOnBits())


def _queries(bundled_smi) -> list[str]:
    from rdkit.Chem.EnumerateStereoisomers import (
        EnumerateStereoisomers,
        StereoEnumerationOptions,
    )

    opts = StereoEnumerationOptions(maxIsomers=4, onlyUnassigned=True, unique=True)
    written = [ln.split()[0] for ln in bundled_smi.read_text().splitlines()[:1500] if ln.strip()]
    smiles = list(written)
    for s in written:
        m = Chem.MolFromSmiles(s)
        if m is not None:  # stereoisomers, written both canonically and in a random atom order
            for iso in EnumerateStereoisomers(m, options=opts):
                smiles += [Chem.MolToSmiles(iso), Chem.MolToSmiles(iso, doRandom=True)]
    scaffolds = ROOT / "benches" / "data" / "moses_test_scaffolds.100.smi"
    smiles += [ln.split()[0] for ln in scaffolds.read_text().splitlines() if ln.strip()]
    smiles += [s.replace("C", "[13C]", 1) for s in written[:200]]
    return smiles + ODD


def test_fast_query_bits_equal_rdkits(bundled_smi):
    fp = Fingerprinter()
    assert fp.reads_rdkit_binary  # else on_bits is GetOnBits itself and this checks nothing new
    gen = fp._gen
    smiles = _queries(bundled_smi)
    chiral = sum("@" in s for s in smiles)
    double = sum("/" in s or "\\" in s for s in smiles)
    assert chiral > 1000 and double > 300, (chiral, double)
    for s in smiles:
        mol, reason = to_mol_unstereo(s)
        ref = _reference(s, gen)
        assert (mol is None) == (ref is None), (s, reason)
        if mol is not None:
            assert fp.on_bits(mol) == ref, s


def test_moses_as_written():
    fp = Fingerprinter()
    with gzip.open(SHARED_DATA / "moses_train.csv.gz", "rt") as fh:
        next(fh)
        smiles = [line.split(",")[0] for line in itertools.islice(fh, 20_000)]
    for s in smiles:
        assert fp.on_bits(to_mol_unstereo(s)[0]) == _reference(s, fp._gen), s


def test_a_smiles_rdkit_refuses_gets_the_same_reason():
    for s in BAD:
        mol, reason = to_mol_unstereo(s)
        assert mol is None
        assert reason == to_mol(s)[1], s
        assert reason.startswith("RDKit ")


def test_on_bits_of_an_empty_and_a_full_vector():
    from rdkit import DataStructs

    from molsift._core import on_bits_from_rdkit

    empty = DataStructs.ExplicitBitVect(2048)
    assert on_bits_from_rdkit(empty.ToBinary(), 2048) == []
    full = DataStructs.ExplicitBitVect(2048)
    full.SetBitsFromList(list(range(2048)))
    assert on_bits_from_rdkit(full.ToBinary(), 2048) == list(range(2048))
    with pytest.raises(ValueError):
        on_bits_from_rdkit(b"\x00\x01", 2048)
