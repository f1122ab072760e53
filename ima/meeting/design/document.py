"""The final design as one structure: `design.json` is it, `design.md` is its rendering, so
the two can never disagree.

A design holds a summary; the components (each a part of the task's design filled with a
name, a technology, what it does, why, pros and cons, or marked open); the plan's steps;
the estimates, each in the unit the task fixes and with its derivation; the monthly cost
lines with their total against the budget (computed here, never by the model); a row per
requirement naming the component that meets it and how, or "open"; and what the checks
against the brief found. `Design.json_schema()` is the schema `design.json` validates
against.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Component",
    "Conflict",
    "CostLine",
    "Costs",
    "Design",
    "Estimate",
    "RequirementRow",
]

OPEN = "open"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Component(_Strict):
    """One part of the design. `status` is "open" when no usable answer came: the other
    fields are then empty, and `open_because` says what was wrong with the last answer. A
    written component may still lack a usable reason (`why` empty) or pros and cons; then
    `open_because` says what was wrong with them."""

    id: str
    title: str
    name: str = ""
    technology: str = ""
    does: str = ""
    why: str = ""
    pros: list[str] = []
    cons: list[str] = []
    status: Literal["written", "open"] = "written"
    open_because: str = ""  # why the last answer could not be used


class Estimate(_Strict):
    """A resource estimate in the task's unit; `value` None when none could be used, and
    then `open_because` says why."""

    id: str
    label: str
    unit: str
    value: float | None = None
    derivation: str = ""
    open_because: str = ""


class CostLine(_Strict):
    label: str
    usd_per_month: float | None = None
    derivation: str = ""


class Costs(_Strict):
    """Monthly cost lines, their total (the sum of the lines that have a figure) and the
    budget it is held against."""

    lines: list[CostLine] = []
    total_usd_per_month: float | None = None
    budget_usd_per_month: float | None = None
    within_budget: bool | None = None


class RequirementRow(_Strict):
    """A requirement of the brief: the component that meets it and how (a sentence for each
    part of it that was said, `open_parts` the parts that were not), or open."""

    id: str
    requirement: str
    met_by: str | None = None
    how: str = ""
    open_parts: list[str] = []
    status: Literal["met", "open"] = OPEN


class Conflict(_Strict):
    """A figure of the design that the brief contradicts (or a figure in a wrong unit)."""

    where: str
    stated: str
    brief: str


class Design(_Strict):
    summary: str = ""
    components: list[Component] = []
    plan: list[str] = []
    estimates: list[Estimate] = []
    costs: Costs = Field(default_factory=Costs)
    requirements: list[RequirementRow] = []
    conflicts: list[Conflict] = []
    ending: str = ""

    @classmethod
    def json_schema(cls) -> dict:
        """The JSON Schema of `design.json`."""
        return cls.model_json_schema()

    @property
    def missing(self) -> list[str]:
        """The parts with nothing usable in them (for run.json and `ima show`)."""
        parts = {
            "summary": bool(self.summary),
            "components": any(c.status == "written" for c in self.components),
            "plan": bool(self.plan),
            "estimates": any(e.value is not None for e in self.estimates) or not self.estimates,
            "costs": self.costs.total_usd_per_month is not None or not self.costs.lines,
        }
        return [name for name, present in parts.items() if not present]

    def component(self, component_id: str) -> Component | None:
        return next((c for c in self.components if c.id == component_id), None)
