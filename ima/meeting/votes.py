"""What a vote counts in the meeting. With the task's `consensus: consent`, an objection must
name the requirement it defends: a REJECT that names none of the brief's requirements is
recorded as UNREASONED and abstains. A small model rejects by reflex ("does not meet the
requirements of the task goal"); a reasoned objection still blocks, as in the paper."""

from __future__ import annotations

import re

from intrinsic_memory import parse_flags

from ima.tasks import Task

REJECT, UNREASONED = "REJECT", "UNREASONED"
VOTES = ("ACCEPT", REJECT, UNREASONED)
"""The flags a vote leaves on its turn."""


def names_requirement(task: Task, text: str) -> bool:
    """Whether `text` names one of the brief's requirements, by id (R5) or by title."""
    lowered = text.lower()
    words = set(re.findall(r"[\w-]+", lowered))
    return any(
        r.id.lower() in words or (r.title and r.title.lower() in lowered) for r in task.requirements
    )


def turn_flags(task: Task, text: str, voting: bool) -> list[str]:
    """The markers of a turn's text as the meeting counts them (see the module's docstring)."""
    flags = parse_flags(text, voting=voting)
    consent = task.schedule.consensus == "consent"
    if consent and REJECT in flags and not names_requirement(task, text):
        flags = [UNREASONED if f == REJECT else f for f in flags]
    return flags
