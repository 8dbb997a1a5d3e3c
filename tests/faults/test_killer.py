"""The killer's short run under pytest (tests/faults/killer.py): two kill -9s per verb (ingest,
index, screen) at seeded moments, then the next run; same result as an uninterrupted run, no
orphan processes, no leftover work files."""

from __future__ import annotations

import pytest

from . import killer
from .common import FAIL

KNOWN: dict = {}  # (verb, seed) -> reason, for cases failing today because of a defect


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("killer")


_VERBS: dict = {}


def _verb(name, workdir):
    if name not in _VERBS:
        _VERBS[name] = killer.VERBS[name](workdir)
        _VERBS[name].reference()
    return _VERBS[name]


@pytest.mark.slow
@pytest.mark.parametrize("spec", [pytest.param((v, s), id=f"{v}-seed{s}", marks=[
    pytest.mark.xfail(strict=True, reason=KNOWN[(v, s)])] if (v, s) in KNOWN else [])
    for v in killer.VERBS for s in range(2)])
def test_kill_then_next_run(spec, workdir):
    verb, seed = spec
    failed = [str(c) for c in killer.kill_case(_verb(verb, workdir), seed) if c.outcome == FAIL]
    assert not failed, "\n".join(failed)
