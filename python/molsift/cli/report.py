"""`molsift report RUN_DIR`: a screening run's timeline (PNG) and totals."""

from __future__ import annotations

import sys

from .common import add_io_log, add_verb, check_output, output_file

EXAMPLES = (
    "molsift report props.csv.run                    # -> props.csv.run/report.png",
    "molsift report props.csv.run -o timeline.png",
)


def add_parser(subparsers):
    p = add_verb(
        subparsers,
        "report",
        help="draw a screening run's timeline (PNG) and totals",
        description="Per-rank throughput over time with write events marked, "
        "plus totals (records/s, time in read, score, write, wait).",
        examples=EXAMPLES,
    )
    p.add_argument("run_dir", help="the run directory (OUTPUT.run)")
    p.add_argument(
        "-o",
        "--output",
        help="PNG to write (default: RUN_DIR/report.png; -o -: standard output, and the totals "
        "to stderr)",
    )
    add_io_log(p)
    return p


def run(args) -> int:
    from ..screen.report import write_report

    if args.output == "-":  # the PNG on stdout, as `-o -` is in every verb; the words aside
        if sys.stdout.isatty():
            raise ValueError(
                "-o -: the PNG would go to the terminal: redirect it (-o - > timeline.png) "
                "or give -o FILE"
            )
        _png, text = write_report(args.run_dir, "-")
        print(text, file=sys.stderr)
        return 0
    args.output = output_file(args.output)  # `-o ''`: the default
    check_output(args.output)
    if args.output and not args.output.lower().endswith(".png"):  # a PNG under any name
        raise ValueError(f"{args.output}: molsift report draws a PNG (e.g. -o timeline.png)")
    png, text = write_report(args.run_dir, args.output)
    print(text)
    print(f"timeline written to {png}")
    return 0
