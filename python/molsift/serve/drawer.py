"""The drawing worker of `molsift serve` (`python -m molsift.serve.drawer MAX_ATOMS`): a process of
its own, so that RDKit's drawing, which holds the interpreter lock for as long as it takes,
never stops the server's searches, and a drawing past the time limit is ended by killing the
process (depict.py). It reads one JSON request a line on stdin (`{"smiles", "width", "height",
"highlight", "smarts"}`: highlight, when given, a substructure query read as the searches read
it, whose matches are drawn highlighted) and writes one JSON answer a line on stdout: `{"svg":
text}`, or `{"status": 400 or 413, "error": message}` for SMILES or a query RDKit cannot read or
a molecule over MAX_ATOMS heavy atoms.
It prints `{"ready": true}` once RDKit's drawing code is loaded (one molecule drawn), and ends
when stdin closes."""

from __future__ import annotations

import json
import signal
import sys

#: matches of a highlight query drawn at most (a symmetric query matches many times over)
MAX_MATCHES = 64


def draw(
    smiles: str, width: int, height: int, max_atoms: int, highlight: str = "", smarts: bool = False
) -> dict:
    """The answer to one request."""
    from rdkit import Chem
    from rdkit.Chem.Draw import rdMolDraw2D

    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return {"status": 400, "error": f"invalid SMILES {smiles!r}: RDKit could not read it"}
    atoms = mol.GetNumHeavyAtoms()
    if atoms > max_atoms:
        return {
            "status": 413,
            "error": f"the molecule has {atoms:,} heavy atoms; depictions take at most "
            f"{max_atoms:,}",
        }
    lit_atoms, lit_bonds = set(), set()
    if highlight:
        from ..substructure.query import QueryError, to_query_mol

        try:
            query, _kind = to_query_mol(highlight, smarts)
        except QueryError as exc:
            return {"status": 400, "error": f"highlight: {exc}"}
        for match in mol.GetSubstructMatches(query, uniquify=True, maxMatches=MAX_MATCHES):
            lit_atoms.update(match)
            for qb in query.GetBonds():
                bond = mol.GetBondBetweenAtoms(
                    match[qb.GetBeginAtomIdx()], match[qb.GetEndAtomIdx()]
                )
                if bond is not None:
                    lit_bonds.add(bond.GetIdx())
    drawer = rdMolDraw2D.MolDraw2DSVG(width, height)
    rdMolDraw2D.PrepareAndDrawMolecule(
        drawer, mol, highlightAtoms=sorted(lit_atoms), highlightBonds=sorted(lit_bonds)
    )
    drawer.FinishDrawing()
    return {"svg": drawer.GetDrawingText()}


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server ends it (stdin closed, or killed)
    max_atoms = int(argv[0])
    from rdkit import RDLogger

    RDLogger.DisableLog("rdApp.*")
    draw("CCO", 100, 100, max_atoms)  # RDKit's drawing code loaded before the first request
    out = sys.stdout
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    for line in sys.stdin:
        try:
            req = json.loads(line)
            answer = draw(
                str(req["smiles"]), int(req["width"]), int(req["height"]), max_atoms,
                str(req.get("highlight") or ""), bool(req.get("smarts")),
            )  # fmt: skip
        except Exception as exc:  # an answer, never a dead worker
            answer = {"status": 400, "error": f"RDKit could not draw it: {exc}"}
        out.write(json.dumps(answer) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
