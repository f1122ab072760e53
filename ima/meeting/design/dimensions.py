"""What a derivation's arithmetic measures: the dimension its units give ("12 TB/day x 30
days" is data; "45000 GPU-hours a month x 100 GPU-hours" is GPU time squared), checked
against the unit the estimate is asked in. A small model chains every figure of the brief
into one product (12-06: "200 test vehicles x 50 GB/h x 80 TB/day x 4 TB" for the storage
held); the numbers multiply, the units do not.

The units are the model's free words, not a units library's input ("recorded pervehicle",
"a month"), so they are read here: a known unit word counts, any other word (vehicles, runs,
depots) is a count without dimension. A unit word has its size too (GB or TB, hours or
days), so `in_unit` gives a derivation's result in the estimate's unit.
"""

from __future__ import annotations

import math
import re
from collections import Counter

__all__ = [
    "CONVERSIONS",
    "NUMBER",
    "assumed_answer",
    "dimension_problem",
    "figure_numbers",
    "in_unit",
    "unexplained_count",
]

# Counts a derivation may use without the brief: the calendar's and the units' own.
CONVERSIONS = frozenset({1, 2, 4, 4.3, 4.33, 7, 12, 24, 26, 30, 31, 52, 60, 365, 730, 1000, 1024})

Dimension = Counter  # base dimension -> exponent ("data": 1, "time": -1 for TB/day)

# Each unit word's base dimension and its size in that base's unit: bytes, seconds (a month
# is 30 days, as the calendar conversions write it), GPU- and vCPU-hours, US dollars.
_MONTH = 30 * 86_400
_SCALE_STEPS = frozenset({1000.0, 1024.0})  # a bare one converts a unit's scale
_UNITS: dict[str, tuple[str, float]] = {
    **dict.fromkeys(("b", "byte"), ("data", 1.0)),
    "kb": ("data", 1e3),
    "mb": ("data", 1e6),
    "gb": ("data", 1e9),
    "tb": ("data", 1e12),
    "pb": ("data", 1e15),
    "gbit": ("data", 1.25e8),
    "mbit": ("data", 1.25e5),
    **dict.fromkeys(("s", "sec", "second"), ("time", 1.0)),
    **dict.fromkeys(("min", "minute"), ("time", 60.0)),
    **dict.fromkeys(("h", "hr", "hour"), ("time", 3_600.0)),
    **dict.fromkeys(("day", "night"), ("time", 86_400.0)),
    "week": ("time", 7 * 86_400.0),
    "fortnight": ("time", 14 * 86_400.0),
    "month": ("time", float(_MONTH)),
    "year": ("time", 365 * 86_400.0),
    "gpu-hour": ("gpu", 1.0),
    **dict.fromkeys(("vcpu-hour", "cpu-hour", "core-hour"), ("cpu", 1.0)),
    **dict.fromkeys(("usd", "$", "eur", "dollar"), ("money", 1.0)),
}
# Rates: a link's bits a second, and a machine, which is its hours per hour ("300 vCPU x 30 h"
# is 9,000 vCPU-hours).
_RATES: dict[str, tuple[Counter, float]] = {
    "gbps": (Counter(data=1, time=-1), 1.25e8),
    "mbps": (Counter(data=1, time=-1), 1.25e5),
    **{
        machine: (Counter({base: 1, "time": -1}), 1 / 3_600)
        for machine, base in (("vcpu", "cpu"), ("cpu", "cpu"), ("core", "cpu"), ("gpu", "gpu"))
    },
}
_PER = {"per", "a", "an", "each", "every"}  # "per month", "a month": the next word divides
_MACHINE_HOURS = re.compile(r"\b(v?cpu|gpu|core)[\s-]?(?:hours?|hrs?|h)\b", re.I)
_OPERATOR = re.compile(r"\s*([x\u00d7*+/])\s*(?=\d)", re.I)  # as `compute_derivation` reads
# A number as a derivation writes it ("12", "45,000", "4.3"): the one reading of the checks,
# the answers and the units.
NUMBER = r"\d[\d,]*(?:\.\d+)?"
_NUMBER = re.compile(rf"^{NUMBER}")
# A figure of a text: not the digits of a name ("A100" gives no 100; 12-07).
_FIGURE_NUMBER = re.compile(rf"(?<![\w.]){NUMBER}")


def _clean(dimension: Counter) -> Dimension:
    return Counter({base: power for base, power in dimension.items() if power})


def _unit(word: str) -> tuple[str, float] | None:
    word = word.lower().strip(".,;()")
    for candidate in (word, word.removesuffix("s"), word.removesuffix("es")):
        if candidate in _UNITS:
            return _UNITS[candidate]
    return None


def _measure(unit: str) -> tuple[Dimension, float]:
    """The dimension of unit words and their size in the bases' units ("TB/day" is data over
    time, 10^12 bytes per 86,400 s); words that are no unit count for nothing."""
    dimension: Dimension = Counter()
    size, divide = 1.0, False
    for word in _MACHINE_HOURS.sub(r"\1-hour", unit).replace("/", " / ").split():
        lowered = word.lower()
        if lowered == "/" or lowered in _PER:
            divide = True
            continue
        sign, divide = (-1 if divide else 1), False
        rate = lowered if lowered in _RATES else lowered.removesuffix("s")  # "GPUs"
        if rate in _RATES:
            powers, scale = _RATES[rate]
            dimension.update({base: sign * power for base, power in powers.items()})
        elif known := _unit(lowered):
            base, scale = known
            dimension[base] += sign
        else:
            continue
        size *= scale**sign
    return _clean(dimension), size


def _dimension_of(unit: str) -> Dimension:
    """The dimension of unit words: "TB/day" and "TB per day" are data over time, "GPU-hours
    a month" GPU time over time; words that are no unit count for nothing."""
    return _measure(unit)[0]


def _terms(derivation: str) -> tuple[list[str], list[str]]:
    """The terms of `derivation` (left of any "=") and the operators between them."""
    pieces = _OPERATOR.split(derivation.split("=", 1)[0].strip())
    return pieces[::2], [op.lower() for op in pieces[1::2]]


def _evaluate(derivation: str) -> tuple[Dimension, float] | None:
    """The dimension of what `derivation` computes (left of any "=") and its value in the
    bases' units, products before sums; None when its sum adds terms of different
    dimensions. A term without a number counts as 1."""

    def term(text: str) -> tuple[Dimension, float]:
        number = _NUMBER.match(text.strip())
        words = _NUMBER.sub("", text.strip())
        value = float(number.group(0).replace(",", "")) if number else 1.0
        if not words.strip() and value in _SCALE_STEPS:
            value = 1.0  # "/ 1000" from GB to TB: the units' sizes convert already
        dimension, size = _measure(words)
        return dimension, size * value

    terms, operators = _terms(derivation)
    total: tuple[Dimension, float] | None = None
    product, value = term(terms[0])
    for operator, text in zip(operators, terms[1:], strict=True):
        dimension, size = term(text)
        if operator == "+":
            if total is not None and total[0] != product:
                return None
            total = (product, value + (total[1] if total else 0.0))
            product, value = dimension, size
            continue
        sign = -1 if operator == "/" else 1
        product = _clean(
            Counter({b: product[b] + sign * dimension[b] for b in {*product, *dimension}})
        )
        value = (value / size if size else math.nan) if sign < 0 else value * size
    if total is None:
        return product, value
    if total[0] != product:
        return None
    return product, total[1] + value


def in_unit(derivation: str, unit: str) -> float | None:
    """What `derivation` computes, in `unit`: scales converted ("12,000 GB/day x 30 days" is
    360 TB; "300 vCPU x 30 days" 216,000 vCPU-hours), a monthly figure's month left out or
    written. None when its units cannot give `unit` (`dimension_problem` says why)."""
    found = _evaluate(derivation)
    if found is None or not math.isfinite(found[1]):  # "/ 0"
        return None
    size = _measure(unit)[1]
    for dimension, months in _accepted(unit):
        if found[0] == dimension:
            return found[1] / (size * _MONTH**months)
    return None


def _spoken(dimension: Dimension) -> str:
    def power(base: str, exponent: int) -> str:
        return f"{base}^{abs(exponent)}" if abs(exponent) > 1 else base

    up = " x ".join(power(b, e) for b, e in dimension.items() if e > 0) or "a plain count"
    over = " x ".join(power(b, e) for b, e in dimension.items() if e < 0)
    return f"{up} per {over}" if over else up


def _accepted(unit: str) -> list[tuple[Dimension, int]]:
    """The dimensions a figure in `unit` may be derived in, each with the months it leaves
    out: a monthly figure (a unit "per month") may leave the month out."""
    wanted = _dimension_of(unit)
    accepted = [(wanted, 0)]
    if "month" in unit.lower():
        step = 1 if wanted["time"] < 0 else -1
        accepted.append((_clean(Counter({**wanted, "time": wanted["time"] + step})), step))
    return accepted


def assumed_answer(derivation: str, unit: str, given: set[float]) -> str:
    """A factor of a product in `derivation` written in `unit` itself that is no figure of
    `given` (the brief's numbers), or "": the answer assumed, then scaled (12-07: "100
    GPU-hours a month x 2 weeks" for the GPU-hours a month; the brief has 400 GPU-hours a
    run). A term added on its own ("+ 40 TB") is the design's own share, and a factor in
    other words ("300 vCPU", a rate of the same dimension) an assumption of its own."""
    terms, operators = _terms(derivation)
    multiplied = {i for i, op in enumerate(operators) if op != "+"}
    multiplied |= {i + 1 for i in multiplied}
    wanted = _words(unit)
    for i in sorted(multiplied):
        term = terms[i].strip()
        number = _NUMBER.match(term)
        if number is None or not wanted <= _words(_NUMBER.sub("", term)):
            continue
        if float(number.group(0).replace(",", "")) not in given:
            return term
    return ""


def unexplained_count(derivation: str, given: set[float]) -> str:
    """A factor without a unit (a plain count) that is neither a figure of `given` (the
    brief's numbers) nor a conversion (`CONVERSIONS`), or "" (12-07: "... x 1000000000
    units" made two billion GPU-hours a month)."""
    terms, _ = _terms(derivation)
    for term in (t.strip() for t in terms):
        number = _NUMBER.match(term)
        if number is None or _dimension_of(_NUMBER.sub("", term)):
            continue
        value = float(number.group(0).replace(",", ""))
        if value not in given and value not in CONVERSIONS:
            return term
    return ""


def figure_numbers(text: str) -> set[float]:
    """The numbers `text` states as figures ("45,000" is 45000; the "100" of "A100" none)."""
    return {float(n.replace(",", "")) for n in _FIGURE_NUMBER.findall(text)}


def _words(unit: str) -> set[str]:
    """A unit's words, singular and without "per" ("GPU-hours a month": gpu-hour, month)."""
    found = unit.lower().replace("/", " ").split()
    return {w.removesuffix("s") for w in found if w not in _PER}


def dimension_problem(derivation: str, unit: str) -> str:
    """Why `derivation` cannot give a figure in `unit` ("" when it can): the dimension its
    units give differs from the unit's. A monthly figure (a unit "per month") may leave the
    month out or write it: "2 runs x 400 GPU-hours" for GPU-hours per month."""
    found = _evaluate(derivation)
    if found is None:
        return "its sum adds figures of different units"
    if any(found[0] == dimension for dimension, _ in _accepted(unit)):
        return ""
    return f"its units give {_spoken(found[0])}, not {unit}"
