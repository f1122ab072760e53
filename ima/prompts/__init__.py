"""Prompt texts live in Markdown files beside this module; `render` fills their fields."""

from __future__ import annotations

from functools import cache
from pathlib import Path

PROMPTS_DIR = Path(__file__).parent


@cache
def load(name: str) -> str:
    """The raw text of prompts/<name>.md (name may include a subfolder)."""
    return (PROMPTS_DIR / f"{name}.md").read_text(encoding="utf-8").strip()


def render(name: str, **fields: object) -> str:
    """Fill a prompt's {fields}; values may contain braces (e.g. JSON) safely."""
    return load(name).format_map(fields)
