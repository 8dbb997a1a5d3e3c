"""The input model: every verb that reads molecule files goes through here.

- `files`: `InputFile` and `describe_input` (what a file is: size, compression, record format),
  `read_records` and `count_records` (the Rust readers from Python).
- `tasks`: the task planner shared by ingest and screen: byte-range slabs of plain files, each
  with its first line from one pre-pass, and record chunks cut from one streaming decoder for
  gzip/zstd.
- `molecules`: `read_molecules`, the small files of queries and reference actives, parsed with
  RDKit (imported only there).
"""

from .files import InputFile, PathLike, count_records, describe_input, read_records
from .molecules import Molecule, read_molecules
from .tasks import ChunkPlanner, cut_slabs, slab_tasks

__all__ = [
    "ChunkPlanner",
    "InputFile",
    "Molecule",
    "PathLike",
    "count_records",
    "cut_slabs",
    "describe_input",
    "read_molecules",
    "read_records",
    "slab_tasks",
]
