"""What a derivation's arithmetic measures: the dimension its units give ("12 TB/day x 30
days" is data; "45000 GPU-hours a month x 100 GPU-hours" is GPU time squared), checked
against the unit the estimate is asked in. A small model chains every figure of the brief
into one product (12-06: "200 test vehicles x 50 GB/h x 80 TB/day x 4 TB" for the storage
held); the numbers multiply, the units do not.

The units are the model's free words, not a units library's input ("recorded pervehicle",
"a month"), so they are read here: a known unit word counts, any other word (vehicles, runs,
depots) is a count without dimension. Scale (GB or TB) is left to the value's own check.
"""

from __future__ import annotations

import re
from collections import Counter

__all__ = [
    "NUMBER",
    "assumed_answer",
    "derivation_dimension",
    "dimension_of",
    "dimension_problem",
    "unexplained_count",
]

# Counts a derivation may use without the brief: the calendar's and the units' own.
CONVERSIONS = frozenset({1, 2, 4, 4.3, 4.33, 7, 12, 24, 30, 31, 52, 60, 365, 730, 1000, 1024})

Dimension = Counter  # base dimension -> exponent ("data": 1, "time": -1 for TB/day)

_BASES = {
    "data": "b byte kb mb gb tb pb gbit mbit",
    "time": "s sec second min minute h hr hour day night week fortnight month year",
    "gpu": "gpu-hour",
    "cpu": "vcpu-hour cpu-hour core-hour",
    "money": "usd $ eur dollar",
}
_BASE_OF = {word: base for base, words in _BASES.items() for word in words.split()}
# Rates: a link's bits a second, and a machine, which is its hours per hour ("300 vCPU x 30 h"
# is 9,000 vCPU-hours).
_RATES = {
    "gbps": Counter(data=1, time=-1),
    "mbps": Counter(data=1, time=-1),
    "vcpu": Counter(cpu=1, time=-1),
    "cpu": Counter(cpu=1, time=-1),
    "core": Counter(cpu=1, time=-1),
    "gpu": Counter(gpu=1, time=-1),
}
_PER = {"per", "a", "an", "each", "every"}  # "per month", "a month": the next word divides
_MACHINE_HOURS = re.compile(r"\b(v?cpu|gpu|core)[\s-]?(?:hours?|hrs?|h)\b", re.I)
_OPERATOR = re.compile(r"\s*([x\u00d7*+/])\s*(?=\d)", re.I)  # as `compute_derivation` reads
# A number as a derivation writes it ("12", "45,000", "4.3"): the one reading of the checks,
# the answers and the units.
NUMBER = r"\d[\d,]*(?:\.\d+)?"
_NUMBER = re.compile(rf"^{NUMBER}")


def _clean(dimension: Counter) -> Dimension:
    return Counter({base: power for base, power in dimension.items() if power})


def _base(word: str) -> str | None:
    word = word.lower().strip(".,;()")
    for candidate in (word, word.removesuffix("s"), word.removesuffix("es")):
        if candidate in _BASE_OF:
            return _BASE_OF[candidate]
    return None


def dimension_of(unit: str) -> Dimension:
    """The dimension of unit words: "TB/day" and "TB per day" are data over time, "GPU-hours
    a month" GPU time over time; words that are no unit count for nothing."""
    dimension: Dimension = Counter()
    divide = False
    for word in _MACHINE_HOURS.sub(r"\1-hour", unit).replace("/", " / ").split():
        lowered = word.lower()
        if lowered == "/" or lowered in _PER:
            divide = True
            continue
        sign, divide = (-1 if divide else 1), False
        rate = lowered if lowered in _RATES else lowered.removesuffix("s")  # "GPUs"
        if rate in _RATES:
            dimension.update({base: sign * power for base, power in _RATES[rate].items()})
        elif base := _base(lowered):
            dimension[base] += sign
    return _clean(dimension)


def _terms(derivation: str) -> tuple[list[str], list[str]]:
    """The terms of `derivation` (left of any "=") and the operators between them."""
    pieces = _OPERATOR.split(derivation.split("=", 1)[0].strip())
    return pieces[::2], [op.lower() for op in pieces[1::2]]


def derivation_dimension(derivation: str) -> Dimension | None:
    """The dimension of what `derivation` computes (left of any "="), or None when its sum
    adds terms of different dimensions."""
    terms, operators = _terms(derivation)
    total: Dimension | None = None
    product = dimension_of(_NUMBER.sub("", terms[0]))
    for operator, term in zip(operators, terms[1:], strict=True):
        dimension = dimension_of(_NUMBER.sub("", term))
        if operator == "+":
            if total is not None and total != product:
                return None
            total, product = product, dimension
        elif operator == "/":
            product = _clean(
                Counter({b: product[b] - dimension[b] for b in {*product, *dimension}})
            )
        else:
            product = _clean(
                Counter({b: product[b] + dimension[b] for b in {*product, *dimension}})
            )
    if total is not None and total != product:
        return None
    return product


def _spoken(dimension: Dimension) -> str:
    def power(base: str, exponent: int) -> str:
        return f"{base}^{abs(exponent)}" if abs(exponent) > 1 else base

    up = " x ".join(power(b, e) for b, e in dimension.items() if e > 0) or "a plain count"
    over = " x ".join(power(b, e) for b, e in dimension.items() if e < 0)
    return f"{up} per {over}" if over else up


def _accepted(unit: str) -> list[Dimension]:
    """The dimensions a figure in `unit` may be derived in: a monthly figure (a unit "per
    month") may leave the month out."""
    wanted = dimension_of(unit)
    accepted = [wanted]
    if "month" in unit.lower():
        step = 1 if wanted["time"] < 0 else -1
        accepted.append(_clean(Counter({**wanted, "time": wanted["time"] + step})))
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
        if number is None or dimension_of(_NUMBER.sub("", term)):
            continue
        value = float(number.group(0).replace(",", ""))
        if value not in given and value not in CONVERSIONS:
            return term
    return ""


def _words(unit: str) -> set[str]:
    """A unit's words, singular and without "per" ("GPU-hours a month": gpu-hour, month)."""
    found = unit.lower().replace("/", " ").split()
    return {w.removesuffix("s") for w in found if w not in _PER}


def dimension_problem(derivation: str, unit: str) -> str:
    """Why `derivation` cannot give a figure in `unit` ("" when it can): the dimension its
    units give differs from the unit's. A monthly figure (a unit "per month") may leave the
    month out or write it: "2 runs x 400 GPU-hours" for GPU-hours per month."""
    found = derivation_dimension(derivation)
    if found is None:
        return "its sum adds figures of different units"
    if found in _accepted(unit):
        return ""
    return f"its units give {_spoken(found)}, not {unit}"
