"""`FingerprintSpec`: which fingerprint a store holds. Importing it does not import RDKit, so
verbs that never parse molecules (count, info) start fast."""

from __future__ import annotations

from dataclasses import dataclass


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

    def params(self) -> dict:
        """Parameters recorded in the store manifest."""
        from rdkit import rdBase

        return {
            "radius": self.radius,
            "generator": f"rdFingerprintGenerator.GetMorganGenerator(radius={self.radius}, fpSize={self.bits})",
            "rdkit_version": rdBase.rdkitVersion,
        }
