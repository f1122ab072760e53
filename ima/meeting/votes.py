"""What a vote counts in the meeting. With the task's `consensus: consent`, an objection must
name the requirement it defends (`named_requirements`): a REJECT that names none of the
brief's requirements is recorded as UNREASONED and abstains. A small model rejects by
reflex ("does not meet the requirements of the task goal"); a reasoned objection still
blocks, as in the paper.

An objection the proposal on the table already answers is recorded as ANSWERED and abstains:
every requirement it names is one whose evidence (the mechanism and figures the coverage
check asks for) the proposal states. The 0.5B model, having remembered one requirement,
objects to it round after round while the proposal on the table blurs faces and plates.

A requirement is named only in the voter's own words: what it copies from its role text or
from the proposal on the table names nothing. The 0.5B Data Engineer objected in every vote
with its role's sentence ("the volumes add up (80 TB/day recorded, 12 TB/day uploaded) and
... the 5-minute and 12-hour latency targets are met") and a line of the proposal, which
together hold the words of R2 and R10; with neither there is no objection left."""

from __future__ import annotations

import re

from intrinsic_memory import parse_flags

from ima.core.ngrams import ngram_set, uncopied
from ima.tasks import Requirement, Task
from ima.tasks.evidence import matched_keywords, normalise

REJECT, UNREASONED, ANSWERED = "REJECT", "UNREASONED", "ANSWERED"
VOTES = ("ACCEPT", REJECT, UNREASONED, ANSWERED)
"""The flags a vote leaves on its turn."""
_RANGE = re.compile(r"\b[a-z]+\d+\s*(?:to|-)\s*[a-z]+\d+\b", re.I)
# Words of an objection inside a 5-gram of its voter's role text or the proposal are copied.
COPY_NGRAM = 5


def named_requirements(task: Task, text: str) -> list[Requirement]:
    """The brief's requirements `text` names: by id (R5), by title, or in its own words,
    holding at least half (and two) of the requirement's evidence groups ("faces ...
    blurred before any human" names R5)."""
    text = _RANGE.sub(" ", text)  # "R1 to R12", echoed from the question, names none of them
    lowered, normalised = text.lower(), normalise(text)
    words = set(re.findall(r"[\w-]+", lowered))

    def named(r: Requirement) -> bool:
        held = sum(k is not None for k in matched_keywords(r, normalised))
        in_words = held >= 2 and 2 * held >= len(r.evidence)
        return r.id.lower() in words or bool(r.title and r.title.lower() in lowered) or in_words

    return [r for r in task.requirements if named(r)]


def answers(proposal: str, requirement: Requirement) -> bool:
    """Whether `proposal` states every evidence group of `requirement`."""
    found = matched_keywords(requirement, normalise(proposal))
    return bool(requirement.evidence) and all(k is not None for k in found)


def own_words(task: Task, text: str, speaker: str, proposal: str) -> str:
    """The words of `text` not copied from `speaker`'s role text or the `proposal`."""
    role = next((r.description for r in task.roles if r.id == speaker), "")
    return uncopied(text, ngram_set([role, proposal], COPY_NGRAM), COPY_NGRAM)


def turn_flags(
    task: Task, text: str, voting: bool, proposal: str = "", speaker: str = ""
) -> list[str]:
    """The markers of a turn's text as the meeting counts them, a vote judged against the
    `proposal` on the table and its `speaker`'s (a role id's) role text (see the module's
    docstring)."""
    flags = parse_flags(text, voting=voting)
    if task.schedule.consensus != "consent" or REJECT not in flags:
        return flags
    named = named_requirements(task, own_words(task, text, speaker, proposal))
    if not named:
        return [UNREASONED if f == REJECT else f for f in flags]
    if proposal and all(answers(proposal, r) for r in named):
        return [ANSWERED if f == REJECT else f for f in flags]
    return flags
