"""`molsift insights LOG`: findings in plain words from a molsift I/O log or a Darshan log."""

from __future__ import annotations

import sys

from .common import add_io_log, add_verb, check_output

EXAMPLES = (
    "molsift insights run.iolog.json                          # most severe first",
    "molsift insights run.iolog.json --format html -o run.html",
    "molsift insights job.darshan -t read_amplification=2     # Darshan logs too (pydarshan)",
    "molsift insights props.csv.run/io.json                   # every screen run keeps one",
)
FORMATS = ("text", "json", "html")


def add_parser(subparsers):
    p = add_verb(
        subparsers,
        "insights",
        help="findings in plain words from an I/O log (molsift or Darshan)",
        description="Read a molsift I/O log or a Darshan log and report what slows "
        "the I/O: severity, file, numbers, recommendation. Thresholds: docs/insights.md.",
        examples=EXAMPLES,
    )
    p.add_argument("log", metavar="LOG", help="a log from molsift profile, or a *.darshan file")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default=FORMATS[0],
        help="text, json, or html with timeline and size histograms (default %(default)s)",
    )
    p.add_argument("-o", "--output", help="write here instead of stdout")
    p.add_argument(
        "-t",
        "--threshold",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="change a threshold, e.g. -t read_amplification=2 (repeatable)",
    )
    add_io_log(p)
    return p


def run(args) -> int:
    from ..iolog import load_log
    from ..profiler.insights import THRESHOLDS, find_insights

    check_output(args.output)
    changed = thresholds(args.threshold, THRESHOLDS)
    log = load_log(args.log)
    findings = find_insights(log, changed)
    if args.format == "json":
        from ..profiler.render import to_json

        text = to_json(log, findings, dict(THRESHOLDS, **changed))
    elif args.format == "html":
        from ..profiler.html import to_html

        text = to_html(log, findings)
    else:
        from ..profiler.render import to_text

        text = to_text(log, findings)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(
            f"molsift insights: {len(findings)} finding(s) written to {args.output}",
            file=sys.stderr,
        )
    else:
        sys.stdout.write(text)
    return 0


def thresholds(items: list[str], known: dict) -> dict[str, float]:
    """-t NAME=VALUE options as {name: value}; ValueError names the known thresholds."""
    changed = {}
    for item in items:
        name, _, value = item.partition("=")
        if name not in known or not value:
            raise ValueError(
                f"unknown threshold {item!r}: use NAME=VALUE with NAME one of {', '.join(known)}"
            )
        changed[name] = float(value)
    return changed
