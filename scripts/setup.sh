#!/usr/bin/env bash
# Installs everything molsift needs into ./.venv (Python packages from PyPI, the Rust build via
# maturin, the serve page's JavaScript from npm: scripts/vendor_js.sh), tcmalloc from Debian's
# packages (libtcmalloc-minimal4: RDKit runs faster on it, see python/molsift/allocator.py), when
# MOLSIFT_WITH_MPI=1 Open MPI, and when MOLSIFT_WITH_BROWSER=1 Chromium and chromedriver (the
# browser tests of molsift serve's page). Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if [ "${MOLSIFT_WITH_MPI:-0}" = 1 ] && ! command -v mpirun >/dev/null 2>&1; then
  echo "setup: installing Open MPI (Debian packages openmpi-bin libopenmpi-dev)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
fi
if [ "${MOLSIFT_WITH_BROWSER:-0}" = 1 ] && ! { command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; }; then
  echo "setup: installing Chromium for the browser tests (Debian packages chromium chromium-driver)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi
have_tcmalloc() {
  for f in /usr/lib/*/libtcmalloc_minimal.so.4 /usr/lib/libtcmalloc_minimal.so.4 /usr/lib64/libtcmalloc_minimal.so.4; do
    [ -e "$f" ] && return 0
  done
  return 1
}
if ! have_tcmalloc; then
  echo "setup: installing tcmalloc (Debian package libtcmalloc-minimal4)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libtcmalloc-minimal4 >/dev/null; } ||
    echo "setup: tcmalloc not installed: molsift runs on the system allocator (slower RDKit work)" >&2
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found: install Rust (https://rustup.rs) first" >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
EXTRA=""
[ "${MOLSIFT_WITH_MPI:-0}" = 1 ] && EXTRA="mpi4py>=3.1"
.venv/bin/python -m pip install -q "maturin>=1.5,<2" "numpy>=1.22" "rdkit==2026.9.1" "tqdm>=4" "matplotlib>=3.5" \
  "fastapi>=0.110" "uvicorn>=0.29" "httptools>=0.6" "uvloop>=0.19" "orjson>=3.9" \
  "vina==1.2.7" "meeko==0.8.0" "scipy>=1.10" "gemmi==0.7.5" "h5py>=3.8" "pytest>=7" "hypothesis>=6" "selenium>=4.10" "ruff==0.17.6" \
  "arthorian-quest==0.2.3" "fragmenstein==1.1.3" "smallworld-api==1.1.4" "pandas>=2" "requests>=2.28" $EXTRA
# rdkit is pinned: tests/data/golden_stores.json holds the exact stores (canonical SMILES) of this
# version (tests/golden.py re-records them). arthorian-quest and smallworld-api are the published
# Arthor and SmallWorld clients tests/test_serve_clients.py runs against molsift serve (pinned:
# the versions docs/serve.md names); arthorian-quest imports fragmenstein, pandas and requests
# without declaring them.
# The search page's structure editor (JSME) and /docs' Swagger UI, from npm into the package.
bash scripts/vendor_js.sh || echo "setup: JSME and Swagger UI not vendored: the page has no editor, /docs no UI" >&2
# Build the Rust extension in release mode (with the C I/O tracer, crates/tracer: cc/gcc) and
# install molsift into the venv (editable).
VIRTUAL_ENV="$PWD/.venv" PATH="$PWD/.venv/bin:$PATH" .venv/bin/maturin develop --release -q
# Parquet output of `molsift search -o hits.parquet`.
.venv/bin/python -m pip install -q "pyarrow>=12" ||
  echo "setup: pyarrow not installed: molsift search cannot write .parquet (TSV works)" >&2
# pydarshan for Darshan logs in insights (the I/O tracer of `molsift profile` is part of the
# Rust build above: crates/tracer).
.venv/bin/python -m pip install -q "darshan>=3.4" ||
  echo "setup: pydarshan not installed: molsift insights cannot read *.darshan logs" >&2
echo "setup: molsift installed in .venv ($(.venv/bin/molsift --version))"
