#!/usr/bin/env bash
# All tests: installs what they need (Python packages, the Rust build, Open MPI, Chromium), then runs the
# lints (ruff check, ruff format --check, cargo fmt --check, cargo clippy -D warnings; rules in
# pyproject.toml and Cargo.toml), the Rust tests (cargo test) and the Python tests (pytest, MPI
# tests with real mpirun).
set -euo pipefail
cd "$(dirname "$0")/.."
MOLSIFT_WITH_MPI=1 MOLSIFT_WITH_BROWSER=1 bash scripts/setup.sh
echo "== Python lints (ruff: rules in pyproject.toml)"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== Rust lints (rustfmt, clippy: levels in Cargo.toml's [workspace.lints])"
if command -v rustup >/dev/null 2>&1; then
  rustup component add clippy rustfmt >/dev/null 2>&1 || true
fi
cargo fmt --all --check
cargo clippy --workspace --all-targets -q -- -D warnings
echo "== Rust tests"
cargo test --workspace --exclude molsift-py -q
echo "== Python tests"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
.venv/bin/python -m pytest -q "$@"
