#!/usr/bin/env bash
# The main job on bundled real data: install, ingest data/nci_first_5k.smi into a store, show it,
# write its version-2 form and run the four searches on it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# the store goes under the checkout (tmp/ is ignored by git), not a shared /tmp path that two
# demos, or two users, would write at once; a second run onto one store is refused in one line
OUT=${1:-tmp/demo.store}
mkdir -p "$(dirname "$OUT")"
.venv/bin/molsift count data/nci_first_5k.smi
.venv/bin/molsift ingest data/nci_first_5k.smi -o "$OUT" --overwrite --analogs
.venv/bin/molsift info "$OUT"
# the version-2 store, every index carried over, and the four searches on it
.venv/bin/molsift upgrade "$OUT" -o "$OUT.v2" --overwrite
.venv/bin/molsift search "$OUT.v2" -q 'CC(=O)Nc1ccc(O)cc1' -k 5
.venv/bin/molsift substructure "$OUT.v2" -q 'c1ccc2[nH]ccc2c1' --max-hits 5
.venv/bin/molsift analogs "$OUT.v2" -q 'CC(=O)Nc1ccc(O)cc1' --dist 2 -k 5
.venv/bin/molsift lookup "$OUT.v2" -q 'OC(=O)c1ccccc1O' -q 'CC(=O)Nc1ccc(O)cc1'
