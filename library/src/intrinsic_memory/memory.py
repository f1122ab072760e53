"""An agent's memory as data: the template's sections, each a short list of notes, bounded
by a token budget, rendered to the same Markdown for prompts and people.

A memory update never writes free text into a slot: its answer is read into sections (a
JSON object per section, or Markdown headings from a backend that cannot be constrained),
cleaned, and cut to the budget by whole notes. So a stored memory never ends mid-line.

How an answer becomes the next version lives beside it: a rewrite's reading in
`rewrite.py`, edit mode's operations (add a note to a section, replace note N) in
`edits.py`, applied deterministically; nothing is removed by name: when the memory is full,
the budget rule makes room (`bound`). The prompts and the model call live in `manager.py`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from intrinsic_memory import _prompts
from intrinsic_memory.notes import copies_prompt, reconcile, strip_foreign, strip_repeats
from intrinsic_memory.tokens import count_tokens

# Words that do not help tell sections apart in a JSON key ("My role's responsibilities"
# becomes "role_responsibilities").
_STOP_WORDS = {
    "a",
    "an",
    "and",
    "the",
    "of",
    "my",
    "so",
    "far",
    "for",
    "to",
    "in",
    "s",
    "i",
    "must",
}
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", re.M)
_BULLET = re.compile(r"^\s*(?:[-*+\u2022]|\d+[.)])\s+")
# Characters per token of English notes (cl100k); the post-check counts real tokens.
_CHARS_PER_TOKEN = 4
_MIN_NOTE_CHARS = 40
_NOTE_CHARS = 120
ELLIPSIS = "\u2026"


def _slug(title: str, taken: set[str]) -> str:
    words = [w for w in re.findall(r"[a-z0-9]+", title.lower()) if w not in _STOP_WORDS]
    base = "_".join(words[:2]) or "notes"
    key, n = base, 2
    while key in taken:
        key, n = f"{base}_{n}", n + 1
    taken.add(key)
    return key


@dataclass(frozen=True)
class Section:
    """One heading of a template: its title, its JSON key and what belongs under it."""

    title: str
    key: str
    hint: str = ""


@dataclass(frozen=True)
class MemoryTemplate:
    """The structure of a memory: ordered sections parsed from Markdown headings.

    Any Markdown with headings works (`## Decisions` then a placeholder line under it); text
    without headings becomes one section, "Notes", with that text as its hint.
    """

    sections: tuple[Section, ...]
    kind: str = "custom"  # generic | manual | llm | custom: where the template came from

    @classmethod
    def from_markdown(cls, text: str, kind: str = "custom") -> MemoryTemplate:
        """Parse a Markdown template; raises ValueError when it has no usable text."""
        titles: list[tuple[str, list[str]]] = []
        levels: list[int] = []
        loose: list[str] = []
        for line in text.splitlines():
            heading = _HEADING.match(line)
            if heading and heading.group(1).strip():
                level = len(line.lstrip()) - len(line.lstrip().lstrip("#"))
                if titles and not titles[-1][1] and level > levels[-1]:
                    titles.pop()  # a title over deeper headings ("# My memory"), not a section
                    levels.pop()
                titles.append((heading.group(1).strip(), []))
                levels.append(level)
            elif line.strip():
                hint = _BULLET.sub("", line).strip()
                (titles[-1][1] if titles else loose).append(hint)
        if not titles:
            if not loose:
                raise ValueError("a memory template needs at least one heading or line of text")
            titles = [("Notes", loose)]
        taken: set[str] = set()
        seen: set[str] = set()
        sections = []
        for title, hints in titles:
            if title.lower() in seen:
                continue  # a repeated heading adds nothing the first did not
            seen.add(title.lower())
            sections.append(Section(title, _slug(title, taken), " ".join(hints)))
        return cls(tuple(sections), kind)

    @classmethod
    def generic(cls) -> MemoryTemplate:
        """The generic template: one structure for every role and task (the paper's best
        kind): task goal, own responsibilities, requirements, own contributions, others'
        positions, open questions, decisions."""
        return cls.from_markdown(_prompts.load("templates/generic"), kind="generic")

    @classmethod
    def of(cls, template: MemoryTemplate | str, kind: str = "custom") -> MemoryTemplate:
        """A template from a `MemoryTemplate`, "generic", or Markdown with one heading per
        section; anything else is a ValueError that lists the choices."""
        if isinstance(template, MemoryTemplate):
            return template
        if template == "generic":
            return cls.generic()
        if isinstance(template, str) and _HEADING.search(template.replace("\r", "")):
            return cls.from_markdown(template, kind=kind)
        given = f"{template!r}" if isinstance(template, str) else type(template).__name__
        raise ValueError(
            f"unknown memory template {given}: use 'generic', a MemoryTemplate, or Markdown "
            "with one '## ' heading per section"
        )

    def index(self, name: Any) -> int | None:
        """The position of the section a model named: by its key, else by its title."""
        text = str(name)
        keys = [s.key for s in self.sections]
        titles = [s.title.lower() for s in self.sections]
        for names, wanted in ((keys, text), (titles, text.lower())):
            if wanted in names:
                return names.index(wanted)
        return None

    @property
    def keys(self) -> list[str]:
        return [s.key for s in self.sections]

    def markdown(self) -> str:
        """The template as Markdown headings with their placeholders."""
        return "\n".join(
            f"## {s.title}" + (f"\n- {s.hint}" if s.hint else "") for s in self.sections
        )

    def guide(self) -> str:
        """One line per section: its key, title and what belongs in it."""
        return "\n".join(
            f"- [{s.key}] {s.title}" + (f": {s.hint}" if s.hint else "") for s in self.sections
        )

    def skeleton(self) -> str:
        """The template as the JSON object a rewrite answers with: one placeholder note per
        section (a memory may hold several notes in a section and none in another)."""
        notes = [{"section": s.key, "note": s.hint or "..."} for s in self.sections]
        return json.dumps({"notes": notes}, ensure_ascii=False)


@dataclass(frozen=True)
class MemoryLimits:
    """What one memory may hold: characters per note, and the token budget of the whole
    memory, which its sections share (a section may hold several notes while others are
    short or empty). `max_notes` is how many notes of full length fit: the most one rewrite
    may write."""

    tokens: int
    note_chars: int
    max_notes: int

    @classmethod
    def for_budget(cls, template: MemoryTemplate, tokens: int) -> MemoryLimits:
        headings = sum(count_tokens(f"## {s.title}\n") for s in template.sections)
        room = max(tokens - headings, 0)
        chars = (room // len(template.sections) - 2) * _CHARS_PER_TOKEN
        note_chars = max(_MIN_NOTE_CHARS, min(chars, _NOTE_CHARS))
        note_tokens = note_chars // _CHARS_PER_TOKEN + 2  # "- " and the line break
        return cls(tokens, note_chars, max(1, room // note_tokens))

    @property
    def note_words(self) -> int:
        """The note length asked of the model, in words (about 6 characters each)."""
        return max(5, self.note_chars // 6)


def clean_note(text: Any, chars: int) -> tuple[str, bool]:
    """One line of plain text of at most `chars` characters, and whether it was shortened.

    Too long a note keeps its complete sentences or clauses that fit, else its whole words
    that fit, marked with an ellipsis: a note is never cut inside a word.
    """
    note = " ".join(_BULLET.sub("", str(text)).split()).strip()
    if len(note) < chars or (len(note) == chars and note.endswith((".", "!", "?", ")"))):
        return note, False  # a note that reaches the limit was stopped there by the grammar
    head = note[: chars - 1] if len(note) > chars else note
    for mark in (". ", "; ", ", "):
        cut = head.rfind(mark)
        if cut >= chars // 2:
            return head[: cut + 1].rstrip(",;"), True
    cut = head.rfind(" ")
    return (head[:cut] if cut > 0 else head).rstrip(" ,;:") + ELLIPSIS, True


@dataclass(frozen=True)
class Memory:
    """An agent's memory: notes per section of its template, rendered as Markdown."""

    template: MemoryTemplate
    notes: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        if not self.notes:
            object.__setattr__(self, "notes", tuple(() for _ in self.template.sections))

    @classmethod
    def parse(cls, text: str, template: MemoryTemplate) -> Memory:
        """Read a rendered memory (or any Markdown) back into the template's sections.

        Headings that match no section, and text before the first heading, go to no
        section: they are not part of this template's memory.
        """
        by_title = {s.title.lower(): i for i, s in enumerate(template.sections)}
        notes: list[list[str]] = [[] for _ in template.sections]
        current: int | None = None
        for line in (text or "").splitlines():
            heading = _HEADING.match(line)
            if heading:
                current = by_title.get(heading.group(1).strip().lower())
            elif line.strip() and current is not None:
                notes[current].append(" ".join(_BULLET.sub("", line).split()))
        return cls(template, tuple(tuple(n) for n in notes))

    @property
    def is_empty(self) -> bool:
        return not any(self.notes)

    def render(self) -> str:
        """Markdown: each section that holds notes, its heading then one bullet per note."""
        parts = []
        for section, notes in zip(self.template.sections, self.notes, strict=True):
            if notes:
                parts.append("\n".join([f"## {section.title}", *(f"- {n}" for n in notes)]))
        return "\n".join(parts)

    def numbered(self) -> str:
        """Every section with its key and numbered notes: what an edit refers to (what
        belongs in each is `MemoryTemplate.guide`, shown once before)."""
        lines = []
        for section, notes in zip(self.template.sections, self.notes, strict=True):
            lines.append(f"## {section.title} [{section.key}]" + ("" if notes else " (empty)"))
            lines += [f"{i}. {n}" for i, n in enumerate(notes, 1)]
        return "\n".join(lines)

    def as_json(self) -> str:
        """The notes as the JSON object a rewrite answers with, in the template's order."""
        pairs = zip(self.template.keys, self.notes, strict=True)
        notes = [{"section": key, "note": note} for key, kept in pairs for note in kept]
        return json.dumps({"notes": notes}, ensure_ascii=False)

    def tokens(self, counter: Callable[[str], int] = count_tokens) -> int:
        text = self.render()
        return counter(text) if text else 0


@dataclass
class Repairs:
    """What had to be done to an answer before it could be stored (counted per run)."""

    carried_sections: int = 0  # sections kept from the previous version (answer cut off)
    shortened_notes: int = 0  # notes longer than the note limit
    dropped_notes: int = 0  # notes beyond a section's limit or the token budget
    malformed_edits: int = 0  # edit operations that were not understood or pointed nowhere
    merged_notes: int = 0  # new notes that restated a note already held (`notes.reconcile`)
    foreign_script: int = 0  # notes cleaned of (or refused for) letters of another script
    repeated_words: int = 0  # notes cut where they repeated themselves, or refused
    copied_prompt: int = 0  # notes refused: copied from the role, not the output
    unusable: str = ""  # why nothing of the answer could be used ("" when it could)

    def as_dict(self) -> dict[str, int]:
        """The counts, `unusable` as 0 or 1 (counts add up over a run)."""
        return asdict(self) | {"unusable": int(bool(self.unusable))}


def bound(
    memory: Memory,
    limits: MemoryLimits,
    repairs: Repairs,
    counter: Callable[[str], int] = count_tokens,
    *,
    previous: Memory | None = None,
    scripts: Iterable[str] | None = None,
    prompt: Sequence[str] = (),
    output: str | None = None,
) -> Memory:
    """Clean every note (one line within the note limit, no repeats in a section; with
    `scripts`, only letters of those scripts and no note that repeats itself; with the
    `output` the memory was updated from, no new note copied from the `prompt`'s standing
    text instead, `notes.copies_prompt`), reconcile the
    notes new since `previous` with those they restate (`notes.reconcile`), then, while the
    memory is over its token budget, drop the oldest note of the section holding the most
    notes (of two as full, the later one in the template): sections share the room, and
    the newest notes stay."""
    held = {n for section in (previous.notes if previous else ()) for n in section}
    sections: list[list[str]] = []
    for notes in memory.notes:
        kept: list[str] = []
        for raw in notes:
            note = raw
            if scripts is not None and raw not in held:
                note, foreign = strip_foreign(note, scripts)
                note, repeated = strip_repeats(note) if note else (note, False)
                repairs.foreign_script += foreign
                repairs.repeated_words += repeated
            if (
                note
                and output is not None
                and raw not in held
                and copies_prompt(note, prompt, output)
            ):
                repairs.copied_prompt += 1
                continue
            note, shortened = clean_note(note, limits.note_chars)
            repairs.shortened_notes += shortened
            if note and note not in kept:
                kept.append(note)
        sections.append(kept)
    if previous is not None:
        repairs.merged_notes += reconcile(sections, {n for s in sections for n in s} - held)
    result = replace(memory, notes=tuple(tuple(s) for s in sections))
    while result.tokens(counter) > limits.tokens:
        fullest = max(range(len(sections)), key=lambda i: (len(sections[i]), i))
        if not sections[fullest]:
            break
        sections[fullest].pop(0)
        repairs.dropped_notes += 1
        result = replace(memory, notes=tuple(tuple(s) for s in sections))
    return result


def answer_body(answer: str) -> str:
    """A model's answer without the code fence a model may wrap JSON in."""
    return re.sub(r"^\s*```(?:json)?\s*|\s*```\s*$", "", answer.strip())


def closed_object(**properties: Any) -> dict[str, Any]:
    """JSON Schema of an object with exactly these properties, all required."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def answer_schema(title: str, description: str, **properties: Any) -> dict[str, Any]:
    """JSON Schema of a whole answer: a titled `closed_object`."""
    return {"title": title, "description": description, **closed_object(**properties)}
