"""The graph records, screen facts and pattern fingerprints read in Rust from RDKit's binary
form of a molecule (`substructure/records.py`, `crates/substructure/src/pickle.rs`,
`pattern.rs`) are byte for byte the records of RDKit's own Python calls (`program.graph_record`),
the facts give the same feature bits as RDKit's bulk calls (`features.molecule_features`), and
the pattern bits are `Chem.PatternFingerprint`'s, on the bundled molecules, RDKit's SDF
(with coordinates), the substructure test queries parsed as molecules, the reader's probes, and
20,000 real MOSES molecules parsed from their canonical SMILES as ingest parses them; and the
reader really is used (it reads nearly every molecule: a reader that silently gave up would
pass an equality test)."""

from __future__ import annotations

import gzip
import itertools

import pytest
from conftest import SHARED_DATA

from molsift import _core
from molsift.substructure import records
from molsift.substructure.build import _packer
from molsift.substructure.features import molecule_features
from molsift.substructure.program import graph_record
from molsift.substructure.query import PATTERN_BITS

Chem = pytest.importorskip("rdkit.Chem")


def _check(mols: list) -> int:
    """Asserts the two paths agree on every molecule (records, feature bits); returns how many
    the reader read both of."""
    pickles = [None if m is None else m.ToBinary() for m in mols]
    both = _core.screen_from_pickles(pickles, records.pattern_graphs(), PATTERN_BITS)
    slow = [graph_record(m) for m in mols]
    pack = _packer()
    for k, (m, s, (r, facts, fp)) in enumerate(zip(mols, slow, both)):
        name = f"molecule {k} ({Chem.MolToSmiles(m) if m else None})"
        if r is not None:
            assert r == s, f"{name}: records differ"
        if facts is not None:
            assert molecule_features(m, facts) == molecule_features(m), f"{name}: features differ"
        if fp is not None:
            want = pack(Chem.PatternFingerprint(m, fpSize=PATTERN_BITS))
            assert fp == want, f"{name}: pattern fingerprints differ"
    got, facts, fps = records.screen_inputs(mols)
    assert got == slow and len(facts) == len(fps) == len(mols)
    return sum(r is not None and f is not None and p is not None for r, f, p in both)


def _canonical(smiles: list[str]) -> list:
    """The molecules as the index sees them: parsed again from their canonical SMILES."""
    out = []
    for s in smiles:
        m = Chem.MolFromSmiles(s)
        out.append(None if m is None else Chem.MolFromSmiles(Chem.MolToSmiles(m)))
    return out


def test_the_reader_agrees_with_rdkit_on_its_probes():
    agree, patterns = records.agreement()
    assert agree
    assert patterns is not None  # the pattern bits are RDKit's too


def test_bundled_and_sdf_molecules(bundled_smi, rdkit_sdf):
    lines = bundled_smi.read_text().splitlines()
    mols = _canonical([line.split()[0] for line in lines if line.strip()])
    read = _check(mols)
    assert read >= 0.99 * sum(m is not None for m in mols)
    sdf = [m for m in Chem.SDMolSupplier(str(rdkit_sdf)) if m is not None]
    assert sdf and sdf[0].GetNumConformers() == 1  # coordinates in the binary form
    assert _check(sdf) >= 0.99 * len(sdf)


def test_query_molecules_and_odd_cases():
    from conftest import ROOT

    rows = (ROOT / "tests" / "data" / "substructure" / "queries.tsv").read_text().splitlines()
    smiles = [r.split("\t")[2] for r in rows[1:] if r.split("\t")[1] == "smiles"]
    assert len(smiles) > 50
    _check([Chem.MolFromSmiles(s) for s in smiles])
    odd = [Chem.MolFromSmiles(s) for s in records.PROBES] + [None]
    _check(odd)
    # a molecule the reader does not know (an atom map number) still gets RDKit's record
    mapped = Chem.MolFromSmiles("[CH3:1]C(=O)O")
    assert _core.screen_from_pickles([mapped.ToBinary()]) == [(None, None, None)]
    assert records.screen_inputs([mapped])[0] == [graph_record(mapped)]
    # truncated forms are never read
    whole = Chem.MolFromSmiles("c1ccccc1O").ToBinary()
    cut = [whole[:n] for n in range(len(whole))]
    assert _core.screen_from_pickles(cut) == [(None, None, None)] * len(cut)


@pytest.mark.skipif(
    not (SHARED_DATA / "moses_train.csv.gz").exists(), reason="../shared/data not present"
)
def test_real_molecules_of_moses():
    with gzip.open(SHARED_DATA / "moses_train.csv.gz", "rt") as fh:
        next(fh)
        smiles = [line.split(",")[0] for line in itertools.islice(fh, 20_000)]
    mols = _canonical(smiles)
    assert _check(mols) == sum(m is not None for m in mols)


def test_the_stored_molecule_parse_changes_no_row_or_record(bundled_smi):
    """`build.stored_mol` (MolFromSmiles less its stereo perception, which ingest's second parse
    skips) gives the rows and graph records of `Chem.MolFromSmiles` on stereoisomers (chiral
    centres and double bonds, each enumerated), isotopes, explicit H atoms, a map number (a
    record the Rust reader leaves to RDKit) and SMILES that do not sanitize."""
    from rdkit.Chem.EnumerateStereoisomers import (
        EnumerateStereoisomers,
        StereoEnumerationOptions,
    )

    from molsift.substructure.build import rows_of, rows_of_mols, stored_mol

    opts = StereoEnumerationOptions(maxIsomers=4, onlyUnassigned=True, unique=True)
    smiles = []
    for line in bundled_smi.read_text().splitlines()[:2000]:
        m = Chem.MolFromSmiles(line.split()[0]) if line.strip() else None
        if m is not None:
            smiles += [Chem.MolToSmiles(iso) for iso in EnumerateStereoisomers(m, options=opts)]
    chiral = sum("@" in s for s in smiles)
    double = sum("/" in s or "\\" in s for s in smiles)
    assert chiral > 900 and double > 300, (chiral, double)
    smiles += [s.replace("C", "[13C]", 1) for s in smiles[:300]]
    smiles += ["[2H]C([2H])([2H])O", "[H][H]", "[H+]", "[H-].[Na+]", "[CH3:1]C(=O)O"]
    smiles += ["[C@@H](F)(Cl)Br", "[H]/N=C/C", "[H]C(=O)O", "[H][C@](F)(Cl)Br"]
    smiles += ["CC(C)(C)(C)(C)C", "c1ccccc1c", "C1CC", "N(=O)=O=O", ""]
    slow_mols = [Chem.MolFromSmiles(s) for s in smiles]
    fast_mols = [stored_mol(s) for s in smiles]
    assert [m is None for m in fast_mols] == [m is None for m in slow_mols]
    assert [m is None for m in slow_mols[-5:]] == [True] * 4 + [False]  # "" is the empty one
    slow_records: list[bytes] = []
    fast_records: list[bytes] = []
    slow = rows_of_mols(slow_mols, slow_records)
    fast = rows_of(smiles, fast_records)
    assert (fast == slow).all()
    assert fast_records == slow_records


def _written_cases(bundled_smi, rdkit_sdf) -> tuple[list, list[str]]:
    """Molecules as ingest's workers hold them (parsed from their input, then written as
    canonical SMILES), with those SMILES: the bundled molecules, their stereoisomers, 20,000
    MOSES molecules where present, RDKit's SDF (with coordinates), the reader's probes and odd
    cases (isotopes, explicit H atoms, charges, salts, a map number, cages)."""
    from rdkit.Chem.EnumerateStereoisomers import (
        EnumerateStereoisomers,
        StereoEnumerationOptions,
    )

    inputs = [line.split()[0] for line in bundled_smi.read_text().splitlines() if line.strip()]
    opts = StereoEnumerationOptions(maxIsomers=4, onlyUnassigned=True, unique=True)
    for s in inputs[:500]:
        m = Chem.MolFromSmiles(s)
        if m is not None:
            inputs += [Chem.MolToSmiles(iso) for iso in EnumerateStereoisomers(m, options=opts)]
    inputs += list(records.PROBES)
    inputs += ["[2H]C([2H])([2H])O", "[H][H]", "[H-].[Na+]", "[CH3:1]C(=O)O", "[H]/N=C/C"]
    inputs += ["[H][C@](F)(Cl)Br", "C[N+](C)(C)C.[Cl-]", "[O-][n+]1ccccc1", "C1C2CC3CC1CC(C2)C3"]
    inputs += ["C12C3C4C1C5C2C3C45", "C1C2CC3C1C1CC3C21", "OC(=O)c1ccc2[nH]ccc2c1", "c1cc2ccc1cc2"]
    if (SHARED_DATA / "moses_train.csv.gz").exists():
        with gzip.open(SHARED_DATA / "moses_train.csv.gz", "rt") as fh:
            next(fh)
            inputs += [line.split(",")[0] for line in itertools.islice(fh, 20_000)]
    mols = [Chem.MolFromSmiles(s) for s in inputs]
    mols += [m for m in Chem.SDMolSupplier(str(rdkit_sdf)) if m is not None]
    mols = [m for m in mols if m is not None]
    return mols, [Chem.MolToSmiles(m) for m in mols]


def test_rows_from_the_written_molecule_equal_the_stored_smiles_parse(bundled_smi, rdkit_sdf):
    """Ingest's workers make each stored molecule's screening row and graph record from the
    molecule its canonical SMILES was written from, its atoms put in the SMILES's order
    (`build.written_form`, `rows_of_written`), instead of parsing the SMILES again: the rows
    and records are byte for byte those of the SMILES's own parse (`Chem.MolFromSmiles`, the
    molecule the searches and their RDKit reference read), and the Rust path is really used
    (a path that silently fell back to the parse would pass the equality)."""
    from molsift.substructure.build import (
        _row_maker,
        rows_from_parts,
        rows_of_mols,
        rows_of_written,
        written_form,
    )

    assert _row_maker() is not None  # it agreed with the vocabulary's own rows on the probes
    mols, smiles = _written_cases(bundled_smi, rdkit_sdf)
    forms = [written_form(m) for m in mols]
    assert sum(f is not None for f in forms) >= 0.99 * len(mols)
    written_records: list[bytes] = []
    written = rows_of_written(smiles, forms, written_records)
    parsed = [Chem.MolFromSmiles(s) for s in smiles]
    parsed_records: list[bytes] = []
    reference = rows_from_parts(parsed, parsed_records)
    assert [graph_record(m) for m in parsed] == parsed_records
    for k in range(len(smiles)):
        assert written_records[k] == parsed_records[k], f"{smiles[k]}: records differ"
        assert (written[k] == reference[k]).all(), f"{smiles[k]}: rows differ"
    # the rows made in Rust from the parsed molecules too (index --pattern's path)
    again: list[bytes] = []
    assert (rows_of_mols(parsed, again) == reference).all() and again == parsed_records
    # a molecule without a form (here: rings not perceived) is parsed again from its SMILES
    raw = Chem.MolFromSmiles("C1CC2CC1CC2", sanitize=False)
    assert written_form(raw) is None
    mine: list[bytes] = []
    row = rows_of_written(["C1CC2CC1CC2"], [None], mine)
    assert mine == [graph_record(Chem.MolFromSmiles("C1CC2CC1CC2"))] and row[0].any()
