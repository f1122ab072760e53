"""Command-line options for the run settings, derived from `RunContext`'s fields: the
option's name (`--field-name`, or the field's `Flag` names), type, default and help (the
field's description) come from ima/core/settings.py, so a new setting needs no code here.

A value given on the command line wins over `IMA_<NAME>` and the config file; an option not
given leaves the lookup to `RunContext` (which also checks every value, in one line).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, Literal, get_origin

import typer
from pydantic.fields import FieldInfo

from ima.core.settings import Flag, RunContext

# What a command declares to receive the settings given on the command line (a dict for
# `RunContext(**settings)`); `with_run_settings` puts one option per field in its place.
GivenSettings = dict[str, Any] | None
SETTINGS_PARAMETER = "settings"


def _names(name: str, field: FieldInfo) -> tuple[str, ...]:
    flags = [m for m in field.metadata if isinstance(m, Flag)]
    return flags[0].names if flags else (f"--{name.replace('_', '-')}",)


def _help(name: str, field: FieldInfo) -> str:
    """The description, where its value can also come from, and the built-in default."""
    value = field.default
    shown = ("on" if value else "off") if isinstance(value, bool) else str(value)
    default = f"; default {shown}" if value not in ("", None) else ""
    return f"{(field.description or '').rstrip('.')} (env IMA_{name.upper()}{default})."


def setting_option(name: str) -> Any:
    """The option of the RunContext field `name`, as a parameter annotation (default None:
    not given)."""
    field = RunContext.model_fields[name]
    kind: Any = field.annotation
    if get_origin(kind) is Literal:
        kind = str  # RunContext checks the value and says what is allowed, in one line
    names = _names(name, field)
    if kind is bool:
        names = tuple(f"{n}/--no-{n.removeprefix('--')}" for n in names)
    return Annotated[kind | None, typer.Option(*names, help=_help(name, field))]


def with_run_settings(command: Callable[..., Any]) -> Callable[..., Any]:
    """A Typer command whose `settings: GivenSettings = None` parameter becomes one option
    per RunContext field, in the fields' order; the command receives the values given."""
    signature = inspect.signature(command, eval_str=True)
    fields = list(RunContext.model_fields)
    parameters = []
    for parameter in signature.parameters.values():
        if parameter.name != SETTINGS_PARAMETER:
            parameters.append(parameter)
            continue
        parameters += [
            inspect.Parameter(
                name,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=None,
                annotation=setting_option(name),
            )
            for name in fields
        ]

    @functools.wraps(command)
    def run_with_settings(**options: Any) -> Any:
        given = {name: options.pop(name) for name in fields}
        settings = {k: v for k, v in given.items() if v is not None}
        return command(**options, **{SETTINGS_PARAMETER: settings})

    run_with_settings.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return run_with_settings
