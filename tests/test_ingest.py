"""Ingest end to end: counts add up, fingerprints and canonical SMILES equal RDKit's, the store is
the same whatever the worker count or compression, bad records are rejected with their lines.

Ingest writes the one store (format version 2, every index): store positions follow the
canonical SMILES in byte order and `store.input_ranks` maps each to its place in the input, so
per-record checks go through `by_input` below."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import molsift_run
from golden import digest
from rdkit import Chem
from rdkit.Chem import rdFingerprintGenerator

import molsift


def rdkit_reference(smiles_lines, radius=2, bits=2048):
    """Plain RDKit: canonical SMILES and packed fingerprint words for each parsable SMILES."""
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=bits)
    out = []
    for smi in smiles_lines:
        mol = Chem.MolFromSmiles(smi)
        if mol is None:
            out.append(None)
            continue
        dense = gen.GetFingerprintAsNumPy(mol).astype(bool)
        words = np.packbits(dense, bitorder="little").view("<u8")
        out.append((Chem.MolToSmiles(mol), words))
    return out


def read_smi(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.strip():
                smi, _, rid = line.strip().partition("\t")
                rows.append((smi, rid.strip()))
    return rows


def by_input(store) -> np.ndarray:
    """The store position of each molecule in input order; checks that the store is in canonical
    SMILES byte order (stable: input order among equal SMILES) and `input_ranks` a permutation."""
    ranks = store.input_ranks
    assert sorted(ranks.tolist()) == list(range(len(store)))
    keys = [(s.encode(), int(r)) for s, r in zip(store.smiles, ranks)]
    assert keys == sorted(keys)
    return np.argsort(ranks)


@pytest.fixture(scope="module")
def bundled_store(tmp_path_factory, bundled_smi):
    out = tmp_path_factory.mktemp("ingest") / "nci.store"
    report = molsift.ingest(bundled_smi, out, workers=2, verify_count=True, progress=False)
    return report, molsift.open_store(out)


def test_counts_add_up_and_match_the_file(bundled_store, bundled_smi):
    report, store = bundled_store
    with open(bundled_smi) as f:
        n_lines = sum(1 for line in f if line.strip())
    assert report.records_in == n_lines == store.counts["records_in"]
    assert report.records_in == report.molecules + report.rejected
    assert len(store) == report.molecules
    rejects = Path(store.rejects_path).read_text().splitlines()
    assert len(rejects) == 1 + report.rejected  # header + one row per reject


def test_fingerprints_and_smiles_equal_rdkit(bundled_store, bundled_smi):
    _, store = bundled_store
    rows = read_smi(bundled_smi)
    reference = rdkit_reference([s for s, _ in rows])
    expected = [(rid, ref) for (_, rid), ref in zip(rows, reference) if ref is not None]
    assert len(expected) == len(store)
    fps, popcounts = store.fingerprints, store.popcounts
    for i, (rid, (smiles, words)) in zip(by_input(store), expected):
        assert store.ids[i] == rid
        assert store.smiles[i] == smiles
        assert np.array_equal(fps[i], words), f"fingerprint {i} ({rid}) differs from RDKit"
        assert popcounts[i] == int(np.unpackbits(words.view(np.uint8)).sum())


def test_fingerprints_of_chosen_positions_equal_rdkit(bundled_store, bundled_smi):
    """`fingerprints_at` decodes the rows asked for alone (what analog search ranks by):
    in any order, with repeats, equal to RDKit's; a position outside the store is an error."""
    store = molsift.open_store(bundled_store[1].path)  # fresh: nothing decoded yet
    rows = read_smi(bundled_smi)
    reference = [ref for ref in rdkit_reference([s for s, _ in rows]) if ref is not None]
    ranks = store.input_ranks
    n = len(store)
    picked = [n - 1, 0, 17, 17, *range(n - 2, 0, -97)]
    got = store.fingerprints_at(picked)
    assert getattr(store, "_fps", None) is None, "every fingerprint was decoded"
    assert got.shape == (len(picked), store.manifest["fingerprint"]["bits"] // 64)
    for row, p in zip(got, picked):
        assert np.array_equal(row, reference[ranks[p]][1]), f"position {p}"
    assert store.fingerprints_at([]).shape[0] == 0
    with pytest.raises(molsift.StoreError, match="outside"):
        store.fingerprints_at([n])


def test_tanimoto_of_chosen_positions_equals_rdkit(bundled_store, bundled_smi):
    """`tanimoto_at` scores the molecules asked for from the query's planes alone (what analog
    search ranks by): in any order, with repeats, equal to RDKit's BulkTanimotoSimilarity of
    the same Morgan fingerprints; a position outside the store is an error."""
    from rdkit import DataStructs

    from molsift.search import fingerprinter_for

    store = molsift.open_store(bundled_store[1].path)  # fresh: nothing decoded yet
    n = len(store)
    picked = [n - 1, 0, 17, 17, *range(n - 2, 0, -53)]
    fp = fingerprinter_for(store)
    bits = store.manifest["fingerprint"]["bits"]
    for query in ("c1ccccc1O", store.smiles[17], "CC(=O)Nc1ccc(cc1)S(N)(=O)=O", "[He]"):
        mol = Chem.MolFromSmiles(query)
        on = fp.on_bits(mol)
        got = store.tanimoto_at(picked, on)
        assert getattr(store, "_fps", None) is None, "every fingerprint was decoded"
        qv = DataStructs.ExplicitBitVect(bits)
        qv.SetBitsFromList(list(on))
        refs = []
        for p in picked:
            v = DataStructs.ExplicitBitVect(bits)
            v.SetBitsFromList(fp.on_bits(Chem.MolFromSmiles(store.smiles[p])))
            refs.append(v)
        want = DataStructs.BulkTanimotoSimilarity(qv, refs)
        assert got.tolist() == want, query
    assert (
        store.tanimoto_at(picked[:1], fp.on_bits(Chem.MolFromSmiles(store.smiles[n - 1])))[0] == 1.0
    )
    assert len(store.tanimoto_at([], [1, 2])) == 0
    with pytest.raises(molsift.StoreError, match="outside"):
        store.tanimoto_at([n], [1])


def test_rejected_records_are_rdkit_failures_with_lines(bundled_store, bundled_smi):
    _, store = bundled_store
    rows = read_smi(bundled_smi)
    lines = Path(store.rejects_path).read_text().splitlines()[1:]
    failed = {i + 1 for i, (s, _) in enumerate(rows) if Chem.MolFromSmiles(s) is None}
    assert {int(r.split("\t")[1]) for r in lines} == failed


def store_files(path):
    """The digest of every file of the store but the manifest (golden.py), and the manifest
    without its provenance."""
    files = digest(Path(path))
    assert {"smiles.blocks", "planes.data.u8", "pattern.screen.u8", "analogs.json"} <= set(files)
    files.pop("manifest.json")
    manifest = json.loads(Path(path, "manifest.json").read_text())
    manifest.pop("provenance")
    manifest.pop("checksum")  # covers the provenance too
    return files, manifest


def test_same_store_for_any_worker_count_and_compression(tmp_path, bundled_smi):
    one = molsift.ingest(bundled_smi, tmp_path / "one", workers=1, progress=False)
    three = molsift.ingest(bundled_smi, tmp_path / "three", workers=3, slabs=7, progress=False)
    gz = tmp_path / "nci.smi.gz"
    with open(bundled_smi, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    zipped = molsift.ingest(
        gz, tmp_path / "gz", workers=2, chunk_records=700, verify_count=True, progress=False
    )
    assert zipped.inputs[0]["bytes_read"] == gz.stat().st_size
    # one worker: guided slabs (shrinking to the end); --slabs 7: seven equal ones; gzip: read in
    # one go, so no compression ratio to size the last chunks by: chunks of 700 records
    assert one.tasks == len(molsift._core.guided_slabs(os.path.getsize(bundled_smi), 1))
    assert three.tasks == 7 and zipped.tasks == 8
    reference, manifest = store_files(tmp_path / "one")
    assert store_files(tmp_path / "three") == (reference, manifest)
    gz_files, gz_manifest = store_files(tmp_path / "gz")
    # rejects.tsv names its input (so its size and checksum in the manifest differ too): compared
    # below with the name replaced
    for files in (gz_files, reference, gz_manifest["files"], manifest["files"]):
        files.pop("rejects.tsv")
    assert (gz_files, gz_manifest) == (reference, manifest)
    rejects = Path(tmp_path / "gz" / "rejects.tsv").read_bytes()
    rejects = rejects.replace(str(gz).encode(), str(bundled_smi).encode())
    assert rejects == Path(tmp_path / "one" / "rejects.tsv").read_bytes()


def test_parts_merge_as_sorted_runs_with_dedupe_across_parts(tmp_path, bundled_smi):
    """The one store is written from the workers' parts merged k-way as sorted runs; with
    `--dedupe` (the copies in other parts than the first of their SMILES) the same store,
    duplicates list included, for any worker count."""
    lines = Path(bundled_smi).read_bytes().splitlines(keepends=True)
    doubled = tmp_path / "doubled.smi"  # every molecule twice, the copies far apart
    doubled.write_bytes(b"".join(lines[:300] + lines[:300]))

    seen = {}
    for workers, slabs in ((1, None), (3, 7)):
        out = tmp_path / f"d{workers}.store"
        report = molsift.ingest(
            doubled, out, workers=workers, slabs=slabs, dedupe=True, progress=False
        )
        assert report.dropped == report.duplicates >= 290
        assert report.records_in == report.molecules + report.rejected + report.dropped
        seen[workers] = store_files(out)
        assert (out / "duplicates.tsv").exists()
    assert seen[1] == seen[3]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # nothing left behind


def test_reported_store_bytes_are_the_whole_store_as_info_counts_them(tmp_path, bundled_smi):
    """`molsift ingest --json` reported as `store_bytes` the store less its substructure and
    analog indexes (files of the same store directory): it is the whole store, every file its
    manifest lists (every file but the manifest), the figure `molsift info` gives in JSON and
    the summary in text; `pattern_bytes` and `analog_bytes` are the indexes' parts of it."""
    lines = Path(bundled_smi).read_bytes().splitlines(keepends=True)
    head = tmp_path / "head.smi"
    head.write_bytes(b"".join(lines[:300]))
    out = tmp_path / "h.store"
    done = molsift_run("ingest", head, "-o", out, "-j", "1", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    on_disk = sum(p.stat().st_size for p in out.iterdir() if p.name != "manifest.json")
    info = molsift_run("info", out, "--json")
    assert info.returncode == 0, info.stderr
    assert report["store_bytes"] == on_disk == json.loads(info.stdout)["sizes"]["bytes"]
    for key, glob in (("pattern_bytes", "pattern.*"), ("analog_bytes", "analogs.*")):
        assert report[key] == sum(p.stat().st_size for p in out.glob(glob)) > 0, key
    text = molsift_run("ingest", head, "-o", out, "-j", "1", "--overwrite")
    assert text.returncode == 0, text.stderr
    assert f"store {out}: {on_disk:,} bytes," in text.stdout, text.stdout


def test_summary_says_one_in_the_singular():
    """The summary said `1 worker(s)`, `1 task(s)` and `1 calls`."""
    report = molsift.IngestReport(
        store="s.store", records_in=1, molecules=1, rejected=0, duplicates=0, dropped=0,
        seconds=0.5, workers=1, executor="serial", tasks=1, bytes_in=12, bytes_read=12,
        read_calls=1, store_bytes=1000,
    )  # fmt: skip
    text = report.summary()
    assert "on 1 worker (serial" in text and ", 1 task\n" in text and " in 1 call:" in text
    assert "(s)" not in text
    many = dataclasses.replace(report, workers=4, tasks=9, read_calls=1234).summary()
    assert "on 4 workers (" in many and ", 9 tasks\n" in many and " in 1,234 calls:" in many


def test_fingerprint_size_and_radius_are_configurable(tmp_path, bundled_smi):
    spec = molsift.FingerprintSpec(radius=3, bits=1024)
    molsift.ingest(bundled_smi, tmp_path / "s", fingerprint=spec, workers=1, progress=False)
    store = molsift.open_store(tmp_path / "s")
    assert store.fingerprint_spec.bits == 1024
    assert store.fingerprint_spec.radius == 3
    assert store.manifest["fingerprint"]["params"]["radius"] == 3
    rows = read_smi(bundled_smi)[:50]
    ref = [r for r in rdkit_reference([s for s, _ in rows], radius=3, bits=1024) if r]
    for i, (smiles, words) in zip(by_input(store), ref):
        assert store.smiles[i] == smiles
        assert np.array_equal(store.fingerprints[i], words)


def test_sdf_ingest_matches_rdkit_supplier(tmp_path, rdkit_sdf):
    report = molsift.ingest(rdkit_sdf, tmp_path / "s", workers=2, progress=False)
    store = molsift.open_store(tmp_path / "s")
    supplier = [m for m in Chem.SDMolSupplier(str(rdkit_sdf))]
    assert report.records_in == len(supplier)
    good = [m for m in supplier if m is not None]
    assert len(store) == len(good)
    starts, line = [1], 1  # 1-based first line of each block: the id when the title is blank
    for text in rdkit_sdf.read_text().split("\n")[:-1]:
        line += 1
        if text.rstrip() == "$$$$":
            starts.append(line)
    good_starts = [s for s, m in zip(starts, supplier) if m is not None]
    gen = rdFingerprintGenerator.GetMorganGenerator(radius=2, fpSize=2048)
    for i, mol, start in zip(by_input(store), good, good_starts):
        assert store.ids[i] == (mol.GetProp("_Name") or str(start))
        assert store.source_lines[i] == start
        assert store.smiles[i] == Chem.MolToSmiles(mol)
        words = np.packbits(gen.GetFingerprintAsNumPy(mol).astype(bool), bitorder="little").view(
            "<u8"
        )
        assert np.array_equal(store.fingerprints[i], words)


BAD_SMILES = (
    b"CCO ok1\n"
    b"C1CC unclosed_ring\n"
    b"\n"
    b"# a comment line\n"
    b"c1ccccc1 benzene\r\n"
    b"N(C)(C)(C)(C)C pentavalent_nitrogen\n"
    b"CC\x00O has_nul\n" + b"C" * 1_000_000 + b" one_megabyte\n" + b"CCN ok2\n"
    b"CC(=O truncated_last_line"
)


def reject_rows(store):
    rows = Path(store.rejects_path).read_text().splitlines()
    assert rows[0] == "source\tline\toffset\tid\treason"
    return {r.split("\t")[3]: r.split("\t") for r in rows[1:]}


@pytest.mark.parametrize("workers", [1, 2])
def test_bad_smiles_input_is_counted_and_rejected_with_lines(tmp_path, workers):
    src = tmp_path / "bad.smi"
    src.write_bytes(BAD_SMILES)
    report = molsift.ingest(
        src, tmp_path / "s", workers=workers, slabs=5, verify_count=True, progress=False
    )
    store = molsift.open_store(tmp_path / "s")
    assert store.ids.take(by_input(store)) == ["ok1", "benzene", "ok2"]
    assert (report.records_in, report.molecules, report.rejected) == (8, 3, 5)
    rejects = reject_rows(store)
    assert {k: int(v[1]) for k, v in rejects.items()} == {
        "unclosed_ring": 2,
        "pentavalent_nitrogen": 6,
        "has_nul": 7,
        "8": 8,
        "truncated_last_line": 10,
    }  # the 1 MB record is not parsed, so it has no id
    assert "syntax error" in rejects["unclosed_ring"][4]
    assert "valence" in rejects["pentavalent_nitrogen"][4].lower()
    assert "NUL" in rejects["has_nul"][4]
    assert "longer than" in rejects["8"][4]
    offsets = {k: int(v[2]) for k, v in rejects.items()}
    assert BAD_SMILES[offsets["has_nul"] :].startswith(b"CC\x00O")
    assert BAD_SMILES[offsets["truncated_last_line"] :] == b"CC(=O truncated_last_line"


def test_sdf_with_missing_terminator_is_rejected_not_merged(tmp_path, rdkit_sdf):
    blocks = rdkit_sdf.read_text().split("$$$$\n")[:4]
    text = blocks[0] + "$$$$\n" + blocks[1] + blocks[2] + "$$$$\n" + blocks[3]  # 1+2 merged, 3 open
    src = tmp_path / "bad.sdf"
    src.write_text(text)
    report = molsift.ingest(src, tmp_path / "s", workers=2, progress=False)
    assert (report.records_in, report.molecules, report.rejected) == (3, 2, 1)
    (row,) = reject_rows(molsift.open_store(tmp_path / "s")).values()
    assert "missing" in row[4] and int(row[1]) == blocks[0].count("\n") + 2


def test_existing_output_is_refused(tmp_path, bundled_smi):
    (tmp_path / "s").mkdir()
    with pytest.raises(molsift.StoreError, match="already exists"):
        molsift.ingest(bundled_smi, tmp_path / "s", workers=1, progress=False)


def test_missing_input_names_the_file(tmp_path):
    with pytest.raises(molsift.InputError, match=r"nope\.smi"):
        molsift.ingest(tmp_path / "nope.smi", tmp_path / "s", workers=1, progress=False)


def test_killed_ingest_leaves_no_store(tmp_path, bundled_smi):
    big = tmp_path / "big.smi"
    big.write_bytes(bundled_smi.read_bytes() * 20)
    out = tmp_path / "s"
    proc = subprocess.Popen(
        [sys.executable, "-m", "molsift", "ingest", str(big), "-o", str(out), "-q", "-j", "2"],
        start_new_session=True,
    )
    # kill while the workers are writing parts (a fixed sleep could land after the rename)
    deadline = time.time() + 120
    while not any(tmp_path.glob(".s.ingest-*/part-*")) and time.time() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "ingest finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not out.exists()
    leftovers = [p for p in tmp_path.iterdir() if p.name.startswith(".s.")]
    for p in leftovers:  # temporary parts never open as a store
        with pytest.raises(molsift.StoreError):
            molsift.open_store(p)
    report = molsift.ingest(bundled_smi, out, workers=1, progress=False)
    assert report.records_in == molsift.open_store(out).counts["records_in"]


def test_compressed_chunks_shrink_towards_the_end(tmp_path, bundled_smi):
    from molsift.inputs import ChunkPlanner, describe_input

    # stored (level 0) and 20 copies: a few MiB, so the decoder reads the file in several calls
    # and sees a compression ratio before the end
    gz = tmp_path / "nci.smi.gz"
    with gzip.open(gz, "wb", compresslevel=0) as dst:
        dst.write(bundled_smi.read_bytes() * 20)
    inp = describe_input(gz)
    reader = {"buffer_size": None, "max_record_bytes": None}

    def sizes(slabs, workers):  # as ingest plans them: fixed under MPI (slabs given), else guided
        chunks = ChunkPlanner(inp, reader, 400, None if slabs else workers)
        return [len(records) for records, _ in chunks]

    fixed, guided = sizes(7, 4), sizes(None, 4)
    assert sum(fixed) == sum(guided) == 20 * molsift.count_records(bundled_smi)["records"]
    assert set(fixed[:-1]) == {400}  # under MPI (slabs given): every chunk the same
    assert max(guided) == 400 and min(guided) >= 400 // 16
    assert guided[-2] < guided[0]  # the last chunks are small, so the workers finish together


CONTROL_CHAR_IDS = (
    b"CCO id\rmore\n"  # a lone \r inside the id: the store keeps ids one per line
    b"CCN ok1\n"
    b"CCC tab\tinside\n"  # a tab is not a line break: stored
    b"c1ccccc1 form\x0cfeed\n"
    b"CCCl ok2\n"
)


def test_id_with_lone_cr_is_rejected_and_counted_not_fatal(tmp_path):
    """Issue 14, defect 6: an id holding a lone \\r aborted the whole ingest with exit 2."""
    src = tmp_path / "cr.smi"
    src.write_bytes(CONTROL_CHAR_IDS)
    proc = subprocess.run(
        [sys.executable, "-m", "molsift", "ingest", str(src), "-o", str(tmp_path / "s"), "-q"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    store = molsift.open_store(tmp_path / "s")
    assert store.ids.take(by_input(store)) == ["ok1", "tab\tinside", "ok2"]
    m = store.manifest["counts"]
    assert (m["records_in"], m["molecules"], m["rejected"]) == (5, 3, 2)
    rows = Path(store.rejects_path).read_text().splitlines()[1:]
    assert [int(r.split("\t")[1]) for r in rows] == [1, 4]
    assert all("control character" in r.split("\t")[4] for r in rows)
    assert "U+000D" in rows[0] and "U+000C" in rows[1]


def test_csv_id_and_sdf_title_with_line_break_are_rejected(tmp_path, rdkit_sdf):
    """The same rule for a CSV id column and an SDF title (the id of an SDF record)."""
    csv = tmp_path / "ids.csv"
    csv.write_bytes(b'smiles,name\nCCO,"a\rb"\nCCN,fine\n')
    report = molsift.ingest(csv, tmp_path / "c", id_col="name", progress=False)
    assert (report.records_in, report.molecules, report.rejected) == (2, 1, 1)
    blocks = rdkit_sdf.read_text().split("$$$$\n")[:2]
    sdf = tmp_path / "t.sdf"
    sdf.write_text(
        "bad\rtitle" + blocks[0].split("\n", 1)[1] + "$$$$\n" + blocks[1] + "$$$$\n", newline=""
    )
    report = molsift.ingest(sdf, tmp_path / "t", progress=False)
    assert (report.records_in, report.molecules, report.rejected) == (2, 1, 1)
    (row,) = reject_rows(molsift.open_store(tmp_path / "t")).values()
    assert "U+000D" in row[4] and row[1] == "1"


def test_utf8_bom_is_not_kept_in_the_first_sdf_title_or_smiles_id(tmp_path, rdkit_sdf):
    """Issue 14, defect 8: a UTF-8 BOM stayed in the first SDF title."""
    block = rdkit_sdf.read_text().split("$$$$\n")[0]
    sdf = tmp_path / "bom.sdf"
    sdf.write_bytes(b"\xef\xbb\xbf" + ("first" + block[block.index("\n") :] + "$$$$\n").encode())
    molsift.ingest(sdf, tmp_path / "s", progress=False)
    assert list(molsift.open_store(tmp_path / "s").ids) == ["first"]
    smi = tmp_path / "bom.smi"
    smi.write_bytes(b"\xef\xbb\xbfCCO ethanol\nCCN amine\n")
    report = molsift.ingest(smi, tmp_path / "m", progress=False)
    store = molsift.open_store(tmp_path / "m")
    assert report.rejected == 0 and store.ids.take(by_input(store)) == ["ethanol", "amine"]
    assert store.smiles.take(by_input(store)) == ["CCO", "CCN"]


def molsift_ingest_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "molsift", "ingest", *map(str, args)], capture_output=True, text=True
    )


def test_empty_input_exits_3_nothing_usable(tmp_path):
    """Issue 14, defect 7: an empty input exited 0."""
    src = tmp_path / "empty.smi"
    src.write_text("# only a comment\n\n")
    proc = molsift_ingest_cli(src, "-o", tmp_path / "s", "-q")
    assert proc.returncode == 3
    assert "nothing usable" in proc.stderr and "no records" in proc.stderr
    assert molsift.open_store(tmp_path / "s").manifest["counts"]["records_in"] == 0


def test_all_records_rejected_exits_3_and_keeps_the_rejects(tmp_path):
    """Issue 14, defect 7: a binary file (every record rejected) exited 0."""
    src = tmp_path / "binary.smi"
    src.write_bytes(bytes(range(256)) * 8)
    proc = molsift_ingest_cli(src, "-o", tmp_path / "s")
    assert proc.returncode == 3, proc.stderr
    assert "nothing usable" in proc.stderr and "rejects.tsv" in proc.stderr
    store = molsift.open_store(tmp_path / "s")
    c = store.manifest["counts"]
    assert c["molecules"] == 0 and c["rejected"] == c["records_in"] > 0
    assert len(Path(store.rejects_path).read_text().splitlines()) == c["rejected"] + 1


# ------------------------------------------------ info --json honors -n (the first molecules)


def test_info_json_lists_the_first_n_molecules_as_the_text_does(tmp_path):
    """`molsift info STORE --json -n N` left -n out (the text lists the first N molecules):
    --json now holds them as `first_molecules` (position, id, canonical SMILES), the text's
    molecules and as many, for a store and for a set (its positions)."""
    src = tmp_path / "five.smi"
    src.write_text("CCO a\nc1ccccc1 b\nCCN c\nCC(=O)O d\nOCCO e\n")
    one, many = tmp_path / "five.store", tmp_path / "five.set"
    molsift.ingest(src, one, workers=1, progress=False)
    molsift.ingest(src, many, workers=1, progress=False, shards=2)
    for path in (one, many):
        store = molsift.open_store(path)
        for n, shown in ((2, 2), (0, 0), (99, 5)):
            doc = json.loads(molsift_run("info", path, "--json", "-n", n).stdout)
            want = [{"position": i, "id": store.ids[i], "smiles": store.smiles[i]}
                    for i in range(shown)]  # fmt: skip
            assert doc["first_molecules"] == want, (path, n)
            text = molsift_run("info", path, "-n", n).stdout.splitlines()
            rows = [line.split() for line in text[len(text) - shown :]] if shown else []
            assert [[str(m["position"]), m["id"], m["smiles"]] for m in want] == rows, text
        doc = json.loads(molsift_run("info", path, "--json").stdout)  # -n's default, 5
        assert len(doc["first_molecules"]) == 5


# ---------------------------- a run that stores no molecule says why, where, and what to try


@pytest.mark.parametrize(
    "name, content, options, reason, hint",
    [
        ("bad.smi", "xx( a\nxx( b\nxx( c\nxx( d\n", [],
         "4 for 'RDKit could not parse the SMILES (syntax error)'",
         "for a table give --format csv --smiles-col NAME"),
        ("ids.csv", "id,smiles\nxx,CCO\nyy,CCN\nzz,CCC\nww,CO\n", ["--smiles-col", "id"],
         "for 'RDKit could not parse the SMILES (syntax error)'",
         "is the SMILES in another column? give --smiles-col NAME"),
        ("nul.smi", "C\0C a\nC\0N b\nC\0O c\nC\0S d\n", [], "4 for 'record holds a NUL byte'",
         None),
    ],
    ids=["smiles", "csv-column", "nul"],
)  # fmt: skip
def test_every_record_rejected_says_the_commonest_reason_and_keeps_the_store(
    tmp_path, name, content, options, reason, hint
):
    """`molsift ingest bad.smi -o STORE` where every record is rejected said only
    "nothing usable: all 4 records were rejected (reasons in STORE/rejects.tsv)": now one
    `molsift: error:` line with the commonest reason, the rejects file, that the empty store
    is kept, and (a reason of the SMILES field) the column options to try; exit 3; the run
    is complete (counts add up, every reject listed)."""
    src = tmp_path / name
    src.write_text(content)
    out = tmp_path / "s.store"
    proc = molsift_run("ingest", src, "-o", out, "-j", "1", "-q", *options)
    assert proc.returncode == 3, proc.stderr
    line = proc.stderr
    assert line.count("\n") == 1 and "Traceback" not in line, line
    assert line.startswith(
        "molsift: error: nothing usable: no molecule stored: all 4 records were rejected, "
    ), line
    assert reason in line and line.rstrip().endswith("; exit status 3"), line
    assert f"each reject is listed in {out}/rejects.tsv (the store {out} is kept" in line, line
    assert (hint in line) if hint else ("--smiles-col" not in line), line
    c = molsift.open_store(out).manifest["counts"]
    assert (c["records_in"], c["molecules"], c["rejected"]) == (4, 0, 4)
    assert len((out / "rejects.tsv").read_text().splitlines()) == 1 + 4


def test_nothing_stored_names_the_reason_of_the_first_rejects_it_read(
    tmp_path, monkeypatch, capsys
):
    """`ingestion.reject_reasons` reads at most `rows` rejects (a huge garbage file's list is
    not read whole to say one reason); the line then says of how many the reason is."""
    from molsift import ingestion
    from molsift.cli.ingest import nothing_stored

    src = tmp_path / "bad.smi"
    src.write_text("xx( a\nC\0C b\nxx( c\nC\0C d\nC\0C e\n")
    report = molsift.ingest(src, tmp_path / "s.store", workers=1, progress=False)
    counted = ingestion.reject_reasons(report.store)
    assert counted == {"RDKit could not parse the SMILES (syntax error)": 2,
                       "record holds a NUL byte": 3}  # fmt: skip
    assert sum(ingestion.reject_reasons(report.store, rows=3).values()) == 3
    real = ingestion.reject_reasons
    monkeypatch.setattr(ingestion, "reject_reasons", lambda store: real(store, rows=3))
    assert nothing_stored(report) == 3
    err = capsys.readouterr().err
    assert "all 5 records were rejected, 2 of the first 3 for 'RDKit could not parse" in err
    assert "(the commonest reason)" in err and "--format csv --smiles-col NAME" in err, err


def test_an_input_of_an_unknown_suffix_is_said_to_be_read_as_smiles(tmp_path, bundled_smi):
    """`molsift count x.cube` says on stderr that a file of an unknown suffix is read as
    SMILES; `molsift ingest lib.dat -o S` read it so without a word. It says it now, once for
    each such input (a file given twice, once), as count says it, unless --format was given."""
    lines = bundled_smi.read_text().splitlines(keepends=True)
    dat, other, smi = tmp_path / "lib.dat", tmp_path / "more", tmp_path / "lib.smi"
    dat.write_text("".join(lines[:20]))
    other.write_text("".join(lines[20:30]))
    smi.write_text("".join(lines[30:40]))
    r = molsift_run("ingest", dat, other, dat, smi, "-o", tmp_path / "s.store", "-j", "1", "-q")
    assert r.returncode == 0, r.stderr
    notes = [ln for ln in r.stderr.splitlines() if ln.startswith("molsift: note: ")]
    assert notes == [
        f"molsift: note: {dat}: read as SMILES (one record a line): its suffix '.dat' names no "
        "input format (SMILES .smi/.txt, CSV .csv/.tsv, SDF .sdf/.sd/.mol); give --format to "
        "read it as another",
        f"molsift: note: {other}: read as SMILES (one record a line): its name, without a "
        "suffix, names no input format (SMILES .smi/.txt, CSV .csv/.tsv, SDF .sdf/.sd/.mol); "
        "give --format to read it as another",
    ], r.stderr
    out = tmp_path / "t.store"
    r = molsift_run("ingest", dat, "--format", "smiles", "-o", out, "-j", "1", "-q")
    assert r.returncode == 0 and "note" not in r.stderr, r.stderr
