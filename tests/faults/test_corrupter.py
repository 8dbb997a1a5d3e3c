"""The store corrupter's short run under pytest (tests/faults/corrupter.py): every file of the
one store (`molsift ingest`'s, version 2 with every index) and of a version-1 store damaged
once (the corruptions taken in turn) plus a version edit of each JSON header; every verb that
reads the one store (info, search -t/-k, lookup, lookup --ids, substructure, analogs, the
server's exact search), and `upgrade` of the version-1 store, must refuse with a clear error
naming the file or answer exactly as on the undamaged store."""

from __future__ import annotations

import pytest
from conftest import ONE_STORE_FILES

from . import corrupter
from .common import FAIL

# each format's files as the product lists them (docs/store-format.md): the one store (version
# 2) as `molsift ingest` writes it, every index included (conftest.py's ONE_STORE_FILES);
# version 1 (read only by `molsift upgrade`) with its column, substructure and analog indexes;
# test_every_store_file_is_covered fails when a store holds a file not in these lists
COLUMN_FILES = ["columns.json", "columns.planes.u64", "columns.order.u64"]
ANALOG_FILES = [f for f in ONE_STORE_FILES if f.startswith("analogs.")]


def _files() -> dict[str, list[str]]:
    from molsift import _core

    v1 = set(_core.STORE_FILES.values()) | set(COLUMN_FILES) | set(_core.PATTERN_FILES)
    v1 |= set(ANALOG_FILES)
    return {"v2": ONE_STORE_FILES, "v1": sorted(v1)}


#: (format, file, corruption) -> reason, for cases failing today from a defect (strict: a case
#: that passes must leave the list)
KNOWN: dict = {}


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
    assert corrupter.store_files(built) == _files()


@pytest.mark.slow
@pytest.mark.parametrize("spec", [_param(s) for s in corrupter.short_specs(_files())])
def test_damaged_store(spec, stores):
    workdir, built, expected = stores
    failed = [
        str(c) for c in corrupter.run_spec(workdir, built, expected, *spec) if c.outcome == FAIL
    ]
    assert not failed, "\n".join(failed)
