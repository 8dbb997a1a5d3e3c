"""`molsift analogs` and `store.analogs` (issue 19) on the bundled data: the analog index groups
molecules exactly by skeleton; every hit set and distance equals the brute-force reference
(meet in the middle over the six edits, `analogs/reference.py`) for 30 queries at D = 2, 3 and
4, and under per-kind limits; the ranking, Tanimoto, k, streaming, timeout, bad input, query
files, a damaged index and a version-1 store behave as documented."""

from __future__ import annotations

import gzip
import random
import subprocess
import sys

import numpy as np
import pytest
from rdkit import Chem, DataStructs, RDLogger
from rdkit.Chem import rdFingerprintGenerator

import molsift
from molsift import _core
from molsift.analogs import KINDS, skeleton_of_smiles
from molsift.analogs.reference import distances

RDLogger.DisableLog("rdApp.*")


def analog_files(store) -> dict:
    """The analog index's files of the store at `store`, {name: bytes}."""
    return {p.name: p.read_bytes() for p in sorted(store.glob("analogs.*"))}


@pytest.fixture(scope="module")
def analog_store(bundled_smi, tmp_path_factory):
    """(open store with an analog index, the stored SMILES, each one's skeleton): the store as
    ingest writes it, its analog index the same bytes as `molsift index --analogs` writes."""
    out = tmp_path_factory.mktemp("analogs") / "nci.store"
    report = molsift.ingest(bundled_smi, out, workers=2, progress=False, pattern=False)
    ingested = analog_files(out)
    assert "analogs.json" in ingested and report.analog_bytes == sum(map(len, ingested.values()))
    header, size = _core.build_analog_index(str(out), 2)
    assert size > 0 and '"molsift-analog-index"' in header
    assert analog_files(out) == ingested
    store = molsift.open_store(out)
    smiles = list(store.smiles)
    return store, smiles, [skeleton_of_smiles(s) for s in smiles]


def cert(s):
    return s.certificate


def reference(skeletons, query, max_dist, limits=None, balls=None):
    """{position: distance} of every stored molecule within max_dist of query, by brute force."""
    by_cert = {}
    for s in skeletons:
        by_cert.setdefault(s.certificate, s)
    dist = distances(query, by_cert.values(), max_dist, limits, balls=balls, key=cert)
    return {p: dist[s.certificate] for p, s in enumerate(skeletons) if s.certificate in dist}


def test_index_groups_molecules_exactly_by_skeleton(analog_store):
    store, smiles, skeletons = analog_store
    index = store._core.analog_index()
    header = __import__("json").loads(index.header_json())
    assert header["indexed"] + header["failed"] == header["molecules"] == len(store)
    # RDKit's canonical form of each skeleton, independent of molsift's
    keys = [s.key for s in skeletons]
    assert len(index) == len(set(keys))
    rng = random.Random(3)
    for p in rng.sample(range(len(store)), 40):
        got = store.analogs(smiles[p], max_dist=0)
        assert set(got["position"].tolist()) == {i for i, k in enumerate(keys) if k == keys[p]}
        assert (got["distance"] == 0).all()


def check_rows(store, smiles, query_smiles, got, limits=None):
    """Rank order, each row's edit counts, and Tanimoto against RDKit's own."""
    d, t, pos = got["distance"], got["tanimoto"], got["position"]
    order = np.lexsort((pos, -t, d))
    assert (order == np.arange(len(pos))).all(), "distance, then Tanimoto, then position"
    counts = np.stack([got[k] for k in KINDS], axis=1)
    assert (counts.sum(axis=1) == d).all(), "one path's edits by kind add up to the distance"
    for kind, cap in (limits or {}).items():
        assert (got[kind] <= cap).all()
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    q = gen.GetFingerprint(Chem.MolFromSmiles(query_smiles))
    for p, score in zip(pos.tolist()[:50], t.tolist()[:50]):
        want = DataStructs.TanimotoSimilarity(q, gen.GetFingerprint(Chem.MolFromSmiles(smiles[p])))
        assert score == pytest.approx(want, abs=1e-12)


def test_analogs_equal_the_reference(analog_store):
    """30 bundled molecules as queries: 20 at D = 2, 6 at D = 3 (up to 8 heavy atoms) and 4 at
    D = 4 (up to 6): every molecule within D found at the reference's distance, nothing else."""
    store, smiles, skeletons = analog_store
    rng = random.Random(11)
    pool = [p for p, s in enumerate(skeletons) if s.n >= 3 and s.components == 1]
    small = [p for p in pool if skeletons[p].n <= 8]
    tiny = [p for p in pool if skeletons[p].n <= 6]
    queries = (
        [(p, 2) for p in rng.sample(pool, 20)]
        + [(p, 3) for p in rng.sample(small, 6)]
        + [(p, 4) for p in rng.sample(tiny, 4)]
    )
    balls: dict = {}
    total = 0
    for p, dist in queries:
        want = reference(skeletons, skeletons[p], dist, balls=balls)
        got = store.analogs(smiles[p], max_dist=dist)
        assert not got.partial and got.complete_to == dist
        assert dict(zip(got["position"].tolist(), got["distance"].tolist())) == want, (
            smiles[p],
            dist,
        )
        check_rows(store, smiles, smiles[p], got)
        total += len(got)
    assert total > 100


def test_analogs_keep_per_kind_limits_exactly(analog_store):
    store, smiles, skeletons = analog_store
    rng = random.Random(12)
    pool = [p for p, s in enumerate(skeletons) if 3 <= s.n <= 14 and s.components == 1]
    balls: dict = {}
    for limits in ({"rup": 0}, {"tup": 0, "tdn": 1}, {"lup": 0, "ldn": 0, "rdn": 1}):
        for p in rng.sample(pool, 4):
            want = reference(skeletons, skeletons[p], 2, limits, balls=balls)
            got = store.analogs(smiles[p], max_dist=2, limits=limits)
            assert dict(zip(got["position"].tolist(), got["distance"].tolist())) == want
            check_rows(store, smiles, smiles[p], got, limits)
            # k probes each distance first (walk.rs): the same head of the ranking
            head = store.analogs(smiles[p], max_dist=2, limits=limits, k=3)
            assert head["position"].tolist() == got["position"][:3].tolist()


def test_a_walk_divided_among_threads_gives_every_column_alike(analog_store):
    """Each distance divided among 2, 3 and 5 threads (`threads`): every column (positions,
    distances, Tanimoto, edits by kind, element changes), the distances complete and the
    walk's counts of edits and graphs are the one thread's, with and without k and limits,
    streamed or not, against the reference too."""
    store, smiles, skeletons = analog_store
    rng = random.Random(21)
    pool = [p for p, s in enumerate(skeletons) if 5 <= s.n <= 12 and s.components == 1]
    cases = [(2, None, None), (3, 20, None), (2, None, {"rup": 0, "tdn": 1}), (3, 5, {"lup": 1})]
    balls: dict = {}
    for p in rng.sample(pool, 4):
        for dist, k, limits in cases:
            one = store.analogs(smiles[p], max_dist=dist, k=k, limits=limits)
            if k is None:
                want = reference(skeletons, skeletons[p], dist, limits, balls=balls)
                assert dict(zip(one["position"].tolist(), one["distance"].tolist())) == want
            for threads in (2, 3, 5):
                got = store.analogs(smiles[p], max_dist=dist, k=k, limits=limits, threads=threads)
                for col in one.columns:
                    assert got[col].tolist() == one[col].tolist(), (smiles[p], threads, col)
                assert (got.complete_to, got.partial) == (one.complete_to, one.partial)
                for stat in ("edges", "pruned", "filtered", "nodes", "insertions_skipped"):
                    assert got.stats[stat] == one.stats[stat], (smiles[p], threads, stat)
                levels = list(store.iter_analogs(smiles[p], max_dist=dist, k=k, limits=limits,
                                                 threads=threads))  # fmt: skip
                joined = np.concatenate([lv["position"] for lv in levels])
                assert joined.tolist() == one["position"].tolist()


def test_k_and_streaming_give_the_head_of_the_full_ranking(analog_store):
    store, smiles, skeletons = analog_store
    rng = random.Random(5)
    pool = [p for p, s in enumerate(skeletons) if 6 <= s.n <= 12]
    for p in rng.sample(pool, 5):
        full = store.analogs(smiles[p], max_dist=2)
        for k in (1, 5, 40):
            top = store.analogs(smiles[p], max_dist=2, k=k)
            n = min(k, len(full))
            assert top["position"].tolist() == full["position"][:n].tolist()
            assert top["tanimoto"].tolist() == full["tanimoto"][:n].tolist()
        levels = list(store.iter_analogs(smiles[p], max_dist=2))
        assert [lv.complete_to for lv in levels] == [0, 1, 2]
        for lv in levels:
            assert (lv["distance"] == lv.complete_to).all() and not lv.partial
        joined = np.concatenate([lv["position"] for lv in levels])
        assert joined.tolist() == full["position"].tolist()
        streamed = sum(len(lv) for lv in store.iter_analogs(smiles[p], max_dist=2, k=7))
        assert streamed == min(7, len(full))


def test_timeout_marks_the_result_partial(analog_store):
    store, smiles, skeletons = analog_store
    big = max(range(len(skeletons)), key=lambda p: (skeletons[p].n, -p))
    got = store.analogs(smiles[big], max_dist=6, timeout=0.05)
    assert got.partial and got.complete_to < 6
    exact = store.analogs(smiles[big], max_dist=got.complete_to)
    head = got["distance"] <= got.complete_to
    assert sorted(got["position"][head].tolist()) == sorted(exact["position"].tolist())
    levels = list(store.iter_analogs(smiles[big], max_dist=6, timeout=0.05))
    assert levels[-1].partial and not any(lv.partial for lv in levels[:-1])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"query": "c1ccccc1CC(", "max_dist": 1}, "invalid query SMILES"),
        ({"query": "[Na+].[Cl-]", "max_dist": -1}, "max_dist"),
        ({"query": "CCO", "max_dist": 9}, "max_dist"),
        ({"query": "CCO", "limits": {"xyz": 1}}, "unknown edit kind"),
        ({"query": "CCO", "limits": {"tdn": -1}}, "limit of tdn"),
        ({"query": "CCO", "k": 0}, "k must be"),
        ({"query": "CCO", "timeout": 0}, "timeout"),
        ({"query": "CCO", "timeout": 1e19}, "at most 31536000"),  # was a panic of the core
        ({"query": "CCO", "timeout": float("inf")}, "at most 31536000"),
        ({"query": "[H][H]", "max_dist": 1}, "no heavy atom"),
    ],
)
def test_bad_arguments_are_value_errors(analog_store, kwargs, message):
    store = analog_store[0]
    with pytest.raises(ValueError, match=message):
        store.analogs(**kwargs)


def test_a_store_without_index_and_a_damaged_index_say_so(bundled_smi, tmp_path):
    out = tmp_path / "s.store"
    lines = bundled_smi.read_text().splitlines()[:200]
    (tmp_path / "s.smi").write_text("\n".join(lines) + "\n")
    # ingest builds the index on the way (analogs=True is the default)
    with_index = tmp_path / "a.store"
    report = molsift.ingest(tmp_path / "s.smi", with_index, workers=1, progress=False,
                            pattern=False)  # fmt: skip
    assert report.analog_bytes > 0 and "analog index" in report.summary()
    assert molsift.open_store(with_index).has_analog_index
    molsift.ingest(tmp_path / "s.smi", out, workers=1, progress=False, pattern=False,
                   analogs=False)  # fmt: skip
    assert not molsift.open_store(out).has_analog_index
    with pytest.raises(molsift.StoreError, match="--analogs"):
        molsift.open_store(out).analogs("CCO")
    _core.build_analog_index(str(out), 1)
    assert len(molsift.open_store(out).analogs("c1ccccc1", max_dist=1)) >= 0
    keys = out / "analogs.keys.u128"
    data = bytearray(keys.read_bytes())
    data[5] ^= 0xFF
    keys.write_bytes(bytes(data))
    with pytest.raises(molsift.StoreError, match=r"analogs\.keys\.u128"):
        molsift.open_store(out, verify=False).analogs("CCO")
    # the command: one line naming the file, nothing written before it (not even the header)
    proc = analogs_cli(out, "-q", "CCO", "--dist", "1")
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    assert proc.stderr.count("\n") == 1 and "analogs.keys.u128" in proc.stderr, proc.stderr
    keys.write_bytes(bytes(data[:-16]))
    with pytest.raises(molsift.StoreError, match=r"analogs\.keys\.u128"):
        molsift.open_store(out, verify=False).analogs("CCO")


def test_a_version_1_store_is_refused(bundled_smi, tmp_path):
    """A version-1 store (molsift before the one store; ingest's staging format), with its
    analog index, is refused in one line that names `molsift upgrade`: by the API and by the
    command (exit 2), never searched."""
    from molsift import ingestion

    (tmp_path / "s.smi").write_text("".join(bundled_smi.read_text().splitlines(True)[:60]))
    out = tmp_path / "v1.store"
    ingestion.ingest(tmp_path / "s.smi", out, workers=1, progress=False, pattern=False,
                     version=1)  # fmt: skip
    assert (out / "analogs.json").exists()  # it has the (version-1) index
    with pytest.raises(molsift.StoreError, match=r"version-1 store.*`molsift upgrade") as err:
        molsift.open_store(out)
    assert "\n" not in str(err.value)
    proc = analogs_cli(out, "-q", "c1ccccc1CCO", "--dist", "1")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "molsift upgrade" in proc.stderr, proc.stderr


def test_cli_index_and_analogs(analog_store, tmp_path):
    store, smiles, _skeletons = analog_store
    cmd = [sys.executable, "-m", "molsift"]
    r = subprocess.run(
        [*cmd, "analogs", store.path, "-q", "c1ccccc1CCO", "--dist", "2", "-k", "5", "--rup", "0"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    rows = [line.split("\t") for line in r.stdout.splitlines()]
    assert rows[0] == [
        "query", "distance", "tanimoto", *KINDS, "mut", "position", "id", "smiles"
    ]  # fmt: skip
    want = store.analogs("c1ccccc1CCO", max_dist=2, k=5, limits={"rup": 0})
    assert [int(row[10]) for row in rows[1:]] == want["position"].tolist()
    assert [int(row[9]) for row in rows[1:]] == want["mut"].tolist()
    assert [row[12] for row in rows[1:]] == [smiles[p] for p in want["position"].tolist()]
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "a.parquet"
    r = subprocess.run(
        [*cmd, "analogs", store.path, "-q", "CCO", "-q", "c1ccncc1", "--dist", "1", "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    table = pq.read_table(out).to_pydict()
    n = sum(len(store.analogs(q, max_dist=1)) for q in ("CCO", "c1ccncc1"))
    assert len(table["position"]) == n
    assert str(pq.read_schema(out).field("tanimoto").type) == "double"
    r = subprocess.run(
        [*cmd, "analogs", store.path, "-q", "C1CC", "-q", "CCO", "--dist", "1"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "query 'C1CC' skipped: invalid query SMILES 'C1CC'" in r.stderr
    assert "1 of 2 queries answered" in r.stderr


def analogs_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "molsift", "analogs", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_cli_bad_byte_in_a_query_file_rejects_its_line_only(analog_store, tmp_path, bundled_smi):
    """Issue 40, defect 8: one undecodable byte on the last of 600 --queries lines ended the
    run (`'utf-8' codec can't decode byte 0xc3`, exit 2) with no row for the 599 good lines
    and neither the file nor the line named. The bad record is rejected by file and line, the
    rest answered."""
    store = analog_store[0]
    lines = bundled_smi.read_bytes().splitlines(keepends=True)[:599]
    good, bad = tmp_path / "good.smi", tmp_path / "bad.smi"
    good.write_bytes(b"".join(lines))
    bad.write_bytes(b"".join(lines) + b"\xc3(\n")
    want = analogs_cli(store.path, "--queries", good, "--dist", "0")
    assert want.stdout.count("\n") > 599 and "599 of 599 queries answered" in want.stderr
    proc = analogs_cli(store.path, "--queries", bad, "--dist", "0")
    assert proc.stdout == want.stdout and proc.returncode == 2  # EXIT_ERROR: a query failed
    assert f"{bad}:600: " in proc.stderr and "not valid UTF-8" in proc.stderr
    assert "599 of 600 queries answered" in proc.stderr


def test_cli_query_files_are_read_as_every_verb_reads_them(analog_store, tmp_path):
    """Issue 40, defect 14: `analogs --queries` took a CSV header for a query and failed on
    gzip (`'utf-8' codec can't decode byte 0x8b`), where `search --queries` reads SMILES, CSV,
    SDF and gzip files. Query files go through the input model: the same hits from a SMILES
    file, its gzip form and its CSV form (whose header is no query; ids: line numbers)."""
    store = analog_store[0]
    queries = ["c1ccccc1CCO", "CC(=O)Nc1ccccc1", "c1ccncc1"]
    plain = tmp_path / "q.smi"
    plain.write_text("".join(f"{q} q{i}\n" for i, q in enumerate(queries)))
    want = analogs_cli(store.path, "--queries", plain, "--dist", "1")
    assert want.returncode == 0 and "3 of 3 queries answered" in want.stderr, want.stderr
    as_gzip = tmp_path / "q.smi.gz"
    as_gzip.write_bytes(gzip.compress(plain.read_bytes()))
    proc = analogs_cli(store.path, "--queries", as_gzip, "--dist", "1")
    assert proc.stdout == want.stdout, proc.stderr
    as_csv = tmp_path / "q.csv"
    as_csv.write_text("smiles\n" + "".join(f"{q}\n" for q in queries))
    proc = analogs_cli(store.path, "--queries", as_csv, "--dist", "1")
    assert "3 of 3 queries answered" in proc.stderr, proc.stderr
    rows, want_rows = tsv_rows(proc.stdout), tsv_rows(want.stdout)
    assert [r[1:] for r in rows] == [r[1:] for r in want_rows]  # the same hits, in order
    assert [r[0] for r in rows] == [str(int(r[0][1:]) + 2) for r in want_rows]  # lines 2-4


def tsv_rows(text: str) -> list:
    return [line.split("\t") for line in text.splitlines()[1:]]


def test_in_memory_library_walks_alike(analog_store):
    """The benches' in-memory `SkeletonLibrary` gives the index's hits and distances."""
    store, smiles, skeletons = analog_store
    library = _core.SkeletonLibrary(smiles, threads=2)
    assert len(library) == len(store._core.analog_index())
    rng = random.Random(8)
    for p in rng.sample(range(len(smiles)), 8):
        q = skeletons[p]
        hits, _stats = library.walk(q.n, list(q.bonds), 2)
        got = {pos: d for d, ps in hits for pos in ps}
        want = store.analogs(smiles[p], max_dist=2)
        assert got == dict(zip(want["position"].tolist(), want["distance"].tolist()))
        part, _ = library.walk(q.n, list(q.bonds), 2, stop_after=1)
        assert {d for d, _ in part} == {min(got.values())}


def _anon(n, bonds):
    """An RDKit graph of dummy atoms and single bonds (isomorphisms by substructure match)."""
    mol = Chem.RWMol()
    for _ in range(n):
        atom = Chem.Atom(0)
        atom.SetNoImplicit(True)
        mol.AddAtom(atom)
    for i, j in bonds:
        mol.AddBond(int(i), int(j), Chem.BondType.SINGLE)
    mol.UpdatePropertyCache(strict=False)
    return mol


def _least_changes(n, bonds, origin, query_elements, hit_smiles):
    """By brute force: the least element differences over every isomorphism of the graph
    (n, bonds) onto the hit's skeleton, atom i of the graph carrying query_elements[origin[i]]
    (None: a new atom); None when the graphs are not isomorphic."""
    hit = Chem.MolFromSmiles(hit_smiles)
    heavy = [a for a in hit.GetAtoms() if a.GetAtomicNum() > 1]
    if len(heavy) != n:
        return None
    sk = skeleton_of_smiles(hit_smiles)
    if len(sk.bonds) != len(bonds):
        return None
    symbols = [a.GetSymbol() for a in heavy]
    matches = _anon(sk.n, sk.bonds).GetSubstructMatches(
        _anon(n, bonds), uniquify=False, maxMatches=1_000_000
    )
    best = None
    for m in matches:
        d = sum(
            1 for i, o in enumerate(origin) if o is not None and query_elements[o] != symbols[m[i]]
        )
        best = d if best is None else min(best, d)
    return best


def _one_edit_paths(s):
    """(kind, n, bonds, origin) of every single edit of skeleton s, origin mapping each atom of
    the result to the atom of s it was (None for a new atom), numbered as walk.rs numbers."""
    from molsift.analogs.skeleton import edits

    out = []
    for kind, r in edits(s):
        out.append((kind, r))
    # edits() renumbers as walk.rs does: a deleted atom's successors move down by one, a new
    # atom is last; recover each result's origin from the kind and the atom counts
    paths = []
    adj = s.neighbours
    leaves = [a for a in range(s.n) if len(adj[a]) == 1]
    linkers = [
        a
        for a in range(s.n)
        if len(adj[a]) == 2 and sorted(adj[a])[1] not in adj[sorted(adj[a])[0]]
    ]
    gone = iter(leaves + linkers)
    for kind, r in out:
        if kind in ("tdn", "ldn"):
            a = next(gone)
            origin = [x for x in range(s.n) if x != a]
        elif kind in ("tup", "lup"):
            origin = [*range(s.n), None]
        else:
            origin = list(range(s.n))
        paths.append((kind, r.n, r.bonds, origin))
    return paths


def test_element_changes_equal_brute_force_at_distance_0_and_1(analog_store):
    """`mut` of every hit within one edit equals the least element differences over every
    one-edit path from the query and every isomorphism (RDKit's substructure matches)."""
    store, smiles, skeletons = analog_store
    from molsift.analogs import elements_of

    rng = random.Random(21)
    pool = [p for p, s in enumerate(skeletons) if 4 <= s.n <= 16 and s.components == 1]
    checked = nonzero = 0
    for p in rng.sample(pool, 12):
        q = skeletons[p]
        qe = elements_of(Chem.MolFromSmiles(smiles[p]))
        got = store.analogs(smiles[p], max_dist=1)
        paths = _one_edit_paths(q)
        for pos, d, m in zip(
            got["position"].tolist(), got["distance"].tolist(), got["mut"].tolist()
        ):
            if d == 0:
                want = _least_changes(q.n, q.bonds, list(range(q.n)), qe, smiles[pos])
            else:
                cands = [
                    _least_changes(n, bonds, origin, qe, smiles[pos])
                    for _kind, n, bonds, origin in paths
                    if n == skeletons[pos].n and len(bonds) == len(skeletons[pos].bonds)
                ]
                want = min(c for c in cands if c is not None)
            assert m == want, (smiles[p], smiles[pos], d)
            checked += 1
            nonzero += m > 0
    assert checked > 30 and nonzero > 5


def test_element_changes_are_those_of_a_real_path_at_distance_2(analog_store):
    """At distance 2 `mut` is counted along a path the walk kept: never below the least over
    every two-edit path and isomorphism (brute force), never above the atoms kept, and the
    rows' edit counts are that path's; k and streaming give the same values."""
    store, smiles, skeletons = analog_store
    from molsift.analogs import elements_of

    rng = random.Random(22)
    pool = [p for p, s in enumerate(skeletons) if 4 <= s.n <= 7 and s.components == 1]
    checked = 0
    for p in rng.sample(pool, 3):
        q = skeletons[p]
        qe = elements_of(Chem.MolFromSmiles(smiles[p]))
        got = store.analogs(smiles[p], max_dist=2)
        check_rows(store, smiles, smiles[p], got)
        two = []
        for _k1, n1, b1, o1 in _one_edit_paths(q):
            mid = molsift.analogs.Skeleton(n1, tuple(b1))
            for _k2, n2, b2, o2 in _one_edit_paths(mid):
                two.append((n2, b2, [None if o is None else o1[o] for o in o2]))
        for pos, d, m in zip(
            got["position"].tolist(), got["distance"].tolist(), got["mut"].tolist()
        ):
            if d != 2:
                continue
            t = skeletons[pos]
            cands = [
                _least_changes(n, b, o, qe, smiles[pos])
                for n, b, o in two
                if n == t.n and len(b) == len(t.bonds)
            ]
            least = min(c for c in cands if c is not None)
            assert least <= m <= t.n, (smiles[p], smiles[pos])
            checked += 1
        head = store.analogs(smiles[p], max_dist=2, k=10)
        assert head["mut"].tolist() == got["mut"][:10].tolist()
        streamed = np.concatenate([lv["mut"] for lv in store.iter_analogs(smiles[p], max_dist=2)])
        assert streamed.tolist() == got["mut"].tolist()
    assert checked > 10


def test_cli_timeout_is_checked_once_by_the_library(bundled_smi, tmp_path, monkeypatch, capsys):
    """analogs' --timeout was checked twice, by the command line and by the library's own
    check (two copies of the limit and the message to keep alike). The command line calls the
    library's (`check_timeout`, naming --timeout) before any output: the same one line as
    before, exit status 2, no file written; the library's limit is the command line's."""
    from molsift.analogs import search as library
    from molsift.cli import main

    (tmp_path / "s.smi").write_text("".join(bundled_smi.read_text().splitlines(True)[:60]))
    store = tmp_path / "s.store"
    molsift.ingest(tmp_path / "s.smi", store, workers=1, progress=False, pattern=False)
    out = tmp_path / "hits.tsv"
    said = "molsift: error: --timeout must be a positive number of seconds, at most {} (a year), "
    for given, shown in (("0", "0"), ("-1", "-1"), ("nan", "nan"), ("1e19", "1e+19")):
        proc = analogs_cli(store, "-q", "CCO", "--timeout", given, "-o", out)
        assert proc.returncode == 2 and proc.stdout == "" and not out.exists()
        assert proc.stderr == said.format(31536000) + f"not {shown}\n"
    with pytest.raises(ValueError, match=r"^timeout must be .* not 0$"):  # the API's own name
        molsift.open_store(store).analogs("CCO", timeout=0)
    monkeypatch.setattr(library, "MAX_SECONDS", 10)  # one limit: the library's
    assert main(["analogs", str(store), "-q", "CCO", "--timeout", "20", "-o", str(out)]) == 2
    assert capsys.readouterr().err == said.format(10) + "not 20\n"
    assert not out.exists()
    # --dist likewise: the library's one check, named as the command line names it
    for given in ("9", "-1"):
        proc = analogs_cli(store, "-q", "CCO", "--dist", given, "-o", out)
        assert proc.returncode == 2 and not out.exists()
        assert (
            proc.stderr == f"molsift: error: --dist must be an integer from 0 to 8, not {given}\n"
        )
    monkeypatch.setattr(library, "MAX_DIST", 2)
    assert main(["analogs", str(store), "-q", "CCO", "--dist", "3", "-o", str(out)]) == 2
    assert "--dist must be an integer from 0 to 2, not 3" in capsys.readouterr().err
