"""Tests of the `vina` scorer (real AutoDock Vina 1.2 + Meeko docking into Vina's own 1iep
example, shipped in data/vina_1iep/, exhaustiveness 1): scores, poses, rejects, maps built once
per worker, the per-ligand timeout, reproducibility, and the box file and option parsing."""

from __future__ import annotations

import argparse
import pickle
import time

import pytest
from conftest import BUNDLED_SMI, ROOT

pytest.importorskip("vina", reason="vina not installed (scripts/setup.sh installs vina==1.2.7)")
pytest.importorskip("meeko", reason="meeko not installed (scripts/setup.sh installs meeko==0.8.0)")

from rdkit import Chem

from molsift.scorers import Reject, scorer_class
from molsift.scorers.vina import Box, VinaScorer, read_box

EXAMPLE = ROOT / "data" / "vina_1iep"  # shipped with the repository: data/vina_1iep/README.md
RECEPTOR = EXAMPLE / "1iep_receptor.pdbqt"
BOX_FILE = EXAMPLE / "1iep_receptor.box.txt"
LIGAND = EXAMPLE / "1iep_ligand.sdf"

PARACETAMOL = "CC(=O)Nc1ccc(O)cc1"
SMALL = [PARACETAMOL, "Cc1ccc(NC(=O)c2ccccc2)cc1", "OC(=O)c1ccccc1O"]


def nci(record_id: str) -> str:
    """A SMILES from the bundled NCI file, by its id (real library records, not made up)."""
    for line in BUNDLED_SMI.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == record_id:
            return parts[0]
    raise KeyError(record_id)


def make_scorer(**options) -> VinaScorer:
    options.setdefault("exhaustiveness", 1)
    options.setdefault("timeout", 120)
    return VinaScorer(str(RECEPTOR), read_box(str(BOX_FILE)), **options)


@pytest.fixture(scope="module")
def scorer():
    s = make_scorer()
    s.setup()
    yield s
    s.close()


@pytest.fixture(scope="module")
def inproc():
    """A scorer that docks in this process (no timeout, no fork)."""
    s = make_scorer(timeout=0)
    s.setup()
    yield s
    s.close()


@pytest.fixture(scope="module")
def crystal(scorer):
    """Imatinib, the crystal ligand, docked once for the tests that look at it."""
    mol = Chem.MolFromMolFile(str(LIGAND))
    values, pose = scorer.score(mol)
    return mol, dict(zip(scorer.columns, values)), pose


def in_box(xyz, box: Box, slack: float = 0.0) -> bool:
    return all(abs(xyz[i] - box.center[i]) <= box.size[i] / 2 + slack for i in range(3))


def test_crystal_ligand_redocks_with_a_strong_score(crystal):
    _mol, values, _ = crystal
    # Vina's own example gives about -12 to -13 kcal/mol at exhaustiveness 8; at 1, strongly
    # negative
    assert values["vina_score"] < -8, values
    assert values["vina_score"] > -20, values  # not absurd either
    assert 1 <= values["n_poses"] <= 9
    assert all(values[k] >= 0 for k in ("embed_s", "prep_s", "dock_s"))


def test_pose_is_one_sdf_record_with_every_atom_inside_the_box(crystal):
    mol, values, pose = crystal
    assert pose.endswith("$$$$\n") and pose.count("$$$$") == 1
    supplier = Chem.SDMolSupplier()
    supplier.SetData(pose, removeHs=False)
    posed = next(supplier)
    assert posed is not None
    assert posed.GetNumAtoms() == Chem.AddHs(mol).GetNumAtoms() == 69
    assert posed.GetNumHeavyAtoms() == mol.GetNumHeavyAtoms() == 37
    # same molecule as the input (bond orders come back from Meeko's SMILES remark)
    assert Chem.MolToSmiles(Chem.RemoveHs(posed)) == Chem.MolToSmiles(mol)
    assert float(posed.GetProp("vina_score")) == pytest.approx(values["vina_score"], abs=1e-3)
    # redocking: the pose lies where the crystal ligand lies (2 A is the usual success threshold)
    from rdkit.Chem import rdMolAlign

    assert rdMolAlign.CalcRMS(Chem.RemoveHs(posed), mol) < 2.0
    box = read_box(str(BOX_FILE))
    for p in posed.GetConformer().GetPositions():
        assert in_box(p, box, slack=2.0)  # heavy atoms in the box; hydrogens may stick out a bit


@pytest.mark.parametrize("smiles", SMALL)
def test_small_molecules_dock(scorer, smiles):
    values, pose = scorer.score(Chem.MolFromSmiles(smiles))
    score = values[0]
    assert -10 < score < -3, (smiles, score)
    posed = Chem.MolFromMolBlock(pose, removeHs=False)
    assert posed.GetNumAtoms() == Chem.AddHs(Chem.MolFromSmiles(smiles)).GetNumAtoms()


def test_pdbqt_pose_format(inproc, monkeypatch):
    monkeypatch.setattr(inproc, "pose_format", "pdbqt")
    values, pose = inproc.score(Chem.MolFromSmiles(PARACETAMOL))
    assert pose.startswith("MODEL 1") and pose.rstrip().endswith("ENDMDL")
    remark = next(ln for ln in pose.splitlines() if ln.startswith("REMARK VINA RESULT:"))
    assert float(remark.split()[3]) == pytest.approx(values[0], abs=1e-3)
    atoms = [ln for ln in pose.splitlines() if ln.startswith(("ATOM", "HETATM"))]
    assert len(atoms) == 11 + 2  # heavy atoms plus the polar H of NH and OH (Meeko merges C-H)


def test_receptor_maps_are_built_once_per_worker():
    s = make_scorer()
    assert s.stats()["vina_maps_built"] == 0  # nothing expensive in __init__
    worker = pickle.loads(pickle.dumps(s))  # what the pipeline hands each worker
    worker.setup()
    for smiles in SMALL:
        worker.score(Chem.MolFromSmiles(smiles))
    st = worker.stats()
    assert st["vina_maps_built"] == 1
    assert st["vina_ligands"] == st["vina_docked"] == len(SMALL)
    assert st["vina_dock_s"] > 0 and st["vina_embed_s"] > 0 and st["vina_prep_s"] > 0
    assert s.stats()["vina_maps_built"] == 0  # the parent's copy built nothing
    worker.close()
    assert worker._exiting == []  # every docking child reaped
    # a worker that was pickled after its setup does not carry maps: its copy builds its own
    again = pickle.loads(pickle.dumps(worker))
    assert again.stats()["vina_maps_built"] == 0


@pytest.mark.parametrize(
    "record_id, reason",
    [
        ("2004", "embedding failed: ETKDG found no 3D conformer"),  # N[Cr](N)(N)(N)(N)N
        ("872", "embedding failed: RDKit: Invariant Violation"),  # a Zn complex: RDKit raises
    ],
)
def test_molecule_that_cannot_be_embedded_is_rejected(scorer, record_id, reason):
    mol = Chem.MolFromSmiles(nci(record_id))
    assert mol is not None  # RDKit parses it; only the 3D embedding fails
    before = scorer.stats()["vina_rejects_embed"]
    with pytest.raises(Reject, match=reason.replace("(", r"\(")):
        scorer.score(mol)
    assert scorer.stats()["vina_rejects_embed"] == before + 1


@pytest.mark.parametrize(
    "smiles, reason",
    [
        ("CCOB(OCC)OCC", "Vina rejected the ligand: .*Atom type B is not a valid AutoDock type"),
        ("CC[Se]CC", "Meeko cannot write a PDBQT"),
        ("CC(=O)[O-].[Na+]", "2 fragments"),
    ],
)
def test_molecules_vina_or_meeko_cannot_take_are_rejected(scorer, smiles, reason):
    with pytest.raises(Reject, match=reason):
        scorer.score(Chem.MolFromSmiles(smiles))


def test_long_flexible_molecule_embeds_through_the_random_coordinates_retry():
    from rdkit.Chem import AllChem

    from molsift.scorers.vina import embed

    mol = Chem.MolFromSmiles(nci("862"))  # three dodecyl chains: plain ETKDG fails on it
    params = AllChem.ETKDGv3()
    params.randomSeed = 42
    assert AllChem.EmbedMolecule(Chem.AddHs(mol), params) == -1
    molh = embed(mol, 42)  # the retry from random starting coordinates works
    assert molh.GetNumConformers() == 1 and molh.GetNumAtoms() == Chem.AddHs(mol).GetNumAtoms()


def test_timeout_kills_a_running_dock_and_rejects():
    # imatinib: about 1 s to embed and prepare, then about 20 s of docking even at exhaustiveness 1
    s = make_scorer(exhaustiveness=8, timeout=3)
    s.setup()
    assert s.stats()["vina_maps_built"] == 1
    t0 = time.perf_counter()
    with pytest.raises(Reject, match=r"docking timed out after 3 s \(in dock\)"):
        s.score(Chem.MolFromMolFile(str(LIGAND)))
    assert time.perf_counter() - t0 < 5
    assert s.stats()["vina_timeouts"] == 1
    assert s.stats()["vina_rejects_dock"] == 1
    # the worker goes on with the next ligand, maps untouched
    values, _ = s.score(Chem.MolFromSmiles("C"))
    assert values[0] < 0 and s.stats()["vina_maps_built"] == 1


def test_a_child_that_crashes_is_a_reject_and_the_worker_goes_on(scorer, monkeypatch):
    import os

    import molsift.scorers.vina as vina_module

    monkeypatch.setattr(vina_module, "embed", lambda mol, seed: os.abort())  # runs in the child
    with pytest.raises(Reject, match=r"the docking process died in embed \(killed by SIGABRT\)"):
        scorer.score(Chem.MolFromSmiles("CCO"))
    monkeypatch.undo()
    assert scorer.score(Chem.MolFromSmiles("CCO"))[0][0] < 0


def test_results_are_reproducible_in_and_out_of_a_child(scorer, inproc):
    mol = Chem.MolFromSmiles(PARACETAMOL)
    forked = [scorer.score(mol) for _ in range(2)]
    a1 = inproc.score(mol)
    inproc.score(Chem.MolFromSmiles(SMALL[2]))  # docking another ligand in between changes nothing
    a2 = inproc.score(mol)
    assert forked[0][0][0] == forked[1][0][0] == a1[0][0] == a2[0][0]
    assert forked[0][1] == a1[1] == a2[1]  # same pose, byte for byte


def test_score_does_not_depend_on_how_the_input_writes_the_molecule(inproc):
    # the same molecule in another atom order (as from an SDF or another SMILES writer)
    a = inproc.score(Chem.MolFromSmiles(PARACETAMOL))
    b = inproc.score(Chem.MolFromSmiles("Oc1ccc(NC(C)=O)cc1"))
    c = inproc.score(Chem.AddHs(Chem.MolFromSmiles("O=C(C)Nc1ccc(O)cc1")))  # explicit hydrogens too
    assert a[0][0] == b[0][0] == c[0][0]
    assert a[1] == b[1] == c[1]


# --- box and options ---------------------------------------------------------------------------


def test_box_file_in_vinas_format(tmp_path):
    f = tmp_path / "box.txt"
    f.write_text(
        "# 1iep\ncenter_x = 15.190\ncenter_y=53.903\ncenter_z = 16.917  # ligand centre\n\n"
        "size_x = 20\nsize_y = 20.0\nsize_z = 22.5\n"
    )
    assert read_box(str(f)) == Box((15.19, 53.903, 16.917), (20.0, 20.0, 22.5))


@pytest.mark.parametrize(
    "text, error",
    [
        ("center_x = 1\ncenter_y 2\n", r"box.txt:2: expected 'key = value'"),
        ("center_x = 1\ncenter_y = abc\n", r"box.txt:2: center_y is not a number: 'abc'"),
        ("exhaustiveness = 8\n", r"box.txt:1: unknown key 'exhaustiveness'"),
        ("center_x = 1\ncenter_x = 2\n", r"box.txt:2: center_x is given twice"),
        (
            "center_x = 1\ncenter_y = 2\ncenter_z = 3\nsize_x = 20\nsize_y = 20\n",
            r"box.txt: the box file lacks size_z",
        ),
        (
            "center_x = 1\ncenter_y = 2\ncenter_z = 3\nsize_x = 20\nsize_y = 0\nsize_z = 20\n",
            r"box sizes must be positive",
        ),
    ],
)
def test_bad_box_file_names_file_and_line(tmp_path, text, error):
    f = tmp_path / "box.txt"
    f.write_text(text)
    with pytest.raises(ValueError, match=error):
        read_box(str(f))


def test_missing_box_file(tmp_path):
    with pytest.raises(ValueError, match=r"cannot read the Vina box file .*nope.txt"):
        read_box(str(tmp_path / "nope.txt"))


def parse(argv):
    parser = argparse.ArgumentParser()
    VinaScorer.add_arguments(parser)
    return parser.parse_args(argv)


def test_options_build_the_scorer():
    assert scorer_class("vina") is VinaScorer
    s = VinaScorer.from_args(
        parse(
            [
                "--vina-receptor",
                str(RECEPTOR),
                "--vina-box",
                str(BOX_FILE),
                "--vina-exhaustiveness",
                "2",
                "--vina-timeout",
                "30",
            ]
        )
    )
    assert s.box == read_box(str(BOX_FILE)) and s.exhaustiveness == 2 and s.timeout == 30
    s = VinaScorer.from_args(
        parse(
            ["--vina-receptor", str(RECEPTOR), "--vina-center", "1,2,3", "--vina-size", "20 20 24"]
        )
    )
    assert s.box == Box((1.0, 2.0, 3.0), (20.0, 20.0, 24.0))
    assert (s.exhaustiveness, s.n_poses, s.seed, s.cpu, s.pose_format) == (8, 9, 42, 1, "sdf")


@pytest.mark.parametrize(
    "argv, error",
    [
        ([], "needs --vina-receptor"),
        (
            [
                "--vina-receptor",
                "/no/such/receptor.pdbqt",
                "--vina-center",
                "0,0,0",
                "--vina-size",
                "20,20,20",
            ],
            "Vina receptor /no/such/receptor.pdbqt: no such file",
        ),
        (["--vina-receptor", "r.pdbqt"], "needs a box"),
        (
            ["--vina-receptor", "r.pdbqt", "--vina-box", "b.txt", "--vina-center", "0,0,0"],
            "either --vina-box",
        ),
        (
            ["--vina-receptor", "r.pdbqt", "--vina-center", "0,0", "--vina-size", "1,1,1"],
            "--vina-center wants three numbers",
        ),
    ],
)
def test_bad_options_say_what_is_wrong(argv, error):
    with pytest.raises(ValueError, match=error):
        VinaScorer.from_args(parse(argv))


def test_receptor_that_vina_cannot_read(tmp_path):
    bad = tmp_path / "bad.pdbqt"
    bad.write_text(
        "ATOM      1  C   XXX A   1       0.000   0.000   0.000  1.00  0.00     0.000 Qq\n"
    )
    s = VinaScorer(str(bad), Box((0, 0, 0), (10, 10, 10)))
    with pytest.raises(ValueError, match=r"Vina cannot read the receptor .*bad.pdbqt"):
        s.setup()


# ---- a demanding user's wrong files and values ----
def test_box_file_that_is_not_text_is_named(tmp_path):
    """Was Python's "'utf-8' codec can't decode byte 0xa5 in position 1", naming no file."""
    f = tmp_path / "box.txt"
    f.write_bytes(b"c\xa5nter_x = 1\n")
    with pytest.raises(ValueError, match=rf"^{f}: not a Vina box file: byte 1 is not UTF-8 text$"):
        read_box(str(f))


def test_receptor_vina_cannot_read_is_refused_before_the_run(tmp_path):
    """An unreadable receptor failed every worker's setup after the run had started: a
    worker's traceback, "run again with --resume" (which cannot help), and the run's files
    left behind. Now `from_args` reads it first, and a failing `setup` is one line (a
    MolsiftError, not resumable)."""
    import subprocess

    from conftest import molsift_cmd

    from molsift import MolsiftError

    bad = tmp_path / "bad.pdbqt"
    bad.write_text("not a receptor\n")
    argv = ["--vina-receptor", str(bad), "--vina-box", str(BOX_FILE)]
    with pytest.raises(MolsiftError, match=rf"^Vina cannot read the receptor {bad}: "):
        VinaScorer.from_args(parse(argv))
    with pytest.raises(MolsiftError, match=rf"^Vina cannot read the receptor {bad}: "):
        VinaScorer(str(bad), read_box(str(BOX_FILE))).setup()
    lib = tmp_path / "lib.smi"
    lib.write_text(f"{PARACETAMOL} p\n")
    r = subprocess.run(
        [*molsift_cmd(), "screen", str(lib), "--scorer", "vina", *argv, "-o",
         str(tmp_path / "o.csv"), "-j", "1", "-q"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith(f"molsift: error: Vina cannot read the receptor {bad}: ")
    assert r.stderr.count("\n") == 1, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.pdbqt", "lib.smi"]


def test_receptor_directory_and_nan_timeout_are_refused(tmp_path):
    """A directory was said to be "no such file"; --vina-timeout nan was taken."""
    with pytest.raises(ValueError, match=rf"^Vina receptor {tmp_path}: a directory "):
        VinaScorer(str(tmp_path), read_box(str(BOX_FILE)))
    with pytest.raises(ValueError, match="cpu and timeout >= 0"):
        VinaScorer(str(RECEPTOR), read_box(str(BOX_FILE)), timeout=float("nan"))
