"""What the Python API takes as a number, in one place: a whole number is an `int` or a numpy
integer (anything `numbers.Integral`) but not a bool, a real number likewise `numbers.Real`
but not a bool (`k=True` or `threshold=False` is a mistake, not 1 or 0). Each caller raises
its own TypeError naming its argument."""

from __future__ import annotations

import numbers


def is_whole(value: object) -> bool:
    """Whether `value` is a whole number (int or numpy integer, not a bool)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value: object) -> bool:
    """Whether `value` is a real number (int, float or numpy number, not a bool)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)
