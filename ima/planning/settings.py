"""The planning team's settings: the graph's context schema (LangGraph `context_schema`),
which its nodes read as `runtime.context`, declared once as pydantic fields with their
bounds, like the meeting's `RunContext`. `ima bench` takes one option per field; a bad value
is one `UserError` line naming the setting and what it takes."""

from __future__ import annotations

from typing import Any, Literal

from intrinsic_memory import DEFAULT_MEMORY_TOKENS, MIN_MEMORY_TOKENS
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ima.core.errors import UserError


class SolverSettings(BaseModel):
    """What every memory arm of the planning team shares: the step limit and the budgets."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    step_limit: int | None = Field(
        30,
        ge=1,
        description="Steps before an episode ends unsolved (G-Memory's PDDL runs: 30); none: "
        "each task's own limit (BabyAI's and TWC's catalogs give one per task).",
    )
    token_budget: int = Field(
        1024,
        ge=256,
        description="Tokens of task, memory and earlier steps an agent sees (none, intrinsic).",
    )
    memory_tokens: int = Field(
        DEFAULT_MEMORY_TOKENS, ge=MIN_MEMORY_TOKENS, description="Tokens of an intrinsic memory."
    )
    memory_update: Literal["edit", "rewrite"] = Field(
        "edit", description="edit (a few operations a turn) or rewrite (the paper: all again)."
    )
    summary_every: int = Field(
        10, ge=1, description="The summary arm rewrites its summary every N steps (ChatDev: 10)."
    )
    summary_tokens: int = Field(
        DEFAULT_MEMORY_TOKENS,
        ge=MIN_MEMORY_TOKENS,
        description="Tokens of the summary arm's summary.",
    )
    answer_tokens: int = Field(
        32, ge=1, description="The most tokens of one answer: an action is a line."
    )

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise UserError(_describe(exc)) from None

    def limit_for(self, task_limit: int) -> int:
        """An episode's step limit: this one, or the task's own when none is set."""
        return task_limit if self.step_limit is None else self.step_limit


# What the library builds into an intrinsic arm's graph (`add_intrinsic_memory`): such a
# graph runs with the settings it was built with.
BUILT_IN = ("token_budget", "memory_tokens", "memory_update")


def _describe(exc: ValidationError) -> str:
    """One line for the first problem: "step limit 0: give 1 or more"."""
    error = exc.errors()[0]
    name = ".".join(str(p) for p in error["loc"]) or "settings"
    given, ctx = error.get("input"), error.get("ctx") or {}
    if error["type"] == "extra_forbidden":
        return f"unknown setting {name!r}: known are {', '.join(SolverSettings.model_fields)}"
    setting = name.replace("_", " ")
    if "ge" in ctx:
        return f"{setting} {given}: give {ctx['ge']} or more"
    if "expected" in ctx:
        expected = str(ctx["expected"]).replace("'", "")
        return f"{setting} {given!r}: use {expected}"
    return f"{setting} {given!r}: {error['msg'].lower()}"


def recursion_limit(settings: SolverSettings, step_limit: int | None = None) -> int:
    """Graph steps an episode of `step_limit` steps (default: the settings') may take: per
    step an agent, its memory, the helper and its memory, and a summary at most."""
    limit = step_limit or settings.step_limit
    if limit is None:
        raise ValueError("recursion_limit needs the episode's step limit")
    return 6 * limit + 10
