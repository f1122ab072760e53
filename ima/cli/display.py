"""Terminal rendering with rich: the live run view, the final design, `show` and `runs`.

Everything that comes from a user or a model (thread ids, turns, memories, notes) goes to
the terminal as plain `Text`, never as rich markup: `[bold]` in a turn stays `[bold]`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.markdown import Markdown
from rich.panel import Panel
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.status import Status
from rich.table import Table
from rich.text import Text

from ima.measures.memory_quality import describe_repairs
from ima.runs.outputs import usage_totals
from ima.runs.registry import RunRecord


class JobProgress(Progress):
    """A bar of jobs (runs, episodes) with its ETA, and under it the one running now."""

    doing = ""

    def get_renderables(self) -> Iterable[RenderableType]:
        yield self.make_tasks_table(self.tasks)
        if self.doing:
            yield Text(f"  {self.doing}", style="dim", no_wrap=True, overflow="ellipsis")


def job_progress(console: Console, name: str, unit: str) -> JobProgress:
    """`name` [bar] done/total `unit` · elapsed · eta."""
    return JobProgress(
        SpinnerColumn(),
        TextColumn(name),
        BarColumn(bar_width=30),
        MofNCompleteColumn(),
        TextColumn(f"{unit} ·"),
        TimeElapsedColumn(),
        TextColumn("· eta"),
        TimeRemainingColumn(),
        console=console,
        speed_estimate_period=24 * 3600,  # jobs take minutes: average over all of them
    )


class LiveView:
    """Prints each turn as it lands under a status line: phase, speaker, turns, tokens."""

    def __init__(self, console: Console, record: RunRecord, verbose_memory: bool = False):
        self.console = console
        self.cap = record.settings["turn_cap"]
        self.verbose_memory = verbose_memory
        self.turns = 0
        self.tokens = 0
        self.phase = ""
        self.status: Status | None = None

    def __enter__(self) -> LiveView:
        self.status = self.console.status("starting")
        self.status.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.status:
            self.status.__exit__(None, None, None)

    def pause(self) -> None:
        if self.status:
            self.status.stop()

    def resume(self) -> None:
        if self.status:
            self.status.start()

    def _line(self, doing: str) -> str:
        phase = f"{self.phase} · " if self.phase else ""
        return f"{phase}turn {self.turns}/{self.cap} · {self.tokens:,} tokens · {doing}"

    def __call__(self, node: str, update: dict[str, Any]) -> None:
        if node == "long_term":
            self.console.print(Text(update["note"], style="yellow"))
            return
        if node == "learn":
            learned = update["long_term"]["learned"]
            if learned.get("note"):
                self.console.print(Text(learned["note"], style="yellow"))
            return
        for kinds in update.get("usage", {}).values():
            self.tokens += sum(u["input_tokens"] + u["output_tokens"] for u in kinds.values())
        if "phase" in update:
            self.phase = f"{update['phase']} r{update.get('phase_round', 1)}"
        doing = "working"
        if node == "router":
            nxt = update.get("next_speaker", "")
            doing = (
                "writing the final documentation"
                if nxt == "documentation"
                else f"{nxt} is speaking"
            )
        for turn in update.get("transcript", []):
            self.turns = turn["index"]
            self.console.print(turn_panel(turn))
            doing = f"{turn['speaker']} is updating its memory"
        for version in update.get("memory_log", []):  # a rewrite, not the starting memory
            if not version["version"]:
                continue
            label = f"{version['role']} memory v{version['version']}"
            # what went wrong with the answer (notes shortened or dropped to fit are routine)
            repairs = version.get("repairs") or {}
            wrong = {
                "cut_off": int(bool(version.get("cut_off"))),
                "malformed_edits": repairs.get("malformed_edits", 0),
                "unusable": repairs.get("unusable", 0),
            }
            repaired = f"; {describe_repairs(wrong)}" if any(wrong.values()) else ""
            if self.verbose_memory:
                title = Text(label + repaired)
                self.console.print(Panel(Text(version["text"]), title=title, style="dim"))
            else:
                words = len(version["text"].split())
                self.console.print(Text(f"  {label} ({words} words{repaired})", style="dim"))
        if self.status:
            self.status.update(self._line(doing))


def review_panel(payload: dict[str, Any]) -> Panel:
    votes = ", ".join(f"{role} {vote}" for role, vote in payload.get("votes", {}).items())
    body = Text(f"{payload.get('question', '')}\n\nVotes: {votes}")
    for t in payload.get("recent_turns", [])[-4:]:
        body.append("\n\n")
        body.append(f"{t['turn']}. {t['speaker']}", style="bold")
        body.append(f": {t['content']}")
    return Panel(body, title="Review before FINALIZE", border_style="yellow")


def turn_panel(turn: dict[str, Any]) -> Panel:
    flags = " ".join(turn["flags"])
    title = Text(f"{turn['index']}. {turn['speaker']}", style="bold") + Text(f" · {turn['phase']}")
    return Panel(
        Text(turn["content"]),
        title=title,
        title_align="left",
        subtitle=Text(flags) if flags else None,
    )


def usage_table(usage: dict[str, Any]) -> Table:
    totals = usage_totals(usage)
    table = Table(title="Token usage")
    for col in ("agent", "kind", "calls", "input", "output", "seconds"):
        table.add_column(col, justify="left" if col in ("agent", "kind") else "right")
    for role, kinds in totals["by_agent_and_kind"].items():
        for kind, u in kinds.items():
            est = "*" if u["estimated_calls"] else ""
            table.add_row(
                role,
                kind,
                str(u["calls"]),
                f"{u['input_tokens']:,}{est}",
                f"{u['output_tokens']:,}{est}",
                f"{u['seconds']:.1f}",
            )
    t = totals["total"]
    table.add_row(
        "total",
        "",
        str(t["calls"]),
        f"{t['input_tokens']:,}",
        f"{t['output_tokens']:,}",
        f"{t['seconds']:.1f}",
        style="bold",
    )
    return table


def final_view(values: dict[str, Any]) -> Group:
    final = values.get("final") or {}
    parts: list[Any] = [Markdown(final.get("markdown", "") or "_no documentation_")]
    if final.get("missing"):
        missing = ", ".join(final["missing"])
        parts.append(Text(f"design parts the documentation step left missing: {missing}"))
    return Group(*parts)


STATUS_STYLE = {
    "finalized": "green",
    "turn_cap": "yellow",
    "failed": "red",
    "interrupted": "magenta",
}


def status_text(status: str) -> Text:
    return Text(status, style=STATUS_STYLE.get(status, "cyan"))


# `ima runs` columns, most important first: narrow terminals drop columns from the end,
# never cut a thread id (the value users copy into `ima show` and `ima resume`) or a date.
RUN_COLUMNS = ("thread", "status", "started", "task", "memory", "wall", "model")


def runs_table(records: list[RunRecord], width: int = 200) -> Table:
    rows = [
        {
            "thread": r.thread_id,
            "status": r.shown_status,
            "started": f"{datetime.fromtimestamp(r.created_at):%Y-%m-%d %H:%M}",
            "task": f"{r.task_id} v{r.task_version}",
            "memory": r.memory_mode,
            "wall": f"{r.wall_seconds:.0f}s",
            "model": str(r.settings.get("model", "")),
        }
        for r in records
    ]
    columns: list[str] = []
    used = 4  # the table's outer borders
    for name in RUN_COLUMNS:
        needed = max([len(name), *(len(row[name]) for row in rows)]) + 3  # padding, divider
        if columns and used + needed > width:
            break
        columns.append(name)
        used += needed
    table = Table(title="Runs")
    for name in columns:
        table.add_column(name, no_wrap=True, overflow="ignore" if name == "thread" else "ellipsis")
    for row in rows:
        cells = [status_text(row[c]) if c == "status" else Text(row[c]) for c in columns]
        table.add_row(*cells)
    return table


def show_view(record: RunRecord, values: dict[str, Any]) -> Group:
    status = values.get("status") if values.get("status") in STATUS_STYLE else record.shown_status
    header = Text(record.thread_id, style="bold") + Text(
        f" · {record.task_id} v{record.task_version} · memory {record.memory_mode} · "
        f"model {record.settings.get('model')} · status "
    )
    parts: list[Any] = [header + status_text(str(status))]
    parts += [turn_panel(t) for t in values.get("transcript", [])]
    for role, slot in values.get("memories", {}).items():
        title = (
            f"{role} memory · {slot['kind']} template · v{slot['version']} "
            f"(turn {slot.get('turn', 0)})"
        )
        text = Text(slot["text"]) if slot["text"] else Text("(empty)", style="dim")
        parts.append(Panel(text, title=Text(title), title_align="left", style="cyan"))
    parts.append(usage_table(values.get("usage", {})))
    if values.get("final"):
        parts.append(Panel(final_view(values), title="Final design"))
    return Group(*parts)


def show_json(record: RunRecord, values: dict[str, Any]) -> dict[str, Any]:
    status = values.get("status") if values.get("status") in STATUS_STYLE else record.shown_status
    return {
        "thread_id": record.thread_id,
        "status": status,
        "task": {"id": record.task_id, "version": record.task_version},
        "memory_mode": record.memory_mode,
        "settings": record.settings,
        "phase": values.get("phase"),
        "transcript": [
            {k: t[k] for k in ("index", "speaker", "phase", "content", "flags", "tokens", "usage")}
            | {"turn": t["index"]}
            for t in values.get("transcript", [])
        ],
        "memories": {
            role: {
                "text": s["text"],
                "template": s["kind"],
                "version": s["version"],
                "turn": s.get("turn", 0),
            }
            for role, s in values.get("memories", {}).items()
        },
        "usage": usage_totals(values.get("usage", {})),
        "final": values.get("final"),
    }


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
