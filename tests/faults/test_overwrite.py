"""Overwrite safety under pytest (tests/faults/overwrite.py): --overwrite never deletes a
directory or file that is not a store, and still replaces a real store."""

from __future__ import annotations

import pytest

from . import overwrite
from .common import FAIL

KNOWN: dict = {}  # check name -> reason, for checks failing today because of a defect


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            n, marks=[pytest.mark.xfail(strict=True, reason=KNOWN[n])] if n in KNOWN else []
        )
        for n in overwrite.CHECKS
    ],
)
def test_overwrite(name, tmp_path):
    case = overwrite.CHECKS[name](tmp_path)
    assert case.outcome != FAIL, str(case)
