"""What every memory arm of the planning team shares: the step limit and the budgets."""

from __future__ import annotations

from dataclasses import dataclass

from intrinsic_memory import DEFAULT_MEMORY_TOKENS, MIN_MEMORY_TOKENS, UPDATE_MODES

from ima.core.errors import UserError


@dataclass(frozen=True)
class SolverSettings:
    """What every arm shares: the step limit and the token budgets."""

    step_limit: int | None = 30
    """Steps before an episode ends unsolved (G-Memory's PDDL runs: 30); None: each task's
    own limit (BabyAI's and TWC's catalogs give one per task)."""
    token_budget: int = 1024
    """Tokens of task, memory and earlier steps an agent sees (none and intrinsic arms)."""
    memory_tokens: int = DEFAULT_MEMORY_TOKENS
    """An intrinsic memory's budget; also the length of a summary (summary arm)."""
    memory_update: str = "edit"
    """edit or rewrite (the paper), as `IntrinsicMemory` takes it."""
    summary_every: int = 10
    """The summary arm rewrites its summary every this many steps (ChatDev: 10)."""
    answer_tokens: int = 32
    """The most tokens of one answer: an action is a line."""

    def check(self) -> SolverSettings:
        """The settings, or a UserError naming the bad one."""
        if self.step_limit is not None and self.step_limit < 1:
            raise UserError(f"step limit {self.step_limit}: give 1 or more")
        if self.token_budget < 256:
            raise UserError(f"token budget {self.token_budget}: give 256 or more")
        if self.memory_tokens < MIN_MEMORY_TOKENS:
            raise UserError(
                f"memory budget {self.memory_tokens} tokens: give {MIN_MEMORY_TOKENS} or more"
            )
        if self.memory_update not in UPDATE_MODES:
            raise UserError(
                f"memory update {self.memory_update!r}: use {' or '.join(UPDATE_MODES)}"
            )
        if self.summary_every < 1:
            raise UserError(f"summary every {self.summary_every} steps: give 1 or more")
        return self

    def limit_for(self, task_limit: int) -> int:
        """An episode's step limit: this one, or the task's own when none is set."""
        return task_limit if self.step_limit is None else self.step_limit


def recursion_limit(settings: SolverSettings, step_limit: int | None = None) -> int:
    """Graph steps an episode of `step_limit` steps (default: the settings') may take: per
    step an agent, its memory, the helper and its memory, and a summary at most."""
    limit = step_limit or settings.step_limit
    if limit is None:
        raise ValueError("recursion_limit needs the episode's step limit")
    return 6 * limit + 10
