"""RDKit adapters: packed fingerprints read from RDKit's binary form equal RDKit's own numpy
export bit for bit, at every size; a binary form molsift cannot read is an error, and a
Fingerprinter that cannot read it falls back to the export."""

from __future__ import annotations

import numpy as np
import pytest
from rdkit import Chem, DataStructs
from rdkit.Chem import rdFingerprintGenerator

from molsift import _core, chem
from molsift.spec import FingerprintSpec


def numpy_packed(gen, mol) -> bytes:
    return np.packbits(gen.GetFingerprintAsNumPy(mol), bitorder="little").tobytes()


@pytest.fixture(scope="module")
def mols(bundled_smi):
    out = []
    for line in bundled_smi.read_text().splitlines()[:1500]:
        mol = Chem.MolFromSmiles(line.split()[0]) if line.strip() else None
        if mol is not None:
            out.append(mol)
    out += [
        Chem.AddHs(Chem.MolFromSmiles("CCO")),
        Chem.MolFromSmiles(""),
        Chem.MolFromSmiles("[Na+].[Cl-]"),
    ]
    return out


# 65,536 bits: zero runs over 16,511 bits, RDKit's 3-byte packed integers
@pytest.mark.parametrize("radius,bits", [(2, 2048), (3, 1024), (2, 64), (2, 16384), (1, 65536)])
def test_packed_equals_rdkit_numpy_export(mols, radius, bits):
    fp = chem.Fingerprinter(FingerprintSpec(radius=radius, bits=bits))
    assert fp.reads_rdkit_binary
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=bits)
    nonempty = 0
    for mol in mols:
        got = fp.packed(mol)
        assert got == numpy_packed(gen, mol)
        assert len(got) == bits // 8
        nonempty += any(got)
    assert nonempty >= len(mols) - 1  # the empty molecule has no bits


def test_long_zero_runs_use_every_packed_integer_form():
    """Bits at chosen places (hand-set vectors) in RDKit's binary form read back exactly."""
    bits = 1 << 24
    # zero runs at each edge of the 1-, 2-, 3- and 4-byte forms
    gaps = [0, 0, 127, 128, 16_511, 16_512, 2_113_663, 2_113_664, 5, 9_000_000]
    on, nxt = [], 0
    for g in gaps:
        on.append(nxt + g)
        nxt = on[-1] + 1
    on.append(bits - 1)
    v = DataStructs.ExplicitBitVect(bits)
    for b in on:
        v.SetBit(b)
    row = np.frombuffer(_core.packed_from_rdkit(v.ToBinary(), bits), dtype=np.uint8)
    assert list(np.flatnonzero(np.unpackbits(row, bitorder="little"))) == on


def test_unreadable_binary_is_an_error():
    v = DataStructs.ExplicitBitVect(128)
    v.SetBit(5)
    data = v.ToBinary()
    with pytest.raises(ValueError, match="has 128 bits, expected 256"):
        _core.packed_from_rdkit(data, 256)
    with pytest.raises(ValueError, match="cut short"):
        _core.packed_from_rdkit(data[:-1], 128)
    with pytest.raises(ValueError, match="unknown version"):
        _core.packed_from_rdkit(b"\x10\x00\x00\x00" + data[4:], 128)
    with pytest.raises(ValueError):
        _core.packed_from_rdkit(data + b"\x00", 128)


def test_fingerprinter_falls_back_when_the_binary_form_differs(monkeypatch, mols):
    def wrong(data, bits):
        return bytes(bits // 8)

    monkeypatch.setattr(chem, "_packed_from_rdkit", wrong)
    fp = chem.Fingerprinter(FingerprintSpec(radius=2, bits=2048))
    assert not fp.reads_rdkit_binary
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    assert all(fp.packed(m) == numpy_packed(gen, m) for m in mols[:50])
