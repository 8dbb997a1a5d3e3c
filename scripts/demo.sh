#!/usr/bin/env bash
# The main job on bundled real data: install, ingest data/nci_first_5k.smi into a store, show it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# the store goes under the checkout (tmp/ is ignored by git), not a shared /tmp path that two
# demos, or two users, would write at once; a second run onto one store is refused in one line
OUT=${1:-tmp/demo.store}
mkdir -p "$(dirname "$OUT")"
.venv/bin/molsift count data/nci_first_5k.smi
.venv/bin/molsift ingest data/nci_first_5k.smi -o "$OUT" --overwrite
.venv/bin/molsift info "$OUT"
