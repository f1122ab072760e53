"""Each part of the design as a small structured call: its JSON Schema (bounded, so a
constraining backend always ends within the output cap), the lines its prompt shows, what
stands in for a part that could not be written, and the cost total (computed here, never by
the model). The answers are checked in `answers.py`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ima.meeting.design.document import Component, CostLine, Costs, Estimate
from ima.tasks import ComponentSlot, EstimateSlot, Task

__all__ = [
    "component_schema",
    "estimate_schema",
    "given_texts",
    "how_schema",
    "output_cap",
    "plan_schema",
    "price_schema",
    "priced_line",
    "summary_schema",
]

MIN_STEPS, MAX_STEPS = 3, 6
# Characters of a pro or con, of a component's reason and of the summary: an answer at the
# limit was cut mid-sentence, and its last clause is dropped (`whole_clauses`).
ITEM_CHARS, WHY_CHARS, SUMMARY_CHARS, STEP_CHARS = 80, 160, 360, 140
HOW_CHARS = 150  # a sentence on how a requirement is met, after its technology's name


def _text(max_length: int, min_length: int = 3) -> dict[str, Any]:
    return {"type": "string", "minLength": min_length, "maxLength": max_length}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def whole_phrase(step: str, limit: int) -> str:
    """A plan's step as written, or, when it reached `limit` characters, without its last
    unfinished phrase ("... on Amazon CloudWatch Logs before the" ends at "Logs")."""
    step = step.strip()
    if len(step) < limit - 12:  # the verb and its space are outside the pattern's count
        return step
    for mark in (" before ", " after ", " so that ", " then ", " and ", ", "):
        head = step.rsplit(mark, 1)[0]
        if head != step and len(head) >= limit // 3:
            return head.strip(" ,;")
    return step


# Where a sentence cut at its length may end: a clause, else a phrase (the last one).
_CLAUSE_MARKS = (". ", "; ", ", ")
_PHRASE_MARKS = (" and ", " or ", " with ", " for ", " to ", " that ", " which ", " on ", " in ")
_DANGLING = re.compile(r"(?:[\s,;:-]+(?:(?:and|or|with|for|to|that|which|on|in|the|of|a)\b)?)+$")


def whole_clauses(text: str, limit: int) -> str:
    """`text` as written, or, when it reached `limit` characters (the model was cut off
    mid-sentence), up to its last complete clause, else its last complete phrase ("...
    framework for training machine learning onH" ends at "framework"; 12-07). A dangling
    comma or joining word goes ("... across multiple regions; and")."""
    text = text.strip()
    if len(text) < limit - 1:
        return _DANGLING.sub("", text)
    for marks in (_CLAUSE_MARKS, _PHRASE_MARKS):
        cut = max(text.rfind(mark) for mark in marks)
        if cut >= limit // 3:
            return _DANGLING.sub("", text[:cut])
    return _DANGLING.sub("", text)


def whole_sentences(text: str, limit: int) -> str:
    """`text` up to its last full stop when it does not end with one (12-07: a summary
    stopped at "... for dataset and labelling storage and anonymisation"), else cut as
    `whole_clauses` does."""
    text = whole_clauses(text, limit)
    end = max(text.rfind(mark) for mark in (". ", "! ", "? "))
    if text[-1:] not in ".!?" and end >= len(text) // 3:
        return text[: end + 1]
    return text


def given_texts(task: Task, brief: str) -> list[str]:
    """What a design's own words must not copy: the brief, the requirements (texts and
    titles) and what the task asks of each component."""
    return [
        brief,
        *(r.text for r in task.requirements),
        *(r.title for r in task.requirements if r.title),
        *(s.ask for s in task.design_plan.components),
    ]


def output_cap(schema: dict[str, Any]) -> int:
    """Tokens for the fullest answer `schema` allows: 2 characters a token for text
    (figures split digit by digit), 8 for each key and number, and the punctuation."""
    kind = schema.get("type")
    if kind == "string":
        return schema.get("maxLength", 200) // 2 + 2
    if kind in ("number", "integer"):
        return 8
    if kind == "array":
        return schema.get("maxItems", 1) * (output_cap(schema["items"]) + 1) + 2
    if kind == "object":
        props = schema.get("properties", {})
        return sum(output_cap(p) + 6 for p in props.values()) + 2
    return 16


# ----------------------------------------------------------------------------- prompts


def requirement_name(task: Task, requirement_id: str) -> str:
    """A requirement by its title (a few words), or its text when the task gives no title."""
    found = next(r for r in task.requirements if r.id == requirement_id)
    return found.title or " ".join(found.text.split())


def requirement_text(task: Task, requirement_id: str) -> str:
    """A requirement's sentence: its figures are what a sentence on how it is met must
    keep to (the answer may not copy it: `Checker.how_parser`)."""
    found = next(r for r in task.requirements if r.id == requirement_id)
    return " ".join(found.text.split())


# Where a requirement's text divides into what it asks: at "; " and ", and " (not inside
# brackets), and after a colon at each comma, a piece of fewer than three words staying with
# the one before ("decoded, anonymised, indexed and searchable" is one).
_CLAUSE = re.compile(r"(?:;\s+|,\s+and\s+)(?![^(]*\))")
_ITEM = re.compile(r",\s+(?:and\s+)?(?![^(]*\))")


def requirement_parts(task: Task, requirement_id: str) -> list[str]:
    """What a requirement asks, clause by clause: a sentence on how a component meets it is
    asked for each (12-07: asked for the whole of "vehicles keep clips until the cloud
    acknowledges them, ... checksum-verified upload, and the safety path is 99.9%
    available", the 0.5B model said how it meets the first clause only)."""
    text = requirement_text(task, requirement_id).rstrip(".")
    _, colon, listed = text.partition(": ")
    found: list[str] = []
    for clause in _CLAUSE.split(listed if colon else text):
        for piece in _ITEM.split(clause) if colon else [clause]:
            if found and len(piece.split()) < 3:
                found[-1] += f", {piece}"
            else:
                found.append(piece)
    found = [p.strip() for p in found if p.strip()]
    return found if len(found) > 1 else [text]


def meets_line(task: Task, slot: ComponentSlot) -> str:
    """The requirements a component must meet, by id and title, for its prompt."""
    named = [f"{rid} ({requirement_name(task, rid)})" for rid in slot.meets]
    return "; ".join(named) or "the brief's requirements together with the other parts"


CHOICES_SHOWN = 4  # derivations an estimate chooses among
FIGURES_SHOWN = 6  # an estimate sees the brief's figures closest to what it asks
# Words that relate no figure to an estimate: most are monthly, many per day.
_PLAIN = frozenset(
    (  # noqa: SIM905
        "a an the and or of for to in into on at by per each every its it most any "
        "hour hours day days week weeks month months year years time"
    ).split()
)


def _stems(text: str) -> set[str]:
    """Content words cut to five letters ("uploads", "uploaded" -> "uploa"), numbers kept;
    a hyphenated word is one ("safety-event")."""
    found = re.findall(r"[a-z0-9][a-z0-9-]*", text.lower())
    return {w[:5] for w in found if w not in _PLAIN and (len(w) > 2 or w.isdigit())}


def figure_lines(task: Task, ask: str = "") -> str:
    """The brief's key figures that an estimate of `ask` starts from, one a line: the
    `FIGURES_SHOWN` sharing most words with it, the closest first (every figure, in the
    brief's order, when `ask` is empty or shares none). The 0.5B model, shown all 24,
    multiplied the first four whatever the estimate (12-06), and still the first two or
    three of six (12-07)."""
    texts = [f.text for f in task.key_figures]
    if ask:
        texts = _closest(texts, ask, FIGURES_SHOWN) or texts
    return "\n".join(f"- {text}" for text in texts) or "- (see the brief)"


def _closest(texts: Sequence[str], ask: str, limit: int) -> list[str]:
    """The `limit` texts sharing most words with `ask`, the closest first (in their order
    on a tie); none that shares no word."""
    asked = _stems(ask)
    shared = {text: len(asked & _stems(text)) for text in texts}
    return sorted((t for t in texts if shared[t]), key=lambda t: -shared[t])[:limit]


def technology_ask(slot: ComponentSlot) -> str:
    """What the prompt asks of the technology: one of the task's candidates, or its own."""
    if slot.options:
        return "the one of these it runs on: " + "; ".join(slot.options)
    return "the product or managed cloud service it runs on, by its name"


def estimate_line(slot: EstimateSlot) -> str:
    return f"- {slot.label} ({slot.unit}): {slot.ask}"


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 10 else f"{value:g}"


def estimate_summary(estimates: Sequence[Estimate]) -> str:
    lines = [
        f"- {e.label}: {_number(e.value)} {e.unit} ({e.derivation})"
        for e in estimates
        if e.value is not None
    ]
    return "\n".join(lines) or "- (no estimate could be made)"


def price_unit(unit: str) -> str:
    """What a quantity in `unit` is priced in: a monthly quantity per unit ("GPU-hours per
    month" at USD per GPU-hour), a quantity held at any time per unit and month (TB at USD
    per TB per month)."""
    monthly = unit.removesuffix(" per month")
    single = monthly.removesuffix("s") if monthly.endswith("hours") else monthly
    return f"USD per {single}" if monthly != unit else f"USD per {single} per month"


def priced_line(label: str, estimate: Estimate, price: float) -> CostLine:
    """A monthly cost line: the estimate times its unit price, computed here (the 0.5B model
    wrote "1 TB x 45 USD per TB" for storage it had not estimated; 12-07)."""
    if estimate.value is None:
        raise ValueError(f"{estimate.label} has no value to price")
    usd = round(estimate.value * price, 2)
    derivation = (
        f"{_number(estimate.value)} {estimate.unit} x {price:g} {price_unit(estimate.unit)}"
        f" = {_number(usd)}"
    )
    return CostLine(label=label, usd_per_month=usd, derivation=derivation)


def component_lines(components: Sequence[Component]) -> str:
    return "\n".join(
        f"- {c.title}: {c.name} ({c.technology})" for c in components if c.status == "written"
    )


def cost_sentence(costs: Costs) -> str:
    """The cost breakdown and its verdict against the budget, in one sentence."""
    lines = [c for c in costs.lines if c.usd_per_month is not None]
    if not lines or costs.total_usd_per_month is None:
        return ""
    parts = ", ".join(f"{c.label.lower()} USD {_number(c.usd_per_month)}" for c in lines)
    sentence = f"Monthly cloud cost: {parts}, USD {_number(costs.total_usd_per_month)} in all"
    if costs.budget_usd_per_month is not None:
        sentence += f", {budget_verdict(costs)}"
    return sentence + "."


def budget_verdict(costs: Costs) -> str:
    """The total against the budget: within, over, or not known while lines are missing."""
    budget = f"the budget of USD {_number(costs.budget_usd_per_month or 0)}"
    if costs.within_budget is None:
        missing = sum(c.usd_per_month is None for c in costs.lines)
        return f"{missing} of {len(costs.lines)} lines not estimated, so not held against {budget}"
    return f"{'within' if costs.within_budget else 'over'} {budget}"


# ----------------------------------------------------------------------------- schemas


def component_schema(slot: ComponentSlot) -> dict[str, Any]:
    items = {"type": "array", "items": _text(ITEM_CHARS), "minItems": 1, "maxItems": 2}
    properties = {
        "technology": {"enum": list(slot.options)} if slot.options else _text(40, 2),
        "why": _text(WHY_CHARS, 20),
        "pros": items,
        "cons": items,
    }
    return {"title": f"component_{slot.id}", **_object(properties)}


def _pattern(regex: str, max_length: int) -> dict[str, Any]:
    """A string the backend's grammar writes to `regex` (llama.cpp and Ollama do; another
    backend takes the length alone, and the checker refuses what does not fit)."""
    return {"type": "string", "pattern": f"^{regex}$", "maxLength": max_length}


def _literal(text: str) -> str:
    """`text` as a pattern that matches it alone: only the metacharacters escaped, as
    JSON Schema's ECMA-262 patterns allow (no escaped spaces or hyphens)."""
    return re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", text)


def how_chars(technology: str) -> int:
    """The longest sentence on how `technology` meets a requirement."""
    return len(technology) + 1 + HOW_CHARS


def how_schema(technology: str) -> dict[str, Any]:
    """A sentence that opens with the component's technology and holds no link (no colon,
    so no "https:"; a slash stays for "TB/day"): the 0.5B model opened with "The mechanism
    it uses is" and wrote documentation links (12-06)."""
    sentence = _pattern(
        rf"{_literal(technology)} [^:]{{20,{HOW_CHARS}}}", how_chars(technology) + 1
    )
    return {"title": "how", **_object({"how": sentence})}


def closest_choices(choices: Sequence[tuple[str, float]], ask: str) -> list[tuple[str, float]]:
    """The `CHOICES_SHOWN` derivations sharing most words with an estimate's `ask`, the
    closest first (in their order on a tie): shown all nine for the storage held, the 0.5B
    model took "80 TB/day recorded by the fleet x 3 years" (12-07)."""
    results = dict(choices)
    closest = _closest(list(results), ask, CHOICES_SHOWN)
    closest += [d for d in results if d not in closest][: CHOICES_SHOWN - len(closest)]
    return [(derivation, results[derivation]) for derivation in closest]


def estimate_schema(choices: Sequence[tuple[str, float]]) -> dict[str, Any]:
    """One estimate: a derivation chosen among `choices` (`dimensions.derivations`), copied
    whole; its result is known, so no number is asked for."""
    derivations = [derivation for derivation, _ in choices]
    chosen = {"type": "string", "enum": derivations, "maxLength": max(map(len, derivations))}
    return {"title": "estimate", **_object({"derivation": chosen})}


def choice_lines(choices: Sequence[tuple[str, float]], unit: str) -> str:
    return "\n".join(f"- {_with_result(*choice, unit)}" for choice in choices)


def _with_result(derivation: str, result: float, unit: str) -> str:
    return f"{derivation} = {_number(result)} {unit}"


def estimate_of(slot: EstimateSlot, derivation: str, result: float) -> Estimate:
    """The estimate a derivation gives, the result written at its end."""
    shown = _with_result(derivation, result, slot.unit)
    return Estimate(
        id=slot.id, label=slot.label, unit=slot.unit, value=round(result, 2), derivation=shown
    )


def price_schema() -> dict[str, Any]:
    """A unit price below USD 1,000 (a TB-month, a GPU-hour or a vCPU-hour costs less), to
    three decimals: as a JSON number, the 0.5B model wrote "200.000000000..." until its
    output cap, and then the budget, USD 45,000, as the price of a GPU-hour (12-07)."""
    return {"title": "price", **_object({"price": _pattern(r"[0-9]{1,3}(\.[0-9]{1,3})?", 7)})}


def plan_schema(verbs: Sequence[str]) -> dict[str, Any]:
    """Steps that open with one of `verbs` and hold no full stop: the 0.5B model's steps were
    votes, and the prompt's "before ..." copied (12-06)."""
    opening = "|".join(sorted(v.capitalize() for v in verbs))
    step = _pattern(rf"({opening}) [^.]{{10,{STEP_CHARS - 12}}}", STEP_CHARS)
    steps = {"type": "array", "items": step, "minItems": MIN_STEPS, "maxItems": MAX_STEPS}
    return {"title": "plan", **_object({"steps": steps})}


def summary_schema() -> dict[str, Any]:
    return {"title": "summary", **_object({"summary": _text(SUMMARY_CHARS, 40)})}


# ----------------------------------------------------------------------------- fallbacks


def open_component(slot: ComponentSlot, reason: str = "") -> Component:
    return Component(id=slot.id, title=slot.title, status="open", open_because=reason)


def open_estimate(slot: EstimateSlot, reason: str) -> Estimate:
    return Estimate(id=slot.id, label=slot.label, unit=slot.unit, open_because=reason)


def total(lines: Sequence[CostLine], budget: float | None) -> dict[str, Any]:
    """The cost lines, their sum (of the lines with a figure) and the verdict on the budget:
    computed here, never by the model. Within the budget only when every line has a figure
    (12-06: one line of USD 4 was "within the budget"); over it as soon as the lines with
    one are."""
    figures = [c.usd_per_month for c in lines if c.usd_per_month is not None]
    summed = round(sum(figures), 2) if figures else None
    within = None if summed is None or budget is None else summed <= budget
    if within and len(figures) < len(lines):
        within = None
    return {
        "lines": [c.model_dump() for c in lines],
        "total_usd_per_month": summed,
        "budget_usd_per_month": budget,
        "within_budget": within,
    }


# ----------------------------------------------------------------------------- parsers
