#!/bin/bash
# A/B of two molsift builds on the same machine, alternated (old, new, old, new): wall time of
# `molsift ingest` of MOSES (gzip) and of `molsift screen --scorer similarity` (plain CSV), then
# a check that both builds wrote the same fingerprints. Used for the 16-core rows of
# BENCHMARKS.md (guided against equal tasks).
#
#   benches/ab_builds.sh OLD.whl NEW.whl MOSES.csv.gz [WORKERS] [ROUNDS]
#
# RDKit must already be importable by python3.
set -eu
old_whl=$1 new_whl=$2 moses=$3 workers=${4:-16} rounds=${5:-2}
work=$(mktemp -d)
for v in old new; do
  whl=$old_whl; [ $v = new ] && whl=$new_whl
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$work/$v" "$whl"
done
zcat "$moses" > "$work/moses.csv"
refs=(--ref 'CC(C)Cc1ccc(C(C)C(=O)O)cc1' --ref 'CN1C(=O)CN=C(c2ccccc2)c2cc(Cl)ccc21'
      --ref 'CC(=O)Nc1ccc(O)cc1' --ref 'O=C(O)c1ccccc1OC(C)=O' --ref 'Cn1cnc2c1c(=O)n(C)c(=O)n2C')
secs() { python3 -c "print(round($2 - $1, 2))"; }
for round in $(seq "$rounds"); do
  for v in old new; do
    s=$(date +%s.%N)
    PYTHONPATH=$work/$v python3 -m molsift ingest "$moses" -o "$work/store-$v" -j "$workers" -q --overwrite --json > "$work/ingest-$v.json"
    echo "ingest -j $workers $v round $round: $(secs "$s" "$(date +%s.%N)") s wall"
    s=$(date +%s.%N)
    PYTHONPATH=$work/$v python3 -m molsift screen "$work/moses.csv" --scorer similarity "${refs[@]}" -j "$workers" \
      -o "$work/screen-$v.csv" --overwrite --json -q > "$work/screen-$v.json"
    echo "screen similarity -j $workers $v round $round: $(secs "$s" "$(date +%s.%N)") s wall; busy s per worker: $(python3 -c "
import json; d = json.load(open('$work/screen-$v.json'))
print(sorted(round(w['prepare_s'] + w['score_s'], 1) for w in d['per_worker']))")"
  done
done
PYTHONPATH=$work/new python3 -c "
import molsift, sys
a, b = (molsift.open_store('$work/store-' + v).fingerprints for v in ('old', 'new'))
sys.exit(0 if a.tobytes() == b.tobytes() else 'the two builds wrote different fingerprints')" && echo "stores: same fingerprints"
rm -rf "$work"
