"""Words for people: counts with their noun in the singular or plural ('1 worker', '4
workers'), shared by every summary and message the CLI prints."""

from __future__ import annotations


def noun(n: int, word: str, words: str | None = None) -> str:
    """`word` for one, else its plural (`words`, or `word` + s)."""
    return word if n == 1 else words or word + "s"


def plural(n: int, word: str, words: str | None = None) -> str:
    """'1 worker', '4 workers', '1,234 processes': `n` and its noun (`words`: a plural other
    than `word` + s)."""
    return f"{n:,} {noun(n, word, words)}"
