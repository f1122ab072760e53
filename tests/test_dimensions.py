"""An estimate's derivation must measure what the estimate is asked in: the units of its
arithmetic give the estimate's unit (12-06: the 0.5B model multiplied every figure of the
brief into the storage held, and printed a USD 45 quintillion monthly cost)."""

from __future__ import annotations

import pytest

from ima.meeting.design.dimensions import (
    dimension_problem,
    in_unit,
)

GOOD = [
    ("12 TB/day x 30 days + 40 TB", "TB"),
    ("2 runs x 400 GPU-hours", "GPU-hours per month"),  # a monthly figure, month left out
    ("26 runs x 400 A100 GPU hours / 12", "GPU-hours per month"),
    ("300 vCPU x 30 h", "vCPU-hours per month"),  # a machine's hours per hour
    ("12 TB/day x 30 days", "TB per month"),
    ("2 Gbps x 8 h", "TB"),
    ("360 TB x 23 USD per TB", "USD"),
    ("800 GPU-hours/month x 3 USD per GPU-hour", "USD per month"),
]
WRITTEN_12_06 = [  # what the model wrote, held to arithmetic by the schema
    ("200 test vehicles x 50 GB/h recorded pervehicle x 80 TB/day x 4 TB onboard SSD", "TB"),
    ("45000 GPU-hours a month x 100 GPU-hours per training", "GPU-hours per month"),
    ("45000 per month x 10000 per month", "vCPU-hours per month"),
    ("1 TB per month x 10000 TB/month", "TB per month"),
    ("200*500", "vCPU-hours per month"),
    ("4500000000 USD per month x 100 GPU-hours per month x 1 USD", "USD"),
    ("12 TB/day x 30 days + 40 GB/h", "TB"),
]


@pytest.mark.parametrize(("derivation", "unit"), GOOD)
def test_arithmetic_whose_units_give_the_estimates_is_accepted(derivation, unit):
    assert dimension_problem(derivation, unit) == ""


@pytest.mark.parametrize(("derivation", "unit"), WRITTEN_12_06)
def test_arithmetic_whose_units_do_not_is_named(derivation, unit):
    problem = dimension_problem(derivation, unit)
    assert problem.startswith(("its units give", "its sum adds"))


def test_the_problem_says_what_the_units_give():
    problem = dimension_problem("1 TB per month x 10000 TB/month", "TB per month")
    assert problem == "its units give data^2 per time^2, not TB per month"


BRIEF = {400.0, 12.0, 30.0, 2.0, 80.0}  # numbers of a brief: 400 GPU-hours a run, 12 TB/day


@pytest.mark.parametrize(
    ("derivation", "unit", "value"),
    [
        ("12 TB/day x 30 days", "TB per month", 360),  # the month left out
        ("12 TB/day x 30 days per month", "TB per month", 360),
        ("12,000 GB/day x 30 days", "TB", 360),  # GB to TB by the units' sizes
        ("50 GB/h x 8 h x 200 vehicles / 1000", "TB", 80),  # the writer's own "/ 1000" too
        ("300 vCPU x 30 days", "vCPU-hours per month", 216_000),  # days of machine-hours
        ("2 Gbps x 8 h", "TB", 7.2),
        ("2 runs x 400 GPU-hours + 100 GPU-hours", "GPU-hours per month", 900),
        ("360 TB x 23 USD per TB", "USD", 8_280),
    ],
)
def test_a_derivation_is_computed_in_the_estimates_unit(derivation, unit, value):
    assert in_unit(derivation, unit) == pytest.approx(value)


def test_a_derivation_whose_units_cannot_give_the_unit_has_no_value():
    assert in_unit("12 TB/day x 50 GB/h", "TB") is None
    assert in_unit("12 TB/day x 30 days + 40 GB/h", "TB") is None
