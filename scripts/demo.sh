#!/usr/bin/env bash
# The main job on bundled real data: install, ingest data/nci_first_5k.smi into a store, show it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
OUT=${1:-/tmp/molsift-demo.store}
.venv/bin/molsift count data/nci_first_5k.smi
.venv/bin/molsift ingest data/nci_first_5k.smi -o "$OUT" --overwrite
.venv/bin/molsift info "$OUT"
