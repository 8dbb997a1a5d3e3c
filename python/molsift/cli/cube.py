"""`molsift cube info|convert|stats|diff|slice`: Gaussian cube files (CP2K, Gaussian, PySCF
grids) read and written in parallel. Under `mpirun`, `convert` to `.npy` reads with MPI-IO
(each rank a block of x-planes) and writes the `.npy` collectively."""

from __future__ import annotations

import json
import sys

from .common import HelpFormatter, add_verb, at_least_one, check_output, same_file

EXAMPLES = (
    "molsift cube info data/water_density_16.cube",
    "molsift cube convert data/water_density_16.cube -o density.npy  # + density.npy.json",
    "mpirun -n 4 molsift cube convert big.cube -o big.npy  # MPI-IO collective read and write",
    "molsift cube slice data/water_density_16.cube --plane yz --log -o slice.png",
)
ACTION_EXAMPLES = {
    "info": ("molsift cube info density.cube --json",),
    "convert": (
        "molsift cube convert density.cube -o density.npy  # + density.npy.json",
        "molsift cube convert density.npy -o copy.cube --layout gaussian",
        "molsift cube convert density.cube -o density.h5   # needs h5py",
    ),
    "stats": ("molsift cube stats density.cube --json",),
    "diff": ("molsift cube diff a.cube b.cube -o a-b.cube   # density difference",),
    "slice": ("molsift cube slice density.cube --plane yz --log -o slice.png",),
}

GRIDS = ".cube, .npy (with its .json header) or .h5"


def add_parser(subparsers):
    p = add_verb(
        subparsers,
        "cube",
        help="read, convert, compare and draw Gaussian cube files (CP2K, Gaussian, PySCF grids)",
        description="Gaussian cube files read and written in parallel, exactly (every value "
        "the float Python's float() gives). Errors name the file, line and byte offset.",
        examples=EXAMPLES,
    )
    sub = p.add_subparsers(dest="action", metavar="<action>", required=True)

    def common(q):
        q.add_argument(
            "-j",
            "--workers",
            type=workers,
            default=None,
            metavar="N",
            help="threads, N >= 1 (default: all cores)",
        )
        q.add_argument(
            "--dtype",
            choices=("float64", "float32"),
            default=None,
            help="value type in memory (default: float64 from a .cube, a .npy's or .h5's own)",
        )

    q = _action(
        sub,
        "info",
        help="the header: grid, units, atoms, layout (header only: values not checked)",
        description="The header of a .cube file: grid, units, origin, axes, atoms, and the "
        "layout of the values as the first row and the file's size show it. Header only: the "
        "values are not read nor checked (a file cut short is said to be when its size shows "
        "it); `molsift cube stats FILE` reads and checks them all.",
    )
    q.add_argument("file", help="a .cube file")
    q.add_argument(
        "--json",
        action="store_true",
        help="print the header as JSON, with the layout the text shows (layout, layout_note, "
        'values_bytes, expected_values_bytes, cut_short) and checked: "header" (the values '
        "were not checked)",
    )

    q = _action(sub, "convert", help=f"convert between {GRIDS}")
    q.add_argument("input", help=f"a {GRIDS} file")
    q.add_argument("-o", "--output", required=True, help=f"a {GRIDS} file (by its suffix)")
    q.add_argument(
        "--layout",
        choices=("cp2k", "gaussian"),
        default="cp2k",
        help="numbers of a written cube: cp2k 0.12345E-01, gaussian/PySCF 1.23456E-01 "
        "(default %(default)s)",
    )
    common(q)

    q = _action(sub, "stats", help="min, max, mean, integral and electrons")
    q.add_argument("file", help=f"a {GRIDS} file")
    q.add_argument("--json", action="store_true", help="print JSON")
    common(q)

    q = _action(sub, "diff", help="A minus B on the same grid, written to -o")
    q.add_argument("a")
    q.add_argument("b")
    q.add_argument("-o", "--output", required=True, help=f"the difference: a {GRIDS} file")
    q.add_argument(
        "--layout",
        choices=("cp2k", "gaussian"),
        default="cp2k",
        help="numbers of a written cube (default %(default)s)",
    )
    q.add_argument("--json", action="store_true", help="print the difference's stats as JSON")
    common(q)

    q = _action(sub, "slice", help="draw one plane as a PNG, atoms marked")
    q.add_argument("file", help=f"a {GRIDS} file")
    q.add_argument(
        "--plane", choices=("xy", "xz", "yz"), default="xy", help="(default %(default)s)"
    )
    q.add_argument("--index", type=int, default=None, help="grid index (default: the middle)")
    q.add_argument(
        "--value",
        type=int,
        default=1,
        help="which value per point (orbital), 1-based (default %(default)s)",
    )
    q.add_argument("--log", action="store_true", help="color by log10 |value| (densities)")
    q.add_argument(
        "-o", "--output", required=True, help="the PNG file (.svg, .pdf ...: by the suffix)"
    )
    common(q)
    return p


def workers(text: str) -> int:
    """-j N: a whole number >= 1; one past the core's 64-bit counts (`-j 99999999999999999999`,
    OverflowError's traceback) is taken as `sys.maxsize`: the reader and the writer start no
    more threads than there are rows to share."""
    return min(at_least_one(text), sys.maxsize)


def _action(sub, name: str, **kwargs):
    """One action's parser, its help ending with its examples (ACTION_EXAMPLES)."""
    lines = ACTION_EXAMPLES.get(name)
    if lines:
        kwargs["epilog"] = "examples:\n" + "\n".join(f"  {line}" for line in lines)
        kwargs["formatter_class"] = HelpFormatter
    return sub.add_parser(name, **kwargs)


def run(args) -> int:
    return {"info": _info, "convert": _convert, "stats": _stats, "diff": _diff, "slice": _slice}[
        args.action
    ](args)


def _load(path: str, args):
    from ..cube.formats import load

    return load(path, dtype=args.dtype, workers=args.workers)


def _info(args) -> int:
    from ..cube.formats import kind_of
    from ..cube.io import read_header, readable

    kind = kind_of(readable(args.file))  # a missing file or a directory said first
    if kind != "cube":  # it read the .npy's bytes as a cube's comment lines
        raise ValueError(
            f"{args.file}: cube info reads a .cube file's header; "
            + ("a .npy file's is the .json beside it" if kind == "npy" else "an HDF5 file's is")
            + ("" if kind == "npy" else " its attributes")
            + f", and `molsift cube stats {args.file}` reads its values"
        )
    h = read_header(args.file)
    layout = _layout(h)
    if args.json:
        # what the text's `values` and `checked` lines say: the header alone was read
        print(json.dumps({**h, **layout, "checked": "header"}))
        return 0
    import numpy as np

    axes = np.array(h["axes"])
    n = "x".join(str(x) for x in h["shape"])
    print(f"file      {args.file} ({h['file_bytes']:,} bytes)")
    print(f"comments  {h['comments'][0]!r}")
    print(f"          {h['comments'][1]!r}")
    per_point = f"{h['nval']} value{'' if h['nval'] == 1 else 's'}"
    print(f"grid      {n} points x {per_point} = {h['value_count']:,} values")
    print(f"units     {h['units']}")
    print(f"origin    {' '.join(f'{x:.6f}' for x in h['origin'])}")
    for i, name in enumerate("xyz"):
        print(f"axis {name}    {' '.join(f'{x:.6f}' for x in axes[i])}")
    print(f"voxel     {abs(float(np.linalg.det(axes))):.6g} {h['units']}^3")
    print(f"atoms     {len(h['atoms'])}")
    if h["orbitals"]:
        print(f"orbitals  {' '.join(str(o) for o in h['orbitals'])}")
    print(
        f"values    from byte {h['values_offset']} (line {h['header_lines'] + 1}); "
        f"{layout['layout_note']}"
    )
    print(f"checked   the header only; `molsift cube stats {args.file}` reads every value")
    return 0


def _layout(h: dict) -> dict:
    """What `cube info` says of the value area, from the header, the file's size and the first
    row alone (the values are not checked: `checked` is "header"), as the fields its --json
    adds: `layout` (fixed, free-form, not fixed, truncated, none), `layout_note` (the text's
    words after `values from byte N (line L);`), `values_bytes` (the file's bytes after the
    header), `expected_values_bytes` (what rows of the first row's bytes make; null when the
    first row does not say) and `cut_short` (the size shows the file ends early: within or
    before the first row, or a row or more short of `expected_values_bytes`; false is no
    proof that the values add up, which only a full read, `molsift cube stats`, tells)."""
    rows = h["shape"][0] * h["shape"][1]
    area = h["file_bytes"] - h["values_offset"]
    out = {"values_bytes": area, "expected_values_bytes": None, "cut_short": False}
    if h["row_bytes"]:
        note = f"fixed: {h['row_bytes']} bytes and {h['lines_per_row']} lines per row of z values"
        return {"layout": "fixed", "layout_note": note, **out,
                "expected_values_bytes": h["row_bytes"] * rows}  # fmt: skip
    return {**out, **_not_fixed(h, rows, area)}


def _not_fixed(h: dict, rows: int, area: int) -> dict:
    """`_layout` of a value area whose rows are not all of the first row's bytes: the file ends
    before or in the first row; the rows do not start lines (free-form); or the file is
    shorter (cut short?) or longer than rows of the first row's bytes would make it."""
    if h["first_row_values"] is None:  # the core's first row, as its layout test found it
        note = f"none: the file ends at byte {h['file_bytes']:,}, before the first value"
        return {"layout": "none", "layout_note": note, "cut_short": True}
    found, row_bytes = h["first_row_values"], h["first_row_bytes"]
    per_row = h["shape"][2] * h["nval"]
    if found < per_row:
        note = (
            f"the file ends at byte {h['file_bytes']:,} within the first row of values "
            f"({found:,} of its {per_row:,}): truncated"
        )
        return {"layout": "truncated", "layout_note": note, "cut_short": True}
    if not row_bytes:
        note = "free-form: rows of z values do not each end a line; read by counting"
        return {"layout": "free-form", "layout_note": note}
    expected = row_bytes * rows
    off = abs(expected - area)
    short = area < expected and off >= row_bytes
    how = "more" if area > expected else "fewer: cut short?" if short else "fewer"
    note = (
        f"not fixed: {rows:,} rows of the first row's {row_bytes} bytes would make "
        f"{expected:,} bytes of values, the file holds {area:,} ({off:,} {how}); read by counting"
    )
    return {"layout": "not fixed", "layout_note": note, "expected_values_bytes": expected,
            "cut_short": short}  # fmt: skip


def _convert(args) -> int:
    import time

    from ..cube.formats import kind_of, save
    from ..parallel import launched_under_mpi

    check_grid_output(args.output, args.input)
    t = time.perf_counter()
    src, dst = kind_of(args.input), kind_of(args.output)
    if launched_under_mpi() and src == "cube" and dst == "npy":
        return _convert_mpi(args)
    cube = _load(args.input, args)
    save(cube, args.output, layout=args.layout, workers=args.workers)
    print(
        f"{args.input} -> {args.output}: {'x'.join(str(n) for n in cube.values.shape)} values"
        f" in {time.perf_counter() - t:.2f} s",
        file=sys.stderr,
    )
    return 0


def _convert_mpi(args) -> int:
    import time

    from ..cube.mpi import describe, read_cube_block, write_npy_block
    from ..parallel.mpi import world

    comm = world()
    t = time.perf_counter()
    stats: dict = {}
    block = read_cube_block(args.input, comm, dtype=args.dtype or "float64", stats=stats)
    write_npy_block(block, args.output, comm)
    if comm.Get_rank() == 0:
        print(
            f"{args.input} -> {args.output}: {'x'.join(str(n) for n in block.full_shape)} values"
            f" in {time.perf_counter() - t:.2f} s ({describe(stats)})",
            file=sys.stderr,
        )
    return 0


def check_grid_output(output: str, *inputs: str) -> None:
    """Refuses, before any work, a grid output that cannot be written (`check_output`; for a
    .npy, its .json header beside it too: a directory there left two temporaries behind and
    an error naming one of them) or that is one of the `inputs`: `convert x.cube -o x.cube`
    replaced the file with its own rewrite (five significant digits in the cp2k layout where
    PySCF's had six), and `diff a.cube b.cube -o a.cube` replaced `a` by the difference."""
    from ..cube.formats import kind_of

    check_output(output)
    if kind_of(output) == "npy":
        check_output(f"{output}.json")
    for given in inputs:
        if same_file(given, output):
            raise ValueError(f"{output}: is an input of this command; choose another output")


def _print_stats(rows, as_json: bool) -> None:
    if as_json:
        print(json.dumps(rows))
        return
    cols = ("value", "orbital", "points", "min", "max", "mean", "integral", "electrons")
    print("\t".join(cols))
    for r in rows:
        print(
            "\t".join(
                f"{r[c]:.6g}" if isinstance(r[c], float) else ("" if r[c] is None else str(r[c]))
                for c in cols
            )
        )
    if rows:
        print(
            f"voxel volume {rows[0]['voxel_volume']:.6g} {rows[0]['units']}^3; electrons ="
            " sum x voxel volume in bohr^3 (for a density in e/bohr^3)",
            file=sys.stderr,
        )


def _stats(args) -> int:
    from ..cube.analysis import stats

    _print_stats(stats(_load(args.file, args)), args.json)
    return 0


def _diff(args) -> int:
    from ..cube.analysis import diff, stats
    from ..cube.formats import save

    check_grid_output(args.output, args.a, args.b)
    d = diff(_load(args.a, args), _load(args.b, args), names=(args.a, args.b))
    save(d, args.output, layout=args.layout, workers=args.workers)
    _print_stats(stats(d), args.json)
    return 0


def _slice(args) -> int:
    from ..cube.analysis import picture_format, slice_png

    check_output(args.output)
    picture_format(args.output)  # before the cube is read
    cube = _load(args.file, args)
    if not 1 <= args.value <= cube.nval:
        raise ValueError(f"--value must be within 1..{cube.nval}")
    done = slice_png(
        cube, args.output, which=args.plane, index=args.index, value=args.value - 1, log=args.log
    )
    print(
        f"{args.output}: {done['plane']} plane {done['index']} at {done['coordinate']:.4f}"
        f" {cube.units}, values {done['min']:.4g} to {done['max']:.4g}",
        file=sys.stderr,
    )
    return 0
