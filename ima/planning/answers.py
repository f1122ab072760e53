"""An agent's answer read as an action, the helper's trigger, and the actions an episode's
steps gave its environment (the state keeps the steps; the environment is replayed)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ima.planning.state import Step

CHECK = "check valid actions"
# What small models put before an action: "> ", "**", "Action:", "Act 3:", "Step 3:".
_PREFIX = re.compile(
    r"^(?:>|\*+|(?:next\s+)?action(?:\s*\d+)?\s*:|act\s*\d*\s*:|step\s*\d+\s*:)\s*", re.I
)


def read_action(answer: str) -> str:
    """The action in an answer: its first non-empty line, without quotes, backticks and a
    leading 'Action:' (the environment reads the rest and says what is wrong with it)."""
    line = next((ln.strip() for ln in answer.splitlines() if ln.strip()), "")
    for _ in range(3):
        line = _PREFIX.sub("", line.strip().strip("`'\"").strip()).strip()
    return line.strip("`'\"").strip()


def _same(action: str) -> str:
    return " ".join(action.lower().split()).rstrip(".")


def is_check(action: str) -> bool:
    return _same(action).replace("`", "") in (CHECK, "check valid action")


def stuck(action: str, steps: Sequence[Step]) -> bool:
    """G-Memory's test: the proposal repeats each of the last two steps' actions."""
    return len(steps) >= 2 and all(_same(s["action"]) == _same(action) for s in steps[-2:])


def actions_of(steps: Sequence[Step]) -> list[str]:
    """The actions the environment was given (a check of the valid actions is none)."""
    return [s["action"] for s in steps if not s["check"]]
