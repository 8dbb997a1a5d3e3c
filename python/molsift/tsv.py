"""Tab-separated output rows: each field written as it is, or quoted where it would break the
row (a tab, a line break or a double quote inside it: an id may hold a tab, which a store keeps),
the way Python's csv module and pandas read tab-separated text back (`csv.reader(f,
delimiter="\\t")`, `pandas.read_csv(f, sep="\\t")`): a quoted field's own quotes doubled."""

from __future__ import annotations

import re
from collections.abc import Iterable

_BREAKS = re.compile(r'[\t\n\r"]')


def field(value) -> str:
    """`value` as one field of a row."""
    text = str(value)
    if _BREAKS.search(text) is None:
        return text
    return '"' + text.replace('"', '""') + '"'


def row(values: Iterable) -> str:
    """One row: the fields joined by tabs, and a line break."""
    return "\t".join(map(field, values)) + "\n"
