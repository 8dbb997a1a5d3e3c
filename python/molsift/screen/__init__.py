"""`molsift screen`: a virtual-screening run over a huge ligand file. Stages: slab reader ->
prepare -> score -> per-worker accumulation buffer -> writer groups that `pwrite` one shared
result file, with a commit journal so `--resume` finishes a killed run with every record
exactly once. See `run.py` for the order of steps and ARCHITECTURE.md for the map."""

from .run import ScreenError, screen, summary

__all__ = ["ScreenError", "screen", "summary"]
