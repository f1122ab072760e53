"""Where a text states a task's key figures and meets its requirements' evidence: one matching
rule for every text measured (the final design, the JSON specification, an agent's memory).

Both checks read a normalised text (`normalise`: lower case, every dash a hyphen, every
space a plain space). A keyword or spelling matches at a word start, with spaces, hyphens and
underscores interchangeable; a figure's spelling that ends in a digit must not run on into
more digits ("99.9" does not match "99.95").
"""

from __future__ import annotations

import re
from functools import cache

from ima.tasks import KeyFigure, Requirement, Task

__all__ = [
    "figure_pattern",
    "items_held",
    "keyword_pattern",
    "matched_keywords",
    "measured_items",
    "normalise",
    "states_figure",
]

_DASHES = str.maketrans({c: "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2212"})
_SPACES = str.maketrans({c: " " for c in "\u00a0\u2007\u202f\u2009"})


def normalise(text: str) -> str:
    """`text` as the checks read it: lower case, plain hyphens and spaces."""
    return text.translate(_DASHES).translate(_SPACES).lower()


def _joined(phrase: str) -> str:
    parts = [re.escape(p) for p in re.split(r"[\s\-_]+", phrase.strip().lower()) if p]
    return r"[\s\-_]*".join(parts)


@cache
def keyword_pattern(keyword: str) -> re.Pattern[str]:
    """An evidence keyword: at a word start; spaces, hyphens and underscores interchangeable."""
    return re.compile(r"(?<![0-9a-z])" + _joined(keyword))


@cache
def figure_pattern(spelling: str) -> re.Pattern[str]:
    """An accepted spelling of a figure, like a keyword but not inside a number ("5 year"
    misses "1.5 years"), and a spelling ending in a digit not running on into more digits."""
    spelling = spelling.strip().lower()
    head = r"(?<![0-9a-z.,])" if spelling[:1].isdigit() else r"(?<![0-9a-z])"
    tail = r"(?![0-9])(?![.,][0-9])" if spelling[-1:].isdigit() else ""
    return re.compile(head + _joined(spelling) + tail)


def states_figure(figure: KeyFigure, normalised: str) -> bool:
    """Whether the (normalised) text states the figure in one of its accepted spellings."""
    return any(figure_pattern(v).search(normalised) for v in figure.values)


def matched_keywords(requirement: Requirement, normalised: str) -> list[str | None]:
    """Per evidence group of the requirement, its first keyword found in the (normalised)
    text, or None; the text meets the requirement's evidence when no entry is None."""
    return [
        next((k for k in group if keyword_pattern(k).search(normalised)), None)
        for group in requirement.evidence
    ]


def measured_items(task: Task) -> list[str]:
    """The key items a text is checked for, in the task's order: every key figure, and every
    requirement with evidence (one without is left to the optional LLM check)."""
    return [f.id for f in task.key_figures] + [r.id for r in task.requirements if r.evidence]


def items_held(task: Task, normalised: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The key figures the (normalised) text states and the requirements whose evidence it
    meets, by id in the task's order."""
    figures = tuple(f.id for f in task.key_figures if states_figure(f, normalised))
    requirements = tuple(
        r.id
        for r in task.requirements
        if r.evidence and all(m is not None for m in matched_keywords(r, normalised))
    )
    return figures, requirements
