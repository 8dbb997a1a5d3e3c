"""Reading records from Python: slabs cover every record exactly once, counts equal reads,
compressed input reads the same records, read amplification stays near 1."""

from __future__ import annotations

import gzip
import os

import pytest

import molsift
from molsift import _core


def all_records(path, **kw):
    return list(molsift.read_records(path, **kw))


@pytest.mark.parametrize("slabs", [1, 2, 3, 7, 64])
@pytest.mark.parametrize("buffer_size", [1, 100, 1 << 20])
def test_slabs_cover_each_record_once(bundled_smi, slabs, buffer_size):
    whole = all_records(bundled_smi)
    size = os.path.getsize(bundled_smi)
    got, bytes_read = [], 0
    for start, end in _core.split_slabs(size, slabs):
        src = _core.RecordSource(
            str(bundled_smi), "smiles", slab=(start, end), buffer_size=buffer_size
        )
        while batch := src.next_batch(1000):
            got.extend(batch)
        bytes_read += src.counters()["bytes_read"]
    assert got == whole
    assert bytes_read / size <= 1.01 + slabs * 4096 / size


def test_count_equals_records_read(bundled_smi, rdkit_sdf):
    for path in (bundled_smi, rdkit_sdf):
        assert molsift.count_records(path)["records"] == len(all_records(path))


def test_first_records_of_bundled_file(bundled_smi):
    first = all_records(bundled_smi)[:2]
    assert first[0] == ("CC1=CC(=O)C=CC1=O", "1", 1, 0, None)
    assert first[1][1:3] == ("2", 2)


def test_gzip_reads_the_same_records(tmp_path, bundled_smi):
    gz = tmp_path / "x.smi.gz"
    gz.write_bytes(gzip.compress(bundled_smi.read_bytes()))
    assert all_records(gz) == all_records(bundled_smi)
    counted = molsift.count_records(gz)
    assert counted["records"] == 4999 and counted["compression"] == "gzip"


def test_csv_with_named_columns(tmp_path):
    csv = tmp_path / "x.csv"
    csv.write_text('name,smiles,score\n"a, b",CCO,1\nc2,c1ccccc1,2\n')
    recs = all_records(csv, id_col="name")
    assert [(r[0], r[1], r[2]) for r in recs] == [("CCO", "a, b", 2), ("c1ccccc1", "c2", 3)]
    assert molsift.count_records(csv)["records"] == 2


def test_csv_missing_column_is_a_clear_error(tmp_path):
    csv = tmp_path / "x.csv"
    csv.write_text("name,structure\na,CCO\n")
    with pytest.raises(molsift.InputError, match=r"x\.csv.*smiles.*name, structure"):
        all_records(csv)


def test_smiles_header_is_detected(tmp_path):
    smi = tmp_path / "x.smi"
    smi.write_text("SMILES Name\nCCO ethanol\n")
    assert [r[:3] for r in all_records(smi)] == [("CCO", "ethanol", 2)]
