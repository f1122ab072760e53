"""How sound a run's memories are, measured without a model.

- Retention: for every memory version, which of the task's key figures it states and which
  of its requirements' evidence it holds (the rule the content metrics apply to a final
  design: `ima.tasks.evidence`). A version's retention is the share of those key items
  (figures plus requirements with evidence) that it holds; its own-item retention is the
  same share of the items its agent's role owns (`Task.own_items`: every item for a role
  without `owns`).
- Parroting of the prompt: the share of the memory's word 5-grams copied verbatim from the
  memory prompt's own instructions (the update prompt files and the agent's template); a
  memory that says "keep every requirement that still matters to your role" holds nothing.
  Notes are short, hence 5-grams rather than the 8-grams of whole turns, and a note of fewer
  than five words counts once, as copied when it occurs whole in the prompt ("Update your
  memory"). Headings are the template's and are not counted.
- Repairs: what the memory updates' answers needed before they could be stored (answers
  cut off at the output cap, sections carried over, notes shortened or dropped, malformed
  edits, unusable answers), summed over a run from its memory log.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from intrinsic_memory import restates, scripts_of, strip_foreign, update_prompts

from ima.core.ngrams import Gram, ngram_set, ngrams, words
from ima.tasks import Task
from ima.tasks.evidence import items_held, measured_items, normalise

__all__ = [
    "MEMORY_NGRAM",
    "REPAIR_KINDS",
    "REPAIR_LABELS",
    "PromptText",
    "Retention",
    "VersionRetention",
    "describe_repairs",
    "memory_hygiene",
    "memory_notes",
    "memory_prompt_sources",
    "memory_report",
    "repair_totals",
    "retention",
    "retention_by_agent",
    "retention_summary",
]

MEMORY_NGRAM = 5
REPAIR_LABELS = {
    "cut_off": "answers cut off at the output cap",
    "carried_sections": "sections carried over from the previous version",
    "shortened_notes": "notes shortened",
    "dropped_notes": "notes dropped (section full or over budget)",
    "malformed_edits": "malformed edits ignored",
    "merged_notes": "new notes merged with a note they restated",
    "foreign_script": "notes cleaned of another script (or refused)",
    "repeated_words": "notes cut where they repeated themselves (or refused)",
    "copied_prompt": "notes refused: copied from the role, not the turn",
    "unusable": "unusable answers (the memory stayed as it was)",
}
REPAIR_KINDS = tuple(REPAIR_LABELS)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_BULLET = re.compile(r"^\s*(?:[-*+\u2022]|\d+[.)])\s+")


def memory_notes(text: str) -> list[str]:
    """The notes of a memory in Markdown: every line that is not a heading, unbulleted."""
    return [
        _BULLET.sub("", line).strip()
        for line in (text or "").splitlines()
        if line.strip() and not _HEADING.match(line)
    ]


@dataclass(frozen=True)
class PromptText:
    """What a memory update is told, as parroting reads it: its 5-grams, and its words as
    one line per source (to find a short note whole)."""

    grams: frozenset[Gram]
    lines: str

    def copied(self, note: str) -> tuple[int, int]:
        """A note's units (its 5-grams, or the whole note when shorter) and those copied."""
        grams = ngrams(note, MEMORY_NGRAM)
        if grams:
            return len(grams), sum(g in self.grams for g in grams)
        phrase = " ".join(words(note))
        return (1, int(f" {phrase} " in self.lines)) if phrase else (0, 0)


def memory_prompt_sources(
    templates: Iterable[str] = (), prompt_texts: Iterable[str] | None = None
) -> PromptText:
    """What a memory update is told: its prompt files (or `prompt_texts`, e.g. an older
    version's) and the run's templates (their placeholders)."""
    texts = update_prompts() if prompt_texts is None else prompt_texts
    every = [*texts, *templates]
    lines = "\n".join(f" {' '.join(words(text))} " for text in every)
    return PromptText(frozenset(ngram_set(every, MEMORY_NGRAM)), lines)


@dataclass(frozen=True)
class Retention:
    """What one memory version holds of the task's key items."""

    figures: tuple[str, ...]  # ids of the key figures it states
    requirements: tuple[str, ...]  # ids of the requirements whose evidence it holds
    items: int  # key figures plus requirements with evidence
    parroting: float | None  # share copied from the memory prompt (None: too short to say)
    own_items: tuple[str, ...] = ()  # the measured items its agent's role owns

    @property
    def share(self) -> float | None:
        """Key items held / key items (None for a task that lists none)."""
        return (len(self.figures) + len(self.requirements)) / self.items if self.items else None

    @property
    def own_held(self) -> tuple[str, ...]:
        """The role's own items it holds."""
        held = {*self.figures, *self.requirements}
        return tuple(i for i in self.own_items if i in held)

    @property
    def own_share(self) -> float | None:
        """Own items held / own items (None for a role that owns no measured item)."""
        return len(self.own_held) / len(self.own_items) if self.own_items else None


def own_measured_items(task: Task, role: str | None) -> tuple[str, ...]:
    """The measured key items `role` owns (every measured item when no role is given)."""
    measured = measured_items(task)
    if role is None:
        return tuple(measured)
    owned = set(task.own_items(role))
    return tuple(i for i in measured if i in owned)


def retention(task: Task, text: str, sources: PromptText, role: str | None = None) -> Retention:
    """The key figures and requirements `text` (a memory of `role`'s agent) holds, and its
    parroting."""
    notes = memory_notes(text)
    figures, requirements = items_held(task, normalise("\n".join(notes)))
    units = [sources.copied(note) for note in notes]
    total = sum(u for u, _ in units)
    parroting = sum(c for _, c in units) / total if total else None
    measured = len(measured_items(task))
    return Retention(figures, requirements, measured, parroting, own_measured_items(task, role))


@dataclass(frozen=True)
class VersionRetention:
    version: int
    turn: int  # the agent's own turn that caused it
    retention: Retention


def retention_by_agent(
    task: Task,
    memory_log: Sequence[Mapping[str, Any]],
    templates: Mapping[str, str] | None = None,
    sources: PromptText | None = None,
) -> dict[str, list[VersionRetention]]:
    """Per agent, the retention of every version its updates wrote (the starting memory,
    version 0, is not the agent's work and is left out), in order."""
    if sources is None:
        sources = memory_prompt_sources((templates or {}).values())
    out: dict[str, list[VersionRetention]] = {}
    for entry in memory_log:
        if not entry.get("version"):
            continue
        role = str(entry.get("role", ""))
        found = retention(task, str(entry.get("text", "")), sources, role)
        out.setdefault(role, []).append(
            VersionRetention(int(entry["version"]), int(entry.get("turn", 0)), found)
        )
    return out


def _mean(values: Iterable[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return statistics.fmean(xs) if xs else None


def retention_summary(by_agent: Mapping[str, Sequence[VersionRetention]]) -> dict[str, Any]:
    """Retention at the end (each agent's last version) and over the run (each agent's mean
    over its versions), of every key item and of the agent's own items (`own_`), as means
    over agents so that each agent weighs the same; parroting as the mean over every
    version. Per agent, the series behind them."""
    agents: dict[str, Any] = {}
    for role, versions in by_agent.items():
        if not versions:
            continue
        last = versions[-1].retention
        agents[role] = {
            "end": last.share,
            "over_run": _mean(v.retention.share for v in versions),
            "own_end": last.own_share,
            "own_over_run": _mean(v.retention.own_share for v in versions),
            "own_items": list(last.own_items),
            "parroting": _mean(v.retention.parroting for v in versions),
            "figures_end": list(last.figures),
            "requirements_end": list(last.requirements),
            "versions": [
                {
                    "version": v.version,
                    "turn": v.turn,
                    "retention": v.retention.share,
                    "own_retention": v.retention.own_share,
                    "own_held": list(v.retention.own_held),
                    "figures": list(v.retention.figures),
                    "requirements": list(v.retention.requirements),
                    "parroting": v.retention.parroting,
                }
                for v in versions
            ],
        }
    every = [v for versions in by_agent.values() for v in versions]
    return {
        "end": _mean(a["end"] for a in agents.values()),
        "over_run": _mean(a["over_run"] for a in agents.values()),
        "own_end": _mean(a["own_end"] for a in agents.values()),
        "own_over_run": _mean(a["own_over_run"] for a in agents.values()),
        "parroting": _mean(v.retention.parroting for v in every),
        "items": every[0].retention.items if every else None,
        "agents": agents,
    }


def repair_totals(memory_log: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """What a run's memory updates needed before storing, summed over its memory log
    (`updates`: the versions an update wrote; runs made before repairs were recorded count
    none)."""
    totals = dict.fromkeys(("updates", *REPAIR_KINDS), 0)
    for entry in memory_log:
        if not entry.get("version"):
            continue
        totals["updates"] += 1
        totals["cut_off"] += bool(entry.get("cut_off"))
        for kind, count in (entry.get("repairs") or {}).items():
            if kind in totals:
                totals[kind] += int(count)
    return totals


def memory_hygiene(task: Task, memories: Mapping[str, Any] | None) -> dict[str, int]:
    """The notes of a run's final memories, how many pairs of notes in one memory restate
    each other (the library's `restates`: token Jaccard similarity at least 0.6), and how
    many notes hold letters of a script the brief does not use."""
    scripts = scripts_of(task.description)
    notes = pairs = foreign = 0
    for slot in (memories or {}).values():
        held = memory_notes(str((slot or {}).get("text", "")))
        notes += len(held)
        pairs += sum(restates(a, b) for i, a in enumerate(held) for b in held[i + 1 :])
        foreign += sum(strip_foreign(note, scripts)[1] for note in held)
    return {"notes": notes, "restated_pairs": pairs, "foreign_script": foreign}


def describe_repairs(repairs: Mapping[str, int]) -> str:
    """Repairs in words: "2 notes shortened; 1 malformed edits ignored", or "none"."""
    done = [f"{repairs[k]} {label}" for k, label in REPAIR_LABELS.items() if repairs.get(k)]
    return "; ".join(done) or "none"


def memory_report(task: Task, values: Mapping[str, Any]) -> dict[str, Any]:
    """Repairs and retention of a run's memories, from its state (memory log, templates);
    both empty for a run that kept no memory log (the baseline)."""
    log = values.get("memory_log") or []
    by_agent = retention_by_agent(task, log, values.get("templates"))
    return {"repairs": repair_totals(log), "retention": retention_summary(by_agent)}
