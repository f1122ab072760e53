"""A run's record and state turned into what the page shows: agents, turns, memory timelines.

Everything here tolerates missing keys: a run in progress has no final output, a baseline run
has no memories, and runs recorded before the memory log and the prompt composition existed
have neither (the page then says so instead of guessing).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ima.core.state import memory_slots
from ima.measures.memory_quality import REPAIR_LABELS
from ima.meeting.votes import VOTES
from ima.view.diff import MemoryDiff, line_diff

# Tableau 10: distinct on white, and the same agent keeps its colour in every section.
AGENT_COLOURS = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
_LONG_CHARS = 600
_LONG_LINES = 8
_PREVIEW_CHARS = 220


@dataclass(frozen=True)
class Agent:
    id: str
    name: str
    index: int

    @property
    def colour(self) -> str:
        return AGENT_COLOURS[self.index % len(AGENT_COLOURS)]

    @property
    def anchor(self) -> str:
        return f"agent-{self.index}"

    @property
    def css_class(self) -> str:  # the stylesheet defines one class per palette colour
        return f"agent-c{self.index % len(AGENT_COLOURS)}"


@dataclass(frozen=True)
class PromptParts:
    """Token counts of the prompt that produced a turn (Algorithm 1)."""

    budget: int
    task: int
    role: int
    instruction: int
    memory: int
    history: int
    history_turns: tuple[int, int] | None  # first and last included turn, None: none

    @property
    def fixed(self) -> int:
        return self.task + self.role + self.instruction

    @property
    def total(self) -> int:
        return self.fixed + self.memory + self.history

    @property
    def included(self) -> int:
        return self.history_turns[1] - self.history_turns[0] + 1 if self.history_turns else 0


@dataclass
class TurnView:
    index: int
    agent: Agent
    phase: str
    round: int | None
    content: str
    flags: list[str]
    tokens: int
    usage: dict[str, float]
    prompt: PromptParts | None
    memory_version: int | None = None  # the version of the speaker's memory this turn caused

    @property
    def anchor(self) -> str:
        return f"turn-{self.index}"

    @property
    def votes(self) -> list[str]:
        return [f for f in self.flags if f in VOTES]

    @property
    def long(self) -> bool:
        return len(self.content) > _LONG_CHARS or self.content.count("\n") >= _LONG_LINES

    @property
    def preview(self) -> str:
        """The start of a collapsed turn, on one line."""
        flat = " ".join(self.content.split())
        return flat if len(flat) <= _PREVIEW_CHARS else flat[:_PREVIEW_CHARS].rstrip() + "…"

    @property
    def lines(self) -> int:
        return len(self.content.strip().splitlines())


@dataclass
class MemoryVersion:
    agent: Agent
    version: int
    turn: int
    text: str
    template: str
    diff: MemoryDiff | None  # None for the starting memory
    retention: dict[str, Any] | None = None  # what it holds of the task's key items
    cut_off: bool = False  # the update's answer stopped at the output cap
    repairs: dict[str, int] = field(default_factory=dict)  # what its answer needed
    unchanged: bool = False  # an update that changed nothing (the version stays)

    @property
    def anchor(self) -> str:
        suffix = f"-t{self.turn}" if self.unchanged else ""
        return f"mem-{self.agent.index}-v{self.version}{suffix}"

    @property
    def repaired(self) -> str:
        """What its update's answer needed before it was stored, in words ("" for nothing)."""
        done = [f"{n} {REPAIR_LABELS[k]}" for k, n in self.repairs.items() if n and k != "cut_off"]
        return "; ".join((["answer cut off at the output cap"] if self.cut_off else []) + done)


@dataclass
class MemoryTimeline:
    agent: Agent
    versions: list[MemoryVersion] = field(default_factory=list)
    final: dict[str, Any] | None = None  # the memory slot in the state
    recorded: bool = False  # whether the run kept a log of every version
    retention: dict[str, Any] | None = None  # the agent's retention at the end, over the run

    @property
    def template(self) -> str:
        if self.final and self.final.get("kind"):
            return str(self.final["kind"])
        return self.versions[-1].template if self.versions else ""


def _ordered_unique(ids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(i for i in ids if i))


def collect_agents(run: dict[str, Any], values: dict[str, Any]) -> dict[str, Agent]:
    """Task roles first (their order in the task), then anyone else who spoke (e.g. HUMAN)."""
    names: dict[str, str] = dict(run.get("roles") or values.get("roles") or {})
    usage = values.get("usage") or {}
    usage_roles = usage.get("by_agent_and_kind", usage) if isinstance(usage, dict) else {}
    ids = _ordered_unique(
        [
            *names,
            *memory_slots(values),
            *(entry.get("role", "") for entry in values.get("memory_log") or []),
            *(turn.get("speaker", "") for turn in values.get("transcript") or []),
            *usage_roles,
        ]
    )
    return {
        role: Agent(
            id=role, name=names.get(role, "human reviewer" if role == "HUMAN" else ""), index=i
        )
        for i, role in enumerate(ids)
    }


def agent_for(agents: dict[str, Agent], role: str) -> Agent:
    """The agent of `role`, added at the end when the record did not list it."""
    role = role or "?"
    if role not in agents:
        agents[role] = Agent(id=role, name="", index=len(agents))
    return agents[role]


def _prompt_parts(raw: Any) -> PromptParts | None:
    if not isinstance(raw, dict) or "budget" not in raw:
        return None
    span = raw.get("history_turns") or []
    return PromptParts(
        budget=int(raw.get("budget", 0)),
        task=int(raw.get("task", 0)),
        role=int(raw.get("role", 0)),
        instruction=int(raw.get("instruction", 0)),
        memory=int(raw.get("memory", 0)),
        history=int(raw.get("history", 0)),
        history_turns=(int(span[0]), int(span[1])) if len(span) == 2 else None,
    )


def turn_views(values: dict[str, Any], agents: dict[str, Agent]) -> list[TurnView]:
    turns = []
    for raw in values.get("transcript") or []:
        usage = raw.get("usage") or {}
        round_ = raw.get("round", raw.get("phase_round"))
        turns.append(
            TurnView(
                index=int(raw.get("index", raw.get("turn", len(turns) + 1))),
                agent=agent_for(agents, raw.get("speaker", "")),
                phase=str(raw.get("phase", "")),
                round=int(round_) if round_ is not None else None,
                content=str(raw.get("content", "")),
                flags=list(raw.get("flags") or []),
                tokens=int(raw.get("tokens", 0)),
                usage={
                    k: usage.get(k, 0)
                    for k in (
                        "input_tokens",
                        "output_tokens",
                        "cached_tokens",
                        "calls",
                        "seconds",
                        "estimated_calls",
                    )
                },
                prompt=_prompt_parts(raw.get("context")),
            )
        )
    return turns


def memory_timelines(
    values: dict[str, Any],
    agents: dict[str, Agent],
    turns: list[TurnView],
    retention: dict[str, Any] | None = None,
) -> list[MemoryTimeline]:
    """One timeline per agent with a memory; marks on each turn the version it caused.
    `retention` (per agent, as `retention_summary` gives it) adds what each version holds."""
    slots: dict[str, dict[str, Any]] = dict(memory_slots(values))
    log = values.get("memory_log")
    held = {
        (role, v["version"]): v
        for role, agent in (retention or {}).items()
        for v in agent.get("versions", [])
    }
    timelines: dict[str, MemoryTimeline] = {
        role: MemoryTimeline(agent=agent_for(agents, role), final=slot, recorded=log is not None)
        for role, slot in slots.items()
    }
    by_turn = {turn.index: turn for turn in turns}
    for entry in log or []:
        agent = agent_for(agents, entry.get("role", ""))
        timeline = timelines.setdefault(agent.id, MemoryTimeline(agent=agent, recorded=True))
        previous = timeline.versions[-1].text if timeline.versions else None
        number = int(entry.get("version", len(timeline.versions)))
        text = str(entry.get("text", ""))
        version = MemoryVersion(
            agent=agent,
            version=number,
            unchanged=bool(timeline.versions) and timeline.versions[-1].version == number,
            turn=int(entry.get("turn", 0)),
            text=text,
            template=str(entry.get("template", "")),
            diff=None if previous is None else line_diff(previous, text),
            cut_off=bool(entry.get("cut_off")),
            repairs=dict(entry.get("repairs") or {}),
        )
        version.retention = held.get((agent.id, version.version))
        timeline.versions.append(version)
        caused_by = by_turn.get(version.turn)
        changed = version.version and not version.unchanged
        if changed and caused_by and caused_by.agent.id == agent.id:
            caused_by.memory_version = version.version
    for role, timeline in timelines.items():
        timeline.retention = (retention or {}).get(role)
    return sorted(timelines.values(), key=lambda t: t.agent.index)
