"""Store sets (`molsift ingest --shards K`, `molsift.sets`): the bundled data cut into 1, 2, 5
and 7 shards answers every search exactly as the one store built from the same input
(positions, scores, order, tie rule) and as RDKit's brute force; a set with empty shards; a
damaged, missing or swapped shard refused by name; every verb on a set (`index`: refused in one
line saying what to do)."""

from __future__ import annotations

import json
import os
import re
import shutil

import numpy as np
import pytest
from conftest import BUNDLED_SMI, molsift_run
from rdkit import Chem, DataStructs
from rdkit.Chem import rdFingerprintGenerator

import molsift
from molsift.sets import StoreSet

SUBSTRUCTURES = [("c1ccccc1", False), ("C(=O)O", False), ("[#7;R]", True), ("[Cl,Br]", True)]


@pytest.fixture(scope="module")
def one(tmp_path_factory):
    path = tmp_path_factory.mktemp("one") / "one.store"
    molsift.ingest(BUNDLED_SMI, path, workers=1, progress=False)
    return molsift.open_store(path)


@pytest.fixture(scope="module", params=[1, 2, 5, 7])
def sharded(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(f"set{request.param}") / "lib.set"
    molsift.ingest(BUNDLED_SMI, path, workers=1, shards=request.param, progress=False)
    store = molsift.open_store(path)
    assert isinstance(store, StoreSet) and len(store.shards) == request.param
    return store


def _queries(one):
    return [one.smiles[i] for i in range(0, len(one), 499)]


def test_columns_and_counts_are_the_one_stores(one, sharded):
    assert len(sharded) == len(one)
    assert list(sharded.smiles) == list(one.smiles)
    assert list(sharded.ids) == list(one.ids)
    assert sharded.counts == one.counts
    assert sum(len(s) for s in sharded.shards) == len(one)
    picks = [len(one) - 1, 0, 17, 2500, 17]
    assert sharded.smiles.take(picks) == one.smiles.take(picks)
    assert (sharded.fingerprints_at(picks) == one.fingerprints_at(picks)).all()
    on = [3, 64, 1000, 2047]
    assert sharded.tanimoto_at(picks, on).tolist() == one.tanimoto_at(picks, on).tolist()


def test_similarity_equals_the_one_store(one, sharded):
    for q in _queries(one):
        for kw in ({"threshold": 0.3}, {"k": 10}, {"k": 1}, {"threshold": 0.45, "k": 3}):
            a, b = one.search(q, **kw), sharded.search(q, **kw)
            assert a.indices.tolist() == b.indices.tolist(), (q, kw)
            assert a.scores.tolist() == b.scores.tolist(), (q, kw)
    qs = _queries(one)
    # a batch's shards share each query's k-th best (a cell per query): shard after shard on
    # one thread, at once on two; and a batch longer than the cells, in chunks
    for kw in ({"k": 5}, {"k": 1}, {"k": 5, "threshold": 0.45}, {"threshold": 0.45}):
        for threads in (1, 2):
            for a, b in zip(
                one.search_batch(qs, **kw), sharded.search_batch(qs, threads=threads, **kw)
            ):
                assert a.indices.tolist() == b.indices.tolist(), (kw, threads)
                assert a.scores.tolist() == b.scores.tolist(), (kw, threads)
    assert (
        sharded.search(qs[0], k=3, threads=2).indices.tolist()
        == one.search(qs[0], k=3).indices.tolist()
    )


def test_a_batch_longer_than_the_cells_is_searched_in_chunks(one, sharded, monkeypatch):
    from molsift.sets import store as set_store

    monkeypatch.setattr(set_store, "_BAR_CELLS", 3)
    qs = _queries(one)
    assert len(qs) > 3
    want = [(h.indices.tolist(), h.scores.tolist()) for h in one.search_batch(qs, k=4)]
    got = [(h.indices.tolist(), h.scores.tolist()) for h in sharded.search_batch(qs, k=4)]
    assert got == want


def test_similarity_against_rdkit(sharded):
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    mols = [Chem.MolFromSmiles(s) for s in sharded.smiles]
    fps = [gen.GetFingerprint(m) for m in mols]
    q = sharded.smiles[1234]
    sims = DataStructs.BulkTanimotoSimilarity(gen.GetFingerprint(Chem.MolFromSmiles(q)), fps)
    want = sorted(((-s, i) for i, s in enumerate(sims) if s >= 0.4))
    hits = sharded.search(q, threshold=0.4)
    assert hits.indices.tolist() == [i for _, i in want]
    assert np.allclose(hits.scores, [-s for s, _ in want])


def test_substructure_equals_the_one_store_and_rdkit(one, sharded):
    mols = None
    for text, smarts in SUBSTRUCTURES:
        a = one.substructure(text, smarts=smarts, workers=1)
        b = sharded.substructure(text, smarts=smarts, workers=1)
        assert a.tolist() == b.tolist(), text
        for cap in (1, 7, len(a) + 1):
            got = sharded.substructure(text, smarts=smarts, max_hits=cap, workers=1)
            assert got.tolist() == a[:cap].tolist()
        assert list(sharded.iter_substructure(text, smarts=smarts, max_hits=9)) == a[:9].tolist()
        if mols is None:
            mols = [Chem.MolFromSmiles(s) for s in sharded.smiles]
        patt = Chem.MolFromSmarts(text) if smarts else Chem.MolFromSmiles(text)
        assert b.tolist() == [i for i, m in enumerate(mols) if m.HasSubstructMatch(patt)]


def test_analogs_equal_the_one_store(one, sharded):
    for q in _queries(one)[:6]:
        for k in (None, 1, 5, 40):
            a, b = one.analogs(q, max_dist=2, k=k), sharded.analogs(q, max_dist=2, k=k)
            for col in a.columns:
                assert a.columns[col].tolist() == b.columns[col].tolist(), (q, k, col)
            assert (a.complete_to, a.partial) == (b.complete_to, b.partial), (q, k)
        per = [x for x in sharded.iter_analogs(q, max_dist=2, k=12)]
        whole = one.analogs(q, max_dist=2, k=12)
        assert np.concatenate([x["position"] for x in per]).tolist() == whole["position"].tolist()
        assert [x.complete_to for x in per] == list(range(len(per)))


def test_a_set_is_walked_once_over_the_union_of_its_shards(one, sharded):
    """Without MPI a set's analog search is one walk over the union of its shards' indexes
    (`_core.AnalogIndexUnion`), every hit's position in the set: the one store's answers, and
    streamed by distance as the one store's (`iter_analogs`)."""
    from molsift import _core
    from molsift.analogs import search

    assert isinstance(search._index(sharded), _core.AnalogIndexUnion)
    for q in _queries(one)[:4]:
        a, b = one.analogs(q, max_dist=3, k=25), sharded.analogs(q, max_dist=3, k=25)
        c = sharded.analogs(q, max_dist=3, k=25, threads=3)  # each distance on 3 threads
        for col in a.columns:
            assert a.columns[col].tolist() == b.columns[col].tolist(), (q, col)
            assert c.columns[col].tolist() == b.columns[col].tolist(), (q, col)
        assert (a.complete_to, a.partial) == (b.complete_to, b.partial)
        assert b.stats["edges"] == c.stats["edges"] and b.stats["nodes"] == c.stats["nodes"]
        whole = [(x.complete_to, x["position"].tolist()) for x in one.iter_analogs(q, max_dist=2)]
        per = [(x.complete_to, x["position"].tolist()) for x in sharded.iter_analogs(q, max_dist=2)]
        assert per == whole


@pytest.mark.parametrize("union", [True, False])
def test_shard_by_shard_walks_in_step(one, sharded, monkeypatch, union):
    """A set searched shard by shard (as each MPI rank searches its own shards,
    `sets.store.set_analogs`) walks once, distance by distance until the set has k hits
    (`LevelWalk`), not once per distance: over the union of the shards, or (a set too large
    for 32-bit positions, `UNION_MAX`) each shard once, all in step; the one store's hits and
    the same distance complete. Shards walking alone each rank their own best of a distance,
    and the rows past the set's k are dropped before their element changes are computed."""
    from molsift.analogs import search
    from molsift.sets import store as set_store

    if not union:
        monkeypatch.setattr(set_store, "UNION_MAX", 0)
    started = []
    real = search.LevelWalk.__init__

    def counted(self, lib, *args, **kwargs):
        started.append(lib)
        real(self, lib, *args, **kwargs)

    monkeypatch.setattr(search.LevelWalk, "__init__", counted)
    dropped = []  # rows a distance's cut to the set's k left out before their element changes
    real_cut = set_store._InStep._cut

    def cut(self, ranked, keep):
        before = sum(len(r.order) for _, _, r, _ in ranked)
        real_cut(self, ranked, keep)
        dropped.append(before - sum(len(r.order) for _, _, r, _ in ranked))

    monkeypatch.setattr(set_store._InStep, "_cut", cut)
    live = [s for s in sharded.shards if len(s)]
    for q in _queries(one)[:4]:
        for k in (1, 25):
            started.clear()
            a = one.analogs(q, max_dist=3, k=k)
            b = set_store.set_analogs(sharded, q, max_dist=3, k=k)
            for col in a.columns:
                assert a.columns[col].tolist() == b.columns[col].tolist(), (q, k, col)
            assert (a.complete_to, a.partial) == (b.complete_to, b.partial)
            if len(live) == 1:  # one shard: its own walk with k is the set's
                assert started == []
            elif union:
                assert [type(x) for x in started] == [set_store._Shards]
            else:
                assert sorted(map(id, started)) == sorted(map(id, live))
    if not union and len(live) > 1:  # shards walking alone: each keeps its own best k
        assert sum(dropped) > 0, dropped


@pytest.mark.parametrize("union", [True, False])
def test_shard_by_shard_streams_each_distance(one, sharded, monkeypatch, union):
    """A set searched shard by shard (each MPI rank's path: `_stream_in_step`) hands out each
    distance as soon as it is walked, before the walk goes on, and its levels equal the one
    store's `iter_analogs` (hits, order, complete_to, partial), with and without k: over the
    union of the shards, or each shard alone (`UNION_MAX`)."""
    from molsift.analogs import search

    monkeypatch.setattr(search, "_shard_by_shard", lambda store: hasattr(store, "shards"))
    if not union:
        from molsift.sets import store as set_store

        monkeypatch.setattr(set_store, "UNION_MAX", 0)
    released = []
    real = search.LevelWalk.go_on

    def go_on(self, more):
        released.append(more)
        real(self, more)

    monkeypatch.setattr(search.LevelWalk, "go_on", go_on)
    walks = sum(1 for s in sharded.shards if len(s)) if not union else 1

    def levels(store, q, k):
        cols = ("position", "distance", "tanimoto")
        return [(x.complete_to, x.partial, *(x[c].tolist() for c in cols))
                for x in store.iter_analogs(q, max_dist=2, k=k)]  # fmt: skip

    for q in _queries(one)[:3]:
        for k in (None, 1, 25):
            assert levels(sharded, q, k) == levels(one, q, k), (q, k)
        released.clear()
        stream = sharded.iter_analogs(q, max_dist=2)
        first = next(stream)
        assert first.complete_to == 0
        assert released == [True] * walks, "distance 0 handed out once walked, the rest not yet"
        stream.close()


def test_lookup_equals_the_one_store(one, sharded):
    stored = [one.smiles[i] for i in range(0, len(one), 101)]
    randomized = [Chem.MolToSmiles(Chem.MolFromSmiles(s), doRandom=True) for s in stored]
    asked = [*randomized, "CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCl", "O"]
    assert sharded.lookup(asked).tolist() == one.lookup(asked).tolist()
    ids = [*(one.ids[i] for i in range(0, len(one), 97)), "no-such-id"]
    assert sharded.lookup_ids(ids).tolist() == one.lookup_ids(ids).tolist()


def test_empty_shards(tmp_path):
    src = tmp_path / "few.smi"
    src.write_text("CCO a\nCCO b\nCCO c\nc1ccccc1 d\nCCN e\n")
    one = tmp_path / "few.store"
    molsift.ingest(src, one, workers=1, progress=False)
    path = tmp_path / "few.set"
    molsift.ingest(src, path, workers=1, shards=7, progress=False)
    s, o = molsift.open_store(path), molsift.open_store(one)
    sizes = [len(x) for x in s.shards]
    assert sum(sizes) == 5 and 0 in sizes
    assert max(sizes) >= 3  # the three equal SMILES never split
    assert list(s.smiles) == list(o.smiles) and list(s.ids) == list(o.ids)
    assert s.search("CCO", k=10).indices.tolist() == o.search("CCO", k=10).indices.tolist()
    assert s.substructure("C", workers=1).tolist() == o.substructure("C", workers=1).tolist()
    assert (
        s.analogs("CCO", max_dist=2)["position"].tolist()
        == o.analogs("CCO", max_dist=2)["position"].tolist()
    )
    assert (
        s.lookup(["OCC", "c1ccccc1", "CCCC"]).tolist()
        == o.lookup(["OCC", "c1ccccc1", "CCCC"]).tolist()
    )
    assert s.lookup_ids(["c", "e", "x"]).tolist() == o.lookup_ids(["c", "e", "x"]).tolist()


def test_dedupe_list_in_set_positions(tmp_path):
    one, path = tmp_path / "d.store", tmp_path / "d.set"
    molsift.ingest(BUNDLED_SMI, one, workers=1, dedupe=True, progress=False)
    molsift.ingest(BUNDLED_SMI, path, workers=1, dedupe=True, shards=3, progress=False)
    assert (path / "duplicates.tsv").read_text() == (one / "duplicates.tsv").read_text()
    assert molsift.open_store(path).counts == molsift.open_store(one).counts


def test_same_bytes_for_any_worker_count(tmp_path):
    sets = []
    for j in (1, 2):
        p = tmp_path / f"j{j}.set"
        molsift.ingest(BUNDLED_SMI, p, workers=j, shards=3, progress=False)
        sets.append(p)
    for f in sorted(x.relative_to(sets[0]) for x in sets[0].rglob("*") if x.is_file()):
        if f.name in ("manifest.json", "set.json"):
            continue  # provenance says how many workers
        assert (sets[0] / f).read_bytes() == (sets[1] / f).read_bytes(), f


def test_each_shard_merges_its_range_with_dedupe_across_parts(tmp_path):
    """A set's shards merge their own ranges of the workers' runs (no merge of the whole
    library on the root): with `--dedupe` and every molecule's copy in another part, the same
    set file by file for any worker count and split, its molecules, duplicates list and counts
    those of the one store, and the report's counts add up."""
    lines = BUNDLED_SMI.read_bytes().splitlines(keepends=True)
    doubled = tmp_path / "doubled.smi"  # every molecule twice, the copies far apart
    doubled.write_bytes(b"".join(lines[:300] + lines[:300]))
    one = tmp_path / "one.store"
    molsift.ingest(doubled, one, workers=1, dedupe=True, progress=False)
    sets = []
    for workers, slabs in ((1, None), (3, 7)):
        path = tmp_path / f"d{workers}.set"
        report = molsift.ingest(
            doubled, path, workers=workers, slabs=slabs, dedupe=True, shards=4, progress=False
        )
        assert report.dropped == report.duplicates >= 290
        assert report.records_in == report.molecules + report.rejected + report.dropped
        s, o = molsift.open_store(path), molsift.open_store(one)
        assert s.counts == o.counts and len(s) == report.molecules
        assert list(s.smiles) == list(o.smiles) and list(s.ids) == list(o.ids)
        assert (path / "duplicates.tsv").read_text() == (one / "duplicates.tsv").read_text()
        assert not [p for p in path.iterdir() if p.name.startswith(".")]  # merges removed
        sets.append(path)
    for f in sorted(x.relative_to(sets[0]) for x in sets[0].rglob("*") if x.is_file()):
        if f.name not in ("manifest.json", "set.json"):  # provenance says how many workers
            assert (sets[0] / f).read_bytes() == (sets[1] / f).read_bytes(), f


@pytest.mark.parametrize("phase", ["merges", "shards"])
def test_killed_set_ingest_leaves_the_previous_set(tmp_path, phase):
    """kill -9 of `molsift ingest --shards 3 --dedupe --overwrite` while its shards merge their
    ranges (their merges beside the shards) or while the shards are written: the previous set
    stays whole (byte for byte), nothing of the new one opens, and the next run completes
    (sweeping what the killed one left) and gives the set an uninterrupted run gives."""
    import signal
    import subprocess
    import time

    from conftest import molsift_cmd

    out, ref = tmp_path / "s.set", tmp_path / "ref.set"
    molsift.ingest(BUNDLED_SMI, out, workers=1, shards=2, progress=False)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    molsift.ingest(BUNDLED_SMI, ref, workers=2, shards=3, dedupe=True, progress=False)
    args = ["ingest", BUNDLED_SMI, "-o", out, "--shards", "3", "--dedupe", "-j", "2"]
    proc = subprocess.Popen(
        molsift_cmd() + [str(a) for a in [*args, "--overwrite", "-q"]],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip

    def reached() -> bool:
        try:  # the work directory changes under the walk
            for work in tmp_path.glob(".s.set.ingest-*"):
                if phase == "merges" and any(work.rglob(".shard-*.pos.u64")):
                    return True
                if phase == "shards" and any(work.rglob("shard-0000/manifest.json")):
                    return True
        except FileNotFoundError:
            pass
        return False

    end = time.monotonic() + 120
    while not reached() and proc.poll() is None and time.monotonic() < end:
        time.sleep(0.005)
    if proc.poll() is not None:
        pytest.skip(f"the ingest ended before its {phase} were seen")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before, "the previous set changed"
    assert len(molsift.open_store(out)) == len(molsift.open_store(ref)) + molsift.open_store(
        ref
    ).counts.get("dropped", 0)
    done = molsift_run(*args, "--overwrite", "-q", timeout=600)  # takes over the lock too
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.glob(".s.set.*")), "the killed run's work was left"
    for f in sorted(x.relative_to(ref) for x in ref.rglob("*") if x.is_file()):
        if f.name not in ("manifest.json", "set.json"):
            assert (ref / f).read_bytes() == (out / f).read_bytes(), f


def test_ingest_and_info_give_a_set_the_same_size(tmp_path):
    """`molsift ingest --shards K` gave a set's size without the set's own files (rejects.tsv,
    duplicates.tsv beside set.json) and `molsift info SET` with them: both give the whole set,
    in text and in JSON, every file of it but the manifests."""
    lines = BUNDLED_SMI.read_bytes().splitlines(keepends=True)[:400]
    smi = tmp_path / "twice.smi"
    smi.write_bytes(b"".join(lines + lines[:40]))  # copies: the set's duplicates.tsv
    out = tmp_path / "t.set"
    args = ["ingest", smi, "-o", out, "-j", "1", "--shards", "3", "--dedupe"]
    done = molsift_run(*args)
    assert done.returncode == 0, done.stderr
    assert {"rejects.tsv", "duplicates.tsv"} <= {p.name for p in out.iterdir()}
    said = re.search(rf"^store {re.escape(str(out))}: ([\d,]+) bytes,", done.stdout, re.M)
    info = molsift_run("info", out)
    shown = re.search(r"^size +([\d,]+) bytes,", info.stdout, re.M)
    assert said and shown, (done.stdout, info.stdout)
    assert said.group(1) == shown.group(1)
    assert int(said.group(1).replace(",", "")) == _bytes_but_manifests(out)
    as_json = molsift_run(*args, "--overwrite", "--json")
    assert as_json.returncode == 0, as_json.stderr
    info = molsift_run("info", out, "--json")
    on_disk = _bytes_but_manifests(out)
    assert json.loads(as_json.stdout)["store_bytes"] == on_disk
    assert json.loads(info.stdout)["sizes"]["bytes"] == on_disk


def _bytes_but_manifests(path) -> int:
    """The bytes of every file under `path` but the set's and its shards' manifests."""
    manifests = ("manifest.json", "set.json")
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and p.name not in manifests)


@pytest.fixture
def small_set(tmp_path):
    path = tmp_path / "s.set"
    molsift.ingest(BUNDLED_SMI, path, workers=1, shards=3, progress=False)
    return path


def test_damaged_shard_file_refused_by_name(small_set):
    target = small_set / "shard-0001" / "smiles.blocks"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    with pytest.raises(molsift.StoreError, match=r"shard-0001/smiles.blocks"):
        molsift.open_store(small_set, verify=True)
    store = molsift.open_store(small_set, verify=False)
    with pytest.raises(molsift.StoreError, match=r"shard-0001/smiles.blocks"):
        list(store.smiles)


def test_missing_or_swapped_shard_refused_by_name(small_set, tmp_path):
    other = tmp_path / "other.set"
    molsift.ingest(BUNDLED_SMI, other, workers=1, shards=3, dedupe=True, progress=False)
    shutil.rmtree(small_set / "shard-0002")
    shutil.copytree(other / "shard-0002", small_set / "shard-0002")
    with pytest.raises(molsift.StoreError, match=r"shard-0002.*not the shard this set"):
        molsift.open_store(small_set)
    shutil.rmtree(small_set / "shard-0002")
    with pytest.raises(molsift.StoreError, match=r"shard-0002.*missing"):
        molsift.open_store(small_set)


def test_damaged_set_manifest_refused(small_set):
    m = json.loads((small_set / "set.json").read_text())
    m["shards"][0]["molecules"] += 1
    (small_set / "set.json").write_text(json.dumps(m))
    with pytest.raises(molsift.StoreError, match=r"set.json.*checksum"):
        molsift.open_store(small_set)


def test_index_of_a_set_says_what_to_do(small_set):
    """`molsift index SET --analogs` said `not a molsift store (no manifest.json ...)`. A set is
    refused in one line saying that ingest writes its shards' indexes, that a shard indexed
    alone no longer matches set.json, and to ingest again without --no-pattern/--no-analogs;
    nothing is written."""
    before = sorted(p.relative_to(small_set) for p in small_set.rglob("*"))
    for flags in (["--analogs", "-j", "1"], ["--pattern"], []):
        r = molsift_run("index", small_set, *flags)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert r.stderr.startswith(f"molsift: error: {small_set}: a store set: "), r.stderr
        assert "ingest" in r.stderr and "--no-analogs" in r.stderr
        assert "not a molsift store" not in r.stderr
    assert sorted(p.relative_to(small_set) for p in small_set.rglob("*")) == before
    assert not list(small_set.parent.glob(".*.lock"))
    molsift.open_store(small_set, verify=True)


def test_upgrade_of_a_set_says_it_is_a_set(small_set, tmp_path):
    """`molsift upgrade SET -o NEW` said `SET: not a molsift store (no manifest.json; ...)`: a
    set is refused in one line saying what it is, and that there is nothing to upgrade."""
    r = molsift_run("upgrade", small_set, "-o", tmp_path / "new.store")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"molsift: error: {small_set}: a store set, "), r.stderr
    assert "nothing to upgrade" in r.stderr and "no manifest.json" not in r.stderr
    assert not (tmp_path / "new.store").exists()


def test_info_of_a_set_says_where_its_left_out_records_are(tmp_path):
    """`molsift info SET` of a `--dedupe` set said `duplicates 99 (molecules whose canonical
    SMILES an earlier one had)` as if they were stored, had no line for its rejects.tsv (a
    store's info has both), and `indexes substructure missing` without saying how to add one
    (`molsift index` refuses a set)."""
    path = tmp_path / "d.set"
    molsift.ingest(
        BUNDLED_SMI, path, workers=1, shards=2, dedupe=True, pattern=False, progress=False
    )
    info = molsift_run("info", path, "-n", "0")
    assert info.returncode == 0, info.stderr
    dropped = molsift.open_store(path).counts["dropped"]
    assert dropped > 0
    duplicates = path / "duplicates.tsv"
    assert f"\nduplicates  {dropped:,}, left out and listed in {duplicates}\n" in info.stdout
    assert f"\nrejected records are listed in {path / 'rejects.tsv'}\n" in info.stdout
    hint = "(ingest the set again, --overwrite, without --no-pattern)"
    assert f"substructure missing, analogs in every shard {hint}\n" in info.stdout, info.stdout


def test_info_of_a_shard_says_which_set_it_belongs_to(one, small_set):
    """`molsift info SET/shard-0001` showed the shard as a plain store: positions from 0 that
    are not the set's, and no word of the set."""
    import json

    record = json.loads((small_set / "set.json").read_text())["shards"][1]
    info = molsift_run("info", small_set / "shard-0001", "-n", "0")
    assert info.returncode == 0, info.stderr
    first, n = record["offset"], record["molecules"]
    said = f"shard-0001 of the set {small_set}: its molecules are the set's positions {first:,}"
    assert f"\nset         {said} to {first + n - 1:,}" in info.stdout, info.stdout
    doc = json.loads(molsift_run("info", small_set / "shard-0001", "--json").stdout)
    assert doc["set"]["offset"] == first and doc["set"]["path"] == str(small_set)
    assert "set" not in json.loads(molsift_run("info", one.path, "--json").stdout)


def test_verbs_on_a_set(one, small_set, tmp_path):
    store_path = one.path
    for args in (
        ["search", "-q", "c1ccccc1O", "-k", "5"],
        ["search", "-q", "c1ccccc1O", "-t", "0.4"],
        ["substructure", "-q", "c1ccccc1O"],
        ["analogs", "-q", "CCOc1ccccc1", "-k", "8"],
        ["lookup", "-q", one.smiles[10]],
        ["lookup", "-q", "CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCl"],
    ):
        a = molsift_run(args[0], store_path, *args[1:])
        b = molsift_run(args[0], small_set, *args[1:])
        assert a.returncode == b.returncode and a.returncode in (0, 1), b.stderr
        assert a.stdout == b.stdout, args
    info = molsift_run("info", small_set)
    assert info.returncode == 0 and "3 shards" in info.stdout and "shard-0002" in info.stdout
    again = molsift_run("ingest", BUNDLED_SMI, "-o", small_set, "--shards", "2", "-q")
    assert again.returncode != 0 and "already exists" in again.stderr
    over = molsift_run("ingest", BUNDLED_SMI, "-o", small_set, "--shards", "2", "-q", "--overwrite")
    assert over.returncode == 0, over.stderr
    assert len(molsift.open_store(small_set).shards) == 2
    bad = molsift_run("ingest", BUNDLED_SMI, "-o", tmp_path / "z.set", "--shards", "0")
    assert bad.returncode != 0 and "shards must be" in bad.stderr


def test_served_set_answers_as_the_served_store(one, small_set):
    """`molsift serve` over a set: our API (every search type, paged) and Arthor's request
    shapes answer as over the one store (the published clients: tests/test_serve_clients.py)."""
    from servers import asgi_get, without_timings

    from molsift.serve import Catalog, Limits, create_app

    apps = []
    for path in (one.path, small_set):
        catalog = Catalog()
        catalog.add("nci", str(path))
        apps.append(create_app(catalog, Limits(max_length=500), None))
    requests = [
        ("/api/v1/search", {"type": "similarity", "query": "c1ccccc1O", "threshold": 0.3}),
        ("/api/v1/search", {"type": "similarity", "query": "c1ccccc1O", "k": 17, "start": 3}),
        ("/api/v1/search", {"type": "substructure", "query": "c1ccccc1O", "length": 50}),
        ("/api/v1/search", {"type": "smarts", "query": "[#7;R]", "length": 30, "start": 600}),
        ("/api/v1/search", {"type": "exact", "query": one.smiles[1000]}),
        ("/api/v1/search", {"type": "analogs", "query": "CCOc1ccccc1", "dist": 2, "length": 40}),
        ("/api/v1/databases", {}),
        ("/dt/data", {}),
        ("/dt/nci/search", {"query": "c1ccccc1O", "type": "Similarity", "length": 20}),
        ("/dt/nci/search", {"query": "c1ccccc1O", "type": "Substructure", "length": 20}),
        ("/dt/nci/search", {"query": "[#7;R]", "type": "SMARTS", "length": 20, "start": 40}),
        ("/search/maps", {}),
    ]
    for path, params in requests:
        (sa, a), (sb, b) = (asgi_get(app, path, db="nci", **params) for app in apps)
        assert sa == sb == 200, (path, params, b[:300])
        a, b = without_timings(a), without_timings(b)
        if path == "/api/v1/databases":  # the set says how many shards answer
            assert b["databases"][0].pop("shards") == 3
        assert a == b, (path, params)


def test_top_k_records_round_trip_padded_rows():
    """The reduction's records (`sets.mpi._records`, `_unpad`): each query's k best packed as
    one row of k records, padded past its hits, and read back as its real records only, in
    order, for a query with no hit, fewer than k, k and more than k."""
    from molsift.sets.mpi import RECORD, _records, _unpad

    k = 4
    answers = [
        (np.zeros(0, dtype=np.int64), np.zeros(0)),
        (np.array([7, 3]), np.array([0.9, 0.5])),
        (np.array([1, 2, 3, 4]), np.array([1.0, 0.8, 0.8, 0.1])),
        (np.array([9, 8, 7, 6, 5, 4]), np.array([0.7, 0.6, 0.5, 0.4, 0.3, 0.2])),
    ]
    # one query, a few (packed row by row) and a batch (packed at once)
    for batch in (answers[1:2], answers, 5 * answers):
        rows = _records(batch, k)
        assert rows.dtype == RECORD and rows.shape == (len(batch), k)
        back = _unpad(rows)
        want = [(i[:k].tolist(), s[:k].tolist()) for i, s in batch]
        assert [(i.tolist(), s.tolist()) for i, s in back] == want
    assert _records(answers, k)["score"][0].tolist() == [-1.0] * k
    assert _unpad(_records([], k)) == []


def test_hit_lists_merge_as_a_sort_of_all_their_hits():
    """`sets.mpi.merged_runs` (the ranks' threshold hits of a batch, gathered at rank 0) and
    `_core.merge_top_k` (the top-k reduction's operation): lists that are each best first
    merge in one pass to what sorting every hit gives (score descending, then position), ties
    across lists included; a list out of order is refused rather than merged wrong."""
    from molsift._core import merge_top_k
    from molsift.sets.mpi import RECORD, _records, merged_runs

    rng = np.random.default_rng(7)
    runs, queries = 3, 40
    counts = rng.integers(0, 9, size=(runs, queries))
    lists = []  # (positions, scores) per list and query, best first; few distinct scores
    for r in range(runs):
        for q in range(queries):
            pos = rng.choice(1000, size=counts[r, q], replace=False) * runs + r
            sc = rng.integers(0, 5, size=counts[r, q]) / 4
            order = np.lexsort((pos, -sc))
            lists.append((pos[order], sc[order]))
    positions = np.concatenate([p for p, _ in lists])
    scores = np.concatenate([s for _, s in lists])
    got = merged_runs(counts.ravel(), runs, positions, scores)
    assert len(got) == queries
    for q, (pos, sc) in enumerate(got):
        every = [(s, p) for r in range(runs) for p, s in zip(*lists[r * queries + q])]
        want = sorted(every, key=lambda h: (-h[0], h[1]))
        assert list(zip(sc.tolist(), pos.tolist())) == want
    with pytest.raises(ValueError, match="not best first"):
        merged_runs(np.array([2]), 1, np.array([5, 3]), np.array([0.5, 0.5]))

    k = 5
    mine = [(p[:k], s[:k]) for p, s in lists[:queries]]
    theirs = [(p[:k], s[:k]) for p, s in lists[queries : 2 * queries]]
    into = _records(theirs, k)
    merged = np.frombuffer(merge_top_k(_records(mine, k).tobytes(), into.tobytes(), k), RECORD)
    for q, row in enumerate(merged.reshape(queries, k)):
        every = [(s, p) for pair in (mine[q], theirs[q]) for p, s in zip(*pair)]
        want = sorted(every, key=lambda h: (-h[0], h[1]))[:k]
        real = row[row["score"] >= 0]
        assert list(zip(real["score"].tolist(), real["pos"].tolist())) == want
    with pytest.raises(ValueError, match="not best first"):
        merge_top_k(into[:, ::-1].tobytes(), into.tobytes(), k)


def test_queries_dealt_to_ranks_by_their_cost():
    """`sets.mpi.dealt`: every item to exactly one rank, each rank's items ascending, the
    costliest first to the least loaded rank, so the ranks' summed costs differ by at most
    the costliest item (the same deal on every rank: it depends on the costs alone)."""
    from molsift.sets.mpi import costs, dealt

    rng = np.random.default_rng(3)
    for ranks in (1, 2, 3, 7):
        each = rng.integers(1, 80, size=64).tolist()
        hands = dealt(each, ranks)
        assert sorted(j for h in hands for j in h) == list(range(64))
        assert all(h == sorted(h) for h in hands)
        loads = [sum(each[j] for j in h) for h in hands]
        assert max(loads) - min(loads) <= max(each)
        assert dealt(each, ranks) == hands
        # the costliest first, ties by index: the first rank takes the first of equal items
        assert dealt([5, 5, 5, 5], 2) == [[0, 2], [1, 3]]
    assert dealt([], 2) == [[], []]
    assert costs(["CCO", ("c1ccccc1", True), 7, "", "C\u00e91"]) == [3, 10, 1, 1, 3]
    assert costs([]) == []


def test_info_of_a_set_lists_each_file_as_a_stores_info_does(small_set):
    """`molsift info STORE --json` has each file's bytes (`sizes.files`) and the text a
    "bytes per molecule, by file" list; a set's had neither, though its --json help promises
    them. A set's --json lists every file as ingest counts it (`shard-NNNN/FILE`, the set's
    own files by name), summing to its size; the text sums each file over the shards."""
    doc = json.loads(molsift_run("info", small_set, "--json", "-n", "0").stdout)
    files = doc["sizes"]["files"]
    assert "rejects.tsv" in files and "shard-0002/smiles.blocks" in files, sorted(files)
    assert sum(f["bytes"] for f in files.values()) == doc["sizes"]["bytes"]
    text = molsift_run("info", small_set, "-n", "0").stdout
    assert "\nbytes per molecule, by file (summed over the shards):\n" in text, text
    smiles = sum(b["bytes"] for n, b in files.items() if n.endswith("/smiles.blocks"))
    per = doc["counts"]["molecules"]
    assert re.search(rf"\n  smiles.blocks +{smiles / per:.3f}\n", text), text


def test_more_shards_than_molecules_says_how_many_are_empty(tmp_path):
    """`ingest --shards 100` of 50 molecules wrote 50 empty shards and said nothing: the set
    answers as one store, but a note says how many are empty and how many shards would do."""
    smi = tmp_path / "five.smi"
    smi.write_text("".join(BUNDLED_SMI.read_text().splitlines(keepends=True)[:5]))
    r = molsift_run("ingest", smi, "-o", tmp_path / "five.set", "--shards", "8", "-j", "1")
    assert r.returncode == 0, r.stderr
    assert "molsift: note: 8 shards for 5 molecules: 3 of them are empty" in r.stderr, r.stderr
    r = molsift_run("ingest", smi, "-o", tmp_path / "three.set", "--shards", "3", "-j", "1")
    assert r.returncode == 0 and "empty" not in r.stderr, r.stderr
