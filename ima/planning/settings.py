"""What every memory arm of the planning team shares: the step limit and the budgets."""

from __future__ import annotations

from dataclasses import dataclass

from intrinsic_memory.manager import DEFAULT_MEMORY_TOKENS, MIN_MEMORY_TOKENS, UPDATE_MODES

from ima.core.errors import UserError


@dataclass(frozen=True)
class SolverSettings:
    """What every arm shares: the step limit and the token budgets."""

    step_limit: int = 30
    """Steps before an episode ends unsolved (G-Memory's PDDL runs: 30)."""
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
        if self.step_limit < 1:
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


def recursion_limit(settings: SolverSettings) -> int:
    """Graph steps an episode may take: per step an agent, its memory, the helper and its
    memory, and a summary at most."""
    return 6 * settings.step_limit + 10
