"""The fault-injection harness of issue 14: checkers that drive the real `molsift` CLI in
subprocesses on damaged inputs, damaged stores, killed runs and concurrent runs, each returning
`Case` results (common.py). `python -m faults [--long]` (from tests/) or `scripts/faults.sh`
runs them and prints the table; tests/faults/test_*.py run a short, seeded subset under pytest."""
