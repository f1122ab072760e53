"""The library's prompt texts: Markdown files in prompts/, filled with `render`."""

from __future__ import annotations

from functools import cache
from pathlib import Path

PROMPTS_DIR = Path(__file__).parent / "prompts"


@cache
def load(name: str) -> str:
    """The text of prompts/<name>.md (name may include a subfolder)."""
    return (PROMPTS_DIR / f"{name}.md").read_text(encoding="utf-8").strip()


def render(name: str, **fields: object) -> str:
    """A prompt with its {fields} filled; values may hold braces (JSON) safely."""
    return load(name).format_map(fields)
