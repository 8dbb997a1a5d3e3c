#!/usr/bin/env bash
# The main job on bundled real data: install, ingest data/nci_first_5k.smi into the one store
# (every index, one command), show it and run the four searches on it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# the store goes under the checkout (tmp/ is ignored by git), not a shared /tmp path that two
# demos, or two users, would write at once; a second run onto one store is refused in one line
OUT=${1:-tmp/demo.store}
mkdir -p "$(dirname "$OUT")"
.venv/bin/molsift count data/nci_first_5k.smi
# one ingest: the one store, with every index, that every verb takes
.venv/bin/molsift ingest data/nci_first_5k.smi -o "$OUT" --overwrite
.venv/bin/molsift info "$OUT"
# the four searches on it
.venv/bin/molsift search "$OUT" -q 'CC(=O)Nc1ccc(O)cc1' -k 5
.venv/bin/molsift substructure "$OUT" -q 'c1ccc2[nH]ccc2c1' --max-hits 5
.venv/bin/molsift analogs "$OUT" -q 'CC(=O)Nc1ccc(O)cc1' --dist 2 -k 5
.venv/bin/molsift lookup "$OUT" -q 'OC(=O)c1ccccc1O' -q 'CC(=O)Nc1ccc(O)cc1'
