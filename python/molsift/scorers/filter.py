"""The `filter` scorer: drug-likeness properties (MW, cLogP, HBD, HBA, rotatable bonds, TPSA,
QED) and PAINS alerts, each as a column, plus `pass`: every rule met. Default rules are
Lipinski's (MW <= 500, cLogP <= 5, HBD <= 5, HBA <= 10), Veber's (rotatable bonds <= 10,
TPSA <= 140), no PAINS alert, and QED >= 0 (off); each can be changed on the command line.

Every value is RDKit's (the same calls as `Descriptors.MolWt`, `Crippen.MolLogP`, ...,
`QED.qed`, `FilterCatalog(PAINS).GetMatches`), computed with less work: PAINS entries and QED's
structural alerts are first screened with RDKit pattern fingerprints (prescreen.py) and only the
candidates are matched; QED reuses the cLogP column when removing hydrogens changes nothing.
`--filter-no-prescreen` computes everything the plain way (same values, about twice the time)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields

from .base import Scorer

RULES = (  # (option, column, kind): kind "max" or "min"; defaults are FilterScorer's fields
    ("max_mw", "mw", "max"),
    ("max_clogp", "clogp", "max"),
    ("max_hbd", "hbd", "max"),
    ("max_hba", "hba", "max"),
    ("max_rotb", "rotb", "max"),
    ("max_tpsa", "tpsa", "max"),
    ("min_qed", "qed", "min"),
    ("max_pains", "pains", "max"),
)
# columns that are never negative (a negative bound on them would fail every molecule); cLogP
# may be; QED is at most 1
NON_NEGATIVE = {"mw", "hbd", "hba", "rotb", "tpsa", "qed", "pains"}


def check_rule(opt: str, value) -> None:
    """Raises ValueError when `value` cannot bound rule `opt` (NaN, infinite, or negative where
    the column never is): such a rule would fail or pass every molecule without a word."""
    import math

    col = next(c for o, c, _ in RULES if o == opt)
    if not math.isfinite(value):
        raise ValueError(f"{opt}: must be a finite number, got {value}")
    if col in NON_NEGATIVE and value < 0:
        raise ValueError(f"{opt}: {col} is never negative, got {value}")
    if col == "qed" and value > 1:
        raise ValueError(f"{opt}: qed is at most 1, got {value}")


def _rule_type(opt: str, kind: type):
    """The argparse type of the option of rule `opt`: a number `check_rule` accepts."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None
        try:
            check_rule(opt, value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[1]) from None
        return value

    return parse


@dataclass
class FilterScorer(Scorer):
    """Property rules with pass/fail; PAINS via RDKit's FilterCatalog (PAINS A, B and C)."""

    max_mw: float = 500.0
    max_clogp: float = 5.0
    max_hbd: int = 5
    max_hba: int = 10
    max_rotb: int = 10
    max_tpsa: float = 140.0
    min_qed: float = 0.0
    max_pains: int = 0
    prescreen: bool = True
    name = "filter"
    columns = ("mw", "clogp", "hbd", "hba", "rotb", "tpsa", "qed", "pains", "pains_name", "pass")

    def __post_init__(self) -> None:
        for opt, *_ in RULES:
            check_rule(opt, getattr(self, opt))

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("scorer filter (rules a molecule must meet to pass)")
        defaults = {f.name: f.default for f in fields(cls)}
        for opt, col, kind in RULES:
            default = defaults[opt]
            g.add_argument(
                f"--filter-{opt.replace('_', '-')}",
                type=_rule_type(opt, type(default)),
                default=default,
                dest=f"filter_{opt}",
                help=f"{kind}imum {col} (default {default})",
            )
        g.add_argument(
            "--filter-no-prescreen",
            dest="filter_prescreen",
            action="store_false",
            help="match every PAINS entry and QED alert, and compute QED's properties "
            "again, instead of screening by pattern fingerprints (same values, slower)",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> FilterScorer:
        return cls(
            **{opt: getattr(args, f"filter_{opt}") for opt, *_ in RULES},
            prescreen=getattr(args, "filter_prescreen", True),
        )

    def options(self) -> dict:
        """The rules (the prescreen changes only the speed: the same values either way)."""
        found = super().options()
        found.pop("prescreen", None)
        return found

    def setup(self) -> None:
        from rdkit import Chem
        from rdkit.Chem import QED, Crippen, Descriptors, Lipinski, MolSurf, rdMolDescriptors
        from rdkit.Chem.FilterCatalog import FilterCatalog, FilterCatalogParams

        from .prescreen import PatternScreen, pains_queries

        params = FilterCatalogParams()
        params.AddCatalog(FilterCatalogParams.FilterCatalogs.PAINS)
        self._pains = FilterCatalog(params)
        self._fns = (
            Descriptors.MolWt,
            Crippen.MolLogP,
            Lipinski.NumHDonors,
            Lipinski.NumHAcceptors,
            rdMolDescriptors.CalcNumRotatableBonds,
            rdMolDescriptors.CalcTPSA,
        )
        self._qed = QED
        self._chem, self._crippen, self._rdmd, self._molsurf = (
            Chem,
            Crippen,
            rdMolDescriptors,
            MolSurf,
        )
        if self.prescreen:
            self._entries = [
                self._pains.GetEntryWithIdx(i) for i in range(self._pains.GetNumEntries())
            ]
            self._pains_screen = PatternScreen(pains_queries(self._pains))
            self._alerts_screen = PatternScreen(QED.StructuralAlerts)

    def _plain(self, mol):
        """The values the plain RDKit calls give, computed by those calls."""
        values = [f(mol) for f in self._fns]
        values.append(self._qed.qed(mol))
        matches = self._pains.GetMatches(mol)
        return values, len(matches), matches[0].GetDescription() if len(matches) else ""

    def _screened(self, mol):
        """The same values as `_plain`, with the prescreens and cLogP shared with QED."""
        words = self._pains_screen.words(mol)
        hits = [
            e
            for e in (self._entries[i] for i in self._pains_screen.candidates(words))
            if e.HasFilterMatch(mol)
        ]
        values = [f(mol) for f in self._fns]
        values.append(self._qed.qed(mol, qedProperties=self._qed_properties(mol, words, values[1])))
        return values, len(hits), hits[0].GetDescription() if hits else ""

    def _qed_properties(self, mol, words, clogp):
        """QED.properties(mol), line for line, except: the alerts are prescreened and cLogP is
        reused, both only when Chem.RemoveHs left the molecule as it was (same atoms)."""
        qed, rdmd = self._qed, self._rdmd
        noh = self._chem.RemoveHs(mol)
        same = noh.GetNumAtoms() == mol.GetNumAtoms()
        alerts = self._alerts_screen.candidates(words) if same else range(len(qed.StructuralAlerts))
        return qed.QEDproperties(
            MW=rdmd._CalcMolWt(noh),
            ALOGP=clogp if same else self._crippen.MolLogP(noh),
            HBA=sum(
                len(noh.GetSubstructMatches(pattern))
                for pattern in qed.Acceptors
                if noh.HasSubstructMatch(pattern)
            ),
            HBD=rdmd.CalcNumHBD(noh),
            PSA=self._molsurf.TPSA(noh),
            ROTB=rdmd.CalcNumRotatableBonds(noh, rdmd.NumRotatableBondsOptions.Strict),
            AROM=len(
                self._chem.GetSSSR(
                    self._chem.DeleteSubstructs(self._chem.Mol(noh), qed.AliphaticRings)
                )
            ),
            ALERTS=sum(1 for i in alerts if noh.HasSubstructMatch(qed.StructuralAlerts[i])),
        )

    def score(self, mol):
        values, pains, name = self._screened(mol) if self.prescreen else self._plain(mol)
        mw, clogp, hbd, hba, rotb, tpsa, qed = values
        values = {
            "mw": mw,
            "clogp": clogp,
            "hbd": hbd,
            "hba": hba,
            "rotb": rotb,
            "tpsa": tpsa,
            "qed": qed,
            "pains": pains,
        }
        ok = all(
            values[col] <= getattr(self, opt)
            if kind == "max"
            else values[col] >= getattr(self, opt)
            for opt, col, kind in RULES
        )
        return [mw, clogp, hbd, hba, rotb, tpsa, qed, pains, name, ok]

    def __getstate__(self):  # RDKit catalogs do not pickle: workers rebuild them in setup
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __setstate__(self, state):
        self.__dict__.update(state)
