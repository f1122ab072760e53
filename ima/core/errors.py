"""Errors that mean the user has something to fix; the CLI prints them in one line."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)
V = TypeVar("V")


class UserError(ValueError):
    """A problem with the user's input or environment, with the fix in the message.

    A ValueError, so the LangGraph server shows its message instead of a generic error.
    """


def named(what: str, name: str, known: Mapping[str, V], listed_by: str) -> V:
    """`known[name]`; a name that is not there is a UserError with the closest names, or
    where they are listed ("unknown PDDL problem 'x': did you mean ...?")."""
    if name in known:
        return known[name]
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
    hint = f"did you mean {', '.join(close)}?" if close else f"{listed_by} lists them"
    raise UserError(f"unknown {what} {name!r}: {hint}")


def validated(model: type[M], raw: object, where: str, whole: str) -> M:
    """`raw` as a `model`; a UserError naming `where`, then the first field at fault (or
    `whole` when it is the whole object) and what is wrong."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or whole
        raise UserError(f"{where}: {field}: {err['msg']}") from None
