"""How the command line ends when it cannot go on: one line on stderr and an exit code
(0 done, 1 failed or stopped, 2 bad input, 130 interrupted)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

INTERRUPTED = 130
err = Console(stderr=True, soft_wrap=True, highlight=False)  # errors stay on one line
ERROR = Text("error: ", style="red")


def first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [""])[0]


class Interrupted(Exception):
    """Ctrl-C: carries the one line that says what to do next (exit 130)."""


def usage_line(exc: Any) -> str:
    """A usage error of the command line (typer/click) as one line naming the option and
    the fix: `--budget should be a valid integer, not 'abc' (see `ima run --help`)`."""
    ctx = getattr(exc, "ctx", None)
    see = f"see `{ctx.command_path} --help`" if ctx is not None else "see `ima --help`"
    param = getattr(exc, "param", None)
    cause = exc.__cause__
    problems = cause.errors() if callable(getattr(cause, "errors", None)) else []
    if param is not None and problems and "input" in problems[0]:
        opts = [o for o in getattr(param, "opts", []) if o.startswith("-")]
        name = "/".join(opts) or str(getattr(param, "human_readable_name", param.name))
        given = problems[0]["input"]
        wanted = str(problems[0].get("msg", "is invalid")).split(",")[0]  # the rule, not how
        if wanted.startswith("Input should be "):
            return (
                f"{name} should be {wanted.removeprefix('Input should be ')}, not {given!r} ({see})"
            )
        return f"invalid value {given!r} for {name}: {wanted} ({see})"
    message = " ".join(exc.format_message().split()).rstrip(".")
    message = message.replace(" Did you mean ", "; did you mean ")
    return f"{message[:1].lower()}{message[1:]} ({see})"
