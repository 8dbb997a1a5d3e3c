"""The `filter` scorer: drug-likeness properties (MW, cLogP, HBD, HBA, rotatable bonds, TPSA,
QED) and PAINS alerts, each as a column, plus `pass`: every rule met. Default rules are
Lipinski's (MW <= 500, cLogP <= 5, HBD <= 5, HBA <= 10), Veber's (rotatable bonds <= 10,
TPSA <= 140), no PAINS alert, and QED >= 0 (off); each can be changed on the command line."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from typing import Optional

from .base import Scorer

RULES = (  # (option, column, default, kind) -- kind "max" or "min"
    ("max_mw", "mw", 500.0, "max"),
    ("max_clogp", "clogp", 5.0, "max"),
    ("max_hbd", "hbd", 5, "max"),
    ("max_hba", "hba", 10, "max"),
    ("max_rotb", "rotb", 10, "max"),
    ("max_tpsa", "tpsa", 140.0, "max"),
    ("min_qed", "qed", 0.0, "min"),
    ("max_pains", "pains", 0, "max"),
)


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
    name = "filter"
    columns = ("mw", "clogp", "hbd", "hba", "rotb", "tpsa", "qed", "pains", "pains_name", "pass")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("scorer filter (rules a molecule must meet to pass)")
        for opt, col, default, kind in RULES:
            g.add_argument(f"--filter-{opt.replace('_', '-')}", type=type(default), default=default,
                           dest=f"filter_{opt}", help=f"{kind}imum {col} (default {default})")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "FilterScorer":
        return cls(**{opt: getattr(args, f"filter_{opt}") for opt, *_ in RULES})

    def setup(self) -> None:
        from rdkit.Chem import QED, Crippen, Descriptors, Lipinski, rdMolDescriptors
        from rdkit.Chem.FilterCatalog import FilterCatalog, FilterCatalogParams

        params = FilterCatalogParams()
        params.AddCatalog(FilterCatalogParams.FilterCatalogs.PAINS)
        self._pains = FilterCatalog(params)
        self._fns = (Descriptors.MolWt, Crippen.MolLogP, Lipinski.NumHDonors,
                     Lipinski.NumHAcceptors, rdMolDescriptors.CalcNumRotatableBonds,
                     rdMolDescriptors.CalcTPSA, QED.qed)

    def score(self, mol):
        mw, clogp, hbd, hba, rotb, tpsa, qed = (f(mol) for f in self._fns)
        matches = self._pains.GetMatches(mol)
        pains = len(matches)
        name = matches[0].GetDescription() if pains else ""
        values = {"mw": mw, "clogp": clogp, "hbd": hbd, "hba": hba, "rotb": rotb, "tpsa": tpsa,
                  "qed": qed, "pains": pains}
        ok = all(values[col] <= getattr(self, opt) if kind == "max" else values[col] >= getattr(self, opt)
                 for opt, col, _, kind in RULES)
        return [mw, clogp, hbd, hba, rotb, tpsa, qed, pains, name, ok]

    def __getstate__(self):  # RDKit catalogs do not pickle: workers rebuild them in setup
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __setstate__(self, state):
        self.__dict__.update(state)
