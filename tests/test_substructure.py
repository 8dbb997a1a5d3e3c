"""Substructure search (`Store.substructure`, `Store.iter_substructure`, `molsift substructure`):
hits equal RDKit's `HasSubstructMatch` over the store's canonical SMILES, in store order, for
every query of tests/data/substructure/queries.tsv (functional groups, PAINS, ring systems,
recursive SMARTS, charges, isotopes, H counts, ring primitives, stereo) on the bundled NCI
molecules and on a small store of stereo, isotope and salt molecules; `chirality`, `max_hits`,
streaming and `workers`; the CLI's TSV, count and Parquet output, query files (SMILES, CSV,
gzip; bad records rejected by line) and its errors; the store without a substructure index;
a version-1 store refused.

The reference is the live RDKit loop of the specification: a query is read with
`Chem.MolFromSmiles` unless `smarts=True` or it does not parse as SMILES (then
`Chem.MolFromSmarts`); hits are `[i for i, smi in enumerate(store.smiles) if
Chem.MolFromSmiles(smi).HasSubstructMatch(q, useChirality=chirality)]`. expected_nci.tsv (counts
computed once) is only a sanity anchor for that loop."""

from __future__ import annotations

import csv
import gzip
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rdkit import Chem, RDLogger, rdBase

import molsift

RDLogger.DisableLog("rdApp.*")  # the reference parses queries that are not SMILES on purpose

QUERY_DIR = Path(__file__).resolve().parent / "data" / "substructure"


def load_queries() -> dict:
    """queries.tsv as {name: (query text, smarts flag)}, in file order."""
    with open(QUERY_DIR / "queries.tsv", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    return {r["name"]: (r["query"], r["kind"] == "smarts") for r in rows}


QUERIES = load_queries()
STEREO = [name for name in QUERIES if name.startswith("stereo_")]
EVERY_5TH = list(QUERIES)[::5] + STEREO  # the subset run again with workers=2

# Molecules the NCI file lacks: tetrahedral and double-bond stereo, isotopes, salts, an
# explicit hydrogen molecule, a dummy atom, rings NCI has none of.
SPECIAL = """\
C[C@H](N)C(=O)O l_ala
C[C@@H](N)C(=O)O d_ala
CC(N)C(=O)O rac_ala
N[C@@H](Cc1ccccc1)C(=O)O l_phe
OC[C@H](N)C(=O)O l_ser
O=C(O)[C@@H]1CCCN1 l_pro
C[C@H](O)c1ccccc1 s_phenylethanol
C[C@@H](O)c1ccccc1 r_phenylethanol
F/C=C/F e_difluoroethene
F/C=C\\F z_difluoroethene
FC=CF difluoroethene
C/C=C/C e_butene
C/C=C\\C z_butene
OC(=O)/C=C/C(=O)O fumaric_acid
OC(=O)/C=C\\C(=O)O maleic_acid
c1ccccc1/C=C/c1ccccc1 e_stilbene
c1ccccc1/C=C\\c1ccccc1 z_stilbene
O[C@H]1CCCC[C@@H]1O cis_cyclohexanediol
O[C@H]1CCCC[C@H]1O trans_cyclohexanediol
OC1CCCCC1O cyclohexanediol
OC[C@H]1OC(O)[C@H](O)[C@@H](O)[C@@H]1O glucose
C[C@H]1CC[C@@H](C)CC1 dimethylcyclohexane
[2H]C([2H])([2H])Cl trideuteriochloromethane
[13CH4] c13_methane
[13CH3]C(=O)O c13_acetic_acid
[14cH]1ccccc1 c14_benzene
[3H]C tritiomethane
[125I]c1ccccc1 i125_iodobenzene
[18F]c1ccc(C)cc1 f18_fluorotoluene
[Na+].[Cl-] sodium_chloride
CC(=O)[O-].[Na+] sodium_acetate
C[NH3+].[Cl-] methylammonium_chloride
C[N+](C)(C)C.[Br-] tetramethylammonium_bromide
[O-][n+]1ccccc1 pyridine_n_oxide
O=[N+]([O-])c1ccccc1 nitrobenzene
[NH4+].[Cl-] ammonium_chloride
[Ca+2].[O-]C(=O)C.[O-]C(=O)C calcium_acetate
[H][H] dihydrogen
*c1ccccc1 dummy_phenyl
C1CCCCCCCCCCC1 cyclododecane
C1CCC2(C1)CCCCC2 spirodecane
C1C2CC3CC1CC(C2)C3 adamantane
C=C=O ketene
"""


def parse_query(text: str, smarts: bool):
    """The query molecule as molsift reads it: SMILES unless `smarts` or it does not parse as
    SMILES, then SMARTS."""
    mol = None if smarts else Chem.MolFromSmiles(text)
    return mol if mol is not None else Chem.MolFromSmarts(text)


class Reference:
    """The brute-force RDKit loop over a store's molecules (each canonical SMILES parsed once),
    its answers cached by (query, smarts, chirality)."""

    def __init__(self, store):
        self.mols = [Chem.MolFromSmiles(s) for s in store.smiles]
        assert None not in self.mols, "a stored canonical SMILES that RDKit does not read back"
        self._cache: dict = {}

    def hits(self, text: str, smarts: bool = False, chirality: bool = False) -> list:
        key = (text, smarts, chirality)
        if key not in self._cache:
            q = parse_query(text, smarts)
            assert q is not None and q.GetNumAtoms(), text
            self._cache[key] = [
                i for i, m in enumerate(self.mols) if m.HasSubstructMatch(q, useChirality=chirality)
            ]
        return self._cache[key]


@pytest.fixture(scope="module")
def nci(tmp_path_factory, bundled_smi):
    out = tmp_path_factory.mktemp("substructure") / "nci.store"
    molsift.ingest(bundled_smi, out, workers=2, analogs=False, progress=False)
    return molsift.open_store(out)


@pytest.fixture(scope="module")
def nci_ref(nci):
    return Reference(nci)


@pytest.fixture(scope="module")
def special(tmp_path_factory):
    work = tmp_path_factory.mktemp("substructure-special")
    (work / "special.smi").write_text(SPECIAL)
    out = work / "special.store"
    molsift.ingest(work / "special.smi", out, workers=1, analogs=False, progress=False)
    return molsift.open_store(out)


@pytest.fixture(scope="module")
def special_ref(special):
    return Reference(special)


def cli(*args, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "molsift", "substructure", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def tsv(text: str) -> list:
    return [line.split("\t") for line in text.splitlines()]


def hit_rows(store, label: str, positions) -> list:
    """The CLI's TSV rows for one query's hits: query, position, id, smiles."""
    return [[label, str(int(p)), store.ids[int(p)], store.smiles[int(p)]] for p in positions]


# -- the query set itself ----------------------------------------------------------------------


def test_query_set_is_well_formed():
    assert len(QUERIES) >= 220
    for name, (text, smarts) in QUERIES.items():
        assert re.fullmatch(r"[A-Za-z0-9_]+", name), name
        mol = Chem.MolFromSmarts(text) if smarts else Chem.MolFromSmiles(text)
        assert mol is not None and mol.GetNumAtoms() > 0, (name, text)
    with open(QUERY_DIR / "queries.tsv") as fh:
        assert fh.readline() == "name\tkind\tquery\n"
    recursive = [n for n, (t, s) in QUERIES.items() if s and "$(" in t]
    assert len(recursive) >= 10 and len(STEREO) >= 5


def test_reference_loop_agrees_with_expected_counts(nci, nci_ref):
    """The anchor: the live loop's counts equal those recorded in expected_nci.tsv (when the
    same RDKit computes them), and the set holds a query matching every molecule and one
    matching none."""
    with open(QUERY_DIR / "expected_nci.tsv") as fh:
        first = fh.readline()
        rows = list(csv.DictReader(fh, delimiter="\t"))
    assert [r["name"] for r in rows] == list(QUERIES)
    counts = {r["name"]: int(r["count"]) for r in rows}
    assert max(counts.values()) == len(nci) and min(counts.values()) == 0
    version = re.match(r"# RDKit (\S+):", first).group(1)
    if version != rdBase.rdkitVersion:
        pytest.skip(
            f"expected_nci.tsv was computed by RDKit {version}, this is {rdBase.rdkitVersion}"
        )
    for r in rows:
        text, smarts = QUERIES[r["name"]]
        assert len(nci_ref.hits(text, smarts)) == counts[r["name"]], r["name"]
        if r["name"] in STEREO:
            assert len(nci_ref.hits(text, smarts, True)) == int(r["count_chirality"]), r["name"]


# -- (a) every query equals the RDKit loop ------------------------------------------------------


@pytest.mark.parametrize("name", list(QUERIES))
def test_every_query_equals_rdkit(nci, nci_ref, name):
    text, smarts = QUERIES[name]
    hits = nci.substructure(text, smarts=smarts)
    assert isinstance(hits, np.ndarray) and hits.dtype == np.int64
    assert hits.tolist() == nci_ref.hits(text, smarts), (name, text)


def test_subset_with_two_workers_equals_rdkit(nci, nci_ref):
    wrong = []
    for name in EVERY_5TH:
        text, smarts = QUERIES[name]
        if nci.substructure(text, smarts=smarts, workers=2).tolist() != nci_ref.hits(text, smarts):
            wrong.append(name)
    assert wrong == []


# Atoms with several recursive SMARTS, negated or nested: each `$()` of the graph matcher's
# program must be the one RDKit pairs with that leaf of the atom's query tree.
RECURSIVE_ORDER = [
    "[$(C=O);!$(CN)]",
    "[!$(CN);$(C=O)]",
    "[$([#6]~[#7]),$([#6]~[#8]);!$([#6]~[#16])]",
    "[!$(*=O);$(*~[#7]);$(*@*)]",
    "[$([CX3](=O)[OX2H1]),$([CX3](=O)[OX1-])]",
    "[$(a:a:[$(a~[#7])])]",
    "[!$([#6;$(C=O)]);$(*~*~*)]",
    "C[$(N(C)C);!$(NC=O)]",
    "[$(c1ccccc1);!$(c[N+](=O)[O-])]~*",
]


@pytest.mark.parametrize("text", RECURSIVE_ORDER)
def test_recursive_smarts_order_on_the_graph_matcher(nci, nci_ref, text):
    from molsift.substructure import last_stats

    assert nci.substructure(text, smarts=True).tolist() == nci_ref.hits(text, True)
    assert last_stats()["form"] == "graph"


def test_the_graph_matcher_takes_every_query_but_chirality(nci):
    """Every query of the set compiles for the graph matcher (so the tests above test it), and
    chirality goes to RDKit."""
    from molsift.substructure import last_stats

    for name, (text, smarts) in QUERIES.items():
        nci.substructure(text, smarts=smarts, max_hits=1)
        stats = last_stats()
        assert stats["form"] == "graph" or stats["always_false"], name
    nci.substructure("C[C@H](N)C(=O)O", chirality=True, max_hits=1)
    assert last_stats()["form"] != "graph"


def test_every_query_on_stereo_isotope_salt_store(special, special_ref):
    """The molecules NCI lacks, every query, with and without chirality, 1 and 2 workers."""
    assert len(special) == len(SPECIAL.splitlines())
    wrong = []
    for name, (text, smarts) in QUERIES.items():
        for chirality in (False, True):
            want = special_ref.hits(text, smarts, chirality)
            for workers in (None, 2):
                got = special.substructure(
                    text, smarts=smarts, chirality=chirality, workers=workers
                )
                if got.tolist() != want:
                    wrong.append((name, chirality, workers))
    assert wrong == []
    # the special store does exercise what NCI cannot
    n = special_ref.hits
    assert n("[2H]", True) and n("[13C]", True) and n("[125I]", True) and n("[Cl-]", True)
    assert n("[2H]") == []  # a lone SMILES [2H] is a radical H atom: it matches no atom here
    assert n("*") == [special.smiles.index("*c1ccccc1")]  # a SMILES `*` matches dummy atoms only


def test_query_text_fallback_and_smiles_versus_smarts(nci, nci_ref):
    """smarts=False reads SMILES first: SMARTS-only text falls back to SMARTS; text valid as both
    can mean different things."""
    for text in ["[C;R2]", "[$(C=O)N]", "[nH]", "c1cccc1", "[r5;#7]"]:
        assert Chem.MolFromSmiles(text) is None
        assert nci.substructure(text).tolist() == nci_ref.hits(text, True), text
    assert nci.substructure("*").tolist() == []  # SMILES: a dummy atom
    assert nci.substructure("*", smarts=True).tolist() == list(range(len(nci)))
    benzene = nci_ref.hits("c1ccccc1")
    assert benzene and nci.substructure("C1=CC=CC=C1").tolist() == benzene  # aromatized
    assert nci.substructure("C1=CC=CC=C1", smarts=True).tolist() == []  # aliphatic C


# -- (b) chirality ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", STEREO)
def test_chirality_equals_rdkit(nci, nci_ref, special, special_ref, name):
    text, smarts = QUERIES[name]
    assert nci.substructure(text, smarts=smarts, chirality=True).tolist() == nci_ref.hits(
        text, smarts, True
    )
    got = special.substructure(text, smarts=smarts, chirality=True).tolist()
    assert got == special_ref.hits(text, smarts, True)


def test_chirality_changes_the_hits(special, special_ref):
    """On molecules with stereo, chirality=True separates what chirality=False does not."""
    ala = special.substructure("C[C@H](N)C(=O)O").tolist()
    l_ala = special.substructure("C[C@H](N)C(=O)O", chirality=True).tolist()
    d_ala = special.substructure("C[C@@H](N)C(=O)O", chirality=True).tolist()
    assert len(ala) > len(l_ala) > 0 and len(d_ala) > 0 and not set(l_ala) & set(d_ala)
    e = special.substructure("F/C=C/F", chirality=True).tolist()
    z = special.substructure("F/C=C\\F", chirality=True).tolist()
    assert e and z and not set(e) & set(z)
    assert e == special_ref.hits("F/C=C/F", False, True)


# -- (c) max_hits and the iterator --------------------------------------------------------------

MAX_HITS_QUERIES = [
    "extreme_any_atom",
    "ring_benzene",
    "recursive_amine_not_amide",
    "fg07_isocyanate",
    "arom_nicotine",
    "pains_ene_rhod_B",
    "extreme_uranium",
]


@pytest.mark.parametrize("workers", [None, 2])
def test_max_hits_is_the_first_n(nci, nci_ref, workers):
    for name in MAX_HITS_QUERIES:
        text, smarts = QUERIES[name]
        full = nci_ref.hits(text, smarts)
        for n in sorted({1, 2, 10, 100, len(full), len(full) + 1} - {0}):
            got = nci.substructure(text, smarts=smarts, max_hits=n, workers=workers)
            assert got.dtype == np.int64 and got.tolist() == full[:n], (name, n)
            streamed = nci.iter_substructure(text, smarts=smarts, max_hits=n, workers=workers)
            assert list(streamed) == full[:n], (name, n)


@pytest.mark.parametrize("workers", [None, 2])
def test_iterator_yields_the_array(nci, workers):
    for name in [*list(QUERIES)[::7], *STEREO[:3]]:
        text, smarts = QUERIES[name]
        streamed = list(nci.iter_substructure(text, smarts=smarts, workers=workers))
        assert all(type(p) is int for p in streamed), name
        assert streamed == nci.substructure(text, smarts=smarts, workers=workers).tolist(), name
    text, smarts = QUERIES["stereo_l_alanine"]
    assert (
        list(nci.iter_substructure(text, chirality=True))
        == nci.substructure(text, chirality=True).tolist()
    )


def test_iterator_streams_and_can_stop_early(nci, nci_ref):
    it = nci.iter_substructure("*", smarts=True, workers=2)
    assert iter(it) is it
    assert [next(it), next(it), next(it)] == [0, 1, 2]
    it.close()  # stopping early is allowed and leaves the store usable
    benzene = nci_ref.hits("c1ccccc1")
    it = nci.iter_substructure("c1ccccc1")
    assert next(it) == benzene[0]
    del it
    assert nci.substructure("c1ccccc1").tolist() == benzene


# -- (d) the command line -----------------------------------------------------------------------

CLI_QUERIES = [
    ("CC(=O)Nc1ccc(O)cc1", False),
    ("c1ccncc1", False),
    ("[$([NX3;H2,H1;!$(NC=O)])]", True),
    ("[r5;#7]", True),
    ("[U]", False),
]


def test_cli_tsv_equals_the_api(nci, tmp_path):
    outputs = {}
    for text, smarts in CLI_QUERIES:
        flags = ["--smarts"] if smarts else []
        outputs[text] = cli(nci.path, "-q", text, *flags).stdout
        rows = tsv(outputs[text])
        assert rows[0] == ["query", "position", "id", "smiles"]
        assert rows[1:] == hit_rows(nci, text, nci.substructure(text, smarts=smarts)), text
    text = CLI_QUERIES[0][0]
    cli(nci.path, "-q", text, "-j", "2", "-o", tmp_path / "hits.tsv")
    assert (tmp_path / "hits.tsv").read_text() == outputs[text]


def test_cli_count_and_chirality(nci, special):
    rows = tsv(cli(nci.path, "-q", "c1ccccc1", "--count").stdout)
    assert rows == [["query", "count"], ["c1ccccc1", str(len(nci.substructure("c1ccccc1")))]]
    text = "C[C@H](N)C(=O)O"
    rows = tsv(cli(special.path, "-q", text, "--chirality", "--count").stdout)
    assert rows[1] == [text, str(len(special.substructure(text, chirality=True)))]
    assert int(rows[1][1]) < len(special.substructure(text))


def write_query_file(path: Path) -> dict:
    """A query file with a comment, a blank line, names and one bad line (physical line 5).
    Returns {label: (text, smarts)} of its good queries, in file order; a query without a name
    is labelled by its line number, as the input model gives ids."""
    path.write_text(
        "# substructure queries\n"
        "c1ccccc1 benzene\n"
        "\n"
        "[$(C=O)N]\tamide_smarts\n"
        "C1CC bad_ring\n"
        "CCN(CC)CC\n"
        "c1ccncc1   pyridine\n"
    )
    return {
        "benzene": ("c1ccccc1", False),
        "amide_smarts": ("[$(C=O)N]", True),  # not SMILES: read as SMARTS without --smarts
        "6": ("CCN(CC)CC", False),
        "pyridine": ("c1ccncc1", False),
    }


def test_cli_query_file_with_a_bad_line(nci, tmp_path):
    good = write_query_file(tmp_path / "queries.txt")
    proc = cli(nci.path, "--queries", tmp_path / "queries.txt", check=False)
    assert proc.returncode == 2, proc.stderr  # EXIT_ERROR: a query failed
    assert "C1CC" in proc.stderr or "bad_ring" in proc.stderr
    assert re.search(r"(line 5\b|:5:)", proc.stderr), proc.stderr
    want = [["query", "position", "id", "smiles"]]
    for label, (text, smarts) in good.items():
        want += hit_rows(nci, label, nci.substructure(text, smarts=smarts))
    assert tsv(proc.stdout) == want
    proc = cli(nci.path, "--queries", tmp_path / "queries.txt", "--count", check=False)
    assert proc.returncode == 2
    assert tsv(proc.stdout) == [["query", "count"]] + [
        [label, str(len(nci.substructure(text, smarts=smarts)))]
        for label, (text, smarts) in good.items()
    ]


def test_cli_bad_byte_in_a_query_file_rejects_its_line_only(nci, tmp_path, bundled_smi):
    """Issue 40, defect 8: one undecodable byte on the last of 600 --queries lines ended the
    run (`'utf-8' codec can't decode byte 0xc3`, exit 2) with no row for the 599 good lines
    and neither the file nor the line named. The bad record is rejected by file and line, the
    rest answered."""
    lines = bundled_smi.read_bytes().splitlines(keepends=True)[:599]
    good, bad = tmp_path / "good.smi", tmp_path / "bad.smi"
    good.write_bytes(b"".join(lines))
    bad.write_bytes(b"".join(lines) + b"\xc3(\n")
    want = cli(nci.path, "--queries", good, "--count", "--max-hits", "1")
    assert len(tsv(want.stdout)) == 600 and "599 of 599 queries answered" in want.stderr
    proc = cli(nci.path, "--queries", bad, "--count", "--max-hits", "1", check=False)
    assert proc.stdout == want.stdout and proc.returncode == 2  # EXIT_ERROR: a query failed
    assert f"{bad}:600: " in proc.stderr and "not valid UTF-8" in proc.stderr
    assert "599 of 600 queries answered" in proc.stderr


def test_cli_query_files_are_read_as_every_verb_reads_them(nci, tmp_path):
    """Issue 40, defect 14: `substructure --queries` took a CSV header for a query and failed
    on gzip (`'utf-8' codec can't decode byte 0x8b`), where `search --queries` reads SMILES,
    CSV, SDF and gzip files. Query files go through the input model: a CSV file (its header
    is no query) and a gzip file give the hits of the same queries; SMARTS pass through."""
    queries = {"phenol": "c1ccccc1O", "amide": "[$(C=O)N]", "indole": "c1ccc2[nH]ccc2c1"}
    want = [["query", "position", "id", "smiles"]]
    for name, text in queries.items():
        want += hit_rows(nci, name, nci.substructure(text))
    as_csv = tmp_path / "q.csv"
    as_csv.write_text("SMILES,name\n" + "".join(f"{t},{n}\n" for n, t in queries.items()))
    as_gzip = tmp_path / "q.smi.gz"
    as_gzip.write_bytes(gzip.compress("".join(f"{t} {n}\n" for n, t in queries.items()).encode()))
    proc = cli(nci.path, "--queries", as_gzip)
    assert tsv(proc.stdout) == want
    proc = cli(nci.path, "--queries", as_csv)  # a CSV file without an id column: line numbers
    names = {name: str(line) for line, name in enumerate(queries, 2)}
    assert tsv(proc.stdout) == [want[0]] + [[names[r[0]], *r[1:]] for r in want[1:]]
    assert "3 of 3 queries answered" in proc.stderr


def test_cli_parquet_has_the_tsv_rows(nci, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="scripts/setup.sh installs pyarrow")
    qfile = tmp_path / "queries.txt"
    qfile.write_text("c1ccccc1O phenol\n[r5;#7] five_ring_n\n[U]\n")
    cli(nci.path, "--queries", qfile, "--smarts", "-o", tmp_path / "h.tsv")
    cli(nci.path, "--queries", qfile, "--smarts", "-o", tmp_path / "h.parquet")
    table = pq.read_table(tmp_path / "h.parquet")
    assert table.column_names == ["query", "position", "id", "smiles"]
    rows = [[r["query"], str(r["position"]), r["id"], r["smiles"]] for r in table.to_pylist()]
    assert rows == tsv((tmp_path / "h.tsv").read_text())[1:]
    assert len(rows) == len(nci.substructure("c1ccccc1O", smarts=True)) + len(
        nci.substructure("[r5;#7]", smarts=True)
    )


def test_cli_max_hits_note(nci, tmp_path):
    qfile = tmp_path / "queries.txt"
    qfile.write_text("c1ccccc1 benzene\n[U] uranium\nCC(=O)Nc1ccc(O)cc1 paracetamol\n")
    proc = cli(nci.path, "--queries", qfile, "--max-hits", "5")
    rows = tsv(proc.stdout)[1:]
    benzene = nci.substructure("c1ccccc1", max_hits=5).tolist()
    assert [r for r in rows if r[0] == "benzene"] == hit_rows(nci, "benzene", benzene)
    assert len([r for r in rows if r[0] == "paracetamol"]) == 5  # 14 hits in NCI
    assert not [r for r in rows if r[0] == "uranium"]
    notes = [line for line in proc.stderr.splitlines() if "stopped at --max-hits 5" in line]
    assert len(notes) == 2, proc.stderr
    proc = cli(nci.path, "-q", "[U]", "--max-hits", "5")
    assert "stopped at --max-hits" not in proc.stderr


# -- (e) bad inputs -----------------------------------------------------------------------------


def test_unparsable_query_is_a_query_error(nci):
    for text, smarts in [("C1CC", False), ("C1CC", True), ("c1ccccc1(", False), ("[C;", True)]:
        with pytest.raises(molsift.QueryError, match=re.escape(text)):
            nci.substructure(text, smarts=smarts)
        with pytest.raises(molsift.QueryError, match=re.escape(text)):
            list(nci.iter_substructure(text, smarts=smarts))


def test_query_without_atoms_is_a_query_error(nci):
    for smarts in (False, True):
        with pytest.raises(molsift.QueryError):
            nci.substructure("", smarts=smarts)
    proc = cli(nci.path, "-q", "", "--smarts", check=False)
    assert proc.returncode == 2 and proc.stderr.strip()  # EXIT_ERROR


def test_always_false_query(nci, nci_ref):
    got = nci.substructure("[C&N]", smarts=True)
    assert got.dtype == np.int64 and got.tolist() == [] == nci_ref.hits("[C&N]", True)
    proc = cli(nci.path, "-q", "[C&N]", "--smarts")
    assert "SMARTS query is always false" in proc.stderr and "[C&N]" in proc.stderr
    assert tsv(proc.stdout) == [["query", "position", "id", "smiles"]]


def test_cli_bad_query_exits_with_exit_error(nci):
    proc = cli(nci.path, "-q", "C1CC", check=False)
    assert proc.returncode == 2 and "C1CC" in proc.stderr  # EXIT_ERROR, as every verb
    assert "Traceback" not in proc.stderr


def test_store_without_the_index(tmp_path, bundled_smi):
    """A store ingested with pattern=False says how to add the index; `molsift index STORE
    --pattern` adds it."""
    small = tmp_path / "small.smi"
    small.write_text("".join(bundled_smi.read_text().splitlines(keepends=True)[:60]))
    out = tmp_path / "small.store"
    molsift.ingest(small, out, workers=1, progress=False, pattern=False, analogs=False)
    store = molsift.open_store(out)
    with pytest.raises(molsift.StoreError, match="molsift index") as err:
        store.substructure("c1ccccc1")
    assert "--pattern" in str(err.value)
    with pytest.raises(molsift.StoreError, match="--pattern"):
        list(store.iter_substructure("c1ccccc1"))
    proc = cli(out, "-q", "c1ccccc1", check=False)
    assert proc.returncode != 0 and "--pattern" in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "molsift", "index", str(out), "--pattern"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    store = molsift.open_store(out)
    assert store.substructure("c1ccccc1").tolist() == Reference(store).hits("c1ccccc1")


def test_a_version_1_store_is_refused(tmp_path, bundled_smi):
    """A version-1 store (molsift before the one store; ingest's staging format), with its
    substructure index, is refused in one line that names `molsift upgrade`: by the API and
    by the command (exit 2), never searched."""
    from molsift import ingestion

    small = tmp_path / "small.smi"
    small.write_text("".join(bundled_smi.read_text().splitlines(keepends=True)[:60]))
    out = tmp_path / "v1.store"
    ingestion.ingest(small, out, workers=1, progress=False, analogs=False, version=1)
    assert (out / "pattern.graphs.bin").exists()  # it has the (version-1) index
    with pytest.raises(molsift.StoreError, match=r"version-1 store.*`molsift upgrade") as err:
        molsift.open_store(out)
    assert "\n" not in str(err.value)
    proc = cli(out, "-q", "c1ccccc1", check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "molsift upgrade" in proc.stderr, proc.stderr


def test_a_query_rdkit_reads_but_cannot_search_is_a_query_error(special):
    """`[#200]` (an atomic number RDKit has no element for) parses as SMARTS, then RDKit's
    pattern fingerprint raised its RuntimeError (`Pre-condition Violation`): a traceback from
    the API and the CLI. It is a QueryError naming the query and RDKit's reason."""
    with pytest.raises(molsift.QueryError, match=r"query '\[#200\]': RDKit cannot search it \("):
        special.substructure("[#200]")
    with pytest.raises(molsift.QueryError) as err:
        special.substructure("C1CC(")
    assert (err.value.query, err.value.reason) == (
        "C1CC(",
        "RDKit cannot parse it as SMILES or SMARTS",
    )
    assert str(err.value) == "query 'C1CC(': RDKit cannot parse it as SMILES or SMARTS"


def test_cli_bad_queries_among_others_are_skipped_by_file_and_line_as_search(special, tmp_path):
    """A bad query of a --queries file was named by its text (`query '[C;': RDKit cannot
    parse it`), where search names the query's id, file and line (`FILE:LINE: query 'ID'
    skipped: reason`), and `[#200]` ended the run with a traceback and no row for the queries
    after it. Each bad one is now skipped and named as search names it, counted in the closing
    line, the others answered; exit status 2, as search's."""
    queries = tmp_path / "q.smi"
    queries.write_text("C(=O)O acid\n[#200] big\n[C; broken\n\nc1ccccc1 benzene\n")
    proc = cli(special.path, "--smarts", "--queries", queries, "--count", check=False)
    assert proc.returncode == 2, proc.stderr
    assert tsv(proc.stdout) == [["query", "count"]] + [
        [name, str(len(special.substructure(text, smarts=True)))]
        for name, text in (("acid", "C(=O)O"), ("benzene", "c1ccccc1"))
    ]
    lines = proc.stderr.splitlines()
    assert lines[:2] == [
        f"molsift: {queries}:2: query 'big' skipped: RDKit cannot search it "
        "(Atomic number not found)",
        f"molsift: {queries}:3: query 'broken' skipped: RDKit cannot parse it as SMARTS",
    ], proc.stderr
    assert lines[2].startswith("molsift: 2 of 4 queries answered, ") and len(lines) == 3
    search = subprocess.run(
        [sys.executable, "-m", "molsift", "search", special.path, "--queries", queries],
        capture_output=True,
        text=True,
    )  # the same form of line from search (which reads every query as SMILES)
    assert search.returncode == 2
    assert f"molsift: {queries}:3: query 'broken' skipped: " in search.stderr
