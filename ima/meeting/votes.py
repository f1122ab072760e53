"""What a vote counts in the meeting. With the task's `consensus: consent`, an objection must
name the requirement it defends (`names_requirement`): a REJECT that names none of the
brief's requirements is recorded as UNREASONED and abstains. A small model rejects by
reflex ("does not meet the requirements of the task goal"); a reasoned objection still
blocks, as in the paper."""

from __future__ import annotations

import re

from intrinsic_memory import parse_flags

from ima.tasks import Requirement, Task
from ima.tasks.evidence import matched_keywords, normalise

REJECT, UNREASONED = "REJECT", "UNREASONED"
VOTES = ("ACCEPT", REJECT, UNREASONED)
"""The flags a vote leaves on its turn."""
_RANGE = re.compile(r"\b[a-z]+\d+\s*(?:to|-)\s*[a-z]+\d+\b", re.I)


def names_requirement(task: Task, text: str) -> bool:
    """Whether `text` names one of the brief's requirements: by id (R5), by title, or in
    its own words, holding at least half (and two) of the requirement's evidence groups
    ("faces ... blurred before any human" names R5)."""
    text = _RANGE.sub(" ", text)  # "R1 to R12", echoed from the question, names none of them
    lowered, normalised = text.lower(), normalise(text)
    words = set(re.findall(r"[\w-]+", lowered))

    def named(r: Requirement) -> bool:
        held = sum(k is not None for k in matched_keywords(r, normalised))
        in_words = held >= 2 and 2 * held >= len(r.evidence)
        return r.id.lower() in words or bool(r.title and r.title.lower() in lowered) or in_words

    return any(named(r) for r in task.requirements)


def turn_flags(task: Task, text: str, voting: bool) -> list[str]:
    """The markers of a turn's text as the meeting counts them (see the module's docstring)."""
    flags = parse_flags(text, voting=voting)
    consent = task.schedule.consensus == "consent"
    if consent and REJECT in flags and not names_requirement(task, text):
        flags = [UNREASONED if f == REJECT else f for f in flags]
    return flags
