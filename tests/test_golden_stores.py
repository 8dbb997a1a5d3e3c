"""The same stores byte for byte whatever the worker or rank count: every bundled-data input
ingested into the one store (every index) at 1, 2 and 4 workers and under `mpirun -n 1..3` gives
exactly the files recorded in `tests/data/golden_stores.json` (see `tests/golden.py`)."""

from __future__ import annotations

import json

import golden
import pytest
from conftest import mpirun_cmd

RECORDED = json.loads(golden.GOLDEN.read_text())


def _params() -> list:
    out = []
    for name in golden.INPUTS:
        for config, ranks, _ in golden.CONFIGS:
            marks = [pytest.mark.mpi] if ranks else []
            out.append(pytest.param(name, config, marks=marks, id=f"{name}-{config}"))
    return out


@pytest.mark.parametrize("name,config", _params())
def test_store_is_byte_for_byte_the_recorded_one(tmp_path, name, config):
    if config.startswith("mpi"):
        mpirun_cmd(1)  # skips when Open MPI or mpi4py is missing
    assert golden.rdkit_version() == RECORDED["rdkit"], (
        f"the golden stores were recorded with RDKit {RECORDED['rdkit']} (scripts/setup.sh pins "
        f"it); this is {golden.rdkit_version()}: canonical SMILES may differ"
    )
    got = golden.build(tmp_path / "run", name, config)
    want = RECORDED["stores"][name]
    assert sorted(got) == sorted(want), "a different set of files"
    differ = [f for f in want if got[f] != want[f]]
    assert not differ, f"{name} under {config}: {differ} differ from the recorded store"
