"""The long run's table: cases and failures by kind, and failures by type (the rows the issue
asks to be 0), as Markdown."""

from __future__ import annotations

from collections import Counter

from . import common
from .common import FAIL, OK, REFUSED, Case

FAILURE_TYPES = [
    common.TRACEBACK,
    common.ABORT,
    common.DIFFERENT,
    common.LOST,
    common.ORPHANS,
    common.LEFTOVERS,
    common.DELETED,
    common.BAD_STATUS,
    common.COUNTS,
    common.REJECT_ROW,
    common.UNCLEAR,
    common.WRONG,
    common.HANG,
]


def render(cases: list[Case], kinds: list[str]) -> str:
    lines = ["| kind | cases | ok | refused cleanly | FAIL |", "|---|---:|---:|---:|---:|"]
    for kind in [*kinds, "all"]:
        mine = [c for c in cases if kind in ("all", c.kind)]
        n = Counter(c.outcome for c in mine)
        name = f"**{kind}**" if kind == "all" else kind
        lines.append(f"| {name} | {len(mine)} | {n[OK]} | {n[REFUSED]} | {n[FAIL]} |")
    lines += [
        "",
        "| failure type | " + " | ".join(kinds) + " | all |",
        "|---|" + "---:|" * (len(kinds) + 1),
    ]
    for ftype in FAILURE_TYPES:
        row = [
            sum(c.outcome == FAIL and c.failure == ftype and kind in ("all", c.kind) for c in cases)
            for kind in [*kinds, "all"]
        ]
        lines.append(f"| {ftype} | " + " | ".join(map(str, row)) + " |")
    return "\n".join(lines) + "\n"


def failures(cases: list[Case]) -> str:
    bad = [c for c in cases if c.outcome == FAIL]
    return "\n".join(str(c) for c in bad) + ("\n" if bad else "")
