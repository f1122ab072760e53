"""The router node: applies the schedule after every turn (and memory update) and records
phase, round, votes and consensus in the state; `route` then picks the edge."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.runtime import Runtime

from ima.core.errors import UserError
from ima.core.settings import RunContext
from ima.core.state import State
from ima.method.schedule import advance
from ima.nodes.review import REVIEW
from ima.tasks import Task


def make_router_node(task: Task) -> Callable[..., dict[str, Any]]:
    def router(state: State, runtime: Runtime[RunContext]) -> dict[str, Any]:
        if state.get("task_id") not in (None, task.id):
            raise UserError(
                f"thread belongs to task {state['task_id']!r}, not {task.id!r}: "
                "continue it with the task it started with"
            )
        update = advance(task.schedule, state, state["transcript"], runtime.context.turn_cap)
        if update.get("consensus") and runtime.context.review:
            update["next_speaker"] = REVIEW  # a person approves before FINALIZE
        return update

    return router


def route(state: State) -> str:
    return state["next_speaker"]
