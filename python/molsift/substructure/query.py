"""Reading a substructure query: SMILES or SMARTS text to an RDKit query molecule (with a clear
`QueryError` when it cannot be one), its screening bits (RDKit pattern-fingerprint bits, the
necessary features of `features.py`, and the bit every indexed molecule has), whether it can
never match, and the cheapest molecule form the exact matcher may use for it (`forms.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from rdkit import Chem, RDLogger

from .._core import MolsiftError
from . import features
from .forms import form_for, matcher_for
from .program import graph_program

RDLogger.DisableLog("rdApp.*")

#: RDKit pattern-fingerprint bits in the index (planes 0 .. PATTERN_BITS - 1).
PATTERN_BITS = 2048
#: Planes of the features (`features.py`) follow the pattern bits.
FEATURE_OFFSET = PATTERN_BITS
#: The last plane: set for every molecule whose stored SMILES RDKit parses (with sanitization),
#: so that a molecule RDKit's own loop would skip is never a candidate.
OK_BIT = PATTERN_BITS + features.FEATURE_BITS
#: Planes in all.
TOTAL_BITS = OK_BIT + 1


class QueryError(MolsiftError, ValueError):
    """A query that cannot be searched: not SMILES nor SMARTS, no atoms, or one RDKit reads
    but cannot work with (`[#200]`). The message names the `query` (its text, when given) and
    says the `reason` (without the query's name: what a caller naming the query otherwise, by
    its id, file and line, says after it)."""

    def __init__(self, reason: str, query: str | None = None):
        super().__init__(*((reason,) if query is None else (reason, query)))  # pickled so
        self.reason, self.query = reason, query

    def __str__(self) -> str:
        return self.reason if self.query is None else f"query {_name(self.query)}: {self.reason}"


QueryError.__module__ = "molsift"  # pickles across worker processes as molsift.QueryError


@dataclass
class Query:
    """A parsed query: `text` as given, `kind` ("smiles" or "smarts"), the RDKit query molecule,
    its screening bits, `always_false` (a reason, when no molecule can ever match) and `form`,
    the molecule form the exact matcher uses for it."""

    text: str
    kind: str
    chirality: bool
    mol: Chem.Mol = field(repr=False)
    bits: list[int] = field(repr=False)
    always_false: str | None
    form: str
    matcher: str = "python"
    note: str | None = None
    #: the graph-matcher program (JSON, `program.py`), None when RDKit must match
    program: str | None = field(default=None, repr=False)

    @property
    def key(self) -> tuple[str, str, bool]:
        """What a worker parses again: the query is the same for the same key."""
        return (self.text, self.kind, self.chirality)


def _name(text: str) -> str:
    return repr(text if len(text) <= 80 else text[:77] + "...")


def to_query_mol(text: str, smarts: bool = False) -> tuple[Chem.Mol, str]:
    """(RDKit query molecule, kind): `MolFromSmiles` unless `smarts` or the text is not SMILES,
    then `MolFromSmarts`. Raises QueryError naming the query."""
    text = text.strip()
    if not text:
        raise QueryError("empty query: give a SMILES or SMARTS")
    mol, kind = None, "smarts"
    if not smarts:
        mol, kind = Chem.MolFromSmiles(text), "smiles"
    if mol is None:
        mol, kind = Chem.MolFromSmarts(text), "smarts"
    if mol is None:
        what = "SMARTS" if smarts else "SMILES or SMARTS"
        raise QueryError(f"RDKit cannot parse it as {what}", text)
    if mol.GetNumAtoms() == 0:
        raise QueryError("it has no atoms", text)
    return mol, kind


def _and_element(description: str) -> int | None:
    """The element an atom query requires through AND nodes alone (an `AtomAtomicNum` or
    `AtomType` leaf, not negated), or None."""
    found = None
    stack = [-1]  # indentation of the AND nodes we are inside
    for line in description.splitlines():
        depth = (len(line) - len(line.lstrip(" "))) // 2
        while len(stack) > depth + 1:
            stack.pop()
        words = line.split()
        if not words:
            continue
        inside_and = len(stack) == depth + 1
        if words[0] == "AtomAnd" and inside_and and "!=" not in words:
            stack.append(depth)
        elif inside_and and words[0] in ("AtomAtomicNum", "AtomType") and words[2:3] == ["="]:
            found = int(words[1]) % 1000  # AtomType adds 1000 for aromatic atoms
    return found


def fingerprint_ready(mol: Chem.Mol) -> Chem.Mol:
    """A copy of a SMARTS query whose pattern fingerprint is a sound screen. RDKit hashes the
    atomic number of every query atom it does not call complex, and for an AND query whose
    first primitive is not the element (`[r5;#7]`, `[X3;C]`) that number is 0: its bits then
    reject molecules that match (on the NCI data, `[r5;#7]` missed 440 of 445 hits). Such atoms
    get the element their query requires; an AND atom requiring none becomes a negated (so
    complex, a wildcard to the fingerprint) query atom."""
    from rdkit.Chem import rdqueries

    rw = Chem.RWMol(mol)
    for atom in list(rw.GetAtoms()):
        if not atom.HasQuery() or not atom.DescribeQuery().startswith("AtomAnd"):
            continue
        element = _and_element(atom.DescribeQuery())
        if element is not None:
            atom.SetAtomicNum(element)
        else:
            rw.ReplaceAtom(atom.GetIdx(), rdqueries.AtomNumEqualsQueryAtom(0, negate=True))
    return rw.GetMol()


def pattern_bits(mol: Chem.Mol, kind: str) -> list[int]:
    """On-bits of RDKit's PatternFingerprint of a query molecule: for SMARTS, of its
    `fingerprint_ready` copy with ring information set up first (as RDKit's own screen
    needs)."""
    if kind == "smarts":
        mol = fingerprint_ready(mol)
        mol.UpdatePropertyCache(strict=False)
        Chem.FastFindRings(mol)
    return list(Chem.PatternFingerprint(mol, fpSize=PATTERN_BITS).GetOnBits())


def parse_query(text: str, smarts: bool = False, chirality: bool = False) -> Query:
    """Reads one query (see `to_query_mol`) and works out its screen and matcher form. A query
    RDKit parses but cannot work with (`[#200]`: an atomic number it has no element for) is a
    QueryError too, not RDKit's RuntimeError (a traceback that ended every other query)."""
    mol, kind = to_query_mol(text, smarts)
    try:
        return _analyzed(text, mol, kind, chirality)
    except RuntimeError as exc:  # RDKit's invariant and pre-condition violations
        raise QueryError(f"RDKit cannot search it ({_rdkit_reason(exc)})", text.strip()) from None


def _rdkit_reason(exc: RuntimeError) -> str:
    """The telling line of an RDKit violation ('Atomic number not found'), not its heading
    ('Pre-condition Violation') or the source file and line that follow."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].endswith("Violation"):
        return lines[1]
    return lines[0] if lines else type(exc).__name__


def _analyzed(text: str, mol: Chem.Mol, kind: str, chirality: bool) -> Query:
    """The rest of `parse_query`: the screen and matcher form of a query RDKit has read."""
    analysis = features.analyze(mol)
    why = features.always_false(mol, analysis)
    bits = pattern_bits(mol, kind)
    bits += [FEATURE_OFFSET + f for f in features.query_features(mol, analysis)]
    bits.append(OK_BIT)
    form = form_for(mol, kind, chirality, text.strip())
    if why is not None and kind == "smarts":
        why = f"SMARTS query is always false: {why}"
    elif why is not None:
        why = f"query is always false: {why}"
    note = None
    if kind == "smiles" and any(a.GetNumRadicalElectrons() for a in mol.GetAtoms()):
        note = (
            f"query {_name(text.strip())} was read as SMILES, where a bracket atom has only the "
            "hydrogens written in it (RDKit gives the rest radicals, and a radical atom matches "
            "only atoms with as many radicals); read it as SMARTS with --smarts (smarts=True) "
            "if that is what you meant"
        )
    return Query(
        note=note,
        text=text.strip(),
        kind=kind,
        chirality=chirality,
        mol=mol,
        bits=sorted(set(bits)),
        always_false=why,
        form=form,
        matcher=matcher_for(mol, kind, form),
        program=graph_program(mol, chirality),
    )
