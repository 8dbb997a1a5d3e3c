"""Shared fixtures: the bundled data, RDKit's own sample files, and a runner for real mpirun."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUNDLED_SMI = ROOT / "data" / "nci_first_5k.smi"
SHARED_DATA = ROOT.parent / "shared" / "data"


def rdkit_data(*parts: str) -> Path:
    import rdkit

    return Path(rdkit.__file__).parent.joinpath("Data", *parts)


@pytest.fixture(scope="session")
def bundled_smi() -> Path:
    return BUNDLED_SMI


@pytest.fixture(scope="session")
def rdkit_sdf() -> Path:
    """200 real molecules with properties, shipped in the rdkit wheel."""
    return rdkit_data("NCI", "first_200.props.sdf")


def molsift_cmd() -> list:
    return [sys.executable, "-m", "molsift"]


def mpirun_cmd(n: int) -> list:
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun not installed (scripts/test.sh installs Open MPI)")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("mpi4py not installed")
    return [mpirun, "-n", str(n), "--oversubscribe", "--bind-to", "none"]


def mpi_env() -> dict:
    """The environment MPI tests run mpirun in (root allowed, oversubscription on)."""
    return dict(
        os.environ,
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_rmaps_base_oversubscribe="1",
    )


def run_mpi(n: int, args: list, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        mpirun_cmd(n) + molsift_cmd() + args,
        env=mpi_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
