"""Store version 2 and exact lookup on the bundled real data: every molecule found by a random
SMILES of it, absent molecules not found, ids found, forced hash collisions still exact,
version-1 stores open and upgrade, damaged version-2 files refused by name, and the CLI's
exit statuses and query files (read as every verb reads them, bad records rejected by line)."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from rdkit import Chem, RDLogger

import molsift
from molsift import _core

RDLogger.DisableLog("rdApp.*")


@pytest.fixture(scope="module")
def stores(tmp_path_factory, bundled_smi):
    d = tmp_path_factory.mktemp("lookup")
    v1 = d / "nci.store"
    molsift.ingest(bundled_smi, v1, workers=2, progress=False, pattern=False)
    v2 = d / "nci.v2.store"
    molsift.upgrade(v1, v2, threads=2)
    return molsift.open_store(v1), molsift.open_store(v2)


def random_smiles(smiles: str, seed: int) -> str:
    mol = Chem.MolFromSmiles(smiles)
    Chem.rdBase.SeedRandomNumberGenerator(seed)
    return Chem.MolToSmiles(mol, doRandom=True)


def test_upgrade_keeps_every_molecule(stores):
    v1, v2 = stores
    assert isinstance(v2, molsift.StoreV2) and v2.manifest["format_version"] == 2
    assert len(v2) == len(v1) and v2.counts == v1.counts
    ranks = v2.input_ranks
    assert sorted(ranks.tolist()) == list(range(len(v1)))
    smiles = list(v2.smiles)
    assert smiles == sorted(smiles, key=lambda s: s.encode())  # store order: SMILES bytes
    fps = v2.fingerprints
    for i in range(len(v2)):
        r = int(ranks[i])
        assert smiles[i] == v1.smiles[r]
        assert v2.ids[i] == v1.ids[r]
        assert (fps[i] == v1.fingerprints[r]).all()
    assert v2.source_lines.tolist() == v1.source_lines[ranks].tolist()
    assert v2.popcounts.tolist() == v1.popcounts[ranks].tolist()


@pytest.mark.parametrize("version", [1, 2])
def test_take_reads_a_page_of_texts_in_one_call(stores, version):
    """`column.take(positions)` (a page of hits read in one call into the store) equals item
    access, in the order given, repeats included; a position out of range is an error naming
    the store's size, never a wrong string."""
    store = stores[version - 1]
    rng = np.random.default_rng(version)
    positions = [*rng.integers(0, len(store), 40).tolist(), 0, len(store) - 1, 0]
    for column in (store.smiles, store.ids):
        assert column.take(positions) == [column[p] for p in positions]
        assert column.take([]) == []
        for bad in (len(store), -1):
            with pytest.raises(molsift.StoreError, match=r"range|negative"):
                column.take([0, bad])


def test_every_molecule_found_by_a_random_smiles_of_it(stores):
    v1, v2 = stores
    queries = [random_smiles(s, i) for i, s in enumerate(v1.smiles)]
    assert sum(q != s for q, s in zip(queries, v1.smiles)) > len(queries) // 2  # real work
    pos = v2.lookup(queries, workers=2)
    assert (pos >= 0).all()
    ranks = v2.input_ranks
    # where a molecule is stored more than once, the first copy: no lower position holds it
    for r, p in enumerate(pos):
        assert v2.smiles[int(p)] == v1.smiles[r]
        assert p <= int(np.flatnonzero(ranks == r)[0])
        assert p == 0 or v2.smiles[int(p) - 1] != v1.smiles[r]


def test_absent_molecules_are_not_found(stores):
    v1, v2 = stores
    present = set(v1.smiles)
    absent = [
        s
        for s in ("CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC", "C1CC1C1CC1C1CC1C1CC1", "[2H]OC(F)(F)F")
        if Chem.MolToSmiles(Chem.MolFromSmiles(s)) not in present
    ]
    assert len(absent) == 3
    assert v2.lookup(absent).tolist() == [-1, -1, -1]
    with pytest.raises(molsift.QueryError, match="could not parse"):
        v2.lookup(["not a smiles"])


def test_ids_found(stores):
    v1, v2 = stores
    ids = [v1.ids[i] for i in range(0, len(v1), 97)]
    pos = v2.lookup_ids([*ids, "no-such-id"])
    assert pos[-1] == -1
    for i, p in zip(range(0, len(v1), 97), pos[:-1]):
        assert v2.ids[int(p)] == v1.ids[i]


def test_forced_hash_collisions_still_answer_exactly(stores, tmp_path):
    """The test hook: hashes cut to 6 bits, so nearly every key collides with others."""
    v1, _ = stores
    out = tmp_path / "collide.store"
    _core.upgrade_store(v1.path, str(out), hash_bits=6)
    v2 = molsift.open_store(out)
    pos = v2.lookup(list(v1.smiles), workers=1)
    assert all(v2.smiles[int(p)] == s for p, s in zip(pos, v1.smiles))
    assert v2.lookup(["CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC"]).tolist() == [-1]


def test_damaged_or_truncated_files_refused_by_name(stores, tmp_path):
    _, v2 = stores
    copy = tmp_path / "copy.store"
    shutil.copytree(v2.path, copy)
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
    v1, v2 = stores
    out = tmp_path / "again.store"
    shutil.copytree(v2.path, out)
    assert (out / "planes.parts.u8").exists()
    again = molsift.upgrade(v1.path, out, overwrite=True)
    assert len(again) == len(v1)
    molsift.open_store(out, verify=True)


def test_killed_upgrade_leaves_nothing_that_opens(stores, tmp_path):
    """Killed at several moments: a store that appears is whole; at least one kill lands
    before the end, and then nothing opens (and the next upgrade sweeps its leftovers)."""
    v1, _ = stores
    killed_early = 0
    for delay in (0.0, 0.05, 0.2, 0.5):
        out = tmp_path / f"x{delay}.store"
        code = (
            "import os, threading, molsift\n"
            f"threading.Timer({delay}, lambda: os._exit(9)).start()\n"
            f"molsift.upgrade({v1.path!r}, {str(out)!r})\n"
            "os._exit(0)\n"
        )
        subprocess.run([sys.executable, "-c", code], check=False)
        if out.exists():  # finished before the kill: then it is whole
            molsift.open_store(out, verify=True)
        else:
            killed_early += 1
            with pytest.raises(molsift.StoreError):
                molsift.open_store(out)
            molsift.upgrade(v1.path, out)
            assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert killed_early > 0


def test_cli_lookup_exit_statuses(stores, tmp_path):
    v1, v2 = stores
    run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "molsift", "lookup", *a], capture_output=True, text=True
    )
    q = random_smiles(v1.smiles[10], 7)
    ok = run(v2.path, "-q", q)
    assert ok.returncode == 0, ok.stderr
    row = ok.stdout.splitlines()[1].split("\t")
    assert row[1] == "yes" and v1.ids[10] in row[2].split(",") and row[4] == v1.smiles[10]
    some = run(v2.path, "-q", q, "-q", "CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC", "-q", "nonsense(")
    assert some.returncode == 1
    assert [r.split("\t")[1] for r in some.stdout.splitlines()[1:]] == ["yes", "no", "invalid"]
    ids = tmp_path / "ids.txt"
    ids.write_text(f"{v1.ids[3]}\n{v1.ids[4]}\n")
    assert run(v2.path, "--ids", str(ids)).returncode == 0
    err = run(v1.path, "-q", q)
    assert err.returncode == 2 and "molsift upgrade" in err.stderr


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
    v1, v2 = stores
    queries = tmp_path / "huge.smi"
    long_lines = ["C" * 1_000_000, "C1" + "C" * 1_000_000 + "C1"]
    queries.write_text("\n".join([v1.smiles[0], *long_lines, v1.smiles[1]]) + "\n")
    proc = lookup_cli(v2.path, "--queries", queries, "-j", "2", timeout=30)
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
    v1, v2 = stores
    lines = bundled_smi.read_bytes().splitlines(keepends=True)[:599]
    good, bad = tmp_path / "good.smi", tmp_path / "bad.smi"
    good.write_bytes(b"".join(lines))
    bad.write_bytes(b"".join(lines) + b"\xc3(\n")
    want = lookup_cli(v2.path, "--queries", good).stdout.splitlines()
    assert found_column("\n".join(want)).count("yes") > 590
    proc = lookup_cli(v2.path, "--queries", bad)
    assert proc.stdout.splitlines()[:-1] == want, proc.stderr
    assert found_column(proc.stdout)[-1] == "invalid" and proc.returncode == 1
    assert f"{bad}:600: " in proc.stderr and "not valid UTF-8" in proc.stderr
    utf16 = tmp_path / "utf16.smi"
    utf16.write_bytes(b"".join(lines[:3]).decode().encode("utf-16"))
    proc = lookup_cli(v2.path, "--queries", utf16)
    assert set(found_column(proc.stdout)) == {"invalid"} and proc.returncode == 1, proc.stderr
    assert all(f"{utf16}:{n}: " in proc.stderr for n in (1, 2, 3)) and "UTF-16" in proc.stderr
    ids = tmp_path / "ids.txt"
    ids.write_bytes("".join(f"{v1.ids[i]}\n" for i in range(599)).encode() + b"\xc3(\n")
    proc = lookup_cli(v2.path, "--ids", ids)
    assert found_column(proc.stdout) == ["yes"] * 599 + ["invalid"], proc.stderr
    assert f"{ids}:600: " in proc.stderr and proc.returncode == 1


def test_cli_lookup_query_files_are_read_as_every_verb_reads_them(stores, tmp_path):
    """Issue 40, defect 14: `lookup --queries` took a CSV header for a query and failed on
    gzip (`'utf-8' codec can't decode byte 0x8b`), where `search --queries` reads SMILES, CSV,
    SDF and gzip files. Every query verb reads them through the input model: the same rows
    from a SMILES file, its CSV form and its gzip form."""
    v1, v2 = stores
    smiles = [random_smiles(v1.smiles[i], i) for i in range(5)]
    smiles.append("CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC")  # not in the store
    plain = tmp_path / "q.smi"
    plain.write_text("".join(f"{s} m{i}\n" for i, s in enumerate(smiles)))
    want = lookup_cli(v2.path, "--queries", plain)
    assert found_column(want.stdout) == ["yes"] * 5 + ["no"], want.stderr
    as_csv = tmp_path / "q.csv"
    as_csv.write_text("smiles,name\n" + "".join(f"{s},m{i}\n" for i, s in enumerate(smiles)))
    as_gzip = tmp_path / "q.smi.gz"
    as_gzip.write_bytes(gzip.compress(plain.read_bytes()))
    for path in (as_csv, as_gzip):
        proc = lookup_cli(v2.path, "--queries", path)
        assert proc.stdout == want.stdout and proc.returncode == 1, proc.stderr


def test_info_json_has_bytes_per_file_and_molecule(stores):
    _, v2 = stores
    out = subprocess.run(
        [sys.executable, "-m", "molsift", "info", v2.path, "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    info = json.loads(out.stdout)
    sizes = info["sizes"]
    assert sizes["bytes"] == sum(f["bytes"] for f in sizes["files"].values())
    assert sizes["files"]["smiles.blocks"]["bytes_per_molecule"] < 10
    assert info["format_version"] == 2
