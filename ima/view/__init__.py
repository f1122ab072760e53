"""A self-contained HTML view of one run: the meeting, every agent's memory as it evolved,
what each prompt was made of, where the tokens went, and the outcome.

The page needs no network: styles, script and charts (inline SVG) are in the file, and its
Content-Security-Policy allows nothing else to load or run, so model text that slipped
past escaping could still not execute.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from ima.core.errors import UserError
from ima.core.files import write_text_atomic
from ima.tasks import Task
from ima.view.figures import swatch_colours
from ima.view.model import AGENT_COLOURS
from ima.view.page import build_page

__all__ = ["render_view", "write_view"]


@cache
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("ima.view", "templates"),
        autoescape=True,  # every user and model text is escaped, in every template
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _csp_hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def render_view(run: dict[str, Any], values: dict[str, Any], task: Task | None = None) -> str:
    """The HTML page of a run from its record (run.json) and its graph state; with its
    `task`, the memory timeline also shows what each version retains of the task."""
    env = _environment()
    style = env.get_template("style.css.j2").render(
        agent_colours=AGENT_COLOURS, swatches=swatch_colours()
    )
    script, _, _ = env.loader.get_source(env, "script.js")  # type: ignore[union-attr]
    csp = (
        f"default-src 'none'; style-src '{_csp_hash(style)}'; "
        f"script-src '{_csp_hash(script)}'; img-src data:; base-uri 'none'; form-action 'none'"
    )
    return env.get_template("page.html.j2").render(
        page=build_page(run, values, task), style=Markup(style), script=Markup(script), csp=csp
    )


def write_view(
    run: dict[str, Any], values: dict[str, Any], path: Path, task: Task | None = None
) -> Path:
    """Write the page (`render_view`) to `path` atomically: a finished file or none at all.

    Raises UserError (one line, naming the path) when the file cannot be written.
    """
    html = render_view(run, values, task)
    path = Path(path)
    if not path.parent.is_dir():
        raise UserError(
            f"cannot write {path}: folder {path.parent} does not exist (create it first)"
        )
    try:
        write_text_atomic(path, html)
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
