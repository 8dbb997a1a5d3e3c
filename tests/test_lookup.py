"""The one store and exact lookup on the bundled real data: ingest writes the molecules in
canonical-SMILES byte order with their input order, ids and lines kept (against RDKit on the
input file), and writes the very files `molsift upgrade` writes from a version-1 store of the
same input; every molecule found by a random SMILES of it, absent molecules not found, ids
found, forced hash collisions still exact, version-1 stores upgrade (and every other verb
refuses them), damaged version-2 files refused by name, and the CLI's exit statuses and query
files (read as every verb reads them, bad records rejected by line)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from rdkit import Chem, RDLogger

import molsift
from molsift import _core
from molsift.store import Store

RDLogger.DisableLog("rdApp.*")


def input_reference(path) -> SimpleNamespace:
    """Plain RDKit on the input file, in input order: the canonical SMILES, id and 1-based line
    of each record RDKit parses (the molecules a store of it holds)."""
    smiles, ids, lines = [], [], []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        smi, _, rid = line.partition("\t")
        mol = Chem.MolFromSmiles(smi)
        if mol is not None:
            smiles.append(Chem.MolToSmiles(mol))
            ids.append(rid.strip())
            lines.append(number)
    return SimpleNamespace(smiles=smiles, ids=ids, lines=lines)


@pytest.fixture(scope="module")
def stores(tmp_path_factory, bundled_smi):
    """`one`: the one store ingest writes (every index); `ref`: the input by plain RDKit;
    `v1`: a version-1 store of the same input (ingest's staging format, what `upgrade` reads),
    `old` its columns (read as upgrade reads them) and `upgraded` its upgrade."""
    d = tmp_path_factory.mktemp("lookup")
    one = d / "nci.store"
    molsift.ingest(bundled_smi, one, workers=2, progress=False)
    v1 = d / "nci.v1.store"
    molsift.ingest(
        bundled_smi, v1, workers=2, progress=False, version=1, pattern=False, analogs=False
    )
    upgraded = molsift.upgrade(v1, d / "nci.upgraded.store", threads=2, workers=2)
    return SimpleNamespace(
        one=molsift.open_store(one),
        ref=input_reference(bundled_smi),
        v1=str(v1),
        old=Store(str(v1), _core.Store(str(v1), full=True)),
        upgraded=upgraded,
    )


def random_smiles(smiles: str, seed: int) -> str:
    mol = Chem.MolFromSmiles(smiles)
    Chem.rdBase.SeedRandomNumberGenerator(seed)
    return Chem.MolToSmiles(mol, doRandom=True)


def test_ingest_writes_the_one_store_in_smiles_order_keeping_the_input(stores):
    """Store positions follow the canonical SMILES in byte order; `input_ranks` maps each back
    to its record, whose RDKit canonical SMILES, id and line it holds; every index is built."""
    one, ref = stores.one, stores.ref
    assert isinstance(one, molsift.StoreV2) and one.manifest["format_version"] == 2
    assert len(one) == len(ref.smiles) == one.counts["molecules"]
    smiles, ids, lines = list(one.smiles), list(one.ids), one.source_lines.tolist()
    assert smiles == sorted(smiles, key=lambda s: s.encode())
    ranks = one.input_ranks.tolist()
    assert sorted(ranks) == list(range(len(one)))
    for i, r in enumerate(ranks):
        assert (smiles[i], ids[i], lines[i]) == (ref.smiles[r], ref.ids[r], ref.lines[r])
    assert one.has_pattern_index and one.has_analog_index


def test_ingest_writes_the_files_upgrade_writes_from_version_1(stores):
    """One writer: the store ingest writes and the one `upgrade` writes from a version-1 store
    of the same input are the same files, byte for byte, and the same manifest (its table of
    files with sizes and checksums included), but for the provenance (timings)."""
    a, b = (stores.one.path, stores.upgraded.path)
    names = sorted(os.listdir(a))
    assert names == sorted(os.listdir(b)) and "pattern.screen.u8" in names
    for name in names:
        if name != "manifest.json":
            with open(os.path.join(a, name), "rb") as fa, open(os.path.join(b, name), "rb") as fb:
                assert fa.read() == fb.read(), name
    ma, mb = (dict(s.manifest) for s in (stores.one, stores.upgraded))
    for m in (ma, mb):
        del m["provenance"], m["checksum"]
    assert ma == mb


def test_upgrade_keeps_every_molecule(stores):
    old, v2 = stores.old, stores.upgraded
    assert isinstance(v2, molsift.StoreV2) and v2.manifest["format_version"] == 2
    assert len(v2) == len(old) and v2.counts == old.counts
    ranks = v2.input_ranks
    assert sorted(ranks.tolist()) == list(range(len(old)))
    smiles = list(v2.smiles)
    assert smiles == sorted(smiles, key=lambda s: s.encode())  # store order: SMILES bytes
    fps = v2.fingerprints
    for i in range(len(v2)):
        r = int(ranks[i])
        assert smiles[i] == old.smiles[r]
        assert v2.ids[i] == old.ids[r]
        assert (fps[i] == old.fingerprints[r]).all()
    assert v2.source_lines.tolist() == old.source_lines[ranks].tolist()
    assert v2.popcounts.tolist() == old.popcounts[ranks].tolist()


def test_a_version_1_store_is_refused_in_one_line_naming_upgrade(stores):
    with pytest.raises(molsift.StoreError, match="molsift upgrade") as refused:
        molsift.open_store(stores.v1)
    assert "\n" not in str(refused.value) and stores.v1 in str(refused.value)


def test_take_reads_a_page_of_texts_in_one_call(stores):
    """`column.take(positions)` (a page of hits read in one call into the store) equals item
    access, in the order given, repeats included; a position out of range is an error naming
    the store's size, never a wrong string."""
    store = stores.one
    rng = np.random.default_rng(2)
    positions = [*rng.integers(0, len(store), 40).tolist(), 0, len(store) - 1, 0]
    for column in (store.smiles, store.ids):
        assert column.take(positions) == [column[p] for p in positions]
        assert column.take([]) == []
        for bad in (len(store), -1):
            with pytest.raises(molsift.StoreError, match=r"range|negative"):
                column.take([0, bad])


def test_every_molecule_found_by_a_random_smiles_of_it(stores):
    one, ref = stores.one, stores.ref
    queries = [random_smiles(s, i) for i, s in enumerate(ref.smiles)]
    assert sum(q != s for q, s in zip(queries, ref.smiles)) > len(queries) // 2  # real work
    pos = one.lookup(queries, workers=2)
    assert (pos >= 0).all()
    ranks = one.input_ranks
    at = np.empty_like(ranks)  # input record -> its store position
    at[ranks] = np.arange(len(ranks))
    # where a molecule is stored more than once, the first copy: no lower position holds it
    for r, p in enumerate(pos.tolist()):
        assert one.smiles[p] == ref.smiles[r]
        assert p <= at[r]
        assert p == 0 or one.smiles[p - 1] != ref.smiles[r]


def test_absent_molecules_are_not_found(stores):
    one, ref = stores.one, stores.ref
    present = set(ref.smiles)
    absent = [
        s
        for s in ("CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC", "C1CC1C1CC1C1CC1C1CC1", "[2H]OC(F)(F)F")
        if Chem.MolToSmiles(Chem.MolFromSmiles(s)) not in present
    ]
    assert len(absent) == 3
    assert one.lookup(absent).tolist() == [-1, -1, -1]
    with pytest.raises(molsift.QueryError, match="could not parse"):
        one.lookup(["not a smiles"])


def test_ids_found(stores):
    one, ref = stores.one, stores.ref
    every = range(0, len(ref.ids), 97)
    pos = one.lookup_ids([*(ref.ids[i] for i in every), "no-such-id"])
    assert pos[-1] == -1
    for i, p in zip(every, pos[:-1]):
        assert one.ids[int(p)] == ref.ids[i]


def test_forced_hash_collisions_still_answer_exactly(stores, tmp_path):
    """The test hook: hashes cut to 6 bits, so nearly every key collides with others."""
    ref = stores.ref
    out = tmp_path / "collide.store"
    _core.upgrade_store(stores.v1, str(out), hash_bits=6)
    v2 = molsift.open_store(out)
    pos = v2.lookup(ref.smiles, workers=1)
    assert all(v2.smiles[int(p)] == s for p, s in zip(pos, ref.smiles))
    assert v2.lookup(["CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC"]).tolist() == [-1]


def test_damaged_or_truncated_files_refused_by_name(stores, tmp_path):
    copy = tmp_path / "copy.store"
    shutil.copytree(stores.one.path, copy)
    for name in (
        "smiles.blocks",
        "smiles.lookup",
        "planes.data.u8",
        "planes.parts.u8",
        "input_order.packed",
    ):
        path = copy / name
        good = path.read_bytes()
        path.write_bytes(good[:-1])
        with pytest.raises(molsift.StoreError, match=name):
            molsift.open_store(copy, verify=False)
        bad = bytearray(good)
        bad[len(bad) // 2] ^= 0x40
        path.write_bytes(bytes(bad))
        with pytest.raises(molsift.StoreError, match=name):
            molsift.open_store(copy, verify=True)
        path.write_bytes(good)
    molsift.open_store(copy, verify=True)


def test_upgrade_overwrites_a_version_2_store(stores, tmp_path):
    """`--overwrite` replaces a store of either version: every file an upgrade writes (the
    part masks included) is known as a store file."""
    out = tmp_path / "again.store"
    shutil.copytree(stores.one.path, out)
    assert (out / "planes.parts.u8").exists()
    again = molsift.upgrade(stores.v1, out, overwrite=True)
    assert len(again) == len(stores.ref.smiles)
    molsift.open_store(out, verify=True)


def test_killed_upgrade_leaves_nothing_that_opens(stores, tmp_path):
    """Killed at several moments: a store that appears is whole; at least one kill lands
    before the end, and then nothing opens (and the next upgrade sweeps its leftovers)."""
    killed_early = 0
    for delay in (0.0, 0.05, 0.2, 0.5):
        out = tmp_path / f"x{delay}.store"
        code = (
            "import os, threading, molsift\n"
            f"threading.Timer({delay}, lambda: os._exit(9)).start()\n"
            f"molsift.upgrade({stores.v1!r}, {str(out)!r})\n"
            "os._exit(0)\n"
        )
        subprocess.run([sys.executable, "-c", code], check=False)
        if out.exists():  # finished before the kill: then it is whole
            molsift.open_store(out, verify=True)
        else:
            killed_early += 1
            with pytest.raises(molsift.StoreError):
                molsift.open_store(out)
            molsift.upgrade(stores.v1, out)
            assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert killed_early > 0


def test_cli_lookup_exit_statuses(stores, tmp_path):
    one, ref = stores.one, stores.ref
    run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "molsift", "lookup", *a], capture_output=True, text=True
    )
    q = random_smiles(ref.smiles[10], 7)
    ok = run(one.path, "-q", q)
    assert ok.returncode == 0, ok.stderr
    row = ok.stdout.splitlines()[1].split("\t")
    assert row[1] == "yes" and ref.ids[10] in row[2].split(",") and row[4] == ref.smiles[10]
    some = run(one.path, "-q", q, "-q", "CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC", "-q", "nonsense(")
    assert some.returncode == 1
    assert [r.split("\t")[1] for r in some.stdout.splitlines()[1:]] == ["yes", "no", "invalid"]
    ids = tmp_path / "ids.txt"
    ids.write_text(f"{ref.ids[3]}\n{ref.ids[4]}\n")
    assert run(one.path, "--ids", str(ids)).returncode == 0
    err = run(stores.v1, "-q", q)  # a version-1 store: refused in one line
    assert err.returncode == 2 and "molsift upgrade" in err.stderr, err.stderr
    assert len(err.stderr.strip().splitlines()) == 1 and err.stdout == ""


def lookup_cli(*args, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "molsift", "lookup", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def found_column(stdout: str) -> list:
    return [row.split("\t")[1] for row in stdout.splitlines()[1:]]


def test_cli_lookup_rejects_a_1_mb_query_line_by_its_line(stores, tmp_path):
    """Issue 40, defect 7: a 1 MB SMILES line in --queries (also one wrapped in ring atoms)
    made `lookup -j 2` hang, no output after 300 s: RDKit was handed the line. The reader's
    record-size limit applies to query files: the line is rejected by file and line, counted,
    and the other queries answered."""
    one, ref = stores.one, stores.ref
    queries = tmp_path / "huge.smi"
    long_lines = ["C" * 1_000_000, "C1" + "C" * 1_000_000 + "C1"]
    queries.write_text("\n".join([ref.smiles[0], *long_lines, ref.smiles[1]]) + "\n")
    proc = lookup_cli(one.path, "--queries", queries, "-j", "2", timeout=30)
    assert found_column(proc.stdout) == ["yes", "invalid", "invalid", "yes"], proc.stderr
    for line in (2, 3):
        assert f"{queries}:{line}: " in proc.stderr and "longer than the limit" in proc.stderr
    assert "2 rejected" in proc.stderr and "Traceback" not in proc.stderr
    assert proc.returncode == 1  # not every query was found


def test_cli_lookup_bad_byte_rejects_its_line_only(stores, tmp_path, bundled_smi):
    """Issue 40, defect 8: one undecodable byte on the last of 600 --queries lines ended the
    run (`'utf-8' codec can't decode byte 0xc3 in position 2277`, exit 2) with no row for the
    599 good lines and neither the file nor the line named; UTF-16 query files and --ids files
    the same. Each bad record is rejected by file and line (an `invalid` row), the rest
    answered."""
    one, ref = stores.one, stores.ref
    lines = bundled_smi.read_bytes().splitlines(keepends=True)[:599]
    good, bad = tmp_path / "good.smi", tmp_path / "bad.smi"
    good.write_bytes(b"".join(lines))
    bad.write_bytes(b"".join(lines) + b"\xc3(\n")
    want = lookup_cli(one.path, "--queries", good).stdout.splitlines()
    assert found_column("\n".join(want)).count("yes") > 590
    proc = lookup_cli(one.path, "--queries", bad)
    assert proc.stdout.splitlines()[:-1] == want, proc.stderr
    assert found_column(proc.stdout)[-1] == "invalid" and proc.returncode == 1
    assert f"{bad}:600: " in proc.stderr and "not valid UTF-8" in proc.stderr
    utf16 = tmp_path / "utf16.smi"
    utf16.write_bytes(b"".join(lines[:3]).decode().encode("utf-16"))
    proc = lookup_cli(one.path, "--queries", utf16)
    assert set(found_column(proc.stdout)) == {"invalid"} and proc.returncode == 1, proc.stderr
    assert all(f"{utf16}:{n}: " in proc.stderr for n in (1, 2, 3)) and "UTF-16" in proc.stderr
    ids = tmp_path / "ids.txt"
    ids.write_bytes("".join(f"{ref.ids[i]}\n" for i in range(599)).encode() + b"\xc3(\n")
    proc = lookup_cli(one.path, "--ids", ids)
    assert found_column(proc.stdout) == ["yes"] * 599 + ["invalid"], proc.stderr
    assert f"{ids}:600: " in proc.stderr and proc.returncode == 1


def test_cli_lookup_query_files_are_read_as_every_verb_reads_them(stores, tmp_path):
    """Issue 40, defect 14: `lookup --queries` took a CSV header for a query and failed on
    gzip (`'utf-8' codec can't decode byte 0x8b`), where `search --queries` reads SMILES, CSV,
    SDF and gzip files. Every query verb reads them through the input model: the same rows
    from a SMILES file, its CSV form and its gzip form."""
    one, ref = stores.one, stores.ref
    smiles = [random_smiles(ref.smiles[i], i) for i in range(5)]
    smiles.append("CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC")  # not in the store
    plain = tmp_path / "q.smi"
    plain.write_text("".join(f"{s} m{i}\n" for i, s in enumerate(smiles)))
    want = lookup_cli(one.path, "--queries", plain)
    assert found_column(want.stdout) == ["yes"] * 5 + ["no"], want.stderr
    as_csv = tmp_path / "q.csv"
    as_csv.write_text("smiles,name\n" + "".join(f"{s},m{i}\n" for i, s in enumerate(smiles)))
    as_gzip = tmp_path / "q.smi.gz"
    as_gzip.write_bytes(gzip.compress(plain.read_bytes()))
    proc = lookup_cli(one.path, "--queries", as_gzip)
    assert proc.stdout == want.stdout and proc.returncode == 1, proc.stderr
    # the CSV's queries have no name column: each is named by its line number (2 to 7)
    proc = lookup_cli(one.path, "--queries", as_csv)
    rows, want_rows = (
        [r.split("\t") for r in proc.stdout.splitlines()],
        [r.split("\t") for r in want.stdout.splitlines()],
    )
    assert [r[1:] for r in rows] == [r[1:] for r in want_rows] and proc.returncode == 1
    assert [r[0] for r in rows] == ["query", *(str(i + 2) for i in range(6))], proc.stdout


def test_info_json_has_bytes_per_file_and_molecule(stores):
    one = stores.one
    out = subprocess.run(
        [sys.executable, "-m", "molsift", "info", one.path, "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    info = json.loads(out.stdout)
    sizes = info["sizes"]
    assert sizes["bytes"] == sum(f["bytes"] for f in sizes["files"].values())
    assert sizes["files"]["smiles.blocks"]["bytes_per_molecule"] < 10
    assert info["format_version"] == 2


def test_cli_lookup_output_is_never_its_query_file_or_inside_its_store(stores, tmp_path):
    """`lookup STORE --ids ids.txt -o ids.txt` truncated the ids before reading them all: the
    rows of two of five ids, exit 0, the file lost; `-o STORE/rejects.tsv` overwrote the store's
    own file (the store no longer opened). Both are refused in one line before any work."""
    store = tmp_path / "s.store"
    shutil.copytree(stores.one.path, store)
    ids = tmp_path / "ids.txt"
    text = "".join(f"{i}\n" for i in stores.ref.ids[:5])
    ids.write_text(text)
    for option, path in (("--ids", ids), ("--queries", ids)):
        proc = lookup_cli(store, option, path, "-o", ids)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert f"{ids}: the output is the {option} file" in proc.stderr, proc.stderr
        assert ids.read_text() == text
    for out in (store / "rejects.tsv", store / "rows.tsv"):
        proc = lookup_cli(store, "-q", "CCO", "-o", out)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert f"{out}: is inside the store {store}" in proc.stderr, proc.stderr
    assert not (store / "rows.tsv").exists()
    molsift.open_store(store, verify=True)


def test_cli_lookup_more_workers_than_memory_holds_are_refused(stores):
    """`lookup -j 100000` was taken: over more than 20,000 queries the pool forked every one
    of its 100,000 processes at its start. Refused in one line, as screen and ingest refuse
    it."""
    proc = lookup_cli(stores.one.path, "-q", "CCO", "-j", "100000")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "100,000 worker processes need at least" in proc.stderr and proc.stdout == ""


def test_canonicalize_starts_no_more_processes_than_chunks(monkeypatch):
    """The pool forks all its processes at its start: `-j 64` over two chunks of queries
    started 64 processes for 2 tasks. (The chunks go to the one process engine's pool, here
    replaced by one that records its size and maps in this process.)"""
    from molsift import lookup as module
    from molsift.parallel import pool

    sizes = []

    class Pool:
        def __init__(self, workers):
            sizes.append(workers)

        def map_ordered(self, fn, tasks):
            return [fn(t) for t in tasks]

    monkeypatch.setattr(pool, "PoolExecutor", Pool)
    monkeypatch.setattr(module, "CHUNK", 2)
    assert module.canonicalize(["OCC", "C1CC", "c1ccccc1"], workers=64) == [
        "CCO",
        None,
        "c1ccccc1",
    ]
    assert sizes == [2]


def test_canonicalize_on_worker_processes_keeps_order(monkeypatch):
    """Queries in more chunks than one are canonicalized on the process engine's workers
    (real spawned processes), the answers in query order, unparsable ones None."""
    from molsift import lookup as module

    monkeypatch.setattr(module, "CHUNK", 2)
    queries = ["OCC", "C1CC", "c1ccccc1", "N#N", "", "C(=O)O"]
    assert module.canonicalize(queries, workers=2) == [
        "CCO",
        None,
        "c1ccccc1",
        "N#N",
        None,
        "O=CO",
    ]


def test_upgrade_never_overwrites_its_own_source(stores, tmp_path):
    """`molsift upgrade OLD -o OLD --overwrite` replaced the version-1 store it read, though
    the help says the old one is left as it is: refused in one line, OLD untouched."""
    old = tmp_path / "old.store"
    shutil.copytree(stores.v1, old)
    before = sorted((p.name, p.stat().st_size) for p in old.iterdir())
    for out in (old, f"{old}/"):
        proc = subprocess.run(
            [sys.executable, "-m", "molsift", "upgrade", old, "-o", out, "--overwrite", "-j", "1"],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert f"{out}: is the input {old}; --overwrite never replaces" in proc.stderr
    # nor writes the new store inside it
    inside = old / "new.store"
    proc = subprocess.run(
        [sys.executable, "-m", "molsift", "upgrade", old, "-o", inside, "-j", "1"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert f"{inside}: is inside the input {old}: write the new store beside it" in proc.stderr
    assert sorted((p.name, p.stat().st_size) for p in old.iterdir()) == before
    assert molsift.store.format_version(old) == 1


@pytest.fixture(scope="module")
def small(tmp_path_factory, bundled_smi):
    """The bundled data's first 200 lines as ingest writes them, every index: a store each
    query verb (search, substructure, analogs, lookup) answers."""
    d = tmp_path_factory.mktemp("small")
    (d / "s.smi").write_text("".join(bundled_smi.read_text().splitlines(keepends=True)[:200]))
    molsift.ingest(d / "s.smi", d / "s.store", workers=1, progress=False)
    return molsift.open_store(d / "s.store")


def query_column(verb: str, *args) -> list:
    """The first column of `molsift VERB ...`'s hit table (its header first)."""
    proc = subprocess.run(
        [sys.executable, "-m", "molsift", verb, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode in (0, 1, 2) and "Traceback" not in proc.stderr, proc.stderr
    return [line.split("\t")[0] for line in proc.stdout.splitlines()]


def test_cli_lookup_names_each_query_by_its_id_as_the_other_query_verbs(small, tmp_path):
    """`lookup --queries` wrote each query's SMILES in the query column, where search,
    substructure and analogs write its id (the name after it, else its line number): the same
    queries file gave rows that could not be joined. lookup writes the id too (a record the
    reader rejects included); a -q's id is its SMILES, as substructure and analogs write it."""
    found = [random_smiles(small.smiles[i], i) for i in (3, 7)]
    queries = tmp_path / "q.smi"
    queries.write_text(f"{found[0]}\tfirst\n{found[1]}\n{'C' * 40} absent\nC\0C rejected\n")
    ids = ["first", "2", "absent", "rejected"]
    proc = lookup_cli(small.path, "--queries", queries)
    assert found_column(proc.stdout) == ["yes", "yes", "no", "invalid"], proc.stderr
    assert query_column("lookup", small.path, "--queries", queries) == ["query", *ids]
    # the other verbs' first columns on the same file (a query of no hits has no row there)
    assert query_column("search", small.path, "--queries", queries, "-k", "1")[1:] == ids[:3]
    got = query_column("substructure", small.path, "--queries", queries, "--count")
    assert got[1:] == ids[:3]
    analogs = query_column("analogs", small.path, "--queries", queries, "--dist", "1")
    assert analogs[1:] and set(analogs[1:]) <= set(ids)
    assert query_column("lookup", small.path, "-q", found[0])[1:] == [found[0]]
    assert query_column("substructure", small.path, "-q", found[0], "--count")[1:] == [found[0]]


@pytest.mark.parametrize("verb", ["search", "substructure", "analogs", "lookup"])
def test_cli_a_query_file_of_no_queries_is_refused(small, tmp_path, verb):
    """An empty --queries file (0 bytes, only blank and comment lines, a CSV of its header
    alone; gzip too) gave every query verb an empty table and exit 0, as if every query had
    been answered: refused in one line naming the file (read where all four read it), exit
    status 2, nothing written."""
    files = {
        "empty.smi": b"",
        "blank.smi": b"\n# a comment\n\n",
        "header.csv": b"smiles,id\n",
        "empty.smi.gz": gzip.compress(b"\n"),
    }
    out = tmp_path / "hits.tsv"
    for name, data in files.items():
        path = tmp_path / name
        path.write_bytes(data)
        proc = subprocess.run(
            [sys.executable, "-m", "molsift", verb, small.path, "--queries", path, "-o", out],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2, (name, proc.stderr)
        assert proc.stderr.startswith(f"molsift: error: {path} holds no queries (")
        assert proc.stderr.count("\n") == 1 and not out.exists(), proc.stderr
    if verb == "lookup":  # its --ids file the same
        proc = lookup_cli(small.path, "--ids", tmp_path / "empty.smi")
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.startswith(f"molsift: error: {tmp_path / 'empty.smi'} holds no ids")
