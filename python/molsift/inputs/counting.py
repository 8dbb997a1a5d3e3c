"""What an input file is, at the least cost (`probe`: format, header, compression), and
`count_records`, the Rust counter from Python. Imports only `os`, `time` and `_core`, so that
`molsift count` starts counting a few milliseconds after Python starts."""

from __future__ import annotations

import os
import time

from .. import _core

IO_METHODS = _core.IO_METHODS  # auto, mmap, pread, uring, direct: the core's names


def probe(
    path: str | os.PathLike[str], format: str | None = None, header: bool | None = None
) -> tuple[str, str, bool]:
    """(path, format, header) of an input: checks that it is a readable file and guesses what
    is not given from its name and first line."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise _core.InputError(f"{path}: {_not_a_file(path)}")
    detected, detected_header = _core.detect_format(path)
    fmt = format or detected
    if header is None:
        header = detected_header if fmt == detected else fmt == "csv"
    elif header and fmt == "sdf":  # it was ignored: an SDF record's first line is its title
        raise ValueError(f"{path}: --header applies to line files (SMILES/CSV), not SDF")
    return path, fmt, header


# the suffixes the core reads by (crates/io source.rs `InputFormat::detect`, after a
# compression suffix): any other is read as SMILES, and these are the SMILES files' usual ones
FORMAT_SUFFIXES = {"csv": "csv", "tsv": "csv", "sdf": "sdf", "sd": "sdf", "mol": "sdf"}
SMILES_SUFFIXES = ("smi", "smiles", "ism", "can", "txt")


def assumed_format(path: str | os.PathLike[str], format: str | None = None) -> str | None:
    """The note to print when `path` is read as SMILES only because its suffix names no input
    format (`x.cube`, `lib.dat`, no suffix; `format` not given); None when its name or
    `format` says what it is."""
    if format is not None:
        return None
    name = os.path.basename(os.fspath(path)).lower()
    for compression in (".gz", ".gzip", ".zst", ".zstd"):  # as the core strips them
        name = name.removesuffix(compression)
    suffix = name.rpartition(".")[2] if "." in name else ""
    if suffix in FORMAT_SUFFIXES or suffix in SMILES_SUFFIXES:
        return None
    which = f"its suffix '.{suffix}'" if suffix else "its name, without a suffix,"
    return (
        f"{os.fspath(path)}: read as SMILES (one record a line): {which} names no input format "
        "(SMILES .smi/.txt, CSV .csv/.tsv, SDF .sdf/.sd/.mol); give --format to read it as "
        "another"
    )


def _not_a_file(path: str) -> str:
    """Why `path`, which is not a regular file, cannot be read as an input."""
    if path == "-":
        return "no such file (standard input is not read: give the input as a file)"
    if not os.path.exists(path):
        return "no such file"
    if os.path.isdir(path):
        return "is a directory, not a file"
    # a pipe, a terminal, a socket (`<(...)`, /dev/stdin): read in slabs and more than once
    return "not a regular file (pipes and standard input are not read: save the input to a file)"


def count_records(
    path: str | os.PathLike[str],
    format: str | None = None,
    threads: int | None = None,
    header: bool | None = None,
    io: str = "auto",
) -> dict:
    """Records (not newlines) in a file: dict with records, bytes, bytes_read, read_calls,
    seconds, format, compression, io (how the file was read: mmap, pread, uring, direct or
    stream) and io_reason (what `auto` saw, or why another way than asked).

    Plain files are counted by `threads` threads in parallel slabs, read as `io` says
    (docs/reading.md); gzip and zstd by one streaming decoder."""
    from ..parallel import check_workers, default_workers

    if check_workers(threads, "threads") is None:
        threads = default_workers()
    path, fmt, header = probe(path, format, header)
    start = time.perf_counter()
    out = dict(_core.count_records(path, fmt, threads=threads, header=header, io=io))
    out["seconds"] = time.perf_counter() - start
    out["format"] = fmt
    out["compression"] = "none" if out["io"] != "stream" else _core.file_compression(path)
    return out
