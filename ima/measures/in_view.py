"""What each agent's last turn had in view of its own key items, measured without a model.

For every agent, the share of its role's own items (`Task.own_items`, measured items only:
key figures and requirements with evidence) present in what its last turn's prompt held
besides the task brief (which holds every item) and its role description:

- intrinsic memory: its memory as it stood at that turn (the memory log's latest version
  formed before the turn, after its long-term lessons, as the prompt showed it) and the recent
  turns the prompt showed (`Turn.context["history_turns"]`);
- the memoryless baseline: those recent turns alone.

Items are found by the rule retention uses (`ima.tasks.evidence`; memory notes without their
headings, turns as written). A requirement counts when memory and turns together meet every
one of its evidence groups. Everything comes from a run's stored state, so the function
serves `ima show`, run.json, the eval report and offline scripts alike.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from ima.measures.memory_quality import memory_notes, own_measured_items
from ima.meeting.agent_context import memory_text
from ima.tasks import Task
from ima.tasks.evidence import items_held, normalise

__all__ = ["in_view_at_last_turn", "memory_at_turn"]


def memory_at_turn(state: Mapping[str, Any], role: str, turn: int) -> tuple[str, int | None] | None:
    """`role`'s memory as its prompt at `turn` showed it (its long-term lessons, then its
    notes) and the version it was; None when the state cannot tell (a run that kept no memory
    log, whose last version came at or after `turn`)."""
    slot = (state.get("memories") or {}).get(role) or {}
    log = state.get("memory_log")
    if log is None:
        if slot.get("turn", slot.get("updated_turn", turn)) >= turn:
            return None
        return memory_text(slot), slot.get("version")
    # Versions formed before the turn (an update beside the next speaker's turn still ends
    # before its agent speaks again).
    formed = [e for e in log if e.get("role") == role and int(e.get("turn", 0)) < turn]
    latest = formed[-1] if formed else None  # the log is in the order versions were formed
    text = str(latest.get("text", "")) if latest else ""
    version = int(latest.get("version", 0)) if latest else None
    return memory_text({"lessons": slot.get("lessons", ""), "text": text}), version


def _held(task: Task, text: str) -> set[str]:
    figures, requirements = items_held(task, normalise(text))
    return {*figures, *requirements}


def _agent(
    task: Task, state: Mapping[str, Any], turn: Mapping[str, Any], with_memory: bool
) -> dict[str, Any]:
    role, index = str(turn["speaker"]), int(turn["index"])
    context = turn.get("context") or {}
    own = own_measured_items(task, role)
    by_index = {int(t["index"]): t for t in state.get("transcript") or []}
    span = context.get("history_turns") or []
    first, last = (int(span[0]), int(span[-1])) if span else (0, -1)
    window = "\n\n".join(
        str(by_index[i].get("content", "")) for i in range(first, last + 1) if i in by_index
    )
    notes, version = "", None
    if with_memory:
        found = memory_at_turn(state, role, index)
        if found is None:
            return {"turn": index, "share": None, "items": len(own), "memory_version": None}
        memory, version = found
        notes = "\n".join(memory_notes(memory))
    held = _held(task, f"{notes}\n\n{window}")
    in_memory, in_window = _held(task, notes), _held(task, window)
    return {
        "turn": index,
        "share": sum(i in held for i in own) / len(own) if own else None,
        "items": len(own),
        "held": [i for i in own if i in held],
        "missing": [i for i in own if i not in held],
        "in_memory": [i for i in own if i in in_memory],
        "in_window": [i for i in own if i in in_window],
        "window": [first, last] if last >= first else [],
        "memory_version": version,
    }


def in_view_at_last_turn(task: Task, state: Mapping[str, Any]) -> dict[str, Any]:
    """Per agent (in the order agents first spoke), the share of its own items its last
    turn's prompt held besides the brief, and the mean over agents (None where nothing was
    measured). `state`: a run's values (`transcript`; `memory_log` and `memories` for
    intrinsic memory); a run without memories is read as the baseline. Per agent: its last
    turn, `share`, `items` (own items measured), `held` and `missing` ids, which of them
    the memory and the recent turns held on their own (`in_memory`, `in_window`, a
    requirement may need both), the `window` of turns shown and the `memory_version`."""
    transcript: Sequence[Mapping[str, Any]] = state.get("transcript") or []
    with_memory = bool(state.get("memories")) or bool(state.get("memory_log"))
    last: dict[str, Mapping[str, Any]] = {}
    for turn in transcript:
        if "context" in turn:  # a prompt was built for it (a person's turn has none)
            last[str(turn["speaker"])] = turn
    agents = {role: _agent(task, state, turn, with_memory) for role, turn in last.items()}
    shares = [a["share"] for a in agents.values() if a["share"] is not None]
    return {
        "mean": statistics.fmean(shares) if shares else None,
        "memory": with_memory,
        "agents": agents,
    }
