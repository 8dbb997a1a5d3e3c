"""Shared fixtures: the bundled data, RDKit's own sample files, and a runner for real mpirun."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUNDLED_SMI = ROOT / "data" / "nci_first_5k.smi"
BUNDLED_CUBE = ROOT / "data" / "water_density_16.cube"
SHARED_DATA = ROOT.parent / "shared" / "data"

#: the one store's files as `molsift ingest` writes them (docs/store-format.md), every index
#: included; test_store_safety.py and the fault suite's corrupter fail when a store holds another
ONE_STORE_FILES = [
    "analogs.deletions.fuse",
    "analogs.failed.tsv",
    "analogs.json",
    "analogs.keys.u128",
    "analogs.offsets.u32",
    "analogs.positions.u32",
    "analogs.shapes.u16",
    "analogs.wl.u64",
    "ids.blocks",
    "input_order.packed",
    "manifest.json",
    "pattern.graphs.zst",
    "pattern.json",
    "pattern.screen.u8",
    "planes.checkpoints.u32",
    "planes.codes.u8",
    "planes.data.u8",
    "planes.json",
    "planes.order",
    "planes.parts.u8",
    "rejects.tsv",
    "smiles.blocks",
    "smiles.lookup",
    "source_lines.packed",
]


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


# File names in documented command lines (README, --help examples): an argument that looks like
# one is an input, unless it follows an output option; a line runs only when its inputs exist
# (bundled or made by an earlier line).
PATHLIKE = re.compile(
    r"^[\w./-]+\.(smi|csv|tsv|sdf|gz|zst|store|run|json|darshan|parquet|png|cube|npy|h5)(/[\w.]+)?$"
)
OUTPUT_OPTIONS = {"-o", "--output", "--io-log"}
VENV_BIN = Path(sys.executable).parent


def fresh_dir(tmp_path: Path) -> Path:
    """A directory holding only the bundled data (data/nci_first_5k.smi and
    data/water_density_16.cube), like a new clone's."""
    (tmp_path / "data").mkdir()
    shutil.copy(BUNDLED_SMI, tmp_path / "data" / BUNDLED_SMI.name)
    shutil.copy(BUNDLED_CUBE, tmp_path / "data" / BUNDLED_CUBE.name)
    return tmp_path


def env_with_venv() -> dict:
    """The environment with the venv's bin (the `molsift` command) first on PATH."""
    return dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")


def runnable(words: list, cwd: Path) -> bool:
    """A molsift line whose input files all exist in `cwd` (profile runs other programs; serve
    runs until stopped: tests/test_serve.py starts servers itself)."""
    if words[:1] != ["molsift"] or "profile" in words or words[1:2] == ["serve"]:
        return False
    inputs = [
        w
        for prev, w in zip(["", *words], words)
        if prev not in OUTPUT_OPTIONS and PATHLIKE.match(w)
    ]
    return all((cwd / w).exists() for w in inputs)


def run_documented_line(line: str, cwd: Path) -> list | None:
    """Runs a documented command line in `cwd` with the venv's `molsift` when it is runnable
    (`runnable`) and checks that it exits with 0. Returns its words, None when not run."""
    words = shlex.split(line, comments=True)
    if not runnable(words, cwd):
        return None
    proc = subprocess.run(
        words, cwd=cwd, env=env_with_venv(), capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"{line}\n{proc.stderr}"
    return words


def molsift_cmd() -> list:
    return [sys.executable, "-m", "molsift"]


def molsift_run(*args, env=None, cwd=None, timeout=300) -> subprocess.CompletedProcess:
    """`molsift ARGS` in a subprocess, to completion, with text stdout and stderr."""
    return subprocess.run(
        molsift_cmd() + [str(a) for a in args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
    )


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
