"""What an agent of the planning team reads: its role, the task, and, per memory arm, the
earlier steps (all of them, the newest that fit the budget: the library's `fit_context`
without a memory, or a summary and the steps since); intrinsic arms get theirs from
`add_intrinsic_memory`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from intrinsic_memory import fit_context, memory_of
from langchain_core.messages import BaseMessage, HumanMessage

from ima import prompts
from ima.planning.adapter import BenchTask
from ima.planning.adapters import as_task
from ima.planning.arms import Arm
from ima.planning.settings import SolverSettings
from ima.planning.state import StepContext

ENVIRONMENT = "environment"  # the name of observation messages


def task_text(task: BenchTask | Any, settings: SolverSettings) -> str:
    """The task every agent reads first: the rules, the goal, how to answer (a PDDL
    `Problem` is taken too)."""
    task = as_task(task)
    return task.adapter.task_text(task, settings.limit_for(task.step_limit))


History = Callable[[Mapping[str, Any]], list[BaseMessage]]


def history_for(arm: Arm, settings: SolverSettings) -> History:
    """The earlier messages an agent of this arm reads, from the graph state."""

    def everything(state: Mapping[str, Any]) -> list[BaseMessage]:
        return list(state.get("messages") or [])

    def window(state: Mapping[str, Any]) -> list[BaseMessage]:
        messages = state.get("messages") or []
        return fit_context(messages, None, token_budget=settings.token_budget) if messages else []

    def summarised(state: Mapping[str, Any]) -> list[BaseMessage]:
        messages = list(state.get("messages") or [])
        summaries = state.get("summaries") or []
        if not summaries:
            return messages
        latest = summaries[-1]
        section = prompts.render(
            "team/summary_section", step=latest["step"], summary=latest["text"]
        )
        return [messages[0], HumanMessage(section), *messages[state["summary_messages"] :]]

    if arm.intrinsic:
        return everything  # add_intrinsic_memory has fitted the messages to the budget
    return {"none": window, "full": everything, "summary": summarised}[arm.name]


def step_context(state: Mapping[str, Any], agent: str, seen: list[BaseMessage]) -> StepContext:
    """What the acting agent's prompt held, for the episode's record."""
    record = memory_of(state, agent)
    summaries = state.get("summaries") or []
    return StepContext(
        history_steps=sum(getattr(m, "name", None) == ENVIRONMENT for m in seen),
        memory=record["text"] if record else "",
        memory_version=record["version"] if record else 0,
        summary_step=summaries[-1]["step"] if summaries else 0,
    )
