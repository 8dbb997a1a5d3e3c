"""Cube files under MPI (mpi4py, imported only here): every rank owns a contiguous block of
x-planes (`planes_of`) and reads its bytes with one collective MPI-IO call
(`File.Read_at_all`), as CP2K's `cube_to_pw_parallel` does.

- A file in the fixed layout (every row of values the same bytes): a rank's planes are one
  byte range, computed from the header; it is parsed where it lands.
- Any other file: every rank reads an equal share of the value area (and a little past it),
  counts the numbers that start in its share, an exclusive prefix sum places them, each rank
  parses its numbers and one `Alltoallv` moves them to the ranks that own their planes.

`write_npy_block` writes a `.npy` file collectively (`File.Write_at_all`, the header by rank
0), so `mpirun -n N molsift cube convert big.cube -o big.npy` never gathers the grid. The
same file and the same arrays come out at any rank count. An error on any rank is raised on
every rank (no rank waits forever)."""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np

from .. import _core
from .model import Cube

WS = np.array([0x20, 0x09, 0x0A, 0x0D, 0x0B, 0x0C], dtype=np.uint8)
PAST = 64  # bytes a rank reads past its share to finish its last number (more if needed)


def planes_of(n1: int, size: int, rank: int) -> tuple[int, int]:
    """The x-planes `[start, stop)` rank `rank` of `size` owns (as equal as whole planes go)."""
    return n1 * rank // size, n1 * (rank + 1) // size


def _agree(comm, error: BaseException | None) -> None:
    """Raises on every rank the first error any rank had."""
    errors = comm.allgather(None if error is None else (type(error).__name__, str(error)))
    for e in errors:
        if e is not None:
            name, text = e
            if error is not None:
                raise error
            exc = {"ValueError": ValueError, "OSError": OSError}.get(name, _core.InputError)
            raise exc(text)


def _read_at_all(fh, offset: int, nbytes: int) -> np.ndarray:
    buf = np.empty(nbytes, dtype=np.uint8)
    fh.Read_at_all(offset, buf)
    return buf


def read_cube_block(
    path: str | os.PathLike, comm, dtype: str = "float64", stats: dict | None = None
) -> Cube:
    """This rank's block of x-planes of the cube at `path` (every rank of `comm` calls)."""
    from mpi4py import MPI

    path = os.fspath(path)
    rank, size = comm.Get_rank(), comm.Get_size()
    header, error = None, None
    if rank == 0:
        try:
            header = _core.cube_header(path)
        except BaseException as exc:
            error = exc
    _agree(comm, error)
    header = comm.bcast(header, root=0)
    n1, n2, n3 = header["shape"]
    nval = header["nval"]
    row_values = n3 * nval
    plane_values = n2 * row_values
    i0, i1 = planes_of(n1, size, rank)
    tail = (nval,) if nval > 1 else ()
    values = np.empty((i1 - i0, n2, n3, *tail), dtype=dtype)
    fh = MPI.File.Open(comm, path, MPI.MODE_RDONLY)
    bytes_read = 0
    try:
        start = header["values_offset"]
        if header["row_bytes"]:
            plane_bytes = n2 * header["row_bytes"]
            off = start + i0 * plane_bytes
            buf = _read_at_all(fh, off, (i1 - i0) * plane_bytes)
            bytes_read = buf.nbytes
            first_line = header["header_lines"] + 1 + i0 * n2 * header["lines_per_row"]
            error = None
            try:
                _core.cube_parse_block(
                    path, buf.ctypes.data, buf.nbytes, off, first_line,
                    values.ctypes.data, values.nbytes, dtype,
                )  # fmt: skip
            except BaseException as exc:
                error = exc
            _agree(comm, error)
            fixed = True
        else:
            bytes_read = _read_counting(fh, comm, path, header, values, plane_values, dtype)
            fixed = False
    finally:
        fh.Close()
    if stats is not None:
        stats.update(
            fixed=fixed,
            ranks=size,
            bytes_read=int(comm.allreduce(bytes_read)),
            file_bytes=header["file_bytes"],
        )
    return Cube.from_header(header, values, x_range=(i0, i1), full_shape=(n1, n2, n3, *tail))


def _read_counting(fh, comm, path, header, values, plane_values, dtype) -> int:
    """The counting path (see the module doc). Returns the bytes this rank read."""
    from mpi4py import MPI

    rank, size = comm.Get_rank(), comm.Get_size()
    start, end = header["values_offset"], header["file_bytes"]
    area = end - start
    a = start + area * rank // size
    b = start + area * (rank + 1) // size
    lo = max(start, a - 1)  # one byte before: does a number start exactly at a?
    hi = min(end, b + PAST)
    buf = _read_at_all(fh, lo, hi - lo)
    # a number running past the window: read on (alone, rarely) until whitespace or the end
    while hi < end and not np.isin(buf[b - lo :], WS).any():
        more = np.empty(min(end - hi, max(PAST, buf.size)), dtype=np.uint8)
        fh.Read_at(hi, more)
        buf = np.concatenate([buf, more])
        hi += more.size
    ws = frozenset(WS.tolist())
    # this rank's numbers are those that start in [a, b): skip one running into a from before,
    # take one running out of b
    s0 = a - lo
    if a > start and buf[s0 - 1] not in ws:
        while s0 < buf.size and buf[s0] not in ws:
            s0 += 1
    stop = b - lo
    if b < end and buf[stop - 1] not in ws and buf[stop] not in ws:
        while stop < buf.size and buf[stop] not in ws:
            stop += 1
    piece = np.ascontiguousarray(buf[s0:stop]) if s0 < stop else np.empty(0, np.uint8)
    count = int(_core.cube_count_tokens(piece.ctypes.data, piece.nbytes)) if piece.size else 0
    # lines: those before this rank's share (an exclusive prefix sum), then up to the piece
    share = np.ascontiguousarray(buf[a - lo : b - lo])
    newlines_before = comm.exscan(_core.cube_count_newlines(share.ctypes.data, share.nbytes)) or 0
    head = np.ascontiguousarray(buf[a - lo : max(a - lo, s0)])
    first_line = (
        header["header_lines"]
        + 1
        + newlines_before
        + (_core.cube_count_newlines(head.ctypes.data, head.nbytes) if head.size else 0)
    )
    # every rank parses its numbers first: a token that is not a number is named before a
    # wrong count, as on one machine
    mine = np.empty(count, dtype=dtype)
    error = None
    if count:
        try:
            _core.cube_parse_block(
                path, piece.ctypes.data, piece.nbytes, lo + s0, first_line,
                mine.ctypes.data, mine.nbytes, dtype,
            )  # fmt: skip
        except BaseException as exc:
            error = exc
    _agree(comm, error)
    first = comm.exscan(count) or 0
    total = comm.allreduce(count)
    want = header["value_count"]
    error = None
    if total != want and rank == 0:
        word = "few" if total < want else "many"
        error = _core.InputError(
            f"{path}: too {word} values: the file holds {total}, the header declares {want}"
            f" ({'x'.join(str(n) for n in header['shape'])}"
            f"{'x' + str(header['nval']) if header['nval'] > 1 else ''})"
        )
    _agree(comm, error)
    # move every value to the rank owning its plane
    bounds = (
        np.array([planes_of(header["shape"][0], size, r)[0] for r in range(size + 1)])
        * plane_values
    )
    bounds[-1] = want
    g0, g1 = first, first + count
    send_counts = np.array(
        [max(0, min(g1, bounds[r + 1]) - max(g0, bounds[r])) for r in range(size)]
    )
    recv_counts = np.array(comm.alltoall([int(c) for c in send_counts]))
    send_displ = np.concatenate([[0], np.cumsum(send_counts)[:-1]])
    recv_displ = np.concatenate([[0], np.cumsum(recv_counts)[:-1]])
    mpi_type = MPI.DOUBLE if dtype == "float64" else MPI.FLOAT
    flat = values.reshape(-1)
    comm.Alltoallv(
        [mine, (send_counts, send_displ), mpi_type],
        [flat, (recv_counts, recv_displ), mpi_type],
    )
    return int(buf.nbytes)


def write_npy_block(cube: Cube, path: str | os.PathLike, comm) -> int:
    """Writes the whole grid, whose x-planes `cube.x_range` this rank holds, as one `.npy`
    file (and its `.json` header, by rank 0) with collective MPI-IO writes into a temporary
    name that rank 0 renames. Returns the file's size."""
    from mpi4py import MPI

    from .formats import sweep_leftovers, temporary_name, write_side_header

    path = os.fspath(path)
    rank = comm.Get_rank()
    full = tuple(cube.full_shape or cube.values.shape)
    values = np.ascontiguousarray(cube.values)
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        head,
        {
            "descr": np.lib.format.dtype_to_descr(values.dtype),
            "fortran_order": False,
            "shape": full,
        },
    )
    head_bytes = head.getvalue()
    tmp = None
    if rank == 0:
        sweep_leftovers(path)  # what killed converts of this output left behind
        tmp = temporary_name(path)
    tmp = comm.bcast(tmp, root=0)
    fh = MPI.File.Open(comm, tmp, MPI.MODE_WRONLY | MPI.MODE_CREATE)
    try:
        if rank == 0:
            fh.Write_at(0, np.frombuffer(head_bytes, dtype=np.uint8))
        per_plane = int(np.prod(full[1:])) * values.dtype.itemsize
        off = len(head_bytes) + cube.x_range[0] * per_plane
        fh.Write_at_all(off, values.reshape(-1).view(np.uint8))
        fh.Sync()
    finally:
        fh.Close()
    comm.Barrier()
    size_bytes = len(head_bytes) + int(np.prod(full)) * values.dtype.itemsize
    error = None
    if rank == 0:
        try:
            whole = Cube(
                values=np.empty((0, 0, 0)),
                origin=cube.origin,
                axes=cube.axes,
                atoms=cube.atoms,
                units=cube.units,
                comments=cube.comments,
                orbitals=cube.orbitals,
                nval_field=cube.nval_field,
                full_shape=full,
            )
            write_side_header(whole, path)
            os.replace(tmp, path)
        except BaseException as exc:
            error = exc
    _agree(comm, error)
    return size_bytes


def gather_values(cube: Cube, comm) -> np.ndarray | None:
    """The whole grid on rank 0 (None elsewhere): for tests and small grids."""
    parts = comm.gather(cube.values, root=0)
    if comm.Get_rank() != 0:
        return None
    return np.concatenate(parts, axis=0)


def describe(stats: dict[str, Any]) -> str:
    """One line on how a block read went."""
    amp = stats["bytes_read"] / stats["file_bytes"] if stats.get("file_bytes") else 0.0
    path = "fixed layout" if stats["fixed"] else "counting path"
    return f"{path}, {stats['ranks']} ranks, read amplification {amp:.4f}"
