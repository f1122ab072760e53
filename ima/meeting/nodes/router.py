"""The router: after every turn it applies the schedule (Algorithm 2) and records phase,
round, votes and consensus; `route` then starts what comes next: the next speaker, the
memory updates still due (before, or beside, the next speaker), documentation or review."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langgraph.runtime import Runtime

from ima.core.errors import UserError
from ima.core.settings import RunContext
from ima.core.state import State
from ima.meeting.nodes.memory_update import memory_node_name
from ima.meeting.nodes.review import REVIEW
from ima.tasks import Task

ROUTER = "router"


def make_router_node(task: Task) -> Callable[..., dict[str, Any]]:
    def router(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        if state.get("task_id") not in (None, task.id):
            raise UserError(
                f"thread belongs to task {state['task_id']!r}, not {task.id!r}: "
                "continue it with the task it started with"
            )
        transcript = state["transcript"]
        if transcript and len(transcript) <= state.get("routed_turn", 0):
            return {}  # this turn is scheduled already; the router ran again after memory updates
        update = task.schedule.advance(state, transcript, runtime.context.turn_cap)
        if update.get("consensus") and runtime.context.review:
            update["next_speaker"] = REVIEW  # a person approves before FINALIZE
        return update | {"routed_turn": len(transcript)}

    return router


def memory_due(state: Mapping[str, Any]) -> list[str]:
    """Agents whose own latest turn their memory has not yet been formed from.

    Only the last two turns' speakers can be due: a memory update runs right after its
    agent's turn, or beside the next speaker's turn.
    """
    memories = state.get("memories") or {}
    due = []
    for turn in list(state.get("transcript") or [])[-2:]:
        slot = memories.get(turn["speaker"])
        if slot is not None and turn["index"] > slot.get("turn", 0):
            due.append(turn["speaker"])
    return due


def next_steps(state: Mapping[str, Any], concurrency: int) -> tuple[list[str], str | None]:
    """What runs next: the roles whose memory update is due, and the next step (a speaker,
    documentation or review) unless it must wait for those updates.

    With concurrency 1 the memory of an agent is formed before anyone else speaks (the
    paper's order). With 2 an agent's memory update runs beside the next speaker's turn:
    neither reads what the other writes. Updates always finish before documentation or a
    review: nothing after the meeting may miss a memory.
    """
    nxt, due = state["next_speaker"], memory_due(state)
    if not due or (concurrency > 1 and nxt in (state.get("memories") or {})):
        return due, nxt
    return due, None


def route(state: State) -> list[str]:
    """The nodes of the next step (the router runs again when they are done)."""
    due, nxt = next_steps(state, state.get("memory_concurrency", 1))
    return [memory_node_name(role) for role in due] + ([nxt] if nxt else [])


def after_turn(role_id: str) -> Callable[[State], str]:
    """Where an agent's turn leads: straight to its own memory update (concurrency 1, the
    paper's order), or to the router, which runs the update beside the next speaker."""
    memory = memory_node_name(role_id)

    def path(state: State) -> str:
        return memory if state.get("memory_concurrency", 1) <= 1 else ROUTER

    path.__name__ = f"after_{role_id}"
    return path
