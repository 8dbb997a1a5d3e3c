"""SVG depictions of SMILES (RDKit's MolDraw2DSVG), cached: a results page asks for the same
molecules again as users page back and forth."""

from __future__ import annotations

import functools
import threading

from .limits import ServiceError

_lock = threading.Lock()  # RDKit drawing on one thread at a time


def svg(smiles: str, width: int = 250, height: int = 200) -> str:
    """The SVG of `smiles`; ServiceError 400 when RDKit cannot read it or the size is odd."""
    if not (50 <= width <= 1000 and 50 <= height <= 1000):
        raise ServiceError(400, "width and height: give 50 to 1000 pixels")
    if len(smiles) > 4096:
        raise ServiceError(413, "smiles is longer than 4,096 characters")
    out = _svg(smiles, width, height)
    if out is None:
        raise ServiceError(400, f"invalid SMILES {smiles!r}: RDKit could not read it")
    return out


@functools.lru_cache(maxsize=4096)
def _svg(smiles: str, width: int, height: int) -> str | None:
    from rdkit import Chem
    from rdkit.Chem.Draw import rdMolDraw2D

    with _lock:
        mol = Chem.MolFromSmiles(smiles)
        if mol is None:
            return None
        drawer = rdMolDraw2D.MolDraw2DSVG(width, height)
        rdMolDraw2D.PrepareAndDrawMolecule(drawer, mol)
        drawer.FinishDrawing()
        return drawer.GetDrawingText()
