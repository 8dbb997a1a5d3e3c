"""`FingerprintSpec`: which fingerprint a store holds, in one form from the command line
(`--radius`, `--bits`) through the workers and the store manifest (`to_manifest`, the
`"fingerprint"` object of `manifest.json`) and back (`from_manifest`, what search and `info`
read). Importing it does not import RDKit, so verbs that never parse molecules start fast."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FingerprintSpec:
    """Which fingerprint a store holds. Only Morgan (ECFP-like bit vectors) for now."""

    kind: str = "morgan"
    radius: int = 2
    bits: int = 2048

    def __post_init__(self) -> None:
        if self.kind != "morgan":
            raise ValueError(f"unknown fingerprint kind {self.kind!r} (known: morgan)")
        if self.bits <= 0 or self.bits % 64:
            raise ValueError(f"fingerprint size must be a positive multiple of 64, got {self.bits}")
        if self.radius < 0:
            raise ValueError(f"Morgan radius must be >= 0, got {self.radius}")

    def params(self) -> dict[str, Any]:
        """The kind's parameters as the manifest records them (with how they were computed)."""
        from rdkit import rdBase

        generator = f"GetMorganGenerator(radius={self.radius}, fpSize={self.bits})"
        return {
            "radius": self.radius,
            "generator": f"rdFingerprintGenerator.{generator}",
            "rdkit_version": rdBase.rdkitVersion,
        }

    def params_json(self) -> str:
        """`params()` as JSON text, for the Rust store writer."""
        return json.dumps(self.params())

    @classmethod
    def from_manifest(cls, fingerprint: dict[str, Any]) -> FingerprintSpec:
        """The spec of a store, from its manifest's `"fingerprint"` object."""
        params = fingerprint.get("params") or {}
        if fingerprint.get("kind") == "morgan" and "radius" not in params:
            raise ValueError("the store's manifest gives no Morgan radius (params.radius)")
        return cls(kind=fingerprint["kind"], radius=int(params["radius"]), bits=fingerprint["bits"])
