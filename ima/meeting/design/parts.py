"""Each part of the design as a small structured call: its JSON Schema (bounded, so a
constraining backend always ends within the output cap), the lines its prompt shows, and the
parser that checks the answer.

A parser raises `AnswerError` naming the problem, which the model is shown on the retry. It
is strict on the first answer and keeps what is usable of the last one: a component whose
sentence for one requirement is copied from the brief keeps that requirement open, and a
figure the brief contradicts is asked about once, then listed in the design's checks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from ima.core.ngrams import words
from ima.meeting.design.checks import (
    compute_derivation,
    copied_share,
    figure_conflicts,
    junk_reason,
)
from ima.meeting.design.document import Component, CostLine, Costs, Estimate
from ima.models.structured import AnswerError, extract_json
from ima.tasks import ComponentSlot, EstimateSlot, Task

__all__ = [
    "Checker",
    "component_schema",
    "costs_schema",
    "estimates_schema",
    "output_cap",
    "plan_schema",
    "summary_schema",
]

MIN_STEPS, MAX_STEPS = 3, 6
# A plan's step is an action: it opens with one of these verbs (in the imperative).
ACTION_VERBS = frozenset(
    [
        "add",
        "adopt",
        "automate",
        "build",
        "buy",
        "choose",
        "configure",
        "connect",
        "create",
        "decommission",
        "define",
        "deliver",
        "deploy",
        "design",
        "document",
        "enable",
        "encrypt",
        "establish",
        "estimate",
        "extend",
        "finish",
        "harden",
        "hire",
        "implement",
        "import",
        "index",
        "install",
        "integrate",
        "introduce",
        "label",
        "launch",
        "load",
        "migrate",
        "monitor",
        "move",
        "negotiate",
        "onboard",
        "open",
        "operate",
        "order",
        "pilot",
        "plan",
        "prepare",
        "procure",
        "provision",
        "publish",
        "purchase",
        "record",
        "register",
        "release",
        "replicate",
        "retrain",
        "review",
        "roll",
        "run",
        "scale",
        "secure",
        "select",
        "set",
        "ship",
        "sign",
        "start",
        "switch",
        "test",
        "train",
        "transfer",
        "tune",
        "turn",
        "upgrade",
        "upload",
        "validate",
        "verify",
        "write",
    ]
)
TEXTS = ("technology", "why")  # a component's one-line fields
# A sentence whose word 5-grams are this much the brief's or the requirements' is copied.
COPIED = 0.5
# An estimate off its own derivation by more than this (after a change of unit by powers of
# 1,000) is asked about once, then takes the derivation's result.
TOLERANCE = 0.05
# Words that name no product: a technology made only of them ("Cloud-based platform",
# "EU Cloud Service") says nothing a reader could build on.
_FIGURE_NUMBERS = re.compile(r"\d[\d,.]*")
_GENERIC = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "of",
        "for",
        "with",
        "based",
        "eu",
        "european",
        "cloud",
        "clouds",
        "service",
        "services",
        "platform",
        "system",
        "systems",
        "solution",
        "component",
        "components",
        "pipeline",
        "data",
        "managed",
        "storage",
        "processing",
        "stream",
        "streaming",
        "batch",
        "database",
        "tool",
        "tools",
        "technology",
        "software",
        "application",
        "server",
        "servers",
        "n",
        "a",
        "na",
        "none",
        "tbd",
        "todo",
    ]
)


def _text(max_length: int, min_length: int = 3) -> dict[str, Any]:
    return {"type": "string", "minLength": min_length, "maxLength": max_length}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


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
    """A requirement by its title (a few words, so the answer is not a copy of the
    requirement's sentence), or its text when the task gives no title."""
    found = next(r for r in task.requirements if r.id == requirement_id)
    return found.title or " ".join(found.text.split())


def technology_ask(slot: ComponentSlot) -> str:
    """What the prompt asks of the technology: one of the task's candidates, or its own."""
    if slot.options:
        return "the one of these it runs on: " + "; ".join(slot.options)
    return "the product or managed cloud service it runs on, by its name"


def estimate_lines(slots: Sequence[EstimateSlot]) -> str:
    return "\n".join(f'- "{s.id}" ({s.unit}): {s.ask}' for s in slots)


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 10 else f"{value:g}"


def estimate_summary(estimates: Sequence[Estimate]) -> str:
    lines = [
        f"- {e.label}: {_number(e.value)} {e.unit} ({e.derivation})"
        for e in estimates
        if e.value is not None
    ]
    return "\n".join(lines) or "- (no estimate could be made)"


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
        verdict = "within" if costs.within_budget else "over"
        sentence += f", {verdict} the budget of USD {_number(costs.budget_usd_per_month)}"
    return sentence + "."


# ----------------------------------------------------------------------------- schemas


def component_schema(slot: ComponentSlot) -> dict[str, Any]:
    items = {"type": "array", "items": _text(60), "minItems": 1, "maxItems": 2}
    properties = {
        "technology": {"enum": list(slot.options)} if slot.options else _text(40, 2),
        "why": _text(140, 20),
        "pros": items,
        "cons": items,
    }
    return {"title": f"component_{slot.id}", **_object(properties)}


def how_schema() -> dict[str, Any]:
    return {"title": "how", **_object({"how": _text(150, 20)})}


def estimates_schema(slots: Sequence[EstimateSlot]) -> dict[str, Any]:
    entry = _object({"value": {"type": "number"}, "derivation": _text(80, 5)})
    return {"title": "estimates", **_object({s.id: entry for s in slots})}


def costs_schema(lines: Sequence[str]) -> dict[str, Any]:
    entry = _object({"usd": {"type": "number"}, "derivation": _text(80, 5)})
    return {"title": "costs", **_object({line: entry for line in lines})}


def plan_schema() -> dict[str, Any]:
    steps = {"type": "array", "items": _text(110, 15), "minItems": MIN_STEPS, "maxItems": MAX_STEPS}
    return {"title": "plan", **_object({"steps": steps})}


def summary_schema() -> dict[str, Any]:
    return {"title": "summary", **_object({"summary": _text(360, 40)})}


# ----------------------------------------------------------------------------- fallbacks


def open_component(slot: ComponentSlot, reason: str = "") -> Component:
    return Component(id=slot.id, title=slot.title, status="open", open_because=reason)


def empty_estimates(slots: Sequence[EstimateSlot]) -> list[Estimate]:
    return [Estimate(id=s.id, label=s.label, unit=s.unit) for s in slots]


def empty_costs(lines: Sequence[str]) -> list[CostLine]:
    return [CostLine(label=line) for line in lines]


def total(lines: Sequence[CostLine], budget: float | None) -> dict[str, Any]:
    """The cost lines, their sum (of the lines with a figure) and the verdict on the budget:
    computed here, never by the model."""
    figures = [c.usd_per_month for c in lines if c.usd_per_month is not None]
    summed = round(sum(figures), 2) if figures else None
    within = None if summed is None or budget is None else summed <= budget
    return {
        "lines": [c.model_dump() for c in lines],
        "total_usd_per_month": summed,
        "budget_usd_per_month": budget,
        "within_budget": within,
    }


# ----------------------------------------------------------------------------- parsers


class Checker:
    """The parsers of one design's parts: each checks an answer against the brief, the
    requirements and the meeting's instructions, and counts its attempts (the last one
    keeps what is usable)."""

    def __init__(self, task: Task, brief: str, instructions: Sequence[str]) -> None:
        self.task = task
        self.instructions = list(instructions)
        self.sources = given_texts(task, brief)
        self.agents = {r.id.lower() for r in task.roles} | {r.name.lower() for r in task.roles}

    # -- helpers

    def _problem(self, field: str, text: str, *, own_words: bool = True) -> str:
        reason = junk_reason(text, self.task, self.instructions)
        if reason:
            return f'"{field}" cannot be used: {reason}'
        if own_words and copied_share(text, self.sources) >= COPIED:
            return f'"{field}" copies the brief; say it in your own words'
        return ""

    def _attempts(self) -> Callable[[], bool]:
        """A counter: each call says whether this is the last attempt."""
        seen = [0]

        def last() -> bool:
            seen[0] += 1
            return seen[0] >= 2

        return last

    def _conflict(self, where: str, text: str) -> str:
        found = figure_conflicts(self.task, where, text)
        if not found:
            return ""
        _, stated, brief = found[0]
        return f'it says "{stated}" where the brief has {brief}'

    def _names_an_agent(self, text: str) -> bool:
        lowered = text.lower()
        return any(re.search(rf"\b{re.escape(a)}\b", lowered) for a in self.agents)

    # -- parts

    def component_parser(self, slot: ComponentSlot) -> Callable[[str], Component]:
        def parse(text: str) -> Component:
            data = _object_of(text)
            technology, why = (" ".join(str(data.get(k) or "").split()) for k in TEXTS)
            if slot.options and technology not in slot.options:
                raise AnswerError(f'"technology" must be one of: {", ".join(slot.options)}')
            if not set(words(technology)) - _GENERIC or self._names_an_agent(technology):
                raise AnswerError(
                    '"technology" must name a product or service by its name, not a kind of one'
                )
            problem = self._problem("technology", technology, own_words=False)
            if problem := problem or self._problem("why", why) or self._conflict("why", why):
                raise AnswerError(problem)
            pros, cons = (self._items(data.get(k)) for k in ("pros", "cons"))
            if not pros or not cons:
                raise AnswerError('give at least one usable item in "pros" and in "cons"')
            return Component(
                id=slot.id,
                title=slot.title,
                name=slot.title,
                technology=technology,
                does=f"Handles {slot.ask}.",
                why=why,
                pros=pros,
                cons=cons,
            )

        return parse

    def how_parser(self) -> Callable[[str], str]:
        """One sentence of the design's own on how a component meets a requirement: not
        copied, no junk; a figure the brief contradicts is asked about once, then listed."""
        last = self._attempts()

        def parse(text: str) -> str:
            final = last()
            how = " ".join(str(_object_of(text).get("how") or "").split())
            if problem := self._problem("how", how):
                raise AnswerError(problem)
            if not final and (conflict := self._conflict("how", how)):
                raise AnswerError(conflict)
            return how

        return parse

    def _items(self, value: Any) -> list[str]:
        listed = value if isinstance(value, list) else [value] if value else []
        items = [" ".join(str(v).split()).strip(" .;,") for v in listed]
        return [i for i in items if i and not self._problem("item", i, own_words=False)]

    def estimates_parser(
        self, slots: Sequence[EstimateSlot]
    ) -> Callable[[str], tuple[list[Estimate], list[str]]]:
        last = self._attempts()

        def parse(text: str) -> tuple[list[Estimate], list[str]]:
            final = last()
            data = _object_of(text)
            estimates, recomputed = [], []
            for slot in slots:
                value, derivation, changed = self._figure(data.get(slot.id), slot.id, final)
                if changed:
                    recomputed.append(slot.id)
                estimates.append(
                    Estimate(
                        id=slot.id,
                        label=slot.label,
                        unit=slot.unit,
                        value=value,
                        derivation=derivation,
                    )
                )
            return estimates, recomputed

        return parse

    def costs_parser(
        self, lines: Sequence[str]
    ) -> Callable[[str], tuple[list[CostLine], list[str]]]:
        last = self._attempts()

        def parse(text: str) -> tuple[list[CostLine], list[str]]:
            final = last()
            data = _object_of(text)
            costs, recomputed = [], []
            for line in lines:
                value, derivation, changed = self._figure(data.get(line), line, final, "usd")
                if changed:
                    recomputed.append(line)
                costs.append(CostLine(label=line, usd_per_month=value, derivation=derivation))
            return costs, recomputed

        return parse

    def _figure(
        self, entry: Any, name: str, final: bool, key: str = "value"
    ) -> tuple[float | None, str, bool]:
        """(value, derivation, recomputed) of one estimate; AnswerError on a first answer
        that lacks a positive number or a readable derivation."""
        entry = entry if isinstance(entry, dict) else {}
        value = entry.get(key)
        derivation = " ".join(str(entry.get("derivation") or "").split())
        usable = isinstance(value, int | float) and not isinstance(value, bool) and value > 0
        computed = compute_derivation(derivation)
        problem = "" if usable else f'"{name}" needs a positive number'
        problem = problem or self._problem(f"{name} derivation", derivation, own_words=False)
        if not problem and len(_FIGURE_NUMBERS.findall(derivation)) < 2:
            problem = f'"{name}" derivation must show how the number follows from others'
        if problem:
            if not final:
                raise AnswerError(problem)
            return None, "", False
        if computed and not _agrees(float(value), computed):
            if not final:
                raise AnswerError(
                    f'"{name}" is {value:g}, but its derivation gives {computed:g}: fix one'
                )
            return round(computed, 2), derivation, True
        return float(value), derivation, False

    def plan_parser(self, components: Sequence[Component]) -> Callable[[str], list[str]]:
        last = self._attempts()

        def parse(text: str) -> list[str]:
            final = last()
            data = _object_of(text)
            steps = []
            for step in data.get("steps") or []:
                step = " ".join(str(step).split()).strip()
                step = re.sub(r"^(?:step\s*)?\d+[.):]\s*", "", step, flags=re.I)
                first = step.split(" ", 1)[0].lower() if step else ""
                bad = self._problem("step", step, own_words=False) or (
                    first not in ACTION_VERBS and "it does not start with an action's verb"
                )
                if not bad and step not in steps:
                    steps.append(step[0].upper() + step[1:])
            if len(steps) < MIN_STEPS and not final:
                raise AnswerError(f"it holds {len(steps)} usable steps; give {MIN_STEPS} or more")
            return steps

        return parse

    def summary_parser(self) -> Callable[[str], str]:
        def parse(text: str) -> str:
            summary = " ".join(str(_object_of(text).get("summary") or "").split())
            if problem := self._problem("summary", summary):
                raise AnswerError(problem)
            return summary

        return parse


def _agrees(value: float, computed: float) -> bool:
    """Whether a value is its derivation's result, allowing for a change of unit by powers
    of 1,000 (a derivation in GB for an estimate in TB)."""
    return any(abs(value * 1000**k - computed) <= TOLERANCE * abs(computed) for k in range(-3, 4))


def _object_of(text: str) -> dict[str, Any]:
    value = extract_json(text)
    if not isinstance(value, dict):
        raise AnswerError("the answer is JSON but not an object")
    return value
