"""Reading a rewrite: the whole next memory in a model's answer (JSON notes tagged with
their section, one list per section key, or Markdown with the template's headings), with
what an answer cut off at the output cap still holds, and the JSON Schema that asks for it.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from intrinsic_memory.memory import (
    _HEADING,
    Memory,
    MemoryLimits,
    MemoryTemplate,
    Repairs,
    answer_body,
    answer_schema,
    closed_object,
)


def _closed_values(text: str) -> dict[str, Any]:
    """The `"key": value` pairs of a JSON object whose values are complete, in an answer
    that may have been cut off anywhere (a backend that stopped at its output cap)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    found: dict[str, Any] = {}
    pos = start + 1 if start >= 0 else len(text)
    while pos < len(text):
        key_match = re.compile(r'\s*,?\s*("(?:[^"\\]|\\.)*")\s*:\s*').match(text, pos)
        if not key_match:
            break
        try:
            key = json.loads(key_match.group(1))
            value, end = decoder.raw_decode(text, key_match.end())
        except json.JSONDecodeError:
            break
        found[key] = value
        pos = end
    return found


def _sections_from_markdown(text: str, template: MemoryTemplate) -> tuple[dict[int, list], int]:
    """Notes per section index from Markdown headings, and the index of the last section
    seen (which is incomplete when the answer was cut off)."""
    found: dict[int, list[str]] = {}
    current = last = -1
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            name = re.sub(r"\s*\[\w+\]$", "", heading.group(1).strip()).strip()
            index = template.index(name.lower())  # a heading's case is the model's
            current = -1 if index is None else index
            if current >= 0:
                found.setdefault(current, [])
                last = current
        elif line.strip() and current >= 0:
            found[current].append(line)
    return found, last


def _closed_items(text: str, key: str) -> list[Any]:
    """The complete items of the array under `key` in an answer that may have been cut off
    anywhere (a backend that stopped at its output cap)."""
    match = re.search(rf'"{key}"\s*:\s*\[', text)
    if not match:
        return []
    decoder, items, pos = json.JSONDecoder(), [], match.end()
    while True:
        separator = re.compile(r"\s*,?\s*").match(text, pos)
        pos = separator.end() if separator else pos
        try:
            item, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return items
        items.append(item)


def _sections_from_json(
    body: str, template: MemoryTemplate, repairs: Repairs
) -> tuple[dict[int, list[Any]], bool]:
    """Notes per section index from a JSON answer, and whether the answer was cut off.

    The answer is `{"notes": [{"section": KEY, "note": TEXT}, ...]}` (what the prompt and
    the schema ask for) or one list of notes per section key (what some providers' tool
    calls return); a note tagged with no section of the template is malformed."""
    cut_off = False
    try:
        whole = json.loads(body)
        values = whole if isinstance(whole, dict) else {}
    except json.JSONDecodeError:
        cut_off = True  # an unclosed object is a cut-off answer, whatever was reported
        values = {"notes": _closed_items(body, "notes")} if '"notes"' in body else {}
        values = values or _closed_values(body)
    found: dict[int, list[Any]] = {}
    if isinstance(values.get("notes"), list) and "notes" not in template.keys:
        for item in values["notes"]:
            section = item.get("section") if isinstance(item, dict) else None
            index = template.index(section)
            if index is None or not isinstance(item.get("note"), str):
                repairs.malformed_edits += 1
                continue
            found.setdefault(index, []).append(item["note"])
        return found, cut_off
    for name, notes in values.items():
        index = template.index(name)
        if index is not None:
            found[index] = notes if isinstance(notes, list) else [notes]
    return found, cut_off


def read_rewrite(
    answer: str, previous: Memory, *, cut_off: bool, repairs: Repairs
) -> Memory | None:
    """The new memory in a rewrite answer (JSON notes tagged with their section, one list
    per section key, or Markdown with the template's headings); None if nothing is usable.

    A complete answer replaces the memory: a section it leaves out is empty. An answer cut
    off at the output cap keeps the sections it holds complete notes of; the others are
    carried over from `previous`, so no partial line is ever stored.
    """
    template = previous.template
    body = answer_body(answer)
    incomplete: set[int] = set()
    if body.startswith("{"):
        found, unclosed = _sections_from_json(body, template, repairs)
        cut_off = cut_off or unclosed
    else:
        found, last = _sections_from_markdown(body, template)
        if cut_off and last >= 0:
            incomplete.add(last)  # its last line may stop mid-sentence
    if not found:
        repairs.unusable = "the answer holds none of the template's sections"
        return None
    sections = list(previous.notes)
    for index in range(len(template.sections)):
        if index in found and index not in incomplete:
            sections[index] = tuple(str(n) for n in found[index] if str(n).strip())
        elif cut_off:
            repairs.carried_sections += 1  # kept from the previous version
        else:
            sections[index] = ()
    return replace(previous, notes=tuple(sections))


def rewrite_schema(
    template: MemoryTemplate, limits: MemoryLimits, max_notes: int | None = None
) -> dict[str, Any]:
    """JSON Schema of a rewrite: at most `max_notes` (default: the room's) bounded notes,
    each tagged with its section (the sections share the room)."""
    note = closed_object(
        section={"enum": template.keys},
        note={"type": "string", "minLength": 1, "maxLength": limits.note_chars},
    )
    most = limits.max_notes if max_notes is None else max_notes
    notes = {"type": "array", "items": note, "minItems": 1, "maxItems": most}
    description = "The agent's whole working memory: notes tagged with their section."
    return answer_schema("memory", description, notes=notes)
