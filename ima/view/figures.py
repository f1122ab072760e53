"""The page's charts and usage figures, from the turn views and the usage sums."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from ima.runs.outputs import usage_totals
from ima.view.charts import Bar, Line, Point, Series, cumulative_line, line_chart, stacked_bars
from ima.view.model import Agent, MemoryTimeline, TurnView, agent_for

# Fixed parts in greys (they never change), memory and history in colours of their own.
CONTEXT_SERIES = (
    Series("task", "task", "#cbd5e1", "part-task"),
    Series("role", "role", "#94a3b8", "part-role"),
    Series("instruction", "instruction", "#64748b", "part-instruction"),
    Series("memory", "memory", "#7c3aed", "part-memory"),
    Series("history", "recent turns", "#0ea5e9", "part-history"),
)
TURN_TOKEN_SERIES = (
    Series("cached", "input, cached", "#cbd5e1", "tokens-cached"),
    Series("fresh", "input", "#94a3b8", "tokens-input"),
    Series("output", "output", "#334155", "tokens-output"),
)
KIND_LABELS = {
    "agent_turn": "agent turns",
    "memory_update": "memory updates",
    "template_generation": "template generation",
    "documentation": "documentation",
    "judge": "judge",
    "requirement_check": "requirement check",
}
_KIND_COLOURS = {
    "agent_turn": "#334155",
    "memory_update": "#7c3aed",
    "template_generation": "#c4b5fd",
    "documentation": "#0891b2",
    "judge": "#a3a3a3",
    "requirement_check": "#d4d4d4",
}
_OTHER_KIND = Series("other", "other", "#737373", "kind-other")


# Chart widths that fill a full-width and a half-width box of the page on a laptop screen.
FULL = 1100.0
HALF = 520.0


@dataclass(frozen=True)
class UsageRow:
    label: str
    agent: Agent | None
    kind: str
    input_tokens: int
    output_tokens: int
    calls: int
    seconds: float
    estimated_calls: int

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def context_chart(turns: list[TurnView]) -> Markup | None:
    """A stacked bar per turn's prompt against its budget; None when nothing was recorded."""
    bars = []
    for t in turns:
        if t.prompt is None:
            continue
        p = t.prompt
        window = (
            f"turns {p.history_turns[0]} to {p.history_turns[1]}" if p.history_turns else "none"
        )
        bars.append(
            Bar(
                label=str(t.index),
                values={
                    "task": p.task,
                    "role": p.role,
                    "instruction": p.instruction,
                    "memory": p.memory,
                    "history": p.history,
                },
                marker=t.agent.colour,
                reference=p.budget,
                href=f"#{t.anchor}",
                tooltip=(
                    f"turn {t.index} · {t.agent.id}: {p.total:,} of {p.budget:,} tokens · "
                    f"fixed {p.fixed:,}, memory {p.memory:,}, recent turns {p.history:,} ({window})"
                ),
            )
        )
    if not bars:
        return None
    return stacked_bars(
        bars, CONTEXT_SERIES, label="Prompt tokens per turn against the budget", min_width=FULL
    )


def _turn_tokens(t: TurnView) -> dict[str, float]:
    cached = min(t.usage["cached_tokens"], t.usage["input_tokens"])
    return {
        "cached": cached,
        "fresh": t.usage["input_tokens"] - cached,
        "output": t.usage["output_tokens"],
    }


def turn_token_chart(turns: list[TurnView]) -> Markup | None:
    if not turns:
        return None
    bars = [
        Bar(
            label=str(t.index),
            values=_turn_tokens(t),
            marker=t.agent.colour,
            href=f"#{t.anchor}",
            tooltip=(
                f"turn {t.index} · {t.agent.id}: {t.usage['input_tokens']:,} in"
                f" ({t.usage['cached_tokens']:,} cached), {t.usage['output_tokens']:,} out,"
                f" {t.usage['seconds']:.1f} s"
            ),
        )
        for t in turns
    ]
    return stacked_bars(bars, TURN_TOKEN_SERIES, label="Tokens of each agent turn", min_width=FULL)


def memory_tokens_by_turn(values: dict[str, Any]) -> dict[int, float]:
    """Tokens of the memory updates each turn caused (runs that recorded them)."""
    spent: dict[int, float] = {}
    for entry in values.get("memory_log") or []:
        usage = entry.get("usage")
        if usage and entry.get("turn"):
            tokens = usage.get("input_tokens", 0) + usage.get("output_tokens", 0)
            spent[entry["turn"]] = spent.get(entry["turn"], 0) + tokens
    return spent


def cumulative_chart(turns: list[TurnView], memory: dict[int, float]) -> Markup | None:
    """Tokens spent so far after each turn: its call, plus the memory update it caused."""
    if not turns:
        return None
    points = [
        Point(
            label=str(t.index),
            value=t.usage["input_tokens"] + t.usage["output_tokens"] + memory.get(t.index, 0),
            colour=t.agent.colour,
            tooltip=f"turn {t.index} · {t.agent.id}",
        )
        for t in turns
    ]
    label = "Cumulative tokens of agent turns" + (" and memory updates" if memory else "")
    return cumulative_line(points, label=label, min_width=HALF)


def held_text(held: dict[str, Any], items: int | None, own_items: int | None = None) -> str:
    """What a memory version holds, in words: its share, figures and requirements, and
    the share of its role's own items."""
    share, own = held.get("retention"), held.get("own_retention")
    parts = [
        f"holds {len(held['figures']) + len(held['requirements'])} of {items} key items"
        + ("" if share is None else f" ({100 * share:.0f}%)"),
        f"{len(held['figures'])} figures, {len(held['requirements'])} requirements",
    ]
    if own is not None and own_items:
        parts.append(f"{len(held.get('own_held', []))} of its {own_items} own ({100 * own:.0f}%)")
    if held.get("parroting"):
        parts.append(f"{100 * held['parroting']:.0f}% copied from the memory prompt")
    return " · ".join(parts)


def retention_chart(
    timelines: list[MemoryTimeline],
    turns: list[TurnView],
    items: int | None,
    key: str = "retention",
) -> Markup | None:
    """Per agent, the share of the task's key items its memory holds after each update
    (`key` "own_retention": of the items its role owns)."""
    slots = {t.index: i for i, t in enumerate(turns)}
    lines = []
    for timeline in timelines:
        own = len((timeline.retention or {}).get("own_items", []))
        points = tuple(
            (
                slots[v.turn],
                100 * v.retention[key],
                f"{timeline.agent.id} v{v.version} after turn {v.turn}: "
                + held_text(v.retention, items, own),
            )
            for v in timeline.versions
            if v.retention and v.retention.get(key) is not None and v.turn in slots
        )
        if points:
            lines.append(Line(timeline.agent.id, timeline.agent.colour, points))
    if not lines:
        return None
    which = "the key items its role owns" if key == "own_retention" else "the task's key items"
    return line_chart(
        lines,
        [str(t.index) for t in turns],
        label=f"Share of {which} each agent's memory holds, after each update",
        top=100,
        min_width=FULL,
    )


def usage_sums(run: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """Totals, per kind, per agent and per agent and kind, whichever form the input has."""
    usage = values.get("usage")
    if isinstance(usage, dict) and "by_agent_and_kind" in usage:
        return usage
    if usage:
        return usage_totals(usage)
    if run.get("usage"):
        return run["usage"]
    return usage_totals({})


def kind_series(kinds: list[str]) -> list[Series]:
    return [
        Series(kind, KIND_LABELS[kind], _KIND_COLOURS[kind], f"kind-{kind}")
        if kind in KIND_LABELS
        else Series(kind, kind, _OTHER_KIND.colour, _OTHER_KIND.css)
        for kind in kinds
    ]


def swatch_colours() -> dict[str, str]:
    """Legend swatch class -> colour, for the stylesheet (the charts use the same colours)."""
    every = [*CONTEXT_SERIES, *TURN_TOKEN_SERIES, *kind_series(list(KIND_LABELS)), _OTHER_KIND]
    return {s.css: s.colour for s in every}


def ordered_kinds(sums: dict[str, Any]) -> list[str]:
    known = [k for k in KIND_LABELS if k in sums.get("by_kind", {})]
    return known + [k for k in sums.get("by_kind", {}) if k not in KIND_LABELS]


def _row(label: str, agent: Agent | None, kind: str, u: dict[str, Any]) -> UsageRow:
    return UsageRow(
        label=label,
        agent=agent,
        kind=kind,
        input_tokens=int(u.get("input_tokens", 0)),
        output_tokens=int(u.get("output_tokens", 0)),
        calls=int(u.get("calls", 0)),
        seconds=float(u.get("seconds", 0.0)),
        estimated_calls=int(u.get("estimated_calls", 0)),
    )


def usage_rows(sums: dict[str, Any], agents: dict[str, Agent]) -> dict[str, Any]:
    kinds = ordered_kinds(sums)
    by_agent_and_kind: dict[str, dict[str, Any]] = sums.get("by_agent_and_kind", {})
    ordered_roles = sorted(by_agent_and_kind, key=lambda r: agent_for(agents, r).index)
    return {
        "total": _row("total", None, "", sums.get("total", {})),
        "by_kind": [_row(KIND_LABELS.get(k, k), None, k, sums["by_kind"][k]) for k in kinds],
        "by_agent": [
            _row(role, agents[role], "", sums.get("by_agent", {}).get(role, {}))
            for role in ordered_roles
        ],
        "by_agent_and_kind": [
            _row(role, agents[role], kind, by_agent_and_kind[role][kind])
            for role in ordered_roles
            for kind in kinds
            if kind in by_agent_and_kind[role]
        ],
    }


def agent_kind_chart(sums: dict[str, Any], agents: dict[str, Agent]) -> Markup | None:
    """Tokens per agent, stacked by call kind."""
    by_agent_and_kind: dict[str, dict[str, Any]] = sums.get("by_agent_and_kind", {})
    if not by_agent_and_kind:
        return None
    kinds = ordered_kinds(sums)
    bars = []
    for role in sorted(by_agent_and_kind, key=lambda r: agent_for(agents, r).index):
        values = {
            kind: u.get("input_tokens", 0) + u.get("output_tokens", 0)
            for kind, u in by_agent_and_kind[role].items()
        }
        detail = ", ".join(f"{KIND_LABELS.get(k, k)} {v:,}" for k, v in values.items())
        bars.append(
            Bar(
                label=role,
                values=values,
                marker=agents[role].colour,
                tooltip=f"{role}: {sum(values.values()):,} tokens ({detail})",
            )
        )
    return stacked_bars(
        bars, kind_series(kinds), label="Tokens per agent by call kind", slot=40.0, min_width=HALF
    )
