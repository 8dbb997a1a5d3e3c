"""The `filter` scorer: the pattern-fingerprint prescreen (scorers/prescreen.py) gives exactly the
values of the plain RDKit calls (descriptors, QED.qed, FilterCatalog PAINS matches), on real
molecules with PAINS hits and on molecules whose explicit hydrogens change what QED sees."""

from __future__ import annotations

import csv

import pytest
from conftest import BUNDLED_SMI
from test_screen import screen

Chem = pytest.importorskip("rdkit.Chem")
from molsift.scorers.filter import FilterScorer  # noqa: E402

EXPLICIT_H = [  # with Chem.AddHs, RemoveHs changes these: QED's cLogP and alerts are recomputed
    "OC(=O)c1ccccc1N(=O)=O",
    "[2H]C([2H])([2H])n1cnc2c1c(=O)n(C)c(=O)n2C",
    "N[C@@H](C)C(=O)O",
    "N=C(N)c1ccc(C=Cc2ccc(O)c(O)c2)cc1",
]


@pytest.fixture(scope="module")
def scorer():
    s = FilterScorer()
    s.setup()
    return s


def test_every_pains_entry_and_alert_is_screened(scorer):
    """Each of the 480 PAINS entries and 116 QED alerts got a query fingerprint: none is left
    unscreened by a failed read of the catalog (which would be correct, only slow)."""
    assert len(scorer._entries) == 480 and scorer._pains_screen.screened == 480
    assert scorer._alerts_screen.screened == len(scorer._qed.StructuralAlerts) == 116


def test_screen_candidates_are_the_queries_whose_bits_the_molecule_holds(scorer):
    """The Rust subset test and the fingerprint read from RDKit's binary form give what plain
    numpy on RDKit's bit string gives, for both screens, on real molecules."""
    import numpy as np

    from molsift.chem import _packed_bit_string
    from molsift.scorers.prescreen import BITS, PatternScreen, pains_queries

    def words(fp):
        bits = np.frombuffer(fp.ToBitString().encode(), dtype=np.uint8) - 48
        return np.packbits(bits, bitorder="little").view(np.uint64)

    smiles = [line.split()[0] for line in BUNDLED_SMI.read_text().splitlines()[:300]]
    mols = [m for m in map(Chem.MolFromSmiles, smiles) if m is not None]
    pains, alerts = pains_queries(scorer._pains), scorer._qed.StructuralAlerts
    for pscreen, queries in ((scorer._pains_screen, pains), (scorer._alerts_screen, alerts)):
        assert pscreen._packed is not _packed_bit_string  # this RDKit's binary form is read in Rust
        rows = np.stack([words(Chem.PatternFingerprint(q, BITS)) for q in queries])
        assert PatternScreen(queries).screened == len(rows)
        passed = 0
        for mol in mols:
            fp = Chem.PatternFingerprint(mol, BITS)
            assert pscreen.words(mol) == _packed_bit_string(fp)
            got = pscreen.candidates(pscreen.words(mol))
            assert got == sorted(got)
            assert got == np.flatnonzero(~(rows & ~words(fp)).any(axis=1)).tolist()
            passed += len(got)
        assert 0 < passed < len(mols) * len(pscreen._rows)  # the screen lets some through, not all


def test_prescreen_gives_the_plain_rdkit_values(scorer):
    from rdkit.Chem import QED, Crippen, Descriptors, Lipinski, rdMolDescriptors
    from rdkit.Chem.FilterCatalog import FilterCatalog, FilterCatalogParams

    params = FilterCatalogParams()
    params.AddCatalog(FilterCatalogParams.FilterCatalogs.PAINS)
    catalog = FilterCatalog(params)
    smiles = [line.split()[0] for line in BUNDLED_SMI.read_text().splitlines()[:1500]]
    mols = [m for m in map(Chem.MolFromSmiles, smiles) if m is not None]
    mols += [Chem.AddHs(Chem.MolFromSmiles(s)) for s in EXPLICIT_H]
    hits = multi = 0
    for mol in mols:
        matches = catalog.GetMatches(mol)
        want = (
            [
                Descriptors.MolWt(mol),
                Crippen.MolLogP(mol),
                Lipinski.NumHDonors(mol),
                Lipinski.NumHAcceptors(mol),
                rdMolDescriptors.CalcNumRotatableBonds(mol),
                rdMolDescriptors.CalcTPSA(mol),
                QED.qed(mol),
            ],
            len(matches),
            matches[0].GetDescription() if len(matches) else "",
        )
        assert scorer._screened(mol) == want, Chem.MolToSmiles(mol)
        assert scorer._plain(mol) == want
        hits += bool(len(matches))
        multi += len(matches) > 1
    assert len(mols) >= 1490 and hits >= 50 and multi >= 5  # the sample really exercises PAINS
    assert any(Chem.RemoveHs(m).GetNumAtoms() < m.GetNumAtoms() for m in mols)


def test_no_prescreen_option_writes_the_same_rows(tmp_path):
    lines = BUNDLED_SMI.read_text().splitlines()[::25]
    library = tmp_path / "lib.smi"
    library.write_text("\n".join(lines) + "\n")
    out = {}
    for name, extra in (("screened", []), ("plain", ["--filter-no-prescreen"])):
        path = tmp_path / f"{name}.csv"
        screen([library, "--scorer", "filter", "-o", path, "-j", "2", "-q", *extra])
        with open(path, newline="") as f:
            out[name] = sorted(tuple(r.items()) for r in csv.DictReader(f))
    assert len(out["plain"]) >= len(lines) - 5 and out["screened"] == out["plain"]


@pytest.mark.parametrize(
    "option, value, said",
    [
        ("--filter-max-mw", "nan", "must be a finite number, got nan"),
        ("--filter-max-mw", "-3", "mw is never negative, got -3.0"),
        ("--filter-max-tpsa", "inf", "must be a finite number, got inf"),
        ("--filter-min-qed", "1.5", "qed is at most 1, got 1.5"),
        ("--filter-max-hbd", "x", "not a whole number: 'x'"),
    ],
)
def test_a_rule_that_cannot_bound_its_column_is_refused(tmp_path, capsys, option, value, said):
    """`--filter-max-mw nan` (or a negative one) made every molecule fail without a word."""
    from molsift.cli import main

    out = tmp_path / "f.csv"
    with pytest.raises(SystemExit) as stop:
        main(["screen", str(BUNDLED_SMI), "--scorer", "filter", "-o", str(out), option, value])
    assert stop.value.code == 2 and not out.exists()
    assert f"argument {option}: {said}" in capsys.readouterr().err


@pytest.mark.parametrize(
    "rule, value", [("max_mw", float("nan")), ("max_hba", -1), ("min_qed", 2.0)]
)
def test_the_api_refuses_the_same_rules(rule, value):
    with pytest.raises(ValueError, match=rule):
        FilterScorer(**{rule: value})


def test_a_negative_clogp_bound_is_a_rule():
    """cLogP may be negative: `--filter-max-clogp -1` is a rule, not an error."""
    assert FilterScorer(max_clogp=-1.0).max_clogp == -1.0
