"""Numbers a user gives, checked where they are given: one line naming the argument."""

from __future__ import annotations

from numbers import Integral


def whole_number(name: str, value: object) -> int:
    """`value` as an int; TypeError naming `name` for anything else ("2048", 2048.0, and
    True, which Python counts as an int but nobody means as a number of tokens)."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an int, not {type(value).__name__} {value!r}")
    return int(value)
