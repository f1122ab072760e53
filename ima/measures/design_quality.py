"""How usable a final design is, measured without a model (the targets of the design
document, for `ima show`, the evaluation report and the benchmarks).

- Junk lines: lines of `design.md` that are a vote, a flag, the meeting's instructions or
  prompt headings echoed back, or schema residue (`checks.junk_reason`).
- Components: how many have a technology and a justification of their own (one that is
  neither empty, copied from the brief, nor the same as another component's).
- Requirements addressed in the design's own words: a requirement counts when the row of
  the requirements table names what meets it, and the evidence keywords of the task file
  (`ima.tasks.evidence`, the coverage check) are all found in what that part of the design
  says: the row's "how" and, for a component, its description and justification. A
  sentence copied from the brief or the requirements (half or more of its word 5-grams
  found there verbatim, or in the requirements' titles or the task's asks) is left out, and
  so is the table's restatement of the requirement.
- Figures: which key figures of the brief the design's own text states (the requirements'
  restatements left out), and figures in a unit of the wrong kind.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ima.meeting.design.checks import copied_share, junk_reason, unit_errors
from ima.meeting.design.document import Design
from ima.meeting.design.parts import given_texts
from ima.tasks import Task
from ima.tasks.evidence import matched_keywords, normalise, states_figure

__all__ = ["design_quality", "own_text"]

COPIED = 0.5
OWN_WORDS_NGRAM = 5  # a sentence with half its word 5-grams in the brief is copied
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_STRUCTURE = re.compile(r"^\s*(#|\|?\s*-{3}|_|$)")


def _read(design: Design | Mapping[str, Any] | None) -> Design | None:
    if isinstance(design, Design):
        return design
    try:
        return Design.model_validate(design) if isinstance(design, Mapping) else None
    except ValueError:
        return None


def is_structured(design: Any) -> bool:
    """Whether `design` is a structured design (ima.meeting.design.document.Design)."""
    return _read(design) is not None


def own_text(design: Design | Mapping[str, Any] | None) -> str:
    """Everything the design says in its own words: the summary, the components, the plan,
    the derivations, and how each requirement is met (never the requirements' texts)."""
    read = _read(design)
    if read is None:
        return ""
    parts = [read.summary]
    for c in read.components:
        parts += [c.name, c.technology, c.does, c.why, *c.pros, *c.cons]
    parts += read.plan
    for e in read.estimates:
        if e.value is not None:
            parts.append(f"{e.label}: {e.value:g} {e.unit} ({e.derivation})")
    parts += [f"{c.label}: {c.derivation}" for c in read.costs.lines]
    parts += [r.how for r in read.requirements]
    return "\n".join(p for p in parts if p)


def _own_sentences(text: str, sources: Sequence[str]) -> str:
    kept = [s for s in _SENTENCE.split(text) if copied_share(s, sources, OWN_WORDS_NGRAM) < COPIED]
    return " ".join(kept)


def junk_lines(task: Task, markdown: str, instructions: Sequence[str] = ()) -> list[str]:
    """Lines (or table cells) of design.md that may not stand in a design."""
    found = []
    for line in markdown.splitlines():
        if _STRUCTURE.match(line):
            continue
        cells = [c for c in line.strip().strip("|").split("|")] if line.startswith("|") else [line]
        for cell in cells:
            body = re.sub(r"^\s*(?:[-*]|\d+\.)\s+|\*\*", "", cell).strip()
            if body and body != "-" and junk_reason(body, task, instructions):
                found.append(body)
    return found


def addressed_in_own_words(task: Task, design: Design) -> list[str]:
    """The ids of the requirements the design says, in its own words, how it meets."""
    sources = given_texts(task, task.description)
    addressed = []
    for row in design.requirements:
        requirement = next((r for r in task.requirements if r.id == row.id), None)
        if requirement is None or row.status != "met" or not requirement.evidence:
            continue
        said = [row.how]
        component = design.component(row.met_by or "")
        if component is not None:
            said += [component.does, component.why]
        text = normalise(_own_sentences(" ".join(said), sources))
        if all(m is not None for m in matched_keywords(requirement, text)):
            addressed.append(row.id)
    return addressed


def _own_justification(design: Design, sources: Sequence[str]) -> int:
    whys = [c.why.lower() for c in design.components if c.status == "written"]
    return sum(
        1
        for c in design.components
        if c.status == "written"
        and c.technology
        and c.why
        and whys.count(c.why.lower()) == 1
        and copied_share(c.why, sources, OWN_WORDS_NGRAM) < COPIED
    )


def design_quality(
    task: Task,
    design: Design | Mapping[str, Any] | None,
    markdown: str,
    instructions: Sequence[str] = (),
) -> dict[str, Any] | None:
    """The design's measures (None when `design` is not a structured design)."""
    read = _read(design)
    if read is None:
        return None
    sources = given_texts(task, task.description)
    own = own_text(read)
    figures = [f.id for f in task.key_figures if states_figure(f, normalise(own))]
    addressed = addressed_in_own_words(task, read)
    checked = [r for r in task.requirements if r.evidence]
    return {
        "junk_lines": junk_lines(task, markdown, instructions),
        "components": len(read.components),
        "components_justified": _own_justification(read, sources),
        "requirements_listed": len(read.requirements),
        "requirements_open": [r.id for r in read.requirements if r.status != "met"],
        "addressed": addressed,
        "addressed_share": len(addressed) / len(checked) if checked else None,
        "figures": figures,
        "figures_total": len(task.key_figures),
        "unit_errors": unit_errors(own),
        "conflicts": [c.model_dump() for c in read.conflicts],
    }
