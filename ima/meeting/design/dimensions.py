"""What a derivation's arithmetic measures: the dimension its units give ("12 TB/day x 30
days" is data; "45000 GPU-hours a month x 100 GPU-hours" is GPU time squared), checked
against the unit the estimate is asked in. A small model chains every figure of the brief
into one product (12-06: "200 test vehicles x 50 GB/h x 80 TB/day x 4 TB" for the storage
held); the numbers multiply, the units do not.

The units are the model's free words, not a units library's input ("recorded pervehicle",
"a month"), so they are read here: a known unit word counts, any other word (vehicles, runs,
depots) is a count without dimension. A unit word has its size too (GB or TB, hours or
days), so `in_unit` gives a derivation's result in the estimate's unit, and `derivations`
lists the products of the brief's figures that give an estimate's unit, for the model to
choose among.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence

__all__ = [
    "derivations",
    "dimension_problem",
    "in_unit",
]

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
_OPERATOR = re.compile(r"\s*([x\u00d7*+/])\s*(?=\d)", re.I)  # an operator before a number
# A number as a derivation writes it ("12", "45,000", "4.3").
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


# -- the derivations a set of figures allows --------------------------------------------------

_SPELLED = {"two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "ten": "10"}
# A month in the unit a figure counts time in, written out where a derivation converts
# ("12 TB/day x 30 days per month"); a month is 30 days, as `_evaluate` reckons.
_MONTH_IN = {
    "day": "30 days per month",
    "hour": "720 hours per month",
    "week": "4.29 weeks per month",
}


def _as_term(figure: str) -> str:
    """A figure of the brief as a derivation's term: its number first, spelled numbers and
    hyphenated units written out ("retraining every two weeks": "2 weeks"; "about 400 A100
    GPU-hours per training run": "400 A100 GPU-hours per training run"); "" without one."""
    text = figure.removeprefix("- ").strip()
    text = re.sub(r"\b(two|three|four|five|six|ten)\b", lambda m: _SPELLED[m.group(1)], text)
    text = re.sub(rf"({NUMBER})-(\w)", r"\1 \2", text)  # "8-hour" is 8 hours
    found = _FIGURE_NUMBER.search(text)
    return text[found.start() :] if found else ""


def derivations(figures: Sequence[str], unit: str) -> list[tuple[str, float]]:
    """Every product or quotient of one or two of `figures` whose units give exactly `unit`,
    with its result in `unit`, one derivation per result (the first written): what an
    estimate can be derived as from those figures alone, a month converted where the unit
    is monthly. A small model asked to write the arithmetic chained figures whatever their
    units (12-07: "80 TB/day + 30 days + 12 TB/day" for the storage held); choosing among
    these, its answer is arithmetic that holds."""
    terms = [t for t in dict.fromkeys(_as_term(f) for f in figures) if t]
    terms.sort(key=lambda t: _dimension_of(_NUMBER.sub("", t))["time"] >= 0)  # rates first
    wanted, size = _measure(unit)
    found: dict[str, tuple[str, float]] = {}  # by the result to six significant digits
    candidates = [[t] for t in terms] + [
        [a, op, b] for a, b in itertools.permutations(terms, 2) for op in ("x", "/")
    ]
    for pieces in candidates:
        derivation = _month_written(" ".join(pieces), unit)
        evaluated = _evaluate(derivation)
        if evaluated is None or evaluated[0] != wanted:
            continue
        result = evaluated[1] / size  # the unit's own dimension: no month left out
        if math.isfinite(result) and result > 0:
            found.setdefault(f"{result:.6g}", (derivation, result))
    return list(found.values())


def _month_written(derivation: str, unit: str) -> str:
    """`derivation` with the month its monthly unit converts to written out, where its time
    is counted in days, hours or weeks ("12 TB/day" per month: "x 30 days per month")."""
    if "month" not in unit.lower() or "month" in derivation.lower():
        return derivation
    for word, month in _MONTH_IN.items():
        if re.search(rf"(?<![\w-]){word}s?\b|/{word}\b", derivation, re.I):  # no GPU-hours
            return f"{derivation} x {month}"
    return derivation
