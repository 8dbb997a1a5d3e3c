"""Anonymous graphs ("skeletons") and the six edits between them, exactly as issue 19 and
docs/analogs.md define them: the reference that molsift's analog index and walk are tested
against (so it is plain, slow, obviously right Python, not the fast path).

A skeleton is a molecule's heavy atoms and bonds with every label removed: element, charge,
isotope, hydrogen count, bond order, aromaticity and stereo. Atoms are 0..n-1; bonds are pairs
(i, j) with i < j. Two skeletons are the same when their graphs are isomorphic; `key` gives the
canonical form (RDKit's canonical SMILES of the graph with every atom a dummy atom and every bond
single), so equal keys mean isomorphic graphs.

Every edit changes the number of bonds by exactly one:

* `tdn`: delete an atom of degree 1 with its bond; `tup`: add a new atom bonded to one atom;
* `rdn`: delete a bond that lies on a cycle; `rup`: add a bond between two unbonded atoms of
  the same connected component;
* `ldn`: delete an atom of degree 2 whose two neighbours are not bonded to each other, joining
  the neighbours by a bond; `lup`: put a new atom in the middle of a bond.

Each kind's inverse is a kind (tdn/tup, rdn/rup, ldn/lup), so the edit distance is symmetric;
no edit changes the number of connected components; the atom count changes by one in the
terminal and linker edits and the ring count (bonds - atoms + components) by one in the ring
edits, so |atoms difference| + |rings difference| is a lower bound of the distance, and the
distance has the parity of the bond-count difference."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

#: the edit kinds, in the order counts are given everywhere
KINDS = ("tdn", "tup", "rdn", "rup", "ldn", "lup")
#: each kind's inverse (an edit read backwards)
INVERSE = {"tdn": "tup", "tup": "tdn", "rdn": "rup", "rup": "rdn", "ldn": "lup", "lup": "ldn"}


@dataclass(frozen=True)
class Skeleton:
    """An anonymous graph: `n` atoms and `bonds` as sorted (i, j) pairs with i < j."""

    n: int
    bonds: tuple[tuple[int, int], ...]

    @staticmethod
    def of(n: int, bonds) -> Skeleton:
        return Skeleton(n, tuple(sorted((min(i, j), max(i, j)) for i, j in bonds)))

    @cached_property
    def neighbours(self) -> list[set[int]]:
        adj: list[set[int]] = [set() for _ in range(self.n)]
        for i, j in self.bonds:
            adj[i].add(j)
            adj[j].add(i)
        return adj

    @cached_property
    def component(self) -> list[int]:
        """The connected component of each atom (numbered by their smallest atom)."""
        comp = [-1] * self.n
        for start in range(self.n):
            if comp[start] < 0:
                comp[start] = start
                stack = [start]
                while stack:
                    a = stack.pop()
                    for b in self.neighbours[a]:
                        if comp[b] < 0:
                            comp[b] = start
                            stack.append(b)
        return comp

    @property
    def components(self) -> int:
        return len(set(self.component))

    @property
    def rings(self) -> int:
        """The cycle rank: bonds - atoms + components."""
        return len(self.bonds) - self.n + self.components

    @cached_property
    def ring_bonds(self) -> frozenset[tuple[int, int]]:
        """Bonds on a cycle: those whose removal keeps their two atoms connected."""
        out = set()
        for i, j in self.bonds:
            seen = {i}
            stack = [i]
            while stack:
                a = stack.pop()
                for b in self.neighbours[a]:
                    if (min(a, b), max(a, b)) == (i, j) or b in seen:
                        continue
                    seen.add(b)
                    stack.append(b)
            if j in seen:
                out.add((i, j))
        return frozenset(out)

    @cached_property
    def key(self) -> str:
        """Canonical form: equal keys if and only if the graphs are isomorphic."""
        return canonical_key(self)

    @cached_property
    def certificate(self) -> bytes:
        """The fast canonical form (Rust, `molsift_analogs::canonical`): equal certificates if
        and only if the graphs are isomorphic, as `key`, computed independently of RDKit."""
        from .. import _core

        return _core.canonical_skeleton(self.n, list(self.bonds))[1]


def canonical_key(s: Skeleton) -> str:
    """RDKit's canonical SMILES of `s` with dummy atoms and single bonds (not sanitized: no
    valence rules apply to dummy atoms, and the graph is all there is)."""
    from rdkit import Chem

    mol = Chem.RWMol()
    for _ in range(s.n):
        atom = Chem.Atom(0)
        atom.SetNoImplicit(True)
        mol.AddAtom(atom)
    for i, j in s.bonds:
        mol.AddBond(i, j, Chem.BondType.SINGLE)
    mol.UpdatePropertyCache(strict=False)
    return Chem.MolToSmiles(mol, canonical=True)


def skeleton_of(mol) -> Skeleton:
    """The skeleton of an RDKit molecule: its heavy atoms (atomic number > 1) and the bonds
    between them."""
    heavy = [a.GetIdx() for a in mol.GetAtoms() if a.GetAtomicNum() > 1]
    index = {old: new for new, old in enumerate(heavy)}
    bonds = [
        (index[b.GetBeginAtomIdx()], index[b.GetEndAtomIdx()])
        for b in mol.GetBonds()
        if b.GetBeginAtomIdx() in index and b.GetEndAtomIdx() in index
    ]
    return Skeleton.of(len(heavy), bonds)


def elements_of(mol) -> list[str]:
    """The element symbols of an RDKit molecule's heavy atoms, in `skeleton_of`'s atom order."""
    return [a.GetSymbol() for a in mol.GetAtoms() if a.GetAtomicNum() > 1]


def skeleton_of_smiles(smiles: str) -> Skeleton:
    """The skeleton of a SMILES; ValueError when RDKit cannot read it."""
    from ..chem import to_mol

    mol, reason = to_mol(smiles)
    if mol is None:
        raise ValueError(f"invalid SMILES {smiles!r}: {reason}")
    return skeleton_of(mol)


def _without_atom(s: Skeleton, gone: int, extra=()) -> Skeleton:
    """`s` less atom `gone` and its bonds, plus the bonds `extra` (old numbering)."""
    renumber = {a: a - (a > gone) for a in range(s.n) if a != gone}
    kept = [(renumber[i], renumber[j]) for i, j in s.bonds if gone not in (i, j)]
    kept += [(renumber[i], renumber[j]) for i, j in extra]
    return Skeleton.of(s.n - 1, kept)


def edits(s: Skeleton) -> Iterator[tuple[str, Skeleton]]:
    """Every single edit of `s`: (kind, result). Results may repeat (symmetric atoms give
    isomorphic results); compare them by `key`."""
    adj = s.neighbours
    for a in range(s.n):
        if len(adj[a]) == 1:
            yield "tdn", _without_atom(s, a)
    for a in range(s.n):
        yield "tup", Skeleton.of(s.n + 1, [*s.bonds, (a, s.n)])
    for bond in s.ring_bonds:
        yield "rdn", Skeleton(s.n, tuple(b for b in s.bonds if b != bond))
    comp = s.component
    for i in range(s.n):
        for j in range(i + 1, s.n):
            if comp[i] == comp[j] and j not in adj[i]:
                yield "rup", Skeleton.of(s.n, [*s.bonds, (i, j)])
    for a in range(s.n):
        if len(adj[a]) == 2:
            u, v = sorted(adj[a])
            if v not in adj[u]:
                yield "ldn", _without_atom(s, a, extra=[(u, v)])
    for i, j in s.bonds:
        rest = [b for b in s.bonds if b != (i, j)]
        yield "lup", Skeleton.of(s.n + 1, [*rest, (i, s.n), (j, s.n)])


def bridge_moves(s: Skeleton) -> Iterator[Skeleton]:
    """Every bridge move of `s` (two edits: a bond added that puts a bridge of `s` on a cycle,
    then that bridge deleted; a branch detached from one atom and attached to another). The
    climbs that deletions alone cannot replace (docs/analogs.md); results may repeat."""
    ring = s.ring_bonds
    bridges = [b for b in s.bonds if b not in ring]
    for kind, up in edits(s):
        if kind == "rup":
            cycles = up.ring_bonds
            for y in bridges:
                if y in cycles:
                    yield Skeleton(up.n, tuple(b for b in up.bonds if b != y))
