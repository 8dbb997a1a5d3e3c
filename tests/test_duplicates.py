"""Duplicate molecules at ingest: counted against plain RDKit on real data whose repeats are
written as other SMILES of the same molecule; with `dedupe`, the first of each canonical SMILES
stored and every other record listed in duplicates.tsv against it; counts that add up; the
same store for any worker count. Ingest writes the one store (format version 2: positions in
canonical SMILES order, `input_ranks` their input order), so duplicates.tsv's kept positions
are version-2 positions, as `upgrade` of a deduped version-1 store writes them."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from golden import digest
from rdkit import Chem

import molsift


@pytest.fixture(scope="module")
def library(tmp_path_factory, bundled_smi) -> Path:
    """The bundled file, then 600 of its molecules again as RDKit random SMILES with new ids
    (spread over the file, so repeats cross task boundaries), then 50 exact repeats."""
    rows = [line for line in Path(bundled_smi).read_text().splitlines() if line.strip()]
    rng = random.Random(17)
    Chem.rdBase.SeedRandomNumberGenerator(17)
    again = []
    for line in rng.sample(rows, 600):
        smi, _, rid = line.partition("\t")
        mol = Chem.MolFromSmiles(smi)
        text = Chem.MolToSmiles(mol, doRandom=True) if mol is not None else smi
        again.append(f"{text}\trepeat_{rid}")
    path = tmp_path_factory.mktemp("dups") / "repeats.smi"
    path.write_text("\n".join(rows + again + rng.sample(rows, 50)) + "\n")
    return path


def reference(path: Path):
    """Per record: (id, canonical SMILES or None), by plain RDKit."""
    out = []
    for line in path.read_text().splitlines():
        smi, _, rid = line.partition("\t")
        mol = Chem.MolFromSmiles(smi)
        out.append((rid, Chem.MolToSmiles(mol) if mol is not None else None))
    return out


def expected(path: Path):
    """The first record of each canonical SMILES, and each later one against it."""
    first: dict[str, str] = {}
    later = []
    for rid, smi in reference(path):
        if smi is None:
            continue
        if smi in first:
            later.append((rid, smi, first[smi]))
        else:
            first[smi] = rid
    return first, later


def test_duplicates_are_counted_and_stored(tmp_path, library):
    first, later = expected(library)
    report = molsift.ingest(library, tmp_path / "s", workers=2, progress=False, pattern=False)
    store = molsift.open_store(tmp_path / "s")
    assert len(later) > 600  # the random SMILES repeats and those the file already had
    assert report.duplicates == store.counts["duplicates"] == len(later)
    assert report.dropped == 0 and report.records_in == report.molecules + report.rejected
    assert len(store) == len(first) + len(later)
    assert not (tmp_path / "s" / "duplicates.tsv").exists()


@pytest.fixture(scope="module")
def deduped(tmp_path_factory, library):
    out = tmp_path_factory.mktemp("deduped")
    reports = [
        molsift.ingest(
            library, out / f"w{w}", workers=w, slabs=s, dedupe=True, progress=False, pattern=False
        )
        for w, s in [(1, None), (2, 9)]
    ]
    return reports, out


def test_dedupe_keeps_the_first_of_each_molecule(deduped, library):
    first, later = expected(library)
    (report, _), out = deduped
    store = molsift.open_store(out / "w1")
    by_input = np.argsort(store.input_ranks)
    assert store.smiles.take(by_input) == list(first)  # every molecule once, in input order
    assert store.ids.take(by_input) == list(first.values())
    assert list(store.smiles) == sorted(first, key=str.encode)  # stored in SMILES order
    assert report.duplicates == report.dropped == len(later)
    assert report.records_in == report.molecules + report.rejected + report.dropped
    assert report.records_in == len(reference(library))
    c = store.counts
    assert (c["duplicates"], c["dropped"], c["molecules"]) == (len(later), len(later), len(first))


def test_every_left_out_record_is_listed_against_the_kept_molecule(deduped, library):
    _, later = expected(library)
    _, out = deduped
    store = molsift.open_store(out / "w1")
    lines = (out / "w1" / "duplicates.tsv").read_text().splitlines()
    assert lines[0] == "line\tid\tkept_position\tkept_id"
    listed = [line.split("\t") for line in lines[1:]]
    assert [(rid, kept) for _, rid, _, kept in listed] == [(r, k) for r, _, k in later]
    by_line = {i + 1: rid for i, (rid, _) in enumerate(reference(library))}
    for (line, rid, pos, kept), (_, smi, _) in zip(listed, later):
        assert by_line[int(line)] == rid
        assert store.ids[int(pos)] == kept and store.smiles[int(pos)] == smi


def test_deduped_store_is_the_same_for_any_worker_count(deduped):
    _, out = deduped
    one = digest(out / "w1")  # every file, the manifest without its provenance
    assert {"smiles.blocks", "planes.data.u8", "duplicates.tsv", "rejects.tsv"} <= set(one)
    assert one == digest(out / "w2")


def test_upgrade_keeps_the_list_in_version_2_positions(deduped, library, tmp_path):
    from molsift.ingestion import ingest

    _, later = expected(library)
    _, out = deduped
    ingest(
        library, tmp_path / "v1", workers=2, dedupe=True, pattern=False, progress=False, version=1
    )
    v2 = molsift.upgrade(tmp_path / "v1", tmp_path / "v2", indexes=False)
    # ingest's own list (written through the same staging store) is the upgraded one
    assert (tmp_path / "v2" / "duplicates.tsv").read_bytes() == (
        out / "w1" / "duplicates.tsv"
    ).read_bytes()
    assert v2.counts["dropped"] == len(later)
    rows = [r.split("\t") for r in (tmp_path / "v2" / "duplicates.tsv").read_text().splitlines()]
    assert len(rows) == len(later) + 1
    for (_, _, pos, kept), (_, smi, _) in zip(rows[1:], later):
        assert v2.ids[int(pos)] == kept and v2.smiles[int(pos)] == smi
        assert list(v2.lookup([smi])) == [int(pos)]  # a left-out record's SMILES finds the kept one


def test_cli_says_how_many_and_where(tmp_path, library):
    cmd = [sys.executable, "-m", "molsift"]
    run = subprocess.run(
        [
            *cmd,
            "ingest",
            str(library),
            "-o",
            str(tmp_path / "s"),
            "--dedupe",
            "--no-pattern",
            "-j",
            "2",
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    n = len(expected(library)[1])
    assert f"duplicates: {n:,} (" in run.stdout and "duplicates.tsv" in run.stdout
    assert f"+ duplicates left out {n:,}" in run.stdout
    info = subprocess.run([*cmd, "info", str(tmp_path / "s")], capture_output=True, text=True)
    assert info.returncode == 0 and f"duplicates  {n:,}, left out" in info.stdout
    # duplicates.tsv is a store file: --overwrite replaces a deduped store
    again = [*cmd, "ingest", str(library), "-o", str(tmp_path / "s"), "--overwrite", "-q"]
    run = subprocess.run([*again, "--no-pattern"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert not (tmp_path / "s" / "duplicates.tsv").exists()
