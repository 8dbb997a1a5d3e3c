"""The concurrency checker's short run under pytest (tests/faults/concurrency.py): searches
during `ingest --overwrite`, readers of every verb during every rewrite of a store, concurrent
`molsift index`, concurrent ingests to one path."""

from __future__ import annotations

import pytest

from . import concurrency
from .common import FAIL

ROUNDS = {
    "search_during_overwrite": 2,
    "readers_during_rewrites": 1,
    "concurrent_index": 1,
    "concurrent_ingest": 2,
}
KNOWN: dict = {}  # check name -> reason, for checks failing today because of a defect


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            n, marks=[pytest.mark.xfail(strict=True, reason=KNOWN[n])] if n in KNOWN else []
        )
        for n in ROUNDS
    ],
)
def test_concurrent_runs(name, tmp_path):
    cases = getattr(concurrency, name)(tmp_path, ROUNDS[name])
    failed = [str(c) for c in cases if c.outcome == FAIL]
    assert not failed, "\n".join(failed)
