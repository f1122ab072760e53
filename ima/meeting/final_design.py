"""The final design's required sections as a bounded structure, rendered to Markdown.

The documentation step must deliver a summary (3 to 5 sentences), a numbered high-level plan
and resource estimates. A backend that constrains its output is asked for them as a JSON
object whose lists and strings are bounded (`design_schema`), so the answer is complete
within the call's output cap (`design_tokens`); any other backend answers in Markdown with the
three headings. Either answer is read into the same `Design` (`read_design`) and rendered to
the same Markdown, every list's items read by `list_items` whatever shape the model gave them
(several in one string, numbered again, nested, empty): the design numbers or bullets each
item once. A section the answer leaves missing or empty, or that an answer cut off at the
output cap may have lost its end, is never shown empty: `render` marks it missing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from ima.meeting.list_items import list_items

__all__ = [
    "DESIGN_SECTIONS",
    "Design",
    "DesignSection",
    "design_schema",
    "design_tokens",
    "read_design",
]

MISSING = "_Missing: the documentation step did not write this section._"
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")


@dataclass(frozen=True)
class DesignSection:
    """A required section: its JSON key, its heading, how its items are written, and the
    bounds a constraining backend keeps to."""

    key: str
    title: str
    style: Literal["sentences", "numbered", "bullets"]
    min_items: int
    max_items: int
    item_chars: int


DESIGN_SECTIONS = (
    DesignSection("summary", "Summary", "sentences", 3, 5, 200),
    DesignSection("plan", "High-level plan", "numbered", 3, 7, 160),
    DesignSection("resource_estimates", "Resource estimates", "bullets", 2, 5, 160),
)


def design_schema() -> dict[str, Any]:
    """JSON Schema of the design: each section a bounded list of non-empty strings."""
    return {
        "title": "design",
        "description": "The agreed design's required sections.",
        "type": "object",
        "properties": {
            s.key: {
                "type": "array",
                "items": {"type": "string", "minLength": 10, "maxLength": s.item_chars},
                "minItems": s.min_items,
                "maxItems": s.max_items,
            }
            for s in DESIGN_SECTIONS
        },
        "required": [s.key for s in DESIGN_SECTIONS],
        "additionalProperties": False,
    }


def design_tokens() -> int:
    """An output cap with room for the fullest design the schema allows, so a constrained
    answer always ends within it: 2 characters a token (figures: many tokenisers split
    digits one by one) and the JSON punctuation."""
    return sum(s.max_items * (s.item_chars // 2 + 6) for s in DESIGN_SECTIONS) + 32


@dataclass(frozen=True)
class Design:
    """Each required section's Markdown body (without its heading), by section key."""

    bodies: dict[str, str] = field(default_factory=dict)

    @property
    def missing(self) -> list[str]:
        """The keys of the required sections with nothing in them."""
        return [s.key for s in DESIGN_SECTIONS if not self.bodies.get(s.key, "").strip()]

    def render(self) -> str:
        """Markdown: every required section under its heading, a missing one marked so."""
        return "\n\n".join(
            f"## {s.title}\n{self.bodies.get(s.key, '').strip() or MISSING}"
            for s in DESIGN_SECTIONS
        )


def _words(name: str) -> str:
    return " ".join(re.sub(r"[^a-z]+", " ", name.lower()).split())


def _section_index(name: str) -> int | None:
    """The required section a heading or key names ("3. Resource estimates", "plan",
    "resources"): its title, or a word starting with its key's first word."""
    named = _words(name)
    for i, s in enumerate(DESIGN_SECTIONS):
        stem = _words(s.key).split()[0]
        if _words(s.title) in named or any(w.startswith(stem) for w in named.split()):
            return i
    return None


def _body(section: DesignSection, items: list[str]) -> str:
    """A section's items as Markdown: a paragraph of sentences, a numbered or a bullet list."""
    if section.style == "sentences":
        return " ".join(items)
    if section.style == "numbered":
        return "\n".join(f"{n}. {item}" for n, item in enumerate(items, 1))
    return "\n".join(f"- {item}" for item in items)


def _from_json(value: Any) -> Design:
    bodies: dict[str, str] = {}
    for name, items in (value if isinstance(value, dict) else {}).items():
        index = _section_index(str(name))
        if index is None:
            continue
        listed = items if isinstance(items, list) else [items]
        bodies[DESIGN_SECTIONS[index].key] = _body(DESIGN_SECTIONS[index], list_items(listed))
    return Design(bodies)


def _markdown_body(key: str, lines: list[str]) -> str:
    """A section of a Markdown answer: a list's items read again and written once; a
    paragraph (the summary) or a table kept as written."""
    body = "\n".join(lines).strip()
    section = next(s for s in DESIGN_SECTIONS if s.key == key)
    if section.style == "sentences" or any(line.lstrip().startswith("|") for line in lines):
        return body
    return _body(section, list_items([body]))


def read_design(text: str, *, cut_off: bool = False) -> Design:
    """The required sections in an answer: a JSON object (keys or headings as names), or
    Markdown with the sections' headings (a paragraph or table kept as written, a list read
    into its items). In a Markdown answer
    `cut_off` at the output cap the last section may have lost its end: it counts as missing."""
    body = _FENCE.sub("", text.strip())
    if body.startswith("{"):
        try:
            return _from_json(json.loads(body))
        except json.JSONDecodeError:
            return Design()  # an unclosed object was cut off: nothing in it is complete
    lines_by: dict[str, list[str]] = {}
    current: str | None = None
    for line in body.splitlines():
        heading = _HEADING.match(line)
        if heading:
            index = _section_index(heading.group(1))
            current = None if index is None else DESIGN_SECTIONS[index].key
            if current is not None:
                lines_by[current] = []
        elif current is not None:
            lines_by[current].append(line.rstrip())
    if cut_off and lines_by:
        lines_by.pop(list(lines_by)[-1])
    return Design({key: _markdown_body(key, lines) for key, lines in lines_by.items()})
