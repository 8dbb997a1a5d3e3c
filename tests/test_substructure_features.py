"""Substructure screening features: no molecule that contains a query lacks one of the query's
feature bits (1,300 SMARTS and SMILES queries against 2,000 NCI molecules), the bulk and the
atom-by-atom molecule paths agree, contradictory queries are recognised, and the stats script
runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from rdkit import Chem, RDLogger
from rdkit.Chem.Scaffolds import MurckoScaffold

from molsift.substructure import features as F

RDLogger.DisableLog("rdApp.*")

ROOT = Path(__file__).resolve().parent.parent
NCI = ROOT / "data" / "nci_first_5k.smi"
QUERIES = Path(__file__).resolve().parent / "data" / "substructure_queries.tsv"


def read_molecules(limit=None):
    mols = []
    with open(NCI) as fh:
        for line in fh:
            mol = Chem.MolFromSmiles(line.split()[0])
            if mol is not None:
                mols.append(mol)
            if limit and len(mols) >= limit:
                break
    return mols


@pytest.fixture(scope="module")
def nci():
    return read_molecules()


@pytest.fixture(scope="module")
def molecules(nci):
    """The first 2,000 molecules of the bundled NCI file, with their feature bits."""
    return [(m, frozenset(F.molecule_features(m))) for m in nci[:2000]]


@pytest.fixture(scope="module")
def queries(nci):
    """(set, text, query): the query file (PAINS also with its explicit Hs merged), NCI scaffolds
    and whole NCI molecules as SMILES queries."""
    out = []
    for line in QUERIES.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        group, syntax, _, text = line.split("\t")
        if syntax == "smiles":
            out.append((group, text, Chem.MolFromSmiles(text)))
        else:
            out.append((group, text, Chem.MolFromSmarts(text)))
        if group == "PAINS":
            out.append(("PAINS-mergeHs", text, Chem.MolFromSmarts(text, mergeHs=True)))
    for mol in nci[2000:2150:3]:
        scaffold = Chem.MolToSmiles(MurckoScaffold.GetScaffoldForMol(mol))
        if scaffold:
            out.append(("scaffold", scaffold, Chem.MolFromSmiles(scaffold)))
    for mol in nci[:2000:40]:
        text = Chem.MolToSmiles(mol)
        out.append(("molecule", text, Chem.MolFromSmiles(text)))
    assert all(q is not None for _, _, q in out)
    return out


def test_api():
    assert F.FEATURE_BITS % 64 == 0 and 0 < F.FEATURE_BITS <= 512
    assert isinstance(F.FEATURES_VERSION, int)
    names = F.describe_features()
    assert len(names) == F.FEATURE_BITS
    used = [n for n in names if n != "unused"]
    assert len(set(used)) == len(used) and "N atoms >= 2" in used
    bits = F.molecule_features(Chem.MolFromSmiles("OC(=O)c1ccccc1N"))
    assert bits == sorted(set(bits)) and all(0 <= b < F.FEATURE_BITS for b in bits)
    bits = F.query_features(Chem.MolFromSmarts("[CX3](=O)[OX2H1]"))
    assert bits == sorted(set(bits)) and all(0 <= b < F.FEATURE_BITS for b in bits)


def named(bits):
    names = F.describe_features()
    return {names[b] for b in bits}


def test_molecule_features_count_what_they_say():
    have = named(F.molecule_features(Chem.MolFromSmiles("OC(=O)c1ccc(N)cc1C#N")))
    for name in (
        "C atoms >= 8",
        "N atoms >= 2",
        "O atoms >= 2",
        "aromatic C atoms >= 6",
        "C=O bonds >= 1",
        "C#N bonds >= 1",
        "H atoms on N and O >= 3",
        "aromatic-to-aliphatic N bonds >= 1",
        "aromatic C atoms of degree 3 >= 3",
        "N atoms of degree 1 >= 2",
    ):
        assert name in have
    for name in ("C atoms >= 9", "N atoms >= 3", "C=O bonds >= 2", "H atoms on N and O >= 4"):
        assert name not in have


@pytest.mark.parametrize(
    ("smarts", "wanted", "not_wanted"),
    [
        ("[CX3](=O)[OX2H1]", {"C=O bonds >= 1", "H atoms on N and O >= 1"}, {"O atoms >= 3"}),
        ("[#7;!H0]", {"N atoms >= 1", "H atoms on N and O >= 1"}, {"aliphatic N atoms >= 1"}),
        ("[NX3;H2,H1]", {"aliphatic N atoms >= 1", "H atoms on N and O >= 1"}, set()),
        ("[C,N]=O", {"double bonds to O >= 1"}, {"C=O bonds >= 1", "N atoms >= 1"}),
        ("[$(C=O)]", {"C=O bonds >= 1", "aliphatic C atoms >= 1"}, set()),
        ("[$(C=O);!$(C-N)]", {"C=O bonds >= 1"}, {"N atoms >= 1", "C-N single bonds >= 1"}),
        ("[$(C-N),$(C-O)]", {"aliphatic C atoms >= 1"}, {"N atoms >= 1", "O atoms >= 1"}),
        (
            "[$([CH2]-c1ccccc1)]",
            {"aromatic C atoms >= 6", "aromatic-to-aliphatic C bonds >= 1"},
            set(),
        ),
        ("[!C;!N]", set(), {"C atoms >= 2", "N atoms >= 1"}),
        ("c1ccccc1", {"aromatic C atoms >= 6"}, {"aromatic bonds >= 1"}),  # "-" or ":" bonds
        ("c1:c:c:c:c:c:1", {"aromatic C atoms >= 6", "aromatic bonds >= 6"}, set()),
        ("[D3](C)(C)C", {"atoms of degree >=3 >= 1", "C atoms >= 3"}, set()),
        ("[O]([#1])C", {"H atoms on N and O >= 1"}, set()),
        ("S(=O)(=O)N", {"S=O bonds >= 2", "N-S bonds >= 1", "S atoms of degree >=3 >= 1"}, set()),
        ("[+;N]", {"N atoms >= 1"}, set()),
        ("*~*", set(), {"C atoms >= 2"}),
    ],
)
def test_smarts_features(smarts, wanted, not_wanted):
    got = named(F.query_features(Chem.MolFromSmarts(smarts)))
    assert wanted <= got
    assert not (not_wanted & got)


@pytest.mark.parametrize(
    ("smiles", "wanted", "not_wanted"),
    [
        # atoms from SMILES match whatever their aromaticity, bonds only bonds of their type
        ("c1ccccc1", {"aromatic bonds >= 6", "C atoms >= 6"}, {"aromatic C atoms >= 1"}),
        ("CC(=O)[O-]", {"C=O bonds >= 1", "C-O single bonds >= 1"}, {"H atoms on N and O >= 1"}),
        ("C=C", {"C=C bonds >= 1"}, {"aromatic bonds >= 1"}),
        ("[NH4+]", {"N atoms >= 1"}, {"H atoms on N and O >= 1"}),  # SMILES Hs are not matched
        ("*", set(), {"C atoms >= 2"}),
    ],
)
def test_smiles_features(smiles, wanted, not_wanted):
    got = named(F.query_features(Chem.MolFromSmiles(smiles)))
    assert wanted <= got
    assert not (not_wanted & got)


def test_fast_and_slow_molecule_paths_agree(nci):
    odd = [
        "[NH3]->[Cu]",
        "[Cu]<-[NH3]",
        "C[2H]",
        "[H]C([H])([H])[H]",
        "[13CH3]C(=O)[O-].[Na+]",
        "C*",
        "[C-]#[O+]",
        "C$C",
        "Cl[Pt](Cl)([NH3])[NH3]",
        "C" * 1100,
    ]
    mols = nci[::2] + [Chem.AddHs(m) for m in nci[:200]] + [Chem.MolFromSmiles(s) for s in odd]
    zero = Chem.RWMol(Chem.MolFromSmiles("CC(=O)O.[Na]"))
    zero.AddBond(3, 4, Chem.BondType.ZERO)
    zero = zero.GetMol()
    Chem.SanitizeMol(zero)
    mols.append(zero)
    for mol in mols:
        assert F.molecule_features(mol) == F._bits(F.molecule_counts(mol, slow=True))
    assert F._facts_fast(mols[-1]) is None and F._facts_fast(mols[-2]) is None


def unsound(queries, molecules):
    """(query, molecule) pairs the screen rejects though RDKit finds a match; the number of
    pairs rejected."""
    violations = []
    rejected = 0
    for group, text, query in queries:
        need = frozenset(F.query_features(query))
        for mol, bits in molecules:
            if not need <= bits:
                rejected += 1
                if mol.HasSubstructMatch(query):
                    violations.append((group, text, Chem.MolToSmiles(mol)))
    return violations, rejected


def test_no_molecule_containing_a_query_lacks_its_bits(molecules, queries):
    """Soundness: for every pair the screen rejects, RDKit finds no match. (PAINS as written
    asks for explicit H atoms, which these molecules do not have: see the next test.)"""
    queries = [q for q in queries if q[0] != "PAINS"]
    assert len(queries) >= 1300
    violations, rejected = unsound(queries, molecules)
    assert violations == []
    assert rejected > 0.8 * len(queries) * len(molecules)


def test_explicit_h_queries_on_molecules_with_h_atoms(nci, queries):
    """Queries with H atoms ([#1]) match only molecules with H atoms: PAINS as written against
    molecules with all their Hs as atoms."""
    mols = [Chem.AddHs(m) for m in nci[:2000:20]]
    molecules = [(m, frozenset(F.molecule_features(m))) for m in mols]
    pains = [q for q in queries if q[0] in ("PAINS", "hcount")]
    violations, _ = unsound(pains, molecules)
    assert violations == []
    assert sum(m.HasSubstructMatch(q) for _, _, q in pains for m in mols) > 0


# fmt: off
PRIMITIVES = (
    "#6", "#7", "#8", "#16", "#9", "#17", "#1", "#15", "#5", "C", "c", "N", "n", "O", "o", "S",
    "s", "Cl", "Br", "P", "a", "A", "*", "H0", "H1", "H2", "H3", "!H0", "D1", "D2", "D3", "D4",
    "X1", "X2", "X3", "X4", "R", "R0", "R1", "R2", "r5", "r6", "r3", "x2", "x0", "+0", "+", "-",
    "+1", "-1", "v3", "v4", "h", "z1", "Z1", "^2", "^3", "13*", "2*", "$(C=O)", "$(*~N)",
    "$([#6]-[#8])", "$(c)", "$(*=*)", "$([OH])", "$(N(C)C)", "$(*@*)", "$([#7;R])", "$(C#N)",
)
# fmt: on
BONDS = ("", "", "", "-", "=", "#", ":", "~", "@", "!-", "-,=", "=,:", "!@", "-&!@", "=&@", "!:")


def random_smarts(rng):
    def atom():
        prims = [rng.choice(PRIMITIVES) for _ in range(rng.choice((1, 1, 1, 2, 2, 3)))]
        prims = ["!" + p if rng.random() < 0.15 else p for p in prims]
        ops = [rng.choice(("&", ",", ",", ";", "")) for _ in prims[1:]]
        return "[" + prims[0] + "".join(o + p for o, p in zip(ops, prims[1:])) + "]"

    n = rng.randint(1, 6)
    text = atom()
    for i in range(1, n):
        bond = rng.choice(BONDS)
        text += f"({bond}{atom()})" if rng.random() < 0.2 else bond + atom()
        if i == 2 and n > 3 and rng.random() < 0.3:
            text += "1"
            n = -1  # close the ring at the end
    return text + (rng.choice(BONDS) + atom() + "1" if n == -1 else "")


def test_random_smarts(nci):
    """Random SMARTS (AND, OR, NOT, recursion, rings, H atoms) against molecules with and without
    H atoms: no match the screen rejects."""
    import random

    rng = random.Random(20261)
    mols = nci[:2000:8] + [Chem.AddHs(m) for m in nci[:2000:80]]
    molecules = [(m, frozenset(F.molecule_features(m))) for m in mols]
    queries = []
    while len(queries) < 300:
        text = random_smarts(rng)
        query = Chem.MolFromSmarts(text)
        if query is not None:
            queries.append(("random", text, query))
    violations, _ = unsound(queries, molecules)
    assert violations == []
    hits = sum(m.HasSubstructMatch(q) for _, _, q in queries for m, _ in molecules)
    assert hits > 5000
    for _, text, query in queries:
        if F.always_false(query) is not None:
            assert not any(m.HasSubstructMatch(query) for m in mols), text


def _counts_counter_by_counter(atoms, bonds):
    """The reference: every counter tested on its own against every atom and bond (what
    `features._counts_of` computes with its counters grouped)."""
    counts = dict.fromkeys(range(len(F._COUNTERS)), 0)
    live = [not F._is_bottom(b) for b, _ in atoms]
    for (box, _), ok in zip(atoms, live):
        if not ok:
            continue
        for ci in F._ATOM_COUNTERS:
            elem, arom, deg = F._COUNTERS[ci][2]
            if F._atom_fits(box, elem, arom) and F._subset(box.get("deg", F._ALL), deg):
                counts[ci] += 1
        if F._subset(box.get("elem", F._ALL), F._fin(7, 8)):
            counts[F._NHOH] += F._min_hs(box)
    for box, i, j in bonds:
        if F._is_bottom(box) or not (live[i] and live[j]):
            continue
        for ci in F._BOND_COUNTERS:
            ctypes, (e1, e2) = F._COUNTERS[ci][2]
            if not F._subset(box.get("type", F._ALL), ctypes):
                continue
            a, b = atoms[i][0], atoms[j][0]
            if (F._atom_fits(a, *e1) and F._atom_fits(b, *e2)) or (
                F._atom_fits(a, *e2) and F._atom_fits(b, *e1)
            ):
                counts[ci] += 1
    for (_, req), ok in zip(atoms, live):
        if ok:
            counts = F._req_and(counts, req)
    return counts


def test_grouped_counts_equal_counter_by_counter(nci, queries):
    """The query counts, counters tested a group at a time, equal the counter-by-counter
    reference on every query and on NCI molecules read as SMILES and as SMARTS."""
    mols = [q for _, _, q in queries]
    for m in nci[:600:2]:
        mols.append(m)
        mols.append(Chem.MolFromSmarts(Chem.MolToSmiles(m)))
    for m in mols:
        atoms, bonds = F.analyze(m)
        assert F._counts_of(atoms, bonds) == _counts_counter_by_counter(atoms, bonds)


def test_always_false(molecules, queries):
    """Every query flagged as never matching matches none of the molecules; the contradictory
    ones are flagged, and those that match something are not."""
    flagged = {text for _, text, query in queries if F.always_false(query) is not None}
    never = {text for group, text, _ in queries if group == "never"}
    assert never <= flagged
    for _, text, query in queries:
        if text in flagged:
            assert not any(mol.HasSubstructMatch(query) for mol, _ in molecules), text
    for text in ("[C&N]", "[!*]", "[#6;#7]", "[+;-]", "[D1](C)C", "C!~C", "[$([C&N])]"):
        assert F.always_false(Chem.MolFromSmarts(text)) is not None
    for text in ("[C,N]", "[*]", "[#6;!#7]", "[+,-]", "[D3](C)C", "C~C", "[$([C,N])]"):
        assert F.always_false(Chem.MolFromSmarts(text)) is None
    assert F.always_false(Chem.MolFromSmiles("CC(=O)O")) is None


def test_screen_narrows(molecules, queries):
    """The screen alone passes few molecules for functional-group SMARTS."""
    pairs = passed = 0
    for group, _, query in queries:
        if group == "FunctionalGroups":
            need = frozenset(F.query_features(query))
            pairs += len(molecules)
            passed += sum(need <= bits for _, bits in molecules)
    assert passed < 0.2 * pairs


def test_stats_script(capsys, tmp_path):
    smi = tmp_path / "few.smi"
    smi.write_text("".join(line + "\n" for line in NCI.read_text().splitlines()[:40]))
    F._stats(["--stats", str(smi), "--queries", str(QUERIES), "--limit", "40"])
    out = capsys.readouterr().out
    assert "40 molecules" in out and "FunctionalGroups:" in out
    assert "the feature screen passes" in out
