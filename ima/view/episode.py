"""A self-contained HTML page of one benchmark episode (`ima bench pddl|babyai|twc`): every
step with the agent that acted, what its prompt held (earlier steps, the summary, its
memory as it read it), its answer, what the environment did and the progress, then the
final memories and the tokens of every call. Made from the episode's result row.

Like the run view, the page loads nothing and runs no script: its Content-Security-Policy
allows only its own stylesheet."""

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

__all__ = ["render_episode", "write_episode"]


@cache
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("ima.view", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _seen_note(arm: str) -> str:
    if arm == "full":
        return "this arm shows every earlier step"
    if arm == "summary":
        return "this arm shows the latest summary and the steps after it"
    if arm == "intrinsic-cross":
        return (
            "this arm shows the agent's own memory, carried over from the previous task of "
            "its family, and the newest steps that fit the budget"
        )
    if arm.startswith("intrinsic-"):
        return "this arm shows the agent's own memory and the newest steps that fit the budget"
    return "this arm shows the newest steps that fit the budget"


def render_episode(row: dict[str, Any]) -> str:
    """The page of an episode from its stored row (ima.evals.bench.episode.episode_row)."""
    env = _environment()
    style, _, _ = env.loader.get_source(env, "episode.css")  # type: ignore[union-attr]
    digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
    csp = f"default-src 'none'; style-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    episode = row.get("episode") or {}
    timeline: list[dict[str, Any]] = []
    summaries = {s["step"]: s for s in episode.get("summaries") or []}
    for step in episode.get("steps") or []:
        timeline.append({"step": step, "summary": None})
        if step["index"] in summaries:
            timeline.append({"step": None, "summary": summaries[step["index"]]})
    usage = [
        (agent, kind, u)
        for agent, kinds in sorted((row.get("usage") or {}).items())
        for kind, u in sorted(kinds.items())
    ]
    return env.get_template("episode.html.j2").render(
        row=row,
        csp=csp,
        style=Markup(style),
        timeline=timeline,
        templates=sorted((episode.get("templates") or {}).items()),
        memories=sorted((episode.get("memories") or {}).items()),
        start_memory=sorted((episode.get("start_memory") or {}).items()),
        memory_arm=str(row.get("arm", "")).startswith("intrinsic-"),
        seen_note=_seen_note(str(row.get("arm", ""))),
        usage=usage,
    )


def write_episode(row: dict[str, Any], path: Path) -> Path:
    """Write the episode's page to `path` atomically (its folder is created)."""
    html = render_episode(row)
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, html)
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
