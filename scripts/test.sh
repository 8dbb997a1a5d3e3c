#!/usr/bin/env bash
# All tests: installs what they need (Python packages, the Rust build, Open MPI), then runs the
# Rust tests (cargo test) and the Python tests (pytest, MPI tests with real mpirun).
set -euo pipefail
cd "$(dirname "$0")/.."
MOLSIFT_WITH_MPI=1 bash scripts/setup.sh
echo "== Rust tests"
cargo test --workspace --exclude molsift-py -q
echo "== Python tests"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
.venv/bin/python -m pytest -q "$@"
