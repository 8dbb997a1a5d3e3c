#!/usr/bin/env bash
# Builds the LD_PRELOAD I/O tracer (iotrace.c) into python/molsift/_lib/, where
# `molsift profile` looks for it. Called by scripts/setup.sh; needs only gcc (or $CC).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p python/molsift/_lib
${CC:-gcc} -O2 -fPIC -shared -fvisibility=hidden -fno-delete-null-pointer-checks -Wall \
  -o python/molsift/_lib/libmolsift_iotrace.so crates/iotrace/iotrace.c -ldl -lpthread
