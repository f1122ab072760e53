"""Action text: what an agent writes, read into a name and arguments, and written back.

The canonical form is the action's name and its arguments separated by spaces, lower case:
`stack a b`. Reading also accepts the PDDL form `(stack a b)`, a call `stack(a, b)`, any
case, extra spaces and a final full stop.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ima.core.errors import UserError

_TOKEN = re.compile(r"^[a-z][a-z0-9_-]*$")
_CALL = re.compile(r"^([^\s(),]+)\s*\((.*)\)$")


class ActionCall(NamedTuple):
    """An action as written: its name and argument names (not yet checked against a problem)."""

    name: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return format_action(self.name, self.args)


def format_action(name: str, args: tuple[str, ...] | list[str]) -> str:
    """The canonical text of an action: `format_action('stack', ['a', 'b'])` -> 'stack a b'."""
    return " ".join([name, *args]).lower()


def parse_action(text: str) -> ActionCall:
    """Read one action; text that is not one action is a UserError saying what to write.

    >>> parse_action("(Stack A B)")
    ActionCall(name='stack', args=('a', 'b'))
    >>> parse_action("stack(a, b).")
    ActionCall(name='stack', args=('a', 'b'))
    """
    if not isinstance(text, str):
        raise UserError(f"an action must be text like 'stack a b', not {type(text).__name__}")
    body = text.strip().rstrip(".").strip().lower()
    if not body:
        raise UserError("empty action: write one action, its name then its arguments")
    if "\n" in body:
        raise UserError(f"{_short(text)} is several lines: write one action on one line")
    if body.startswith("(") and body.endswith(")"):
        body = body[1:-1].strip()
    elif call := _CALL.match(body):
        body = call.group(1) + " " + call.group(2).replace(",", " ")
    tokens = body.split()
    bad = [t for t in tokens if not _TOKEN.match(t)]
    if not tokens or bad:
        raise UserError(
            f"cannot read {_short(text)} as an action: write its name then its arguments, "
            "e.g. 'stack a b'"
        )
    return ActionCall(tokens[0], tuple(tokens[1:]))


def _short(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 3] + "...")
