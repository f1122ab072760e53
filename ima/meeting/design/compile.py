"""The documentation step's work: the final design compiled part by part from the brief, the
proposal the meeting accepted and every agent's memory, never from votes, flags or the
facilitator's instructions.

Each part is one small structured call a small model can fill (`ima.meeting.design.parts`):
one per component, then the estimates (each chosen among the derivations the brief's figures
allow), a unit price per monthly cost line (the code multiplies it by the line's estimate),
the plan and the summary. Every answer is checked
(`ima.meeting.design.checks`); a bad one is asked for once more with its problem named, and
what is still unusable stays open or missing without giving up the other parts. All calls
open with the same system message and, but for the sentences on how a requirement is met,
the accepted proposal, so a prefix cache evaluates those once; components are asked owner
by owner, so an owner's memory is evaluated once too. Where the backend follows a schema's
patterns, a derivation can only be arithmetic and a how-sentence opens with its technology
(`parts`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel

from ima import prompts
from ima.core.state import CallUsage, add_call_usage, memory_slots, zero_usage
from ima.core.tokens import count_tokens
from ima.meeting.design import parts
from ima.meeting.design.answers import ACTION_VERBS, Checker
from ima.meeting.design.checks import figure_conflicts, junk_reason, unit_errors
from ima.meeting.design.dimensions import derivations
from ima.meeting.design.document import (
    Component,
    Conflict,
    CostLine,
    Costs,
    Design,
    Estimate,
    RequirementRow,
)
from ima.models.structured import Outcome, ask_structured, prompt_parts
from ima.tasks import ComponentSlot, DesignPlan, EstimateSlot, Task

__all__ = ["Compiled", "accepted_proposal", "compile_design"]

ATTEMPTS = 2  # a part whose answer cannot be used is asked for once more
PROPOSAL_TOKENS = 160  # the accepted proposal: its first whole lines within this many tokens
MEMORY_TOKENS = 160  # an owner's memory notes, likewise
_LIST_NUMBER = re.compile(r"^\d+[.)]\s+")


@dataclass
class Compiled:
    """A compiled design, what its calls cost, and how the compilation went."""

    design: Design
    usage: CallUsage = field(default_factory=zero_usage)
    calls: int = 0
    retried: list[str] = field(default_factory=list)  # parts asked for twice
    unusable: dict[str, str] = field(default_factory=dict)  # part: why its last answer failed


def _clean_lines(text: str, task: Task, instructions: Sequence[str], tokens: int) -> str:
    """The lines of a turn or memory that may feed a design, as a list within `tokens`:
    no headings (nor a line that only opens a list, ending in ":"), votes, flags, echoed
    instructions or residue, without list numbers and bold marks; each line once. A first
    line longer than `tokens` keeps its first words that fit."""
    kept: list[str] = []
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        body = _LIST_NUMBER.sub("", line.strip().lstrip("-*").strip()).replace("**", "")
        if len(body.split()) < 3 or body.endswith(":") or body in kept:
            continue
        if junk_reason(body, task, instructions):
            continue
        if count_tokens("\n".join([*kept, body])) > tokens:
            if not kept:
                kept.append(_first_words(body, tokens))
            break
        kept.append(body)
    return "\n".join(f"- {line}" for line in kept if line)


def _first_words(text: str, tokens: int) -> str:
    words = text.split()
    while words and count_tokens(" ".join(words) + " ...") > tokens:
        words.pop()
    return " ".join(words) + " ..." if len(words) >= 3 else ""


def accepted_proposal(
    task: Task,
    transcript: Sequence[Mapping[str, Any]],
    instructions: Sequence[str] = (),
    tokens: int = PROPOSAL_TOKENS,
) -> str:
    """The proposal on the table: what each worker last proposed (its latest turn in a phase
    of proposals, neither the first nor the vote), in the workers' order, each the first
    lines of its turn within an equal share of `tokens`, cleaned of votes and echoed
    instructions. Before any proposal, the integrator's latest digest outside the vote.

    The workers' own words, not the integrator's digest: a small integrator copies the last
    turn it read, and voters then object to what the other workers proposed being left out.
    """
    schedule = task.schedule
    proposing = {p.name for p in schedule.phases[1:]} - {schedule.voting_phase}
    latest: dict[str, str] = {}
    for turn in transcript:
        if turn.get("speaker") in schedule.workers and turn.get("phase") in proposing:
            latest[str(turn["speaker"])] = str(turn.get("content", ""))
    if latest:
        share = tokens // len(latest) - 2  # each part's "- " and line break
        lines = [_clean_lines(latest[w], task, instructions, share) for w in latest]
        if proposal := "\n".join(dict.fromkeys(line for p in lines for line in p.splitlines())):
            return proposal  # a line two workers wrote alike, once
    integrator = (schedule.after_round or [schedule.facilitator])[0]
    for turn in reversed(transcript):
        if turn.get("speaker") == integrator and turn.get("phase") != schedule.voting_phase:
            text = str(turn.get("content", ""))
            if lines := _clean_lines(text, task, instructions, tokens):
                return lines
    return "- (no proposal was summarised: use the brief)"


@dataclass
class _Asker:
    """One documentation call at a time, each opening with the same system message and the
    accepted proposal, accounted together."""

    model: BaseChatModel
    system: str
    opening: str
    metadata: dict[str, Any]
    compiled: Compiled

    def ask(
        self,
        name: str,
        part: str,
        schema: dict[str, Any],
        parse: Any,
        *,
        with_proposal: bool = True,
        **fields: Any,
    ) -> Any:
        """One part's answer, parsed, or None. `with_proposal=False` leaves the accepted
        proposal out of the prompt, for a question it would only distract from."""
        question, retry = prompt_parts(f"design/{name}", **fields)
        opening = f"{self.opening}\n\n" if with_proposal else ""
        outcome: Outcome = ask_structured(
            self.model,
            schema,
            f"{opening}{question}",
            lambda error: f"{opening}{question}\n\n{retry(error)}",
            parse,
            {**self.metadata, "ima_part": part},
            ATTEMPTS,
            system=self.system,
            max_tokens=parts.output_cap(schema),
            show_answer=False,  # the 0.5B model copied the answer it was shown (12-06)
        )
        self.compiled.usage = add_call_usage(self.compiled.usage, outcome.usage)
        self.compiled.calls += outcome.attempts
        if outcome.attempts > 1:
            self.compiled.retried.append(part)
        if outcome.error:
            self.compiled.unusable[part] = outcome.error
        return outcome.value


def compile_design(
    task: Task,
    state: Mapping[str, Any],
    model: BaseChatModel,
    *,
    system: str,
    ending: str,
    metadata: Mapping[str, Any],
    instructions: Sequence[str] = (),
) -> Compiled:
    """The design of a finished meeting (`state`: its brief, transcript and memories)."""
    plan = task.design_plan
    compiled = Compiled(Design(ending=ending))
    proposal = accepted_proposal(task, state.get("transcript") or [], instructions)
    opening = prompts.render(
        "design/opening", ending=ending, finalizer=task.schedule.finalizer, proposal=proposal
    )
    asker = _Asker(model, system, opening, dict(metadata), compiled)
    checker = Checker(task, state.get("brief") or task.description, instructions)
    memories = memory_slots(state)

    components: dict[str, Component] = {}
    # requirement: (component, how it meets each part of it, the parts it did not say)
    hows: dict[str, tuple[str, list[str], list[str]]] = {}
    order = sorted(plan.components, key=lambda s: [c.owner for c in plan.components].index(s.owner))
    for number, slot in enumerate(order, 1):
        notes = str((memories.get(slot.owner) or {}).get("text", ""))
        memory = _clean_lines(notes, task, instructions, MEMORY_TOKENS)
        component = asker.ask(
            "component",
            slot.id,
            parts.component_schema(slot),
            checker.component_parser(slot),
            owner=slot.owner,
            memory=memory or "- (nothing kept)",
            number=number,
            title=slot.title,
            ask=slot.ask,
            meets=parts.meets_line(task, slot),
            technology=parts.technology_ask(slot),
        )
        components[slot.id] = component or parts.open_component(
            slot, compiled.unusable.get(slot.id, "")
        )
        for rid in slot.meets if component else ():
            if rid in hows:  # a requirement is met by the first part that says how
                continue
            said, unsaid = _how(asker, checker, task, slot, component.technology, rid)
            if said:
                hows[rid] = (slot.id, said, unsaid)
    design = compiled.design
    design.components = [components[s.id] for s in plan.components]

    design.estimates = [_estimate(asker, checker, task, slot) for slot in plan.estimates]
    components = parts.component_lines(design.components)
    if plan.cost_lines:
        lines = [
            _cost_line(asker, checker, plan, design, line, components) for line in plan.cost_lines
        ]
        design.costs = Costs.model_validate(parts.total(lines, plan.budget))

    design.plan = (
        asker.ask(
            "plan",
            "plan",
            parts.plan_schema(ACTION_VERBS),
            checker.plan_parser(design.components),
            components=components,
            min_steps=parts.MIN_STEPS,
            max_steps=parts.MAX_STEPS,
        )
        or []
    )
    design.summary = (
        asker.ask(
            "summary",
            "summary",
            parts.summary_schema(),
            checker.summary_parser(proposal, design.components, design.costs),
            components=components,
            cost=parts.cost_sentence(design.costs) or "not estimated",
        )
        or ""
    )
    design.requirements = _requirement_rows(task, hows, design.costs)
    design.conflicts = _conflicts(task, design)
    return compiled


def _how(
    asker: _Asker,
    checker: Checker,
    task: Task,
    slot: ComponentSlot,
    technology: str,
    requirement: str,
) -> tuple[list[str], list[str]]:
    """A sentence on how a component on `technology` meets each part of a requirement, asked
    part by part without the proposal (whose phrases a small model copied), and a part
    without the rest of its requirement (12-07: asked about one of R7's three retention
    limits, the 0.5B model copied all three); the parts with no usable sentence of their own."""
    clauses = parts.requirement_parts(task, requirement)
    said: list[str] = []
    unsaid: list[str] = []
    for number, clause in enumerate(clauses, 1):
        several = len(clauses) > 1
        fields = {
            "title": slot.title,
            "technology": technology,
            "requirement": requirement,
            "named": parts.requirement_name(task, requirement),
            "asked": f'this question is about one part of it: "{clause}".'
            if several
            else f'"{parts.requirement_text(task, requirement)}"',
        }
        question, _ = prompt_parts("design/how", **fields)
        how = asker.ask(
            "how",
            f"{slot.id}:{requirement}" + (f".{number}" if several else ""),
            parts.how_schema(technology),
            checker.how_parser(technology, question, said, slot.title, clause),
            with_proposal=False,
            **fields,
        )
        if how:
            said.append(how)
        else:
            unsaid.append(clause)
    return said, unsaid


def _estimate(asker: _Asker, checker: Checker, task: Task, slot: EstimateSlot) -> Estimate:
    """One estimate: the model chooses among the derivations the figures its ask names allow
    (`derivations`: their units give the estimate's), the closest to its ask, in a call of
    its own; a single one is taken without a call, and with none the estimate is open,
    saying so."""
    shown = parts.figure_lines(task, slot.ask).splitlines()
    choices = parts.closest_choices(derivations(shown, slot.unit), slot.ask)
    if not choices:
        return parts.open_estimate(slot, f"no figures of the brief multiply into {slot.unit}")
    if len(choices) == 1:
        return parts.estimate_of(slot, *choices[0])
    chosen = asker.ask(
        "estimates",
        f"estimate:{slot.id}",
        parts.estimate_schema(choices),
        checker.estimate_parser(slot, choices),
        estimate=parts.estimate_line(slot),
        choices=parts.choice_lines(choices, slot.unit),
    )
    return chosen or parts.open_estimate(slot, "no derivation was chosen")


def _cost_line(
    asker: _Asker,
    checker: Checker,
    plan: DesignPlan,
    design: Design,
    line: str,
    components: str,
) -> CostLine:
    """A monthly cost line: the estimate that names it, times the unit price the model
    gives for the design's technology. Without that estimate's figure the line stays
    missing: its quantity would be made up."""
    slot = next((s for s in plan.estimates if s.cost_line == line), None)
    estimate = next((e for e in design.estimates if slot and e.id == slot.id), None)
    if estimate is None or estimate.value is None:
        return CostLine(label=line)
    unit = parts.price_unit(estimate.unit)
    price = asker.ask(
        "price",
        f"price:{line}",
        parts.price_schema(),
        checker.price_parser(),
        components=components,
        line=line,
        estimate=parts.estimate_summary([estimate]),
        unit=unit,
    )
    return parts.priced_line(line, estimate, price) if price else CostLine(label=line)


def _requirement_rows(
    task: Task, hows: Mapping[str, tuple[str, list[str], list[str]]], costs: Costs
) -> list[RequirementRow]:
    """A row per requirement: the component that says how it meets it (and the parts it
    did not say), else the cost breakdown for the requirements it meets (when within
    budget), else open."""
    plan = task.design_plan
    sentence = parts.cost_sentence(costs)
    rows = []
    for requirement in task.requirements:
        row = RequirementRow(id=requirement.id, requirement=" ".join(requirement.text.split()))
        if requirement.id in hows:
            met_by, said, unsaid = hows[requirement.id]
            how = " ".join(said)
            update = {"met_by": met_by, "how": how, "open_parts": unsaid, "status": "met"}
            row = row.model_copy(update=update)
        elif requirement.id in plan.costs_meet and costs.within_budget and sentence:
            row = row.model_copy(update={"met_by": "costs", "how": sentence, "status": "met"})
        rows.append(row)
    return rows


def _conflicts(task: Task, design: Design) -> list[Conflict]:
    """Figures of the design's own text that the brief contradicts, and figures in a unit
    of the wrong kind."""
    found: list[Conflict] = []
    texts = [("Summary", design.summary)]
    for c in design.components:
        texts.append((c.title, ". ".join([c.does, c.why, *c.pros, *c.cons])))
    texts += [(f"Plan step {n}", step) for n, step in enumerate(design.plan, 1)]
    texts += [(f"Requirement {r.id}", r.how) for r in design.requirements if r.met_by != "costs"]
    texts += [(e.label, e.derivation) for e in design.estimates]
    for where, text in texts:
        for place, stated, brief in figure_conflicts(task, where, text):
            found.append(Conflict(where=place, stated=stated, brief=brief))
        for error in unit_errors(text):
            found.append(Conflict(where=where, stated=error, brief="a figure in its own unit"))
    return found
