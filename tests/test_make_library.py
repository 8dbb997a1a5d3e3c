"""benches/make_library.py: a reproducible library of distinct, valid, drug-like products.

Runs the generator on the first 800 molecules of the bundled NCI file (and on the first 1,000 of
MOSES when ../shared/data/moses_train.csv.gz is there): the same bytes with -j 1 and -j 2, every
line an RDKit canonical SMILES that passes the drug-like filter, all distinct, none of them a
source molecule; and the string-joined products equal RDKit's molzip of the `*` blocks.
"""

from __future__ import annotations

import gzip
import importlib.util
import subprocess
import sys
from itertools import islice
from pathlib import Path

import pytest
from conftest import BUNDLED_SMI, SHARED_DATA
from rdkit import Chem, RDLogger

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benches" / "make_library.py"
MOSES = SHARED_DATA / "moses_train.csv.gz"


def load_module():
    spec = importlib.util.spec_from_file_location("make_library", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


ml = load_module()


def run(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=120
    )


def canonical_set(smiles: list[str]) -> set[str]:
    RDLogger.DisableLog("rdApp.*")
    mols = (Chem.MolFromSmiles(s) for s in smiles)
    return {Chem.MolToSmiles(m) for m in mols if m is not None}


@pytest.fixture(scope="module")
def nci_input(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("nci") / "nci800.smi"
    with open(BUNDLED_SMI) as fh:
        path.write_text("".join(islice(fh, 800)))
    return path


@pytest.fixture(scope="module")
def moses_input(tmp_path_factory) -> Path:
    if not MOSES.exists():
        pytest.skip(f"{MOSES} not present")
    path = tmp_path_factory.mktemp("moses") / "moses1000.csv"
    with gzip.open(MOSES, "rt") as fh:
        path.write_text("".join(islice(fh, 1001)))  # header + 1,000 molecules
    return path


def check_library(text: str, n: int, source: list[str]) -> None:
    lines = text.splitlines()
    assert len(lines) == n
    smiles = []
    for i, line in enumerate(lines, 1):
        smi, ident = line.split(" ")
        assert ident == f"ML{i:09d}"
        mol = Chem.MolFromSmiles(smi)
        assert mol is not None, smi
        assert Chem.MolToSmiles(mol) == smi  # RDKit canonical
        assert "." not in smi
        assert ml.drug_like(mol), smi
        smiles.append(smi)
    assert len(set(smiles)) == n
    assert not set(smiles) & canonical_set(source)


@pytest.mark.parametrize("source", ["nci", "moses"])
def test_same_bytes_any_jobs(source: str, request, tmp_path: Path) -> None:
    path = request.getfixturevalue(f"{source}_input")
    n = 2000
    one, two = tmp_path / "j1.smi", tmp_path / "j2.smi"
    r1 = run("-n", n, "-o", one, "--input", path, "-j", 1, "--seed", 11)
    r2 = run("-n", n, "-o", two, "--input", path, "-j", 2, "--seed", 11)
    assert r1.returncode == 0, r1.stderr
    assert r2.returncode == 0, r2.stderr
    assert one.read_bytes() == two.read_bytes()
    assert "summary: attempted" in r2.stderr and "written 2,000" in r2.stderr
    source_smiles = list(ml.read_smiles(path))
    check_library(one.read_text(), n, source_smiles)


def test_gzip_output_is_reproducible(nci_input: Path, tmp_path: Path) -> None:
    plain, gz = tmp_path / "a.smi", tmp_path / "a.smi.gz"
    assert run("-n", 500, "-o", plain, "--input", nci_input, "-j", 1).returncode == 0
    assert run("-n", 500, "-o", gz, "--input", nci_input, "-j", 2).returncode == 0
    data = gz.read_bytes()
    assert data[3] & 0x08 == 0  # no file name in the gzip header
    assert data[4:8] == b"\0\0\0\0"  # no time
    assert gzip.decompress(data) == plain.read_bytes()
    other = tmp_path / "b.smi"
    assert run("-n", 500, "-o", other, "--input", nci_input, "-j", 1, "--seed", 8).returncode == 0
    assert other.read_bytes() != plain.read_bytes()


def test_gives_up_when_out_of_reach(tmp_path: Path) -> None:
    src = tmp_path / "tiny.smi"
    src.write_text("CC(=O)Nc1ccc(O)cc1\nO=C(O)c1ccccc1Cl\nCN1CCNCC1\n")
    out = tmp_path / "out.smi"
    r = run("-n", 1000, "-o", out, "--input", src, "-j", 1)
    assert r.returncode == 1
    assert "could be made" in r.stderr
    lines = out.read_text().splitlines()
    assert 0 < len(lines) < 1000
    assert len({line.split()[0] for line in lines}) == len(lines)


def test_string_join_is_molzip(nci_input: Path) -> None:
    """A product made by joining the blocks' `%99` forms is the molecule Chem.molzip makes from
    the `*` blocks, and its heavy atoms, weight, HBA and HBD are the sums of the blocks'."""
    RDLogger.DisableLog("rdApp.*")
    blocks: dict[str, list[tuple[str, tuple]]] = {p: [] for p in ml.POOLS}
    for smi in ml.read_smiles(nci_input):
        mol = Chem.MolFromSmiles(smi)
        if mol is None:
            continue
        for pool, m, atoms in ml.cut_blocks(mol):
            key = Chem.MolFragmentToSmiles(m, atomsToUse=atoms)
            block = ml.make_block(pool, key)
            if block is not None:
                blocks[pool].append((key, block))
    assert all(len(blocks[p]) >= 4 for p in ml.POOLS)
    checked = 0
    for _, pe, pn, _ in ml.REACTIONS:
        for k, (key_e, block_e) in enumerate(blocks[pe][:40]):
            for key_n, block_n in blocks[pn][k % 7 :: 13][:5]:
                joined = Chem.MolFromSmiles(f"{block_e[1]}.{block_n[1]}")
                assert joined is not None
                zipped = Chem.molzip(
                    Chem.MolFromSmiles(key_e.replace("*", "[*:1]")),
                    Chem.MolFromSmiles(key_n.replace("*", "[*:1]")),
                )
                Chem.SanitizeMol(zipped)
                assert Chem.MolToSmiles(joined) == Chem.MolToSmiles(zipped)
                ha, mw, hba, hbd = (a + b for a, b in zip(block_e[2:], block_n[2:]))
                assert joined.GetNumHeavyAtoms() == ha
                assert abs(ml.Descriptors.MolWt(joined) - mw) < 1e-6
                assert ml.rdMolDescriptors.CalcNumLipinskiHBA(joined) == hba
                assert ml.rdMolDescriptors.CalcNumLipinskiHBD(joined) == hbd
                checked += 1
    assert checked > 100
