"""A query molecule compiled for the graph matcher of `crates/substructure` (`matcher.rs`):
each atom and bond becomes an expression over the properties the index's graphs hold, read
from RDKit itself: a SMARTS atom's query tree (`DescribeQuery()`), or, for a SMILES atom, the
rules of RDKit's `Atom::Match` (element; charge, isotope and radicals when the query atom
sets them) and `Bond::Match` (same bond type). Recursive SMARTS become patterns of their own.
A query this module cannot express exactly (a primitive it does not know, a range, chirality)
gets no program: it is matched by RDKit, as before. `graph_program(mol)` -> JSON text or None;
`graph_record(mol)` is the other side, one molecule's record in the index."""

from __future__ import annotations

import json
import re
import struct

from rdkit import Chem

from .features import _recursive_groups, _tree

# RDKit query description -> matcher field (names of crates/substructure/src/program.rs)
_ATOM_FIELDS = {
    "AtomAtomicNum": "atomic_num",
    "AtomType": "atom_type",
    "AtomIsAromatic": "aromatic",
    "AtomIsAliphatic": "aliphatic",
    "AtomFormalCharge": "charge",
    "AtomNegativeFormalCharge": "neg_charge",
    "AtomHCount": "total_hs",
    "AtomImplicitHCount": "implicit_hs",
    "AtomHasImplicitH": "has_implicit_h",
    "AtomExplicitDegree": "degree",
    "AtomTotalDegree": "total_degree",
    "AtomIsotope": "isotope",
    "AtomInNRings": "n_rings",
    "AtomInRing": "in_ring",
    "AtomMinRingSize": "min_ring_size",
    "AtomRingBondCount": "ring_bond_count",
    "AtomHasRingBond": "has_ring_bond",
    "AtomTotalValence": "total_valence",
    "AtomHybridization": "hybridization",
    "AtomUnsaturated": "unsaturated",
}
_BOND_FIELDS = {
    "BondOrder": "order",
    "SingleOrAromaticBond": "single_or_aromatic",
    "DoubleOrAromaticBond": "double_or_aromatic",
    "SingleOrDoubleBond": "single_or_double",
    "SingleOrDoubleOrAromaticBond": "single_or_double_or_aromatic",
    "BondInRing": "in_ring",
}
_LEAF = re.compile(r"(\w+) (-?\d+) (!?=) val")
#: Bond types a graph record holds (RDKit BondType values).
BOND_TYPES = (1, 2, 3, 12)


class Unsupported(Exception):
    """The query has something the graph matcher cannot decide exactly."""


def _expr(node, prefix: str, fields: dict, rec) -> object:
    text, children = node
    neg = text.startswith("not ")
    core = text[4:] if neg else text
    if core in (prefix + "And", prefix + "Or"):
        if not children:
            raise Unsupported(core)
        parts = [_expr(c, prefix, fields, rec) for c in children]
        out: object = {core[len(prefix) :].lower(): parts}
    elif core == prefix + "Null":
        out = "true"
    elif core.startswith("RecursiveStructure") and prefix == "Atom":
        if rec is None:
            raise Unsupported(core)
        k = rec(core)
        out = {"rec": k}
        neg = neg or " not in" in core
    elif core.split("_", 1)[0] in ("less", "greater", "range") and prefix == "Atom":
        out, negated = _bounds(core, fields)
        neg = neg != negated
    else:
        m = _LEAF.fullmatch(core)
        if m is None or m.group(1) not in fields:
            raise Unsupported(core)
        out = {"eq": [fields[m.group(1)], int(m.group(2))]}
        neg = neg != (m.group(3) == "!=")
    return {"not": out} if neg else out


_LOWEST, _HIGHEST = -(2**31), 2**31 - 1


def _bounds(core: str, fields: dict) -> tuple:
    """RDKit's range queries (SMARTS `{a-b}`, `{a-}`, `{-b}`), as (range leaf, negated):
    "range_Name lo val hi" (both ends included, as the SMARTS parser makes them), "less_Name v
    <=" (v <= property), "greater_Name v >=" (v >= property); a "!" marks negation."""
    words = core.split()
    kind, name = words[0].split("_", 1)
    negated = "!" in words
    words = [w for w in words[1:] if w != "!"]
    if name not in fields:
        raise Unsupported(core)
    f = fields[name]
    if kind == "range" and len(words) == 3 and words[1] == "val":
        lo, hi = int(words[0]), int(words[2])
    elif kind == "less" and words[1:] == ["<="]:
        lo, hi = int(words[0]), _HIGHEST
    elif kind == "greater" and words[1:] == [">="]:
        lo, hi = _LOWEST, int(words[0])
    else:
        raise Unsupported(core)
    if f in ("n_rings", "ring_bond_count") and min(lo, hi) < 0 <= max(lo, hi) and kind != "less":
        raise Unsupported(core)  # RDKit's ring queries read negative values their own way
    return {"range": [f, lo, hi]}, negated


def _atom(atom, recursive: list) -> object:
    if not atom.HasQuery():  # RDKit's Atom::Match
        z = atom.GetAtomicNum()
        parts = [{"eq": ["atomic_num", z]}]
        if z:
            for field, v in (
                ("charge", atom.GetFormalCharge()),
                ("isotope", atom.GetIsotope()),
                ("radicals", atom.GetNumRadicalElectrons()),
            ):
                if v:
                    parts.append({"eq": [field, v]})
        return {"and": parts} if len(parts) > 1 else parts[0]
    desc = atom.DescribeQuery()
    groups = _recursive_groups(atom.GetSmarts()) if "RecursiveStructure" in desc else []
    todo = list(groups)

    def rec(_text):
        if not todo:
            raise Unsupported("recursive SMARTS not found in the atom's text")
        _neg, inner = todo.pop(0)
        sub = Chem.MolFromSmarts(inner)
        if sub is None or sub.GetNumAtoms() == 0:
            raise Unsupported(f"recursive SMARTS {inner!r}")
        pattern = _pattern(sub, recursive)
        recursive.append(pattern)
        return len(recursive) - 1

    roots = _tree(desc)
    if len(roots) != 1:
        raise Unsupported(desc)
    out = _expr(roots[0], "Atom", _ATOM_FIELDS, rec)
    if todo:
        raise Unsupported("recursive SMARTS left over")
    return out


def _bond(bond) -> object:
    if not bond.HasQuery():  # RDKit's Bond::Match
        t = int(bond.GetBondType())
        return "true" if t == 0 else {"eq": ["order", t]}
    roots = _tree(bond.DescribeQuery())
    if len(roots) != 1:
        raise Unsupported(bond.DescribeQuery())
    return _expr(roots[0], "Bond", _BOND_FIELDS, None)


def _pattern(mol, recursive: list) -> dict:
    if mol.GetNumAtoms() > 255:
        raise Unsupported("more than 255 query atoms")
    atoms = [_atom(a, recursive) for a in mol.GetAtoms()]
    bonds = [
        {"a": b.GetBeginAtomIdx(), "b": b.GetEndAtomIdx(), "expr": _bond(b)} for b in mol.GetBonds()
    ]
    return {"atoms": atoms, "bonds": bonds}


def graph_program(mol: Chem.Mol, chirality: bool = False) -> str | None:
    """The graph-matcher program of query molecule `mol` as JSON, or None when the matcher
    cannot decide it exactly (then RDKit does)."""
    if chirality:
        return None
    recursive: list = []
    try:
        pattern = _pattern(mol, recursive)
    except Unsupported:
        return None
    return json.dumps({"pattern": pattern, "recursive": recursive}, separators=(",", ":"))


_ATOM = struct.Struct("<BbBBBBBB")


def graph_record(mol: Chem.Mol | None) -> bytes:
    """One molecule's record in the index's graphs file (`crates/substructure/src/graph.rs`):
    empty when the molecule is None or the form cannot describe it (then RDKit matches it).
    Ring counts come from RDKit's own ring information (`AtomRings`, `BondRings`: the sets
    `NumAtomRings`, `MinAtomRingSize` and `NumBondRings` count). Bonds are listed by their ends,
    lower atom first, whatever order the molecule's bonds were made in."""
    if mol is None:
        return b""
    na, nb = mol.GetNumAtoms(), mol.GetNumBonds()
    if na > 255 or nb > 255:
        return b""
    ri = mol.GetRingInfo()
    nrings = [0] * na
    min_ring = [0] * na
    for ring in ri.AtomRings():
        size = len(ring)
        for i in ring:
            nrings[i] += 1
            if not min_ring[i] or size < min_ring[i]:
                min_ring[i] = size
    ring_bonds = {b for ring in ri.BondRings() for b in ring}
    out = bytearray((na, nb))
    pack = _ATOM.pack
    for i, a in enumerate(mol.GetAtoms()):
        rad = a.GetNumRadicalElectrons()
        hs, valence, charge = a.GetTotalNumHs(), a.GetTotalValence(), a.GetFormalCharge()
        if a.GetIsotope() or rad > 7 or hs > 255 or valence > 255 or not -128 <= charge <= 127:
            return b""
        if nrings[i] > 255 or min_ring[i] > 255:
            return b""
        flags = int(a.GetIsAromatic()) | rad << 1
        out += pack(
            a.GetAtomicNum(), charge, hs, nrings[i], min_ring[i], valence,
            int(a.GetHybridization()) & 255, flags,
        )  # fmt: skip
    bonds = []
    for k, b in enumerate(mol.GetBonds()):
        t = int(b.GetBondType())
        if t not in BOND_TYPES:
            return b""
        code = t | int(b.GetIsAromatic()) << 5 | int(k in ring_bonds) << 6
        i, j = b.GetBeginAtomIdx(), b.GetEndAtomIdx()
        bonds.append((min(i, j), max(i, j), code))
    for bond in sorted(bonds):  # by their ends, lower atom first: any bond order, one record
        out += bytes(bond)
    return bytes(out)
