"""`molsift insights LOG`: findings in plain words from a molsift I/O log or a Darshan log."""

from __future__ import annotations

import math
import os
import sys

from .common import add_io_log, add_verb, check_output, output_file, same_file

EXAMPLES = (
    "molsift insights run.iolog.json                          # most severe first",
    "molsift insights run.iolog.json --format html -o run.html",
    "molsift insights job.darshan -t read_amplification=2     # Darshan logs too (pydarshan)",
    "molsift insights props.csv.run/io.json                   # every screen run keeps one",
)
FORMATS = ("text", "json", "html")
#: the format an -o name asks for when --format is not given (run.html was filled with text)
FORMAT_OF_SUFFIX = {".html": "html", ".htm": "html", ".json": "json"}


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
        default=None,
        help="text, json, or html with timeline and size histograms (default: html or json "
        "when the -o name ends in .html or .json, else text)",
    )
    p.add_argument("-o", "--output", help="write here instead of stdout (-o -: stdout)")
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

    args.output = output_file(args.output)  # `-o -` is standard output, as in every verb
    check_output(args.output)
    fmt = output_format(args.format, args.output)
    if args.output and same_file(args.output, args.log):
        raise ValueError(f"{args.output}: is the log being read; choose another output")
    changed = thresholds(args.threshold, THRESHOLDS)
    log = load_log(args.log)
    findings = find_insights(log, changed)
    if fmt == "json":
        from ..profiler.render import to_json

        text = to_json(log, findings, dict(THRESHOLDS, **changed))
    elif fmt == "html":
        from ..profiler.html import to_html

        text = to_html(log, findings)
    else:
        from ..profiler.render import to_text

        text = to_text(log, findings)
    if args.output:
        from ..iostats import write_file

        tmp = f"{args.output}.tmp-{os.getpid()}"  # renamed into place: never half a report
        try:
            write_file(tmp, text.encode("utf-8"))
            os.replace(tmp, args.output)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        found = f"{len(findings)} finding{'' if len(findings) == 1 else 's'}"
        print(f"molsift insights: {found} written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def output_format(given: str | None, output: str | None) -> str:
    """--format, else the one the -o name's suffix asks for, else text; a ValueError when
    they disagree (`--format json -o run.html`)."""
    suffix = os.path.splitext(output or "")[1].lower()
    named = FORMAT_OF_SUFFIX.get(suffix)
    if given is None:
        return named or FORMATS[0]
    if named is not None and named != given:
        raise ValueError(
            f"{output}: a {suffix} name for --format {given}: give --format {named}, or "
            "another name"
        )
    return given


def thresholds(items: list[str], known: dict) -> dict[str, float]:
    """-t NAME=VALUE options as {name: value}: NAME one of `known`, VALUE a number >= 0; a
    ValueError says which part is wrong (a known name without its value was called unknown,
    a value not a number was Python's float() message, naming no option)."""
    changed = {}
    for item in items:
        name, eq, value = (part.strip() for part in item.partition("="))
        if name not in known:
            raise ValueError(
                f"-t {item!r}: no threshold {name!r}; NAME=VALUE with NAME one of "
                f"{', '.join(known)} (docs/insights.md)"
            )
        default = known[name]
        example = f"{default:g}" if default % 1 else f"{default:.0f}"
        if not eq or not value:
            raise ValueError(f"-t {item!r}: give the value too, e.g. -t {name}={example}")
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not 0 <= number < math.inf:  # NaN, a negative or an infinite one fired every rule
            raise ValueError(
                f"-t {item!r}: the value must be a number >= 0 (the default is {example})"
            )
        changed[name] = number
    return changed
