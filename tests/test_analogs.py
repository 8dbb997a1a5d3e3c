"""Analog search by graph edit distance (issue 19): the definition as code. Skeletons drop every
label; the six edits do what docs/analogs.md says, each has its inverse, and none changes the
number of components; the reference distances (meet in the middle) equal a plain one-sided
breadth-first search on small graphs, with and without per-kind limits, and known pairs of
molecules have the distances a chemist counts by hand."""

from __future__ import annotations

import random

import pytest
from rdkit import RDLogger

from molsift.analogs import KINDS, Skeleton, edits, skeleton_of_smiles
from molsift.analogs.reference import ball, distances, lower_bound

RDLogger.DisableLog("rdApp.*")


def sk(smiles: str) -> Skeleton:
    return skeleton_of_smiles(smiles)


def test_skeletons_drop_every_label():
    same = ["c1ccccc1", "C1CCCCC1", "c1ccncc1", "C1=CC=CC=C1", "[13CH]1=CC=CC=C1", "c1cc[nH+]cc1"]
    assert len({sk(s).key for s in same}) == 1
    assert sk("C[C@H](N)O").key == sk("CC(O)N").key == sk("CC(C)C").key
    assert sk("[2H]C").key == sk("C").key  # hydrogens are not heavy atoms, labelled or not
    assert sk("CCO").key != sk("C1CC1").key
    assert sk("CCO.[Na+]").components == 2
    with pytest.raises(ValueError, match="invalid SMILES"):
        skeleton_of_smiles("C1CC")


@pytest.mark.parametrize(
    "a,b,dist",
    [
        ("c1ccccc1", "Cc1ccccc1", 1),  # tup
        ("C1CCCCC1", "C1CCCCCC1", 1),  # lup (a ring atom more)
        ("C1CCCCC1", "CCCCCC", 1),  # rdn
        ("CCC", "C1CC1", 1),  # rup
        ("CCC", "CC", 1),  # tdn (or ldn)
        ("CCCC", "CC(C)C", 2),  # same counts: a terminal atom moved (tdn, tup)
        ("c1ccccc1", "c1ccncc1", 0),
        ("CCC", "CC1CCC1", 3),  # 2 atoms and a ring more: 3 edits
        ("CCCC", "C1CC1", 2),  # an atom less, a ring more
        ("Cc1ccccc1", "CCc1ccccc1", 1),
    ],
)
def test_known_distances(a, b, dist):
    assert distances(sk(a), [sk(b)], max(dist, 3)) == {sk(b).key: dist}
    assert distances(sk(b), [sk(a)], max(dist, 3)) == {sk(a).key: dist}  # symmetric
    assert distances(sk(a), [sk(b)], dist - 1) == {} if dist else True
    assert lower_bound(sk(a), sk(b)) <= dist


def test_limits_can_force_a_longer_path_or_none():
    c6, c7 = sk("C1CCCCC1"), sk("C1CCCCCC1")
    assert distances(c6, [c7], 3) == {c7.key: 1}
    # without lup: grow a branch, open the ring, close the bigger one (3 edits)
    assert distances(c6, [c7], 3, {"lup": 0}) == {c7.key: 3}
    assert distances(c6, [c7], 2, {"lup": 0}) == {}
    assert distances(c6, [c7], 3, {"lup": 0, "rup": 0}) == {}
    with pytest.raises(ValueError, match="unknown edit kinds"):
        distances(c6, [c7], 3, {"dist": 1})


def test_components_never_change():
    salt = sk("CCO.[Na+]")
    assert lower_bound(salt, sk("CCO")) is None
    assert distances(salt, [sk("CCO")], 4) == {}
    assert all(result.components == 2 for _, result in edits(salt))


def test_fast_canonical_form_agrees_with_rdkit_on_real_skeletons(bundled_smi):
    """The Rust certificate and RDKit's canonical SMILES of the dummy-atom graph are two
    independent canonical forms: on every skeleton of the bundled data (and each renumbered at
    random) they must split the skeletons into the same classes."""
    rng = random.Random(5)
    by_key: dict[str, set[bytes]] = {}
    by_cert: dict[bytes, set[str]] = {}
    for line in bundled_smi.read_text().splitlines()[1:]:
        try:
            s = skeleton_of_smiles(line.split()[0])
        except ValueError:
            continue
        perm = list(range(s.n))
        rng.shuffle(perm)
        moved = Skeleton.of(s.n, [(perm[i], perm[j]) for i, j in s.bonds])
        assert moved.certificate == s.certificate
        by_key.setdefault(s.key, set()).add(s.certificate)
        by_cert.setdefault(s.certificate, set()).add(s.key)
    assert len(by_key) > 1000
    assert all(len(v) == 1 for v in by_key.values())
    assert all(len(v) == 1 for v in by_cert.values())


def test_skeletons_read_from_smiles_text_equal_rdkits(bundled_smi):
    """`_core.smiles_skeleton` reads the topology of the SMILES text alone (the index build
    needs no toolkit); on every bundled molecule, as given and as RDKit's canonical SMILES, it
    is the same graph as RDKit's heavy atoms and bonds."""
    from rdkit import Chem

    from molsift import _core
    from molsift.analogs import skeleton_of

    checked = 0
    for line in bundled_smi.read_text().splitlines()[1:]:
        text = line.split()[0]
        mol = Chem.MolFromSmiles(text)
        if mol is None:
            continue
        want = skeleton_of(mol).certificate
        for smiles in (text, Chem.MolToSmiles(mol)):
            n, bonds = _core.smiles_skeleton(smiles)
            assert Skeleton.of(n, bonds).certificate == want, smiles
        checked += 1
    assert checked > 4000
    with pytest.raises(ValueError, match="at byte 4"):
        _core.smiles_skeleton("C1CC")


def small_skeletons(count: int, seed: int) -> list[Skeleton]:
    """Random connected graphs of 3-7 atoms (a random tree plus a few extra bonds)."""
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        n = rng.randint(3, 7)
        bonds = {(rng.randrange(a), a) for a in range(1, n)}
        for _ in range(rng.randint(0, 2)):
            i, j = sorted(rng.sample(range(n), 2))
            bonds.add((i, j))
        out.append(Skeleton.of(n, bonds))
    return out


def test_every_edit_has_its_inverse_and_keeps_the_bounds():
    for s in small_skeletons(25, 1):
        for kind, result in edits(s):
            assert abs(len(result.bonds) - len(s.bonds)) == 1
            assert result.components == s.components
            back = {(k, r.key) for k, r in edits(result)}
            inverse = {"tdn": "tup", "tup": "tdn", "rdn": "rup", "rup": "rdn", "ldn": "lup",
                       "lup": "ldn"}[kind]  # fmt: skip
            assert (inverse, s.key) in back, (kind, s, result)
            assert lower_bound(s, result) == 1


def test_rust_edits_equal_the_definition(bundled_smi):
    """`molsift_analogs::edits` (the walk's edits) against `skeleton.edits` (the definition):
    the same multiset of (kind, result) on random small graphs and on bundled skeletons."""
    from collections import Counter

    from molsift import _core

    graphs = small_skeletons(40, 7)
    for line in bundled_smi.read_text().splitlines()[1:200]:
        try:
            graphs.append(skeleton_of_smiles(line.split()[0]))
        except ValueError:
            continue
    for g in graphs:
        want = Counter((kind, result.certificate) for kind, result in edits(g))
        got = Counter(_core.skeleton_edits(g.n, list(g.bonds)))
        assert got == want, g


@pytest.mark.parametrize("limits", [None, {"rup": 0}, {"tup": 1, "tdn": 0}, {"lup": 0, "ldn": 1}])
def test_meet_in_the_middle_equals_one_sided_search(limits):
    """`distances` (balls of radius ceil(D/2) and floor(D/2)) against the plain ball of radius D
    around the query, on random small graphs: the same targets at the same distances."""
    targets = small_skeletons(60, 2)
    cap = None if limits is None else tuple(limits.get(k, 3) for k in KINDS)
    for query in small_skeletons(6, 3):
        plain = ball(query, 3, cap)
        want = {t.key: min(d for d, _ in plain[t.key]) for t in targets if t.key in plain}
        assert distances(query, targets, 3, limits) == want


# The exact walk against the reference on the bundled data: tests/test_analogs_search.py


@pytest.fixture(scope="module")
def bundled_skeletons(bundled_smi):
    """The skeletons of the bundled SMILES by position (None: unreadable)."""
    smiles = [line.split()[0] for line in bundled_smi.read_text().splitlines()[1:]]
    skeletons = []
    for s in smiles:
        try:
            skeletons.append(skeleton_of_smiles(s))
        except ValueError:
            skeletons.append(None)
    return skeletons


def test_both_canonical_forms_split_whole_balls_alike(bundled_skeletons):
    """The walk tests key the reference by molsift's certificate (for speed); here RDKit's
    canonical SMILES and the certificate must split every graph of radius-2 balls (molecules'
    neighbours, most of them not molecules) into the same classes."""
    skeletons = bundled_skeletons
    rng = random.Random(13)
    for query in rng.sample([s for s in skeletons if s is not None and 8 <= s.n <= 14], 3):
        graphs = [query]
        for _kind, one in edits(query):
            graphs.append(one)
            graphs.extend(two for _k, two in edits(one))
        pairs = {(g.key, g.certificate) for g in graphs}
        assert len({k for k, _ in pairs}) == len({c for _, c in pairs}) == len(pairs)


def test_bridge_moves_detach_a_branch_and_attach_it_elsewhere():
    """o-xylene's skeleton to p-xylene's is one bridge move (distance 2 by the reference);
    a bridge move keeps atoms, bonds and components, and a ring-only graph has none."""
    from molsift.analogs.skeleton import bridge_moves

    ortho, para = sk("Cc1ccccc1C"), sk("Cc1ccc(C)cc1")
    moved = {m.certificate for m in bridge_moves(ortho)}
    assert para.certificate in moved
    assert distances(ortho, [para], 2) == {para.key: 2}
    for m in bridge_moves(ortho):
        assert (m.n, len(m.bonds), m.components) == (ortho.n, len(ortho.bonds), 1)
    assert list(bridge_moves(sk("C1CCCCC1"))) == []
