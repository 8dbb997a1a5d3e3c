"""Substructure screening features: the vocabulary of "count of X >= k" bits, their values on
molecules, and the bits every molecule matching a query must have.

A molecule can contain a query (RDKit `mol.HasSubstructMatch(query)`, default parameters) only if
it has every bit of `query_features(query)`; `always_false(query)` names queries that match
nothing at all. The bits are thermometer codes of counters that SMARTS queries determine even
where RDKit's pattern fingerprint sees wildcards (`[CX3]`, `[#7;!H0]`, `[$(C=O)]`):

* atoms by element, by element and aromatic flag, and by element and degree (`GetDegree`: bonds
  to any atom, explicit H atoms included);
* bonds by order and the elements (and aromatic flags) at their ends: C=O, C#N, N-N, a-N, ...;
* H on N and O atoms (`CalcNumLipinskiHBD`: `GetTotalNumHs(includeNeighbors=True)` summed over N
  and O, the count SMARTS `H` primitives test).

Not screened: formal charges, isotopes, ring membership and ring sizes, H on other atoms (no bulk
RDKit call gives them per atom; a query asking only for those gets few or no bits).

Queries (`query_features`, `always_false`): each query atom and bond becomes a "box", per attribute
the values a matching molecule atom (bond) may have, read from RDKit's query tree
(`DescribeQuery`): AND intersects, OR unites, a negated primitive complements its one attribute,
whatever is not understood allows anything. A match maps distinct query atoms (bonds) to distinct
molecule atoms (bonds), so k query atoms whose boxes lie inside a counter's class force a count
>= k; a query atom of n query bonds has degree >= n. A recursive SMARTS `$(P)` puts the atom in
the box of P's first atom and requires the molecule to contain P (the requirements of P, the
larger of those of an AND, the smaller of those of an OR). Atoms and bonds of a SMILES query
(plain `Atom`, `Bond`) follow RDKit's `Atom::Match` / `Bond::Match`: the atomic number (a dummy
matches only dummies), a non-zero charge or isotope, and the bond type; not aromatic flags, not
H counts. An attribute with no allowed value is a query that can never match (`always_false`);
`query_features` asks nothing of such atoms.

Molecules (`molecule_features`): exact counts from bulk RDKit calls, the element and aromatic flag
of each atom from a radius-0 Morgan fingerprint with RDKit-fingerprint atom invariants
(`atomic number << 1 | aromatic`, not hashed), bond orders and degrees from the adjacency matrix
with bond orders, the H count from `CalcNumLipinskiHBD`. An atom-by-atom, bond-by-bond pass
(`_facts_slow`, the same values) covers what the bulk calls cannot: bonds that contribute no
valence (zero-order, ionic, some dative bonds), molecules over 1,000 atoms.

`python -m molsift.substructure.features --stats MOLECULES.smi [--queries FILE]` prints, per
query, the molecules passing the screen and the true hits.
"""

from __future__ import annotations

import re
import sys
import threading
from collections import Counter
from functools import lru_cache

import numpy as np
from rdkit import Chem
from rdkit.Chem import rdFingerprintGenerator, rdMolDescriptors

# ---------------------------------------------------------------------------------------------
# value sets: (False, vals) is exactly vals, (True, vals) is every value except vals

_ALL = (True, frozenset())
_EMPTY = (False, frozenset())


def _fin(*vals):
    return (False, frozenset(vals))


def _cofin(*vals):
    return (True, frozenset(vals))


def _ge(k):
    """Integers >= k, for counts and degrees (never negative)."""
    return (True, frozenset(range(k)))


def _and(a, b):
    (ac, av), (bc, bv) = a, b
    if ac and bc:
        return (True, av | bv)
    if ac:
        return (False, bv - av)
    if bc:
        return (False, av - bv)
    return (False, av & bv)


def _or(a, b):
    (ac, av), (bc, bv) = a, b
    if ac and bc:
        return (True, av & bv)
    if ac:
        return (True, av - bv)
    if bc:
        return (True, bv - av)
    return (False, av | bv)


def _not(a):
    return (not a[0], a[1])


def _subset(a, b):
    (ac, av), (bc, bv) = a, b
    if ac:
        return bc and bv <= av
    if bc:
        return av.isdisjoint(bv)
    return av <= bv


def _empty(a):
    return not a[0] and not a[1]


def _has(a, x):
    return (x in a[1]) != a[0]


def _vals(v):
    """A counter's constraint: None (anything), an int, a tuple of ints, or a value set."""
    if v is None:
        return _ALL
    if isinstance(v, int):
        return _fin(v)
    if isinstance(v[0], bool):
        return v
    return _fin(*v)


# ---------------------------------------------------------------------------------------------
# vocabulary: counters, each with the thresholds k of its bits "count >= k"

_HAL = (9, 17, 35, 53)
_COMMON = (0, 1, 5, 6, 7, 8, 9, 14, 15, 16, 17, 34, 35, 53)  # elements with their own counter

# RDKit BondType values
_SINGLE, _DOUBLE, _TRIPLE, _AROMATIC = 1, 2, 3, 12
_SOA = (_SINGLE, _AROMATIC)  # what a SMARTS bond written as nothing matches


def _atom(name, thresholds, elem=None, arom=None, deg=None):
    """Atoms whose element, aromatic flag (0/1) and degree lie in the given sets."""
    return ("atom", name, (_vals(elem), _vals(arom), _vals(deg)), tuple(thresholds))


def _bond(name, thresholds, types, end1=None, end2=None, arom1=None, arom2=None):
    """Bonds of one of `types` (RDKit BondType values) between atoms of the given elements."""
    ends = ((_vals(end1), _vals(arom1)), (_vals(end2), _vals(arom2)))
    return ("bond", name, (_vals(types), ends), tuple(thresholds))


_COUNTERS = (
    _atom(
        "C atoms", (2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 20, 22, 25, 28, 32, 36, 40), elem=6
    ),
    _atom("N atoms", (1, 2, 3, 4, 5, 6, 7, 8, 10), elem=7),
    _atom("O atoms", (1, 2, 3, 4, 5, 6, 7, 8, 10, 12), elem=8),
    _atom("S atoms", (1, 2, 3, 4), elem=16),
    _atom("P atoms", (1, 2), elem=15),
    _atom("F atoms", (1, 2, 3, 4, 6), elem=9),
    _atom("Cl atoms", (1, 2, 3, 4, 5, 6), elem=17),
    _atom("Br atoms", (1, 2, 3), elem=35),
    _atom("I atoms", (1, 2), elem=53),
    _atom("B atoms", (1, 2), elem=5),
    _atom("Si atoms", (1, 2), elem=14),
    _atom("Se atoms", (1,), elem=34),
    _atom("halogen atoms", (1, 2, 3, 4, 6), elem=_HAL),
    _atom("heteroatoms (not C or H)", (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15), elem=_cofin(1, 6)),
    _atom("atoms of other elements", (1, 2), elem=_cofin(*_COMMON)),
    _atom("aromatic atoms", (1, 5, 6, 8, 9, 10, 11, 12, 14, 16, 18, 20, 22, 24), arom=1),
    _atom("aromatic C atoms", (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 20), elem=6, arom=1),
    _atom("aromatic N atoms", (1, 2, 3, 4, 5), elem=7, arom=1),
    _atom("aromatic O atoms", (1, 2), elem=8, arom=1),
    _atom("aromatic S atoms", (1, 2), elem=16, arom=1),
    _atom("aliphatic C atoms", (1, 2, 3, 4, 6, 8, 10, 12, 15, 20), elem=6, arom=0),
    _atom("aliphatic N atoms", (1, 2, 3, 4, 5, 6), elem=7, arom=0),
    _atom("aliphatic O atoms", (1, 2, 3, 4, 5, 6, 8), elem=8, arom=0),
    _atom("aliphatic S atoms", (1, 2, 3), elem=16, arom=0),
    _atom("atoms of degree >=3", (1, 2, 3, 4, 5, 6, 7, 8, 10, 12), deg=_ge(3)),
    _atom("atoms of degree >=4", (1, 2, 3), deg=_ge(4)),
    _atom("C atoms of degree 1", (1, 2, 3, 4, 6), elem=6, deg=1),
    _atom("C atoms of degree >=3", (1, 2, 3, 4, 5, 6, 7, 8, 10), elem=6, deg=_ge(3)),
    _atom("C atoms of degree 4", (1, 2, 3), elem=6, deg=_ge(4)),
    _atom("aromatic C atoms of degree 3", (1, 2, 3, 4, 5, 6, 8), elem=6, arom=1, deg=_ge(3)),
    _atom("N atoms of degree 1", (1, 2), elem=7, deg=1),
    _atom("N atoms of degree >=2", (1, 2, 3, 4), elem=7, deg=_ge(2)),
    _atom("N atoms of degree >=3", (1, 2, 3), elem=7, deg=_ge(3)),
    _atom("aliphatic N atoms of degree >=2", (1, 2, 3), elem=7, arom=0, deg=_ge(2)),
    _atom("aliphatic N atoms of degree >=3", (1, 2), elem=7, arom=0, deg=_ge(3)),
    _atom("aromatic N atoms of degree 3", (1, 2), elem=7, arom=1, deg=_ge(3)),
    _atom("O atoms of degree 1", (1, 2, 3, 4, 6), elem=8, deg=1),
    _atom("O atoms of degree 2", (1, 2, 3, 4), elem=8, deg=_ge(2)),
    _atom("S atoms of degree 1", (1,), elem=16, deg=1),
    _atom("S atoms of degree >=3", (1, 2), elem=16, deg=_ge(3)),
    ("nhoh", "H atoms on N and O", None, (1, 2, 3, 4, 5, 6)),
    _bond("C=O bonds", (1, 2, 3, 4), _DOUBLE, 6, 8),
    _bond("C=N bonds", (1, 2), _DOUBLE, 6, 7),
    _bond("C=C bonds", (1, 2, 3), _DOUBLE, 6, 6),
    _bond("C=S bonds", (1,), _DOUBLE, 6, 16),
    _bond("S=O bonds", (1, 2), _DOUBLE, 16, 8),
    _bond("N=O bonds", (1, 2), _DOUBLE, 7, 8),
    _bond("P=O bonds", (1,), _DOUBLE, 15, 8),
    _bond("P=S bonds", (1,), _DOUBLE, 15, 16),
    _bond("N=N bonds", (1,), _DOUBLE, 7, 7),
    _bond("double bonds", (1, 2, 3, 4, 6), _DOUBLE),
    _bond("double bonds to O", (1, 2, 3, 4, 6), _DOUBLE, None, 8),
    _bond("double bonds to N", (1, 2), _DOUBLE, None, 7),
    _bond("double bonds to S", (1,), _DOUBLE, None, 16),
    _bond("double bonds to heteroatoms", (1, 2, 3, 4, 6), _DOUBLE, None, _cofin(1, 6)),
    _bond("C#N bonds", (1, 2), _TRIPLE, 6, 7),
    _bond("C#C bonds", (1,), _TRIPLE, 6, 6),
    _bond("triple bonds", (1, 2), _TRIPLE),
    _bond("N-N bonds", (1, 2, 3), None, 7, 7),
    _bond("N-O bonds", (1, 2, 3), None, 7, 8),
    _bond("O-O bonds", (1,), None, 8, 8),
    _bond("S-S bonds", (1,), None, 16, 16),
    _bond("N-S bonds", (1, 2), None, 7, 16),
    _bond("O-S bonds", (1, 2, 3, 4), None, 8, 16),
    _bond("C-S bonds", (1, 2, 3, 4), None, 6, 16),
    _bond("O-P bonds", (1, 2, 3, 4), None, 8, 15),
    _bond("C-O single bonds", (1, 2, 3, 4, 6, 8), _SINGLE, 6, 8),
    _bond("C-N single bonds", (1, 2, 3, 4, 5, 6, 8), _SINGLE, 6, 7),
    _bond("aromatic bonds", (1, 2, 5, 6, 7, 8, 10, 11, 12, 14, 16, 18, 20, 24), _AROMATIC),
    _bond("aromatic C-N bonds", (1, 2, 3, 4, 6), _AROMATIC, 6, 7),
    _bond("aromatic N-N bonds", (1, 2), _AROMATIC, 7, 7),
    _bond("aromatic C-O or C-S bonds", (1, 2), _AROMATIC, 6, (8, 16)),
    _bond("aromatic-to-aliphatic C bonds", (1, 2, 3, 4), _SOA, None, 6, 1, 0),
    _bond("aromatic-to-aliphatic N bonds", (1, 2, 3), _SOA, None, 7, 1, 0),
    _bond("aromatic-to-aliphatic O bonds", (1, 2, 3), _SOA, None, 8, 1, 0),
    _bond("aromatic-to-aliphatic S bonds", (1,), _SOA, None, 16, 1, 0),
    _bond("aromatic-to-halogen bonds", (1, 2, 3), _SOA, None, _HAL, 1, None),
)

FEATURES_VERSION = 1
"""Bumped whenever the meaning of a bit changes (stored in the index header)."""

_BITS = []  # per counter: its bits, one per threshold, in threshold order
_NAMES = []
for _c in _COUNTERS:
    _BITS.append(tuple(range(len(_NAMES), len(_NAMES) + len(_c[3]))))
    _NAMES.extend(f"{_c[1]} >= {t}" for t in _c[3])

FEATURE_BITS = (len(_NAMES) + 63) // 64 * 64
"""Number of feature bits, a multiple of 64 (the last ones may be unused)."""

_ATOM_COUNTERS = tuple(i for i, c in enumerate(_COUNTERS) if c[0] == "atom")
_BOND_COUNTERS = tuple(i for i, c in enumerate(_COUNTERS) if c[0] == "bond")
_NHOH = next(i for i, c in enumerate(_COUNTERS) if c[0] == "nhoh")
# count -> bits set, per counter (counts past the last threshold share the last entry)
_THERMO = tuple(
    tuple(tuple(b for t, b in zip(c[3], bits) if n >= t) for n in range(c[3][-1] + 1))
    for c, bits in zip(_COUNTERS, _BITS)
)


def describe_features() -> list[str]:
    """A short human name per bit, e.g. "N atoms >= 2"; bits past the vocabulary are "unused"."""
    return _NAMES + ["unused"] * (FEATURE_BITS - len(_NAMES))


def _bits(counts):
    out = []
    for ci, n in counts.items():
        if n > 0:
            table = _THERMO[ci]
            out.extend(table[n if n < len(table) else -1])
    out.sort()
    return out


# ---------------------------------------------------------------------------------------------
# molecules

# A bond's valence contribution (Bond::getValenceContrib, what the adjacency matrix with bond
# orders holds; the larger of its two ends') and the bond types it can come from; any other
# value, 0 included, could be any type.
_BOND_VALENCES = {
    1.0: _fin(_SINGLE, 16, 17),  # dative bonds contribute 1 at the end atom, 0 at the begin atom
    1.5: _fin(_AROMATIC, 7),  # aromatic, one-and-a-half
    2.0: _fin(_DOUBLE),
    2.5: _fin(8),
    3.0: _fin(_TRIPLE),
    3.5: _fin(9),
    4.0: _fin(4),
    4.5: _fin(10),
    5.0: _fin(5),
    5.5: _fin(11),
    6.0: _fin(6),
}

_INVARIANTS = rdFingerprintGenerator.GetMorganGenerator(
    radius=0, atomInvariantsGenerator=rdFingerprintGenerator.GetRDKitAtomInvGen()
)
_FAST_MAX_ATOMS = 1000  # the adjacency matrix is n x n


def _atom_counters(key):
    """The atom counters an atom counts for; key: (invariant = element << 1 | aromatic, degree)."""
    inv, deg = key
    vals = (inv >> 1, inv & 1, deg)
    return tuple(
        ci for ci in _ATOM_COUNTERS if all(_has(s, v) for s, v in zip(_COUNTERS[ci][2], vals))
    )


def _fits(end, atom) -> bool:
    """Whether an atom (element, aromatic flag) fits a bond counter's end (element, flag sets)."""
    return _has(end[0], atom[0]) and _has(end[1], atom[1])


def _bond_counters(key):
    """The bond counters a bond counts for; key: (valence contribution, invariant, invariant)."""
    valence, inv1, inv2 = key
    types = _BOND_VALENCES.get(valence, _ALL)
    a1, a2 = (inv1 >> 1, inv1 & 1), (inv2 >> 1, inv2 & 1)
    out = []
    for ci in _BOND_COUNTERS:
        ctypes, (e1, e2) = _COUNTERS[ci][2]
        if _empty(_and(types, ctypes)):
            continue
        if (_fits(e1, a1) and _fits(e2, a2)) or (_fits(e1, a2) and _fits(e2, a1)):
            out.append(ci)
    return tuple(out)


#: RDKit bond types as the binary form's facts give them, with their valence contributions
_FACT_BOND_TYPES = ((_SINGLE, 1.0), (_DOUBLE, 2.0), (_TRIPLE, 3.0), (_AROMATIC, 1.5))


def counter_tables() -> tuple:
    """The counters as tables for the Rust row maker (`_core.ScreenRows`), each entry a set of
    counters (bit ci for counter ci): (per atom invariant 0..255: the atom counters its element
    and aromatic flag fit; per degree 0..255: the atom counters it fits; per bond type of
    `_FACT_BOND_TYPES`: the bond counters of that type; per atom invariant: the bond counters
    whose first end it fits; the same for the second end). An atom counts for the counters of
    both its invariant's and its degree's sets; a bond for those of its type's set and of one
    end's set at each end, either way round: exactly `_atom_counters` and `_bond_counters`,
    whose tests are the conjunctions these tables split."""
    atom_inv, atom_deg = [0] * 256, [0] * 256
    end1, end2 = [0] * 256, [0] * 256
    for ci in _ATOM_COUNTERS:
        elem, arom, deg = _COUNTERS[ci][2]
        for inv in range(256):
            if _has(elem, inv >> 1) and _has(arom, inv & 1):
                atom_inv[inv] |= 1 << ci
        for d in range(256):
            if _has(deg, d):
                atom_deg[d] |= 1 << ci
    bond_type = [0] * len(_FACT_BOND_TYPES)
    for ci in _BOND_COUNTERS:
        ctypes, (e1, e2) = _COUNTERS[ci][2]
        for k, (_t, valence) in enumerate(_FACT_BOND_TYPES):
            if not _empty(_and(_BOND_VALENCES.get(valence, _ALL), ctypes)):
                bond_type[k] |= 1 << ci
        for inv in range(256):
            atom = (inv >> 1, inv & 1)
            if _fits(e1, atom):
                end1[inv] |= 1 << ci
            if _fits(e2, atom):
                end2[inv] |= 1 << ci
    return atom_inv, atom_deg, bond_type, end1, end2


def feature_thresholds() -> tuple[int, list[tuple[int, int]]]:
    """(the counter of H atoms on N and O, each feature bit's (counter, least count))."""
    return _NHOH, list(zip(_BIT_COUNTER.tolist(), _BIT_THRESHOLD.tolist()))


# Counts are summed as one Python int, counter i in bits [16 i, 16 i + 16): an atom or bond adds
# its (cached) increment, and the fields are read back as uint16. The fast path has at most
# _FAST_MAX_ATOMS atoms, so no field overflows; the slow path counts in a dict.
_FIELD = 16


class _Increments(dict):
    def __init__(self, counters):
        super().__init__()
        self._counters = counters

    def __missing__(self, key):
        inc = sum(1 << (_FIELD * ci) for ci in self._counters(key))
        self[key] = inc
        return inc


_ATOM_INC = _Increments(_atom_counters)
_BOND_INC = _Increments(_bond_counters)
_BIT_COUNTER = np.array([ci for ci, c in enumerate(_COUNTERS) for _ in c[3]], dtype=np.intp)
_BIT_THRESHOLD = np.array([t for c in _COUNTERS for t in c[3]], dtype=np.uint16)


_LOCAL = threading.local()
_ADJACENCY = "_molsift_features_"


def _facts_fast(mol):
    """Per-atom invariants and degrees, per-bond (valence contribution, invariant, invariant);
    None when the bulk calls cannot give them exactly."""
    n = mol.GetNumAtoms()
    if n == 0 or n > _FAST_MAX_ATOMS:
        return None
    out = getattr(_LOCAL, "out", None)
    if out is None:
        out = _LOCAL.out = rdFingerprintGenerator.AdditionalOutput()
        out.AllocateAtomToBits()
    _INVARIANTS.GetSparseCountFingerprint(mol, additionalOutput=out)
    inv = [b[0] for b in out.GetAtomToBits()]
    if len(inv) != n:
        return None
    try:  # RDKit keeps the matrix on the molecule, under its own name, until cleared
        adj = Chem.GetAdjacencyMatrix(mol, True, 0, True, _ADJACENCY)
    except RuntimeError:  # a bond type without a valence (RDKit: "Bad bond type")
        return None
    mol.ClearProp(_ADJACENCY + "AdjacencyMatrixBO")
    flat = adj.ravel()
    idx = np.flatnonzero(flat)
    deg = [0] * n
    bonds = []
    for k, valence in zip(idx.tolist(), flat[idx].tolist()):
        i, j = divmod(k, n)
        if i < j:  # the upper triangle: each bond once (a dative bond maybe not at all)
            deg[i] += 1
            deg[j] += 1
            bonds.append((valence, inv[i], inv[j]))
    if len(bonds) != mol.GetNumBonds():  # zero-valence bonds (zero-order, ionic), some dative
        return None
    return inv, deg, bonds


def _facts_slow(mol):
    """The same facts as `_facts_fast`, atom by atom and bond by bond; a bond of valence
    contribution 0 (or unknown) stands for every bond type."""
    inv = [(a.GetAtomicNum() % 128) << 1 | int(a.GetIsAromatic()) for a in mol.GetAtoms()]
    deg = [a.GetDegree() for a in mol.GetAtoms()]
    bonds = []
    for b in mol.GetBonds():
        try:
            valence = max(
                b.GetValenceContrib(b.GetBeginAtom()), b.GetValenceContrib(b.GetEndAtom())
            )
        except RuntimeError:
            valence = 0.0
        bonds.append((valence, inv[b.GetBeginAtomIdx()], inv[b.GetEndAtomIdx()]))
    return inv, deg, bonds


def _counts(facts, nhoh):
    """Counter index -> count (slow, but no limit on the counts)."""
    inv, deg, bonds = facts
    counts = dict.fromkeys(range(len(_COUNTERS)), 0)
    for key, n in Counter(zip(inv, deg)).items():
        for ci in _atom_counters(key):
            counts[ci] += n
    for key, n in Counter(bonds).items():
        for ci in _bond_counters(key):
            counts[ci] += n
    counts[_NHOH] = nhoh
    return counts


def molecule_counts(mol, slow: bool = False) -> dict[int, int]:
    """Counter index -> count for a sanitized molecule (`slow`: atom by atom, bond by bond)."""
    facts = None if slow else _facts_fast(mol)
    if facts is None:
        facts = _facts_slow(mol)
    return _counts(facts, rdMolDescriptors.CalcNumLipinskiHBD(mol))


def molecule_features(mol, read=None) -> list[int]:
    """Sorted bit indices in [0, FEATURE_BITS) of a sanitized RDKit molecule. `read`: its
    facts as `records.screen_inputs` read them from the molecule's binary form ([(invariant,
    degree)] per atom, [(valence contribution, invariant, invariant)] per bond, H atoms on N
    and O), the same values as the bulk calls below give."""
    if read is not None:
        keys, bonds, nhoh = read
        return _from_keys(keys, bonds, nhoh)
    facts = _facts_fast(mol)
    nhoh = rdMolDescriptors.CalcNumLipinskiHBD(mol)
    if facts is None:
        return _bits(_counts(_facts_slow(mol), nhoh))
    inv, deg, bonds = facts
    return _from_keys(list(zip(inv, deg)), bonds, nhoh)


def _from_keys(keys, bonds, nhoh) -> list[int]:
    """The bits of a molecule's facts (atom keys, bond keys, H atoms on N and O)."""
    if max(nhoh, len(bonds), len(keys)) >= 1 << _FIELD:
        inv, deg = zip(*keys) if keys else ((), ())
        return _bits(_counts((inv, deg, bonds), nhoh))
    total = (
        sum(map(_ATOM_INC.__getitem__, keys))
        + sum(map(_BOND_INC.__getitem__, bonds))
        + (nhoh << (_FIELD * _NHOH))
    )
    counts = np.frombuffer(total.to_bytes(2 * len(_COUNTERS), "little"), dtype="<u2")
    return np.flatnonzero(counts[_BIT_COUNTER] >= _BIT_THRESHOLD).tolist()


# ---------------------------------------------------------------------------------------------
# queries: boxes (attribute -> value set; a missing attribute allows anything)

_TOP = {}
_BOTTOM = {"any": _EMPTY}  # matches nothing
_EQ = re.compile(r"(\w+) (-?\d+) (!?=) val")


def _box_and(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = _and(out[k], v) if k in out else v
    return out


def _box_or(a, b):
    if _is_bottom(a) or _is_bottom(b):
        return b if _is_bottom(a) else a
    return {k: _or(a[k], b[k]) for k in a.keys() & b.keys()}


def _is_bottom(box):
    return any(_empty(v) for v in box.values())


def _ring(member):
    return {"ring": _fin(1 if member else 0)}


def _atom_leaf(name, v, neg):
    """The box of one atom primitive: `name` == v, or != v when `neg` (RDKit EqualityQuery)."""
    if name == "AtomAtomicNum":
        s = _fin(v)
        return {"elem": _not(s) if neg else s}
    if name == "AtomType":  # atomic number + 1000 * aromatic
        return _TOP if neg else {"elem": _fin(v % 1000), "arom": _fin(int(v >= 1000))}
    if name in ("AtomIsAromatic", "AtomIsAliphatic"):
        flag = v if name == "AtomIsAromatic" else 1 - v  # the aromatic flag tested
        s = frozenset({flag} & {0, 1})
        return {"arom": (False, frozenset({0, 1}) - s if neg else s)}
    simple = {
        "AtomFormalCharge": ("charge", v),
        "AtomNegativeFormalCharge": ("charge", -v),
        "AtomHCount": ("hs", v),  # GetTotalNumHs(includeNeighbors=True)
        "AtomExplicitDegree": ("deg", v),  # D: GetDegree
        "AtomTotalDegree": ("xdeg", v),  # X: GetTotalDegree
        "AtomIsotope": ("iso", v),
    }
    if name in simple:
        attr, val = simple[name]
        s = _fin(val)
        return {attr: _not(s) if neg else s}
    if name == "AtomInNRings":  # R<n>; R alone is -1, "in some ring"
        if v < 0:
            return _ring(not neg)
        if v == 0:
            return _ring(neg)
        return _TOP if neg else _ring(True)
    if name in ("AtomMinRingSize", "AtomRingBondCount", "AtomRingSize"):  # r<n>, x<n>, k<n>
        if v == 0 and name != "AtomRingSize":
            return _ring(neg)
        return _TOP if neg or v <= 0 else _ring(True)
    if name in ("AtomInRing", "AtomHasRingBond"):  # r, x alone
        return _ring(bool(v) != neg) if v in (0, 1) else _TOP
    if name == "AtomHasImplicitH":  # h alone
        return {"hs": _ge(1)} if v == 1 and not neg else _TOP
    if name == "AtomImplicitHCount":  # h<n>: n Hs not counting H atoms
        return {"hs": _ge(v)} if v > 0 and not neg else _TOP
    return _TOP


_BOND_SETS = {
    "SingleOrAromaticBond": _SOA,
    "DoubleOrAromaticBond": (_DOUBLE, _AROMATIC),
    "SingleOrDoubleBond": (_SINGLE, _DOUBLE),
    "SingleOrDoubleOrAromaticBond": (_SINGLE, _DOUBLE, _AROMATIC),
}


def _bond_leaf(name, v, neg):
    if name == "BondOrder":
        s = _fin(v)
        return {"type": _not(s) if neg else s}
    if name in _BOND_SETS and v in (0, 1):
        s = _fin(*_BOND_SETS[name])
        return {"type": s if bool(v) != neg else _not(s)}
    if name == "BondInRing" and v in (0, 1):
        return {"ring": _fin(int(bool(v) != neg))}
    return _TOP


def _tree(desc):
    """`DescribeQuery()` text (one node a line, children indented two spaces) as nested
    (text, children) tuples."""
    root = []
    stack = [(-1, root)]
    for line in desc.split("\n"):
        if not line.strip():
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 2
        node = (line.strip(), [])
        while stack[-1][0] >= depth:
            stack.pop()
        stack[-1][1].append(node)
        stack.append((depth, node[1]))
    return root


# A query atom's analysis is a pair (box, req): the box of the atom itself, and req, counter
# index -> count that the whole molecule must reach whenever the atom matches (from recursive
# SMARTS: an atom matches $(P) only where the molecule contains P). AND: intersect the boxes,
# take the larger requirement; OR: unite the boxes, the smaller requirement; NOT: nothing.
_NOTHING = (_TOP, {})


def _req_and(a, b):
    out = dict(a)
    for k, v in b.items():
        if v > out.get(k, 0):
            out[k] = v
    return out


def _req_or(a, b):
    return {k: min(v, b[k]) for k, v in a.items() if k in b}


def _eval(node, leaf, prefix, recursive):
    text, children = node
    neg = text.startswith("not ")
    core = text[4:] if neg else text
    if core in (prefix + "And", prefix + "Or"):
        parts = [_eval(c, leaf, prefix, recursive) for c in children]  # in order: _rec_flags
        if neg or not parts:
            return _NOTHING
        if core.endswith("Or"):  # a branch that never matches adds nothing
            parts = [p for p in parts if not _is_bottom(p[0])] or [(_BOTTOM, {})]
        box, req = parts[0]
        for b, r in parts[1:]:
            if core.endswith("And"):
                box, req = _box_and(box, b), _req_and(req, r)
            else:
                box, req = _box_or(box, b), _req_or(req, r)
        return box, req
    if core.startswith("RecursiveStructure"):
        return recursive.pop(0) if recursive else _NOTHING
    if core == prefix + "Null":
        return (_BOTTOM, {}) if neg else _NOTHING
    m = _EQ.fullmatch(core)
    if m is None or neg:
        return _NOTHING
    return leaf(m.group(1), int(m.group(2)), m.group(3) == "!="), {}


def _rec_flags(node, out):
    """The recursive-SMARTS leaves of a tree in order, as negated flags."""
    text, children = node
    if text.startswith("RecursiveStructure"):
        out.append("not in" in text)
    for c in children:
        _rec_flags(c, out)
    return out


def _recursive_groups(smarts):
    """The outermost `$(...)` groups of an atom's SMARTS, in order, as (negated, inner SMARTS)."""
    out = []
    i = smarts.find("$(")
    while i >= 0:
        depth = 0
        j = i + 1
        while j < len(smarts):
            depth += {"(": 1, ")": -1}.get(smarts[j], 0)
            if depth == 0:
                break
            j += 1
        out.append((i > 0 and smarts[i - 1] == "!", smarts[i + 2 : j]))
        i = smarts.find("$(", j)
    return out


@lru_cache(maxsize=4096)
def _recursive(smarts):
    """The analysis of an atom matching `$(smarts)`: the box of the pattern's first atom (which
    the atom is) and the pattern's own counts; bottom when the pattern can never match."""
    q = Chem.MolFromSmarts(smarts)
    if q is None or q.GetNumAtoms() == 0:
        return _NOTHING
    atoms, bonds = analyze(q)
    if any(_is_bottom(b) for b, _ in atoms) or any(_is_bottom(b) for b, _, _ in bonds):
        return (_BOTTOM, {})
    return atoms[0][0], _counts_of(atoms, bonds)


def _atom_analysis(atom):
    if not atom.HasQuery():  # a SMILES atom: RDKit's Atom::Match
        z = atom.GetAtomicNum()
        box = {"elem": _fin(z)}  # a SMILES dummy atom matches only dummy atoms
        if z and atom.GetFormalCharge():
            box["charge"] = _fin(atom.GetFormalCharge())
        if z and atom.GetIsotope():
            box["iso"] = _fin(atom.GetIsotope())
        return box, {}
    roots = _tree(atom.DescribeQuery())
    if len(roots) != 1:
        return _NOTHING
    flags = _rec_flags(roots[0], [])
    recursive = []
    if flags:
        # DescribeQuery does not show the recursive SMARTS; the atom's SMARTS lists them in the
        # same (tree) order. Any disagreement on their number or negations: use none of them.
        groups = _recursive_groups(atom.GetSmarts())
        if [neg for neg, _ in groups] == flags:
            recursive = [_NOTHING if neg else _recursive(text) for neg, text in groups]
        else:
            recursive = [_NOTHING] * len(flags)
    return _eval(roots[0], _atom_leaf, "Atom", recursive)


def _bond_box(bond):
    if not bond.HasQuery():  # a SMILES bond: RDKit's Bond::Match, equal types or unspecified
        t = int(bond.GetBondType())
        return {"type": _fin(t)} if t else _TOP
    roots = _tree(bond.DescribeQuery())
    if len(roots) != 1:
        return _TOP
    return _eval(roots[0], _bond_leaf, "Bond", [])[0]


def analyze(query):
    """(box, req) of the query's atoms, and (box, begin, end) of its bonds. The graph adds to
    each atom: degree >= its number of query bonds, H count >= its H-atom neighbours. Callers
    that need both `query_features` and `always_false` compute it once and pass it to both."""
    atoms = [_atom_analysis(a) for a in query.GetAtoms()]
    is_h = [not _is_bottom(b) and _subset(b.get("elem", _ALL), _fin(1)) for b, _ in atoms]
    for a in query.GetAtoms():
        extra = {}
        d = a.GetDegree()
        if d:
            extra["deg"] = extra["xdeg"] = _ge(d)
        nh = sum(is_h[n.GetIdx()] for n in a.GetNeighbors())
        if nh:
            extra["hs"] = _ge(nh)
        box, req = atoms[a.GetIdx()]
        atoms[a.GetIdx()] = (_box_and(box, extra), req)
    bonds = [(_bond_box(b), b.GetBeginAtomIdx(), b.GetEndAtomIdx()) for b in query.GetBonds()]
    return atoms, bonds


def _min_hs(box):
    """The fewest Hs an atom in `box` can have."""
    co, vals = box.get("hs", _ALL)
    if not co:
        return min(vals)
    k = 0
    while k in vals:
        k += 1
    return k


def _atom_fits(box, elem, arom):
    return _subset(box.get("elem", _ALL), elem) and _subset(box.get("arom", _ALL), arom)


def _group(counters, key, rest):
    """`counters` grouped by `key(counter)`, each group's `rest(counter)` in counter order:
    what `_counts_of` tests once per group rather than once per counter."""
    groups: dict = {}
    for ci in counters:
        groups.setdefault(key(_COUNTERS[ci][2]), []).append((ci, *rest(_COUNTERS[ci][2])))
    return tuple((k, tuple(g)) for k, g in groups.items())


# atom counters by (element set, aromatic set): [(counter, degree set)]
_ATOM_GROUPS = _group(_ATOM_COUNTERS, lambda c: (c[0], c[1]), lambda c: (c[2],))
# bond counters by bond types: [(counter, end 1, end 2)], each end (element set, aromatic set)
_BOND_GROUPS = _group(_BOND_COUNTERS, lambda c: c[0], lambda c: c[1])


def _counts_of(atoms, bonds):
    counts = dict.fromkeys(range(len(_COUNTERS)), 0)
    live = [not _is_bottom(b) for b, _ in atoms]
    # per atom: (element set, aromatic set) -> whether the atom's box lies inside them
    memo: list[dict] = [{} for _ in atoms]

    def fits(i, ea):
        got = memo[i].get(ea)
        if got is None:
            got = memo[i][ea] = _atom_fits(atoms[i][0], *ea)
        return got

    for i, ((box, _), ok) in enumerate(zip(atoms, live)):
        if not ok:
            continue
        deg = box.get("deg", _ALL)
        for ea, group in _ATOM_GROUPS:
            if fits(i, ea):
                for ci, want in group:
                    if _subset(deg, want):
                        counts[ci] += 1
        if _subset(box.get("elem", _ALL), _fin(7, 8)):
            counts[_NHOH] += _min_hs(box)
    for box, i, j in bonds:
        if _is_bottom(box) or not (live[i] and live[j]):
            continue
        types = box.get("type", _ALL)
        for ctypes, group in _BOND_GROUPS:
            if not _subset(types, ctypes):
                continue
            for ci, e1, e2 in group:
                if (fits(i, e1) and fits(j, e2)) or (fits(i, e2) and fits(j, e1)):
                    counts[ci] += 1
    for (_, req), ok in zip(atoms, live):
        if ok:
            counts = _req_and(counts, req)
    return counts


def query_counts(query, analysis=None) -> dict[int, int]:
    """Counter index -> the count every molecule matching `query` reaches (`analysis`: its
    `analyze(query)`, when already made)."""
    return _counts_of(*(analysis or analyze(query)))


def query_features(query, analysis=None) -> list[int]:
    """Sorted bit indices that every molecule matching `query` must have."""
    return _bits(query_counts(query, analysis))


_WORDS = {
    "elem": "element",
    "arom": "aromaticity",
    "charge": "charge",
    "hs": "H count",
    "ring": "ring membership",
    "deg": "degree",
    "xdeg": "total degree",
    "iso": "isotope",
    "type": "bond order",
    "any": "match",
}


def always_false(query, analysis=None) -> str | None:
    """A reason when `query` can never match any molecule (an atom or bond whose constraints
    contradict each other, e.g. "[C&N]", "[!*]", "[+;-]", "[D1](C)C"), else None."""
    atoms, bonds = analysis or analyze(query)
    parts = [("atom", a, box) for a, (box, _) in zip(query.GetAtoms(), atoms)]
    parts += [("bond", b, box) for b, (box, _, _) in zip(query.GetBonds(), bonds)]
    for kind, part, box in parts:
        for attr, vals in box.items():
            if _empty(vals):
                what = "matches nothing" if attr == "any" else f"allows no {_WORDS[attr]}"
                return f"query {kind} {part.GetIdx()} ({part.GetSmarts()}) {what}"
    return None


# ---------------------------------------------------------------------------------------------
# python -m molsift.substructure.features --stats MOLECULES.smi [--queries FILE]


def _read_queries(path):
    """(set, name, text, query) from a file of lines "set TAB syntax TAB name TAB query" (syntax
    smarts or smiles), or "SMARTS [name]", or RDKit's FunctionalGroups.txt ("label TAB SMARTS
    TAB notes"); "#" and "//" start comments."""
    out = []
    with open(path) as fh:
        for line in fh:
            if not line.strip() or line.lstrip().startswith(("#", "//")):
                continue
            fields = [f.strip() for f in line.rstrip("\n").split("\t")]
            if len(fields) == 4 and fields[1] in ("smarts", "smiles"):
                group, syntax, name, text = fields
            elif "FunctionalGroups" in str(path):
                label, text = [f for f in fields if f][:2]
                group, syntax, name = "FunctionalGroups", "smarts", label
            else:
                text, *rest = line.split()
                group, syntax, name = "queries", "smarts", " ".join(rest)
            query = Chem.MolFromSmiles(text) if syntax == "smiles" else Chem.MolFromSmarts(text)
            if query is not None:
                out.append((group, name, text, query))
    return out


def _stats(argv=None):
    import argparse
    import gzip
    import time
    from pathlib import Path

    from rdkit import RDConfig, RDLogger

    RDLogger.DisableLog("rdApp.*")
    parser = argparse.ArgumentParser(
        prog="python -m molsift.substructure.features",
        description="How far the feature screen narrows substructure searches: per query, the "
        "molecules that pass the screen and the true hits.",
    )
    parser.add_argument("--stats", metavar="MOLECULES", required=True, help="SMILES file")
    parser.add_argument(
        "--queries",
        default=str(Path(RDConfig.RDDataDir) / "FunctionalGroups.txt"),
        help="query file (default: RDKit's FunctionalGroups.txt)",
    )
    parser.add_argument("--limit", type=int, default=2000, help="molecules to read (2000)")
    args = parser.parse_args(argv)

    mols = []
    opener = gzip.open if args.stats.endswith(".gz") else open
    with opener(args.stats, "rt") as fh:  # SMILES first, then whitespace or a comma
        for line in fh:
            smiles = re.split(r"[\s,]", line.strip(), maxsplit=1)[0]
            m = Chem.MolFromSmiles(smiles) if smiles and smiles != "SMILES" else None
            if m is not None:
                mols.append(m)
            if len(mols) >= args.limit:
                break
    queries = _read_queries(args.queries)
    mol_bits = [frozenset(molecule_features(m)) for m in mols]
    start = time.perf_counter()  # a second pass, over warm caches
    for m in mols:
        molecule_features(m)
    per_mol = (time.perf_counter() - start) / max(len(mols), 1) * 1e6
    start = time.perf_counter()
    for m in mols:
        Chem.PatternFingerprint(m)
    per_pattern = (time.perf_counter() - start) / max(len(mols), 1) * 1e6
    print(f"{len(mols)} molecules from {args.stats}, {len(queries)} queries from {args.queries}")
    print(f"molecule_features {per_mol:.1f} us/molecule, PatternFingerprint {per_pattern:.1f}")
    print(f"{'passes':>7} {'hits':>7}  query")
    totals = {}
    for group, name, text, query in queries:
        need = frozenset(query_features(query))
        passing = [m for m, bits in zip(mols, mol_bits) if need <= bits]
        hits = sum(m.HasSubstructMatch(query) for m in passing)
        print(f"{len(passing):7d} {hits:7d}  {text}  {name}")
        t = totals.setdefault(group, [0, 0, 0])
        t[0] += 1
        t[1] += len(passing)
        t[2] += hits
    for group, (n, passing, hits) in totals.items():
        pairs = max(n * len(mols), 1)
        print(
            f"{group}: {n} queries x {len(mols)} molecules, the feature screen passes "
            f"{passing / pairs:.1%} of pairs, true hits {hits / pairs:.1%}"
        )


if __name__ == "__main__":
    sys.exit(_stats())
