"""Similarity search through Python and the CLI: hits and scores equal RDKit's
BulkTanimotoSimilarity on the bundled real data, with the documented tie rule (score
descending, then store position ascending), on the one store `molsift ingest` writes (format
version 2: compressed planes, SMILES order); a version-1 store is refused in one line."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from rdkit import Chem, DataStructs
from rdkit.Chem import rdFingerprintGenerator

import molsift

QUERIES = ["c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "CCN(CC)CC", "O=C(O)c1ccccc1O", "Clc1ccc(Cl)cc1"]


@pytest.fixture(scope="module")
def store(tmp_path_factory, bundled_smi):
    """The bundled data as ingest writes it (the one store, format version 2)."""
    out = tmp_path_factory.mktemp("search") / "nci.store"
    molsift.ingest(bundled_smi, out, workers=2, progress=False)
    store = molsift.open_store(out)
    assert store.manifest["format_version"] == 2
    return store


@pytest.fixture(scope="module")
def rdkit_fps(store):
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    return gen, [gen.GetFingerprint(Chem.MolFromSmiles(s)) for s in store.smiles]


def rdkit_hits(rdkit_fps, smiles, threshold=None, k=None):
    gen, fps = rdkit_fps
    scores = np.array(
        DataStructs.BulkTanimotoSimilarity(gen.GetFingerprint(Chem.MolFromSmiles(smiles)), fps)
    )
    order = np.lexsort((np.arange(len(scores)), -scores))  # score desc, then index asc
    if threshold is not None:
        order = order[scores[order] >= threshold]
    if k is not None:
        order = order[:k]
    return order, scores[order]


def test_store_has_its_column_index(store):
    assert store.has_column_index
    assert not store._searcher().index_built_in_memory


@pytest.mark.parametrize("threshold", [0.0, 0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0])
def test_threshold_hits_equal_rdkit(store, rdkit_fps, threshold):
    for q in QUERIES:
        hits = store.search(q, threshold=threshold)
        idx, scores = rdkit_hits(rdkit_fps, q, threshold=threshold)
        assert hits.indices.tolist() == idx.tolist(), (q, threshold)
        assert hits.scores.tolist() == scores.tolist()


@pytest.mark.parametrize("k", [1, 3, 10, 100, 10_000])
def test_top_k_equal_rdkit(store, rdkit_fps, k):
    for q in QUERIES:
        hits = store.search(q, k=k)
        idx, scores = rdkit_hits(rdkit_fps, q, k=k)
        assert hits.indices.tolist() == idx.tolist(), (q, k)
        assert hits.scores.tolist() == scores.tolist()
    assert len(store.search(QUERIES[0], k=10_000)) == len(store)  # k larger than the store


def test_threshold_and_k_together_and_batch(store, rdkit_fps):
    batch = store.search_batch(QUERIES, threshold=0.3, k=5, threads=2)
    for q, hits in zip(QUERIES, batch):
        idx, scores = rdkit_hits(rdkit_fps, q, threshold=0.3, k=5)
        assert hits.indices.tolist() == idx.tolist()
        assert hits.scores.tolist() == scores.tolist()


def test_empty_result_and_zero_bit_query(store):
    assert len(store.search("CC(C)(C)C(C)(C)C(C)(C)C(C)(C)C", threshold=0.9)) == 0
    hits = store.search([], threshold=0.01)
    assert len(hits) == 0
    hits = store.search([], k=3)
    assert hits.indices.tolist() == [0, 1, 2] and hits.scores.tolist() == [0.0, 0.0, 0.0]


def test_query_forms_agree(store):
    mol = Chem.MolFromSmiles(QUERIES[1])
    a = store.search(QUERIES[1], k=5)
    b = store.search(mol, k=5)
    row = store.fingerprints[int(a.indices[0])]
    c = store.search(np.array(row), k=1)
    assert a.indices.tolist() == b.indices.tolist()
    assert c.scores[0] == 1.0


def test_invalid_query_is_a_clear_error(store):
    with pytest.raises(ValueError, match="invalid query SMILES 'C1CC'"):
        store.search("C1CC", k=3)
    with pytest.raises(ValueError, match="threshold"):
        store.search("CCO")


@pytest.mark.parametrize("n", [-1, 0])
def test_threads_below_1_are_a_clear_error(store, tmp_path, bundled_smi, n):
    """A negative count of threads or workers was the core's OverflowError ("can't convert
    negative int to unsigned"), and 0 ran (on 0 threads, or all cores, by function)."""
    calls = {
        "threads": [
            lambda: store.search("CCO", k=3, threads=n),
            lambda: store.search_batch(["CCO", "c1ccccc1"], k=3, threads=n),
            lambda: store.analogs("CCO", 1, threads=n),
            lambda: molsift.count_records(bundled_smi, threads=n),
        ],
        "workers": [
            lambda: store.lookup(["CCO"], workers=n),
            lambda: store.substructure("c1ccccc1", workers=n),
            lambda: molsift.ingest(bundled_smi, tmp_path / "s", workers=n, progress=False),
            lambda: molsift.index_analogs(tmp_path / "no.store", workers=n),
        ],
    }
    for name, fns in calls.items():
        for fn in fns:
            with pytest.raises(ValueError, match=rf"^{name} must be at least 1, got {n}$"):
                fn()
    assert not (tmp_path / "s").exists()


def test_cli_search_tsv(store, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "molsift", "search", store.path, "-q", QUERIES[1], "-k", "3"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "query_id\ttarget_id\tscore\ttarget_smiles" and len(lines) == 4
    qfile = tmp_path / "q.smi"
    qfile.write_text("\n".join(f"{s} q{i}" for i, s in enumerate(QUERIES)) + "\nC1CC bad\n")
    proc = subprocess.run(
        [sys.executable, "-m", "molsift", "search", store.path, "--queries", qfile, "-t", "0.5"],
        capture_output=True,
        text=True,
    )
    # the other queries are answered; the skipped one makes the exit status 2, as substructure
    # and analogs do
    assert proc.returncode == 2, proc.stderr
    assert "query 'bad' skipped" in proc.stderr
    assert len(proc.stdout.splitlines()) > 1
    proc = subprocess.run(
        [sys.executable, "-m", "molsift", "search", store.path, "-q", "C1CC"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "invalid query SMILES" in proc.stderr
    # one bad -q among others is skipped and named, the others answered (it stopped them all),
    # as substructure and analogs skip one
    proc = subprocess.run(
        [sys.executable, "-m", "molsift", "search", store.path, "-q", "CCO", "-q", "C1CC"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stderr
    assert "query 'q2' skipped: invalid query SMILES 'C1CC'" in proc.stderr
    assert {line.split("\t")[0] for line in proc.stdout.splitlines()[1:]} == {"q1"}


def test_cli_search_refuses_a_version_1_store_in_one_line(tmp_path, bundled_smi):
    from molsift.ingestion import ingest

    v1 = tmp_path / "v1.store"
    ingest(bundled_smi, v1, workers=1, progress=False, version=1)
    proc = subprocess.run(
        [sys.executable, "-m", "molsift", "search", str(v1), "-q", QUERIES[1], "-k", "3"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "version-1 store" in proc.stderr and f"molsift upgrade {v1}" in proc.stderr


def test_write_hits_tsv_parquet_and_stdout(store, tmp_path, capsys):
    """`molsift search`'s output is written by the search module: TSV (file or stdout) or
    Parquet by the file name, the same rows either way."""
    from molsift.search import HIT_COLUMNS, hit_rows, write_hits

    results = store.search_batch(QUERIES[:2], k=3)
    rows = hit_rows(store, ["a", "b"], results)
    assert [r[0] for r in rows] == ["a"] * 3 + ["b"] * 3
    assert rows[0][1:] == (
        store.ids[results[0].indices[0]],
        results[0].scores[0],
        store.smiles[results[0].indices[0]],
    )
    write_hits(rows, tmp_path / "h.tsv")
    write_hits(rows)
    text = (tmp_path / "h.tsv").read_text()
    assert capsys.readouterr().out == text
    lines = [line.split("\t") for line in text.splitlines()]
    assert tuple(lines[0]) == HIT_COLUMNS and len(lines) == 7
    assert lines[1] == [rows[0][0], rows[0][1], f"{rows[0][2]:.6f}", rows[0][3]]
    pq = pytest.importorskip("pyarrow.parquet", reason="scripts/setup.sh installs pyarrow")
    write_hits(rows, tmp_path / "h.parquet")
    write_hits([], tmp_path / "empty.parquet")
    assert [tuple(r.values()) for r in pq.read_table(tmp_path / "h.parquet").to_pylist()] == rows
    assert pq.read_table(tmp_path / "empty.parquet").column_names == list(HIT_COLUMNS)


def test_write_hits_parquet_without_pyarrow_says_so(tmp_path, monkeypatch):
    from molsift.search import write_hits

    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r"Parquet output needs pyarrow \(pip install"):
        write_hits([("q", "t", 1.0, "C")], tmp_path / "h.parquet")
    assert not (tmp_path / "h.parquet").exists()


def test_the_apis_missing_threshold_and_k_names_its_own_arguments(store):
    """The Python API's error names its keywords, not the command line's -t and -k."""
    with pytest.raises(ValueError, match=r"threshold=.*k=") as e:
        store.search("CCO")
    assert "-t" not in str(e.value) and "-k" not in str(e.value)


def test_wrong_argument_types_are_clear_errors_naming_the_argument(store):
    """A query, k, threshold or index of the wrong type was an obscure error from deep inside
    ("'int' object is not iterable", "slice indices must be integers", OverflowError), or a
    silent wrong answer: search_batch("CCO") searched "C", "C", "O"; lookup_ids("12") looked up
    "1" and "2"; a packed row of the wrong length was read as a shorter fingerprint."""
    for bad, name in [(5, "int"), (None, "NoneType"), (b"CCO", "bytes")]:
        with pytest.raises(TypeError, match=f"^query must be a SMILES.*not {name}$"):
            store.search(bad, k=1)
    with pytest.raises(ValueError, match=r"^on-bit -1 is negative$"):
        store.search([-1, 3], k=1)
    with pytest.raises(ValueError, match=r"has 32 uint64 words, got shape \(16,\)"):
        store.search(np.zeros(16, dtype=np.uint64), k=1)
    with pytest.raises(TypeError, match=r"^k must be an integer, not float$"):
        store.search("CCO", k=2.5)
    with pytest.raises(TypeError, match=r"^k must be an integer, not bool$"):
        store.search("CCO", k=True)
    with pytest.raises(TypeError, match=r"^threshold must be a number, not str$"):
        store.search("CCO", threshold="0.5")
    assert len(store.search("CCO", k=np.int64(2))) == 2
    with pytest.raises(TypeError, match="not one SMILES: use search"):
        store.search_batch("CCO", k=1)
    for bad in (None, 5):
        with pytest.raises(TypeError, match=r"^query must be a SMILES or SMARTS string"):
            store.substructure(bad)
        with pytest.raises(TypeError, match=r"^query must be a SMILES or SMARTS string"):
            store.iter_substructure(bad)
    with pytest.raises(TypeError, match=r"^max_hits must be an integer or None, not float$"):
        store.substructure("c1ccccc1", max_hits=2.5)
    one = store.ids[7]
    assert store.lookup_ids(one).tolist() == store.lookup_ids([one]).tolist() == [7]
    n = len(store)
    with pytest.raises(IndexError, match=f"^index {-n - 1} out of range"):
        store.smiles[-n - 1]
    with pytest.raises(TypeError, match=r"^store indices must be integers or slices, not float$"):
        store.smiles[1.0]
    assert store.smiles[np.int64(3)] == store.smiles[3]
    for threads, name in (("2", "str"), (2.5, "float"), (True, "bool")):
        with pytest.raises(TypeError, match=f"^threads must be a whole number or None, not {name}"):
            store.search_batch(["CCO"], k=1, threads=threads)
    assert len(store.search_batch(["CCO"], k=1, threads=np.int64(1))[0]) == 1
