"""Edit mode: a model's answer read as operations on the memory (add a note to a section,
replace note N), applied deterministically, and the JSON Schema that bounds them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from intrinsic_memory.memory import (
    Memory,
    MemoryLimits,
    MemoryTemplate,
    Repairs,
    answer_body,
    answer_schema,
    closed_object,
)
from intrinsic_memory.rewrite import _closed_values


@dataclass(frozen=True)
class Edit:
    """One operation on a memory: add a note to a section, or replace note N."""

    op: str  # add | replace
    section: int
    note: int = 0  # 1-based, for replace
    text: str = ""


def parse_edits(answer: str, template: MemoryTemplate, repairs: Repairs) -> list[Edit] | None:
    """Edit operations in an answer `{"edits": [...]}`; None when it is not such an object.

    Each operation is `{"to": KEY, "add": TEXT}` or `{"in": KEY, "replace": N, "with": TEXT}`;
    anything else (a removal, unknown fields, another agent's name, a section the template
    lacks) is counted as malformed and ignored. There is no removal (LangMem's default too):
    a small model offered one empties its memory, and a full memory makes room by itself.
    """
    body = answer_body(answer)
    try:
        value = json.loads(body[body.find("{") :] if "{" in body else body)
    except json.JSONDecodeError:
        value = _closed_values(body).get("edits")
        value = {"edits": value} if isinstance(value, list) else None
    operations = value.get("edits") if isinstance(value, dict) else None
    if not isinstance(operations, list):
        repairs.unusable = "the answer is not an object with a list of edits"
        return None
    edits = []
    for item in operations:
        edit = _edit(item, template)
        if edit is None:
            repairs.malformed_edits += 1
        else:
            edits.append(edit)
    return edits


def _edit(item: Any, template: MemoryTemplate) -> Edit | None:
    if not isinstance(item, dict):
        return None
    section = template.index

    def number(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    shape = set(item)
    if shape == {"to", "add"} and isinstance(item["add"], str):
        index = section(item["to"])
        return None if index is None else Edit("add", index, text=item["add"])
    if shape == {"in", "replace", "with"} and isinstance(item["with"], str):
        index, note = section(item["in"]), number(item["replace"])
        return None if index is None or note is None else Edit("replace", index, note, item["with"])
    return None


def apply_edits(memory: Memory, edits: Sequence[Edit], repairs: Repairs) -> Memory:
    """The memory after `edits`: note numbers refer to the memory as it was shown; a
    number that points at no note is malformed and changes nothing."""
    sections = [list(enumerate(notes, 1)) for notes in memory.notes]
    added: list[list[str]] = [[] for _ in sections]
    for edit in edits:
        current = dict(sections[edit.section])
        if edit.op == "add":
            if edit.text.strip():
                added[edit.section].append(edit.text)
            else:
                repairs.malformed_edits += 1
        elif edit.note not in current or not edit.text.strip():
            repairs.malformed_edits += 1
        else:
            sections[edit.section] = [
                (n, edit.text if n == edit.note else t) for n, t in sections[edit.section]
            ]
    notes = tuple(
        tuple([t for _, t in kept] + new) for kept, new in zip(sections, added, strict=True)
    )
    return replace(memory, notes=notes)


def edit_schema(memory: Memory, limits: MemoryLimits, max_edits: int) -> dict[str, Any]:
    """JSON Schema of an edit answer: 1 to `max_edits` bounded operations, each adding a note
    to a section or replacing a note that exists (so a constraining backend cannot name a
    note that is not there)."""
    text = {"type": "string", "minLength": 1, "maxLength": limits.note_chars}
    shape = closed_object
    shapes = [shape(to={"enum": memory.template.keys}, add=text)]
    for key, notes in zip(memory.template.keys, memory.notes, strict=True):
        if notes:
            number = {"type": "integer", "minimum": 1, "maximum": len(notes)}
            shapes.append(shape(**{"in": {"const": key}, "replace": number, "with": text}))
    # At least one: an agent's own turn always adds something, and a small model offered
    # an empty list takes it every time.
    edits = {"type": "array", "items": {"anyOf": shapes}, "minItems": 1, "maxItems": max_edits}
    return answer_schema("memory_edits", "Edits to the agent's working memory.", edits=edits)
