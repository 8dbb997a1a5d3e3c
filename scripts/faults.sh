#!/usr/bin/env bash
# The fault-injection harness of issue 14 (tests/faults/): `bash scripts/faults.sh` runs the
# short run, `--long` the long one (about 25 min on 2 cores), then prints the table
# (RELIABILITY.md). Needs the .venv of scripts/setup.sh. Other options: --only KIND..., -q.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! .venv/bin/python -c 'import molsift._core' 2>/dev/null; then
  echo "faults: molsift is not installed in .venv: run bash scripts/setup.sh first" >&2
  exit 1
fi
cd tests
exec nice -n "${FAULTS_NICE:-10}" ../.venv/bin/python -m faults "$@"
