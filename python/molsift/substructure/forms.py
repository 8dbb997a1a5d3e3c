"""The molecule forms the exact matcher builds from a store's canonical SMILES, cheapest first,
and which one a query may use so that its hits are exactly those of RDKit's
`Chem.MolFromSmiles(smiles).HasSubstructMatch(query)`:

- `"fast"`: SMILES parsed without sanitization (the store's SMILES are RDKit's own canonical
  output, so atoms, charges, isotopes, aromatic flags and H counts come out as sanitization
  would leave them), the property cache updated, radicals assigned (plain query atoms compare
  them) and ring membership found (`FastFindRings`):
  enough for queries whose atoms and bonds test only those, and ring membership.
- `"rings"`: as fast, with RDKit's symmetrized SSSR (what sanitization sets): for queries that
  count rings or ring sizes (`R2`, `r5`, `x2`).
- `"full"`: `Chem.MolFromSmiles` with full sanitization, the reference itself: for chirality,
  and for any query primitive not known to be safe above.

Measured on 20,000 MOSES molecules (this machine, tcmalloc): fast 18 µs, rings 42 µs, full
150 µs per molecule; RDKit's binary pickle (`Chem.Mol(bytes)`, 318 bytes per molecule against
35 bytes of SMILES) 40 µs, so the store keeps SMILES only."""

from __future__ import annotations

import re

from rdkit import Chem

#: Query primitives the fast form answers exactly as the sanitized molecule would.
FAST_LEAVES = frozenset(
    {
        "AtomNull",
        "AtomAtomicNum",
        "AtomType",
        "AtomIsAromatic",
        "AtomIsAliphatic",
        "AtomFormalCharge",
        "AtomNegativeFormalCharge",
        "AtomHCount",
        "AtomImplicitHCount",
        "AtomHasImplicitH",
        "AtomExplicitDegree",
        "AtomTotalDegree",
        "AtomHeavyAtomDegree",
        "AtomTotalValence",
        "AtomExplicitValence",
        "AtomIsotope",
        "AtomMass",
        "AtomInRing",
        "AtomHasRingBond",
        "AtomNumHeteroatomNbrs",
        "AtomNumAliphaticHeteroatomNbrs",
        "AtomNumHeteroatomNeighbors",
        "AtomNumAliphaticHeteroatomNeighbors",
        "RecursiveStructure",
        "BondOrder",
        "SingleOrAromaticBond",
        "SingleOrDoubleBond",
        "SingleOrDoubleOrAromaticBond",
        "DoubleOrAromaticBond",
        "BondNull",
        "BondInRing",
    }
)
#: Primitives that need the SSSR rings sanitization sets.
RING_LEAVES = frozenset({"AtomInNRings", "AtomMinRingSize", "AtomRingBondCount", "AtomRingSize"})
#: Combinators of query trees.
_LOGIC = frozenset({"AtomAnd", "AtomOr", "AtomXor", "AtomNot", "BondAnd", "BondOr", "BondXor",
                    "BondNot"})  # fmt: skip
_LEAF = re.compile(r"^\s*([A-Za-z]+)")

FORMS = ("fast", "rings", "full")


def _leaves(description: str) -> set[str]:
    names = set()
    for line in description.splitlines():
        m = _LEAF.match(line)
        if m and m.group(1) not in _LOGIC:
            name = m.group(1)
            if name == "AtomInNRings" and line.split()[1:2] == ["-1"]:
                name = "AtomInRing"  # SMARTS `R`: in some ring, membership only
            names.add(name)
    return names


def recursive_bodies(smarts: str) -> list[str] | None:
    """The texts inside every `$(...)` of `smarts` (outermost first, nested ones too), or None
    when the parentheses do not balance."""
    bodies = []
    i = smarts.find("$(")
    while i != -1:
        depth, j = 0, i + 1
        while j < len(smarts):
            depth += {"(": 1, ")": -1}.get(smarts[j], 0)
            if depth == 0:
                break
            j += 1
        if depth != 0:
            return None
        bodies.append(smarts[i + 2 : j])
        i = smarts.find("$(", i + 2)
    return bodies


def _query_leaves(mol: Chem.Mol) -> set[str]:
    """Names of every primitive in the query trees of `mol` (a recursive SMARTS shows as
    `RecursiveStructure`: its inner query is not reachable from Python; see `form_for`)."""
    names: set[str] = set()
    for atom in mol.GetAtoms():
        if atom.HasQuery():
            names |= _leaves(atom.DescribeQuery())
    for bond in mol.GetBonds():
        if bond.HasQuery():
            names |= _leaves(bond.DescribeQuery())
    return names


def form_for(mol: Chem.Mol, kind: str, chirality: bool, text: str = "") -> str:
    """The cheapest form that gives `mol` (a query read from `text`) RDKit's exact hits. The
    primitives of recursive SMARTS are read from their own text (`$(...)` bodies parsed
    again); when that fails, the full form."""
    if chirality:
        return "full"
    if kind == "smiles":
        return "fast"  # plain atoms and bonds: element, charge, isotope, radicals, bond type
    leaves = _query_leaves(mol)
    if "RecursiveStructure" in leaves:
        bodies = recursive_bodies(text)
        if not bodies:
            return "full"
        leaves.discard("RecursiveStructure")
        for body in bodies:
            inner = Chem.MolFromSmarts(body)
            if inner is None:
                return "full"
            leaves |= _query_leaves(inner) - {"RecursiveStructure"}
    if leaves <= FAST_LEAVES:
        return "fast"
    if leaves <= FAST_LEAVES | RING_LEAVES:
        return "rings"
    return "full"


def matcher_for(mol: Chem.Mol, kind: str, form: str) -> str:
    """`library` (RDKit's SubstructLibrary loop, see `matcher.py`) when its molecules are this
    form for the query: the fast or rings form, and no query atom with radicals (the loop does
    not assign radicals, and plain query atoms compare them); else `python`."""
    if form == "full":
        return "python"
    if kind == "smiles" and any(a.GetNumRadicalElectrons() for a in mol.GetAtoms()):
        return "python"
    return "library"


def fast_mol(smiles: str) -> Chem.Mol | None:
    m = Chem.MolFromSmiles(smiles, sanitize=False)
    if m is not None:
        m.UpdatePropertyCache(strict=False)
        Chem.AssignRadicals(m)  # atom matching compares radicals; sanitization assigns them
        Chem.FastFindRings(m)
    return m


def rings_mol(smiles: str) -> Chem.Mol | None:
    m = Chem.MolFromSmiles(smiles, sanitize=False)
    if m is not None:
        m.UpdatePropertyCache(strict=False)
        Chem.AssignRadicals(m)
        Chem.GetSymmSSSR(m)
    return m


MAKERS = {"fast": fast_mol, "rings": rings_mol, "full": Chem.MolFromSmiles}
