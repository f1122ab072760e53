"""A run's measures in the terminal (`ima show --metrics`): content metrics, memory retention
per agent, own key items in view at the last turn, and the memory repairs."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from ima.measures.memory_quality import describe_repairs

CONTENT_ROWS = {
    "figures_in_design": "key figures of the brief the design states (in its own words)",
    "figure_conflicts": "figures of the design the brief contradicts",
    "design_junk_lines": "design lines that are votes, instructions or residue",
    "components_justified": "components with a technology and a justification of their own",
    "requirements_addressed": "requirements the design says how it meets, in its own words",
    "requirements_open": "requirements left open",
    "unit_errors": "figures in a unit of the wrong kind",
    "parroting_turns_pct": "parroting: share of a turn copied from the brief, prompts or "
    "earlier turns (%)",
    "parroting_design_pct": "parroting in the final design (%)",
    "repetition_turns_pct": "repetition: share of a turn repeating the agent's earlier turns (%)",
    "in_view_last_turn_pct": "own key items in view at each agent's last turn, mean (%)",
    "memory_restated_pairs": "pairs of notes in one memory that restate each other",
    "memory_foreign_script": "memory notes in a script the brief does not use",
}


def content_table(content: dict[str, Any]) -> Table:
    """Objective content metrics of a run (no LLM): grounding, parroting, repetition."""
    table = Table(title="Content (8-word phrases; no model involved)")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, label in CONTENT_ROWS.items():
        value = content.get(key)
        if isinstance(value, list):
            value = ", ".join(map(str, value)) or "none"
        table.add_row(label, "n/a" if value is None else str(value))
    return table


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def _series(versions: list[dict[str, Any]], key: str) -> str:
    return " ".join(_pct(v.get(key)).rstrip("%") for v in versions) + " %"


def memory_table(report: dict[str, Any]) -> Table:
    """Per agent: retention of the task's key figures and requirements after each of its
    memory updates, at the end and over the run, of all of them and of those its role owns,
    and parroting of the memory prompt; the run's repairs in the caption."""
    retention = report["retention"]
    items = retention.get("items")
    table = Table(
        title=f"Memory retention: share of the task's {items or 0} key figures and "
        "requirements each memory holds, and of its role's own (no model involved)",
        caption=repairs_line(report["repairs"]),
    )
    columns = ("agent", "own items", "after each update", "end", "own end")
    for col in (*columns, "over the run", "own over the run", "parroting"):
        table.add_column(col, justify="left" if col in ("agent", columns[2]) else "right")
    for role, agent in retention["agents"].items():
        versions = agent["versions"]
        table.add_row(
            Text(role),
            str(len(agent.get("own_items", []))),
            Text(f"all {_series(versions, 'retention')}\nown {_series(versions, 'own_retention')}"),
            _pct(agent["end"]),
            _pct(agent.get("own_end")),
            _pct(agent["over_run"]),
            _pct(agent.get("own_over_run")),
            _pct(agent["parroting"]),
        )
    table.add_row(
        "mean",
        "",
        "",
        _pct(retention["end"]),
        _pct(retention.get("own_end")),
        _pct(retention["over_run"]),
        _pct(retention.get("own_over_run")),
        _pct(retention["parroting"]),
        style="bold",
    )
    return table


def in_view_table(in_view: dict[str, Any]) -> Table:
    """Per agent: the share of its own key items its last turn's prompt held besides the
    brief, in its memory and the recent turns shown (the baseline: the turns alone)."""
    where = "its memory and the recent turns" if in_view["memory"] else "the recent turns"
    table = Table(
        title=f"In view at the last turn: own key items in {where} its prompt held, "
        "besides the brief (no model involved)"
    )
    for col in ("agent", "last turn", "turns shown", "own items in view", "share"):
        table.add_column(col, justify="left" if col == "agent" else "right")
    for role, agent in in_view["agents"].items():
        window = agent.get("window") or []
        held = agent.get("held")
        table.add_row(
            Text(role),
            str(agent["turn"]),
            f"{window[0]}-{window[1]}" if window else "none",
            "unknown" if held is None else f"{len(held)} of {agent['items']}",
            _pct(agent["share"]),
        )
    table.add_row("mean", "", "", "", _pct(in_view["mean"]), style="bold")
    return table


def repairs_line(repairs: dict[str, int]) -> str:
    """The run's memory repairs in one line ("none" when every answer was stored as given)."""
    return f"{repairs.get('updates', 0)} memory updates; repairs: {describe_repairs(repairs)}"
