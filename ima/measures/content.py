"""Objective content metrics of a run, no model involved.

- Figure grounding: which of the task's `key_figures` (the brief's figures) the design
  states, which its JSON specification states, and which figures of the design the brief
  contradicts (`ima.meeting.design.checks`). A figure is *stated* when one of its accepted spellings
  occurs (see `ima.tasks.evidence`). A design compiled as one structure (`ima.meeting.design`) is
  measured on its own words (`own_text`: the requirements' restatements left out), and its
  Markdown and JSON are the same design.
- Design: the measures of a structured design (`ima.measures.design_quality`): junk lines,
  components with a technology and a justification of their own, requirements addressed in
  its own words, figures in a wrong unit.
- Parroting: the share of a text's word 8-grams (lower case, punctuation removed) that
  occur verbatim in the brief, the instructions the agents are given (phase instructions,
  role descriptions, memory templates, the agent-facing prompt files) or earlier turns.
  Computed per turn (mean over turns per run) and for the final design (against the
  sources and every turn; `design_from_prompt` counts the brief and instructions only).
- Repetition: the share of a turn's 8-grams that occur in the same agent's earlier turns,
  per turn (mean per run; an agent's first turn has nothing to repeat and is left out).
- In view at the last turn: per agent, the share of its own key items its last prompt held
  besides the brief (memory and recent turns; `ima.measures.in_view`), and the mean over agents.
- Memory hygiene: the notes of the final memories, pairs in one memory that restate each
  other, and notes in a script the brief does not use (`memory_quality.memory_hygiene`).

A text shorter than 8 words has no 8-grams and no share; it is left out of the means.
Shares count 8-gram occurrences, so a sentence said twice counts twice.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ima.core.ngrams import NGRAM, Gram, copied_share, ngram_set, ngrams
from ima.measures.design_quality import design_quality, junk_lines, own_text
from ima.measures.in_view import in_view_at_last_turn
from ima.measures.memory_quality import memory_hygiene, memory_report
from ima.meeting.design.checks import figure_conflicts
from ima.meeting.prompting import instruction_texts
from ima.tasks import Task
from ima.tasks.evidence import normalise, states_figure

HUMAN = "HUMAN"  # review feedback: a source for later turns, not an agent's turn


def _mean(values: Iterable[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return statistics.fmean(xs) if xs else None


# ----------------------------------------------------------------------------- per turn


def parroting_by_turn(
    turns: Sequence[Mapping[str, Any]], prompt_sources: set[Gram]
) -> list[float | None]:
    """Per turn: the share of its 8-grams found in the prompt sources or any earlier turn."""
    seen = set(prompt_sources)
    out: list[float | None] = []
    for turn in turns:
        content = str(turn.get("content", ""))
        out.append(None if turn.get("speaker") == HUMAN else copied_share(content, seen))
        seen.update(ngrams(content))
    return out


def repetition_by_turn(turns: Sequence[Mapping[str, Any]]) -> list[float | None]:
    """Per turn: the share of its 8-grams found in the same speaker's earlier turns
    (None for a speaker's first turn and for human feedback)."""
    own: dict[str, set[Gram]] = {}
    out: list[float | None] = []
    for turn in turns:
        speaker = str(turn.get("speaker", ""))
        content = str(turn.get("content", ""))
        earlier = own.get(speaker)
        if speaker == HUMAN or earlier is None:
            out.append(None)
        else:
            out.append(copied_share(content, earlier))
        own.setdefault(speaker, set()).update(ngrams(content))
    return out


# ----------------------------------------------------------------------------- figures


def _strings(value: Any) -> list[str]:
    """The string leaves of a specification (its key names are never evidence)."""
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def figure_grounding(task: Task, design: str, spec: Any) -> dict[str, Any]:
    """Which key figures the design states, which the spec states, and which figures of the
    design the brief contradicts (`ima.meeting.design.checks.figure_conflicts`).

    Shares are over all key figures (None when the task lists none)."""
    figures = task.key_figures
    md = normalise(design)
    spec_text = normalise("\n".join(_strings(spec)))
    details = {
        f.id: {"design": states_figure(f, md), "spec": states_figure(f, spec_text)} for f in figures
    }

    def share(key: str) -> float | None:
        if not details:
            return None
        return sum(d[key] for d in details.values()) / len(details)

    both = [fid for fid, d in details.items() if d["design"] and d["spec"]]
    conflicts = [f"{stated} ({brief})" for _, stated, brief in figure_conflicts(task, "", design)]
    return {
        "total": len(details),
        "design": share("design"),
        "spec": share("spec"),
        "both": len(both) / len(details) if details else None,
        "in_design": [fid for fid, d in details.items() if d["design"]],
        "in_spec": [fid for fid, d in details.items() if d["spec"]],
        "in_both": both,
        "missing": [fid for fid, d in details.items() if not d["design"] and not d["spec"]],
        "conflicts": conflicts,
    }


# ----------------------------------------------------------------------------- a run


def content_metrics(
    task: Task,
    *,
    design: str,
    spec: Any,
    turns: Sequence[Mapping[str, Any]] | None,
    brief: str | None = None,
    templates: Mapping[str, str] | None = None,
    memory_log: Sequence[Mapping[str, Any]] | None = None,
    memories: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Every content metric of one run. `turns` (the transcript: speaker and content per
    turn) may be None when it is not available: the turn metrics are then None and the
    final design is compared with the brief and instructions only. `memory_log` (every
    memory version) gives the memory's retention and repairs; None for a run without one.
    With the transcript, `memory_log` and `memories` (the memory slots: long-term lessons)
    give what each agent's last turn had in view."""
    instructions = instruction_texts(task, templates)
    prompt_sources = ngram_set([brief or task.description, *instructions])
    quality = design_quality(task, spec, design, instructions)
    if quality is not None:  # a structured design: measure what it says in its own words
        design = spec = own_text(spec)
    elif design:  # a design of another shape: its lines are checked all the same
        quality = {"junk_lines": junk_lines(task, design, instructions)}
    parroting: list[float | None] = []
    repetition: list[float | None] = []
    design_share = None
    if turns is not None:
        parroting = parroting_by_turn(turns, prompt_sources)
        repetition = repetition_by_turn(turns)
        design_share = copied_share(
            design, prompt_sources | ngram_set(str(t.get("content", "")) for t in turns)
        )
    by_agent: dict[str, list[float]] = {}
    for turn, value in zip(turns or [], repetition, strict=True):
        if value is not None:
            by_agent.setdefault(str(turn.get("speaker")), []).append(value)
    return {
        "grounding": figure_grounding(task, design, spec),
        "parroting": {
            "turns": _mean(parroting),
            "turns_scored": sum(v is not None for v in parroting),
            "design": design_share,
            "design_from_prompt": copied_share(design, prompt_sources),
        },
        "repetition": {
            "turns": _mean(repetition),
            "turns_scored": sum(v is not None for v in repetition),
            "by_agent": {a: statistics.fmean(v) for a, v in sorted(by_agent.items())},
        },
        "design": quality,
        "memory": _memory(task, memory_log, templates),
        "memory_hygiene": None if memories is None else memory_hygiene(task, memories),
        "in_view": None
        if turns is None
        else in_view_at_last_turn(
            task, {"transcript": turns, "memory_log": memory_log, "memories": memories}
        ),
        "ngram": NGRAM,
    }


def _memory(
    task: Task, log: Sequence[Mapping[str, Any]] | None, templates: Mapping[str, str] | None
) -> dict[str, Any] | None:
    """Retention (end, over the run; of every key item and of each agent's own), parroting
    of the memory prompt and repairs."""
    if not log:
        return None
    report = memory_report(task, {"memory_log": log, "templates": templates})
    retention, repairs = report["retention"], report["repairs"]
    return {
        "retention_end": retention["end"],
        "retention_over_run": retention["over_run"],
        "own_retention_end": retention["own_end"],
        "own_retention_over_run": retention["own_over_run"],
        "parroting": retention["parroting"],
        "cut_off": repairs["cut_off"],
        "repairs": sum(v for k, v in repairs.items() if k not in ("updates", "cut_off")),
        "repair_kinds": repairs,
    }


def content_summary(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """A few lines for `ima show`: figures stated, parroting, repetition and own items in
    view at the last turn (mean over agents), rounded."""

    def pct(value: float | None) -> float | None:
        return None if value is None else round(100 * value, 1)

    g, p, r = metrics["grounding"], metrics["parroting"], metrics["repetition"]
    summary = {
        "figures_in_design": f"{len(g['in_design'])}/{g['total']}",
        "figure_conflicts": g["conflicts"],
        "parroting_turns_pct": pct(p["turns"]),
        "parroting_design_pct": pct(p["design"]),
        "repetition_turns_pct": pct(r["turns"]),
        "in_view_last_turn_pct": pct((metrics.get("in_view") or {}).get("mean")),
    }
    if d := metrics.get("design"):
        summary["design_junk_lines"] = len(d["junk_lines"])
    if d and "components" in d:
        summary |= {
            "components_justified": f"{d['components_justified']}/{d['components']}",
            "requirements_addressed": f"{len(d['addressed'])}/{d['requirements_listed']}",
            "requirements_open": d["requirements_open"],
            "unit_errors": len(d["unit_errors"]),
        }
    if h := metrics.get("memory_hygiene"):
        summary |= {
            "memory_restated_pairs": f"{h['restated_pairs']} of {h['notes']} notes",
            "memory_foreign_script": h["foreign_script"],
        }
    return summary


def state_content(task: Task, values: Mapping[str, Any]) -> dict[str, Any]:
    """Content metrics from a run's state (`ima show`): its transcript and final output."""
    final = values.get("final") or {}
    return content_metrics(
        task,
        design=final.get("markdown", ""),
        spec=final.get("spec"),
        turns=values.get("transcript") or [],
        brief=values.get("brief"),
        templates=values.get("templates"),
        memory_log=values.get("memory_log"),
        memories=values.get("memories"),
    )
