"""Words for people: counts with their noun in the singular or plural ('1 worker', '4
workers'), and a record's text quoted in a message at a readable length, shared by every
summary and message the CLI prints; a size as an option is written."""

from __future__ import annotations


def size_text(n: int) -> str:
    """65536 -> '64KiB': a size as an option is written (help texts' defaults, a resumed
    run's options)."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B"


def noun(n: int, word: str, words: str | None = None) -> str:
    """`word` for one, else its plural (`words`, or `word` + s)."""
    return word if n == 1 else words or word + "s"


def plural(n: int, word: str, words: str | None = None) -> str:
    """'1 worker', '4 workers', '1,234 processes': `n` and its noun (`words`: a plural other
    than `word` + s)."""
    return f"{n:,} {noun(n, word, words)}"


def quoted(text: str, most: int = 60) -> str:
    """`text` quoted as repr() quotes it, its first `most` characters and its length when it
    is longer (a garbage line's 842-character 'id' in a one-line error)."""
    if len(text) <= most:
        return repr(text)
    return f"{text[:most]!r}... ({len(text):,} characters)"
