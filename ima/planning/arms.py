"""The memory arms of the planning benchmark: how much of an episode an agent sees.

- `none`: the task and the newest steps that fit the token budget; nothing else.
- `full`: the task and every step so far (what the paper's public code does: the prompt
  grows with the trajectory, with no budget).
- `summary`: the task, a summary of the steps so far rewritten every few steps by a
  summarising call (ChatDev's memory), and the steps since that summary.
- `intrinsic-generic`, `intrinsic-manual`, `intrinsic-llm`: each agent's own intrinsic
  memory (`add_intrinsic_memory`), updated from its own turns, with the generic template,
  the domain's hand-written template, or one its model writes at the start; the task, the
  memory and the newest steps that fit the budget.
- `intrinsic-cross`: intrinsic memory with the generic template that is not emptied
  between tasks: each agent starts a task with the memory it ended the previous task of
  the same family with (the paper's public code, `--intrinsic_cross_task`). The benchmark
  plays a family's tasks one after another for it, in catalog order, per seed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ima.core.errors import UserError

ARMS = (
    "none",
    "full",
    "summary",
    "intrinsic-generic",
    "intrinsic-manual",
    "intrinsic-llm",
    "intrinsic-cross",
)
INTRINSIC = "intrinsic-"
CROSS = "intrinsic-cross"


@dataclass(frozen=True)
class Arm:
    """One memory arm, by name (see ARMS)."""

    name: str

    @property
    def intrinsic(self) -> bool:
        return self.name.startswith(INTRINSIC)

    @property
    def template(self) -> str | None:
        """generic, manual or llm for an intrinsic arm; None otherwise."""
        if not self.intrinsic:
            return None
        return "generic" if self.cross_task else self.name.removeprefix(INTRINSIC)

    @property
    def cross_task(self) -> bool:
        """Whether each agent's memory carries over from the previous task of its family."""
        return self.name == CROSS


def parse_arms(text: str) -> tuple[Arm, ...]:
    """Arms from a comma-separated list, in the given order without repeats; an unknown
    name is a UserError listing the known ones."""
    names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise UserError(f"no arm given: choose from {', '.join(ARMS)}")
    unknown = [n for n in names if n not in ARMS]
    if unknown:
        raise UserError(f"unknown arm {unknown[0]!r}: choose from {', '.join(ARMS)}")
    return tuple(Arm(n) for n in names)
