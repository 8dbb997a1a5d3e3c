"""The store corrupter's short run under pytest (tests/faults/corrupter.py): every file of a
store damaged once (the corruptions taken in turn) plus two version edits; info and search
must refuse with a clear error naming the file or answer exactly as on the undamaged store."""

from __future__ import annotations

import os

import pytest

from . import corrupter
from .common import FAIL

# the store's files as the product lists them, plus the column index's and the substructure
# index's (docs/store-format.md); test_every_store_file_is_covered fails when a store holds a
# file not in this list
COLUMN_FILES = ["columns.json", "columns.planes.u64", "columns.order.u64"]


def _files():
    from molsift import _core

    return sorted(set(_core.STORE_FILES.values()) | set(COLUMN_FILES) | set(_core.PATTERN_FILES))


KNOWN: dict = {}  # (file, corruption) -> reason, for cases failing today because of a defect


def _param(spec):
    marks = [pytest.mark.xfail(strict=True, reason=KNOWN[spec])] if spec in KNOWN else []
    return pytest.param(spec, id=":".join(spec), marks=marks)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("corrupter")
    built = corrupter.build_stores(workdir)
    return workdir, built, corrupter.baseline(built)


def test_every_store_file_is_covered(stores):
    _, built, _ = stores
    assert sorted(os.listdir(built["base"])) == _files()


@pytest.mark.slow
@pytest.mark.parametrize("spec", [_param(s) for s in corrupter.short_specs(_files())])
def test_damaged_store(spec, stores):
    workdir, built, expected = stores
    failed = [
        str(c) for c in corrupter.run_spec(workdir, built, expected, *spec) if c.outcome == FAIL
    ]
    assert not failed, "\n".join(failed)
