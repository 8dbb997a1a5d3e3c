"""Screening features beyond RDKit's pattern fingerprint: none yet (version 0). A query then
requires no feature bit, which is always sound; the real features replace this module."""

from __future__ import annotations

FEATURE_BITS = 64
FEATURES_VERSION = 0


def molecule_features(mol) -> list[int]:
    return []


def query_features(query) -> list[int]:
    return []


def always_false(query) -> str | None:
    return None


def describe_features() -> list[str]:
    return [f"unused {i}" for i in range(FEATURE_BITS)]
