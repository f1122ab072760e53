"""Everything the template needs, gathered from the run record and the graph state."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from ima.measures.in_view import in_view_at_last_turn
from ima.measures.memory_quality import describe_repairs, memory_report
from ima.runs.outputs import design_checks
from ima.tasks import Task
from ima.view import figures
from ima.view.markdown import render_markdown
from ima.view.model import (
    Agent,
    MemoryTimeline,
    TurnView,
    collect_agents,
    memory_timelines,
    turn_views,
)

STATUS_CLASS = {
    "finalized": "ok",
    "turn_cap": "warn",
    "failed": "bad",
}


@dataclass(frozen=True)
class Outcome:
    present: bool
    design: Markup
    spec_json: str
    checks: str  # what the design leaves open and what the brief contradicts, in words
    sound: bool  # nothing open, nothing contradicted


def wall_time(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{seconds:.1f} s"


def _outcome(values: dict[str, Any]) -> Outcome:
    final = values.get("final") or {}
    spec = final.get("spec")
    return Outcome(
        present=bool(final),
        design=render_markdown(final.get("markdown", "")),
        spec_json=json.dumps(spec, indent=2, ensure_ascii=False) if spec is not None else "",
        **_checks(design_checks(spec)),
    )


def _checks(checks: dict[str, Any] | None) -> dict[str, Any]:
    if checks is None:
        return {"checks": "", "sound": False}
    problems = []
    if checks["open_requirements"]:
        problems.append(f"open: {', '.join(checks['open_requirements'])}")
    if checks["conflicts"]:
        problems.append(f"{len(checks['conflicts'])} figures the brief contradicts")
    if checks["within_budget"] is False:
        problems.append("over budget")
    text = "; ".join(problems) or "every requirement met, nothing contradicts the brief"
    return {"checks": text, "sound": not problems}


def _memory_note(memory_mode: str, timelines: list[MemoryTimeline], values: dict[str, Any]) -> str:
    if memory_mode == "none" or (not timelines and not values.get("memory_log")):
        return (
            "This run used no intrinsic memory (the baseline): each prompt held the task and "
            "the recent turns that fit the token budget."
        )
    if values.get("memory_log") is None:
        return (
            "The memory history was not recorded for this run (it predates the memory log): "
            "only each agent's final memory is shown."
        )
    return ""


def _settings(run: dict[str, Any], values: dict[str, Any]) -> list[tuple[str, str]]:
    task = run.get("task") or {}
    rows = [
        ("thread", run.get("thread_id", "")),
        ("task", f"{task.get('id', values.get('task_id', ''))} v{task.get('version', '?')}"),
        ("task fingerprint", task.get("fingerprint", "")),
        ("status", run.get("status", values.get("status", ""))),
        ("memory mode", run.get("memory_mode", "")),
        ("turns", str(run.get("turns", len(values.get("transcript") or [])))),
        ("wall time", wall_time(run.get("wall_seconds"))),
    ]
    rows += [(key.replace("_", " "), str(v)) for key, v in (run.get("settings") or {}).items()]
    long_term = run.get("long_term") or values.get("long_term")
    if long_term:
        rows.append(("long-term memory", json.dumps(long_term, sort_keys=True)))
    return [(k, str(v)) for k, v in rows if v not in ("", None)]


def _owns_differ(retention: dict[str, Any]) -> bool:
    """Whether some agent's own items are not every item (a task with `owns`): else its own
    retention is its retention, and a second chart would repeat the first."""
    agents = (retention.get("agents") or {}).values()
    return any(len(a.get("own_items", [])) != retention.get("items") for a in agents)


def _vote_tally(values: dict[str, Any]) -> dict[str, int]:
    votes = list((values.get("votes") or {}).values())
    return {flag: votes.count(flag) for flag in ("ACCEPT", "REJECT") if votes}


def build_page(
    run: dict[str, Any], values: dict[str, Any], task: Task | None = None
) -> dict[str, Any]:
    """The page's data; with the run's `task`, also what each memory version retains."""
    agents: dict[str, Agent] = collect_agents(run, values)
    turns: list[TurnView] = turn_views(values, agents)
    memory = memory_report(task, values) if task is not None and values.get("memory_log") else None
    retention = memory["retention"] if memory else {}
    timelines = memory_timelines(values, agents, turns, retention.get("agents"))
    sums = figures.usage_sums(run, values)
    status = str(values.get("status") or run.get("status") or "unknown")
    recorded_task = run.get("task") or {}
    settings = run.get("settings") or {}
    memory_mode = str(run.get("memory_mode", "intrinsic" if timelines else "none"))
    outcome = _outcome(values)
    total = sums.get("total", {})
    return {
        "title": f"{recorded_task.get('id', values.get('task_id', 'run'))} · "
        f"{run.get('thread_id', '')}",
        "thread_id": run.get("thread_id", ""),
        "task_id": recorded_task.get("id", values.get("task_id", "")),
        "task_version": recorded_task.get("version", ""),
        "status": status,
        "status_class": STATUS_CLASS.get(status, "info"),
        "memory_mode": memory_mode,
        "model": settings.get("model", ""),
        "prompt_layout": settings.get("prompt_layout", "paper"),
        "facts": [
            ("turns", f"{len(turns)}"),
            ("tokens", f"{total.get('input_tokens', 0) + total.get('output_tokens', 0):,}"),
            ("model calls", f"{total.get('calls', 0):,}"),
            ("wall time", wall_time(run.get("wall_seconds"))),
        ],
        "phase": values.get("phase", ""),
        "phase_round": values.get("phase_round"),
        "in_progress": not outcome.present,
        "agents": list(agents.values()),
        "speakers": [a for a in agents.values() if any(t.agent is a for t in turns)],
        "phases": list(dict.fromkeys(t.phase for t in turns)),
        "turns": turns,
        "timelines": timelines,
        "memory_note": _memory_note(memory_mode, timelines, values),
        "retention": retention,
        "retention_chart": figures.retention_chart(timelines, turns, retention.get("items")),
        "own_retention_chart": figures.retention_chart(
            timelines, turns, retention.get("items"), key="own_retention"
        )
        if _owns_differ(retention)
        else None,
        "repairs": describe_repairs(memory["repairs"]) if memory else "",
        "in_view": in_view_at_last_turn(task, values)
        if task and values.get("transcript")
        else None,
        "context_chart": figures.context_chart(turns),
        "context_series": [
            s
            for s in figures.CONTEXT_SERIES
            if s.key != "memory" or any(t.prompt and t.prompt.memory for t in turns)
        ],
        "prompt_turns": [t for t in turns if t.prompt],
        "turn_chart": figures.turn_token_chart(turns),
        "turn_series": figures.TURN_TOKEN_SERIES,
        "cumulative_chart": figures.cumulative_chart(turns, figures.memory_tokens_by_turn(values)),
        "agent_chart": figures.agent_kind_chart(sums, agents),
        "kind_series": figures.kind_series(figures.ordered_kinds(sums)),
        "usage": figures.usage_rows(sums, agents),
        "has_cached": any(t.usage["cached_tokens"] for t in turns),
        "votes": _vote_tally(values),
        "outcome": outcome,
        "settings": _settings(run, values),
    }
