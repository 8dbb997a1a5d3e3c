"""`python -m faults [--long] [--only KIND ...]` (run from tests/, or scripts/faults.sh): runs
the checkers in a scratch directory and prints every case, then the table; exit 1 on a FAIL."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from . import concurrency, corrupter, fuzzer, killer, overwrite, table
from .common import FAIL

CHECKERS = {
    "fuzzer": fuzzer,
    "corrupter": corrupter,
    "killer": killer,
    "concurrency": concurrency,
    "overwrite": overwrite,
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="faults", description=__doc__)
    p.add_argument(
        "--long",
        action="store_true",
        help="the long run (>= 300 mutated inputs, "
        "every store file x every corruption, 20 kills per verb, repeated concurrency)",
    )
    p.add_argument("--only", nargs="+", choices=list(CHECKERS), help="run only these checkers")
    p.add_argument("--workdir", help="scratch directory (default: a new temporary one, removed)")
    p.add_argument("-q", "--quiet", action="store_true", help="print failures only, then the table")
    args = p.parse_args(argv)
    kinds = args.only or list(CHECKERS)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="molsift-faults-"))
    log = (
        (lambda c: print(c, flush=True) if c.outcome == FAIL else None)
        if args.quiet
        else (lambda c: print(c, flush=True))
    )
    start, cases = time.monotonic(), []
    try:
        for kind in kinds:
            t = time.monotonic()
            found = CHECKERS[kind].run(workdir / kind, args.long, log=log)
            cases += found
            print(f"== {kind}: {len(found)} cases in {time.monotonic() - t:.0f} s", flush=True)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    print(
        f"\n{'long' if args.long else 'short'} run, {len(cases)} cases in "
        f"{time.monotonic() - start:.0f} s\n"
    )
    print(table.render(cases, kinds))
    bad = table.failures(cases)
    if bad:
        print("failures:\n" + bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
