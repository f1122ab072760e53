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
"""

from __future__ import annotations

from dataclasses import dataclass

from ima.core.errors import UserError

ARMS = ("none", "full", "summary", "intrinsic-generic", "intrinsic-manual", "intrinsic-llm")
INTRINSIC = "intrinsic-"


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
        return self.name.removeprefix(INTRINSIC) if self.intrinsic else None


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
