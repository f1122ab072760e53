"""Short-term to long-term: draft candidate lessons from each agent's final intrinsic
memory and the run's outcome, screen them, and merge them into the private scopes (and,
for lessons several agents hold, the shared scope). Maturation happens on read
(synthesis.py): what is merged here is provisional until enough runs support it.

The default drafter is deterministic (bullets under decision/requirement headings), so
tests are exact; `LlmDrafter` asks a model instead, with a prompt file.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ima.core.state import memory_slots
from ima.longterm.hub import MemoryHub
from ima.longterm.merge import Candidate
from ima.longterm.namespaces import SHARED, private
from ima.longterm.records import clean_text, text_key
from ima.longterm.screening import ensure_clean, findings

log = logging.getLogger(__name__)

# (role, memory text, run status) -> lesson lines
Drafter = Callable[[str, str, str], list[str]]

LESSON_HEADINGS = re.compile(
    r"decision|decided|requirement|constraint|lesson|agreed|agreement|learn|consensus", re.I
)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+\S")
_PLACEHOLDER = re.compile(r"^<[^>]*>$|<[a-z][^>]*>")  # template placeholders, e.g. <decision>
MIN_WORDS, MAX_WORDS = 3, 40


def _heading(line: str) -> str | None:
    """The text of a heading line: Markdown `#`, or a short bare line ending in ':'."""
    stripped = line.strip()
    if stripped.startswith("#"):
        return stripped.lstrip("#").strip()
    bare = stripped.strip("*_ ")
    if bare.endswith(":") and not _BULLET.match(stripped) and len(bare.split()) <= 6:
        return bare[:-1]
    return None


def rule_drafter(role: str, memory: str, status: str) -> list[str]:
    """Bullet lines under decision / requirement / constraint / lesson headings, in order,
    without placeholders, duplicates, fragments or walls of text."""
    lessons: list[str] = []
    seen: set[str] = set()
    relevant = False
    for line in memory.splitlines():
        heading = _heading(line)
        if heading is not None:
            relevant = bool(LESSON_HEADINGS.search(heading))
            continue
        if not relevant or not _BULLET.match(line):
            continue
        text = clean_text(line)
        if _PLACEHOLDER.search(text) or not MIN_WORDS <= len(text.split()) <= MAX_WORDS:
            continue
        key = text_key(text)
        if key not in seen:
            seen.add(key)
            lessons.append(text)
    return lessons


class LlmDrafter:
    """Drafts with a chat model (prompt `longterm_draft`); keeps the calls' usage so the
    run record can account for them."""

    def __init__(self, model: Any, limit: int = 8) -> None:
        self.model = model
        self.limit = limit
        self.usage: dict[str, Any] = {}

    def __call__(self, role: str, memory: str, status: str) -> list[str]:
        from langchain_core.messages import HumanMessage

        from ima import prompts
        from ima.models.calls import call_model

        prompt = prompts.render(
            "longterm_draft", role=role, memory=memory, status=status, limit=self.limit
        )
        meta = {"ima_kind": "longterm_draft", "ima_role": role}
        text, usage = call_model(self.model, [HumanMessage(prompt)], meta)
        self.usage[role] = usage
        lines = [clean_text(line) for line in text.splitlines() if _BULLET.match(line)]
        return [t for t in lines if MIN_WORDS <= len(t.split()) <= MAX_WORDS][: self.limit]


@dataclass(frozen=True)
class RunOutcome:
    """What a finished run leaves for long-term memory."""

    thread: str
    status: str
    memories: Mapping[str, tuple[str, int]]  # role -> (final memory text, turn that wrote it)

    @classmethod
    def from_values(cls, thread: str, values: Mapping[str, Any]) -> RunOutcome:
        """From the graph's final state values (as ima.runs.runner.execute returns them)."""
        slots = memory_slots(values)
        return cls(
            thread=thread,
            status=str(values.get("status", "")),
            memories={
                r: (s.get("text", ""), int(s.get("turn", 0)))
                for r, s in slots.items()
                if s.get("version", 0) > 0  # never learn back what the run started with
            },
        )


@dataclass
class LearnReport:
    thread: str
    status: str
    drafted: dict[str, int] = field(default_factory=dict)  # role -> lessons drafted
    refused: dict[str, int] = field(default_factory=dict)  # reason kind -> count
    added: dict[str, int] = field(default_factory=dict)  # scope -> new items
    supported: dict[str, int] = field(default_factory=dict)  # scope -> items gaining support
    blocked: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def learn(hub: MemoryHub, outcome: RunOutcome, drafter: Drafter = rule_drafter) -> LearnReport:
    """Draft, screen and merge one run's lessons. Idempotent per thread: learning the same
    run twice adds no support (support counts distinct runs)."""
    report = LearnReport(outcome.thread, outcome.status)
    ensure_clean(outcome.thread)  # provenance is stored: a thread name is screened too
    scopes = {role: private(role) for role in outcome.memories}  # all valid before any write
    limit = hub.policies.limits.max_candidates
    by_key: dict[str, list[Candidate]] = {}
    for role, (text, turn) in sorted(outcome.memories.items()):
        scope = scopes[role]
        kept: list[Candidate] = []
        for lesson in drafter(role, text, outcome.status):
            if len(kept) >= limit:  # refused lessons do not use up the per-run cap
                break
            problems = findings(lesson)
            if problems:  # counted by kind; the text itself goes nowhere
                for kind in problems:
                    report.refused[kind] = report.refused.get(kind, 0) + 1
                continue
            cand = Candidate(lesson, outcome.thread, turn, (role,), outcome.status)
            kept.append(cand)
            by_key.setdefault(text_key(lesson), []).append(cand)
        report.drafted[role] = len(kept)
        if kept:
            _record(report, scope.label, hub.merge(scope, kept))
    team = [
        Candidate(
            group[0].text,
            outcome.thread,
            max(c.turn for c in group),
            tuple(sorted({a for c in group for a in c.agents})),
            outcome.status,
        )
        for group in by_key.values()
        if len({a for c in group for a in c.agents}) >= hub.policies.limits.shared_min_agents
    ]
    if team:
        _record(report, SHARED.label, hub.merge(SHARED, team))
    hub.record_event(
        "learn",
        thread=outcome.thread,
        status=outcome.status,
        added=sum(report.added.values()),
        supported=sum(report.supported.values()),
        refused=sum(report.refused.values()),
    )
    log.info(
        "long-term: learned from %s: %d added, %d supported, %d refused",
        outcome.thread,
        sum(report.added.values()),
        sum(report.supported.values()),
        sum(report.refused.values()),
    )
    return report


def _record(report: LearnReport, label: str, stats: Any) -> None:
    report.added[label] = stats.added
    report.supported[label] = stats.supported
    report.blocked += stats.blocked
