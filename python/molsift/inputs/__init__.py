"""The input model: every verb that reads molecule files goes through here.

- `counting`: `count_records` (the Rust counter from Python) and `probe` (format and header of
  a file), importing nothing heavy so that `molsift count` starts in milliseconds.
- `files`: `InputFile` and `describe_input` (what a file is: size, compression, record format),
  `read_records` (the Rust readers from Python).
- `tasks`: the task planner shared by ingest and screen: byte-range slabs of plain files, each
  with its first line from one pre-pass, and record chunks cut from one streaming decoder for
  gzip/zstd.
- `queries`: `read_queries`, the query files of every query verb: each record's text (a
  SMILES, SMARTS or id as written, an SDF block's SMILES) with its file, line and problem.
- `molecules`: `read_molecules`, the small files of queries and reference actives, read by
  `read_queries` and parsed with RDKit (imported only there).
"""

from .._lazy import lazy_getattr

# Exports load their module on first use: `molsift count` imports `counting` alone.
_LAZY = {
    "ChunkPlanner": "tasks",
    "InputFile": "files",
    "Molecule": "molecules",
    "PathLike": "files",
    "Query": "queries",
    "count_records": "counting",
    "cut_slabs": "tasks",
    "describe_input": "files",
    "read_molecules": "molecules",
    "read_queries": "queries",
    "read_records": "files",
    "slab_tasks": "tasks",
}


__getattr__ = lazy_getattr(__name__, _LAZY, globals())

__all__ = sorted(_LAZY)
